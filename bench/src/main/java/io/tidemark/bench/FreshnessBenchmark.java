package io.tidemark.bench;

import static org.apache.spark.sql.functions.broadcast;
import static org.apache.spark.sql.functions.col;
import static org.apache.spark.sql.functions.count;
import static org.apache.spark.sql.functions.expr;
import static org.apache.spark.sql.functions.lit;
import static org.apache.spark.sql.functions.max;
import static org.apache.spark.sql.functions.min;
import static org.apache.spark.sql.functions.sum;
import static org.apache.spark.sql.functions.when;

import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.NavigableMap;
import java.util.Set;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.ConcurrentSkipListSet;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BooleanSupplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;

import io.tidemark.broker.BrokerSettings;
import io.tidemark.broker.LocalKafkaBroker;
import io.tidemark.generate.GenerationReport;
import io.tidemark.generate.IngestMode;
import io.tidemark.generate.KafkaTrafficProducer;
import io.tidemark.generate.TrafficSpec;
import io.tidemark.lakehouse.Lakehouse;
import io.tidemark.lakehouse.Lakehouse.Table;
import io.tidemark.lakehouse.SparkSessions;
import io.tidemark.lakehouse.TidemarkConfig;
import io.tidemark.pipeline.Durations;

/**
 * Freshness of the speed layer at a live rate: how long after an event enters Kafka a reader can
 * see it counted in {@code kpi_5m}.
 *
 * <p>Starts its own broker (topic with 2 partitions) and the Tidemark stream in a JVM of its own
 * ({@link FreshnessStreamJob}, processing-time trigger), waits for the stream's first committed
 * batch, then produces live traffic from this JVM (event clock = wall clock, no late and no invalid
 * events: this measures on-time freshness) at {@code --rate} for {@code --duration}. Meanwhile a
 * reader thread of this JVM, a different process from the stream, polls {@code kpi_5m/_delta_log}
 * (and {@code stream_progress/_delta_log}) every 100 ms and notes when it first sees each commit
 * file: a Delta commit is visible to every reader exactly when its {@code NNN.json} exists.
 *
 * <p>Afterwards, with a local Spark session: for each kpi_5m version, the greatest
 * {@code stream_batch_id} in the table as of that version (time travel); a batch b is visible from
 * the first-seen time of the earliest version holding a batch id >= b; an event's latency is that
 * time minus its {@code ingest_ts} (the Kafka record timestamp: the producer's CreateTime, taken by
 * this JVM's clock when it sent the record). Percentiles are exact, over the on-time events
 * produced after the warm-up. Checks that every produced event is in raw_events.
 *
 * <p>{@code bench/run freshness [--rate N] [--trigger 5s] [--duration 10m] [--warmup 60s] [--work DIR]}
 */
public final class FreshnessBenchmark {

    static final Pattern COMMIT_FILE = Pattern.compile("(\\d{20})\\.json");
    static final long POLL_MS = 100;
    static final String TOPIC = "freshness-events";
    static final int PARTITIONS = 2;
    /** Triggers the stream keeps running after it has read every produced event. */
    static final int SETTLE_TRIGGERS = 3;

