package io.tidemark.bench;

import java.io.BufferedWriter;
import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDate;
import java.time.ZoneOffset;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeSet;
import java.util.stream.Stream;

import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.delta.DeltaLog;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import io.tidemark.bench.FreshnessBenchmark.StreamProcess;
import io.tidemark.broker.BrokerSettings;
import io.tidemark.broker.LocalKafkaBroker;
import io.tidemark.generate.GenerationReport;
import io.tidemark.generate.IngestMode;
import io.tidemark.generate.KafkaTrafficProducer;
import io.tidemark.generate.TrafficSpec;
import io.tidemark.lakehouse.ClosedDays;
import io.tidemark.lakehouse.CommitRetry;
import io.tidemark.lakehouse.Lakehouse;
import io.tidemark.lakehouse.Lakehouse.Table;
import io.tidemark.lakehouse.SparkSessions;
import io.tidemark.lakehouse.TidemarkConfig;
import io.tidemark.operations.Maintenance;
import io.tidemark.pipeline.DistinctCount;
import io.tidemark.pipeline.Durations;
import io.tidemark.pipeline.Measure;
import io.tidemark.pipeline.Pipeline;
import io.tidemark.pipeline.Sum;
import io.tidemark.reconcile.DaySelection;
import io.tidemark.reconcile.ReconcileJob;

/**
 * The stream over thousands of micro-batches, with and without {@code tidemark maintain}: what batch
 * 2,000 costs against batch 100, how the Delta logs and file counts grow, how long a reader takes to
 * load each table's state at the end, and how fast an analyst reads one closed day before and after
 * compaction; then an extrapolation to a year at the default 10 s trigger.
 *
 * <p>One topic (2 partitions) is produced once with a synthetic event clock: {@code --batches} x
 * {@code --records-per-batch} records whose event time advances one day per {@code --batches-per-day}
 * micro-batches (default 1,000), with the generator's usual 1 % late and 0.5 % invalid records, so
 * days close during the run and late records make closed days dirty. Each run streams the whole
 * topic in a JVM of its own ({@link FreshnessStreamJob}) with a zero trigger (batches back to back)
 * and {@code stream.max-offsets-per-trigger = --records-per-batch}, while this JVM, a separate
 * process like a scheduler's job, every {@code --maintain-every} batches reconciles the newly closed
 * and the dirty days and, in the {@code maintained} run only, runs {@link Maintenance} (compaction of
 * closed days and a vacuum). Runs are sequential, {@code maintained} first, on the same topic.
 *
 * <p>The vacuum uses {@code --vacuum-retention} (default 7 days, Delta's safety minimum, as in
 * production: within the run it deletes nothing; a shorter one is forced). The analyst's read of one
 * closed day compares, by time travel on the same lakehouse, the version just before the maintenance
 * round that compacted the day with the last version (in the unmaintained run: the last version
 * with the version after one compaction at the end), in interleaved rounds.
 *
 * <p>{@code bench/run long-haul [--batches 2000] [--records-per-batch 20] [--batches-per-day 1000]
 * [--maintain-every 250] [--sample-every 100] [--vacuum-retention 7d] [--only maintained|unmaintained]
 * [--work DIR] [--max-time 3h]}: {@code --max-time} stops a run's stream early (figures up to there).
 */
public final class LongHaulBenchmark {

    static final String TOPIC = "long-haul-events";
    static final int PARTITIONS = 2;
    static final List<Table> TABLES = List.of(Table.RAW_EVENTS, Table.LATE_EVENTS, Table.DEAD_LETTER, Table.kpi("kpi_5m"), Table.STREAM_PROGRESS);
    static final int[] MARKS = {100, 500, 1000, 2000};
    /** Per-batch figures are medians over this many batches ending at a mark (single batches vary too much). */
    static final int MARK_WINDOW = 50;
    /** A year of batches at the default 10 s trigger. */
    static final long YEAR_BATCHES = 365L * 24 * 360;
    /** Batches within Delta's 7-day log retention (tables.sql) at the default trigger. */
    static final long RETAINED_BATCHES = 7L * 24 * 360;
    static final int SNAPSHOT_ROUNDS = 3;
    static final int READ_ROUNDS = 5;

    record Settings(int batches, int recordsPerBatch, int batchesPerDay, int maintainEvery, int sampleEvery, Duration vacuumRetention,
                    List<String> modes, Path work, Duration maxTime, Instant clockStart) {
        long records() {
            return (long) batches * recordsPerBatch;
        }

        /** The first whole day of event time: the clock starts at a minute, not at a midnight. */
        LocalDate firstFullDay() {
            LocalDate d = LocalDate.ofInstant(clockStart, ZoneOffset.UTC);
            return d.atStartOfDay(ZoneOffset.UTC).toInstant().equals(clockStart) ? d : d.plusDays(1);
        }

        /** Micro-batches before {@link #firstFullDay()} starts. */
        long batchesBeforeFirstFullDay() {
            long seconds = Duration.between(clockStart, firstFullDay().atStartOfDay(ZoneOffset.UTC).toInstant()).toSeconds();
            return Math.round(seconds / 86_400.0 * batchesPerDay);
        }
    }

