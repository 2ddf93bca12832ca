package io.tidemark.tests;

import static io.tidemark.tests.KafkaFixtures.event;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.tuple;

import java.nio.file.Path;
import java.time.Instant;
import java.util.List;

import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.Test;

import io.tidemark.operations.ConservationCheck;
import io.tidemark.lakehouse.IncompatibleQueryException;
import io.tidemark.lakehouse.Lakehouse;
import io.tidemark.lakehouse.TidemarkConfig;
import io.tidemark.lakehouse.TidemarkConfig.Key;
import io.tidemark.stream.StreamingJob;
import io.tidemark.tests.KafkaFixtures.Message;

/**
 * watermark.policy over crafted two-partition batches through the stream's whole writer
 * ({@link BatchDriver}: no broker, no streaming query, explicit batch timestamps), one record per
 * partition per micro-batch, as stream.max-offsets-per-trigger=2 over two equally full partitions
 * makes them. Window 5 min, lateness 10 min. Partition 0's event clock runs ten minutes per batch,
 * partition 1's two: the expected watermarks below are written out by hand from each policy's
 * definition. Both policies through Spark's engine and the real broker: {@link PartitionSkewTest}
 * (against an independent write-out of the rule) and {@link StreamCrashRecoveryTest}.
 */
class WatermarkPolicyTest extends OnSharedInfrastructure {
    private static final Instant INGEST = Instant.parse("2026-11-28T12:00:00Z");
    /** Spark's timestamp of batch 0; the others follow a second apart unless a test says otherwise. */
    private static final Instant BATCH_0 = Instant.parse("2026-11-28T12:00:05Z");
    private static final String D = "2026-11-28T";

    private static List<Message> at(String cell, String... times) {
        return java.util.Arrays.stream(times).map(t -> new Message(event("s-" + t, cell, D + t + ":00Z", 1.0), INGEST)).toList();
    }

    /** Partition 0 (cell c0) leads; partition 1 (cell c1) trails, and its last record is 30 minutes behind its own clock. */
    private static final List<Message> P0 = at("c0", "10:00", "10:10", "10:20", "10:30", "10:40", "10:50", "11:00");
    private static final List<Message> P1 = at("c1", "10:00", "10:02", "10:04", "10:06", "10:08", "10:10", "09:40");

    private record Run(SparkSession spark, Lakehouse lakehouse, TidemarkConfig config) {
        List<Row> rows(String sql) {
            return spark.sql(sql.replace("{kpi}", lakehouse.ref(Lakehouse.Table.kpi("kpi_5m")))
                    .replace("{late}", lakehouse.ref(Lakehouse.Table.LATE_EVENTS))
                    .replace("{progress}", lakehouse.ref(Lakehouse.Table.STREAM_PROGRESS))).collectAsList();
        }

        List<Object> late() {
            return rows("SELECT kafka_partition, kafka_offset, date_format(window_end, 'HH:mm'), date_format(watermark, 'HH:mm') FROM {late} "
                    + "ORDER BY kafka_partition, kafka_offset").stream()
                    .map(r -> (Object) tuple(r.getInt(0), r.getLong(1), r.getString(2), r.getString(3))).toList();
        }

        List<Object> kpis() {
            return rows("SELECT date_format(window_start, 'HH:mm'), cell_site_id, record_count, is_final FROM {kpi} ORDER BY window_start, cell_site_id")
                    .stream().map(r -> (Object) tuple(r.getString(0), r.getString(1), r.getLong(2), r.getBoolean(3))).toList();
        }

        /** Per batch: the watermark in force, the next one, records in, late. */
        List<Object> progress() {
            return rows("SELECT batch_id, date_format(watermark, 'HH:mm'), date_format(next_watermark, 'HH:mm'), records_in, late FROM {progress} "
                    + "ORDER BY batch_id").stream()
                    .map(r -> (Object) tuple(r.getLong(0), r.getString(1), r.getString(2), r.getLong(3), r.getLong(4))).toList();
        }

        /** The last batch's partition clocks: partition, max event time. */
        List<Object> lastClocks() {
            return rows("SELECT c.kafka_partition, date_format(c.max_event_ts, 'HH:mm') FROM (SELECT inline(partition_clocks) FROM {progress} "
                    + "WHERE batch_id = (SELECT max(batch_id) FROM {progress})) AS c ORDER BY 1").stream()
                    .map(r -> (Object) tuple(r.getInt(0), r.getString(1))).toList();
        }

        /** The real stream over this configuration's topic and checkpoint, to the end of the topic. */
        void runToEnd() throws Exception {
            StreamingJob job = new StreamingJob(spark, config, null);
            try {
                job.start(true).awaitTermination();
            } finally {
                job.close();
            }
        }
    }

    /** One batch: {@code p0} on partition 0, {@code p1} on partition 1. */
    private static List<BatchDriver.In> pair(Message p0, Message p1) {
        return List.of(new BatchDriver.In(0, p0), new BatchDriver.In(1, p1));
    }

