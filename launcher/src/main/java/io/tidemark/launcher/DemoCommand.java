package io.tidemark.launcher;

import static org.apache.spark.sql.functions.col;
import static org.apache.spark.sql.functions.count;
import static org.apache.spark.sql.functions.count_if;
import static org.apache.spark.sql.functions.lit;

import java.io.IOException;
import java.io.PrintStream;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.attribute.BasicFileAttributes;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDate;
import java.time.ZoneOffset;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.StringJoiner;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.StreamingQuery;

import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import io.tidemark.broker.BrokerSettings;
import io.tidemark.broker.BrokerStatus;
import io.tidemark.broker.LocalKafkaBroker;
import io.tidemark.generate.GenerationReport;
import io.tidemark.generate.IngestMode;
import io.tidemark.generate.KafkaTrafficProducer;
import io.tidemark.generate.MessageKind;
import io.tidemark.generate.TrafficProfile;
import io.tidemark.generate.TrafficSpec;
import io.tidemark.lakehouse.ClosedDays;
import io.tidemark.lakehouse.Errors;
import io.tidemark.lakehouse.Lakehouse;
import io.tidemark.lakehouse.Lakehouse.Table;
import io.tidemark.lakehouse.SparkSessions;
import io.tidemark.lakehouse.StreamProgress;
import io.tidemark.lakehouse.TidemarkConfig;
import io.tidemark.lakehouse.TidemarkConfig.Key;
import io.tidemark.operations.ConservationCheck;
import io.tidemark.operations.LakehouseFigures;
import io.tidemark.pipeline.Pipeline;
import io.tidemark.pipeline.Watermark;
import io.tidemark.reconcile.DayOutcome;
import io.tidemark.reconcile.DaySelection;
import io.tidemark.reconcile.ReconcileJob;
import io.tidemark.reconcile.ReconcileResult;
import io.tidemark.stream.StreamCheckpoint;
import io.tidemark.stream.StreamingJob;

/**
 * {@code tidemark demo}: the whole system on one machine. A local broker, a backlog that closes
 * yesterday, live traffic while the stream runs, then the conservation check over everything.
 *
 * <p>Halfway through the live traffic, devices that were offline for hours reconnect and send records
 * of the days the backlog closed (see {@link #heldBackSpecs}): the stream keeps them in late_events,
 * and reconcile then visibly folds them into those days' KPIs.
 */
@Command(name = "demo", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"The whole system on one machine: starts a local Kafka broker, produces a 30-hour backlog and then live traffic "
                + "(with late and malformed records) while the stream runs, prints a status line per micro-batch; halfway through, "
                + "devices that were offline for hours send records of the days that have already closed. "
                + "Then it reconciles the closed days (folding those records in), checks conservation over every record "
                + "and leaves the tables for 'tidemark sql'.",
                "Exit code 0 only if conservation holds."})
final class DemoCommand extends TidemarkCommand {

    static final String MARKER = ".tidemark-demo";

    @Option(names = "--dir", paramLabel = "DIR", defaultValue = "./data/demo",
            description = "Working directory: broker, lakehouse and checkpoint (default: ${DEFAULT-VALUE}). Wiped at the start unless --keep.")
    Path dir;

    @Option(names = "--keep", description = "Keep what an earlier demo left in --dir and add to it.")
    boolean keep;

    @Option(names = "--keep-broker", description = "Leave the broker running at the end (stop it with 'tidemark broker stop --dir DIR/broker').")
    boolean keepBroker;

    @Option(names = "--storage", paramLabel = "KIND", defaultValue = "local",
            description = "Where the lakehouse and the checkpoint live: local (in DIR) or s3 (on the repository's local S3 server, "
                    + "ops/s3-server, started on loopback and installed first if need be; its objects in DIR/s3) (default: ${DEFAULT-VALUE}).")
    String storage;

    @Option(names = "--live-seconds", paramLabel = "S", defaultValue = "30", description = "Live traffic for S seconds (default: ${DEFAULT-VALUE}).")
    int liveSeconds;

    @Option(names = "--rate", paramLabel = "MSG_PER_S", defaultValue = "2000", description = "Live messages per second (default: ${DEFAULT-VALUE}).")
    double rate;

    @Option(names = "--backlog-events", paramLabel = "N", defaultValue = "200000", description = "Messages in the backlog (default: ${DEFAULT-VALUE}).")
    long backlogEvents;

    @Option(names = "--backlog-hours", paramLabel = "H", defaultValue = "30",
            description = "Event time the backlog spans, ending now; over 24 h makes yesterday a closed day (default: ${DEFAULT-VALUE}).")
    double backlogHours;

    @Option(names = "--partitions", paramLabel = "N", defaultValue = "2", description = "Partitions of the topic (default: ${DEFAULT-VALUE}).")
    int partitions;

    @Option(names = "--offline-share", paramLabel = "F", defaultValue = "0.01",
            description = "Records that devices offline for hours send halfway through the live traffic, with event times on the days "
                    + "that have already closed, as a share of the backlog's records of those days (at least "
                    + DemoCommand.MIN_HELD_BACK_PER_DAY + " a day; 0 = none; default: ${DEFAULT-VALUE}).")
    double offlineShare;

    @Option(names = "--seed", paramLabel = "N", defaultValue = "42", description = "Random seed of the traffic (default: ${DEFAULT-VALUE}).")
    long seed;

    /** The fewest held-back records a closed day gets, so that even a day the backlog barely reaches shows them. */
    static final int MIN_HELD_BACK_PER_DAY = 25;

