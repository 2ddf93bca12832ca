package io.tidemark.tests;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.Test;

import io.tidemark.broker.BrokerSettings;
import io.tidemark.broker.LocalKafkaBroker;
import io.tidemark.generate.EventFormat;
import io.tidemark.generate.GeneratedMessage.Kind;
import io.tidemark.generate.GenerationReport;
import io.tidemark.generate.IngestMode;
import io.tidemark.generate.KafkaTrafficProducer;
import io.tidemark.generate.TrafficSpec;
import io.tidemark.operations.ConservationCheck;
import io.tidemark.lakehouse.Lakehouse;
import io.tidemark.lakehouse.Lakehouse.Table;
import io.tidemark.lakehouse.TidemarkConfig;
import io.tidemark.lakehouse.ClosedDays;
import io.tidemark.reconcile.DaySelection;
import io.tidemark.reconcile.ReconcileJob;
import io.tidemark.stream.StreamingJob;

/**
 * The soak: the whole system against a real broker while everything goes wrong at once. Traffic
 * (valid, late, 19 kinds of garbage and hand-made edge cases) flows for the whole run; meanwhile
 * the streaming job is SIGKILLed at random moments and restarted, the broker is stopped (SIGTERM)
 * and killed (SIGKILL) and restarted, and reconcile runs against the moving stream, some of them
 * SIGKILLed mid-run. Afterwards: conservation exact, no duplicate, every malformed message refused
 * for its own reason, and every closed day after a final reconcile equal to a plain-SQL truth.
 *
 * <p>CI runs the reduced plan; {@code tests/run-hostile --full} runs the full one (at least 2 M
 * events, 20 stream kills, 3 broker restarts, 10 concurrent and 5 killed reconciles). Both write
 * the figures to a results file ({@code -Dtidemark.hostile.results}).
 */
class HostileConditionsTest extends OnSharedInfrastructure {
    /** How big and how hostile a run is. */
    record Plan(String name, long events, double ratePerSecond, double eventDays, double invalidFraction, int partitions,
                int streamKills, int brokerRestarts, int reconcileRuns, int reconcileKills, long maxOffsetsPerTrigger) {
        static Plan reduced() {
            return new Plan("reduced (CI)", 150_000, 1_100, 2.5, 0.075, 3, 4, 2, 2, 2, 15_000);
        }

        static Plan full() {
            return new Plan("full", 2_000_000, 4_000, 3.2, 0.006, 3, 20, 4, 10, 5, 40_000);
        }

        /** {@code -Dtidemark.hostile=full} for the full plan; {@code -Dtidemark.hostile.<field>=value} overrides one figure. */
        static Plan fromSystemProperties() {
            Plan p = "full".equals(System.getProperty("tidemark.hostile", "reduced")) ? full() : reduced();
            return new Plan(p.name() + (System.getProperties().stringPropertyNames().stream().anyMatch(k -> k.startsWith("tidemark.hostile.")
                            && !k.equals("tidemark.hostile.results") && !k.equals("tidemark.hostile.seed")) ? ", with overrides" : ""),
                    Long.getLong("tidemark.hostile.events", p.events()),
                    Double.parseDouble(System.getProperty("tidemark.hostile.rate", Double.toString(p.ratePerSecond()))),
                    Double.parseDouble(System.getProperty("tidemark.hostile.days", Double.toString(p.eventDays()))),
                    Double.parseDouble(System.getProperty("tidemark.hostile.invalid", Double.toString(p.invalidFraction()))),
                    Integer.getInteger("tidemark.hostile.partitions", p.partitions()),
                    Integer.getInteger("tidemark.hostile.stream-kills", p.streamKills()),
                    Integer.getInteger("tidemark.hostile.broker-restarts", p.brokerRestarts()),
                    Integer.getInteger("tidemark.hostile.reconciles", p.reconcileRuns()),
                    Integer.getInteger("tidemark.hostile.reconcile-kills", p.reconcileKills()),
                    Long.getLong("tidemark.hostile.max-offsets", p.maxOffsetsPerTrigger()));
        }

        Duration trafficTime() {
            return Duration.ofMillis((long) (events / ratePerSecond * 1000));
        }
    }

    /** One fault and how long the system took to be productive again. */
    record Fault(String what, Instant at, long recoverMs, String note) {
    }

    private final List<Fault> faults = new CopyOnWriteArrayList<>();
    private final List<String> findings = new CopyOnWriteArrayList<>();
    private final AtomicReference<LocalKafkaBroker> broker = new AtomicReference<>();
    private Plan plan;
    private Path dir;
    private Path progressLog;
    private List<String> streamArgs;
    private JobProcess stream;
    private int streamStarts;
    private int unexpectedStreamExits;

