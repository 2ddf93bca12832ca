package io.tidemark.tests;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;

import org.junit.jupiter.api.Test;

import io.tidemark.operations.ConservationCheck;
import io.tidemark.lakehouse.Lakehouse;
import io.tidemark.lakehouse.TidemarkConfig;
import io.tidemark.stream.CrashPoint;
import io.tidemark.stream.StreamingJob;

/**
 * The streaming job stopped again and again at different points of a batch and restarted from its
 * checkpoint each time: five crash points inside the batch (thrown out of it, the query restarted in
 * this JVM), then SIGKILLs of the job in a JVM of its own at random moments, all with the lakehouse and the checkpoint on a
 * real S3 server; afterwards conservation holds exactly, no table has a duplicate row, and every table equals that of an
 * uninterrupted run over the same topic on local disk.
 *
 * <p>It runs with {@code watermark.policy=min-partition} over a skewed topic (partition 1's event
 * clock at half the speed of partition 0's), the policy whose decisions also depend on what the
 * ledger persists per partition and on Spark's batch timestamps: a replayed batch must find the
 * same watermark, and so the same late records, as its first attempt. (Spark's policy is killed
 * in HostileConditionsTest, MaintenanceUnderLoadTest and SingleWriterTest.)
 */
class StreamCrashRecoveryTest extends OnSharedInfrastructure {
    @Test
    void conservationHoldsAfterRepeatedKills() throws Exception {
        Path dir = infra.newDir("crash");
        String topic = "crash-" + dir.getFileName();
        // 750 records per partition per batch: partition 0's clock moves 12.5 minutes a batch, partition 1's 6.25. Fourteen
        // batches: six for the crash points, then at least one per SIGKILL and the rest after the last.
        SkewedTopic skewed = new SkewedTopic(10_500, java.time.Instant.parse("2026-11-28T08:00:00Z"), Duration.ofSeconds(1), 2, 40, 97);
        skewed.produce(infra, topic);

        // The interrupted run's lakehouse and checkpoint on a real S3 server (the uninterrupted one's on local disk).
        S3Server s3 = S3Server.start(dir.resolve("s3"));
        s3.configure(infra.spark);
        org.apache.hadoop.conf.Configuration hadoop = infra.spark.sparkContext().hadoopConfiguration();
        // The idle timeout is far above a restart's pause: both partitions deliver every batch, in both runs.
        TidemarkConfig config = infra.config(dir, topic).set(TidemarkConfig.Key.MAX_OFFSETS_PER_TRIGGER, "1500")
                .set(TidemarkConfig.Key.LAKEHOUSE, s3.uri("lakehouse")).set(TidemarkConfig.Key.CHECKPOINT, s3.uri("checkpoint"))
                .set(TidemarkConfig.Key.WATERMARK_POLICY, "min-partition").set(TidemarkConfig.Key.WATERMARK_IDLE_TIMEOUT, "10 minutes").build();
        List<String> args = List.of("--available-now",
                "kafka.bootstrap-servers=" + config.bootstrapServers(), "topic=" + topic,
                "lakehouse=" + config.lakehouseUri(), "stream.checkpoint=" + config.checkpointUri(),
                "stream.max-offsets-per-trigger=1500", "watermark.policy=min-partition", "watermark.idle-timeout=10 minutes");
        Path log = dir.resolve("stream.log");

        // Stopped dead inside the batch, each at a different point, each in a different batch: the
        // point throws out of the batch (CrashPoint.throwAt) and the query is started again in this JVM.
        List<String> crashes = List.of(
                CrashPoint.AFTER_CLASSIFY + "@1",
                CrashPoint.AFTER_RAW_EVENTS + "@2",
                CrashPoint.AFTER_KPI_WRITE + "@3",
                CrashPoint.BEFORE_PROGRESS + "@4",
                CrashPoint.AFTER_PROGRESS + "@5");
        int crashed = 0;
        for (String crash : crashes) {
            try (AutoCloseable armed = CrashPoint.throwAt(crash)) {
                StreamingJob job = new StreamingJob(infra.spark, config, null);
                try {
                    Throwable stopped = catchThrowable(() -> job.start(true).awaitTermination());
                    assertThat(stopped).as("the run stopped at %s", crash).isNotNull();
                    assertThat(rootCause(stopped)).as("the run stopped at %s", crash).isInstanceOf(CrashPoint.Crash.class)
                            .hasMessage("crash test: stopped at " + crash.replace("@", " of batch "));
                } finally {
                    job.close();
                }
            }
            crashed++;
        }
        // Five external SIGKILLs of the job in its own JVM, each at a random moment after the run's first commit: mid-batch,
        // in the next batch (a batch takes some seconds), or between two (a start that ends before its moment is not counted).
        Random random = new Random(3);
        String progressLog = config.lakehouseUri() + "/stream_progress/_delta_log";
        int kills = 0;
        for (int attempt = 0; kills < 5 && attempt < 8; attempt++) {
            long before = TableChecks.commits(progressLog, hadoop);
            JobProcess job = JobProcess.start(StreamingJob.class, args, s3.sparkSettings(), log);
            long deadline = System.currentTimeMillis() + 120_000;
            while (TableChecks.commits(progressLog, hadoop) < before + 1 && System.currentTimeMillis() < deadline && job.process.isAlive()) {
                Thread.sleep(100);
            }
            Thread.sleep(random.nextInt(4000));
            if (job.process.isAlive()) {
                job.kill();
                kills++;
            }
        }
        // The rest, in this JVM, after the last kill.
        StreamingJob last = new StreamingJob(infra.spark, config, null);
        try {
            last.start(true).awaitTermination();
        } finally {
            last.close();
        }

        assertThat(crashed).isEqualTo(5);
        assertThat(kills).as("SIGKILLs while the job ran").isEqualTo(5);
        assertThat(Files.readString(log)).as("the skew warning").contains("Kafka partition 1's event clock trails partition 0's by",
                "with watermark.policy=min-partition it holds the watermark back");
        ConservationCheck.Report report = ConservationCheck.check(infra.spark, Lakehouse.of(config), skewed.records());
        assertThat(report.violations()).isEmpty();
        assertThat(report.duplicates()).isZero();
        assertThat(report.deadLetters()).isEqualTo(skewed.invalid());
        assertThat(report.rawEvents()).isEqualTo(skewed.records() - skewed.invalid());

        // The same topic, uninterrupted, in this JVM: every table the same, row for row.
        TidemarkConfig reference = infra.config(dir.resolve("uninterrupted"), topic).set(TidemarkConfig.Key.MAX_OFFSETS_PER_TRIGGER, "1500")
                .set(TidemarkConfig.Key.WATERMARK_POLICY, "min-partition").set(TidemarkConfig.Key.WATERMARK_IDLE_TIMEOUT, "10 minutes").build();
        StreamingJob job = new StreamingJob(infra.spark, reference, null);
        try {
            job.start(true).awaitTermination();
        } finally {
            job.close();
        }
        Lakehouse killed = Lakehouse.of(config);
        Lakehouse uninterrupted = Lakehouse.of(reference);
        for (Lakehouse.Table t : List.of(Lakehouse.Table.RAW_EVENTS, Lakehouse.Table.LATE_EVENTS, Lakehouse.Table.DEAD_LETTER,
                Lakehouse.Table.kpi("kpi_5m"), Lakehouse.Table.STREAM_PROGRESS)) {
            assertThat(rows(killed, t)).as("%s after %d crashes and %d kills, against the uninterrupted run", t.tableName(), crashed, kills)
                    .containsExactlyElementsOf(rows(uninterrupted, t));
        }
        long late = infra.spark.read().format("delta").load(killed.path(Lakehouse.Table.LATE_EVENTS)).count();
        assertThat(late).as("late records: those 20 minutes behind their own partition's clock, once the watermark passed them")
                .isPositive().isLessThanOrEqualTo(skewed.records() / 40);
        s3.close();
    }