    public static void main(String[] args) throws Exception {
        int batches = 2000;
        int perBatch = 20;
        int perDay = 1000;
        int maintainEvery = 250;
        int sampleEvery = 100;
        Duration vacuumRetention = Maintenance.SAFE_RETENTION;
        List<String> modes = List.of("maintained", "unmaintained");
        Path work = Path.of("bench/work-long-haul").toAbsolutePath();
        Duration maxTime = Duration.ofHours(3);
        if (args.length == 1 && args[0].equals("--combine")) {
            combine();
            return;
        }
        if (args.length == 2 && args[0].equals("--probe")) { // only the snapshot probes, at the sizes given, from the maintained run's raw_events
            long[] sizes = Arrays.stream(args[1].split(",")).mapToLong(Long::parseLong).toArray();
            Path probeWork = work.resolve("snapshot-probe");
            SparkSession spark = probeSession(probeWork);
            System.out.print(probeLines(probeSnapshots(spark, work.resolve("maintained").resolve("lakehouse").resolve(Table.RAW_EVENTS.tableName()),
                    probeWork, sizes)) + "\n");
            spark.stop();
            return;
        }
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--batches" -> batches = Integer.parseInt(args[++i]);
                case "--records-per-batch" -> perBatch = Integer.parseInt(args[++i]);
                case "--batches-per-day" -> perDay = Integer.parseInt(args[++i]);
                case "--maintain-every" -> maintainEvery = Integer.parseInt(args[++i]);
                case "--sample-every" -> sampleEvery = Integer.parseInt(args[++i]);
                case "--vacuum-retention" -> vacuumRetention = Durations.parse(args[++i]);
                case "--only" -> {
                    String m = args[++i];
                    if (!m.equals("maintained") && !m.equals("unmaintained")) {
                        throw new IllegalArgumentException("--only takes maintained or unmaintained, not " + m);
                    }
                    modes = List.of(m);
                }
                case "--work" -> work = Path.of(args[++i]).toAbsolutePath();
                case "--max-time" -> maxTime = Durations.parse(args[++i]);
                default -> throw new IllegalArgumentException("unknown argument " + args[i] + " (known: --batches, --records-per-batch, "
                        + "--batches-per-day, --maintain-every, --sample-every, --vacuum-retention, --only, --work, --max-time; or --combine alone, or --probe n,n,...)");
            }
        }
        if (batches < MARK_WINDOW || perBatch < 1 || perDay < 10 || maintainEvery < 1 || sampleEvery < 1) {
            throw new IllegalArgumentException("need --batches >= " + MARK_WINDOW + ", --records-per-batch >= 1, --batches-per-day >= 10 and "
                    + "positive --maintain-every and --sample-every");
        }
        // The clock ends an hour before the records are produced, as a backlog of real traffic does: the
        // generator's future-dated invalid records (2 to 24 h after the clock's end) are then in the future
        // of their Kafka timestamps. With a clock that ended days before, they were valid, and the first of
        // them moved the watermark to the end of the clock within 250 batches (45 % of the records late).
        Instant clockStart = Instant.now().truncatedTo(ChronoUnit.MINUTES).minus(Duration.ofHours(1))
                .minusSeconds(Math.round((double) batches / perDay * 86_400));
        Settings s = new Settings(batches, perBatch, perDay, maintainEvery, sampleEvery, vacuumRetention, modes, work, maxTime, clockStart);
        String command = "bench/run long-haul" + (args.length == 0 ? "" : " " + String.join(" ", args));
        Instant started = Instant.now();
        System.out.printf(Locale.ROOT, "long haul: %,d batches of %d records, a day of event time per %,d batches, reconcile%s every %d batches, "
                + "zero trigger; runs: %s; load average %s%n", batches, perBatch, perDay, modes.contains("maintained") ? " (+ maintain)" : "",
                maintainEvery, String.join(", ", modes), BenchResults.loadAverage());

        // Only what this invocation rewrites: a run of the other mode from an earlier sitting stays.
        SpeedLayerBenchmark.deleteRecursively(work.resolve("broker"));
        for (String mode : modes) {
            SpeedLayerBenchmark.deleteRecursively(work.resolve(mode));
        }
        Files.createDirectories(work);
        ObjectNode root = BenchResults.header(command, started);
        root.put("batches", batches);
        root.put("records_per_batch", perBatch);
        root.put("batches_per_day", perDay);
        root.put("event_clock_start", clockStart.toString());
        root.put("maintain_every", maintainEvery);
        root.put("vacuum_retention_minutes", vacuumRetention.toMinutes());
        root.set("loadavg_before", BenchResults.loadAverageJson(BenchResults.loadAverage()));
        Map<String, Run> runs = new LinkedHashMap<>();
        try (LocalKafkaBroker broker = LocalKafkaBroker.start(BrokerSettings.of(work.resolve("broker")).withHeapMb(512))) {
            broker.createTopic(TOPIC, PARTITIONS);
            GenerationReport produced = produce(broker, s);
            root.put("records", produced.messages());
            root.put("late_records_generated", produced.late());
            root.put("invalid_records_generated", produced.invalid());
            TidemarkConfig first = config(s, modes.get(0));
            SparkSession spark = SparkSessions.create(first, "bench-long-haul");
            for (String mode : modes) {
                Run r = new Run(mode, s, broker.bootstrapServers(), spark, produced);
                r.stream();
                r.finish();
                runs.put(mode, r);
                System.out.print(r.summary());
            }
            ObjectNode out = root.putObject("runs");
            runs.forEach((m, r) -> out.set(m, r.json()));

            if (modes.size() == 2) {
                root.set("year_at_10s_trigger", year(spark, out, work.resolve(modes.get(0)), work.resolve("snapshot-probe")));
            }
            spark.stop();
        }
        root.set("loadavg_after", BenchResults.loadAverageJson(BenchResults.loadAverage()));
        String year = root.has("year_at_10s_trigger") ? yearTable(root.get("year_at_10s_trigger"))
                : "\n(one run: the year is extrapolated over both runs by bench/run long-haul --combine once the other has run)\n";
        System.out.print(year);
        // One mode at a time (two sittings) writes a file per mode; --combine joins them.
        Path json = BenchResults.write(Path.of("bench/results/" + (modes.size() == 1 ? "long-haul-" + modes.get(0) : "long-haul") + ".json")
                .toAbsolutePath(), root);
        String log = "\n## " + Instant.now() + " " + command + " (commit " + root.path("commit").asText() + ")\n"
                + runs.values().stream().map(Run::summary).reduce("", String::concat) + year;
        Files.writeString(Path.of("bench/results.log").toAbsolutePath(), log, StandardOpenOption.CREATE,
                StandardOpenOption.APPEND);
        System.out.println("written " + Path.of("").toAbsolutePath().relativize(json) + "; appended to bench/results.log; samples per run: "
                + Path.of("").toAbsolutePath().relativize(work) + "/<run>/samples.csv, batches.csv");
        boolean complete = runs.values().stream().allMatch(r -> r.complete);
        System.exit(complete ? 0 : 1);
    }

    /** The whole topic, once: a synthetic event clock that ends an hour before now, a day per {@code batchesPerDay} batches. */
    static GenerationReport produce(LocalKafkaBroker broker, Settings s) throws Exception {
        double eventsPerSecond = (double) s.recordsPerBatch() * s.batchesPerDay() / 86_400.0;
        Instant start = s.clockStart();
        TrafficSpec spec = TrafficSpec.builder().topic(TOPIC).count(s.records()).ingestMode(IngestMode.BACKLOG).eventClockStart(start)
                .eventsPerSecondOfEventTime(eventsPerSecond).cells(50).subscribers(5_000).seed(11).build();
        GenerationReport report = new KafkaTrafficProducer(broker.bootstrapServers(), Map.of()).produce(spec, p -> { });
        System.out.printf(Locale.ROOT, "produced %,d records (%,d late, %,d invalid); event clock from %s, %.4f events per second of event time%n",
                report.messages(), report.late(), report.invalid(), start, eventsPerSecond);
        return report;
    }

    static TidemarkConfig config(Settings s, String mode) {
        Path dir = s.work().resolve(mode);
        return TidemarkConfig.builder()
                .set(TidemarkConfig.Key.TOPIC, TOPIC)
                .set(TidemarkConfig.Key.LAKEHOUSE, dir.resolve("lakehouse").toString())
                .set(TidemarkConfig.Key.CHECKPOINT, dir.resolve("checkpoint").toString())
                .set(TidemarkConfig.Key.VACUUM_RETENTION, s.vacuumRetention().toMinutes() + " minutes")
                .build();
    }

    /** One run: the stream in its own JVM, reconcile (and maintain) from this one, samples of the tables' files. */
    static final class Run {
        final String mode;
        final Settings s;
        final String bootstrap;
        final SparkSession spark;
        final GenerationReport produced;
        final TidemarkConfig config;
        final Lakehouse lakehouse;
        final Path dir;
        final boolean maintained;
        final List<Sample> samples = new ArrayList<>();
        final List<double[]> upkeep = new ArrayList<>(); // batch, reconcile s, maintain s
        final TreeSet<LocalDate> reconciled = new TreeSet<>();
        /** Per maintenance round: the last closed day and the versions of kpi_5m and raw_events just before it. */
        final List<Object[]> beforeRounds = new ArrayList<>();
        final PrintStream jobLog;
        StreamProcess stream;
        List<long[]> batches;
        Map<Table, double[]> snapshotEnd;    // median ms, active files
        Map<Table, LogEnd> logEnd;
        ObjectNode read;
        boolean complete;
        long rawCount;
        long distinctOffsets;
        long wallMs;

        Run(String mode, Settings s, String bootstrap, SparkSession spark, GenerationReport produced) throws IOException {
            this.mode = mode;
            this.s = s;
            this.bootstrap = bootstrap;
            this.spark = spark;
            this.produced = produced;
            this.config = config(s, mode);
            this.lakehouse = Lakehouse.of(config);
            this.dir = s.work().resolve(mode);
            this.maintained = mode.equals("maintained");
            Files.createDirectories(dir);
            this.jobLog = new PrintStream(Files.newOutputStream(dir.resolve("upkeep.log")), true);
        }

        void stream() throws Exception {
            long t0 = System.currentTimeMillis();
            stream = StreamProcess.start(bootstrap, TOPIC, Duration.ZERO, dir, dir, "3g",
                    List.of("stream.max-offsets-per-trigger=" + s.recordsPerBatch()));
            System.out.printf("%s: stream started in its own JVM (log %s)%n", mode, s.work().relativize(stream.stderr));
            int nextSample = s.sampleEvery();
            int nextUpkeep = s.maintainEvery();
            int nextReport = 250;
            long deadline = t0 + s.maxTime().toMillis();
            while (stream.consumed.get() < s.records()) {
                if (System.currentTimeMillis() > deadline) {
                    System.out.printf("%s: --max-time %s reached at batch %,d: stopping the stream, figures up to there%n", mode, s.maxTime(),
                            stream.batches.size());
                    break;
                }
                if (!stream.process.isAlive()) {
                    throw new IllegalStateException(mode + ": the stream JVM exited with code " + stream.process.exitValue() + "; see " + stream.stderr);
                }
                Thread.sleep(200);
                int n = stream.batches.size();
                if (n >= nextSample) {
                    samples.add(sample(n, n % (5 * s.sampleEvery()) == 0));
                    nextSample += s.sampleEvery();
                }
                if (n >= nextUpkeep) {
                    upkeep(n);
                    nextUpkeep += s.maintainEvery();
                }
                if (n >= nextReport) {
                    System.out.printf(Locale.ROOT, "  %s: %,d batches, %,d records read, last batch %.2f s, %.0f s elapsed; load %s%n", mode, n,
                            stream.consumed.get(), stream.batches.get(n - 1)[2] / 1000.0, (System.currentTimeMillis() - t0) / 1000.0,
                            BenchResults.loadAverage());
                    nextReport += 250;
                }
            }
            stream.stop(Duration.ofMinutes(3));
            wallMs = System.currentTimeMillis() - t0;
            batches = new ArrayList<>(stream.batches);
            upkeep(batches.size()); // the days that closed in the last stretch, as the next scheduled run would
            samples.add(sample(batches.size(), true));
        }

        /** Reconciles the closed days not reconciled yet and the dirty ones; then, when maintained, compaction and vacuum. */
        void upkeep(int batch) {
            long t0 = System.nanoTime();
            ReconcileJob job = new ReconcileJob(spark, config, jobLog, CommitRetry.defaults());
            ClosedDays closed = job.closedDays();
            List<LocalDate> fresh = closed.lastClosed().isEmpty() ? List.of()
                    : new TreeSet<>(daysWithRaw()).headSet(closed.lastClosed().get(), true).stream().filter(d -> !reconciled.contains(d)).toList();
            if (!fresh.isEmpty()) {
                job.run(DaySelection.range(fresh.get(0), fresh.get(fresh.size() - 1)), false);
                reconciled.addAll(fresh);
            }
            if (!job.dirtyDays().isEmpty()) {
                job.run(DaySelection.dirty(), false);
            }
            double reconcileS = (System.nanoTime() - t0) / 1e9;
            double maintainS = 0;
            if (maintained) {
                beforeRounds.add(new Object[] {closed.lastClosed().orElse(null), version(Table.kpi("kpi_5m")), version(Table.RAW_EVENTS)});
                long t1 = System.nanoTime();
                boolean force = config.vacuumRetention().compareTo(Maintenance.SAFE_RETENTION) < 0;
                new Maintenance(spark, config, jobLog, CommitRetry.defaults()).run(new Maintenance.Options(false, config.vacuumRetention(), force));
                maintainS = (System.nanoTime() - t1) / 1e9;
            }
            upkeep.add(new double[] {batch, reconcileS, maintainS});
            System.out.printf(Locale.ROOT, "  %s: at batch %,d reconciled %s%s in %.1f s%s%n", mode, batch,
                    fresh.isEmpty() ? "no new closed day" : fresh.size() + " new closed day(s)", " and the dirty days", reconcileS,
                    maintained ? String.format(Locale.ROOT, ", maintained in %.1f s", maintainS) : "");
        }

        private List<LocalDate> daysWithRaw() {
            if (!lakehouse.exists(spark, Table.RAW_EVENTS)) {
                return List.of();
            }
            return lakehouse.read(spark, Table.RAW_EVENTS).select("event_date").distinct().collectAsList().stream()
                    .map(r -> r.getDate(0).toLocalDate()).toList();
        }

        /** Files of each table on disk; with {@code snapshots}, also each table's state loaded by a fresh reader (time, active files). */
        Sample sample(int batch, boolean snapshots) {
            Map<Table, TableFiles> files = new LinkedHashMap<>();
            Map<Table, double[]> loaded = new LinkedHashMap<>();
            for (Table t : TABLES) {
                files.put(t, TableFiles.of(Path.of(lakehouse.path(t))));
                if (snapshots && Files.isDirectory(Path.of(lakehouse.path(t), "_delta_log"))) {
                    loaded.put(t, loadSnapshot(t, 1));
                }
            }
            return new Sample(batch, System.currentTimeMillis(), files, loaded);
        }

        /** Median over {@code rounds} of the time a reader with no cached state takes to load the table's state, and its active files. */
        double[] loadSnapshot(Table t, int rounds) {
            double[] ms = new double[rounds];
            long files = 0;
            for (int i = 0; i < rounds; i++) {
                DeltaLog.clearCache();
                long t0 = System.nanoTime();
                Row d = spark.sql("DESCRIBE DETAIL " + lakehouse.ref(t)).select("numFiles").first();
                ms[i] = (System.nanoTime() - t0) / 1e6;
                files = d.getLong(0);
            }
            return new double[] {BenchResults.median(ms), files};
        }

        void finish() throws Exception {
            Row c = lakehouse.read(spark, Table.RAW_EVENTS)
                    .selectExpr("count(*)", "count(DISTINCT kafka_partition, kafka_offset)").first();
            rawCount = c.getLong(0);
            distinctOffsets = c.getLong(1);
            long dead = lakehouse.read(spark, Table.DEAD_LETTER).count();
            // Every record the stream read is in raw_events or dead_letter, once.
            complete = distinctOffsets == rawCount && rawCount + dead == stream.consumed.get();
            snapshotEnd = new LinkedHashMap<>();
            logEnd = new LinkedHashMap<>();
            ClosedDays closed = ClosedDays.load(spark, lakehouse);
            for (Table t : TABLES) {
                snapshotEnd.put(t, loadSnapshot(t, SNAPSHOT_ROUNDS));
                logEnd.put(t, LogEnd.of(spark, lakehouse, t, closed, s.firstFullDay()));
            }
            writeCsv();
            read = analystRead();
        }

        /**
         * One closed day read as an analyst reads it, before and after compaction, on the same data: the
         * day's version now (uncompacted) against the version after {@link Maintenance} compacted it, by
         * time travel, in interleaved rounds, each query a reader's first (no cached table state).
         */
        ObjectNode analystRead() {
            // The reconciled day most micro-batches wrote: the first one may hold only a few early records
            // of the day before the event clock starts.
            LocalDate day = null;
            long writers = 0;
            for (Row r : lakehouse.read(spark, Table.RAW_EVENTS).groupBy("event_date")
                    .agg(org.apache.spark.sql.functions.countDistinct(org.apache.spark.sql.functions.col("batch_id"))).collectAsList()) {
                LocalDate d = r.getDate(0).toLocalDate();
                if (reconciled.contains(d) && (r.getLong(1) > writers || (r.getLong(1) == writers && d.isBefore(day)))) {
                    day = d;
                    writers = r.getLong(1);
                }
            }
            ObjectNode o = BenchResults.JSON.createObjectNode();
            if (day == null) {
                o.put("skipped", "no closed day");
                return o;
            }
            final LocalDate readDay = day;
            long kpiBefore;
            long rawBefore;
            if (maintained) { // the round that first saw the day closed compacted it
                Object[] round = beforeRounds.stream().filter(b -> b[0] != null && !((LocalDate) b[0]).isBefore(readDay)).findFirst().orElse(null);
                if (round == null) {
                    o.put("skipped", "no maintenance round after " + day + " closed");
                    return o;
                }
                kpiBefore = (Long) round[1];
                rawBefore = (Long) round[2];
            } else {
                kpiBefore = version(Table.kpi("kpi_5m"));
                rawBefore = version(Table.RAW_EVENTS);
                new Maintenance(spark, config, jobLog, CommitRetry.defaults()).run(new Maintenance.Options(false, null, false));
            }
            long[] filesBefore = {dayFiles(Table.kpi("kpi_5m"), day, kpiBefore), dayFiles(Table.RAW_EVENTS, day, rawBefore)};
            long kpiAfter = version(Table.kpi("kpi_5m"));
            long rawAfter = version(Table.RAW_EVENTS);
            long[] filesAfter = {dayFiles(Table.kpi("kpi_5m"), day, kpiAfter), dayFiles(Table.RAW_EVENTS, day, rawAfter)};
            o.put("versions", "kpi_5m " + kpiBefore + " -> " + kpiAfter + ", raw_events " + rawBefore + " -> " + rawAfter);
            // The day's figures per first dimension from the first KPI table, and the raw log's: the same reads before and after.
            Pipeline.KpiTable first = lakehouse.pipeline().tables().get(0);
            String dim = first.dimensions().get(0).name();
            Measure summed = first.measures().stream()
                    .filter(m -> m.function() instanceof Sum).findFirst().orElseThrow();
            Measure distinct = first.measures().stream()
                    .filter(m -> m.function() instanceof DistinctCount).findFirst().orElseThrow();
            String kpiSql = "SELECT " + dim + ", sum(" + first.recordCount().orElseThrow().name() + ") AS records, sum(" + summed.name() + ") AS s, "
                    + "hll_sketch_estimate(" + DistinctCount.orderFreeUnion(distinct.sketch()) + ") AS d FROM %s VERSION AS OF %d "
                    + "WHERE event_date = DATE'" + day + "' GROUP BY " + dim + " ORDER BY " + dim;
            // The sum as decimals: a sum of doubles depends on the order of the files, which compaction changes.
            String rawSql = "SELECT count(*), sum(CAST(" + summed.argument() + " AS DECIMAL(38, 18))), count(DISTINCT " + distinct.argument()
                    + "), count(DISTINCT " + dim + ") FROM %s VERSION AS OF %d WHERE event_date = DATE'" + day + "'";
            String[] names = {"kpi_daily of the day", "raw_events scan of the day"};
            String[][] sql = {
                {String.format(kpiSql, lakehouse.ref(Table.kpi("kpi_5m")), kpiBefore), String.format(kpiSql, lakehouse.ref(Table.kpi("kpi_5m")), kpiAfter)},
                {String.format(rawSql, lakehouse.ref(Table.RAW_EVENTS), rawBefore), String.format(rawSql, lakehouse.ref(Table.RAW_EVENTS), rawAfter)}};
            o.put("day", day.toString());
            o.put("micro_batches_that_wrote_the_day", writers);
            ArrayNode queries = o.putArray("queries");
            for (int q = 0; q < 2; q++) {
                double[][] ms = new double[2][READ_ROUNDS];
                List<Row> results0 = null;
                List<Row> results1 = null;
                for (int round = 0; round < READ_ROUNDS; round++) {
                    for (int k = 0; k < 2; k++) {
                        int which = (round % 2 == 0) ? k : 1 - k; // alternate which goes first
                        DeltaLog.clearCache();
                        long t0 = System.nanoTime();
                        List<Row> rows = spark.sql(sql[q][which]).collectAsList();
                        ms[which][round] = (System.nanoTime() - t0) / 1e6;
                        if (which == 0) {
                            results0 = rows;
                        } else {
                            results1 = rows;
                        }
                    }
                }
                ObjectNode qo = queries.addObject();
                qo.put("query", names[q]);
                qo.put("files_before", filesBefore[q]);
                qo.put("files_after", filesAfter[q]);
                qo.put("ms_before", BenchResults.round(BenchResults.median(ms[0]), 1));
                qo.put("ms_after", BenchResults.round(BenchResults.median(ms[1]), 1));
                qo.put("speedup", BenchResults.round(BenchResults.median(ms[0]) / BenchResults.median(ms[1]), 2));
                qo.put("same_result", String.valueOf(results0).equals(String.valueOf(results1)));
                qo.put("rows", results0.size());
            }
            return o;
        }

        private long version(Table t) {
            return lakehouse.version(spark, t);
        }

        private long dayFiles(Table t, LocalDate day, long version) {
            return lakehouse.readAt(spark, t, version).where("event_date = DATE'" + day + "'")
                    .selectExpr("count(DISTINCT _metadata.file_path)").first().getLong(0);
        }

        /** Median batch duration (stream_progress duration_ms) and interval between batch ends over the window ending at batch {@code mark}. */
        double[] atMark(int mark) {
            int end = Math.min(mark, batches.size());
            int from = Math.max(1, end - MARK_WINDOW);
            double[] dur = new double[end - from];
            double[] gap = new double[end - from];
            for (int i = from; i < end; i++) {
                dur[i - from] = batches.get(i)[2];
                gap[i - from] = batches.get(i)[3] - batches.get(i - 1)[3];
            }
            return new double[] {end, BenchResults.median(dur), BenchResults.median(gap)};
        }

        List<Integer> marks() {
            List<Integer> m = new ArrayList<>();
            for (int k : MARKS) {
                if (k <= batches.size()) {
                    m.add(k);
                }
            }
            if (m.isEmpty() || m.get(m.size() - 1) < batches.size()) {
                m.add(batches.size());
            }
            return m;
        }

        void writeCsv() throws IOException {
            StringBuilder b = new StringBuilder("batch_id,records_in,duration_ms,finished_ms\n");
            for (long[] x : batches) {
                b.append(x[0]).append(',').append(x[1]).append(',').append(x[2]).append(',').append(x[3]).append('\n');
            }
            Files.writeString(dir.resolve("batches.csv"), b);
            StringBuilder c = new StringBuilder("batch,table,log_files,log_bytes,checkpoints,checkpoint_bytes,data_files_on_disk,data_bytes_on_disk,"
                    + "snapshot_ms,active_files\n");
            for (Sample x : samples) {
                for (Table t : TABLES) {
                    TableFiles f = x.files().get(t);
                    double[] l = x.loaded().get(t);
                    c.append(x.batch()).append(',').append(t.tableName()).append(',').append(f.logFiles()).append(',').append(f.logBytes()).append(',')
                            .append(f.checkpoints()).append(',').append(f.lastCheckpointBytes()).append(',').append(f.dataFiles()).append(',')
                            .append(f.dataBytes()).append(',').append(l == null ? "" : String.format(Locale.ROOT, "%.1f", l[0])).append(',')
                            .append(l == null ? "" : String.valueOf((long) l[1])).append('\n');
                }
            }
            Files.writeString(dir.resolve("samples.csv"), c);
        }

        String summary() {
            StringBuilder b = new StringBuilder();
            b.append(String.format(Locale.ROOT, "%n### %s: %,d batches in %.1f min; raw_events %,d of %,d valid records (%,d distinct offsets): %s%n%n",
                    mode, batches.size(), wallMs / 60_000.0, rawCount, produced.valid(), distinctOffsets,
                    complete ? "every record read is in raw_events or dead_letter exactly once" : "INCOMPLETE: figures NOT valid"));
            b.append("| batch | median batch s (50 up to it) | median interval s | vs batch ").append(marks().get(0)).append(" |\n|---:|---:|---:|---:|\n");
            double base = atMark(marks().get(0))[2];
            for (int k : marks()) {
                double[] m = atMark(k);
                b.append(String.format(Locale.ROOT, "| %,d | %.3f | %.3f | %.2fx |%n", k, m[1] / 1000, m[2] / 1000, m[2] / base));
            }
            b.append("\n| table | log files | log MB | checkpoint KB | data files on disk | active files | snapshot load ms |\n|---|---:|---:|---:|---:|---:|---:|\n");
            Sample last = samples.get(samples.size() - 1);
            for (Table t : TABLES) {
                TableFiles f = last.files().get(t);
                double[] l = snapshotEnd.get(t);
                b.append(String.format(Locale.ROOT, "| %s | %,d | %.2f | %.1f | %,d | %,d | %.0f |%n", t.tableName(), f.logFiles(), f.logBytes() / 1e6,
                        f.lastCheckpointBytes() / 1e3, f.dataFiles(), (long) l[1], l[0]));
            }
            double rec = upkeep.stream().mapToDouble(u -> u[1]).sum();
            double mnt = upkeep.stream().mapToDouble(u -> u[2]).sum();
            b.append(String.format(Locale.ROOT, "%nupkeep: %d rounds, reconcile %.0f s, maintain %.0f s in all; load average %s%n", upkeep.size(), rec, mnt,
                    BenchResults.loadAverage()));
            if (read != null && read.has("queries")) {
                b.append(String.format(Locale.ROOT, "%nanalyst read of %s (written by %,d micro-batches), before -> after compaction (%s), median of %d "
                        + "interleaved rounds, each a reader's first query:%n", read.get("day").asText(), read.get("micro_batches_that_wrote_the_day").asLong(),
                        read.get("versions").asText(), READ_ROUNDS));
                for (JsonNode q : read.get("queries")) {
                    b.append(String.format(Locale.ROOT, "  %s: %,d -> %,d files, %.0f -> %.0f ms, %.1fx faster, same result: %s%n", q.get("query").asText(),
                            q.get("files_before").asLong(), q.get("files_after").asLong(), q.get("ms_before").asDouble(), q.get("ms_after").asDouble(),
                            q.get("speedup").asDouble(), q.get("same_result").asBoolean()));
                }
            }
            return b.toString();
        }

        ObjectNode json() {
            ObjectNode o = BenchResults.JSON.createObjectNode();
            o.put("batches", batches.size());
            o.put("batches_per_day", s.batchesPerDay());
            o.put("batches_before_first_full_day", s.batchesBeforeFirstFullDay());
            o.put("wall_minutes", BenchResults.round(wallMs / 60_000.0, 2));
            o.put("complete", complete);
            o.put("raw_events", rawCount);
            ArrayNode marks = o.putArray("per_batch");
            double base = atMark(marks().get(0))[2];
            for (int k : marks()) {
                double[] m = atMark(k);
                ObjectNode x = marks.addObject();
                x.put("batch", k);
                x.put("median_duration_s", BenchResults.round(m[1] / 1000, 3));
                x.put("median_interval_s", BenchResults.round(m[2] / 1000, 3));
                x.put("interval_vs_first_mark", BenchResults.round(m[2] / base, 3));
            }
            ObjectNode end = o.putObject("tables_at_end");
            Sample last = samples.get(samples.size() - 1);
            for (Table t : TABLES) {
                TableFiles f = last.files().get(t);
                ObjectNode x = f.putInto(end.putObject(t.tableName()));
                x.put("active_files", (long) snapshotEnd.get(t)[1]);
                x.put("snapshot_load_ms", BenchResults.round(snapshotEnd.get(t)[0], 1));
                x.put("adds", logEnd.get(t).adds());
                x.put("removes", logEnd.get(t).removes());
                x.put("checkpoint_entries", logEnd.get(t).checkpointEntries());
                x.put("closed_days", logEnd.get(t).closedDays());
                x.put("closed_day_files", logEnd.get(t).closedDayFiles());
                x.put("open_day_files", logEnd.get(t).openDayFiles());
                x.put("files_of_days_before_the_clock", logEnd.get(t).earlyDayFiles());
            }
            ArrayNode over = o.putArray("samples");
            for (Sample x : samples) {
                ObjectNode so = over.addObject();
                so.put("batch", x.batch());
                for (Table t : TABLES) {
                    TableFiles f = x.files().get(t);
                    ObjectNode to = f.putInto(so.putObject(t.tableName()));
                    if (x.loaded().containsKey(t)) {
                        to.put("snapshot_ms", BenchResults.round(x.loaded().get(t)[0], 1));
                        to.put("active_files", (long) x.loaded().get(t)[1]);
                    }
                }
            }
            ArrayNode up = o.putArray("upkeep");
            for (double[] u : upkeep) {
                up.addObject().put("batch", (long) u[0]).put("reconcile_s", BenchResults.round(u[1], 1)).put("maintain_s", BenchResults.round(u[2], 1));
            }
            if (read != null) {
                o.set("analyst_read", read);
            }
            return o;
        }
    }

    record Sample(int batch, long atMs, Map<Table, TableFiles> files, Map<Table, double[]> loaded) {
    }

    /** A table's files on disk: its log (commits, checkpoints) and its data files, referenced or not. */
    record TableFiles(long logFiles, long logBytes, long jsonCommits, long jsonBytes, long checkpoints, long lastCheckpointBytes, long dataFiles,
                      long dataBytes) {
        /** Writes the figures into {@code o}; returns it. */
        ObjectNode putInto(ObjectNode o) {
            return o.put("log_files", logFiles).put("log_bytes", logBytes).put("json_commits", jsonCommits).put("json_commit_bytes", jsonBytes)
                    .put("checkpoints", checkpoints).put("last_checkpoint_bytes", lastCheckpointBytes).put("data_files_on_disk", dataFiles)
                    .put("data_bytes_on_disk", dataBytes);
        }

        static TableFiles of(Path table) {
            long[] v = new long[8];
            Path log = table.resolve("_delta_log");
            if (!Files.isDirectory(table)) {
                return new TableFiles(0, 0, 0, 0, 0, 0, 0, 0);
            }
            long newestCheckpoint = -1;
            try (Stream<Path> all = Files.walk(table)) {
                for (Path p : (Iterable<Path>) all.filter(Files::isRegularFile)::iterator) {
                    String name = p.getFileName().toString();
                    long size = Files.size(p);
                    if (p.startsWith(log)) {
                        v[0]++;
                        v[1] += size;
                        if (name.matches("\\d{20}\\.json")) {
                            v[2]++;
                            v[3] += size;
                        } else if (name.contains(".checkpoint") && name.endsWith(".parquet")) {
                            v[4]++;
                            long version = Long.parseLong(name.substring(0, 20));
                            if (version > newestCheckpoint) {
                                newestCheckpoint = version;
                                v[5] = size;
                            }
                        }
                    } else if (name.endsWith(".parquet")) {
                        v[6]++;
                        v[7] += size;
                    }
                }
            } catch (IOException | UncheckedIOException e) {
                // a file vacuumed or cleaned up while listing: the next sample counts again
            }
            return new TableFiles(v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]);
        }
    }

    /**
     * A year at the default 10 s trigger (8,640 batches a day), from what each run recorded in its JSON
     * ({@link Run#json}) per table: active files of the clock's closed days per day and of its open
     * days per batch, files removed per batch (the tombstones a checkpoint carries for the 7 days of
     * delta.deletedFileRetentionDuration), bytes per checkpoint entry, JSON bytes per commit; the
     * snapshot load time of a table of that many files and tombstones comes from {@code probes}
     * ({@link #probeSnapshots}: measured, not fitted to the run's small tables). Log files are
     * capped by the 7-day delta.logRetentionDuration: 60,480 commits and, at a checkpoint every 10,
     * 6,048 checkpoints. Unmaintained, every closed day keeps its files (8,640 / batches-per-day times
     * the run's per day); maintained, a closed day keeps what compaction left (1 file when the run
     * closed no day of the table).
     */
    static ObjectNode extrapolate(JsonNode runs, ArrayNode probes) {
        ObjectNode o = BenchResults.JSON.createObjectNode();
        o.put("model", "a year = " + YEAR_BATCHES + " batches at 10 s (8,640 a day); 7-day log retention keeps " + RETAINED_BATCHES
                + " commits and " + RETAINED_BATCHES / 10 + " checkpoints; active files = closed days x files per closed day (unmaintained: scaled"
                + " to 8,640 batches a day; maintained: as compacted) + the open day's files at 8,640 batches; tombstones = files removed per batch"
                + " x 7 days of batches; checkpoint = (active + tombstones) x measured bytes per entry; snapshot load = the least-squares line"
                + " through the snapshot probes (a table of raw_events' own add and remove actions, load time by number of actions), beyond the"
                + " largest probe a linear extrapolation");
        List<double[]> points = new ArrayList<>();
        double maxProbe = 0;
        for (JsonNode p : probes) {
            points.add(new double[] {p.get("actions").asDouble(), p.get("load_ms").asDouble()});
            maxProbe = Math.max(maxProbe, p.get("actions").asDouble());
        }
        final double[] line = leastSquares(points);
        final double largest = maxProbe;
        o.set("snapshot_probes", probes);
        o.putObject("snapshot_ms_per_million_actions").put("intercept_ms", BenchResults.round(line[0], 1))
                .put("ms_per_million", BenchResults.round(line[1] * 1e6, 1)).put("largest_probe_actions", (long) maxProbe);
        runs.fields().forEachRemaining(e -> {
            JsonNode r = e.getValue();
            boolean maintained = e.getKey().equals("maintained");
            double n = r.get("batches").asDouble();
            double perDay = r.get("batches_per_day").asDouble();
            ObjectNode m = o.putObject(e.getKey());
            for (Table t : TABLES) {
                JsonNode end = r.get("tables_at_end").get(t.tableName());
                double closedDays = end.get("closed_days").asDouble();
                double open = end.get("open_day_files").asDouble();
                double openBatches = Math.max(1, n - r.path("batches_before_first_full_day").asDouble() - closedDays * perDay);
                double perClosedDay = closedDays == 0 ? (maintained ? 1 : open / openBatches * perDay) : end.get("closed_day_files").asDouble() / closedDays;
                double activeEnd = end.get("active_files").asDouble();
                double active = t.equals(Table.STREAM_PROGRESS)
                        ? (maintained ? activeEnd : activeEnd / n * YEAR_BATCHES)
                        : (maintained ? perClosedDay : perClosedDay * 8_640 / perDay) * 365 + open / openBatches * 8_640;
                double tombstones = end.get("removes").asDouble() / n * RETAINED_BATCHES;
                double entries = end.get("checkpoint_entries").asDouble();
                double bytesPerEntry = entries == 0 ? 0 : end.get("last_checkpoint_bytes").asDouble() / entries;
                double checkpoint = bytesPerEntry * (active + tombstones);
                double commits = end.get("json_commits").asDouble();
                double jsonPerCommit = commits == 0 ? 0 : end.get("json_commit_bytes").asDouble() / commits;
                double log = jsonPerCommit * RETAINED_BATCHES + checkpoint * (RETAINED_BATCHES / 10.0);
                ObjectNode x = m.putObject(t.tableName());
                x.put("active_files", Math.round(active));
                x.put("tombstones", Math.round(tombstones));
                x.put("checkpoint_mb", BenchResults.round(checkpoint / 1e6, 2));
                x.put("log_gb", BenchResults.round(log / 1e9, 2));
                x.put("snapshot_s", BenchResults.round(Math.max(0, line[0] + line[1] * (active + tombstones)) / 1000, 2));
                x.put("snapshot_extrapolated_beyond_probes", active + tombstones > largest);
            }
        });
        return o;
    }

    /**
     * Joins the two runs of separate sittings ({@code --only maintained}, {@code --only unmaintained},
     * each writing {@code bench/results/long-haul-<run>.json}) into {@code bench/results/long-haul.json}
     * with the year extrapolated over both, and prints the year table.
     */
    static void combine() throws Exception {
        ObjectNode root = BenchResults.JSON.createObjectNode();
        ObjectNode runs = root.putObject("runs");
        ObjectNode sittings = root.putObject("sittings");
        for (String mode : List.of("maintained", "unmaintained")) {
            Path p = Path.of("bench/results/long-haul-" + mode + ".json").toAbsolutePath();
            if (!Files.exists(p)) {
                System.out.println("no " + Path.of("").toAbsolutePath().relativize(p) + " (bench/run long-haul --only " + mode + "): the year without it");
                continue;
            }
            JsonNode sitting = BenchResults.JSON.readTree(p.toFile());
            runs.set(mode, sitting.get("runs").get(mode));
            ObjectNode header = sittings.putObject(mode);
            sitting.fields().forEachRemaining(f -> {
                if (!f.getKey().equals("runs") && !f.getKey().equals("year_at_10s_trigger")) {
                    header.set(f.getKey(), f.getValue());
                }
            });
        }
        if (runs.isEmpty()) {
            throw new IllegalArgumentException("--combine needs bench/results/long-haul-maintained.json or -unmaintained.json: run a sitting first");
        }
        Path work = Path.of("bench/work-long-haul").toAbsolutePath();
        SparkSession spark = probeSession(work.resolve("snapshot-probe"));
        root.set("year_at_10s_trigger", year(spark, runs, work.resolve(runs.fieldNames().next()), work.resolve("snapshot-probe")));
        spark.stop();
        String table = yearTable(root.get("year_at_10s_trigger"));
        System.out.print(table);
        Path json = BenchResults.write(Path.of("bench/results/long-haul.json").toAbsolutePath(), root);
        Files.writeString(Path.of("bench/results.log").toAbsolutePath(), "\n## " + Instant.now() + " bench/run long-haul --combine\n" + table,
                StandardOpenOption.CREATE, StandardOpenOption.APPEND);
        System.out.println("written " + Path.of("").toAbsolutePath().relativize(json) + "; appended to bench/results.log");
    }

    /** Probe sizes, in actions (files + tombstones) of one table; the largest bounds the memory and time a probe takes on this machine. */
    static final long[] PROBE_ACTIONS = {10_000, 100_000, 1_000_000};

    /** A session for the snapshot probes alone (no run's lakehouse). */
    static SparkSession probeSession(Path probeDir) {
        return SparkSessions.create(TidemarkConfig.builder().set(TidemarkConfig.Key.LAKEHOUSE, probeDir.toString()).build(), "bench-long-haul-probe");
    }

    /** Snapshot probes, then the year extrapolated over {@code runs} (each a {@link Run#json}). */
    static ObjectNode year(SparkSession spark, JsonNode runs, Path templateRun, Path probeDir) throws Exception {
        Path template = templateRun.resolve("lakehouse").resolve(Table.RAW_EVENTS.tableName());
        return extrapolate(runs, probeSnapshots(spark, template, probeDir, PROBE_ACTIONS));
    }

    /**
     * What loading a table's state costs at a size the run never reached: for each of {@link #PROBE_ACTIONS}
     * a table whose log holds that many actions, three in four of them live files and one a tombstone
     * (about the maintained year's mix), made from the run's own add and remove actions of raw_events
     * (same statistics, same widths; only path, day and times differ, spread over 365 days), checkpointed
     * by Delta itself, then loaded by a reader with no cached state as in {@link Run#loadSnapshot}.
     * No data file exists: loading the state never opens one.
     */
    static ArrayNode probeSnapshots(SparkSession spark, Path template, Path dir, long... sizes) throws Exception {
        Path log = template.resolve("_delta_log");
        JsonNode addTemplate = null;
        JsonNode removeTemplate = null;
        try (Stream<Path> commits = Files.list(log)) {
            for (Path p : (Iterable<Path>) commits.filter(p -> p.getFileName().toString().matches("\\d{20}\\.json")).sorted()::iterator) {
                for (String line : Files.readAllLines(p)) {
                    if (addTemplate == null && line.startsWith("{\"add\"")) {
                        addTemplate = BenchResults.JSON.readTree(line).get("add");
                    } else if (removeTemplate == null && line.startsWith("{\"remove\"")) {
                        removeTemplate = BenchResults.JSON.readTree(line).get("remove");
                    }
                }
                if (addTemplate != null && removeTemplate != null) {
                    break;
                }
            }
        }
        if (addTemplate == null || removeTemplate == null) {
            throw new IllegalStateException("no add and remove action in " + log + " to build snapshot probes from");
        }
        ObjectMapper compact = new ObjectMapper();
        ArrayNode out = BenchResults.JSON.createArrayNode();
        long now = System.currentTimeMillis();
        LocalDate firstDay = LocalDate.of(2026, 1, 1);
        for (long actions : sizes) {
            Path table = dir.resolve("actions-" + actions);
            SpeedLayerBenchmark.deleteRecursively(table);
            Path probeLog = Files.createDirectories(table.resolve("_delta_log"));
            Files.copy(log.resolve(String.format("%020d.json", 0)), probeLog.resolve(String.format("%020d.json", 0)));
            long removes = actions / 4;
            long adds = actions - removes;
            try (BufferedWriter w = Files.newBufferedWriter(probeLog.resolve(String.format("%020d.json", 1)))) {
                for (long i = 0; i < actions; i++) {
                    boolean add = i < adds;
                    ObjectNode a = ((ObjectNode) (add ? addTemplate : removeTemplate)).deepCopy();
                    String day = firstDay.plusDays(i % 365).toString();
                    a.put("path", "event_date=" + day + "/probe-" + (add ? "add-" : "removed-") + i + ".parquet");
                    a.putObject("partitionValues").put("event_date", day);
                    a.put(add ? "modificationTime" : "deletionTimestamp", now);
                    w.write(compact.writeValueAsString(BenchResults.JSON.createObjectNode().set(add ? "add" : "remove", a)));
                    w.newLine();
                }
            }
            // A commit with a checkpoint interval of 1: Delta writes the checkpoint of this state itself.
            long t0 = System.nanoTime();
            spark.sql("ALTER TABLE delta.`" + table + "` SET TBLPROPERTIES ('delta.checkpointInterval' = '1')");
            double checkpointS = (System.nanoTime() - t0) / 1e9;
            long checkpointBytes = 0;
            try (Stream<Path> files = Files.list(probeLog)) {
                checkpointBytes = files.filter(p -> p.getFileName().toString().contains(".checkpoint")).mapToLong(p -> p.toFile().length()).sum();
            }
            if (checkpointBytes == 0) {
                throw new IllegalStateException("Delta wrote no checkpoint for the probe " + table);
            }
            // Two readers' first calls, interleaved: DESCRIBE DETAIL (as the runs probe) and the plan of a query of one
            // day (the files it would read), which needs the table's whole state: that one is the year's figure.
            double[] detailMs = new double[SNAPSHOT_ROUNDS];
            double[] planMs = new double[SNAPSHOT_ROUNDS];
            long expectedDayFiles = (adds + 364) / 365;
            for (int r = 0; r < SNAPSHOT_ROUNDS; r++) {
                DeltaLog.clearCache();
                long t1 = System.nanoTime();
                long files = spark.sql("DESCRIBE DETAIL delta.`" + table + "`").select("numFiles").first().getLong(0);
                detailMs[r] = (System.nanoTime() - t1) / 1e6;
                DeltaLog.clearCache();
                long t2 = System.nanoTime();
                int dayFiles = spark.read().format("delta").load(table.toString()).where("event_date = DATE'" + firstDay + "'").inputFiles().length;
                planMs[r] = (System.nanoTime() - t2) / 1e6;
                if (files != adds || dayFiles != expectedDayFiles) {
                    throw new IllegalStateException("the probe " + table + " holds " + files + " files and " + dayFiles + " of " + firstDay
                            + ", not " + adds + " and " + expectedDayFiles);
                }
            }
            double loadMs = BenchResults.median(planMs);
            out.addObject().put("actions", actions).put("files", adds).put("tombstones", removes)
                    .put("checkpoint_mb", BenchResults.round(checkpointBytes / 1e6, 2)).put("load_ms", BenchResults.round(loadMs, 1))
                    .put("describe_detail_ms", BenchResults.round(BenchResults.median(detailMs), 1))
                    .put("checkpoint_written_s", BenchResults.round(checkpointS, 1));
            System.out.printf(Locale.ROOT, "snapshot probe: %,d files + %,d tombstones, checkpoint %.1f MB (written in %.0f s): a day's query planned in "
                    + "%.0f ms, DESCRIBE DETAIL %.0f ms; load %s%n", adds, removes, checkpointBytes / 1e6, checkpointS, loadMs,
                    BenchResults.median(detailMs), BenchResults.loadAverage());
            SpeedLayerBenchmark.deleteRecursively(table);
        }
        return out;
    }

    static String probeLines(JsonNode probes) {
        StringBuilder b = new StringBuilder();
        for (JsonNode p : probes) {
            b.append(String.format(Locale.ROOT, "\n  %,d files + %,d tombstones: checkpoint %.1f MB, a day's query planned in %.0f ms "
                    + "(DESCRIBE DETAIL %.0f ms)", p.get("files").asLong(), p.get("tombstones").asLong(), p.get("checkpoint_mb").asDouble(),
                    p.get("load_ms").asDouble(), p.get("describe_detail_ms").asDouble()));
        }
        return b.toString();
    }

    /** Intercept and slope of the least-squares line through the points (slope 0 when x does not vary). */
    static double[] leastSquares(List<double[]> points) {
        double n = points.size();
        double sx = 0, sy = 0, sxx = 0, sxy = 0;
        for (double[] p : points) {
            sx += p[0];
            sy += p[1];
            sxx += p[0] * p[0];
            sxy += p[0] * p[1];
        }
        double d = n * sxx - sx * sx;
        double slope = d == 0 ? 0 : (n * sxy - sx * sy) / d;
        return new double[] {(sy - slope * sx) / n, slope};
    }

    /**
     * A table's log at the end of a run: add and remove actions over every commit, entries of the newest
     * checkpoint ({@code _last_checkpoint}'s size), and its active files on the closed whole days of the
     * event clock, on open days, and on the days before the first whole one (a part of a day, and a few
     * out-of-order records before the clock starts: the model leaves them out).
     */
    record LogEnd(long adds, long removes, long checkpointEntries, long closedDays, long closedDayFiles, long openDayFiles, long earlyDayFiles) {
        static LogEnd of(SparkSession spark, Lakehouse lakehouse, Table t, ClosedDays closed, LocalDate firstFullDay) throws IOException {
            Path log = Path.of(lakehouse.path(t), "_delta_log");
            long adds = 0;
            long removes = 0;
            try (Stream<Path> files = Files.list(log)) {
                for (Path p : (Iterable<Path>) files.filter(p -> p.getFileName().toString().matches("\\d{20}\\.json"))::iterator) {
                    for (String line : Files.readAllLines(p)) {
                        if (line.startsWith("{\"add\"")) {
                            adds++;
                        } else if (line.startsWith("{\"remove\"")) {
                            removes++;
                        }
                    }
                }
            }
            Path last = log.resolve("_last_checkpoint");
            long entries = Files.exists(last) ? BenchResults.JSON.readTree(last.toFile()).path("size").asLong() : 0;
            String day = t.equals(Table.DEAD_LETTER) ? "arrival_date" : t.equals(Table.STREAM_PROGRESS) ? null : "event_date";
            long closedDays = 0, closedFiles = 0, openFiles = 0, earlyFiles = 0;
            if (day != null) {
                for (Row r : lakehouse.read(spark, t).groupBy(day)
                        .agg(org.apache.spark.sql.functions.countDistinct(org.apache.spark.sql.functions.col("_metadata.file_path"))).collectAsList()) {
                    if (r.getDate(0).toLocalDate().isBefore(firstFullDay)) {
                        earlyFiles += r.getLong(1);
                    } else if (closed.isClosed(r.getDate(0).toLocalDate())) {
                        closedDays++;
                        closedFiles += r.getLong(1);
                    } else {
                        openFiles += r.getLong(1);
                    }
                }
            }
            return new LogEnd(adds, removes, entries, closedDays, closedFiles, openFiles, earlyFiles);
        }
    }

    static String yearTable(JsonNode year) {
        JsonNode fit = year.get("snapshot_ms_per_million_actions");
        StringBuilder b = new StringBuilder("\n### A year at the default 10 s trigger, extrapolated\n\n" + year.get("model").asText()
                + "\n\nsnapshot probes (a table of raw_events' own actions, a reader's first call, median of " + SNAPSHOT_ROUNDS + "):"
                + probeLines(year.get("snapshot_probes"))
                + String.format(Locale.ROOT, "\nline through them: %.0f ms + %.0f ms per million actions (files + tombstones); * = beyond the largest probe",
                        fit.get("intercept_ms").asDouble(), fit.get("ms_per_million").asDouble())
                + "\n\n| run | table | active files | tombstones | checkpoint MB | log GB | snapshot load s |\n|---|---|---:|---:|---:|---:|---:|\n");
        year.fields().forEachRemaining(run -> {
            if (run.getValue().isObject() && !run.getKey().startsWith("snapshot")) {
                run.getValue().fields().forEachRemaining(t -> b.append(String.format(Locale.ROOT, "| %s | %s | %,d | %,d | %.1f | %.1f | %.1f%s |%n",
                        run.getKey(), t.getKey(), t.getValue().get("active_files").asLong(), t.getValue().get("tombstones").asLong(),
                        t.getValue().get("checkpoint_mb").asDouble(), t.getValue().get("log_gb").asDouble(), t.getValue().get("snapshot_s").asDouble(),
                        t.getValue().get("snapshot_extrapolated_beyond_probes").asBoolean() ? " *" : "")));
            }
        });
        return b.toString();
    }

    private LongHaulBenchmark() {
    }
}