    @Test
    void nothingIsLostOrDuplicatedUnderKillsOutagesConcurrencyAndGarbage() throws Exception {
        plan = Plan.fromSystemProperties();
        dir = infra.newDir("hostile");
        progressFile = dir.resolve("progress.log");
        System.err.println("hostile conditions: progress in " + progressFile);
        Instant began = Instant.now();
        say("plan %s: %,d events at %,.0f/s over %.1f days of event time; %d stream kills, %d broker restarts, "
                + "%d reconciles + %d killed", plan.name(), plan.events(), plan.ratePerSecond(), plan.eventDays(), plan.streamKills(),
                plan.brokerRestarts(), plan.reconcileRuns(), plan.reconcileKills());

        BrokerSettings brokerSettings = BrokerSettings.of(dir.resolve("broker"));
        broker.set(LocalKafkaBroker.start(brokerSettings));
        String bootstrap = broker.get().bootstrapServers();
        String topic = "hostile";
        broker.get().createTopic(topic, plan.partitions());
        TidemarkConfig config = TidemarkConfig.builder()
                .set(TidemarkConfig.Key.KAFKA_BOOTSTRAP, bootstrap)
                .set(TidemarkConfig.Key.TOPIC, topic)
                .set(TidemarkConfig.Key.LAKEHOUSE, dir.resolve("lakehouse").toString())
                .set(TidemarkConfig.Key.CHECKPOINT, dir.resolve("checkpoint").toString())
                .set(TidemarkConfig.Key.MAX_OFFSETS_PER_TRIGGER, Long.toString(plan.maxOffsetsPerTrigger()))
                .set(TidemarkConfig.Key.TRIGGER, "2 seconds")
                .build();
        Lakehouse lakehouse = Lakehouse.of(config);
        progressLog = Path.of(config.lakehouseUri(), "stream_progress", "_delta_log");
        streamArgs = List.of("kafka.bootstrap-servers=" + bootstrap, "topic=" + topic, "lakehouse=" + config.lakehouseUri(),
                "stream.checkpoint=" + config.checkpointUri(), "stream.trigger=2 seconds",
                "stream.max-offsets-per-trigger=" + plan.maxOffsetsPerTrigger());

        // Traffic: the generator's mix, paced, over a synthetic event clock spanning several days, so
        // days close while the run goes on; plus hand-made edge cases with a known fate.
        // Late records must be late against the compressed clock: Spark judges lateness by the watermark
        // of the batch before (WatermarkLedger), which trails the newest event by up to two batches, and a
        // catching-up batch of max-offsets records spans hours of this clock. The generator's default
        // delay (20 to 60 min) then lands inside the watermark, and the closed days got no late
        // record at all (the first full run: 0 of 63,635 planned late records on them, so the
        // concurrent reconciles had nothing to fix). Delayed by 2.5 to 5 such batch spans, they are
        // late whatever the batch size, and every closed day gets some.
        double eventsPerEventSecond = plan.events() / (plan.eventDays() * 86_400);
        Duration batchSpan = Duration.ofSeconds((long) (plan.maxOffsetsPerTrigger() / eventsPerEventSecond));
        TrafficSpec spec = TrafficSpec.builder().topic(topic).count(plan.events()).ratePerSecond(plan.ratePerSecond())
                .ingestMode(IngestMode.BACKLOG).eventsPerSecondOfEventTime(eventsPerEventSecond)
                .cells(60).subscribers(20_000).lateFraction(0.03).lateDelay(batchSpan.multipliedBy(5).dividedBy(2), batchSpan.multipliedBy(5))
                .invalidFraction(plan.invalidFraction()).seed(29).build();
        say("late records delayed by %d to %d min of event time (a full batch spans %d min)", spec.lateDelayMin().toMinutes(),
                spec.lateDelayMax().toMinutes(), batchSpan.toMinutes());
        Map<String, Object> resilient = Map.of(ProducerConfig.MAX_BLOCK_MS_CONFIG, "600000",
                ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "600000", ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "15000",
                ProducerConfig.RECONNECT_BACKOFF_MAX_MS_CONFIG, "1000");
        KafkaTrafficProducer producer = new KafkaTrafficProducer(bootstrap, resilient);
        KafkaTrafficProducer trickle = new KafkaTrafficProducer(bootstrap, resilient);
        List<GenerationReport> reports = new CopyOnWriteArrayList<>();
        AtomicBoolean faultsDone = new AtomicBoolean();
        AtomicReference<Throwable> producerFailure = new AtomicReference<>();
        Thread production = new Thread(() -> {
            try {
                reports.add(producer.produce(spec, p -> { }));
                if (!faultsDone.get()) {
                    // Recovery is measured by the next committed batch, so data must keep coming until the last fault.
                    say("planned traffic sent; a trickle at 100/s (live event time) keeps data flowing until the faults are through");
                    reports.add(trickle.produce(TrafficSpec.builder().topic(topic).count(1_000_000_000L).ratePerSecond(100)
                            .ingestMode(IngestMode.LIVE).cells(60).subscribers(20_000).lateFraction(0.03)
                            .invalidFraction(plan.invalidFraction()).seed(31).build(), p -> { }));
                }
            } catch (Throwable t) {
                producerFailure.set(t);
            }
        }, "hostile-traffic");
        EdgeCases edges = new EdgeCases(bootstrap, topic, resilient);
        Thread edgeSender = new Thread(() -> edges.sendSpreadOver(plan.trafficTime()), "hostile-edge-cases");

        startStream();
        production.start();
        edgeSender.start();
        Instant trafficStart = Instant.now();

        AtomicBoolean stopReconciles = new AtomicBoolean();
        ReconcileLoop reconciles = new ReconcileLoop(config, stopReconciles);
        Thread reconcileThread = new Thread(reconciles, "hostile-reconciles");
        reconcileThread.start();

        // The fault schedule: stream kills spread over the traffic at random moments, broker restarts
        // at fixed fractions of it, alternating SIGTERM and SIGKILL.
        Random random = new Random(Long.getLong("tidemark.hostile.seed", 7));
        long trafficMs = plan.trafficTime().toMillis();
        long killGap = trafficMs / (plan.streamKills() + 1);
        List<Long> brokerAt = new ArrayList<>();
        for (int i = 0; i < plan.brokerRestarts(); i++) {
            brokerAt.add(trafficMs * (2L * i + 1) / (2L * plan.brokerRestarts()));
        }
        int kills = 0;
        int restarts = 0;
        long nextKill = killGap / 2 + random.nextLong(killGap);
        while (kills < plan.streamKills() || restarts < plan.brokerRestarts() || !reconciles.done()) {
            long now = Duration.between(trafficStart, Instant.now()).toMillis();
            if (restarts < plan.brokerRestarts() && now >= brokerAt.get(restarts)) {
                restartBroker(brokerSettings, restarts % 2 == 0, random);
                restarts++;
                continue;
            }
            if (kills < plan.streamKills() && now >= nextKill) {
                killAndRestartStream();
                kills++;
                nextKill = Duration.between(trafficStart, Instant.now()).toMillis() + killGap / 2 + random.nextLong(killGap);
                continue;
            }
            superviseStream();
            if (now > trafficMs * 3 + 1_800_000) {
                throw new AssertionError("the fault schedule did not finish: " + kills + " kills, " + restarts
                        + " broker restarts, reconciles " + reconciles.summary());
            }
            Thread.sleep(200);
        }
        stopReconciles.set(true);
        reconcileThread.join();
        faultsDone.set(true);
        while (production.isAlive()) {
            trickle.requestStop();
            production.join(500);
        }
        edgeSender.join();
        assertThat(producerFailure.get()).as("the producer survives the broker restarts").isNull();
        assertThat(edges.failure.get()).as("edge-case sender").isNull();
        Totals report = new Totals(reports);

        // Drain: the running stream is killed one last time (not counted), a final run reads the rest and stops.
        stream.kill();
        JobProcess drain = JobProcess.start(StreamingJob.class, withAvailableNow(), Map.of(), dir.resolve("stream.log"));
        assertThat(drain.await(1800)).as("final drain\n%s", drain.tail()).isZero();
        long inTopic = recordsInTopic(bootstrap, topic);
        long expectedMessages = report.messages() + edges.sent.size();
        assertThat(inTopic).as("records in the topic: generated + edge cases").isEqualTo(expectedMessages);

        // Every closed day reconciled once more, in this JVM, then checked against plain SQL.
        SparkSession spark = infra.spark;
        ReconcileJob finalReconcile = new ReconcileJob(spark, config);
        ClosedDays closed = finalReconcile.closedDays();
        List<LocalDate> closedDays = spark.sql("SELECT DISTINCT event_date FROM " + lakehouse.ref(Table.RAW_EVENTS) + " ORDER BY 1")
                .collectAsList().stream().map(r -> r.getDate(0).toLocalDate()).filter(closed::isClosed).toList();
        assertThat(closedDays.stream().filter(d -> d.getYear() > 2025).count()).as("days closed during the run: %s", closedDays)
                .isGreaterThanOrEqualTo(2);
        Map<LocalDate, io.tidemark.reconcile.DayOutcome> finalOutcomes = new TreeMap<>();
        for (LocalDate day : closedDays) {
            finalReconcile.run(DaySelection.day(day), false).day(day).ifPresent(o -> finalOutcomes.put(day, o));
        }
        // What the stream left out of the closed days' KPIs (late records), which only reconcile puts in.
        Map<LocalDate, DayRecords> closedDayRecords = new TreeMap<>();
        for (Row r : spark.sql("SELECT event_date, count(*), count_if(is_late) FROM " + lakehouse.ref(Table.RAW_EVENTS)
                + " GROUP BY event_date").collectAsList()) {
            LocalDate d = r.getDate(0).toLocalDate();
            if (closedDays.contains(d)) {
                closedDayRecords.put(d, new DayRecords(r.getLong(1), r.getLong(2)));
            }
        }
        long lateOnClosedDays = closedDayRecords.values().stream().mapToLong(DayRecords::late).sum();

        ConservationCheck.Report conservation = ConservationCheck.check(spark, lakehouse, expectedMessages);
        Map<String, Long> reasons = new TreeMap<>();
        for (Row r : spark.sql("SELECT reason, count(*) FROM " + lakehouse.ref(Table.DEAD_LETTER) + " GROUP BY reason").collectAsList()) {
            reasons.put(r.getString(0), r.getLong(1));
        }
        Map<String, Long> expectedReasons = expectedReasons(report, edges);
        List<String> edgeMismatches = edges.verify(spark, lakehouse);
        List<String> truthDiff = TableChecks.closedDaysAgainstPlainSql(spark, lakehouse, closedDays);
        long duplicates = conservation.duplicates();
        long lost = expectedMessages - conservation.rawEvents() - conservation.deadLetters();

        writeResults(began, report, edges, kills, restarts, reconciles, conservation, reasons, closedDays, truthDiff, lost,
                closedDayRecords, lateOnClosedDays, finalOutcomes);

        assertThat(unexpectedStreamExits).as("stream exits nobody asked for; see findings").isZero();
        assertThat(kills).isGreaterThanOrEqualTo(plan.streamKills());
        assertThat(restarts).isGreaterThanOrEqualTo(plan.brokerRestarts());
        assertThat(reconciles.completed()).isGreaterThanOrEqualTo(plan.reconcileRuns());
        assertThat(reconciles.killed()).isGreaterThanOrEqualTo(plan.reconcileKills());
        assertThat(reconciles.failures).as("reconcile runs that failed on their own").isEmpty();
        assertThat(conservation.violations()).isEmpty();
        assertThat(duplicates).isZero();
        assertThat(lost).isZero();
        assertThat(conservation.rawEvents()).isEqualTo(report.valid() + edges.expectedValid());
        assertThat(mergeNotUtf8AndNotJson(reasons)).isEqualTo(expectedReasons);
        if (!plan.name().contains("overrides")) {
            assertThat(report.invalid() + edges.expectedInvalid()).isGreaterThanOrEqualTo(10_000);
        }
        assertThat(edgeMismatches).isEmpty();
        assertThat(lateOnClosedDays).as("late records on the closed days: the truth check would not show that reconcile folds them in")
                .isPositive();
        assertThat(truthDiff).isEmpty();
    }