    private GracefulStop stop;
    private volatile KafkaTrafficProducer backlogProducer;
    private volatile KafkaTrafficProducer liveProducer;
    private volatile KafkaTrafficProducer heldBackProducer;
    private volatile StreamingQuery runningQuery;
    private LocalS3Server s3Server;

    /** The bucket of the demo's lakehouse and checkpoint on the local S3 server. */
    static final String S3_BUCKET = "tidemark-demo";

    /** How long the stream may go without consuming anything before the demo gives up waiting. */
    static final Duration STALL_TIMEOUT = Duration.ofMinutes(5);

    @Override
    public Integer call() throws Exception {
        validate();
        long t0 = System.nanoTime();
        Path home = dir.toAbsolutePath().normalize();
        Path brokerDir = home.resolve("broker");
        TidemarkConfig settings = config(Map.of(
                Key.LAKEHOUSE.name, home.resolve("lakehouse").toString(),
                Key.CHECKPOINT.name, home.resolve("checkpoint").toString(),
                Key.TRIGGER.name, "5 seconds",
                Key.MAX_OFFSETS_PER_TRIGGER.name, "100000",
                Key.STARTING_OFFSETS.name, "earliest"));
        Pipeline pipeline = Lakehouse.of(settings).pipeline();
        List<String> eventColumns = pipeline.events().columns().stream().map(Pipeline.Column::name).toList();
        TrafficProfile profile = TrafficProfile.forEvents(eventColumns).orElseThrow(() -> new UserError("the demo generates the events of the "
                + "shipped pipelines (network, payments); the events of " + pipeline.file() + " are " + String.join(", ", eventColumns)
                + ": send your own to topic " + settings.topic() + " and run 'tidemark stream --pipeline " + pipeline.file() + "'"));
        TrafficSpec backlog = backlogSpec(settings.topic(), Instant.now(), profile);
        TrafficSpec live = liveSpec(settings.topic(), profile);
        prepare(home, brokerDir);
        s3Server = storage.equals("s3") ? startS3(home) : null;
        LocalS3Server s3 = s3Server;
        if (s3 != null) {
            // S3A reads its settings from Spark's (spark.hadoop.*), which a session takes from the system properties
            s3.sparkSettings().forEach(System::setProperty);
        }
        TidemarkConfig base = s3 == null ? settings
                : settings.toBuilder().set(Key.LAKEHOUSE, s3.uri("lakehouse")).set(Key.CHECKPOINT, s3.uri("checkpoint")).build();
        stop = GracefulStop.install(() -> {
            say("interrupted: stopping the traffic and the stream (Ctrl-C again stops at once) ...");
            for (KafkaTrafficProducer p : new KafkaTrafficProducer[] {backlogProducer, liveProducer, heldBackProducer}) {
                if (p != null) {
                    p.requestStop();
                }
            }
            StreamingQuery q = runningQuery;
            if (q != null) {
                GracefulStop.stopBetweenBatches(q, StreamCommand.STOP_PATIENCE);
            }
        });

        Broker b = broker(brokerDir);
        LocalKafkaBroker broker = b.started();
        String bootstrap = b.bootstrap();
        LocalKafkaBroker started = broker;
        Thread brokerHook = new Thread(() -> {
            if (started != null && !keepBroker) {
                started.stop();
            }
        }, "tidemark-demo-broker-stop");
        Runtime.getRuntime().addShutdownHook(brokerHook);
        checkInterrupted();
        TidemarkConfig config = base.toBuilder().set(Key.KAFKA_BOOTSTRAP, bootstrap).build();
        Lakehouse lakehouse = Lakehouse.of(config);
        boolean created;
        if (broker != null) {
            created = broker.createTopic(config.topic(), partitions);
        } else {
            try (KafkaTopics kafka = new KafkaTopics(bootstrap, config.kafkaOptions(), Duration.ofSeconds(10))) {
                created = kafka.create(config.topic(), partitions);
            }
        }
        say("topic       %s %s", config.topic(), created ? "created with " + partitions + " partitions" : "already there");

        // Phase 1: the backlog.
        say("phase 1     backlog: %s", GenerateCommand.describe(backlog));
        backlogProducer = new KafkaTrafficProducer(bootstrap, config.kafkaOptions());
        GenerationReport backlogReport = backlogProducer.produce(backlog, p -> say("            %s", p.line()));
        checkInterrupted();
        say("            sent %s messages in %s (valid %s, invalid %s)", Formats.count(backlogReport.messages()),
                Formats.duration(backlogReport.elapsed()), Formats.count(backlogReport.valid()), Formats.count(backlogReport.invalid()));

        // Phase 2: the stream runs while live traffic arrives.
        say("phase 2     starting Spark %s and the stream (trigger %s, at most %s records per batch); it reads the backlog first ...",
                config.sparkMaster(), Formats.duration(config.trigger()), Formats.count(config.maxOffsetsPerTrigger()));
        SparkSession spark = SparkSessions.create(config, "tidemark-demo");
        Streamed streamed = stream(spark, config, bootstrap, backlog, live, backlogReport);
        GenerationReport liveDone = streamed.live();
        long heldBackTotal = streamed.heldBack();
        long produced = streamed.produced();
        long inTopic = streamed.inTopic();

        // The batch layer: recompute the closed days exactly, late records folded in.
        LakehouseFigures beforeReconcile = LakehouseFigures.read(spark, lakehouse, 1);
        List<LocalDate> closed = beforeReconcile.closedDays();
        Reconciled r = reconcile(spark, config, closed);
        ReconcileResult reconciled = r.result();
        String reconcileFailure = r.failure();

        // Conservation, over every record the topic holds.
        say("check       conservation over %s consumed records ...", Formats.count(inTopic));
        ConservationCheck.Report report = ConservationCheck.check(spark, lakehouse, inTopic);
        LakehouseFigures figures = LakehouseFigures.read(spark, lakehouse, 1);
        Map<LocalDate, LateOfDay> lateByDay = lateByDay(spark, lakehouse);
        spark.stop();

        summary(System.nanoTime() - t0, backlogReport, liveDone, heldBackTotal, produced, inTopic, beforeReconcile.dirtyDays(), figures,
                lateByDay, reconciled, reconcileFailure, report, lakehouse, config, home);

        if (broker != null && !keepBroker) {
            broker.stop();
            say("broker      stopped");
        } else {
            say("broker      still running at %s; stop it with: ./tidemark broker stop --dir %s", bootstrap, show(brokerDir));
        }
        if (s3 != null) {
            s3.stop();
            say("s3          stopped; its objects stay in %s: '%s' serves them again", show(home.resolve("s3")), s3RunCommand(s3));
        }
        try {
            Runtime.getRuntime().removeShutdownHook(brokerHook);
        } catch (IllegalStateException shuttingDown) {
            // already exiting
        }
        return report.holds() && reconcileFailure == null && (keep || inTopic == produced) ? Tidemark.OK : Tidemark.FAILED;
    }

