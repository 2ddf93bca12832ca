package io.tidemark.bench;

import static org.apache.spark.sql.functions.col;
import static org.apache.spark.sql.functions.count;
import static org.apache.spark.sql.functions.expr;
import static org.apache.spark.sql.functions.lit;
import static org.apache.spark.sql.functions.sum;
import static org.apache.spark.sql.functions.window;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.io.Reader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.sql.Date;
import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDate;
import java.time.ZoneOffset;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.Stream;

import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerEvent;
import org.apache.spark.scheduler.SparkListenerJobStart;
import org.apache.spark.scheduler.SparkListenerStageCompleted;
import org.apache.spark.scheduler.StageInfo;
import org.apache.spark.sql.Column;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.execution.ui.SparkListenerSQLExecutionStart;
import org.apache.spark.sql.types.StructField;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import scala.jdk.javaapi.CollectionConverters;

import io.tidemark.generate.TrafficProfile;
import io.tidemark.lakehouse.ClosedDays;
import io.tidemark.lakehouse.Lakehouse;
import io.tidemark.lakehouse.Lakehouse.Table;
import io.tidemark.lakehouse.SparkSessions;
import io.tidemark.lakehouse.TableUpdate;
import io.tidemark.lakehouse.TidemarkConfig;
import io.tidemark.pipeline.KpiAggregation;
import io.tidemark.pipeline.Pipeline;
import io.tidemark.pipeline.Watermark;
import io.tidemark.reconcile.DayOutcome;
import io.tidemark.reconcile.DaySelection;
import io.tidemark.reconcile.ReconcileJob;
import io.tidemark.reconcile.ReconcileResult;

/**
 * The batch layer's cost: reconcile of one closed day of {@code --day-events} events (a) with one day
 * of history in the tables against thirty, and (b) against a plain Spark job over the same day's
 * files (partition filter; per KPI table of the pipeline, a group-by to its windows and dimensions
 * with each measure exact as a user would write it ({@link io.tidemark.pipeline.Measure#writtenExact}); plain Delta overwrite). The three runs go round-robin,
 * {@code --rounds} times.
 *
 * <p>The lakehouses are generated with Spark from deterministic synthetic data of the pipeline's
 * traffic profile ({@link TrafficProfile#sparkColumns}) through the real DDL
 * ({@link Lakehouse#createAndRegister}) and cached under {@code bench/target/reconcile-lakehouse}
 * (per pipeline but the default): {@code h1} holds the target day and the day before it, {@code h30}
 * is a copy of it with 29 more days before those. Each day is written as {@code --files-per-day}
 * appends-worth of files, the stream-side rows of every KPI table (on-time records only, sketches,
 * source=stream) beside it, and one {@code stream_progress} row closes the target day. Before each
 * reconcile the KPI tables are restored to their generated versions (not timed), so every round
 * replaces the same stream rows and reports the same drift.
 *
 * <p>{@code bench/run reconcile [--pipeline network|payments|FILE] [--day-events N] [--history-events N]
 * [--history-days N] [--files-per-day N] [--rounds R] [--only h1|h30|plain,...] [--regenerate]}
 */
public final class ReconcileBenchmark {

    static final LocalDate TARGET = LocalDate.of(2026, 10, 31);

    record Params(String pipeline, long dayEvents, long historyEvents, int historyDays, int filesPerDay) {
        String marker() {
            return "pipeline=" + pipeline + "\ndayEvents=" + dayEvents + "\nhistoryEvents=" + historyEvents + "\nhistoryDays=" + historyDays
                    + "\nfilesPerDay=" + filesPerDay + "\ntarget=" + TARGET + "\ngenerator=3\n";
        }

        /** The lakehouse at {@code root}, holding this pipeline's tables. */
        Lakehouse lakehouse(Path root) {
            return Lakehouse.of(config(root));
        }

        TidemarkConfig config(Path root) {
            return TidemarkConfig.builder().set(TidemarkConfig.Key.LAKEHOUSE, root.toString()).set(TidemarkConfig.Key.PIPELINE, pipeline).build();
        }
    }

    /** The versions of each KPI table as generated, which every round restores before it reconciles. */
    static final String VERSIONS = "kpi.generated-versions";

    record Run(String what, int round, long millis, long events, String load, String note) {
        double eventsPerSecond() {
            return events * 1000.0 / millis;
        }
    }