    /** A closed day's records in raw_events, and how many of them the stream classified late. */
    record DayRecords(long records, long late) {
    }

    /** The generated traffic: the planned run plus the trickle, summed. */
    record Totals(List<GenerationReport> reports) {
        long messages() {
            return reports.stream().mapToLong(GenerationReport::messages).sum();
        }

        long count(Kind kind) {
            return reports.stream().mapToLong(r -> r.count(kind)).sum();
        }

        long valid() {
            return reports.stream().mapToLong(GenerationReport::valid).sum();
        }

        long invalid() {
            return reports.stream().mapToLong(GenerationReport::invalid).sum();
        }

        long onTime() {
            return reports.stream().mapToLong(GenerationReport::onTime).sum();
        }

        long late() {
            return reports.stream().mapToLong(GenerationReport::late).sum();
        }
    }

    /** The soak's own processes do not outlive it, whether it passed or not. */
    @org.junit.jupiter.api.AfterEach
    void stopTheStreamAndTheBroker() throws Exception {
        if (stream != null && stream.process.isAlive()) {
            stream.kill();
        }
        LocalKafkaBroker b = broker.get();
        if (b != null) {
            b.stop();
        }
    }

    // ------------------------------------------------------------------ the stream

    private void startStream() throws Exception {
        stream = JobProcess.start(StreamingJob.class, streamArgs, Map.of(), dir.resolve("stream.log"));
        streamStarts++;
    }