    /** The broker the demo runs on and its address: the one already running in {@code brokerDir} with --keep, else a new one. */
    private record Broker(LocalKafkaBroker started, String bootstrap) {
    }

    private Broker broker(Path brokerDir) throws Exception {
        BrokerStatus already = LocalKafkaBroker.status(brokerDir);
        if (keep && already.running()) {
            say("broker      reusing the broker running in %s at %s", show(brokerDir), already.bootstrapServers());
            return new Broker(null, already.bootstrapServers());
        }
        say("broker      starting a local Kafka broker in %s ...", show(brokerDir));
        LocalKafkaBroker broker = LocalKafkaBroker.start(BrokerSettings.of(brokerDir));
        say("broker      running at %s (pid %d)", broker.bootstrapServers(), broker.pid());
        return new Broker(broker, broker.bootstrapServers());
    }

    /** What phases 2 and 3 sent (live traffic, the held-back records, every message), and what the topic held at the end. */
    private record Streamed(GenerationReport live, long heldBack, long produced, long inTopic) {
    }

    /**
     * Phases 2 and 3: the stream started over the backlog; once it has consumed it, live traffic and then the held-back
     * records of the backlog's days while it runs; the stream stopped between batches once it has consumed the whole topic.
     */
    private Streamed stream(SparkSession spark, TidemarkConfig config, String bootstrap, TrafficSpec backlog, TrafficSpec live,
                            GenerationReport backlogReport) throws Exception {
        AtomicLong liveSent = new AtomicLong();
        AtomicLong heldBackSent = new AtomicLong();
        AtomicLong consumed = new AtomicLong();
        AtomicReference<StreamProgress> lastBatch = new AtomicReference<>();
        long backlogSent = backlogReport.messages();
        StreamingJob job = new StreamingJob(spark, config, progress -> {
            lastBatch.set(progress);
            long total = consumed.addAndGet(progress.recordsIn());
            say("  %s | produced %s, consumed %s", BatchLine.of(progress),
                    Formats.count(backlogSent + liveSent.get() + heldBackSent.get()), Formats.count(total));
        });
        checkInterrupted();
        StreamingQuery query = job.start(false);
        runningQuery = query;
        job.metricsPort().ifPresent(p -> say("  metrics of the running stream: http://%s:%d/metrics (Prometheus text format)", config.metricsHost(), p));
        // A failure or a second Ctrl-C exits the JVM: stop the query before Spark stops its context.
        Object sparkHook = SparkShutdown.register(() -> {
            if (query.isActive()) {
                try {
                    query.stop();
                } catch (Exception e) {
                    // stopping anyway
                }
            }
        });
        liveProducer = new KafkaTrafficProducer(bootstrap, config.kafkaOptions());
        // Live traffic starts once the backlog is in: from then on the watermark follows the wall
        // clock, so the generator's late records (20 to 60 minutes behind it) arrive late.
        Map<Integer, Long> backlogEnd;
        try (KafkaTopics kafka = new KafkaTopics(bootstrap, config.kafkaOptions(), Duration.ofSeconds(10))) {
            backlogEnd = kafka.endOffsets(config.topic());
        }
        awaitConsumed(query, config, backlogEnd);
        // The watermark trails the batches by one (see WatermarkLedger): it passes the backlog's end
        // once a batch after the backlog's last one has run, i.e. once live records have come in.
        long lastBacklogBatch = lastBatch.get() == null ? -1 : lastBatch.get().batchId();
        heldBackProducer = new KafkaTrafficProducer(bootstrap, config.kafkaOptions());
        AtomicReference<GenerationReport> liveReport = new AtomicReference<>();
        AtomicReference<Throwable> liveError = new AtomicReference<>();
        Thread liveThread = new Thread(() -> {
            try {
                liveReport.set(liveProducer.produce(live, p -> liveSent.set(p.messagesSent())));
                if (liveReport.get().stoppedEarly() && stop.requested()) {
                    return;
                }
                liveSent.set(liveReport.get().messages());
            } catch (Throwable e) {
                liveError.set(e);
            }
        }, "tidemark-demo-live-traffic");
        liveThread.setDaemon(true);
        say("phase 3     backlog consumed; live traffic while the stream runs: %s", GenerateCommand.describe(live));
        long liveStart = System.nanoTime();
        liveThread.start();
        List<GenerationReport> heldBackReports = null;
        while (liveThread.isAlive()) {
            liveThread.join(500);
            failIfStopped(query);
            StreamProgress newest = lastBatch.get();
            if (heldBackReports == null && System.nanoTime() - liveStart >= liveSeconds * 500_000_000L
                    && newest != null && newest.batchId() > lastBacklogBatch) {
                heldBackReports = sendHeldBack(backlog, newest, System.nanoTime() - liveStart, heldBackSent);
            }
        }
        checkInterrupted();
        if (liveError.get() != null) {
            query.stop();
            throw new IllegalStateException("live traffic failed: " + Errors.withCauses(liveError.get()), liveError.get());
        }
        if (heldBackReports == null) {
            // A slow machine: the live traffic is over before the watermark has passed the backlog.
            StreamProgress newest = awaitBatchAfter(query, lastBatch, lastBacklogBatch);
            heldBackReports = sendHeldBack(backlog, newest, System.nanoTime() - liveStart, heldBackSent);
        }
        GenerationReport liveDone = liveReport.get();
        long heldBackTotal = heldBackReports.stream().mapToLong(GenerationReport::messages).sum();
        long produced = backlogReport.messages() + liveDone.messages() + heldBackTotal;
        say("            live traffic done: %s messages in %s; waiting for the stream to consume all %s ...",
                Formats.count(liveDone.messages()), Formats.duration(liveDone.elapsed()), Formats.count(produced));

        long inTopic;
        try (KafkaTopics kafka = new KafkaTopics(bootstrap, config.kafkaOptions(), Duration.ofSeconds(10))) {
            Map<Integer, Long> end = kafka.endOffsets(config.topic());
            inTopic = kafka.records(config.topic());
            awaitConsumed(query, config, end);
        }
        GracefulStop.stopBetweenBatches(query, StreamCommand.STOP_PATIENCE);
        job.close();
        SparkShutdown.unregister(sparkHook);
        runningQuery = null;
        checkInterrupted();
        say("stream      stopped: every record of the topic is committed");
        return new Streamed(liveDone, heldBackTotal, produced, inTopic);
    }

