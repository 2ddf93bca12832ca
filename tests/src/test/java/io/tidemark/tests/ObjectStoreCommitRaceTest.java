package io.tidemark.tests;

import static io.tidemark.tests.KafkaFixtures.event;
import static org.assertj.core.api.Assertions.assertThat;

import java.io.InputStream;
import java.security.MessageDigest;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDate;
import java.time.ZoneOffset;
import java.util.HexFormat;
import java.util.Random;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.stream.Collectors;

import org.apache.hadoop.conf.Configuration;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import io.tidemark.generate.GenerationReport;
import io.tidemark.generate.IngestMode;
import io.tidemark.generate.KafkaTrafficProducer;
import io.tidemark.generate.TrafficSpec;
import io.tidemark.lakehouse.ConditionalPutLogStore;
import io.tidemark.lakehouse.Lakehouse;
import io.tidemark.lakehouse.Lakehouse.Table;
import io.tidemark.lakehouse.TidemarkConfig;
import io.tidemark.operations.ConservationCheck;
import io.tidemark.reconcile.ReconcileJob;
import io.tidemark.stream.StreamingJob;
import io.tidemark.tests.KafkaFixtures.Message;

/**
 * The stream and reconcile, in two JVMs on one lakehouse on a real S3 server, forced onto the same
 * commit version of the KPI table again and again ({@link GatedLogStore}): with Tidemark's log store
 * every commit either was told had landed is in the log as written, no commit file was written twice
 * and the tables equal the truth; with Delta's default S3 store the same race loses a commit (the
 * negative control: the race test can fail). The server's conditional PUT, which the store relies on,
 * is probed first.
 */
class ObjectStoreCommitRaceTest extends OnSharedInfrastructure {
    private static final Path WORK = Path.of(System.getProperty("tidemark.test.work", "target/work")).toAbsolutePath()
            .resolve("commit-race-" + UUID.randomUUID().toString().substring(0, 8));
    private static S3Server s3;

    @BeforeAll
    static void startServer() throws Exception {
        s3 = S3Server.start(WORK.resolve("s3"));
        s3.configure(infra.spark);
    }

    @AfterAll
    static void stopServer() throws Exception {
        if (s3 != null) {
            s3.close();
        }
    }

