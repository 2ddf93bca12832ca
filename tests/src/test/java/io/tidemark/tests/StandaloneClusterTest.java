package io.tidemark.tests;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.BooleanSupplier;

import org.junit.jupiter.api.Test;

import com.fasterxml.jackson.databind.JsonNode;

import io.tidemark.generate.GenerationReport;
import io.tidemark.generate.IngestMode;
import io.tidemark.generate.KafkaTrafficProducer;
import io.tidemark.generate.TrafficSpec;
import io.tidemark.lakehouse.ClosedDays;
import io.tidemark.lakehouse.Lakehouse;
import io.tidemark.lakehouse.Lakehouse.Table;
import io.tidemark.lakehouse.TidemarkConfig;
import io.tidemark.operations.ConservationCheck;
import io.tidemark.reconcile.DaySelection;
import io.tidemark.reconcile.ReconcileJob;

/**
 * Both jobs on a real Spark standalone cluster (ops/spark-cluster: a master and two workers, each its
 * own JVM), submitted with spark-submit and configured through {@code --conf spark.tidemark.*}, with
 * the lakehouse and the checkpoint on a real S3 server ({@code --conf spark.hadoop.fs.s3a.*}). The
 * stream drains a topic while two of its executor JVMs are SIGKILLed in the middle of a batch (a task
 * running on each) and the workers start new ones; a reconcile submitted to the same cluster while
 * the stream runs replaces a closed day. Afterwards conservation holds exactly, with no duplicate
 * and no loss, and every reconciled day equals plain SQL over the raw log.
 */
