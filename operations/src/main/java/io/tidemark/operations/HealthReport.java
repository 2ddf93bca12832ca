package io.tidemark.operations;

import java.io.IOException;
import java.math.BigDecimal;
import java.math.MathContext;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.time.LocalDate;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;

import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;

import io.tidemark.lakehouse.ClosedDays;
import io.tidemark.lakehouse.DayBalance;
import io.tidemark.lakehouse.ExpiredDays;
import io.tidemark.lakehouse.KpiComputation;
import io.tidemark.lakehouse.Lakehouse;
import io.tidemark.lakehouse.Lakehouse.Table;
import io.tidemark.lakehouse.TidemarkConfig;
import io.tidemark.lakehouse.JobMain;
import io.tidemark.lakehouse.RequestRefusedException;

/**
 * The drift and health report: one self-contained HTML page (no network, no script library: the
 * charts are SVG drawn here) with the numbers under each chart. Drift per day before reconcile (the
 * stream's answer against the truth, from the first reconcile of the day) and now (the KPIs against
 * raw_events), late records per day and how late, invalid records by reason, freshness and throughput
 * over time, closed and dirty days.
 *
 * <p>{@code tidemark report --out report.html}, or under spark-submit
 * {@code --class io.tidemark.operations.HealthReport ... --out report.html [--days N] [key=value ...]}.
 */
public final class HealthReport {