    /** The days reconcile recomputed, or why it failed (null when it did not). */
    private record Reconciled(ReconcileResult result, String failure) {
    }

    /** The batch layer: the closed days recomputed exactly from raw_events, late records folded in. */
    private Reconciled reconcile(SparkSession spark, TidemarkConfig config, List<LocalDate> closed) {
        if (closed.isEmpty()) {
            say("reconcile   no closed day yet: nothing to reconcile");
            return new Reconciled(null, null);
        }
        say("reconcile   recomputing the closed days %s from raw_events ...", Formats.days(closed));
        try (PrintStream ps = new PrintStream(new LineOutputStream(out()), true, StandardCharsets.UTF_8)) {
            return new Reconciled(new ReconcileJob(spark, config, ps).run(DaySelection.range(closed.get(0), closed.get(closed.size() - 1)), false),
                    null);
        } catch (RuntimeException e) {
            String failure = Errors.withCauses(e);
            say("reconcile   FAILED: %s", failure);
            return new Reconciled(null, failure);
        }
    }

    private void validate() {
        if (!storage.equals("local") && !storage.equals("s3")) {
            throw new UserError("--storage must be local or s3, got '" + storage + "'");
        }
        if (liveSeconds < 1) {
            throw new UserError("--live-seconds must be at least 1, got " + liveSeconds);
        }
        if (!(rate > 0)) {
            throw new UserError("--rate must be > 0, got " + rate);
        }
        if (backlogEvents < 1) {
            throw new UserError("--backlog-events must be at least 1, got " + backlogEvents);
        }
        if (!(backlogHours > 0) || backlogHours > 24 * 365) {
            throw new UserError("--backlog-hours must be > 0 and at most a year of hours, got " + backlogHours);
        }
        if (partitions < 1) {
            throw new UserError("--partitions must be at least 1, got " + partitions);
        }
        if (!(offlineShare >= 0 && offlineShare <= 1)) {
            throw new UserError("--offline-share must be between 0 and 1, got " + offlineShare);
        }
    }

    TrafficSpec backlogSpec(String topic, Instant now, TrafficProfile profile) {
        double spanSeconds = backlogHours * 3600;
        return UserError.check(() -> TrafficSpec.builder()
                .profile(profile)
                .topic(topic)
                .ingestMode(IngestMode.BACKLOG)
                .count(backlogEvents)
                .ratePerSecond(0)
                .eventClockStart(now.minusMillis((long) (spanSeconds * 1000)).truncatedTo(ChronoUnit.SECONDS))
                .eventsPerSecondOfEventTime(backlogEvents / spanSeconds)
                .lateFraction(0.01)
                .invalidFraction(0.005)
                .seed(seed)
                .build());
    }

    TrafficSpec liveSpec(String topic, TrafficProfile profile) {
        return UserError.check(() -> TrafficSpec.builder()
                .profile(profile)
                .topic(topic)
                .ingestMode(IngestMode.LIVE)
                .ratePerSecond(rate)
                .duration(Duration.ofSeconds(liveSeconds))
                .count(null)
                .lateFraction(0.01)
                .invalidFraction(0.005)
                .seed(seed + 1)
                .build());
    }