    private static Run crafted(String policy) throws Exception {
        Path dir = infra.newDir("policy-" + policy);
        TidemarkConfig config = infra.config(dir, "policy-" + dir.getFileName())
                .set(Key.MAX_OFFSETS_PER_TRIGGER, "2")
                .set(Key.WATERMARK_POLICY, policy)
                .build();
        Run run = new Run(infra.spark, Lakehouse.of(config), config);
        try (BatchDriver driver = new BatchDriver(infra.spark, config)) {
            for (int i = 0; i < P0.size(); i++) {
                driver.pipe(BATCH_0.plusSeconds(i), pair(P0.get(i), P1.get(i)));
            }
        }
        ConservationCheck.Report r = ConservationCheck.check(infra.spark, run.lakehouse(), 14L);
        assertThat(r.violations()).isEmpty();
        return run;
    }

    @Test
    void sparkPolicyCallsTheTrailingPartitionsRecordsLateInBulk() throws Exception {
        Run run = crafted("spark");
        // The threshold of batch N+1 is the max event time over batches 0..N-1 minus 10 minutes: partition 0's clock.
        assertThat(run.progress()).containsExactly(
                tuple(0L, "00:00", "00:00", 2L, 0L),
                tuple(1L, "00:00", "09:50", 2L, 0L),
                tuple(2L, "09:50", "10:00", 2L, 0L),
                tuple(3L, "10:00", "10:10", 2L, 0L),
                tuple(4L, "10:10", "10:20", 2L, 1L),
                tuple(5L, "10:20", "10:30", 2L, 1L),
                tuple(6L, "10:30", "10:40", 2L, 1L));
        // Partition 1's 10:08 and 10:10 were on time in its own order, and late here all the same.
        assertThat(run.late()).containsExactly(
                tuple(1, 4L, "10:10", "10:10"),
                tuple(1, 5L, "10:15", "10:20"),
                tuple(1, 6L, "09:45", "10:30"));
        assertThat(run.kpis()).containsExactly(
                tuple("10:00", "c0", 1L, true),
                tuple("10:00", "c1", 3L, true),
                tuple("10:05", "c1", 1L, true),
                tuple("10:10", "c0", 1L, true),
                tuple("10:20", "c0", 1L, true),
                tuple("10:30", "c0", 1L, true),
                tuple("10:40", "c0", 1L, false),
                tuple("10:50", "c0", 1L, false),
                tuple("11:00", "c0", 1L, false));
        assertThat(run.lastClocks()).containsExactly(tuple(0, "11:00"), tuple(1, "10:10"));

        // docs/tables.md's query of each partition's lag, as written there.
        String doc = java.nio.file.Files.readString(Path.of(System.getProperty("user.dir")).getParent().resolve("docs/tables.md"));
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("```sql\n(WITH clocks AS[^`]*inline\\(partition_clocks\\)[^`]*)```").matcher(doc);
        assertThat(m.find()).as("docs/tables.md's partition lag query").isTrue();
        List<Row> lag = infra.spark.sql(m.group(1).replace("tidemark.stream_progress", run.lakehouse().ref(Lakehouse.Table.STREAM_PROGRESS)))
                .collectAsList();
        assertThat(lag).extracting(r -> tuple(r.getInt(0), r.getTimestamp(1).toInstant().toString(), r.get(3).toString()))
                .containsExactly(tuple(0, D + "11:00:00Z", "PT0S"), tuple(1, D + "10:10:00Z", "PT50M"));
    }

    @Test
    void minPartitionCallsLateOnlyWhatIsLateInItsOwnPartitionsOrder() throws Exception {
        Run run = crafted("min-partition");
        // The threshold of batch N+1 is the slower partition's max over batches 0..N-1 minus 10 minutes: partition 1's clock.
        assertThat(run.progress()).containsExactly(
                tuple(0L, "00:00", "00:00", 2L, 0L),
                tuple(1L, "00:00", "09:50", 2L, 0L),
                tuple(2L, "09:50", "09:52", 2L, 0L),
                tuple(3L, "09:52", "09:54", 2L, 0L),
                tuple(4L, "09:54", "09:56", 2L, 0L),
                tuple(5L, "09:56", "09:58", 2L, 0L),
                tuple(6L, "09:58", "10:00", 2L, 1L));
        // Only the record 30 minutes behind its own partition's clock.
        assertThat(run.late()).containsExactly(tuple(1, 6L, "09:45", "09:58"));
        // Nothing final yet: every window ends after 10:00, where the trailing partition holds the watermark.
        assertThat(run.kpis()).containsExactly(
                tuple("10:00", "c0", 1L, false),
                tuple("10:00", "c1", 3L, false),
                tuple("10:05", "c1", 2L, false),
                tuple("10:10", "c0", 1L, false),
                tuple("10:10", "c1", 1L, false),
                tuple("10:20", "c0", 1L, false),
                tuple("10:30", "c0", 1L, false),
                tuple("10:40", "c0", 1L, false),
                tuple("10:50", "c0", 1L, false),
                tuple("11:00", "c0", 1L, false));
        assertThat(run.lastClocks()).containsExactly(tuple(0, "11:00"), tuple(1, "10:10"));

        // The policy is part of the query definition: another one on this checkpoint and lakehouse is refused.
        TidemarkConfig spark = TidemarkConfig.builder().set(Key.KAFKA_BOOTSTRAP, run.config().bootstrapServers())
                .set(Key.TOPIC, run.config().topic()).set(Key.LAKEHOUSE, run.config().lakehouseUri())
                .set(Key.CHECKPOINT, run.config().checkpointUri()).set(Key.METRICS_PORT, "0").build();
        assertThatThrownBy(() -> new Run(infra.spark, run.lakehouse(), spark).runToEnd())
                .isInstanceOf(IncompatibleQueryException.class)
                .hasMessageContaining("watermark.policy min-partition -> spark");
    }

