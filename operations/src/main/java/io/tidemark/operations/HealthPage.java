package io.tidemark.operations;

import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

import io.tidemark.operations.HealthFigures.Bucket;
import io.tidemark.operations.HealthFigures.DayDrift;

/**
 * The health report's page: one self-contained HTML document (no network, no script library: the
 * charts are {@link SvgChart}s) with the numbers of each chart in a table under it.
 */
final class HealthPage {

    private HealthPage() {
    }

    private static final DateTimeFormatter SECOND = DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm:ss'Z'").withZone(ZoneOffset.UTC);

    /** The page. Every figure a chart shows is also in the table under it, each cell with its exact value in data-value. */
    static String html(HealthFigures f) {
        StringBuilder h = new StringBuilder(64 * 1024);
        h.append("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>Tidemark report</title>\n<style>")
                .append(CSS).append("</style></head>\n<body>\n");
        h.append("<h1>Tidemark: drift and health</h1>\n<p class=\"meta\">Lakehouse <code>").append(esc(f.lakehouse()))
                .append("</code>, generated ").append(SECOND.format(f.generatedAt())).append(". Days: the last ").append(f.days().size())
                .append(" event days with data. All times UTC.</p>\n");

        section(h, "drift", "Drift per day: before and after reconcile",
                "Before: how far the stream was from the exact answer when the day was first reconciled ((batch - stream) / batch), in the "
                        + "measure it keeps exactly that was furthest off, and in its estimates (distinct counts, percentiles). "
                        + "Now: the KPIs against raw_events today ((raw - kpi) / raw); a reconciled day without later late records is at 0.");
        List<String> labels = new ArrayList<>();
        List<double[]> values = new ArrayList<>();
        for (DayDrift d : f.drift()) {
            labels.add(d.day().toString().substring(5));
            values.add(new double[] {d.beforeRel() == null ? 0 : d.beforeRel() * 100, d.nowRel() * 100});
        }
        h.append(SvgChart.bars("drift", labels, values, new String[] {"before reconcile", "now (" + f.nowMeasure() + ")"}, "% of the day's value"));
        table(h, "drift-table", new String[] {"day", "reconcile runs", "largest drift before (%)", "estimate drift before (%)",
                "late records folded in", "raw records", "KPI records", f.nowMeasure() + " drift now (%)"}, f.drift().stream().map(d -> new Object[] {
                    d.day(), d.reconcileRuns(), pct(d.beforeRel()), pct(d.beforeEstimateRel()), d.lateFolded(), d.rawRecords(), d.kpiRecords(),
                    pct(d.nowRel())}).toList());

        section(h, "late", "Late records per day and how late",
                "Records that reached the stream after their window had closed (late_events), by event day; lateness is how long before their "
                        + "arrival the window had closed (late_by_ms).");
        h.append(SvgChart.bars("late", f.late().stream().map(l -> l.day().toString().substring(5)).toList(),
                f.late().stream().map(l -> new double[] {l.records()}).toList(), new String[] {"late records"}, "records"));
        table(h, "late-table", new String[] {"day", "late records", "median lateness (s)", "95th percentile (s)", "max (s)"},
                f.late().stream().map(l -> new Object[] {l.day(), l.records(), seconds(l.p50Ms()), seconds(l.p95Ms()), seconds(l.maxMs())}).toList());

        section(h, "invalid", "Invalid records by reason", "Records in dead_letter, by reason code, over all arrival days.");
        h.append(SvgChart.bars("invalid", new ArrayList<>(f.invalid().keySet()), f.invalid().values().stream().map(n -> new double[] {n}).toList(),
                new String[] {"invalid records"}, "records"));
        table(h, "invalid-table", new String[] {"reason", "records"},
                f.invalid().entrySet().stream().map(e -> new Object[] {e.getKey(), e.getValue()}).toList());

        section(h, "freshness", "Freshness over time",
                "Per " + bucket(f.bucketSeconds()) + " of processing time: freshness of the batches that ended in it (batch end minus the newest event time seen).");
        List<Instant> xs = f.timeline().stream().map(Bucket::start).toList();
        h.append(SvgChart.lines("freshness", xs, List.of(
                f.timeline().stream().map(b -> b.freshnessP50Ms() == null ? Double.NaN : b.freshnessP50Ms() / 1000).toList(),
                f.timeline().stream().map(b -> b.freshnessMaxMs() == null ? Double.NaN : b.freshnessMaxMs() / 1000).toList()),
                new String[] {"median", "max"}, "seconds"));
        section(h, "throughput", "Throughput over time", "Per " + bucket(f.bucketSeconds()) + ": records the stream committed per second of wall time.");
        h.append(SvgChart.lines("throughput", xs, List.of(f.timeline().stream().map(Bucket::recordsPerSecond).toList()),
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
}