    /** Wipes the demo directory (only one an earlier demo made) unless --keep, and marks it as ours. */
    private void prepare(Path home, Path brokerDir) throws IOException {
        if (Files.exists(home) && !Files.isDirectory(home)) {
            throw new UserError("--dir " + dir + " exists and is not a directory");
        }
        boolean exists = Files.isDirectory(home);
        boolean empty = !exists || isEmpty(home);
        if (exists && !empty && !Files.exists(home.resolve(MARKER))) {
            throw new UserError("--dir " + dir + " is not empty and was not made by 'tidemark demo' (no " + MARKER
                    + " file); choose another --dir or empty it yourself");
        }
        if (exists && !empty && !keep) {
            if (LocalKafkaBroker.stopRunning(brokerDir)) {
                say("broker      stopped the broker an earlier demo left running in %s", show(brokerDir));
            }
            say("wiping      %s (from an earlier demo; --keep keeps it)", show(home));
            deleteTree(home);
        } else if (exists && !empty) {
            say("keeping     %s (--keep): the new records add to the earlier ones", show(home));
        }
        Files.createDirectories(home);
        Files.writeString(home.resolve(MARKER), "made by tidemark demo at " + Instant.now() + "; 'tidemark demo' wipes this directory\n");
    }

    private static boolean isEmpty(Path d) throws IOException {
        try (var s = Files.list(d)) {
            return s.findAny().isEmpty();
        }
    }

    private static void deleteTree(Path root) throws IOException {
        Files.walkFileTree(root, new SimpleFileVisitor<>() {
            @Override
            public FileVisitResult visitFile(Path file, BasicFileAttributes attrs) throws IOException {
                Files.delete(file);
                return FileVisitResult.CONTINUE;
            }

            @Override
            public FileVisitResult postVisitDirectory(Path d, IOException e) throws IOException {
                if (e != null) {
                    throw e;
                }
                Files.delete(d);
                return FileVisitResult.CONTINUE;
            }
        });
    }

    private void checkInterrupted() {
        if (stop.requested()) {
            throw new Interrupted("interrupted; the tables so far stay in " + show(dir.toAbsolutePath().normalize().resolve("lakehouse"))
                    + (keepBroker ? "" : ", the broker is stopped"));
        }
    }

    private void failIfStopped(StreamingQuery query) {
        checkInterrupted();
        if (!query.isActive()) {
            throw new IllegalStateException("the stream stopped"
                    + (query.exception().isDefined() ? ": " + Errors.withCauses(query.exception().get()) : ""),
                    query.exception().isDefined() ? query.exception().get() : null);
        }
    }

    /** Waits until a batch after {@code batchId} has run. */
    private StreamProgress awaitBatchAfter(StreamingQuery query, AtomicReference<StreamProgress> lastBatch, long batchId) throws InterruptedException {
        long since = System.nanoTime();
        while (true) {
            failIfStopped(query);
            StreamProgress newest = lastBatch.get();
            if (newest != null && newest.batchId() > batchId) {
                return newest;
            }
            if (System.nanoTime() - since > STALL_TIMEOUT.toNanos()) {
                throw new IllegalStateException("the stream ran no batch after batch " + batchId + " for " + Formats.duration(STALL_TIMEOUT));
            }
            Thread.sleep(200);
        }
    }

    /** Waits until the checkpoint has committed every partition up to its end offset. */
    private void awaitConsumed(StreamingQuery query, TidemarkConfig config, Map<Integer, Long> end) throws InterruptedException {
        long lastTotal = -1;
        long lastChange = System.nanoTime();
        while (true) {
            failIfStopped(query);
            Map<Integer, Long> done = StreamCheckpoint.read(config.checkpointUri())
                    .map(c -> c.topic(config.topic())).orElse(Map.of());
            boolean all = end.entrySet().stream().allMatch(e -> done.getOrDefault(e.getKey(), 0L) >= e.getValue());
            if (all) {
                return;
            }
            long total = done.values().stream().mapToLong(Long::longValue).sum();
            if (total != lastTotal) {
                lastTotal = total;
                lastChange = System.nanoTime();
            } else if (System.nanoTime() - lastChange > STALL_TIMEOUT.toNanos()) {
                throw new IllegalStateException("the stream consumed nothing for " + Formats.duration(STALL_TIMEOUT)
                        + "; committed offsets " + done + ", topic end offsets " + end);
            }
            Thread.sleep(500);
        }
    }

