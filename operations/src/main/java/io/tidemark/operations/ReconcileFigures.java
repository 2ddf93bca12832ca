package io.tidemark.operations;

import static org.apache.spark.sql.functions.col;
import static org.apache.spark.sql.functions.expr;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
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

    /** What the endpoint shows of the last run: gauges of one sample, then those per KPI table and measure. */
    private record Last(double startedAt, long days, long lateRecords, Map<List<String>, Double> driftRatio, Map<List<String>, Double> over,
                        Map<List<String>, Double> windowsChanged, Map<List<String>, Double> threshold) {
    }

    /** The last run's figures; null until a run was read. */
    private volatile Last last;
    private long version = -1;
    private ScheduledExecutorService poll;

    private static final String ABSENT = " Absent until a reconcile has written reconcile_report.";

    @Override
    public List<Figure> figures() {
        List<String> measure = List.of("kpi", "measure");
        return List.of(
                Figure.of("tidemark_reconcile_last_run_timestamp_seconds",
                        "When the last reconcile run recorded in reconcile_report started (Unix time)." + ABSENT,
                        () -> last == null ? Double.NaN : last.startedAt()),
                Figure.of("tidemark_reconcile_last_run_days", "Days the last reconcile run replaced." + ABSENT,
                        () -> last == null ? Double.NaN : last.days()),
                Figure.of("tidemark_reconcile_late_records", "Late records the last reconcile run folded in, over its days." + ABSENT,
                        () -> last == null ? Double.NaN : last.lateRecords()),
                new Figure("tidemark_reconcile_drift_ratio", "Per KPI table and measure: the largest |batch - stream| / batch over the days of "
                        + "the last reconcile run, how far the fast answer was off (+Inf where the truth was 0 and the stream was not)." + ABSENT,
                        measure, () -> last == null ? Map.of() : last.driftRatio()),
                new Figure("tidemark_reconcile_over_threshold", "Per KPI table and measure: 1 when the drift rule found a day of the last "
                        + "reconcile run over the pipeline's drift_threshold, else 0 (estimates are never over)." + ABSENT,
                        measure, () -> last == null ? Map.of() : last.over()),
                new Figure("tidemark_reconcile_windows_changed", "Per KPI table and measure: windows whose value the last reconcile run "
                        + "changed, over its days." + ABSENT, measure, () -> last == null ? Map.of() : last.windowsChanged()),
                new Figure("tidemark_reconcile_drift_threshold", "Per KPI table: the drift_threshold of the pipeline the last reconcile run "
                        + "judged with." + ABSENT, List.of("kpi"), () -> last == null ? Map.of() : last.threshold()));
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
            // Summary rows of the long form only (a report written before it has no measure).
            Dataset<Row> summaries = lakehouse.read(spark, Table.RECONCILE_REPORT).where("row_kind = 'summary' AND measure IS NOT NULL");
            Row lastRun = summaries.selectExpr("max_by(run_id, run_started_at)").first();
            if (!lastRun.isNullAt(0)) {
                Dataset<Row> run = summaries.where(col("run_id").equalTo(lastRun.getString(0)));
                Row r = run.selectExpr("max(run_started_at)", "count(DISTINCT event_date)", "max(late_records)").first();
                // late_records is the day's on each of its rows: once per day
                long lateRecords = run.groupBy("event_date").agg(expr("max(late_records) AS l")).selectExpr("coalesce(sum(l), 0)").first().getLong(0);
                Map<List<String>, Double> drift = new TreeMap<>(Comparator.comparing(Object::toString));
                Map<List<String>, Double> over = new TreeMap<>(Comparator.comparing(Object::toString));
                Map<List<String>, Double> changed = new TreeMap<>(Comparator.comparing(Object::toString));
                Map<List<String>, Double> threshold = new TreeMap<>(Comparator.comparing(Object::toString));
                for (Row m : run.groupBy("kpi", "measure").agg(
                        expr("max(CASE WHEN drift_rel IS NULL AND drift <> 0 THEN double('infinity') ELSE abs(coalesce(drift_rel, 0)) END)"),
                        expr("max(CASE WHEN over_threshold THEN 1.0 ELSE 0.0 END)"), expr("coalesce(sum(windows_changed), 0)"),
                        expr("max(drift_threshold)")).collectAsList()) {
                    List<String> key = List.of(m.getString(0), m.getString(1));
                    drift.put(key, m.getDouble(2));
                    over.put(key, m.getDecimal(3).doubleValue());
                    changed.put(key, (double) m.getLong(4));
                    if (!m.isNullAt(5)) {
                        threshold.put(List.of(m.getString(0)), m.getDouble(5));
                    }
                }
                if (!r.isNullAt(0)) {
                    last = new Last(r.getTimestamp(0).getTime() / 1000.0, r.getLong(1), lateRecords, drift, over, changed, threshold);
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