class StandaloneClusterTest extends OnSharedInfrastructure {
    @Test
    void bothJobsOnTheClusterSurviveExecutorKillsExactly() throws Exception {
        Path dir = infra.newDir("cluster");
        String topic = "cluster-" + dir.getFileName();
        infra.broker.createTopic(topic, 2);
        // 6,000 records from midnight (UTC) two days ago until now, 750 per batch (6 to 9 hours of event time
        // each, by the hour the test runs): days close while the stream drains the backlog. The day reconciled is
        // the first, a whole day of records, whatever the hour; the day before it holds only late records. Late
        // records come 10 to 20 hours (at least one whole batch) after their time, so they are late whatever the
        // batch boundaries, and some of the reconciled day's come before the reconcile reads it, some after. The
        // event clock ends now, so the generator's future event times are ahead of their Kafka timestamps.
        long count = 6_000;
        LocalDate day = LocalDate.now(ZoneOffset.UTC).minusDays(2);
        Instant start = day.atStartOfDay(ZoneOffset.UTC).toInstant();
        double spanSeconds = Duration.between(start, Instant.now()).toSeconds();
        TrafficSpec spec = TrafficSpec.builder().topic(topic).count(count).ratePerSecond(0).ingestMode(IngestMode.BACKLOG)
                .eventClockStart(start)
                .eventsPerSecondOfEventTime(count / spanSeconds)
                .cells(20).subscribers(500).lateFraction(0.03).lateDelay(Duration.ofHours(10), Duration.ofHours(20))
                .invalidFraction(0.01).seed(17).build();
        GenerationReport produced = new KafkaTrafficProducer(infra.broker.bootstrapServers(), Map.of()).produce(spec, p -> { });
        // the lakehouse and the checkpoint on a real S3 server: the jobs' jar carries S3A, the cluster gets its settings as --conf
        S3Server s3 = S3Server.start(dir.resolve("s3"));
        s3.configure(infra.spark);
        org.apache.hadoop.conf.Configuration hadoop = infra.spark.sparkContext().hadoopConfiguration();
        TidemarkConfig config = infra.config(dir, topic).set(TidemarkConfig.Key.LAKEHOUSE, s3.uri("lakehouse"))
                .set(TidemarkConfig.Key.CHECKPOINT, s3.uri("checkpoints/stream")).build();
        Lakehouse lakehouse = Lakehouse.of(config);
        Map<String, String> settings = new LinkedHashMap<>();
        settings.put("kafka.bootstrap-servers", config.bootstrapServers());
        settings.put("topic", topic);
        settings.put("lakehouse", config.lakehouseUri());
        settings.put("stream.checkpoint", config.checkpointUri());
        settings.put("metrics.port", "0");
        settings.put("stream.trigger", "0");
        settings.put("stream.max-offsets-per-trigger", "750");

        try (s3; StandaloneCluster cluster = StandaloneCluster.start(dir.resolve("cluster"))) {
            StandaloneCluster.Result status = cluster.status();
            assertThat(status.code()).as(status.output()).isZero();
            assertThat(status.output()).contains("master   " + cluster.masterUrl).contains("workers  2 alive of 2 started; cores 0 used of 4");

            int streamUi = PrometheusServer.freePort();
            JobProcess stream = cluster.submit("io.tidemark.stream.StreamingJob", 2, streamUi, settings, s3.sparkSettings(), List.of(),
                    dir.resolve("stream.log"));
            String progressLog = config.lakehouseUri() + "/stream_progress/_delta_log";
            awaitTrue("the stream's first batch", 300, stream, 200, () -> TableChecks.commits(progressLog, hadoop) >= 2);
            String app = StandaloneCluster.appId(streamUi);

            // Two executor JVMs SIGKILLed, each while it runs a task of a batch, in different batches.
            List<String> killed = new ArrayList<>();
            for (int k = 0; k < 2; k++) {
                long progressBefore = TableChecks.commits(progressLog, hadoop);
                Set<String> known = new TreeSet<>(StandaloneCluster.executors(streamUi).keySet());
                String[] victim = new String[1];
                awaitTrue("an executor running a task", 120, stream, 20, () -> {
                    try {
                        for (JsonNode e : StandaloneCluster.executors(streamUi).values()) {
                            if (e.get("isActive").asBoolean() && e.get("activeTasks").asInt() > 0) {
                                Optional<Long> pid = StandaloneCluster.executorPid(app, e.get("id").asText());
                                if (pid.isPresent() && ProcessHandle.of(pid.get()).map(ProcessHandle::destroyForcibly).orElse(false)) {
                                    victim[0] = e.get("id").asText();
                                    return true;
                                }
                            }
                        }
                        return false;
                    } catch (Exception e) {
                        throw new IllegalStateException(e);
                    }
                });
                killed.add(victim[0]);
                // The worker sees its executor die and the master has it start a new one; the batch goes on.
                awaitTrue("a new executor after killing executor " + victim[0], 120, stream, () -> {
                    try {
                        return StandaloneCluster.executors(streamUi).entrySet().stream()
                                .anyMatch(e -> !known.contains(e.getKey()) && e.getValue().get("isActive").asBoolean());
                    } catch (Exception e) {
                        throw new IllegalStateException(e);
                    }
                });
                awaitTrue("a batch committed after kill " + (k + 1), 300, stream, 200, () -> TableChecks.commits(progressLog, hadoop) > progressBefore);
            }

            // A reconcile on the same cluster while the stream runs: the first day of the event clock, once it closes.
            awaitTrue("day " + day + " closed", 600, stream, () -> ClosedDays.load(infra.spark, lakehouse).isClosed(day));
            long progressAtSubmit = TableChecks.commits(progressLog, hadoop);
            JobProcess reconcile = cluster.submit("io.tidemark.reconcile.ReconcileJob", 2, PrometheusServer.freePort(),
                    Map.of("lakehouse", config.lakehouseUri()), s3.sparkSettings(), List.of("--from", day.toString(), "--to", day.toString()),
                    dir.resolve("reconcile.log"));
            assertThat(reconcile.await(600)).as("reconcile on the cluster\n%s", reconcile.tail()).isZero();
            assertThat(stream.process.isAlive()).as("the stream runs on while the reconcile does").isTrue();
            java.util.regex.Matcher folded = java.util.regex.Pattern.compile("reconcile " + day + " \\[1/1\\]: .*; ([\\d,]+) late folded in; replaced")
                    .matcher(String.join("\n", reconcile.lines()));
            assertThat(folded.find()).as("the reconcile's line for %s\n%s", day, reconcile.tail()).isTrue();
            long foldedIn = Long.parseLong(folded.group(1).replace(",", ""));
            assertThat(foldedIn).as("late records of %s the reconcile folded in", day).isPositive();
            long progressDuringReconcile = TableChecks.commits(progressLog, hadoop) - progressAtSubmit;

            awaitTrue("the stream draining the topic", 600, stream, () -> TableChecks.rowCounts(infra.spark, lakehouse,
                    List.of(Table.RAW_EVENTS, Table.DEAD_LETTER)).values().stream().mapToLong(Long::longValue).sum() == produced.messages());
            Map<String, JsonNode> executors = StandaloneCluster.executors(streamUi);
            stream.process.destroy(); // SIGTERM: the query stops after its running batch
            stream.await(120);

            // Two executors were lost with a signal's exit code and replaced: four in all for two slots.
            assertThat(executors).hasSizeGreaterThanOrEqualTo(4);
            for (String id : killed) {
                assertThat(executors.get(id).get("isActive").asBoolean()).isFalse();
                assertThat(executors.get(id).path("removeReason").asText()).as("executor %s", id).contains("137");
            }
            assertThat(String.join("\n", stream.lines())).as("a task was lost with the killed executors").contains("ExecutorLostFailure");
            // The cluster's --conf spark.sql.shuffle.partitions is what the stream ran with: Spark records it in each offset log entry.
            org.apache.hadoop.fs.Path firstOffsets = new org.apache.hadoop.fs.Path(config.checkpointUri() + "/offsets/0");
            String offsets;
            try (java.io.InputStream in = firstOffsets.getFileSystem(hadoop).open(firstOffsets)) {
                offsets = new String(in.readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
            }
            assertThat(offsets).contains("\"spark.sql.shuffle.partitions\":\"" + StandaloneCluster.SHUFFLE_PARTITIONS + "\"");

            // Late records that arrived after the reconcile read its day leave days dirty: fold them in (here, in
            // this JVM: what is tested on the cluster is the reconcile above) so every reconciled day can be checked.
            ReconcileJob local = new ReconcileJob(infra.spark, config);
            List<LocalDate> dirty = local.dirtyDays();
            if (!dirty.isEmpty()) {
                local.run(DaySelection.dirty(), false);
            }
            System.out.printf("cluster run: %d records, executors killed %s, %d batches committed during the reconcile of %s (%d late folded in), dirty afterwards %s%n",
                    produced.messages(), killed, progressDuringReconcile, day, foldedIn, dirty);

            ConservationCheck.Report report = ConservationCheck.check(infra.spark, lakehouse, produced.messages());
            assertThat(report.violations()).isEmpty();
            assertThat(report.duplicates()).isZero();
            assertThat(report.rawEvents()).isEqualTo(produced.valid());
            assertThat(report.deadLetters()).isEqualTo(produced.invalid());
            List<LocalDate> reconciled = infra.spark.sql("SELECT DISTINCT event_date FROM " + lakehouse.ref(Table.RECONCILE_REPORT) + " ORDER BY 1")
                    .collectAsList().stream().map(r -> r.getDate(0).toLocalDate()).toList();
            assertThat(reconciled).contains(day);
            assertThat(TableChecks.closedDaysAgainstPlainSql(infra.spark, lakehouse, reconciled)).isEmpty();
            assertThat(new ReconcileJob(infra.spark, config).dirtyDays()).isEmpty();
            cluster.close();
            assertThat(cluster.executorJvms()).as("executor JVMs left after ops/spark-cluster stop").isZero();
            assertThat(cluster.status().code()).isEqualTo(5);
        }
    }

    private static void awaitTrue(String what, long seconds, JobProcess job, BooleanSupplier condition) throws Exception {
        awaitTrue(what, seconds, job, 1000, condition);
    }

    private static void awaitTrue(String what, long seconds, JobProcess job, long pollMillis, BooleanSupplier condition) throws Exception {
        long deadline = System.currentTimeMillis() + seconds * 1000;
        while (!condition.getAsBoolean()) {
            if (!job.process.isAlive()) {
                throw new AssertionError("the job ended while waiting for " + what + "\n" + job.tail());
            }
            if (System.currentTimeMillis() > deadline) {
                throw new AssertionError("no " + what + " in " + seconds + " s\n" + job.tail());
            }
            Thread.sleep(pollMillis);
        }
    }

}