    private void summary(long elapsedNanos, GenerationReport backlog, GenerationReport live, long heldBack, long produced, long inTopic,
                         List<LocalDate> dirtyBeforeReconcile, LakehouseFigures f, Map<LocalDate, LateOfDay> lateByDay,
                         ReconcileResult reconciled, String reconcileFailure, ConservationCheck.Report report,
                         Lakehouse lakehouse, TidemarkConfig config, Path home) {
        say("");
        say("== tidemark demo: summary (%s) ==", Formats.duration(elapsedNanos / 1_000_000));
        TrafficProfile profile = backlog.profile();
        Map<MessageKind, Long> kinds = new LinkedHashMap<>();
        for (MessageKind k : profile.kinds()) {
            kinds.put(k, backlog.count(k) + live.count(k));
        }
        say("produced     %s messages: backlog %s + live %s + held back by offline devices %s%s", Formats.count(produced),
                Formats.count(backlog.messages()), Formats.count(live.messages()), Formats.count(heldBack),
                inTopic == produced ? "" : "; the topic holds " + Formats.count(inTopic) + " (--keep: earlier runs too)");
        say("  valid      %s: on time %s, generated late %s (20-60 min behind), held back %s (hours behind: days already closed)",
                Formats.count(kinds.get(profile.onTime()) + kinds.get(profile.late()) + heldBack), Formats.count(kinds.get(profile.onTime())),
                Formats.count(kinds.get(profile.late())), Formats.count(heldBack));
        StringJoiner invalid = new StringJoiner(", ");
        long invalidTotal = 0;
        for (Map.Entry<MessageKind, Long> e : kinds.entrySet()) {
            if (!e.getKey().isValid() && e.getValue() > 0) {
                invalid.add(e.getKey().name().toLowerCase(Locale.ROOT) + " " + Formats.count(e.getValue()));
                invalidTotal += e.getValue();
            }
        }
        say("  invalid    %s: %s", Formats.count(invalidTotal), invalid);
        say("tables       raw_events %s (late %s), late_events %s, dead_letter %s, %s %s rows (%s final)",
                Formats.count(f.rawEvents()), Formats.count(f.rawLate()), Formats.count(f.lateEvents()), Formats.count(f.deadLetters()),
                String.join(" + ", lakehouse.kpiTables().stream().map(Table::tableName).toList()), Formats.count(f.kpiRows()),
                Formats.count(f.kpiFinalRows()));
        say("  late       %s records arrived after their window had closed: kept in raw_events and late_events, not in the streaming KPIs",
                Formats.count(f.rawLate()));
        StringJoiner perDay = new StringJoiner(", ");
        lateByDay.forEach((day, l) -> perDay.add(day + " " + Formats.count(l.late())
                + (l.afterDayClosed() > 0 ? " (" + (l.afterDayClosed() == l.late() ? "all" : Formats.count(l.afterDayClosed()))
                        + " after the day had closed)" : "")));
        say("  late by day %s", lateByDay.isEmpty() ? "none" : perDay.toString());
        say("             (the generator delayed %s records by 20-60 min and offline devices sent %s records of the closed days; "
                        + "in the backlog, read %s at a time, the watermark had not passed most of the generator's late ones)",
                Formats.count(kinds.get(profile.late())), Formats.count(heldBack), Formats.count(config.maxOffsetsPerTrigger()));
        f.closingWatermark().ifPresent(wm -> say("watermark    %s; closed days (end <= watermark): %s", Formats.instant(wm),
                Formats.days(f.closedDays())));
        if (reconcileFailure != null) {
            say("reconcile    FAILED: %s", reconcileFailure);
        } else if (reconciled == null || reconciled.days().isEmpty()) {
            say("reconcile    no closed day to reconcile");
        } else {
            for (DayOutcome d : reconciled.days()) {
                if (d.status() == DayOutcome.Status.NO_DATA) {
                    say("reconcile    %s: no data", d.day());
                    continue;
                }
                say("reconcile    %s replaced by the truth (source = batch): %s windows, %s changed (%s late folded in); %s",
                        d.day(), Formats.count(d.windows()), Formats.count(d.windowsChanged()), Formats.count(d.lateRecords()),
                        String.join(", ", d.measures().stream().map(m -> String.format(Locale.ROOT, "%s %s -> %s (%s%s)", d.label(m),
                                ReconcileResult.value(m.stream()), ReconcileResult.value(m.batch()), m.estimate() ? "estimate, " : "",
                                ReconcileResult.percent(m.driftRel()))).toList()));
            }
            say("             run %s; details: ./tidemark sql --set lakehouse=%s \"SELECT * FROM reconcile_report WHERE row_kind = 'summary'\"",
                    reconciled.runId(), location(lakehouse.root()));
        }
        List<LocalDate> dirty = f.dirtyDays();
        say("dirty days   before reconcile %s; now %s%s", Formats.days(dirtyBeforeReconcile), Formats.days(dirty),
                dirty.isEmpty() && dirtyBeforeReconcile.isEmpty() ? "" : " (closed days with late records not yet in their KPIs)");
        for (String line : report.summary().split("\n")) {
            say("conservation %s", line.replace("conservation: ", ""));
        }
        String lh = location(lakehouse.root());
        String set = "--set lakehouse=" + lh;
        say("");
        say("The tables stay in %s. Try:", lh);
        if (s3Server != null) {
            // where the server is, for the commands; S3A takes the credentials (the local server accepts any) from the AWS variables
            say("  (with the S3 server serving them again: %s &", s3RunCommand(s3Server));
            say("   export AWS_ACCESS_KEY_ID=demo AWS_SECRET_ACCESS_KEY=demo TIDEMARK_JAVA_OPTS=\"%s\")", String.join(" ",
                    LocalS3Server.asSpark(s3Server.endpointSettings()).entrySet().stream().map(e -> "-D" + e.getKey() + "=" + e.getValue()).toList()));
        }
        say("  ./tidemark sql %s \"SELECT event_date, count(*) AS records, count_if(is_late) AS late FROM raw_events GROUP BY 1 ORDER BY 1\"", set);
        for (Pipeline.KpiTable t : lakehouse.pipeline().tables()) {
            List<String> columns = new ArrayList<>(List.of("window_start"));
            t.dimensions().forEach(d -> columns.add(d.name()));
            t.measures().forEach(m -> columns.add(m.name()));
            columns.add("is_final");
            say("  ./tidemark sql %s \"SELECT %s FROM %s ORDER BY window_start DESC, %s DESC LIMIT 10\"", set, String.join(", ", columns), t.name(),
                    t.recordCount().orElseThrow().name());
        }
        say("  ./tidemark sql %s \"SELECT event_date, count(*) AS late, round(avg(late_by_ms) / 60000, 1) AS avg_late_min FROM late_events GROUP BY 1\"", set);
        say("  ./tidemark sql %s \"SELECT event_date, kpi, measure, stream_value, batch_value, drift_rel, over_threshold FROM reconcile_report "
                + "WHERE row_kind = 'summary' ORDER BY event_date, kpi, measure\"", set);
        say("  ./tidemark sql %s \"SELECT reason, count(*) FROM dead_letter GROUP BY 1 ORDER BY 2 DESC\"", set);
        say("  ./tidemark status %s --set stream.checkpoint=%s%s", set, location(config.checkpointUri()),
                keepBroker ? " --set kafka.bootstrap-servers=" + config.bootstrapServers() : "");
        say("");
        if (reconcileFailure == null) {
            for (String line : story(reconciled, lateByDay, heldBack)) {
                say("%s", line);
            }
        }
        say(report.holds() ? "conservation HOLDS: every record is in exactly one place" : "conservation VIOLATED: see the lines above");
    }