    public static void main(String[] args) throws Exception {
        double rate = 5000;
        Duration trigger = Duration.ofSeconds(5);
        Duration duration = Duration.ofMinutes(10);
        Duration warmup = Duration.ofSeconds(60);
        Path work = Path.of("bench/work-freshness").toAbsolutePath();
        Path resultsLog = Path.of("bench/results.log").toAbsolutePath();
        Path resultsJson = Path.of("bench/results/freshness.json").toAbsolutePath();
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--rate" -> rate = Double.parseDouble(args[++i]);
                case "--trigger" -> trigger = Durations.parse(args[++i]);
                case "--duration" -> duration = Durations.parse(args[++i]);
                case "--warmup" -> warmup = Durations.parse(args[++i]);
                case "--work" -> work = Path.of(args[++i]).toAbsolutePath();
                default -> throw new IllegalArgumentException("unknown argument " + args[i]
                        + " (known: --rate N, --trigger 5s, --duration 10m, --warmup 60s, --work DIR)");
            }
        }
        if (!(rate > 0) || trigger.isZero() || trigger.isNegative() || duration.isZero() || duration.isNegative()
                || warmup.isNegative() || warmup.compareTo(duration) >= 0) {
            throw new IllegalArgumentException("need --rate > 0, a positive --trigger and --duration, and 0 <= --warmup < --duration");
        }
        String command = "bench/run freshness" + (args.length == 0 ? "" : " " + String.join(" ", args));
        double[] loadBefore = loadAverage();
        System.out.printf(Locale.ROOT, "freshness: %,.0f events/s for %s, trigger %s, warm-up %s excluded; load average %s%n",
                rate, human(duration), human(trigger), human(warmup), loads(loadBefore));

        SpeedLayerBenchmark.deleteRecursively(work);
        Files.createDirectories(work);
        Path streamDir = work.resolve("stream");
        Path lakehouse = streamDir.resolve("lakehouse");
        LogReader reader = new LogReader(Map.of(
                "kpi_5m", lakehouse.resolve("kpi_5m").resolve("_delta_log"),
                "stream_progress", lakehouse.resolve("stream_progress").resolve("_delta_log")));
        Thread readerThread = new Thread(reader, "freshness-delta-log-reader");
        readerThread.setDaemon(true);
        readerThread.start();

        Live live = runLive(rate, trigger, duration, work, streamDir, reader);
        GenerationReport report = live.report();
        long producerStartMs = live.producerStartMs();
        double[] loadAfter = live.loadAfter();
        StreamProcess stream = live.stream();
        reader.stop();
        readerThread.join(5_000);
        reader.pollOnce();
        System.out.printf("stream stopped (%d batches); broker stopped; analysing with a local Spark session%n", stream.batches.size());

        Result r = analyse(lakehouse, streamDir.resolve("checkpoint"), reader, report, producerStartMs, warmup, work);
        writeBatches(work.resolve("batches.csv"), stream.batches, r.visibleAt());
        boolean met = r.p99Ms / 1000.0 <= trigger.toMillis() / 1000.0 + 3;
        double targetS = trigger.toMillis() / 1000.0 + 3;

        StringBuilder out = new StringBuilder();
        out.append(String.format(Locale.ROOT, "%nFreshness of the speed layer at a live rate (%d Kafka partitions, local[2] stream in its own JVM)%n", PARTITIONS));
        out.append(String.format(Locale.ROOT, "  rate %,.0f events/s asked, %,.0f/s achieved; trigger %s; duration %s%n",
                rate, report.messagesPerSecond(), human(trigger), human(duration)));
        out.append(String.format(Locale.ROOT, "  events produced %,d: in raw_events %,d (%,d distinct offsets), late %,d, dead_letter %,d: %s%n",
                report.messages(), r.rawCount, r.distinctOffsets, r.lateCount, r.deadLetters,
                r.complete ? "every produced event is in raw_events exactly once" : "INCOMPLETE: the figures below are NOT valid"));
        out.append(String.format(Locale.ROOT, "  batches %d (%d read records); median batch duration %.2f s, max %.2f s (stream_progress duration_ms)%n",
                r.batches, r.batchesWithRecords, r.medianBatchMs / 1000.0, r.maxBatchMs / 1000.0));
        out.append(String.format(Locale.ROOT, "  kpi_5m commits seen by the reader: %d (%d holding stream rows)%n", r.kpiVersions, r.kpiVersionsWithRows));
        out.append(String.format(Locale.ROOT, "  measured: %,d on-time events (the producer sends no late and no invalid ones: on-time freshness);"
                + " %,d produced in the first %s excluded as warm-up%s%n",
                r.measured, r.warmupExcluded, human(warmup), r.neverVisible > 0 ? String.format(Locale.ROOT, "; %,d NEVER VISIBLE in kpi_5m", r.neverVisible) : ""));
        out.append("  latency = first time a reader in another JVM saw a kpi_5m commit holding the event's batch (polled every 100 ms)"
                + " - the event's Kafka CreateTime (ingest_ts)\n");
        out.append(String.format(Locale.ROOT, "  p50 %.2f s, p95 %.2f s, p99 %.2f s, max %.2f s (min %.2f s)%n",
                r.p50Ms / 1000.0, r.p95Ms / 1000.0, r.p99Ms / 1000.0, r.maxMs / 1000.0, r.minMs / 1000.0));
        out.append(String.format(Locale.ROOT, "  target p99 <= trigger + 3 s = %.1f s: %s%n", targetS, met ? "met" : "NOT met"));
        out.append(String.format(Locale.ROOT, "  load average (1, 5, 15 min) before: %s; at the end of production: %s (2 cores)%n",
                loads(loadBefore), loads(loadAfter)));
        System.out.print(out);

        Map<String, Object> json = new LinkedHashMap<>();
        json.put("command", command);
        json.put("commit", BenchResults.gitCommit());
        json.put("worktree_dirty", BenchResults.gitDirty());
        json.put("finished_at", Instant.now().toString());
        json.put("rate", rate);
        json.put("rate_achieved", BenchResults.round(report.messagesPerSecond(), 1));
        json.put("trigger_s", trigger.toMillis() / 1000.0);
        json.put("duration_s", duration.toMillis() / 1000.0);
        json.put("warmup_s", warmup.toMillis() / 1000.0);
        json.put("partitions", PARTITIONS);
        json.put("events", report.messages());
        json.put("events_in_raw_events", r.rawCount);
        json.put("complete", r.complete);
        json.put("events_measured", r.measured);
        json.put("events_warmup_excluded", r.warmupExcluded);
        json.put("events_never_visible", r.neverVisible);
        json.put("batches", r.batches);
        json.put("batches_with_records", r.batchesWithRecords);
        json.put("median_batch_s", BenchResults.round(r.medianBatchMs / 1000.0, 3));
        json.put("max_batch_s", r.maxBatchMs / 1000.0);
        json.put("p50_s", BenchResults.round(r.p50Ms / 1000.0, 3));
        json.put("p95_s", BenchResults.round(r.p95Ms / 1000.0, 3));
        json.put("p99_s", BenchResults.round(r.p99Ms / 1000.0, 3));
        json.put("max_s", BenchResults.round(r.maxMs / 1000.0, 3));
        json.put("min_s", BenchResults.round(r.minMs / 1000.0, 3));
        json.put("target_s", targetS);
        json.put("target_met", met);
        json.put("loadavg_before", loadBefore);
        json.put("loadavg_after", loadAfter);
        Files.createDirectories(resultsJson.getParent());
        new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT).writeValue(resultsJson.toFile(), json);

        String table = String.format(Locale.ROOT, "%n%s; on-time events only (no late, no invalid); warm-up %s excluded;"
                + " latency = kpi_5m commit first seen by a reader in another JVM (100 ms polls) - Kafka CreateTime%n%n"
                + "| rate/s | trigger s | duration s | events | complete | batches | median batch s | p50 s | p95 s | p99 s | max s | target s | met | load before | load after |%n"
                + "|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---|---|---|%n"
                + "| %,.0f | %.1f | %.0f | %,d | %s | %d | %.2f | %.2f | %.2f | %.2f | %.2f | %.1f | %s | %s | %s |%n",
                command, human(warmup), rate, trigger.toMillis() / 1000.0, duration.toMillis() / 1000.0, report.messages(),
                r.complete ? "yes" : "NO", r.batches, r.medianBatchMs / 1000.0, r.p50Ms / 1000.0, r.p95Ms / 1000.0, r.p99Ms / 1000.0,
                r.maxMs / 1000.0, targetS, met ? "yes" : "no", loads(loadBefore), loads(loadAfter));
        Files.writeString(resultsLog, "\n## " + Instant.now() + " freshness " + String.join(" ", args) + "\n" + table,
                StandardOpenOption.CREATE, StandardOpenOption.APPEND);
        System.out.println("written " + Path.of("").toAbsolutePath().relativize(resultsJson) + "; appended to "
                + Path.of("").toAbsolutePath().relativize(resultsLog) + "; per batch and per kpi_5m version: "
                + Path.of("").toAbsolutePath().relativize(work) + "/{batches,kpi_versions}.csv");
        if (!r.complete || r.neverVisible > 0) {
            System.exit(1);
        }
    }

    record Live(GenerationReport report, long producerStartMs, double[] loadAfter, StreamProcess stream) {
    }

    /**
     * Broker, stream, first batch, live production, the stream reading it all, a few more triggers;
     * then the stream is stopped, and the broker after it (a stream whose broker has gone waits for
     * it in its next trigger).
     */
    static Live runLive(double rate, Duration trigger, Duration duration, Path work, Path streamDir, LogReader reader) throws Exception {
        try (LocalKafkaBroker broker = LocalKafkaBroker.start(BrokerSettings.of(work.resolve("broker")).withHeapMb(1024))) {
            broker.createTopic(TOPIC, PARTITIONS);
            StreamProcess s = StreamProcess.start(broker.bootstrapServers(), TOPIC, trigger, streamDir, work);
            Runtime.getRuntime().addShutdownHook(new Thread(() -> {
                s.process.destroyForcibly();
                broker.stop();
            }));
            Live live;
            try {
                live = produce(broker, s, reader, rate, trigger, duration, work);
            } catch (Exception | Error e) {
                try {
                    s.stop(Duration.ofMinutes(1));
                } catch (Exception stopFailure) {
                    e.addSuppressed(stopFailure);
                }
                throw e;
            }
            s.stop(Duration.ofMinutes(4));
            return live;
        }
    }

    private static Live produce(LocalKafkaBroker broker, StreamProcess s, LogReader reader, double rate, Duration trigger,
                                Duration duration, Path work) throws Exception {
        System.out.println("starting the stream in its own JVM (log: " + work.relativize(s.stderr) + ") ...");
        await("the stream's start", Duration.ofMinutes(10), s, () -> s.startedMs > 0);
        await("the stream's first committed batch (a stream_progress commit)", Duration.ofMinutes(10), s,
                () -> !reader.dataCommits("stream_progress").isEmpty());
        System.out.printf(Locale.ROOT, "stream running: first batch committed after %.1f s; producing%n",
                (System.currentTimeMillis() - s.launchedMs) / 1000.0);

        TrafficSpec spec = TrafficSpec.builder().topic(TOPIC).duration(duration).ratePerSecond(rate)
                .ingestMode(IngestMode.LIVE).invalidFraction(0).lateFraction(0).seed(1).build();
        KafkaTrafficProducer producer = new KafkaTrafficProducer(broker.bootstrapServers(), Map.of());
        long[] nextReport = {30_000};
        long producerStartMs = System.currentTimeMillis();
        GenerationReport report = producer.produce(spec, p -> {
            if (p.elapsed().toMillis() >= nextReport[0]) {
                nextReport[0] += 30_000;
                System.out.printf(Locale.ROOT, "  %4d s: %,d events sent (%,.0f/s), %d batches committed (%,d records read), kpi_5m at version %s%n",
                        p.elapsed().toSeconds(), p.messagesSent(), p.averageMessagesPerSecond(),
                        reader.dataCommits("stream_progress").size(), s.consumed.get(), reader.lastVersion("kpi_5m"));
            }
            if (!s.process.isAlive()) {
                throw new IllegalStateException("the stream JVM exited with code " + s.process.exitValue() + "; see " + s.stderr);
            }
        });
        double[] loadAfter = loadAverage();
        System.out.printf(Locale.ROOT, "produced %,d events in %.1f s (%,.0f/s); load average %s; waiting for the stream to read them all%n",
                report.messages(), report.elapsed().toMillis() / 1000.0, report.messagesPerSecond(), loads(loadAfter));
        long produced = report.messages();
        await("the stream to read all " + produced + " events", Duration.ofMinutes(15), s, () -> s.consumed.get() >= produced);
        System.out.printf(Locale.ROOT, "all read after %.1f s; letting the stream run %d more triggers, then stopping it%n",
                (System.currentTimeMillis() - producerStartMs - report.elapsed().toMillis()) / 1000.0, SETTLE_TRIGGERS);
        Thread.sleep(trigger.toMillis() * SETTLE_TRIGGERS);
        return new Live(report, producerStartMs, loadAfter, s);
    }

    record Result(long rawCount, long distinctOffsets, long lateCount, long deadLetters, boolean complete, long batches,
                  long batchesWithRecords, double medianBatchMs, long maxBatchMs, int kpiVersions, int kpiVersionsWithRows,
                  long measured, long warmupExcluded, long neverVisible, double p50Ms, double p95Ms, double p99Ms, long maxMs,
                  long minMs, long[] visibleAt) {
    }

    /** For checking by hand: per batch, when its stream_progress row was written and when kpi_5m showed it. */
    static void writeBatches(Path file, List<long[]> batches, long[] visibleAt) throws Exception {
        StringBuilder sb = new StringBuilder("batch_id,records_in,duration_ms,progress_finished_ms,kpi_visible_ms,kpi_visible_minus_finished_ms\n");
        for (long[] b : batches) {
            long v = b[0] < visibleAt.length ? visibleAt[(int) b[0]] : Long.MAX_VALUE;
            sb.append(b[0]).append(',').append(b[1]).append(',').append(b[2]).append(',').append(b[3]).append(',')
                    .append(v == Long.MAX_VALUE ? "" : String.valueOf(v)).append(',')
                    .append(v == Long.MAX_VALUE ? "" : String.valueOf(v - b[3])).append('\n');
        }
        Files.writeString(file, sb);
    }

    static Result analyse(Path lakehouse, Path checkpoint, LogReader reader, GenerationReport report, long producerStartMs,
                          Duration warmup, Path work) throws Exception {
        TidemarkConfig config = TidemarkConfig.builder()
                .set(TidemarkConfig.Key.LAKEHOUSE, lakehouse.toString())
                .set(TidemarkConfig.Key.CHECKPOINT, checkpoint.toString())
                .build();
        SparkSession spark = SparkSessions.create(config, "bench-freshness-analysis");
        try {
            Lakehouse lh = Lakehouse.of(config);
            // The greatest stream batch in kpi_5m as of each version the reader saw, by time travel.
            NavigableMap<Long, Long> seen = reader.seen("kpi_5m");
            long lastBatch = lh.read(spark, Table.STREAM_PROGRESS).agg(max("batch_id")).first().getLong(0);
            long[] visibleAt = new long[(int) lastBatch + 2];
            Arrays.fill(visibleAt, Long.MAX_VALUE);
            int withRows = 0;
            StringBuilder csv = new StringBuilder("version,first_seen_ms,max_stream_batch_id\n");
            for (Map.Entry<Long, Long> v : seen.entrySet()) {
                Row m = lh.readAt(spark, Table.kpi("kpi_5m"), v.getKey())
                        .agg(max("stream_batch_id")).first();
                csv.append(v.getKey()).append(',').append(v.getValue()).append(',').append(m.isNullAt(0) ? "" : String.valueOf(m.getLong(0))).append('\n');
                if (m.isNullAt(0)) {
                    continue; // the table's creation, its query-definition properties
                }
                withRows++;
                int b = (int) Math.min(m.getLong(0), lastBatch);
                visibleAt[b] = Math.min(visibleAt[b], v.getValue());
            }
            Files.writeString(work.resolve("kpi_versions.csv"), csv);
            for (int b = visibleAt.length - 2; b >= 0; b--) {
                visibleAt[b] = Math.min(visibleAt[b], visibleAt[b + 1]);
            }
            List<Row> visibleRows = new ArrayList<>();
            for (int b = 0; b <= lastBatch; b++) {
                if (visibleAt[b] != Long.MAX_VALUE) {
                    visibleRows.add(RowFactory.create((long) b, visibleAt[b]));
                }
            }
            Dataset<Row> visible = spark.createDataFrame(visibleRows, new StructType()
                    .add("batch_id", DataTypes.LongType, false).add("visible_ms", DataTypes.LongType, false));

            Dataset<Row> raw = lh.read(spark, Table.RAW_EVENTS);
            Row c = raw.agg(count(lit(1)), sum(when(col("is_late"), 1).otherwise(0))).first();
            long rawCount = c.getLong(0);
            long lateCount = c.isNullAt(1) ? 0 : c.getLong(1);
            long distinct = raw.select("kafka_partition", "kafka_offset").distinct().count();
            long dead = lh.read(spark, Table.DEAD_LETTER).count();
            boolean complete = rawCount == report.messages() && distinct == rawCount && dead == 0;

            long fromMs = producerStartMs + warmup.toMillis();
            Dataset<Row> onTime = raw.where(col("is_late").equalTo(false))
                    .select(col("batch_id"), expr("unix_millis(ingest_ts)").as("ingest_ms"))
                    .join(broadcast(visible), new String[] {"batch_id"}, "left");
            Row w = onTime.agg(count(lit(1)), sum(when(col("ingest_ms").lt(fromMs), 1).otherwise(0))).first();
            long warmupExcluded = w.isNullAt(1) ? 0 : w.getLong(1);
            Row s = onTime.where(col("ingest_ms").geq(fromMs))
                    .select(col("visible_ms").minus(col("ingest_ms")).as("latency_ms"))
                    .agg(count(lit(1)), count(col("latency_ms")), expr("percentile(latency_ms, array(0.5, 0.95, 0.99))"),
                            max("latency_ms"), min("latency_ms"))
                    .first();
            long measured = s.getLong(0);
            long neverVisible = measured - s.getLong(1);
            if (s.isNullAt(2)) {
                throw new IllegalStateException("no on-time event after the warm-up became visible in kpi_5m (" + measured
                        + " measured); lengthen --duration or shorten --warmup");
            }
            List<Double> p = s.getList(2);

            Row b = lh.read(spark, Table.STREAM_PROGRESS)
                    .agg(count(lit(1)), sum(when(col("records_in").gt(0), 1).otherwise(0)),
                            expr("percentile(CASE WHEN records_in > 0 THEN duration_ms END, 0.5)"),
                            max(when(col("records_in").gt(0), col("duration_ms"))))
                    .first();
            return new Result(rawCount, distinct, lateCount, dead, complete, b.getLong(0), b.isNullAt(1) ? 0 : b.getLong(1),
                    b.isNullAt(2) ? Double.NaN : b.getDouble(2), b.isNullAt(3) ? 0 : b.getLong(3), seen.size(), withRows,
                    measured, warmupExcluded, neverVisible, p.get(0), p.get(1), p.get(2), s.getLong(3), s.getLong(4), visibleAt);
        } finally {
            spark.stop();
        }
    }

    /** Waits until {@code done} holds, failing when the stream JVM exits or the time runs out. */
    static void await(String what, Duration timeout, StreamProcess stream, BooleanSupplier done) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (!done.getAsBoolean()) {
            if (!stream.process.isAlive()) {
                throw new IllegalStateException("the stream JVM exited (code " + stream.process.exitValue() + ") while waiting for "
                        + what + "; see " + stream.stderr);
            }
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("gave up waiting for " + what + " after " + human(timeout) + "; see " + stream.stderr);
            }
            Thread.sleep(50);
        }
    }

    /** The stream's JVM: started with the same JVM options as SpeedLayerBenchmark.runJob, stopped by closing its stdin. */
    static final class StreamProcess {
        final Process process;
        final Path stderr;
        final long launchedMs = System.currentTimeMillis();
        final AtomicLong consumed = new AtomicLong();
        final List<long[]> batches = new CopyOnWriteArrayList<>();
        volatile long startedMs;
        private final Thread stdoutReader;

        private StreamProcess(Process process, Path stdout, Path stderr) {
            this.process = process;
            this.stderr = stderr;
            this.stdoutReader = new Thread(() -> readStdout(stdout), "freshness-stream-stdout");
            stdoutReader.setDaemon(true);
            stdoutReader.start();
        }

        static StreamProcess start(String bootstrap, String topic, Duration trigger, Path dir, Path logs) throws Exception {
            return start(bootstrap, topic, trigger, dir, logs, "8g", List.of());
        }

        /** With a heap limit for the stream JVM and further Tidemark settings ({@code key=value}). */
        static StreamProcess start(String bootstrap, String topic, Duration trigger, Path dir, Path logs, String heap,
                                   List<String> settings) throws Exception {
            Files.createDirectories(dir);
            Files.createDirectories(logs);
            List<String> cmd = new ArrayList<>();
            cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
            cmd.add("-Xmx" + heap);
            cmd.addAll(Arrays.asList(System.getProperty("tidemark.jvm.opens", "").trim().split("\\s+")));
            cmd.removeIf(String::isEmpty);
            cmd.addAll(List.of("-cp", System.getProperty("java.class.path"), FreshnessStreamJob.class.getName(),
                    bootstrap, topic, String.valueOf(trigger.toMillis()), dir.toString()));
            cmd.addAll(settings);
            Path stderr = logs.resolve("stream.stderr.log");
            ProcessBuilder pb = new ProcessBuilder(cmd).redirectError(stderr.toFile());
            pb.environment().put("SPARK_LOCAL_IP", "127.0.0.1");
            return new StreamProcess(pb.start(), logs.resolve("stream.stdout.log"), stderr);
        }

        private void readStdout(Path copy) {
            try (BufferedReader r = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
                 BufferedWriter w = Files.newBufferedWriter(copy)) {
                String line;
                while ((line = r.readLine()) != null) {
                    w.write(line);
                    w.newLine();
                    w.flush();
                    String[] f = line.split(" ");
                    switch (f[0]) {
                        case "STARTED" -> startedMs = Long.parseLong(f[1]);
                        case "BATCH" -> {
                            long[] b = {Long.parseLong(f[1]), Long.parseLong(f[2]), Long.parseLong(f[3]), Long.parseLong(f[4])};
                            batches.add(b);
                            consumed.addAndGet(b[1]);
                        }
                        default -> { }
                    }
                }
            } catch (Exception e) {
                // the process is gone; its exit code tells
            }
        }

        /** Closes the stream's stdin (it stops between batches and exits); kills it if it has not exited in time. */
        void stop(Duration patience) throws Exception {
            if (process.isAlive()) {
                try {
                    process.getOutputStream().close();
                } catch (Exception e) {
                    // already closed
                }
                if (!process.waitFor(patience.toMillis(), TimeUnit.MILLISECONDS)) {
                    System.err.println("the stream JVM did not stop within " + human(patience) + "; killing it");
                    process.destroyForcibly();
                    process.waitFor();
                }
            }
            stdoutReader.join(5_000);
            if (process.exitValue() != 0) {
                throw new IllegalStateException("the stream JVM exited with code " + process.exitValue() + "; see " + stderr);
            }
        }
    }

    /**
     * The separate reader: polls Delta log directories every {@link #POLL_MS} ms and notes the wall
     * time it first sees each commit file. A commit whose file holds an {@code add} action is a data
     * commit (as opposed to the table's creation or a properties change).
     */
    static final class LogReader implements Runnable {
        private final Map<String, Path> dirs;
        private final Map<String, ConcurrentSkipListMap<Long, Long>> seen = new LinkedHashMap<>();
        private final Map<String, ConcurrentSkipListSet<Long>> data = new LinkedHashMap<>();
        private volatile boolean stopped;

        LogReader(Map<String, Path> dirs) {
            this.dirs = dirs;
            for (String t : dirs.keySet()) {
                seen.put(t, new ConcurrentSkipListMap<>());
                data.put(t, new ConcurrentSkipListSet<>());
            }
        }

        @Override
        public void run() {
            long next = System.currentTimeMillis();
            while (!stopped) {
                pollOnce();
                next += POLL_MS;
                long sleep = next - System.currentTimeMillis();
                if (sleep > 0) {
                    try {
                        Thread.sleep(sleep);
                    } catch (InterruptedException e) {
                        return;
                    }
                } else {
                    next = System.currentTimeMillis();
                }
            }
        }

        void pollOnce() {
            for (Map.Entry<String, Path> d : dirs.entrySet()) {
                List<Path> files;
                try (Stream<Path> s = Files.list(d.getValue())) {
                    files = s.toList();
                } catch (NoSuchFileException e) {
                    continue;
                } catch (Exception e) {
                    continue;
                }
                // After the listing: a file in it was visible at the latest by now.
                long now = System.currentTimeMillis();
                ConcurrentSkipListMap<Long, Long> versions = seen.get(d.getKey());
                for (Path f : files) {
                    Matcher m = COMMIT_FILE.matcher(f.getFileName().toString());
                    if (m.matches()) {
                        long v = Long.parseLong(m.group(1));
                        if (versions.putIfAbsent(v, now) == null && hasAdd(f)) {
                            data.get(d.getKey()).add(v);
                        }
                    }
                }
            }
        }

        private static boolean hasAdd(Path commit) {
            try (Stream<String> lines = Files.lines(commit)) {
                return lines.anyMatch(l -> l.startsWith("{\"add\""));
            } catch (Exception e) {
                return false;
            }
        }

        void stop() {
            stopped = true;
        }

        NavigableMap<Long, Long> seen(String table) {
            return seen.get(table);
        }

        Set<Long> dataCommits(String table) {
            return data.get(table);
        }

        String lastVersion(String table) {
            var v = seen.get(table);
            return v.isEmpty() ? "-" : String.valueOf(v.lastKey());
        }
    }

    static double[] loadAverage() {
        try {
            String[] f = Files.readString(Path.of("/proc/loadavg")).trim().split("\\s+");
            return new double[] {Double.parseDouble(f[0]), Double.parseDouble(f[1]), Double.parseDouble(f[2])};
        } catch (Exception e) {
            return new double[] {Double.NaN, Double.NaN, Double.NaN};
        }
    }

    static String loads(double[] l) {
        return String.format(Locale.ROOT, "%.2f %.2f %.2f", l[0], l[1], l[2]);
    }

    static String human(Duration d) {
        long ms = d.toMillis();
        if (ms % 60_000 == 0) {
            return ms / 60_000 + " min";
        }
        return ms % 1000 == 0 ? ms / 1000 + " s" : ms + " ms";
    }

    private FreshnessBenchmark() {
    }
}
