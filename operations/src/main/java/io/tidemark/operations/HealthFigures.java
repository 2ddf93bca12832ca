package io.tidemark.operations;

import static org.apache.spark.sql.functions.expr;

import java.math.BigDecimal;
import java.math.MathContext;
import java.time.Instant;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.NavigableMap;
import java.util.Set;
import java.util.TreeMap;

import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;

import io.tidemark.lakehouse.ClosedDays;
import io.tidemark.lakehouse.DayBalance;
import io.tidemark.lakehouse.ExpiredDays;
import io.tidemark.lakehouse.Lakehouse;
import io.tidemark.lakehouse.Lakehouse.Table;
import io.tidemark.lakehouse.RequestRefusedException;
import io.tidemark.pipeline.KpiAggregation;
import io.tidemark.pipeline.Measure;
import io.tidemark.pipeline.Pipeline;

/**
 * What the health report shows, read from the lakehouse: drift per day before reconcile (from the
 * day's first reconcile) and now (the KPIs against raw_events), late records per day and how late,
 * invalid records by reason, freshness and throughput over processing time, closed and dirty days.
 * {@link HealthPage} draws them; nothing here knows HTML.
 */
public record HealthFigures(Instant generatedAt, String lakehouse, List<HealthFigures.DayDrift> drift, List<HealthFigures.LateDay> late,
                            Map<String, Long> invalid, List<HealthFigures.Bucket> timeline, long bucketSeconds, List<HealthFigures.DayState> days,
                            String nowMeasure) {

    /** Figures whose "drift now" is of a measure named {@code "volume"}. */
    public HealthFigures(Instant generatedAt, String lakehouse, List<DayDrift> drift, List<LateDay> late, Map<String, Long> invalid,
                         List<Bucket> timeline, long bucketSeconds, List<DayState> days) {
        this(generatedAt, lakehouse, drift, late, invalid, timeline, bucketSeconds, days, "volume");
    }

    /**
     * A day's drift: {@code before} from its first reconcile (null when never reconciled): the relative drift of the measure the
     * stream keeps exactly that was furthest off, and of the estimate furthest off; {@code now} from the tables: the day's
     * {@link #nowMeasure} recomputed from raw_events ({@code rawNow}) and summed over its KPI rows ({@code kpiNow}).
     */
    public record DayDrift(LocalDate day, Double beforeRel, Double beforeEstimateRel, long reconcileRuns, long lateFolded,
                           long rawRecords, long kpiRecords, BigDecimal rawNow, BigDecimal kpiNow) {
        /** (raw - kpi) / raw now: 0 for a reconciled day that received nothing since. */
        public double nowRel() {
            if (rawNow == null || rawNow.signum() == 0) {
                return 0;
            }
            BigDecimal kpi = kpiNow == null ? BigDecimal.ZERO : kpiNow;
            return rawNow.subtract(kpi).divide(rawNow, MathContext.DECIMAL64).doubleValue();
        }
    }

    /** Late records of an event day and how late: late_by_ms quantiles. */
    public record LateDay(LocalDate day, long records, long p50Ms, long p95Ms, long maxMs) {
    }

    /** A span of processing time: batches, records and freshness of the batches that ended in it. */
    public record Bucket(Instant start, long batches, long records, double recordsPerSecond, Double freshnessP50Ms, Double freshnessMaxMs) {
    }

    /** What a day is: closed by the stream's watermark, dirty (raw and KPI counts differ), reconciled. */
    public record DayState(LocalDate day, boolean closed, boolean dirty, long reconcileRuns, long rawRecords, long kpiRecords) {
    }

    /** At most this many points on the time charts. */
    static final int MAX_BUCKETS = 60;

    /** Reads the figures of the last {@code days} event days (and the stream's last 7 days of processing time). */
    public static HealthFigures read(SparkSession spark, Lakehouse lakehouse, int days) {
        if (!lakehouse.exists(spark, Table.STREAM_PROGRESS)) {
            throw new RequestRefusedException("no stream has written to " + lakehouse.root() + " yet (no stream_progress table): nothing to report");
        }
        NavigableDays window = NavigableDays.of(spark, lakehouse, days);
        ClosedDays closed = ClosedDays.load(spark, lakehouse);
        ExpiredDays expired = ExpiredDays.load(spark, lakehouse);
        NavigableMap<LocalDate, DayBalance> balances = DayBalance.load(spark, lakehouse, window.from(), window.to());
        Set<LocalDate> dirty = new HashSet<>(DayBalance.dirtyDays(balances, closed, expired));

        Map<LocalDate, Row> first = new TreeMap<>();
        Map<LocalDate, Long> runs = new TreeMap<>();
        if (lakehouse.exists(spark, Table.RECONCILE_REPORT)) {
            // The first run's summary rows of each day (one per measure; reports before the long form have no measure).
            for (Row r : lakehouse.read(spark, Table.RECONCILE_REPORT).where("row_kind = 'summary' AND measure IS NOT NULL" + window.where("event_date"))
                    .selectExpr("*", "dense_rank() OVER (PARTITION BY event_date ORDER BY run_started_at, run_id) AS run_rank",
                            "size(collect_set(run_id) OVER (PARTITION BY event_date)) AS runs")
                    .where("run_rank = 1").groupBy("event_date").agg(expr("max_by(drift_rel, abs(coalesce(drift_rel, 0))) FILTER (WHERE NOT estimate)"),
                            expr("max_by(drift_rel, abs(coalesce(drift_rel, 0))) FILTER (WHERE estimate)"), expr("max(late_records)"), expr("max(runs)"))
                    .collectAsList()) {
                first.put(r.getDate(0).toLocalDate(), r);
                runs.put(r.getDate(0).toLocalDate(), (long) r.getInt(4));
            }
        }
        Pipeline pipeline = lakehouse.pipeline();
        Pipeline.KpiTable table = pipeline.tables().get(0);
        Measure m = table.headline();
        Map<LocalDate, BigDecimal[]> now = new TreeMap<>();
        Dataset<Row> raw = lakehouse.read(spark, Table.RAW_EVENTS).where("true" + window.where("event_date"));
        if (table.where() != null) {
            raw = raw.where(table.where());
        }
        KpiAggregation.windowed(raw, pipeline.events().eventTime(), table.window()).where("true" + window.where("event_date"))
                .groupBy("event_date").agg(org.apache.spark.sql.functions.expr("CAST(" + m.exact() + " AS DECIMAL(38,9))"))
                .collectAsList().forEach(r -> now.computeIfAbsent(r.getDate(0).toLocalDate(), d -> new BigDecimal[2])[0] = r.getDecimal(1));
        lakehouse.read(spark, Table.kpi(table.name())).where("true" + window.where("event_date")).groupBy("event_date")
                .agg(expr("CAST(sum(" + Pipeline.quote(m.name()) + ") AS DECIMAL(38,9))")).collectAsList()
                .forEach(r -> now.computeIfAbsent(r.getDate(0).toLocalDate(), d -> new BigDecimal[2])[1] = r.getDecimal(1));
        List<DayDrift> drift = new ArrayList<>();
        List<DayState> states = new ArrayList<>();
        for (DayBalance b : balances.values()) {
            Row f = first.get(b.day());
            BigDecimal[] v = now.getOrDefault(b.day(), new BigDecimal[2]);
            long n = runs.getOrDefault(b.day(), 0L);
            drift.add(new DayDrift(b.day(), f == null || f.isNullAt(1) ? null : f.getDouble(1), f == null || f.isNullAt(2) ? null : f.getDouble(2),
                    n, f == null || f.isNullAt(3) ? 0 : f.getLong(3), b.rawRecords(), b.kpiRecords(), v[0], v[1]));
            states.add(new DayState(b.day(), closed.isClosed(b.day()), dirty.contains(b.day()), n, b.rawRecords(), b.kpiRecords()));
        }

        List<LateDay> late = new ArrayList<>();
        for (Row r : lakehouse.read(spark, Table.LATE_EVENTS).where("true" + window.where("event_date")).groupBy("event_date")
                .agg(expr("count(*)"), expr("CAST(percentile(late_by_ms, 0.5) AS BIGINT)"), expr("CAST(percentile(late_by_ms, 0.95) AS BIGINT)"),
                        expr("max(late_by_ms)"))
                .orderBy("event_date").collectAsList()) {
            late.add(new LateDay(r.getDate(0).toLocalDate(), r.getLong(1), r.getLong(2), r.getLong(3), r.getLong(4)));
        }
        Map<String, Long> invalid = new LinkedHashMap<>();
        for (Row r : lakehouse.read(spark, Table.DEAD_LETTER).groupBy("reason").agg(expr("count(*) AS n")).orderBy(expr("n DESC"), expr("reason"))
                .collectAsList()) {
            invalid.put(r.getString(0), r.getLong(1));
        }

        Row span = lakehouse.read(spark, Table.STREAM_PROGRESS).selectExpr("min(unix_millis(finished_at))", "max(unix_millis(finished_at))").first();
        List<Bucket> timeline = new ArrayList<>();
        long bucketSeconds = 0;
        if (!span.isNullAt(0)) {
            long to = span.getLong(1);
            long from = Math.max(span.getLong(0), to - 7L * 86_400_000);
            bucketSeconds = niceBucketSeconds((to - from) / 1000);
            long bucketMs = bucketSeconds * 1000;
            for (Row r : lakehouse.read(spark, Table.STREAM_PROGRESS).where("unix_millis(finished_at) >= " + from)
                    .groupBy(expr("floor(unix_millis(finished_at) / " + bucketMs + ") AS b"))
                    .agg(expr("count(*)"), expr("sum(records_in)"), expr("percentile(freshness_ms, 0.5)"), expr("max(freshness_ms)"))
                    .orderBy("b").collectAsList()) {
                timeline.add(new Bucket(Instant.ofEpochMilli(r.getLong(0) * bucketMs), r.getLong(1), r.getLong(2), r.getLong(2) / (double) bucketSeconds,
                        r.isNullAt(3) ? null : r.getDouble(3), r.isNullAt(4) ? null : (double) r.getLong(4)));
            }
        }
        return new HealthFigures(Instant.now(), lakehouse.root(), drift, late, invalid, timeline, bucketSeconds, states,
                table.name() + "." + m.name());
    }

    /** A bucket of 10 s, 30 s, 1, 5, 15, 30 min, 1, 3, 6 h: the smallest that keeps the chart within {@link #MAX_BUCKETS} points. */
    static long niceBucketSeconds(long spanSeconds) {
        for (long s : new long[] {10, 30, 60, 300, 900, 1800, 3600, 10_800, 21_600}) {
            if (spanSeconds / s < MAX_BUCKETS) {
                return s;
            }
        }
        return 86_400;
    }

    /** The last {@code n} event days that hold raw or KPI data. */
    private record NavigableDays(LocalDate from, LocalDate to) {
        static NavigableDays of(SparkSession spark, Lakehouse lakehouse, int n) {
            Row r = lakehouse.read(spark, Table.RAW_EVENTS).select("event_date").unionAll(lakehouse.read(spark, lakehouse.kpiTables().get(0))
                    .select("event_date")).selectExpr("max(event_date)").first();
            if (r.isNullAt(0)) {
                return new NavigableDays(null, null);
            }
            LocalDate to = r.getDate(0).toLocalDate();
            return new NavigableDays(to.minusDays(n - 1L), to);
        }

        String where(String column) {
            return from == null ? "" : " AND " + column + " BETWEEN DATE'" + from + "' AND DATE'" + to + "'";
        }
    }
}
