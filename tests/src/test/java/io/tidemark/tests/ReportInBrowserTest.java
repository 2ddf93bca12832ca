package io.tidemark.tests;

import static org.assertj.core.api.Assertions.assertThat;

import java.awt.image.BufferedImage;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import javax.imageio.ImageIO;

import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

import io.tidemark.lakehouse.Lakehouse;
import io.tidemark.lakehouse.Lakehouse.Table;
import io.tidemark.lakehouse.TidemarkConfig;
import io.tidemark.lakehouse.TidemarkConfig.Key;
import io.tidemark.reconcile.DaySelection;
import io.tidemark.operations.HealthReport;
import io.tidemark.reconcile.ReconcileJob;
import io.tidemark.stream.StreamingJob;

/**
 * The drift and health report opened in a real headless Chromium (Debian's {@code chromium}, which
 * ./run-tests installs): after the crafted input of {@link CraftedBatchesTest} and a reconcile, the
 * page loads without console errors, the browser draws every chart, a screenshot shows them, and
 * the numbers on the rendered page equal the tables.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class ReportInBrowserTest extends OnSharedInfrastructure {
    private Path dir;
    private Path page;
    private Lakehouse lakehouse;
    private SparkSession spark;

    @BeforeAll
    void streamReconcileAndWriteTheReport() throws Exception {
        dir = infra.newDir("report");
        String topic = "report-" + dir.getFileName();
        infra.broker.createTopic(topic, 1);
        KafkaFixtures.send(infra.broker.bootstrapServers(), topic, CraftedBatchesTest.messages());
        TidemarkConfig config = infra.config(dir, topic).set(Key.MAX_OFFSETS_PER_TRIGGER, "4").build();
        spark = infra.spark;
        lakehouse = Lakehouse.of(config);
        StreamingJob job = new StreamingJob(spark, config, null);
        job.start(true).awaitTermination();
        job.close();
        new ReconcileJob(spark, config, new PrintStream(OutputStream.nullOutputStream())).run(DaySelection.recent(3), false);
        page = dir.resolve("report.html");
        HealthReport.write(spark, lakehouse, 14, page);
    }

    @Test
    void theBrowserDrawsEveryChartWithoutConsoleErrorsAndTheScreenshotShowsThem() throws Exception {
        Chromium run = chromium(page, "--dump-dom");
        assertThat(run.consoleLines()).as("console messages of the report").isEmpty();
        String dom = run.stdout();
        assertThat(dom).contains("data-rendered=\"yes\"");
        Map<String, int[]> charts = charts(dom);
        assertThat(charts).containsOnlyKeys("drift-chart", "late-chart", "invalid-chart", "freshness-chart", "throughput-chart");
        // Bars: two days x two series; five late days... each mark is one figure of the table under the chart.
        assertThat(charts.get("drift-chart")[0]).isEqualTo(2 * 2);
        assertThat(charts.get("late-chart")[0]).isEqualTo(2);
        assertThat(charts.get("invalid-chart")[0]).isEqualTo(4);
        assertThat(charts.get("freshness-chart")[0]).isPositive();
        assertThat(charts.get("throughput-chart")[0]).isPositive();
        charts.forEach((id, c) -> assertThat(c[1]).as("drawn width of " + id).isGreaterThan(500));

        Path png = dir.resolve("report.png");
        Chromium shot = chromium(page, "--screenshot=" + png, "--window-size=1200,2600");
        assertThat(shot.consoleLines()).isEmpty();
        BufferedImage image = ImageIO.read(png.toFile());
        assertThat(image.getWidth()).isEqualTo(1200);
        // The two series colours of the charts are on the screen, in more than a sliver.
        assertThat(pixels(image, 0x2f6fb0)).isGreaterThan(500);
        assertThat(pixels(image, 0xe08a2c)).isGreaterThan(100);
    }

    @Test
    void theNumbersOnTheRenderedPageEqualTheTables() throws Exception {
        String dom = chromium(page, "--dump-dom").stdout();

        Map<String, List<String>> late = rows(dom, "late-table");
        Map<String, List<String>> lateExpected = new LinkedHashMap<>();
        for (Row r : spark.sql("SELECT CAST(event_date AS STRING), count(*), max(late_by_ms) FROM " + lakehouse.ref(Table.LATE_EVENTS)
                + " GROUP BY 1 ORDER BY 1").collectAsList()) {
            lateExpected.put(r.getString(0), List.of(String.valueOf(r.getLong(1)), String.valueOf(r.getLong(2) / 1000.0)));
        }
        assertThat(lateExpected).isEqualTo(Map.of("2026-11-27", List.of("1", "37200.0"), "2026-11-28", List.of("5", "1500.0")));
        Map<String, List<String>> lateShown = new LinkedHashMap<>();
        late.forEach((day, cells) -> lateShown.put(day, List.of(cells.get(0), cells.get(3))));
        assertThat(lateShown).isEqualTo(lateExpected);

        Map<String, List<String>> invalid = rows(dom, "invalid-table");
        Map<String, List<String>> invalidExpected = new TreeMap<>();
        for (Row r : spark.sql("SELECT reason, count(*) FROM " + lakehouse.ref(Table.DEAD_LETTER) + " GROUP BY 1").collectAsList()) {
            invalidExpected.put(r.getString(0), List.of(String.valueOf(r.getLong(1))));
        }
        assertThat(new TreeMap<>(invalid)).isEqualTo(invalidExpected).hasSize(4);

        // 2026-11-27: the stream had 0.25 GB, the truth 9.25 GB (a late 9 GB record): 97.297 % before, 0 now; the volume is the
        // measure the stream was furthest off in (the count: 1 -> 2, 50 %).
        Row report = spark.sql("SELECT drift_rel, late_records FROM " + lakehouse.ref(Table.RECONCILE_REPORT)
                + " WHERE row_kind = 'summary' AND measure = 'total_gb' AND event_date = DATE'2026-11-27'").first();
        List<String> drift27 = rows(dom, "drift-table").get("2026-11-27");
        assertThat(drift27.get(0)).isEqualTo("1");                                                        // reconcile runs
        assertThat(drift27.get(1)).isEqualTo(String.valueOf(Math.round(report.getDouble(0) * 100 * 1000) / 1000.0)).isEqualTo("97.297");
        assertThat(drift27.get(3)).isEqualTo(String.valueOf(report.getLong(1))).isEqualTo("1");          // late records folded in
        assertThat(drift27.subList(4, 7)).containsExactly("2", "2", "0.0");                               // raw, KPI records, drift now
        // 2026-11-28 is open: never reconciled, and its KPIs lack its 5 late records.
        List<String> drift28 = rows(dom, "drift-table").get("2026-11-28");
        assertThat(drift28.get(0)).isEqualTo("0");
        assertThat(drift28.subList(4, 6)).containsExactly("18", "13");

        Map<String, List<String>> days = rows(dom, "days-table");
        assertThat(days).containsOnlyKeys("2026-11-27", "2026-11-28");
        assertThat(days.get("2026-11-27").subList(0, 3)).containsExactly("yes", "no", "1");
        assertThat(days.get("2026-11-28").subList(0, 3)).containsExactly("no", "no", "0");

        long batches = spark.sql("SELECT count(*) FROM " + lakehouse.ref(Table.STREAM_PROGRESS)).first().getLong(0);
        long shownBatches = rows(dom, "timeline-table").values().stream().mapToLong(c -> Long.parseLong(c.get(0))).sum();
        assertThat(shownBatches).isEqualTo(batches).isEqualTo(6L);
    }

    @Test
    void theConsoleCheckCatchesAScriptError() throws Exception {
        Path broken = dir.resolve("broken.html");
        Files.writeString(broken, "<!DOCTYPE html><html><body><p>x</p><script>undefinedFunction();</script></body></html>");
        assertThat(chromium(broken, "--dump-dom").consoleLines()).anyMatch(l -> l.contains("undefinedFunction"));
    }

    record Chromium(String stdout, List<String> consoleLines) {
    }

    /** Runs headless Chromium on {@code file}; its stdout and the page's console messages (from Chromium's log on stderr). */
    private Chromium chromium(Path file, String... action) throws Exception {
        List<String> cmd = new ArrayList<>(List.of(PrometheusServer.binary("chromium", "chromium"), "--headless", "--no-sandbox", "--disable-gpu",
                "--hide-scrollbars", "--no-first-run", "--disable-extensions", "--enable-logging=stderr", "--v=0",
                "--user-data-dir=" + dir.resolve("chromium-profile")));
        cmd.addAll(List.of(action));
        cmd.add(file.toUri().toString());
        Path err = Files.createTempFile(dir, "chromium-", ".log");
        Process p = new ProcessBuilder(cmd).redirectError(err.toFile()).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(120, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new IllegalStateException("chromium did not finish within 120 s: " + Files.readString(err));
        }
        List<String> console = Files.readAllLines(err).stream().filter(l -> l.contains("CONSOLE(") || l.contains("Uncaught")).toList();
        assertThat(p.exitValue()).as("chromium exit code; its log: %s", Files.readString(err)).isZero();
        return new Chromium(out, console);
    }

    private static final Pattern SVG = Pattern.compile("<svg[^>]*class=\"chart\"[^>]*>");

    /** Per chart id: marks drawn and the drawn width, as the page's script recorded them after layout. */
    private static Map<String, int[]> charts(String dom) {
        Map<String, int[]> out = new TreeMap<>();
        Matcher m = SVG.matcher(dom);
        while (m.find()) {
            String tag = m.group();
            out.put(attr(tag, "id"), new int[] {Integer.parseInt(attr(tag, "data-marks")), Integer.parseInt(attr(tag, "data-drawn-width"))});
        }
        return out;
    }

    private static String attr(String tag, String name) {
        Matcher m = Pattern.compile("\\s" + Pattern.quote(name) + "=\"([^\"]*)\"").matcher(tag);
        if (!m.find()) {
            throw new AssertionError("no " + name + " in " + tag);
        }
        return m.group(1);
    }

    /** The rows of a numbers table: first cell's value to the other cells' data-value, in page order. */
    private static Map<String, List<String>> rows(String dom, String tableId) {
        int start = dom.indexOf("id=\"" + tableId + "\"");
        assertThat(start).as("table " + tableId).isPositive();
        String table = dom.substring(start, dom.indexOf("</table>", start));
        Map<String, List<String>> out = new LinkedHashMap<>();
        Matcher row = Pattern.compile("<tr>(.*?)</tr>", Pattern.DOTALL).matcher(table);
        while (row.find()) {
            List<String> cells = new ArrayList<>();
            Matcher cell = Pattern.compile("<td[^>]*data-value=\"([^\"]*)\"").matcher(row.group(1));
            while (cell.find()) {
                cells.add(cell.group(1));
            }
            if (!cells.isEmpty()) {
                out.put(cells.get(0), cells.subList(1, cells.size()));
            }
        }
        return out;
    }

    private static long pixels(BufferedImage image, int rgb) {
        long n = 0;
        for (int y = 0; y < image.getHeight(); y++) {
            for (int x = 0; x < image.getWidth(); x++) {
                int p = image.getRGB(x, y) & 0xffffff;
                if (p == rgb) {
                    n++;
                }
            }
        }
        return n;
    }
}