    private static Throwable rootCause(Throwable t) {
        while (t.getCause() != null && t.getCause() != t) {
            t = t.getCause();
        }
        return t;
    }

    /**
     * A table's rows as text, sorted, without what differs between two correct runs: when batches
     * ran (stream_progress timings, batch_ts and each partition's last batch_ts), how many rows a
     * replayed batch rewrote (kpi_rows), and the HLL sketch's bytes (their merge order may differ;
     * the estimate is compared).
     */
    private static List<String> rows(Lakehouse lakehouse, Lakehouse.Table table) {
        org.apache.spark.sql.Dataset<org.apache.spark.sql.Row> d = infra.spark.read().format("delta").load(lakehouse.path(table));
        d = table.isKpi() ? d.drop("subscriber_sketch") : !table.equals(Lakehouse.Table.STREAM_PROGRESS) ? d : d.selectExpr("batch_id", "watermark", "next_watermark", "max_event_ts", "max_event_ts_seen", "records_in",
                    "on_time", "late", "invalid", "last_closed_day", "transform(partition_clocks, c -> struct(c.kafka_partition, c.max_event_ts))");
        java.util.Set<String> keep = java.util.Set.of(d.columns());
        return d.collectAsList().stream().map(r -> {
            StringBuilder sb = new StringBuilder();
            for (String c : keep.stream().sorted().toList()) {
                Object v = r.get(r.fieldIndex(c));
                sb.append(c).append('=').append(v instanceof byte[] b ? java.util.HexFormat.of().formatHex(b) : String.valueOf(v)).append(' ');
            }
            return sb.toString();
        }).sorted().toList();
    }

}