    /** A day's drift: {@code before} from its first reconcile (null when never reconciled), {@code now} from the tables. */
    public record DayDrift(LocalDate day, Double beforeGbRel, Double beforeSubscribersRel, long reconcileRuns, long lateFolded,
                           long rawRecords, long kpiRecords, BigDecimal rawGb, BigDecimal kpiGb) {
        /** (raw - kpi) / raw volume now: 0 for a reconciled day that received nothing since. */
        public double nowGbRel() {
            if (rawGb == null || rawGb.signum() == 0) {
                return 0;
            }
            BigDecimal kpi = kpiGb == null ? BigDecimal.ZERO : kpiGb;
            return rawGb.subtract(kpi).divide(rawGb, MathContext.DECIMAL64).doubleValue();
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

    public record Figures(Instant generatedAt, String lakehouse, List<DayDrift> drift, List<LateDay> late, Map<String, Long> invalid,
                          List<Bucket> timeline, long bucketSeconds, List<DayState> days) {
    }

    /** At most this many points on the time charts. */
    static final int MAX_BUCKETS = 60;

    private HealthReport() {
    }

    /** Reads the figures of the last {@code days} event days (and the stream's last 7 days of processing time). */
    public static Figures read(SparkSession spark, Lakehouse lakehouse, int days) {
        if (!exists(spark, lakehouse, Table.STREAM_PROGRESS)) {
            throw new RequestRefusedException("no stream has written to " + lakehouse.root() + " yet (no stream_progress table): nothing to report");
        }
        NavigableDays window = NavigableDays.of(spark, lakehouse, days);
        ClosedDays closed = ClosedDays.load(spark, lakehouse);
        ExpiredDays expired = ExpiredDays.load(spark, lakehouse);
        java.util.NavigableMap<LocalDate, DayBalance> balances = DayBalance.load(spark, lakehouse, window.from(), window.to());
        java.util.Set<LocalDate> dirty = new java.util.HashSet<>(DayBalance.dirtyDays(balances, closed, expired));

        Map<LocalDate, Row> first = new TreeMap<>();
        Map<LocalDate, Long> runs = new TreeMap<>();
        if (exists(spark, lakehouse, Table.RECONCILE_REPORT)) {
            for (Row r : spark.sql("SELECT event_date, gb_drift_rel, subscribers_drift_rel, late_records, runs FROM ("
                    + " SELECT *, row_number() OVER (PARTITION BY event_date ORDER BY run_started_at, run_id) AS run_rank,"
                    + " count(*) OVER (PARTITION BY event_date) AS runs FROM " + lakehouse.ref(Table.RECONCILE_REPORT)
                    + " WHERE row_kind = 'summary'" + window.where("event_date") + ") WHERE run_rank = 1").collectAsList()) {
                first.put(r.getDate(0).toLocalDate(), r);
                runs.put(r.getDate(0).toLocalDate(), r.getLong(4));
            }
        }
        Map<LocalDate, BigDecimal[]> volume = new TreeMap<>();
        for (Row r : spark.sql("SELECT coalesce(r.event_date, k.event_date), r.gb, k.gb FROM"
                + " (SELECT event_date, sum(CAST(volume_gb AS " + KpiComputation.VOLUME_TYPE + ")) AS gb FROM " + lakehouse.ref(Table.RAW_EVENTS)
                + " WHERE true" + window.where("event_date") + " GROUP BY event_date) r FULL OUTER JOIN"
                + " (SELECT event_date, sum(total_gb) AS gb FROM " + lakehouse.ref(Table.KPI_5M)
                + " WHERE true" + window.where("event_date") + " GROUP BY event_date) k ON r.event_date = k.event_date").collectAsList()) {
            volume.put(r.getDate(0).toLocalDate(), new BigDecimal[] {r.getDecimal(1), r.getDecimal(2)});
        }
        List<DayDrift> drift = new ArrayList<>();
        List<DayState> states = new ArrayList<>();
        for (DayBalance b : balances.values()) {
            Row f = first.get(b.day());
            BigDecimal[] v = volume.getOrDefault(b.day(), new BigDecimal[2]);
            long n = runs.getOrDefault(b.day(), 0L);
            drift.add(new DayDrift(b.day(), f == null || f.isNullAt(1) ? null : f.getDouble(1), f == null || f.isNullAt(2) ? null : f.getDouble(2),
                    n, f == null || f.isNullAt(3) ? 0 : f.getLong(3), b.rawRecords(), b.kpiRecords(), v[0], v[1]));
            states.add(new DayState(b.day(), closed.isClosed(b.day()), dirty.contains(b.day()), n, b.rawRecords(), b.kpiRecords()));
        }

        List<LateDay> late = new ArrayList<>();
        for (Row r : spark.sql("SELECT event_date, count(*), CAST(percentile(late_by_ms, 0.5) AS BIGINT), CAST(percentile(late_by_ms, 0.95) AS BIGINT),"
                + " max(late_by_ms) FROM " + lakehouse.ref(Table.LATE_EVENTS) + " WHERE true" + window.where("event_date")
                + " GROUP BY event_date ORDER BY event_date").collectAsList()) {
            late.add(new LateDay(r.getDate(0).toLocalDate(), r.getLong(1), r.getLong(2), r.getLong(3), r.getLong(4)));
        }
        Map<String, Long> invalid = new java.util.LinkedHashMap<>();
        for (Row r : spark.sql("SELECT reason, count(*) FROM " + lakehouse.ref(Table.DEAD_LETTER)
                + " GROUP BY reason ORDER BY count(*) DESC, reason").collectAsList()) {
            invalid.put(r.getString(0), r.getLong(1));
        }

        Row span = spark.sql("SELECT min(unix_millis(finished_at)), max(unix_millis(finished_at)) FROM " + lakehouse.ref(Table.STREAM_PROGRESS)).first();
        List<Bucket> timeline = new ArrayList<>();
        long bucketSeconds = 0;
        if (!span.isNullAt(0)) {
            long to = span.getLong(1);
            long from = Math.max(span.getLong(0), to - 7L * 86_400_000);
            bucketSeconds = niceBucketSeconds((to - from) / 1000);
            long bucketMs = bucketSeconds * 1000;
            for (Row r : spark.sql("SELECT floor(unix_millis(finished_at) / " + bucketMs + ") AS b, count(*), sum(records_in),"
                    + " percentile(freshness_ms, 0.5), max(freshness_ms) FROM " + lakehouse.ref(Table.STREAM_PROGRESS)
                    + " WHERE unix_millis(finished_at) >= " + from + " GROUP BY 1 ORDER BY 1").collectAsList()) {
                timeline.add(new Bucket(Instant.ofEpochMilli(r.getLong(0) * bucketMs), r.getLong(1), r.getLong(2), r.getLong(2) / (double) bucketSeconds,
                        r.isNullAt(3) ? null : r.getDouble(3), r.isNullAt(4) ? null : (double) r.getLong(4)));
            }
        }
        return new Figures(Instant.now(), lakehouse.root(), drift, late, invalid, timeline, bucketSeconds, states);
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

    private static boolean exists(SparkSession spark, Lakehouse lakehouse, Table t) {
        return lakehouse.exists(spark, t);
    }

    /** The last {@code n} event days that hold raw or KPI data. */
    private record NavigableDays(LocalDate from, LocalDate to) {
        static NavigableDays of(SparkSession spark, Lakehouse lakehouse, int n) {
            Row r = spark.sql("SELECT max(event_date) FROM (SELECT event_date FROM " + lakehouse.ref(Table.RAW_EVENTS)
                    + " UNION ALL SELECT event_date FROM " + lakehouse.ref(Table.KPI_5M) + ")").first();
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

    // ---- HTML ----

    private static final DateTimeFormatter MINUTE = DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm").withZone(ZoneOffset.UTC);
    private static final DateTimeFormatter SECOND = DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm:ss'Z'").withZone(ZoneOffset.UTC);

    /** The page. Every figure a chart shows is also in the table under it, each cell with its exact value in data-value. */
    public static String html(Figures f) {
        StringBuilder h = new StringBuilder(64 * 1024);
        h.append("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>Tidemark report</title>\n<style>")
                .append(CSS).append("</style></head>\n<body>\n");
        h.append("<h1>Tidemark: drift and health</h1>\n<p class=\"meta\">Lakehouse <code>").append(esc(f.lakehouse()))
                .append("</code>, generated ").append(SECOND.format(f.generatedAt())).append(". Days: the last ").append(f.days().size())
                .append(" event days with data. All times UTC.</p>\n");

        section(h, "drift", "Drift per day: before and after reconcile",
                "Before: how far the stream's volume was from the exact answer when the day was first reconciled ((batch - stream) / batch). "
                        + "Now: the KPIs against raw_events today ((raw - kpi) / raw); a reconciled day without later late records is at 0.");
        List<String> labels = new ArrayList<>();
        List<double[]> values = new ArrayList<>();
        for (DayDrift d : f.drift()) {
            labels.add(d.day().toString().substring(5));
            values.add(new double[] {d.beforeGbRel() == null ? 0 : d.beforeGbRel() * 100, d.nowGbRel() * 100});
        }
        h.append(Svg.bars("drift", labels, values, new String[] {"before reconcile", "now"}, "% of the day's volume"));
        table(h, "drift-table", new String[] {"day", "reconcile runs", "volume drift before (%)", "subscriber drift before (%)",
                "late records folded in", "raw records", "KPI records", "volume drift now (%)"}, f.drift().stream().map(d -> new Object[] {
                    d.day(), d.reconcileRuns(), pct(d.beforeGbRel()), pct(d.beforeSubscribersRel()), d.lateFolded(), d.rawRecords(), d.kpiRecords(),
                    pct(d.nowGbRel())}).toList());

        section(h, "late", "Late records per day and how late",
                "Records that reached the stream after their window had closed (late_events), by event day; lateness is how long before their "
                        + "arrival the window had closed (late_by_ms).");
        h.append(Svg.bars("late", f.late().stream().map(l -> l.day().toString().substring(5)).toList(),
                f.late().stream().map(l -> new double[] {l.records()}).toList(), new String[] {"late records"}, "records"));
        table(h, "late-table", new String[] {"day", "late records", "median lateness (s)", "95th percentile (s)", "max (s)"},
                f.late().stream().map(l -> new Object[] {l.day(), l.records(), seconds(l.p50Ms()), seconds(l.p95Ms()), seconds(l.maxMs())}).toList());

        section(h, "invalid", "Invalid records by reason", "Records in dead_letter, by reason code, over all arrival days.");
        h.append(Svg.bars("invalid", new ArrayList<>(f.invalid().keySet()), f.invalid().values().stream().map(n -> new double[] {n}).toList(),
                new String[] {"invalid records"}, "records"));
        table(h, "invalid-table", new String[] {"reason", "records"},
                f.invalid().entrySet().stream().map(e -> new Object[] {e.getKey(), e.getValue()}).toList());

        section(h, "freshness", "Freshness over time",
                "Per " + bucket(f.bucketSeconds()) + " of processing time: freshness of the batches that ended in it (batch end minus the newest event time seen).");
        List<Instant> xs = f.timeline().stream().map(Bucket::start).toList();
        h.append(Svg.lines("freshness", xs, List.of(
                f.timeline().stream().map(b -> b.freshnessP50Ms() == null ? Double.NaN : b.freshnessP50Ms() / 1000).toList(),
                f.timeline().stream().map(b -> b.freshnessMaxMs() == null ? Double.NaN : b.freshnessMaxMs() / 1000).toList()),
                new String[] {"median", "max"}, "seconds"));
        section(h, "throughput", "Throughput over time", "Per " + bucket(f.bucketSeconds()) + ": records the stream committed per second of wall time.");
        h.append(Svg.lines("throughput", xs, List.of(f.timeline().stream().map(Bucket::recordsPerSecond).toList()),
                new String[] {"records per second"}, "records/s"));
        table(h, "timeline-table", new String[] {"from", "batches", "records", "records per second", "median freshness (s)", "max freshness (s)"},
                f.timeline().stream().map(b -> new Object[] {SECOND.format(b.start()), b.batches(), b.records(), round(b.recordsPerSecond()),
                        b.freshnessP50Ms() == null ? null : round(b.freshnessP50Ms() / 1000), b.freshnessMaxMs() == null ? null : round(b.freshnessMaxMs() / 1000)})
                        .toList());

        section(h, "days", "Closed and dirty days",
                "Closed: the stream's watermark has passed the day's end, its windows are final. Dirty: a closed day whose raw record count differs "
                        + "from what its KPIs count (late records not folded in yet): reconcile it.");
        table(h, "days-table", new String[] {"day", "closed", "dirty", "reconcile runs", "raw records", "KPI records"},
                f.days().stream().map(d -> new Object[] {d.day(), d.closed() ? "yes" : "no", d.dirty() ? "yes" : "no", d.reconcileRuns(),
                        d.rawRecords(), d.kpiRecords()}).toList());
        // Marks each chart with what the browser drew: the test reads it back from the rendered page.
        h.append("<script>for (const s of document.querySelectorAll('svg.chart')) { const b = s.getBBox();"
                + " s.setAttribute('data-drawn-width', Math.round(b.width)); s.setAttribute('data-drawn-height', Math.round(b.height));"
                + " s.setAttribute('data-marks', s.querySelectorAll('.mark').length); }"
                + " document.body.setAttribute('data-rendered', 'yes');</script>\n");
        h.append("</body></html>\n");
        return h.toString();
    }

    private static void section(StringBuilder h, String id, String title, String text) {
        h.append("<h2 id=\"").append(id).append("-section\">").append(esc(title)).append("</h2>\n<p>").append(esc(text)).append("</p>\n");
    }

    private static void table(StringBuilder h, String id, String[] head, List<Object[]> rows) {
        h.append("<table class=\"numbers\" id=\"").append(id).append("\"><thead><tr>");
        for (String c : head) {
            h.append("<th>").append(esc(c)).append("</th>");
        }
        h.append("</tr></thead><tbody>\n");
        if (rows.isEmpty()) {
            h.append("<tr><td colspan=\"").append(head.length).append("\" class=\"none\">none</td></tr>\n");
        }
        for (Object[] r : rows) {
            h.append("<tr>");
            for (Object v : r) {
                String text = v == null ? "" : v.toString();
                h.append(v instanceof Number ? "<td class=\"n\" data-value=\"" : "<td data-value=\"").append(esc(text)).append("\">")
                        .append(esc(v instanceof Long n ? String.format(Locale.ROOT, "%,d", n) : v == null ? "–" : text)).append("</td>");
            }
            h.append("</tr>\n");
        }
        h.append("</tbody></table>\n");
    }

    private static Double pct(Double rel) {
        return rel == null ? null : round(rel * 100);
    }

    private static double seconds(long ms) {
        return round(ms / 1000.0);
    }

    private static double round(double v) {
        return Math.round(v * 1000) / 1000.0;
    }

    private static String bucket(long s) {
        return s < 60 ? s + " seconds" : s < 3600 ? s / 60 + " minutes" : s / 3600 + " hours";
    }

    static String esc(String s) {
        return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("\"", "&quot;");
    }

    private static final String CSS = "body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:2em auto;max-width:1100px;color:#1d2733;padding:0 1em}"
            + "h1{font-size:1.6em}h2{font-size:1.2em;margin-top:2em;border-bottom:1px solid #d5dbe1;padding-bottom:.2em}"
            + "p.meta{color:#5b6773}code{background:#f1f3f5;padding:0 .3em}"
            + "table.numbers{border-collapse:collapse;margin:.8em 0;font-size:.9em}"
            + "table.numbers th,table.numbers td{border:1px solid #d5dbe1;padding:.25em .6em;text-align:left}"
            + "table.numbers td.n{text-align:right;font-variant-numeric:tabular-nums}td.none{color:#5b6773}"
            + "svg.chart{display:block;margin:.5em 0}svg.chart text{font-size:11px;fill:#44515e}"
            + ".s0{fill:#2f6fb0;stroke:#2f6fb0}.s1{fill:#e08a2c;stroke:#e08a2c}.axis{stroke:#9aa5b1}polyline.line{fill:none;stroke-width:2}";

    /** Server-side SVG charts. */
    static final class Svg {
        private static final int W = 1000;
        private static final int H = 260;
        private static final int LEFT = 70;
        private static final int BOTTOM = 40;
        private static final int TOP = 24;

        private Svg() {
        }

        /** Grouped bars: one group per label, one bar per series. */
        static String bars(String id, List<String> labels, List<double[]> values, String[] series, String unit) {
            StringBuilder s = open(id, unit);
            if (labels.isEmpty()) {
                return s.append(nothing()).append("</svg>\n").toString();
            }
            double max = 0;
            for (double[] v : values) {
                for (double x : v) {
                    max = Math.max(max, Math.abs(x));
                }
            }
            max = max == 0 ? 1 : max;
            axes(s, max);
            double group = (W - LEFT - 10.0) / labels.size();
            double bar = Math.max(1, group * 0.8 / series.length);
            for (int i = 0; i < labels.size(); i++) {
                for (int k = 0; k < series.length; k++) {
                    double v = values.get(i)[k];
                    double hgt = Math.abs(v) / max * (H - TOP - BOTTOM);
                    double x = LEFT + i * group + group * 0.1 + k * bar;
                    s.append(String.format(Locale.ROOT, "<rect class=\"mark s%d\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\"><title>%s %s: %s</title></rect>",
                            k, x, H - BOTTOM - hgt, bar, Math.max(hgt, 0.5), esc(labels.get(i)), esc(series[k]), fmt(v)));
                }
                if (labels.size() <= 40 || i % Math.ceil(labels.size() / 40.0) == 0) {
                    s.append(String.format(Locale.ROOT, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%s</text>", LEFT + (i + 0.5) * group, H - BOTTOM + 15,
                            esc(labels.get(i))));
                }
            }
            legend(s, series);
            return s.append("</svg>\n").toString();
        }

        /** Lines over time; NaN leaves a gap. */
        static String lines(String id, List<Instant> xs, List<List<Double>> ys, String[] series, String unit) {
            StringBuilder s = open(id, unit);
            if (xs.isEmpty()) {
                return s.append(nothing()).append("</svg>\n").toString();
            }
            double max = 0;
            for (List<Double> y : ys) {
                for (double v : y) {
                    if (!Double.isNaN(v)) {
                        max = Math.max(max, v);
                    }
                }
            }
            max = max == 0 ? 1 : max;
            axes(s, max);
            long x0 = xs.get(0).toEpochMilli();
            long span = Math.max(1, xs.get(xs.size() - 1).toEpochMilli() - x0);
            for (int k = 0; k < ys.size(); k++) {
                StringBuilder points = new StringBuilder();
                for (int i = 0; i < xs.size(); i++) {
                    double v = ys.get(k).get(i);
                    if (Double.isNaN(v)) {
                        continue;
                    }
                    double x = xs.size() == 1 ? LEFT + (W - LEFT) / 2.0 : LEFT + (xs.get(i).toEpochMilli() - x0) / (double) span * (W - LEFT - 10);
                    double y = H - BOTTOM - v / max * (H - TOP - BOTTOM);
                    points.append(String.format(Locale.ROOT, "%.1f,%.1f ", x, y));
                    s.append(String.format(Locale.ROOT, "<circle class=\"mark s%d\" cx=\"%.1f\" cy=\"%.1f\" r=\"2.5\"><title>%s %s: %s</title></circle>",
                            k, x, y, MINUTE.format(xs.get(i)), esc(series[k]), fmt(v)));
                }
                s.append("<polyline class=\"line s").append(k).append("\" points=\"").append(points.toString().trim()).append("\"/>");
            }
            s.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"%d\">%s</text><text x=\"%d\" y=\"%d\" text-anchor=\"end\">%s</text>", LEFT, H - BOTTOM + 15,
                    MINUTE.format(xs.get(0)), W - 10, H - BOTTOM + 15, MINUTE.format(xs.get(xs.size() - 1))));
            legend(s, series);
            return s.append("</svg>\n").toString();
        }

        private static StringBuilder open(String id, String unit) {
            return new StringBuilder().append("<svg class=\"chart\" id=\"").append(id).append("-chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"")
                    .append(W).append("\" height=\"").append(H).append("\" viewBox=\"0 0 ").append(W).append(' ').append(H).append("\" role=\"img\">")
                    .append("<text x=\"4\" y=\"14\">").append(esc(unit)).append("</text>");
        }

        private static void axes(StringBuilder s, double max) {
            s.append(String.format(Locale.ROOT, "<line class=\"axis\" x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\"/><line class=\"axis\" x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\"/>",
                    LEFT, TOP, LEFT, H - BOTTOM, LEFT, H - BOTTOM, W - 10, H - BOTTOM));
            for (int i = 0; i <= 4; i++) {
                double v = max * i / 4;
                double y = H - BOTTOM - (H - TOP - BOTTOM) * i / 4.0;
                s.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%s</text>", LEFT - 6, y + 4, fmt(v)));
            }
        }

        private static void legend(StringBuilder s, String[] series) {
            for (int k = 0; k < series.length; k++) {
                int x = W - 10 - (series.length - k) * 170;
                s.append(String.format(Locale.ROOT, "<rect class=\"s%d\" x=\"%d\" y=\"4\" width=\"12\" height=\"12\"/><text x=\"%d\" y=\"14\">%s</text>",
                        k, x, x + 16, esc(series[k])));
            }
        }

        private static String nothing() {
            return String.format(Locale.ROOT, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">nothing to show</text>", W / 2, H / 2);
        }

        private static String fmt(double v) {
            return Math.abs(v) >= 100 || v == Math.rint(v) ? String.format(Locale.ROOT, "%,.0f", v) : String.format(Locale.ROOT, "%.3g", v);
        }
    }

    /** Writes the page of {@code lakehouse} to {@code out}; returns the figures it shows. */
    public static Figures write(SparkSession spark, Lakehouse lakehouse, int days, Path out) throws IOException {
        Figures f = read(spark, lakehouse, days);
        Path parent = out.toAbsolutePath().getParent();
        if (parent != null) {
            Files.createDirectories(parent);
        }
        Path tmp = Files.createTempFile(parent, ".report-", ".html.tmp");
        Files.writeString(tmp, html(f), StandardCharsets.UTF_8);
        Files.move(tmp, out, java.nio.file.StandardCopyOption.REPLACE_EXISTING, java.nio.file.StandardCopyOption.ATOMIC_MOVE);
        return f;
    }

    static final String USAGE = """
            Usage: spark-submit --class io.tidemark.operations.HealthReport tidemark-spark-jobs.jar --out FILE [--days N] [key=value ...]
            Write the drift and health report: one self-contained HTML page (charts and the numbers under them).
              --out FILE    where to write it (replaced atomically)
              --days N      the last N event days with data (default 14)
              key=value     a setting, e.g. lakehouse=/data/lakehouse; settings:
            """;

    static final JobMain.Spec COMMAND_LINE = JobMain.Spec.of("report", USAGE).valued("--out", "--days");

    /** Entry point for spark-submit ({@link JobMain}): exit 2 on bad input, 1 when the report could not be written. */
    public static void main(String[] args) {
        JobMain.Arguments a = JobMain.parseOrExit(COMMAND_LINE, args);
        Path target = JobMain.orRefuse(COMMAND_LINE.command(),
                () -> Path.of(a.value("--out").orElseThrow(() -> new RequestRefusedException("--out FILE is required"))));
        int n = JobMain.orRefuse(COMMAND_LINE.command(), () -> a.value("--days").map(HealthReport::days).orElse(14));
        TidemarkConfig config = a.config();
        JobMain.run(COMMAND_LINE.command(), config, spark -> {
            try {
                Lakehouse lakehouse = Lakehouse.of(config);
                Figures f = write(spark, lakehouse, n, target);
                System.out.println("tidemark report: " + target.toAbsolutePath() + " (" + f.days().size() + " days, " + f.timeline().size() + " time points)");
                return null;
            } catch (IOException e) {
                return "cannot write " + target + ": " + e.getMessage();
            }
        });
    }

    /** Parses --days: a whole number from 1 to 3660. */
    public static int days(String text) {
        try {
            int n = Integer.parseInt(text.trim());
            if (n >= 1 && n <= 3660) {
                return n;
            }
        } catch (NumberFormatException e) {
            // below
        }
        throw new IllegalArgumentException("--days must be a whole number from 1 to 3660, got '" + text + "'");
    }
}