    public static void main(String[] args) throws Exception {
        Instant startedAt = Instant.now().truncatedTo(ChronoUnit.SECONDS);
        long dayEvents = 5_000_000;
        long historyEvents = 1_000_000;
        int historyDays = 30;
        int filesPerDay = 48;
        int rounds = 3;
        boolean regenerate = false;
        String pipeline = "network";
        boolean workGiven = false;
        List<String> only = List.of("h1", "h30", "plain");
        Path work = Path.of("bench/target/reconcile-lakehouse").toAbsolutePath();
        Path results = Path.of("bench/results.log").toAbsolutePath();
        Path json = Path.of("bench/results/reconcile.json").toAbsolutePath();
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--day-events" -> dayEvents = Long.parseLong(args[++i]);
                case "--history-events" -> historyEvents = Long.parseLong(args[++i]);
                case "--history-days" -> historyDays = Integer.parseInt(args[++i]);
                case "--files-per-day" -> filesPerDay = Integer.parseInt(args[++i]);
                case "--rounds" -> rounds = Integer.parseInt(args[++i]);
                case "--only" -> only = List.of(args[++i].split(","));
                case "--regenerate" -> regenerate = true;
                case "--work" -> {
                    work = Path.of(args[++i]).toAbsolutePath();
                    workGiven = true;
                }
                case "--pipeline" -> pipeline = args[++i];
                default -> throw new IllegalArgumentException("unknown argument " + args[i]
                        + " (known: --pipeline, --day-events, --history-events, --history-days, --files-per-day, --rounds, --only, --regenerate, "
                        + "--work)");
            }
        }
        if (historyDays < 1) {
            throw new IllegalArgumentException("--history-days must be at least 1");
        }
        if (!pipeline.equals("network") && !workGiven) {
            work = work.resolveSibling(work.getFileName() + "-" + Path.of(pipeline).getFileName().toString().replace(".sql", ""));
        }
        Params p = new Params(pipeline, dayEvents, historyEvents, historyDays, filesPerDay);
        String loadBefore = loadAverage();
        System.out.println("load average before: " + loadBefore);
        // The catalog's warehouse (the tidemark database) lives with the generated data, not in the working directory.
        System.setProperty("spark.sql.warehouse.dir", work.resolve("spark-warehouse").toString());
        SparkSession spark = SparkSessions.create(TidemarkConfig.defaults(), "bench-reconcile");
        StageTimes stages = new StageTimes();
        spark.sparkContext().addSparkListener(stages);

        Path h1 = work.resolve("h1");
        Path hN = work.resolve("h" + historyDays);
        Path marker = work.resolve("generated.properties");
        if (regenerate || !Files.isRegularFile(marker) || !Files.readString(marker).equals(p.marker())) {
            long t0 = System.currentTimeMillis();
            deleteRecursively(work);
            Files.createDirectories(work);
            generate(spark, p, h1, hN);
            Files.writeString(marker, p.marker());
            System.out.printf("generated both lakehouses in %.1f s%n", (System.currentTimeMillis() - t0) / 1000.0);
        } else {
            System.out.println("reusing the generated lakehouses in " + work + " (--regenerate to rebuild)");
        }
        System.out.println("h1:  " + describe(spark, p.lakehouse(h1)));
        System.out.println("h" + historyDays + ": " + describe(spark, p.lakehouse(hN)));
        Map<Path, Properties> kpiVersions = new TreeMap<>();
        for (Path l : List.of(h1, hN)) {
            Properties v = new Properties();
            try (Reader r = Files.newBufferedReader(l.resolve(VERSIONS))) {
                v.load(r);
            }
            kpiVersions.put(l, v);
        }
        long targetEvents = p.lakehouse(h1).read(spark, Table.RAW_EVENTS)
                .filter(col("event_date").equalTo(lit(Date.valueOf(TARGET)))).count();

        List<Run> runs = new ArrayList<>();
        String hName = "h" + historyDays;
        for (int round = 1; round <= rounds; round++) {
            for (String what : List.of("h1", hName, "plain")) {
                if (!only.contains(what) && !(what.equals(hName) && only.contains("h30"))) {
                    continue;
                }
                String before = loadAverage();
                stages.reset();
                Run r;
                if (what.equals("plain")) {
                    r = plain(spark, p.lakehouse(hN), work.resolve("plain-out"), targetEvents, round, before);
                } else {
                    Path l = what.equals("h1") ? h1 : hN;
                    r = reconcile(spark, p.config(l), kpiVersions.get(l), what, targetEvents, round, before);
                }
                runs.add(r);
                System.out.printf("round %d %-6s %7.1f s  %,9.0f events/s  load %s -> %s  %s%n", round, what, r.millis() / 1000.0,
                        r.eventsPerSecond(), before, loadAverage(), r.note());
                System.out.println(stages.top(8));
            }
        }
        String table = table(runs, hName, targetEvents);
        System.out.println(table);
        String loadAfter = loadAverage();
        System.out.println("load average after: " + loadAfter);
        Files.writeString(results, "\n## " + Instant.now() + " reconcile " + String.join(" ", args) + "\n" + table,
                StandardOpenOption.CREATE, StandardOpenOption.APPEND);
        BenchResults.write(json, json(args, startedAt, p, rounds, runs, hName, targetEvents, loadBefore, loadAfter));
        System.out.println("wrote " + json);
        spark.stop();
    }

    // ------------------------------------------------------------------------------------------
    // The measured runs
    // ------------------------------------------------------------------------------------------

    static Run reconcile(SparkSession spark, TidemarkConfig config, Properties kpiVersions, String what, long events, int round,
                         String load) {
        Lakehouse l = Lakehouse.of(config);
        for (Table t : l.kpiTables()) {
            long generated = Long.parseLong(kpiVersions.getProperty(t.tableName()));
            if (l.version(spark, t) != generated) {
                spark.sql("RESTORE TABLE " + l.ref(t) + " TO VERSION AS OF " + generated);
            }
        }
        Pipeline.KpiTable first = l.pipeline().tables().get(0);
        String records = first.recordCount().orElseThrow().name();
        String compared = first.headline().name();
        ByteArrayOutputStream buf = new ByteArrayOutputStream();
        long t0 = System.nanoTime();
        ReconcileResult result = new ReconcileJob(spark, config, new PrintStream(buf, true, StandardCharsets.UTF_8))
                .run(DaySelection.day(TARGET), false);
        long ms = (System.nanoTime() - t0) / 1_000_000;
        DayOutcome o = result.days().get(0);
        if (o.status() != DayOutcome.Status.RECONCILED || measure(o, first.name(), records).batch().longValueExact() != events) {
            throw new IllegalStateException("reconcile of " + TARGET + " in " + l.root() + " did not reconcile all " + events
                    + " events: " + o + "\n" + buf.toString(StandardCharsets.UTF_8));
        }
        return new Run(what, round, ms, events, load, String.format("%,d windows, %,d changed, %,d late folded in, drift of %s.%s %s",
                o.windows(), o.windowsChanged(), o.lateRecords(), first.name(), compared,
                measure(o, first.name(), compared).drift().stripTrailingZeros().toPlainString()));
    }

    private static DayOutcome.MeasureDrift measure(DayOutcome o, String kpi, String measure) {
        return o.measures().stream().filter(m -> m.kpi().equals(kpi) && m.measure().equals(measure)).findFirst().orElseThrow();
    }

    /**
     * The plain job: per KPI table, the day's files (and, for a hopping table, the first hour of the
     * next, whose windows start on the day), one group-by, a plain overwrite of a Delta table.
     */
    static Run plain(SparkSession spark, Lakehouse lakehouse, Path out, long events, int round, String load) {
        long t0 = System.nanoTime();
        Pipeline pipeline = lakehouse.pipeline();
        String eventTime = pipeline.events().eventTime();
        for (Pipeline.KpiTable t : pipeline.tables()) {
            Dataset<Row> day = lakehouse.read(spark, Table.RAW_EVENTS)
                    .filter(col("event_date").between(lit(Date.valueOf(TARGET)), lit(Date.valueOf(TARGET.plusDays(t.window().tumbling() ? 0 : 1)))));
            if (t.where() != null) {
                day = day.where(t.where());
            }
            List<Column> keys = new ArrayList<>(List.of(window(col(eventTime), t.window().size().toSeconds() + " seconds",
                    t.window().slide().toSeconds() + " seconds")));
            t.dimensions().forEach(d -> keys.add(col(d.name())));
            List<Column> measures = t.measures().stream().map(m -> expr(m.writtenExact()).as(m.name())).toList();
            Dataset<Row> kpi = day.groupBy(keys.toArray(Column[]::new))
                    .agg(measures.get(0), measures.subList(1, measures.size()).toArray(Column[]::new))
                    .where(expr("to_date(window.start) = DATE'" + TARGET + "'"));
            kpi.write().format("delta").mode("overwrite").save(out.resolve(t.name()).toString());
        }
        long ms = (System.nanoTime() - t0) / 1_000_000;
        Pipeline.KpiTable first = pipeline.tables().get(0);
        Row check = spark.read().format("delta").load(out.resolve(first.name()).toString())
                .agg(count(lit(1)), sum(first.recordCount().orElseThrow().name())).first();
        if (first.window().tumbling() && first.where() == null && check.getLong(1) != events) {
            throw new IllegalStateException("plain job counted " + check.getLong(1) + " events, expected " + events);
        }
        return new Run("plain", round, ms, events, load, String.format("%,d windows of %s", check.getLong(0), first.name()));
    }

    // ------------------------------------------------------------------------------------------
    // Generating the lakehouses
    // ------------------------------------------------------------------------------------------

    static void generate(SparkSession spark, Params p, Path h1, Path hN) throws IOException {
        Lakehouse l1 = p.lakehouse(h1);
        l1.createAndRegister(spark);
        writeDays(spark, l1, List.of(TARGET.minusDays(1)), p.historyEvents(), p.filesPerDay());
        writeDays(spark, l1, List.of(TARGET), p.dayEvents(), p.filesPerDay());
        writeStreamKpis(spark, l1, TARGET.minusDays(1), TARGET);
        writeProgress(spark, l1);
        writeVersions(spark, l1, h1);
        if (p.historyDays() > 1) {
            System.out.println("copying h1 to " + hN.getFileName() + " ...");
            copyRecursively(h1, hN);
            Lakehouse lN = p.lakehouse(hN);
            List<LocalDate> older = new ArrayList<>();
            for (int d = p.historyDays(); d >= 2; d--) {
                older.add(TARGET.minusDays(d));
            }
            writeDays(spark, lN, older, p.historyEvents(), p.filesPerDay());
            writeStreamKpis(spark, lN, older.get(0), older.get(older.size() - 1));
            writeVersions(spark, lN, hN);
        }
    }

    private static void writeVersions(SparkSession spark, Lakehouse l, Path root) throws IOException {
        StringBuilder sb = new StringBuilder();
        for (Table t : l.kpiTables()) {
            sb.append(t.tableName()).append('=').append(l.version(spark, t)).append('\n');
        }
        Files.writeString(root.resolve(VERSIONS), sb.toString());
    }

    /**
     * One append per day of {@code n} synthetic raw_events rows in {@code files} files, in event-time
     * order (as a stream writes them): the records of the pipeline's traffic profile
     * ({@link TrafficProfile#sparkColumns}), 3 % late (ingested 30-120 min after their event time),
     * the record as JSON as payload.
     */
    static void writeDays(SparkSession spark, Lakehouse l, List<LocalDate> days, long n, int files) {
        Pipeline pipeline = l.pipeline();
        List<String> columns = pipeline.events().columns().stream().map(Pipeline.Column::name).toList();
        TrafficProfile profile = TrafficProfile.forEvents(columns).orElseThrow(() -> new IllegalArgumentException(
                "no traffic profile writes the events of " + pipeline.file() + " (" + columns + ")"));
        String eventTime = pipeline.events().eventTime();
        for (LocalDate day : days) {
            long t0 = System.currentTimeMillis();
            long d = day.toEpochDay();
            List<String> fields = new ArrayList<>(List.of("id"));
            fields.addAll(profile.sparkColumns(d, n));
            fields.add("pmod(xxhash64(id, " + d + "L, 'late'), 100) < 3 AS is_late");
            fields.add("pmod(xxhash64(id, " + d + "L, 'lag'), 5400000000L) AS lag_us");
            List<String> raw = new ArrayList<>(columns);
            raw.addAll(List.of(
                    "to_json(named_struct(" + String.join(", ", columns.stream().map(c -> "'" + c + "', " + c).toList()) + ")) AS payload",
                    "'" + pipeline.events().topic() + "' AS kafka_topic",
                    "CAST(pmod(id, 2) AS INT) AS kafka_partition",
                    "(" + d + "L - 20000L) * 10000000L + id DIV 2 AS kafka_offset",
                    "timestamp_micros(unix_micros(" + eventTime + ") + CASE WHEN is_late THEN 1800000000L + lag_us "
                            + "ELSE 1000000L + pmod(lag_us, 20000000L) END) AS ingest_ts",
                    "is_late",
                    "(" + d + "L - 20000L) * 1000L + CAST(floor(id * " + files + "D / " + n + "D) AS BIGINT) AS batch_id",
                    "to_date(" + eventTime + ") AS event_date"));
            Dataset<Row> rows = spark.range(0, n, 1, files).selectExpr(fields.toArray(String[]::new)).selectExpr(raw.toArray(String[]::new));
            l.commit(spark, new TableUpdate.Append(Table.RAW_EVENTS, asTable(spark, l, Table.RAW_EVENTS, rows), null));
            System.out.printf("  %s: %s %,d events in %.1f s%n", l.root().substring(l.root().lastIndexOf('/') + 1), day, n,
                    (System.currentTimeMillis() - t0) / 1000.0);
        }
    }

    /** The speed layer's rows of these days in every KPI table: on-time records only, sketch estimates, final. */
    static void writeStreamKpis(SparkSession spark, Lakehouse l, LocalDate from, LocalDate to) {
        long t0 = System.currentTimeMillis();
        Dataset<Row> onTime = l.read(spark, Table.RAW_EVENTS)
                .filter(col("event_date").between(lit(Date.valueOf(from)), lit(Date.valueOf(to))).and(col("is_late").equalTo(false)));
        Pipeline pipeline = l.pipeline();
        for (Pipeline.KpiTable t : pipeline.tables()) {
            KpiAggregation kpi = new KpiAggregation(t, pipeline.events().eventTime());
            Dataset<Row> kpis = kpi.stored(kpi.partials(onTime, Watermark.NONE)
                    .withColumn("is_final", lit(true))
                    .withColumn("source", lit("stream"))
                    .withColumn("stream_batch_id", lit(0L)));
            l.commit(spark, new TableUpdate.Append(Table.kpi(t.name()), asTable(spark, l, Table.kpi(t.name()), kpis), null));
        }
        System.out.printf("  %s (stream rows) %s..%s in %.1f s%n", String.join(", ", l.kpiTables().stream().map(Table::tableName).toList()),
                from, to, (System.currentTimeMillis() - t0) / 1000.0);
    }

    /** One progress row whose next watermark (10 minutes past the end of the day's last window) closes the target day. */
    static void writeProgress(SparkSession spark, Lakehouse l) {
        Duration spill = l.pipeline().daySpill();
        Instant wm = TARGET.plusDays(1).atStartOfDay(ZoneOffset.UTC).toInstant().plus(spill).plusSeconds(600);
        Timestamp now = Timestamp.from(Instant.now());
        Map<String, Object> v = new HashMap<>(Map.of("batch_id", 1_000_000L, "query_id", "bench",
                "watermark", Timestamp.from(wm.minusSeconds(60)), "next_watermark", Timestamp.from(wm),
                "max_event_ts", Timestamp.from(wm.plusSeconds(600)), "max_event_ts_seen", Timestamp.from(wm.plusSeconds(600)),
                "records_in", 0L, "on_time", 0L, "late", 0L, "invalid", 0L));
        v.putAll(Map.of("kpi_rows", 0L, "started_at", now, "finished_at", now, "duration_ms", 0L, "classify_ms", 0L,
                "write_ms", 0L, "freshness_ms", 0L, ClosedDays.COLUMN,
                Date.valueOf(ClosedDays.decidedBy(Watermark.of(wm), spill).lastClosed().orElseThrow())));
        v.put("batch_ts", now);
        v.put("partition_clocks", null);
        Row r = Lakehouse.row(Table.STREAM_PROGRESS, v);
        Dataset<Row> df = spark.createDataFrame(List.of(r), r.schema());
        l.commit(spark, new TableUpdate.Append(Table.STREAM_PROGRESS, df, null));
    }

    static Dataset<Row> asTable(SparkSession spark, Lakehouse l, Table t, Dataset<Row> rows) {
        Set<String> have = Set.of(rows.columns());
        List<Column> cols = new ArrayList<>();
        for (StructField f : l.read(spark, t).schema().fields()) {
            cols.add((have.contains(f.name()) ? rows.col(f.name()) : lit(null)).cast(f.dataType()).as(f.name()));
        }
        return rows.select(cols.toArray(Column[]::new));
    }

    static String describe(SparkSession spark, Lakehouse l) {
        Row d = spark.sql("DESCRIBE DETAIL " + l.ref(Table.RAW_EVENTS)).select("numFiles", "sizeInBytes").first();
        Row c = l.read(spark, Table.RAW_EVENTS).agg(count(lit(1)), expr("count(DISTINCT event_date)")).first();
        return String.format("raw_events %,d events in %,d days, %,d files, %,d MB", c.getLong(0), c.getLong(1), d.getLong(0),
                d.getLong(1) >> 20);
    }

    // ------------------------------------------------------------------------------------------
    // Reporting
    // ------------------------------------------------------------------------------------------

    static String table(List<Run> runs, String hName, long events) {
        StringBuilder b = new StringBuilder();
        b.append(String.format("target day %s: %,d events%n", TARGET, events));
        b.append("| run | round | seconds | events/s | load avg before (1/5/15 min) |\n|---|---:|---:|---:|---|\n");
        for (Run r : runs) {
            b.append(String.format("| %s | %d | %.1f | %,.0f | %s |%n", r.what(), r.round(), r.millis() / 1000.0, r.eventsPerSecond(), r.load()));
        }
        double m1 = median(runs, "h1");
        double mN = median(runs, hName);
        double mp = median(runs, "plain");
        b.append(String.format("%nmedian seconds: h1 %.1f, %s %.1f, plain %.1f%n", m1, hName, mN, mp));
        if (m1 > 0 && mN > 0) {
            b.append(String.format("history growth %s/h1 = %.2fx (target <= 1.2x)%n", hName, mN / m1));
        }
        if (mp > 0 && mN > 0) {
            b.append(String.format("throughput reconcile(%s)/plain = %.2fx (target >= 0.8x)%n", hName, mp / mN));
        }
        if (mp > 0 && m1 > 0) {
            b.append(String.format("throughput reconcile(h1)/plain = %.2fx%n", mp / m1));
        }
        return b.toString();
    }

    /** The machine-readable results: the same medians and ratios as {@link #table}, the runs, the load averages. */
    static ObjectNode json(String[] args, Instant startedAt, Params p, int rounds, List<Run> runs, String hName, long events,
            String loadBefore, String loadAfter) {
        double m1 = median(runs, "h1");
        double mN = median(runs, hName);
        double mp = median(runs, "plain");
        ObjectNode root = BenchResults.header("bench/run reconcile " + String.join(" ", args), startedAt);
        root.put("target_day", TARGET.toString());
        root.put("target_events", events);
        root.put("day_events", p.dayEvents());
        root.put("history_events", p.historyEvents());
        root.put("history_days", p.historyDays());
        root.put("files_per_day", p.filesPerDay());
        root.put("rounds", rounds);
        root.set("load_avg_before", BenchResults.loadAverageJson(loadBefore));
        root.set("load_avg_after", BenchResults.loadAverageJson(loadAfter));
        ArrayNode loads = root.putArray("load_avg_before_each_run");
        for (Run r : runs) {
            ObjectNode l = loads.addObject();
            l.put("round", r.round());
            l.put("run", r.what());
            l.set("load_avg", BenchResults.loadAverageJson(r.load()));
        }
        // median() answers 0 for a run that was left out (--only); the JSON says null.
        ObjectNode med = root.putObject("median_seconds");
        BenchResults.putNumber(med, "h1", m1 > 0 ? BenchResults.round(m1, 3) : Double.NaN);
        BenchResults.putNumber(med, hName, mN > 0 ? BenchResults.round(mN, 3) : Double.NaN);
        BenchResults.putNumber(med, "plain", mp > 0 ? BenchResults.round(mp, 3) : Double.NaN);
        BenchResults.putNumber(root, "ratio_vs_plain", mp > 0 && mN > 0 ? BenchResults.round(mp / mN, 4) : Double.NaN);
        BenchResults.putNumber(root, "ratio_h1_vs_plain", mp > 0 && m1 > 0 ? BenchResults.round(mp / m1, 4) : Double.NaN);
        BenchResults.putNumber(root, "history_growth", m1 > 0 && mN > 0 ? BenchResults.round(mN / m1, 4) : Double.NaN);
        ArrayNode rs = root.putArray("runs");
        for (Run r : runs) {
            ObjectNode o = rs.addObject();
            o.put("round", r.round());
            o.put("run", r.what());
            o.put("seconds", r.millis() / 1000.0);
            o.put("events_per_s", BenchResults.round(r.eventsPerSecond(), 1));
            o.set("load_avg_before", BenchResults.loadAverageJson(r.load()));
            o.put("note", r.note());
        }
        return root;
    }

    static double median(List<Run> runs, String what) {
        double[] s = runs.stream().filter(r -> r.what().equals(what)).mapToDouble(r -> r.millis() / 1000.0).sorted().toArray();
        if (s.length == 0) {
            return 0;
        }
        return s.length % 2 == 1 ? s[s.length / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
    }

    static String loadAverage() {
        try {
            String[] f = Files.readString(Path.of("/proc/loadavg")).trim().split("\\s+");
            return f[0] + " " + f[1] + " " + f[2];
        } catch (IOException e) {
            return "?";
        }
    }

    /**
     * Where a run's time goes: wall and task time of the stages of each SQL execution, by the
     * execution's call site (e.g. {@code first at ReconcileJob.java:174}). Stages that adaptive query
     * execution submits from its own threads are attributed through the job's execution id.
     */
    static final class StageTimes extends SparkListener {
        private final Map<Integer, Long> stageExecution = new ConcurrentHashMap<>();
        private final Map<Long, String> executionName = new ConcurrentHashMap<>();
        private final Map<String, long[]> byName = new ConcurrentHashMap<>();

        void reset() {
            byName.clear();
        }

        @Override
        public void onJobStart(SparkListenerJobStart e) {
            String id = e.properties() == null ? null : e.properties().getProperty("spark.sql.execution.id");
            if (id != null) {
                for (Object stage : CollectionConverters.asJava(e.stageIds())) {
                    stageExecution.put((Integer) stage, Long.parseLong(id));
                }
            }
        }

        @Override
        public void onOtherEvent(SparkListenerEvent e) {
            if (e instanceof SparkListenerSQLExecutionStart s) {
                executionName.put(s.executionId(), s.description());
            }
        }

        @Override
        public void onStageCompleted(SparkListenerStageCompleted e) {
            StageInfo s = e.stageInfo();
            if (s.submissionTime().isEmpty() || s.completionTime().isEmpty()) {
                return;
            }
            long ms = (Long) s.completionTime().get() - (Long) s.submissionTime().get();
            Long exec = stageExecution.get(s.stageId());
            String name = exec == null ? s.name() : executionName.getOrDefault(exec, "execution " + exec);
            long[] v = byName.computeIfAbsent(name, k -> new long[3]);
            synchronized (v) {
                v[0] += ms;
                v[1]++;
                v[2] += s.taskMetrics().executorRunTime();
            }
        }

        String top(int n) {
            StringBuilder b = new StringBuilder();
            byName.entrySet().stream().sorted((a, c) -> Long.compare(c.getValue()[2], a.getValue()[2])).limit(n)
                    .forEach(en -> b.append(String.format("    %-60s %3d stages %7.1f s stage wall %7.1f s task time%n", en.getKey(),
                            en.getValue()[1], en.getValue()[0] / 1000.0, en.getValue()[2] / 1000.0)));
            return b.toString();
        }
    }

    static void copyRecursively(Path from, Path to) throws IOException {
        try (Stream<Path> s = Files.walk(from)) {
            for (Path src : (Iterable<Path>) s::iterator) {
                Path dst = to.resolve(from.relativize(src).toString());
                if (Files.isDirectory(src)) {
                    Files.createDirectories(dst);
                } else {
                    Files.copy(src, dst, StandardCopyOption.COPY_ATTRIBUTES);
                }
            }
        }
    }

    static void deleteRecursively(Path p) throws IOException {
        if (!Files.exists(p)) {
            return;
        }
        try (Stream<Path> s = Files.walk(p)) {
            for (Path q : s.sorted(Comparator.reverseOrder()).toList()) {
                Files.delete(q);
            }
        }
    }
}