    /** The records that devices offline for hours send once they reconnect: those of one closed day. */
    record HeldBack(LocalDate day, TrafficSpec spec) {
    }

    /**
     * What devices that were offline for hours send when they reconnect during the live traffic: for
     * each day of the backlog that the stream has {@code closed}, {@code share} of the backlog's records of that day
     * (at least {@link #MIN_HELD_BACK_PER_DAY}), their event times spread evenly over the part of the
     * day the backlog's event clock covers. The backlog's own late records reach up to
     * {@code lateDelayMax} before its event clock starts: a day that only they reach is a closed day
     * with data like any other, and gets the minimum, spread over the part of it they reach.
     * Sent after that watermark is in force, every one of them is late.
     * Deterministic: an explicit event clock, no out-of-order spread, nothing late or invalid by the
     * generator's own rules.
     */
    static List<HeldBack> heldBackSpecs(TrafficSpec backlog, ClosedDays closed, double share, long seed) {
        List<HeldBack> out = new ArrayList<>();
        if (!(share > 0) || backlog.count() == null || backlog.eventClockStart() == null) {
            return out;
        }
        long spanMs = backlog.backlogSpan().toMillis();
        Instant clockStart = backlog.eventClockStart();
        Instant end = clockStart.plusMillis(spanMs);
        Instant dataStart = clockStart.minus(backlog.lateFraction() > 0 ? backlog.lateDelayMax() : backlog.outOfOrderSpread());
        for (LocalDate day = LocalDate.ofInstant(dataStart, ZoneOffset.UTC); ; day = day.plusDays(1)) {
            Instant dayStart = day.atStartOfDay(ZoneOffset.UTC).toInstant();
            Instant dayEnd = Watermark.endOf(day);
            if (!closed.isClosed(day) || !dayStart.isBefore(end)) {
                break;
            }
            boolean clockCovers = dayEnd.isAfter(clockStart);
            Instant firstData = clockCovers ? clockStart : dataStart;
            Instant from = dayStart.isAfter(firstData) ? dayStart : firstData;
            Instant to = dayEnd.isBefore(end) ? dayEnd : end;
            long ms = Duration.between(from, to).toMillis();
            long count = clockCovers ? Math.max(MIN_HELD_BACK_PER_DAY, Math.round(share * backlog.count() * ms / spanMs)) : MIN_HELD_BACK_PER_DAY;
            out.add(new HeldBack(day, UserError.check(() -> TrafficSpec.builder()
                    .profile(backlog.profile())
                    .merchants(backlog.merchants())
                    .users(backlog.users())
                    .topic(backlog.topic())
                    .ingestMode(IngestMode.BACKLOG)
                    .count(count)
                    .ratePerSecond(0)
                    .eventClockStart(from)
                    .eventsPerSecondOfEventTime(count * 1000.0 / ms)
                    .cells(backlog.cells())
                    .subscribers(backlog.subscribers())
                    .outOfOrderSpread(Duration.ZERO)
                    .lateFraction(0)
                    .invalidFraction(0)
                    .seed(seed + 2 + out.size())
                    .build())));
        }
        return out;
    }

    /** Sends the held-back records of the days closed by the watermark in force after {@code newest}. */
    private List<GenerationReport> sendHeldBack(TrafficSpec backlog, StreamProgress newest, long sinceLiveStartNanos, AtomicLong sent) {
        Instant watermark = newest.nextWatermark();
        List<HeldBack> heldBack = heldBackSpecs(backlog, newest.closedDays(), offlineShare, seed);
        if (heldBack.isEmpty()) {
            return List.of();
        }
        StringJoiner days = new StringJoiner(", ");
        long total = 0;
        for (HeldBack h : heldBack) {
            days.add(h.day() + " " + Formats.count(h.spec().count()));
            total += h.spec().count();
        }
        say("            %s in: watermark %s, %s %s closed; devices that were offline for hours reconnect and send "
                        + "%s records of %s (%s)",
                Formats.duration(sinceLiveStartNanos / 1_000_000), Formats.instant(watermark),
                Formats.days(heldBack.stream().map(HeldBack::day).toList()), heldBack.size() == 1 ? "is" : "are",
                Formats.count(total), heldBack.size() == 1 ? "that day" : "those days", days);
        List<GenerationReport> reports = new ArrayList<>();
        for (HeldBack h : heldBack) {
            checkInterrupted();
            GenerationReport r = heldBackProducer.produce(h.spec(), null);
            reports.add(r);
            sent.addAndGet(r.messages());
        }
        return reports;
    }

    /** A day's records in late_events, and how many of them arrived once the watermark had passed the day's end. */
    record LateOfDay(long late, long afterDayClosed) {
    }