    /** The probe: of 48 concurrent If-None-Match PUTs to one new key exactly one succeeds, 8 rounds in a row. */
    @Test
    void theServersConditionalPutIsAtomic() throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(48);
        try {
            for (int round = 0; round < 8; round++) {
                String key = "probe/" + UUID.randomUUID();
                List<CompletableFuture<Integer>> puts = new ArrayList<>();
                for (int i = 0; i < 48; i++) {
                    byte[] body = ("writer " + i).getBytes(StandardCharsets.UTF_8);
                    puts.add(CompletableFuture.supplyAsync(() -> call(() -> s3.request("PUT", key, body, Map.of("If-None-Match", "*"))), pool));
                }
                Map<Integer, Long> statuses = puts.stream().map(CompletableFuture::join).collect(Collectors.groupingBy(s -> s, TreeMap::new, Collectors.counting()));
                assertThat(statuses).as("round %d", round).isEqualTo(Map.of(200, 1L, 412, 47L));
                assertThat(s3.request("PUT", key, new byte[] {1}, Map.of("If-None-Match", "*"))).isEqualTo(412);
            }
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void theStreamAndReconcileRacingForEachVersionOfAKpiTableLoseNothingWithTidemarksLogStore() throws Exception {
        Contest c = contest("conditional", ConditionalPutLogStore.class.getName(), 4);
        // every commit either JVM was told had landed is in the log as it wrote it, and no commit file was written twice
        assertThat(c.written).as("commits written").isNotEmpty();
        assertThat(c.lost).isEmpty();
        assertThat(c.writtenTwice).isEmpty();
        // the race was real: the gate held reconcile's day replacements (4 days) and the stream's batch commits onto the
        // same versions, and in each race one of the two was refused and retried at the next version
        assertThat(c.races).as("races").isBetween(3L, 4L);
        assertThat(c.refused).isGreaterThanOrEqualTo(c.races);
        // the rows: every record in exactly one place, the reconciled days exact (source 'batch'), the stream's as recomputed
        Lakehouse lakehouse = Lakehouse.of(c.config);
        ConservationCheck.Report report = ConservationCheck.check(infra.spark, lakehouse, c.produced);
        assertThat(report.violations()).isEmpty();
        assertThat(report.duplicates()).isZero();
        assertThat(report.rawEvents()).isEqualTo(c.valid);
        assertThat(report.lateEvents()).as("late records").isPositive();
        assertThat(report.kpiRowsDiffering()).isZero();
        assertThat(TableChecks.closedDaysAgainstPlainSql(infra.spark, lakehouse, c.days)).isEmpty();
    }

    @Test
    void negativeControlDeltasDefaultS3StoreLosesACommitInTheSameRace() throws Exception {
        Contest c = contest("single-driver", "io.delta.storage.S3SingleDriverLogStore", 3);
        assertThat(c.races).as("races").isPositive();
        // a commit its writer was told had landed is not in the log: the other writer's file replaced it
        assertThat(c.lost).isNotEmpty();
        assertThat(c.writtenTwice).isNotEmpty();
    }

    /**
     * What a contest left: the settings, the days reconciled, the messages and valid records produced, the commits
     * to the KPI table's log that either JVM wrote ("path sha256"), those of them the log does not hold as written,
     * the commit files written twice, the refusals and the races the gate arranged.
     */
    private record Contest(TidemarkConfig config, List<LocalDate> days, long produced, long valid, List<String> written, List<String> lost,
                           List<String> writtenTwice, long refused, long races) {
    }

    /**
     * A stream in one JVM and reconcile in another on one lakehouse on the S3 server, with {@code store} as Delta's log
     * store under the gate. First a backlog of {@code closedDays} closed days (with late records) is drained; then, under
     * live traffic that makes the stream replace its open windows every batch, reconcile replaces those days, each
     * replacement forced onto the version of one of the stream's commits.
     */
    private Contest contest(String name, String store, int closedDays) throws Exception {
        Path dir = WORK.resolve(name);
        Path gate = dir.resolve("gate");
        Files.createDirectories(gate);
        String topic = "commit-race-" + name + "-" + WORK.getFileName();
        infra.broker.createTopic(topic, 2);
        LocalDate today = LocalDate.now(ZoneOffset.UTC);
        List<LocalDate> days = java.util.stream.IntStream.rangeClosed(2, closedDays + 1).mapToObj(today::minusDays).sorted().toList();
        Instant from = days.get(0).atStartOfDay(ZoneOffset.UTC).toInstant();
        Instant to = today.minusDays(1).atStartOfDay(ZoneOffset.UTC).toInstant().plus(Duration.ofHours(2));
        // 600 records a day, 500 a batch (about 20 hours of event time): the watermark a batch uses trails by two
        // batches, so late records come 45 to 60 hours after their time
        long count = 600L * closedDays + 50;
        TrafficSpec spec = TrafficSpec.builder().topic(topic).count(count).ratePerSecond(0).ingestMode(IngestMode.BACKLOG)
                .eventClockStart(from).eventsPerSecondOfEventTime(count / (double) Duration.between(from, to).toSeconds())
                .cells(10).subscribers(300).lateFraction(0.03).lateDelay(Duration.ofHours(45), Duration.ofHours(60))
                .invalidFraction(0).seed(11).build();
        GenerationReport backlog = new KafkaTrafficProducer(infra.broker.bootstrapServers(), Map.of()).produce(spec, p -> { });

        TidemarkConfig config = infra.config(dir, topic).set(TidemarkConfig.Key.LAKEHOUSE, s3.uri(name + "/lakehouse"))
                .set(TidemarkConfig.Key.CHECKPOINT, s3.uri(name + "/checkpoint")).build();
        List<String> settings = List.of("kafka.bootstrap-servers=" + config.bootstrapServers(), "topic=" + topic,
                "lakehouse=" + config.lakehouseUri(), "stream.checkpoint=" + config.checkpointUri(), "metrics.port=0",
                "storage.trusted-log-stores=" + GatedLogStore.class.getName());
        Map<String, String> props = new HashMap<>(s3.sparkSettings());
        props.put("spark.delta.logStore.s3a.impl", GatedLogStore.class.getName());
        props.put("spark.hadoop.tidemark.test.gate.delegate", store);
        props.put("spark.hadoop.tidemark.test.gate.dir", gate.toString());
        props.put("spark.hadoop.tidemark.test.gate.table", "kpi_5m");
        Map<String, String> streamProps = new HashMap<>(props);
        streamProps.put("spark.hadoop.tidemark.test.gate.writer", "stream");
        streamProps.put("spark.hadoop.tidemark.test.gate.leader", "true");
        JobProcess stream = JobProcess.start(StreamingJob.class,
                concat(settings, List.of("stream.max-offsets-per-trigger=500", "stream.trigger=1 second")), streamProps, dir.resolve("stream.log"));
        Lakehouse lakehouse = Lakehouse.of(config);
        awaitTrue("the backlog drained", 300, stream, () -> rawRecords(lakehouse) == backlog.valid());

        // live traffic: event times now, 20 records every 500 ms, so that every trigger has open windows to replace
        AtomicLong live = new AtomicLong();
        AtomicBoolean producing = new AtomicBoolean(true);
        AtomicReference<Throwable> producerFailure = new AtomicReference<>();
        Thread producer = new Thread(() -> {
            Random r = new Random(3);
            try {
                while (producing.get()) {
                    List<Message> group = new ArrayList<>();
                    Instant now = Instant.now();
                    for (int i = 0; i < 20; i++) {
                        group.add(new Message(event("s" + r.nextInt(300), "c" + r.nextInt(10), now.minusMillis(r.nextInt(2_000)).toString(),
                                r.nextInt(2_000) / 1000.0), now));
                    }
                    KafkaFixtures.send(infra.broker.bootstrapServers(), topic, r.nextInt(2), group);
                    live.addAndGet(group.size());
                    Thread.sleep(500);
                }
            } catch (Throwable t) {
                producerFailure.set(t);
            }
        }, "live-traffic");
        producer.start();
        try {
            Map<String, String> reconcileProps = new HashMap<>(props);
            reconcileProps.put("spark.hadoop.tidemark.test.gate.writer", "reconcile");
            JobProcess reconcile = JobProcess.start(ReconcileJob.class,
                    concat(List.of("--from", days.get(0).toString(), "--to", days.get(days.size() - 1).toString()), settings), reconcileProps,
                    dir.resolve("reconcile.log"));
            int code = reconcile.await(600);
            if (store.equals(ConditionalPutLogStore.class.getName())) {
                assertThat(code).as("reconcile\n%s", reconcile.tail()).isZero();
            }
        } finally {
            producing.set(false);
            producer.join();
        }
        assertThat(producerFailure.get()).isNull();
        long valid = backlog.valid() + live.get();
        boolean tidemarks = store.equals(ConditionalPutLogStore.class.getName());
        if (tidemarks) {
            assertThat(stream.process.isAlive()).as("the stream ran through the races\n%s", stream.tail()).isTrue();
        }
        if (tidemarks) { // every batch committed, the stream idle: stopping it interrupts nothing
            long messages = backlog.messages() + live.get();
            awaitTrue("the live traffic drained", 300, stream, () -> recordsIn(lakehouse) == messages);
        }
        stream.process.destroy();
        stream.await(120);

        Map<String, String> written = new TreeMap<>();
        Map<String, Long> writes = new HashMap<>();
        long refused = 0;
        for (String w : List.of("stream", "reconcile")) {
            for (String l : Files.readAllLines(gate.resolve("written." + w))) {
                String[] f = l.split(" ");
                if (f[1].equals("ok")) {
                    writes.merge(f[0], 1L, Long::sum);
                    written.put(f[0] + " " + w, f[2]);
                } else {
                    refused++;
                }
            }
        }
        List<String> lost = new ArrayList<>();
        for (Map.Entry<String, String> e : written.entrySet()) {
            String path = e.getKey().substring(0, e.getKey().indexOf(' '));
            if (!e.getValue().equals(sha256Of(path))) {
                lost.add(e.getKey());
            }
        }
        List<String> twice = writes.entrySet().stream().filter(e -> e.getValue() > 1).map(Map.Entry::getKey).sorted().toList();
        Path races = gate.resolve("races.reconcile");
        long raced = Files.exists(races) ? Files.readAllLines(races).size() : 0;
        System.out.printf("%s: %d commits written to kpi_5m's log, %d races, %d refused, %d lost, %d written twice%n", name, written.size(),
                raced, refused, lost.size(), twice.size());
        return new Contest(config, days, backlog.messages() + live.get(), valid, List.copyOf(written.keySet()), lost, twice, refused, raced);
    }

    /** The Kafka records the stream's committed batches took in. */
    private static long recordsIn(Lakehouse lakehouse) {
        try {
            return lakehouse.read(infra.spark, Table.STREAM_PROGRESS).selectExpr("sum(records_in)").first().getLong(0);
        } catch (Exception notYet) {
            return -1;
        }
    }

    private static long rawRecords(Lakehouse lakehouse) {
        try {
            return lakehouse.read(infra.spark, Table.RAW_EVENTS).count();
        } catch (Exception notYet) {
            return -1;
        }
    }

    private static void awaitTrue(String what, int seconds, JobProcess job, java.util.function.BooleanSupplier done) throws Exception {
        long deadline = System.currentTimeMillis() + seconds * 1000L;
        while (!done.getAsBoolean()) {
            assertThat(job.process.isAlive()).as("%s: the job ended\n%s", what, job.tail()).isTrue();
            assertThat(System.currentTimeMillis()).as("%s in %d s\n%s", what, seconds, job.tail()).isLessThan(deadline);
            Thread.sleep(1_000);
        }
    }

    /** The SHA-256 of a commit file's lines as the gate hashes them. */
    private static String sha256Of(String path) throws Exception {
        Configuration conf = new Configuration();
        s3.hadoopSettings().forEach(conf::set);
        org.apache.hadoop.fs.Path p = new org.apache.hadoop.fs.Path(path);
        try (InputStream in = p.getFileSystem(conf).open(p)) {
            String text = new String(in.readAllBytes(), StandardCharsets.UTF_8);
            List<String> lines = List.of(text.split("\n"));
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(String.join("\n", lines).getBytes(StandardCharsets.UTF_8)));
        }
    }

    @SafeVarargs
    private static List<String> concat(List<String>... parts) {
        List<String> out = new ArrayList<>();
        for (List<String> p : parts) {
            out.addAll(p);
        }
        return out;
    }

    private static <T> T call(Callable<T> c) {
        try {
            return c.call();
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }
}