    private List<String> withAvailableNow() {
        List<String> args = new ArrayList<>(streamArgs);
        args.add(0, "--available-now");
        return args;
    }

    private void killAndRestartStream() throws Exception {
        long before = TableChecks.commits(progressLog);
        Instant at = Instant.now();
        stream.kill();
        startStream();
        long recover = awaitNewCommit(before, Duration.ofMinutes(10));
        faults.add(new Fault("stream SIGKILL #" + (faults.stream().filter(f -> f.what().startsWith("stream")).count() + 1),
                at, recover, ""));
        say("stream killed and restarted; first batch committed %.1f s later", recover / 1000.0);
    }

    /** Restarts the stream if it died without being asked to, and says so: that is a defect. */
    private void superviseStream() throws Exception {
        if (!stream.process.isAlive()) {
            unexpectedStreamExits++;
            String finding = "stream exited on its own with status " + stream.process.exitValue() + ": " + stream.tail().lines()
                    .filter(l -> l.startsWith("tidemark") || l.contains("Exception")).findFirst().orElse("(see stream.log)");
            findings.add(finding);
            say("FINDING: %s", finding);
            startStream();
        }
    }

    private long awaitNewCommit(long before, Duration timeout) throws Exception {
        long start = System.nanoTime();
        long deadline = start + timeout.toNanos();
        while (TableChecks.commits(progressLog) <= before) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("no batch committed within " + timeout + "; stream log:\n" + stream.tail());
            }
            superviseStream();
            Thread.sleep(100);
        }
        return (System.nanoTime() - start) / 1_000_000;
    }


    // ------------------------------------------------------------------ the broker

    private void restartBroker(BrokerSettings settings, boolean graceful, Random random) throws Exception {
        Instant at = Instant.now();
        if (graceful) {
            broker.get().stop();
        } else {
            broker.get().kill();
        }
        long downMs = 3_000 + random.nextInt(7_000);
        Thread.sleep(downMs);
        broker.set(LocalKafkaBroker.start(settings));
        long before = TableChecks.commits(progressLog);
        long recover = awaitNewCommit(before, Duration.ofMinutes(10));
        String what = "broker " + (graceful ? "SIGTERM" : "SIGKILL");
        faults.add(new Fault(what, at, recover, "down " + downMs / 1000.0 + " s"));
        say("%s, down %.1f s; the stream committed a batch %.1f s after the broker was back", what, downMs / 1000.0, recover / 1000.0);
    }

    private static long recordsInTopic(String bootstrap, String topic) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            List<TopicPartition> parts = c.partitionsFor(topic).stream().map(i -> new TopicPartition(topic, i.partition())).toList();
            Map<TopicPartition, Long> end = c.endOffsets(parts);
            Map<TopicPartition, Long> begin = c.beginningOffsets(parts);
            return parts.stream().mapToLong(tp -> end.get(tp) - begin.get(tp)).sum();
        }
    }

    // ------------------------------------------------------------------ reconcile runs

    /** Reconciles in JVMs of their own while the stream runs: complete runs and runs killed mid-way, alternating. */
    private final class ReconcileLoop implements Runnable {
        private final TidemarkConfig config;
        private final AtomicBoolean stop;
        private int completed;
        private int killed;
        private final List<Long> completedMs = new ArrayList<>();
        /** Completed runs that changed KPI rows, and the late records of the days they replaced (a day counted once per run). */
        private int changingRuns;
        private long lateFoldedIn;
        final List<String> failures = new CopyOnWriteArrayList<>();
        private volatile boolean finished;

        ReconcileLoop(TidemarkConfig config, AtomicBoolean stop) {
            this.config = config;
            this.stop = stop;
        }

        synchronized int completed() {
            return completed;
        }

        synchronized int killed() {
            return killed;
        }

        boolean done() {
            return finished;
        }

        synchronized String summary() {
            return completed + " completed, " + killed + " killed, " + failures.size() + " failed";
        }

        @Override
        public void run() {
            Random random = new Random(17);
            int run = 0;
            try {
                while (!stop.get() && (completed() < plan.reconcileRuns() || killed() < plan.reconcileKills())) {
                    List<LocalDate> days = closedDaysWithData();
                    if (days.isEmpty()) {
                        Thread.sleep(1000);
                        continue;
                    }
                    boolean kill = killed() < plan.reconcileKills() && (completed() >= plan.reconcileRuns() || run % 2 == 1);
                    runOnce(run++, days.subList(Math.max(0, days.size() - 2), days.size()), kill, random);
                }
            } catch (Exception e) {
                failures.add("reconcile loop: " + e);
            } finally {
                finished = true;
            }
        }

        /**
         * Closed days that hold data, oldest first: what a reconcile run during the soak should work
         * on. The days come from the partition directories (cheap; a directory left by a killed write
         * at worst makes a run find no data, which is then not counted).
         */
        private List<LocalDate> closedDaysWithData() {
            try {
                ClosedDays closed = new ReconcileJob(infra.spark, config).closedDays();
                try (var dirs = Files.list(Path.of(Lakehouse.of(config).path(Table.RAW_EVENTS)))) {
                    return dirs.map(d -> d.getFileName().toString()).filter(n -> n.startsWith("event_date="))
                            .map(n -> LocalDate.parse(n.substring("event_date=".length()))).filter(closed::isClosed).sorted().toList();
                }
            } catch (Exception e) {
                if (!quietBeforeFirstBatch) {
                    say("no closed day yet (%s)", e.toString().lines().findFirst().orElse(""));
                    quietBeforeFirstBatch = true;
                }
                return List.of();
            }
        }

        private boolean quietBeforeFirstBatch;

        private void runOnce(int run, List<LocalDate> days, boolean kill, Random random) throws Exception {
            Path log = dir.resolve("reconcile-" + run + ".log");
            List<String> args = List.of("--from", days.get(0).toString(), "--to", days.get(days.size() - 1).toString(),
                    "lakehouse=" + config.lakehouseUri());
            long started = System.nanoTime();
            Process p = ReconcileKillTest.reconcileProcess(args, log);
            CountDownLatch working = new CountDownLatch(1);
            List<String> out = new CopyOnWriteArrayList<>();
            Thread reader = new Thread(() -> {
                try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
                    for (String line; (line = r.readLine()) != null; ) {
                        out.add(line);
                        if (line.startsWith("reconcile reconcile-")) {
                            working.countDown();
                        }
                    }
                } catch (Exception e) {
                    // killed
                }
            });
            reader.start();
            if (kill && working.await(600, TimeUnit.SECONDS)) {
                Thread.sleep(random.nextInt(6000));
                if (p.isAlive()) {
                    p.destroyForcibly();
                    p.waitFor();
                    reader.join(5000);
                    Files.write(dir.resolve("reconcile-" + run + ".out"), out);
                    synchronized (this) {
                        killed++;
                    }
                    say("reconcile #%d SIGKILLed mid-run (%d lines of progress printed)", run, out.size());
                    return;
                }
            }
            if (!p.waitFor(900, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                failures.add("reconcile #" + run + " did not finish in 15 minutes; log " + log);
                return;
            }
            reader.join(5000);
            Files.write(dir.resolve("reconcile-" + run + ".out"), out);
            long ms = (System.nanoTime() - started) / 1_000_000;
            if (p.exitValue() != 0) {
                failures.add("reconcile #" + run + " exited " + p.exitValue() + ": " + String.join(" | ", Files.readAllLines(log).stream()
                        .filter(l -> l.startsWith("tidemark reconcile:")).toList()));
                return;
            }
            if (out.stream().noneMatch(l -> l.startsWith("reconcile 20") && l.contains("replaced"))) {
                say("reconcile #%d had no day to reconcile; not counted", run);
                return;
            }
            List<String> dayLines = out.stream().filter(l -> l.startsWith("reconcile 20")).toList();
            synchronized (this) {
                completed++;
                completedMs.add(ms);
                changingRuns += dayLines.stream().anyMatch(l -> figure(l, "changed") > 0) ? 1 : 0;
                lateFoldedIn += dayLines.stream().mapToLong(l -> figure(l, "late folded in")).sum();
            }
            say("reconcile #%d completed in %.1f s: %s", run, ms / 1000.0, dayLines);
        }
    }

    /** The number before {@code label} in a reconcile day line ("..., 12 changed; ...; 1,234 late folded in; ..."), 0 when absent. */
    static long figure(String line, String label) {
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("(\\d[\\d,]*) " + java.util.regex.Pattern.quote(label)).matcher(line);
        return m.find() ? Long.parseLong(m.group(1).replace(",", "")) : 0;
    }

    // ------------------------------------------------------------------ edge cases with a known fate

    /**
     * Hand-made messages the generator does not make, each with the fate the contract gives it, sent
     * one by one through the run; checked record by record afterwards by their Kafka coordinates.
     */
    static final class EdgeCases {
        /** @param expectedReason the dead_letter reason, or null: valid, in the raw log */
        record Edge(String name, byte[] value, String expectedReason) {
        }

        record Sent(Edge edge, int partition, long offset) {
        }

        private final String bootstrap;
        private final String topic;
        private final Map<String, Object> producerProperties;
        final List<Sent> sent = new CopyOnWriteArrayList<>();
        final AtomicReference<Throwable> failure = new AtomicReference<>();

        EdgeCases(String bootstrap, String topic, Map<String, Object> producerProperties) {
            this.bootstrap = bootstrap;
            this.topic = topic;
            this.producerProperties = producerProperties;
        }

        static List<Edge> catalogue() {
            String ok = "\"subscriber_id\":\"edge-sub\",\"cell_site_id\":\"edge-cell\",\"volume_gb\":0.5";
            String recent = Instant.now().minus(Duration.ofDays(4)).truncatedTo(java.time.temporal.ChronoUnit.SECONDS).toString();
            List<Edge> e = new ArrayList<>();
            // Found by this suite: a year-0 event made a raw_events partition the deltalake package cannot read.
            e.add(new Edge("far past: 1970", utf8("{" + ok + ",\"event_ts\":\"1970-01-01T00:00:00Z\"}"), "PAST_EVENT_TIME"));
            e.add(new Edge("far past: year 1", utf8("{" + ok + ",\"event_ts\":\"0001-01-01T00:00:00Z\"}"), "PAST_EVENT_TIME"));
            e.add(new Edge("far past: year 0", utf8("{" + ok + ",\"event_ts\":\"0000-06-01T00:00:00Z\"}"), "PAST_EVENT_TIME"));
            e.add(new Edge("far past: 1899 with an offset", utf8("{" + ok + ",\"event_ts\":\"1899-12-31T23:59:59.999999-12:00\"}"), "PAST_EVENT_TIME"));
            e.add(new Edge("far future: 9999", utf8("{" + ok + ",\"event_ts\":\"9999-12-31T23:59:59Z\"}"), "FUTURE_EVENT_TIME"));
            e.add(new Edge("four days back: late, kept", utf8("{" + ok + ",\"event_ts\":\"" + recent + "\"}"), null));
            e.add(new Edge("extra field nested 5000 deep", utf8("{" + ok + ",\"event_ts\":\"" + recent + "\",\"x\":"
                    + "[".repeat(5000) + "]".repeat(5000) + "}"), "NOT_JSON"));
            e.add(new Edge("duplicate extra field (kept: extras are not interpreted)", utf8("{" + ok
                    + ",\"event_ts\":\"" + recent + "\",\"x\":1,\"x\":2}"), null));
            e.add(new Edge("NUL bytes inside a string", utf8("{" + ok.replace("edge-sub", "edge\\u0000sub")
                    + ",\"event_ts\":\"" + recent + "\"}"), null));
            // Found by this suite: 1e308 is finite, but no DECIMAL(38,9) holds it, and it crashed every replay of its batch.
            e.add(new Edge("volume 1e308", utf8("{" + ok.replace("0.5", "1e308") + ",\"event_ts\":\"" + recent + "\"}"), "VOLUME_TOO_LARGE"));
            e.add(new Edge("volume 1e12, the largest allowed", utf8("{" + ok.replace("0.5", "1e12") + ",\"event_ts\":\"" + recent + "\"}"), null));
            e.add(new Edge("volume -0.0", utf8("{" + ok.replace("0.5", "-0.0") + ",\"event_ts\":\"" + recent + "\"}"), null));
            // RFC 8259 lets a parser ignore a byte order mark; Jackson does, and the payload keeps it.
            e.add(new Edge("UTF-8 BOM before the object", concat(new byte[] {(byte) 0xEF, (byte) 0xBB, (byte) 0xBF},
                    utf8("{" + ok + ",\"event_ts\":\"" + recent + "\"}")), null));
            e.add(new Edge("two objects in one message", utf8("{" + ok + ",\"event_ts\":\"" + recent + "\"}{}"), "NOT_JSON"));
            e.add(new Edge("lone surrogate escape", utf8("{" + ok.replace("edge-sub", "\\ud800") + ",\"event_ts\":\"" + recent + "\"}"), null));
            return e;
        }

        void sendSpreadOver(Duration span) {
            List<Edge> catalogue = catalogue();
            Properties p = KafkaTrafficProducer.producerProperties(bootstrap, producerProperties);
            try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer())) {
                long pause = Math.max(1, span.toMillis() / (catalogue.size() + 1));
                for (Edge edge : catalogue) {
                    Thread.sleep(pause);
                    RecordMetadata m = producer.send(new ProducerRecord<>(topic, null, null, edge.value())).get();
                    sent.add(new Sent(edge, m.partition(), m.offset()));
                }
            } catch (Throwable t) {
                failure.set(t);
            }
        }

        long expectedValid() {
            return sent.stream().filter(s -> s.edge().expectedReason() == null).count();
        }

        long expectedInvalid() {
            return sent.size() - expectedValid();
        }

        /** Each edge case where the contract puts it: the raw log (late or not) or dead_letter with its reason. */
        List<String> verify(SparkSession spark, Lakehouse lakehouse) {
            List<String> mismatches = new ArrayList<>();
            for (Sent s : sent) {
                String where = "kafka_topic = '" + topic + "' AND kafka_partition = " + s.partition() + " AND kafka_offset = " + s.offset();
                List<Row> raw = spark.sql("SELECT is_late FROM " + lakehouse.ref(Table.RAW_EVENTS) + " WHERE " + where).collectAsList();
                List<Row> dead = spark.sql("SELECT reason FROM " + lakehouse.ref(Table.DEAD_LETTER) + " WHERE " + where).collectAsList();
                String actual = raw.size() == 1 && dead.isEmpty() ? "raw_events"
                        : dead.size() == 1 && raw.isEmpty() ? "dead_letter " + dead.get(0).getString(0)
                        : raw.size() + " raw rows and " + dead.size() + " dead_letter rows";
                String expected = s.edge().expectedReason() == null ? "raw_events" : "dead_letter " + s.edge().expectedReason();
                if (!actual.equals(expected)) {
                    mismatches.add(s.edge().name() + ": expected " + expected + ", got " + actual);
                }
            }
            return mismatches;
        }

        private static byte[] utf8(String s) {
            return s.getBytes(StandardCharsets.UTF_8);
        }

        private static byte[] concat(byte[] a, byte[] b) {
            byte[] out = java.util.Arrays.copyOf(a, a.length + b.length);
            System.arraycopy(b, 0, out, a.length, b.length);
            return out;
        }
    }

    // ------------------------------------------------------------------ checks

    /** The dead_letter reasons the generated and hand-made garbage must produce, kind by kind. */
    private static Map<String, Long> expectedReasons(Totals report, EdgeCases edges) {
        Map<Kind, String> reasonOf = new EnumMap<>(Kind.class);
        reasonOf.put(Kind.EMPTY, "EMPTY");
        reasonOf.put(Kind.NULL_VALUE, "EMPTY");
        reasonOf.put(Kind.NOT_AN_OBJECT, "NOT_AN_OBJECT");
        reasonOf.put(Kind.MISSING_FIELD, "MISSING_FIELD");
        reasonOf.put(Kind.NULL_FIELD, "NULL_FIELD");
        reasonOf.put(Kind.WRONG_TYPE, "WRONG_TYPE");
        reasonOf.put(Kind.NESTED_JUNK, "WRONG_TYPE");
        reasonOf.put(Kind.NEGATIVE_VOLUME, "NEGATIVE_VOLUME");
        reasonOf.put(Kind.NON_FINITE_VOLUME, "NON_FINITE_VOLUME");
        reasonOf.put(Kind.BAD_TIMESTAMP, "BAD_TIMESTAMP");
        reasonOf.put(Kind.FUTURE_EVENT_TIME, "FUTURE_EVENT_TIME");
        reasonOf.put(Kind.OVERSIZED, "OVERSIZED");
        reasonOf.put(Kind.DUPLICATE_FIELD, "DUPLICATE_FIELD");
        reasonOf.put(Kind.BLANK_ID, "BLANK_ID");
        reasonOf.put(Kind.PAST_EVENT_TIME, "PAST_EVENT_TIME");
        reasonOf.put(Kind.INVALID_UTF8, "NOT_UTF8");
        reasonOf.put(Kind.TRUNCATED_JSON, "NOT_JSON");
        reasonOf.put(Kind.NOT_JSON, "NOT_JSON");
        Map<String, Long> expected = new TreeMap<>();
        for (Map.Entry<Kind, String> e : reasonOf.entrySet()) {
            if (report.count(e.getKey()) > 0) {
                expected.merge(e.getValue(), report.count(e.getKey()), Long::sum);
            }
        }
        for (EdgeCases.Sent s : edges.sent) {
            if (s.edge().expectedReason() != null) {
                expected.merge(s.edge().expectedReason(), 1L, Long::sum);
            }
        }
        // Binary garbage is NOT_UTF8 or NOT_JSON depending on its first bytes (the decoder's own test
        // pins which), so those two reasons are compared as one sum.
        expected = mergeNotUtf8AndNotJson(expected);
        expected.merge(NOT_UTF8_OR_JSON, report.count(Kind.BINARY_GARBAGE), Long::sum);
        return expected;
    }

    private static final String NOT_UTF8_OR_JSON = "NOT_UTF8 + NOT_JSON";

    private static Map<String, Long> mergeNotUtf8AndNotJson(Map<String, Long> reasons) {
        Map<String, Long> out = new TreeMap<>(reasons);
        long merged = out.getOrDefault("NOT_UTF8", 0L) + out.getOrDefault("NOT_JSON", 0L);
        out.remove("NOT_UTF8");
        out.remove("NOT_JSON");
        out.put(NOT_UTF8_OR_JSON, merged);
        return out;
    }

    // ------------------------------------------------------------------ results

    private void writeResults(Instant began, Totals report, EdgeCases edges, int kills, int restarts, ReconcileLoop reconciles,
                              ConservationCheck.Report conservation, Map<String, Long> reasons, List<LocalDate> closedDays,
                              List<String> truthDiff, long lost, Map<LocalDate, DayRecords> closedDayRecords, long lateOnClosedDays,
                              Map<LocalDate, io.tidemark.reconcile.DayOutcome> finalOutcomes) throws Exception {
        StringBuilder r = new StringBuilder();
        r.append("# Hostile conditions: ").append(plan.name()).append(" run\n\n");
        r.append(String.format("Run %s, %.1f min wall time, %d cores, java %s.%n%n", began, Duration.between(began, Instant.now()).toSeconds() / 60.0,
                Runtime.getRuntime().availableProcessors(), System.getProperty("java.version")));
        r.append("| figure | value |\n|---|---|\n");
        row(r, "events produced (generator)", String.format("%,d (planned %,d, then a trickle of %,d until the last fault)",
                report.messages(), report.reports().get(0).messages(), report.messages() - report.reports().get(0).messages()));
        row(r, "  valid (on time / late)", String.format("%,d (%,d / %,d)", report.valid(), report.onTime(), report.late()));
        row(r, "  malformed", String.format("%,d of %d kinds", report.invalid(), Kind.invalidKinds(EventFormat.JSON).stream().filter(k -> report.count(k) > 0).count()));
        row(r, "hand-made edge cases", String.format("%d (%d valid, %d invalid)", edges.sent.size(), edges.expectedValid(), edges.expectedInvalid()));
        row(r, "stream SIGKILLs (restarted each time)", Integer.toString(kills));
        row(r, "stream starts in total", Integer.toString(streamStarts + 1));
        row(r, "stream exits nobody asked for", Integer.toString(unexpectedStreamExits));
        row(r, "broker restarts (SIGTERM / SIGKILL)", String.format("%d (%d / %d)", restarts, (restarts + 1) / 2, restarts / 2));
        row(r, "reconciles completed during the stream", Integer.toString(reconciles.completed()));
        row(r, "reconciles SIGKILLed mid-run", Integer.toString(reconciles.killed()));
        row(r, "  of them changing KPI rows (late records in the days they replaced, summed over runs)", String.format("%d (%,d)",
                reconciles.changingRuns, reconciles.lateFoldedIn));
        row(r, "reconcile failures", Integer.toString(reconciles.failures.size()));
        row(r, "raw_events + dead_letter", String.format("%,d + %,d", conservation.rawEvents(), conservation.deadLetters()));
        row(r, "duplicates", Long.toString(conservation.duplicates()));
        row(r, "losses", Long.toString(lost));
        row(r, "conservation", conservation.holds() ? "holds" : "VIOLATED: " + conservation.violations());
        row(r, "closed days reconciled and checked", closedDays.toString());
        row(r, "late records on closed days (left out by the stream, folded in by reconcile)",
                String.format("%,d", lateOnClosedDays));
        row(r, "KPI rows differing from plain SQL truth", Integer.toString(truthDiff.size()));
        r.append("\n## Closed days\n\nThe final reconcile of each closed day, after the concurrent ones: what it still changed.\n\n"
                + "| day | records | late | final reconcile: windows changed | record drift | GB drift |\n|---|---:|---:|---:|---:|---:|\n");
        closedDayRecords.forEach((d, v) -> {
            io.tidemark.reconcile.DayOutcome o = finalOutcomes.get(d);
            r.append(String.format("| %s | %,d | %,d | %s | %s | %s |%n", d, v.records(), v.late(), o == null ? "-" : String.format("%,d", o.windowsChanged()),
                    o == null || o.measures().isEmpty() ? "-" : String.format("%+,d", o.measure("record_count").drift().longValueExact()),
                    o == null || o.measures().isEmpty() ? "-" : o.measure("total_gb").drift().toPlainString()));
        });
        r.append("\n## Malformed messages by kind\n\n| kind | generated |\n|---|---|\n");
        for (Kind k : Kind.invalidKinds(EventFormat.JSON)) {
            row(r, k.name(), String.format("%,d", report.count(k)));
        }
        r.append("\n## dead_letter by reason\n\n| reason | rows |\n|---|---|\n");
        reasons.forEach((k, v) -> row(r, k, String.format("%,d", v)));
        r.append("\n## Time to recover after each fault\n\n"
                + "From the fault (stream killed / broker stopped) to the next committed micro-batch; for the broker, from its restart.\n\n"
                + "| fault | at | recovered after | note |\n|---|---|---|---|\n");
        for (Fault f : faults) {
            r.append(String.format("| %s | %s | %.1f s | %s |%n", f.what(), f.at(), f.recoverMs() / 1000.0, f.note()));
        }
        r.append(String.format("%nReconcile runs completed in (s): %s%n", reconciles.completedMs.stream().map(ms -> String.format("%.1f", ms / 1000.0)).toList()));
        if (!findings.isEmpty() || !reconciles.failures.isEmpty() || !truthDiff.isEmpty()) {
            r.append("\n## Findings\n\n");
            findings.forEach(f -> r.append("- ").append(f).append('\n'));
            reconciles.failures.forEach(f -> r.append("- ").append(f).append('\n'));
            truthDiff.forEach(f -> r.append("- truth differs: ").append(f).append('\n'));
        }
        Path out = Path.of(System.getProperty("tidemark.hostile.results", "target/hostile-results.md")).toAbsolutePath();
        Files.createDirectories(out.getParent());
        Files.writeString(out, r.toString());
        say("results written to %s%n%s", out, r);
    }

    private static void row(StringBuilder r, String k, String v) {
        r.append("| ").append(k).append(" | ").append(v).append(" |\n");
    }

    /** Where the run's progress lines also go, as they happen (surefire shows test output only at the end). */
    private static volatile Path progressFile;

    private static void say(String format, Object... args) {
        String line = String.format("[hostile %tT] " + format + "%n", java.util.stream.Stream.concat(
                java.util.stream.Stream.of(new java.util.Date()), java.util.Arrays.stream(args)).toArray());
        System.out.print(line);
        Path f = progressFile;
        if (f != null) {
            try {
                Files.writeString(f, line, java.nio.file.StandardOpenOption.CREATE, java.nio.file.StandardOpenOption.APPEND);
            } catch (java.io.IOException e) {
                // progress is a convenience
            }
        }
    }
}