    static Map<LocalDate, LateOfDay> lateByDay(SparkSession spark, Lakehouse lakehouse) {
        Map<LocalDate, LateOfDay> out = new TreeMap<>();
        for (Row r : lakehouse.read(spark, Table.LATE_EVENTS).groupBy(col("event_date"))
                .agg(count(lit(1)), count_if(Watermark.closesDay(col("watermark"), col("event_date")))).collectAsList()) {
            out.put(r.getDate(0).toLocalDate(), new LateOfDay(r.getLong(1), r.getLong(2)));
        }
        return out;
    }

    /**
     * The demo's closing lines: which records reached the closed days after they had closed, and what
     * reconcile made of them, every figure from late_events and the reconcile run.
     */
    /** "the largest drift: total_gb +1.85% (stream 40.534, truth 41.3)", of the measures the stream keeps exactly. */
    static String largestDrift(DayOutcome d) {
        return d.measures().stream().filter(m -> !m.estimate())
                .max(Comparator.comparingDouble(m -> m.driftRel() == null ? 0 : Math.abs(m.driftRel())))
                .map(m -> String.format(Locale.ROOT, "the largest drift: %s %s (stream %s, truth %s)", d.label(m),
                        ReconcileResult.percent(m.driftRel()), ReconcileResult.value(m.stream()), ReconcileResult.value(m.batch())))
                .orElse("no measure kept exactly");
    }

    static List<String> story(ReconcileResult reconciled, Map<LocalDate, LateOfDay> lateByDay, long heldBack) {
        List<String> lines = new ArrayList<>();
        if (reconciled == null) {
            return lines;
        }
        List<DayOutcome> days = reconciled.days().stream().filter(d -> d.status() != DayOutcome.Status.NO_DATA).toList();
        if (days.isEmpty()) {
            return lines;
        }
        StringJoiner arrived = new StringJoiner(" and ");
        for (DayOutcome d : days) {
            long n = lateByDay.getOrDefault(d.day(), new LateOfDay(0, 0)).afterDayClosed();
            if (n > 0) {
                arrived.add(Formats.count(n) + (arrived.length() == 0 ? " records of " : " of ") + d.day());
            }
        }
        if (arrived.length() == 0) {
            lines.add("No record reached " + Formats.days(days.stream().map(DayOutcome::day).toList())
                    + " after the day had closed, so reconcile found the streaming KPIs exact ("
                    + Formats.count(days.stream().mapToLong(DayOutcome::windowsChanged).sum()) + " windows changed).");
            return lines;
        }
        lines.add("What happened: " + arrived + " arrived after the day had closed"
                + (heldBack > 0 ? ", sent by devices that had been offline for hours." : "."));
        lines.add("The stream could not count them any more (those KPI windows were final) and kept them in late_events; "
                + "reconcile recomputed the closed days from raw_events and folded them in:");
        List<String> outcomes = days.stream().map(d -> d.windowsChanged() == 0
                ? d.day() + " needed no change (" + Formats.count(d.lateRecords()) + " late records)"
                : String.format(Locale.ROOT, "%s changed in %s of %s windows (%s late records folded in), %s",
                        d.day(), Formats.count(d.windowsChanged()), Formats.count(d.windows()), Formats.count(d.lateRecords()),
                        largestDrift(d))).toList();
        if (outcomes.size() <= 2) {
            outcomes.forEach(o -> lines.add("  " + o));
        } else {
            lines.add("  " + String.join("; ", outcomes));
        }
        return lines;
    }

    /**
     * With --storage s3: installs the repository's S3 server if need be (ops/s3-server install, a venv of its own)
     * and starts it on a free loopback port over DIR/s3, with the demo's bucket. Stopped at the end, or with this JVM.
     */
    private LocalS3Server startS3(Path home) throws IOException, InterruptedException {
        String where = System.getProperty("tidemark.s3-server", "");
        Path script = where.isEmpty() ? null : Path.of(where);
        if (script == null || !Files.isExecutable(script)) {
            throw new UserError("--storage s3 runs the repository's local S3 server (ops/s3-server), which ./tidemark names to the JVM; "
                    + "run the demo with ./tidemark from a clone of the repository, or use --storage local");
        }
        say("s3          installing or checking the local S3 server (%s install) ...", show(script));
        LocalS3Server server;
        try {
            server = LocalS3Server.installAndStart(script, 0, S3_BUCKET, home.resolve("s3"));
        } catch (IOException e) {
            throw new UserError(e.getMessage());
        }
        say("s3          running at %s (bucket %s; objects in %s): lakehouse and checkpoint on S3, written through Hadoop's S3A",
                server.endpoint(), S3_BUCKET, show(home.resolve("s3")));
        return server;
    }

    /** The command that serves the demo's S3 objects again after the demo stopped the server, with paths as the user types them. */
    private static String s3RunCommand(LocalS3Server server) {
        return String.join(" ", server.runCommand().stream().map(a -> a.startsWith("/") ? show(Path.of(a)) : a).toList());
    }

    /** A lakehouse or checkpoint location as the user would type it: a URI as it is, a local path relative to here. */
    static String location(String uri) {
        return uri.contains("://") && !uri.startsWith("file:") ? uri : show(Path.of(uri.startsWith("file:") ? URI.create(uri).getPath() : uri));
    }

    /** A path as the user would type it: relative to the working directory when under it. */
    static String show(Path p) {
        Path cwd = Path.of("").toAbsolutePath();
        Path abs = p.toAbsolutePath().normalize();
        return abs.startsWith(cwd) && !abs.equals(cwd) ? "./" + cwd.relativize(abs) : abs.toString();
    }
}
