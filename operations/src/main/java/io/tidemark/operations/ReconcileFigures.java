package io.tidemark.operations;

import static org.apache.spark.sql.functions.col;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import io.tidemark.lakehouse.FigureSource;
import io.tidemark.lakehouse.Lakehouse;
import io.tidemark.lakehouse.Lakehouse.Table;

/**
 * The last reconcile run's drift, for the stream's metrics endpoint ({@link FigureSource}). Reconcile
 * runs as a batch job and pushes nothing, so the process that lives, the stream, reads
 * {@code reconcile_report} again whenever the table has a new version: its log is listed every
 * {@link #CHECK_EVERY}, and the table read only when it changed. Every name is documented in
 * docs/observability.md.
 */
public final class ReconcileFigures implements FigureSource {
    private static final Logger LOG = LoggerFactory.getLogger(ReconcileFigures.class);

    /** How often the log of reconcile_report is listed for a new version. */
    static final Duration CHECK_EVERY = Duration.ofSeconds(15);

    private static final String[][] GAUGES = {
            {"tidemark_reconcile_last_run_timestamp_seconds", "When the last reconcile run recorded in reconcile_report started (Unix time)."},
            {"tidemark_reconcile_last_run_days", "Days the last reconcile run replaced."},
            {"tidemark_reconcile_gb_drift_ratio",
                    "Largest |batch - stream| / batch total volume over the days of the last reconcile run: how far the fast answer was off."},
            {"tidemark_reconcile_subscribers_drift_ratio", "Largest |batch - stream| / batch distinct subscribers over the days of the last reconcile run."},
            {"tidemark_reconcile_windows_changed", "(window, cell) rows the last reconcile run changed, over its days."},
            {"tidemark_reconcile_late_records", "Late records the last reconcile run folded in, over its days."}};

    /** The last run's figures in the order of {@link #GAUGES}; null until a run was read. */
    private volatile double[] last;
    private long version = -1;
    private ScheduledExecutorService poll;

    @Override
    public List<Figure> figures() {
        List<Figure> out = new ArrayList<>();
        for (int i = 0; i < GAUGES.length; i++) {
            int k = i;
            out.add(new Figure(GAUGES[i][0], GAUGES[i][1] + " Absent until a reconcile has written reconcile_report.",
                    () -> last == null ? Double.NaN : last[k]));
        }
        return out;
    }

    @Override
    public void watch(SparkSession spark, Lakehouse lakehouse) {
        poll = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "tidemark-metrics-reconcile");
            t.setDaemon(true);
            return t;
        });
        poll.scheduleWithFixedDelay(() -> read(spark, lakehouse), 0, CHECK_EVERY.toMillis(), TimeUnit.MILLISECONDS);
    }

    /** Reads the last run's summary rows when reconcile_report has a version not read yet. */
    private void read(SparkSession spark, Lakehouse lakehouse) {
        try {
            Path log = new Path(lakehouse.path(Table.RECONCILE_REPORT), "_delta_log");
            FileSystem fs = log.getFileSystem(spark.sparkContext().hadoopConfiguration());
            if (!fs.exists(log)) {
                return;
            }
            long newest = -1;
            for (FileStatus f : fs.listStatus(log)) {
                String name = f.getPath().getName();
                if (name.matches("\\d{20}\\.json")) {
                    newest = Math.max(newest, Long.parseLong(name.substring(0, 20)));
                }
            }
            if (newest < 0 || newest == version) {
                return;
            }
            SparkSession.setActiveSession(spark);
            Dataset<Row> summaries = lakehouse.read(spark, Table.RECONCILE_REPORT).where("row_kind = 'summary'");
            Row lastRun = summaries.selectExpr("max_by(run_id, run_started_at)").first();
            if (!lastRun.isNullAt(0)) {
                Row r = summaries.where(col("run_id").equalTo(lastRun.getString(0)))
                        .selectExpr("max(run_started_at)", "count(*)", "coalesce(max(abs(gb_drift_rel)), 0)",
                                "coalesce(max(abs(subscribers_drift_rel)), 0)", "coalesce(sum(windows_changed), 0)", "coalesce(sum(late_records), 0)")
                        .first();
                if (!r.isNullAt(0)) {
                    last = new double[] {r.getTimestamp(0).getTime() / 1000.0, r.getLong(1), r.getDouble(2), r.getDouble(3), r.getLong(4),
                            r.getLong(5)};
                }
            }
            version = newest;
        } catch (Exception | LinkageError e) {
            LOG.warn("metrics: cannot read reconcile_report: {}", e.toString());
        }
    }

    @Override
    public void close() {
        if (poll != null) {
            poll.shutdownNow();
        }
    }
}