    /**
     * watermark.idle-timeout = 10 s. Partition 1 goes quiet; once batches start 10 s after its last
     * record it stops holding the watermark back; when it wakes up with an old record, that record is
     * judged against the watermark then in force, and from the next batch on it holds the watermark
     * back again without lowering it.
     */
    @Test
    void anIdlePartitionStopsHoldingTheWatermarkBackUntilItWakesUp() throws Exception {
        Path dir = infra.newDir("policy-idle");
        TidemarkConfig config = infra.config(dir, "policy-idle-" + dir.getFileName()).set(Key.WATERMARK_POLICY, "min-partition")
                .set(Key.WATERMARK_IDLE_TIMEOUT, "10 seconds").build();
        Run run = new Run(infra.spark, Lakehouse.of(config), config);
        List<Message> c0 = at("c0", "10:00", "10:10", "10:20", "10:30", "10:40", "10:50", "11:00");
        List<Message> c1 = at("c1", "10:00", "10:02", "10:04", "10:30");
        try (BatchDriver driver = new BatchDriver(infra.spark, config)) {
            // Batches 0-1: both partitions, a second apart.
            driver.pipe(BATCH_0, pair(c0.get(0), c1.get(0)));
            driver.pipe(BATCH_0.plusSeconds(1), pair(c0.get(1), c1.get(1)));
            // A restart; batches 2-4: partition 0 only, from 11 s after partition 1's last record.
            driver.restart();
            for (int i = 2; i <= 4; i++) {
                driver.pipe(BATCH_0.plusSeconds(10 + i), List.of(new BatchDriver.In(0, c0.get(i))));
            }
            // A restart; batches 5-6: partition 1 wakes up with a record from 10:04, then one from 10:30.
            driver.restart();
            driver.pipe(BATCH_0.plusSeconds(15), pair(c0.get(5), c1.get(2)));
            driver.pipe(BATCH_0.plusSeconds(16), pair(c0.get(6), c1.get(3)));
        }

        // The writer keeps the batch timestamps it was given: what the idle rule compares.
        assertThat(run.rows("SELECT unix_millis(batch_ts) FROM {progress} ORDER BY batch_id"))
                .extracting(r -> r.getLong(0) - BATCH_0.toEpochMilli()).containsExactly(0L, 1_000L, 12_000L, 13_000L, 14_000L, 15_000L, 16_000L);
        assertThat(run.progress()).containsExactly(
                tuple(0L, "00:00", "00:00", 2L, 0L),
                tuple(1L, "00:00", "09:50", 2L, 0L),
                // Batch 2 starts with both partitions idle: the leading clock (10:10) decides, as under Spark's rule.
                tuple(2L, "09:50", "10:00", 1L, 0L),
                // Partition 1 (10:02 at batch 1) is idle: partition 0 alone moves the watermark.
                tuple(3L, "10:00", "10:10", 1L, 0L),
                tuple(4L, "10:10", "10:20", 1L, 0L),
                // Partition 1's 10:04 record (window end 10:05) meets the watermark in force, 10:20: late.
                tuple(5L, "10:20", "10:30", 2L, 1L),
                // Awake again, partition 1 (10:04) holds the watermark back: min(10:50, 10:04) - 10 min, but it never goes down.
                tuple(6L, "10:30", "10:30", 2L, 0L));
        assertThat(run.late()).containsExactly(tuple(1, 2L, "10:05", "10:20"));
        assertThat(run.lastClocks()).containsExactly(tuple(0, "11:00"), tuple(1, "10:30"));
        ConservationCheck.Report r = ConservationCheck.check(infra.spark, run.lakehouse(), 11L);
        assertThat(r.violations()).isEmpty();
    }
}
