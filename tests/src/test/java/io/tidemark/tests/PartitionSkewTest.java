package io.tidemark.tests;

import static org.assertj.core.api.Assertions.assertThat;

import java.math.BigDecimal;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.apache.spark.sql.Row;
import org.junit.jupiter.api.Test;

import io.tidemark.operations.ConservationCheck;
import io.tidemark.lakehouse.Lakehouse;
import io.tidemark.lakehouse.TidemarkConfig;
import io.tidemark.lakehouse.TidemarkConfig.Key;
import io.tidemark.reconcile.DayOutcome;
import io.tidemark.reconcile.DaySelection;
import io.tidemark.reconcile.ReconcileJob;
import io.tidemark.tests.KafkaFixtures.Message;

/**
 * Partition skew, both watermark policies side by side over the same batches, piped through the
 * stream's whole writer ({@link BatchDriver}): two partitions, partition 1's event clock at half the
 * speed of partition 0's, every record in order within its partition, 100 records per batch (50
 * from each, as stream.max-offsets-per-trigger=100 over two equally full partitions makes them),
 * window 5 minutes, lateness 10 minutes. Then both partitions
 * send two batches of the next day, which closes the day under either policy, and reconcile
 * replaces it.
 *
 * <p>Expected: under {@code spark}, exactly the records an independent write-out of Spark's rule
 * calls late (all from partition 1); under {@code min-partition}, none; reconcile's drift equals the
 * late records under each. A window becomes final under {@code min-partition} later than under
 * {@code spark} by no more than the skew between the partitions at that batch (plus two batches of
 * the trailing clock, the rule's lag). The figures of the run are printed; bench/RESULTS.md has
 * the full plan's. A reduced plan runs by default (1,200 records);
 * {@code -Dtidemark.skew.records=3000} runs the 3,000.
 */
class PartitionSkewTest extends OnSharedInfrastructure {
    private static final int RECORDS = Integer.getInteger("tidemark.skew.records", 1_200);
    private static final LocalDate DAY = LocalDate.parse("2026-11-28");
    private static final long LATENESS_MS = 600_000;
    private static final long WINDOW_MS = 300_000;
    private static final int PER_BATCH = 50; // per partition
    private static final int TAIL = 2 * PER_BATCH; // per partition: two batches of the next day
    /** Partition 0: a record every 12 s of event time, 10 minutes a batch; partition 1 at half that speed. */
    private static final SkewedTopic SKEWED = new SkewedTopic(RECORDS / 2, DAY.atTime(6, 0).toInstant(java.time.ZoneOffset.UTC),
            Duration.ofSeconds(12), 2, 0, 0);

    record Outcome(String policy, long late, Map<Integer, Long> lateByPartition, DayOutcome reconciled, List<long[]> finals, int mainBatches) {
    }

    @Test
    void minPartitionCallsNothingLateForLaggingAndDelaysFinalWindowsByNoMoreThanTheSkew() throws Exception {
        Path dir = infra.newDir("skew");
        String topic = "skew-" + dir.getFileName();
        Instant tail = DAY.plusDays(1).atTime(1, 0).toInstant(java.time.ZoneOffset.UTC);
        List<List<BatchDriver.In>> batches = new ArrayList<>();
        List<List<Message>> main = List.of(SKEWED.partition(0), SKEWED.partition(1));
        for (int b = 0; b < SKEWED.perPartition() / PER_BATCH; b++) {
            List<BatchDriver.In> batch = new ArrayList<>();
            for (int p = 0; p < 2; p++) {
                for (Message m : main.get(p).subList(b * PER_BATCH, (b + 1) * PER_BATCH)) {
                    batch.add(new BatchDriver.In(p, m));
                }
            }
            batches.add(batch);
        }
        for (int b = 0; b < TAIL / PER_BATCH; b++) {
            List<BatchDriver.In> batch = new ArrayList<>();
            for (int p = 0; p < 2; p++) {
                for (int i = b * PER_BATCH; i < (b + 1) * PER_BATCH; i++) {
                    Instant t = tail.plusSeconds(i);
                    batch.add(new BatchDriver.In(p, new Message(KafkaFixtures.event("t" + i, "c" + i % 12, t.toString(), 0.5), t.plusSeconds(1))));
                }
            }
            batches.add(batch);
        }

        Map<String, Outcome> outcomes = new LinkedHashMap<>();
        for (String policy : List.of("spark", "min-partition")) {
            outcomes.put(policy, run(dir.resolve(policy), topic, policy, batches));
        }
        Outcome spark = outcomes.get("spark");
        Outcome min = outcomes.get("min-partition");

        long[] oracleSpark = lateByOracle(false);
        long[] oracleMin = lateByOracle(true);
        assertThat(spark.lateByPartition()).as("late under spark, per partition").isEqualTo(Map.of(1, oracleSpark[1]));
        assertThat(oracleSpark[0]).isZero();
        assertThat(spark.late()).isPositive();
        assertThat(min.late()).as("late under min-partition").isZero();
        assertThat(oracleMin[0] + oracleMin[1]).isZero();

        // Reconcile's drift is exactly what the stream left out: the late records.
        for (Outcome o : outcomes.values()) {
            assertThat(o.reconciled().status()).isEqualTo(DayOutcome.Status.RECONCILED);
            assertThat(o.reconciled().measure("record_count").batch().longValueExact()).isEqualTo(RECORDS);
            assertThat(o.reconciled().measure("record_count").drift().longValueExact()).as("%s: record drift", o.policy()).isEqualTo(o.late());
            assertThat(o.reconciled().lateRecords()).isEqualTo(o.late());
        }
        assertThat(min.reconciled().measure("total_gb").drift()).isEqualByComparingTo(BigDecimal.ZERO);
        assertThat(spark.reconciled().measure("total_gb").drift()).isPositive();

        // Final windows: [window end, batch final under spark, lead-ahead at that batch, batch under min, lead-ahead, skew then].
        List<long[]> both = new ArrayList<>();
        Map<Long, long[]> bySpark = new LinkedHashMap<>();
        spark.finals().forEach(f -> bySpark.put(f[0], f));
        for (long[] m : min.finals()) {
            long[] s = bySpark.get(m[0]);
            if (s != null) {
                both.add(new long[] {m[0], s[1], s[2], m[1], m[2], m[3]});
                long trailingPerBatch = PER_BATCH * SKEWED.stepMs(1);
                long leadingPerBatch = PER_BATCH * SKEWED.stepMs(0);
                assertThat(s[2]).as("spark: leading clock past the end of window %s when final", Instant.ofEpochMilli(m[0]))
                        .isLessThan(LATENESS_MS + 2 * leadingPerBatch);
                assertThat(m[2]).as("min-partition: leading clock past the end of window %s when final", Instant.ofEpochMilli(m[0]))
                        .isLessThan(LATENESS_MS + m[3] + 2 * trailingPerBatch);
            }
        }
        assertThat(both).as("windows final before the next day under both policies").hasSizeGreaterThanOrEqualTo(5);
        System.out.println(figures(outcomes, both));
    }

    /** Late records per partition by an independent write-out of the rule: batch b holds records [50b, 50b+50) of each partition. */
    private static long[] lateByOracle(boolean minPartition) {
        int batches = SKEWED.perPartition() / PER_BATCH;
        long[][] events = new long[2][SKEWED.perPartition()];
        for (int p = 0; p < 2; p++) {
            for (int i = 0; i < SKEWED.perPartition(); i++) {
                events[p][i] = SKEWED.start().toEpochMilli() + i * SKEWED.stepMs(p);
            }
        }
        long[] late = new long[2];
        long threshold = 0;
        for (int b = 0; b < batches; b++) {
            if (b >= 2) {
                // The clock over batches 0..b-2: each partition's newest event time there.
                long p0 = Arrays.stream(events[0], 0, (b - 1) * PER_BATCH).max().getAsLong();
                long p1 = Arrays.stream(events[1], 0, (b - 1) * PER_BATCH).max().getAsLong();
                threshold = Math.max(threshold, (minPartition ? Math.min(p0, p1) : Math.max(p0, p1)) - LATENESS_MS);
            }
            for (int p = 0; p < 2; p++) {
                for (int i = b * PER_BATCH; i < (b + 1) * PER_BATCH; i++) {
                    long end = Math.floorDiv(events[p][i], WINDOW_MS) * WINDOW_MS + WINDOW_MS;
                    if (threshold > 0 && end <= threshold) {
                        late[p]++;
                    }
                }
            }
        }
        return late;
    }

    private static Outcome run(Path dir, String topic, String policy, List<List<BatchDriver.In>> batches) throws Exception {
        TidemarkConfig config = infra.config(dir, topic).set(Key.MAX_OFFSETS_PER_TRIGGER, String.valueOf(2 * PER_BATCH))
                .set(Key.WATERMARK_POLICY, policy).set(Key.WATERMARK_IDLE_TIMEOUT, "10 minutes").build();
        Instant batchTime = Instant.parse("2026-11-29T12:00:00Z");
        try (BatchDriver driver = new BatchDriver(infra.spark, config)) {
            for (List<BatchDriver.In> batch : batches) {
                driver.pipe(batchTime, batch);
                batchTime = batchTime.plusSeconds(2);
            }
        }
        Lakehouse lakehouse = Lakehouse.of(config);
        ConservationCheck.Report check = ConservationCheck.check(infra.spark, lakehouse, RECORDS + 2L * TAIL);
        assertThat(check.violations()).isEmpty();
        int mainBatches = SKEWED.perPartition() / PER_BATCH;
        List<Row> progress = infra.spark.read().format("delta").load(lakehouse.path(Lakehouse.Table.STREAM_PROGRESS))
                .selectExpr("batch_id", "records_in", "unix_millis(next_watermark)", "unix_millis(max_event_ts_seen)",
                        "aggregate(partition_clocks, 0L, (acc, c) -> greatest(acc, unix_millis(c.max_event_ts)))"
                                + " - aggregate(partition_clocks, 9223372036854775807L, (acc, c) -> least(acc, unix_millis(c.max_event_ts)))")
                .orderBy("batch_id").collectAsList();
        assertThat(progress).as("%s: batches", policy).hasSize(mainBatches + 2);
        assertThat(progress).allSatisfy(r -> assertThat(r.getLong(1)).isEqualTo(2L * PER_BATCH));

        Map<Integer, Long> lateByPartition = new java.util.TreeMap<>();
        for (Row r : infra.spark.read().format("delta").load(lakehouse.path(Lakehouse.Table.LATE_EVENTS))
                .groupBy("kafka_partition").count().collectAsList()) {
            lateByPartition.put(r.getInt(0), r.getLong(1));
        }
        long late = lateByPartition.values().stream().mapToLong(Long::longValue).sum();

        // Each window of the day that became final before the next day's records: the batch, and how far the leading clock was past its end.
        List<long[]> finals = new ArrayList<>();
        List<Row> windows = infra.spark.read().format("delta").load(lakehouse.path(Lakehouse.Table.RAW_EVENTS))
                .where("event_date = DATE'" + DAY + "'")
                .selectExpr("CAST(floor(unix_millis(event_ts) / " + WINDOW_MS + ") AS BIGINT) * " + WINDOW_MS + " + " + WINDOW_MS + " AS window_end_ms")
                .distinct().orderBy("window_end_ms").collectAsList();
        for (Row w : windows) {
            long end = w.getLong(0);
            for (Row p : progress) {
                if (p.getLong(0) < mainBatches && p.getLong(2) >= end) {
                    finals.add(new long[] {end, p.getLong(0), p.getLong(3) - end, p.getLong(4)});
                    break;
                }
            }
        }
        TidemarkConfig reconcileConfig = infra.config(dir, topic).set(Key.WATERMARK_POLICY, policy).build();
        DayOutcome day = new ReconcileJob(infra.spark, reconcileConfig, new java.io.PrintStream(java.io.OutputStream.nullOutputStream()))
                .run(DaySelection.day(DAY), false).day(DAY).orElseThrow();
        return new Outcome(policy, late, lateByPartition, day, finals, mainBatches);
    }

    private static String figures(Map<String, Outcome> outcomes, List<long[]> both) {
        StringBuilder sb = new StringBuilder(String.format("partition skew, %,d records (%d per partition, partition 1 at half speed), "
                + "100 per batch, lateness 10 min, window 5 min; load average %s%n", RECORDS, SKEWED.perPartition(), loadAverage()));
        sb.append(String.format("%-14s %8s %7s %16s %14s %14s%n", "policy", "late", "late %", "windows final*", "gb drift", "gb drift rel"));
        for (Outcome o : outcomes.values()) {
            sb.append(String.format("%-14s %8d %6.1f%% %16d %14s %14.4f%n", o.policy(), o.late(), 100.0 * o.late() / RECORDS, o.finals().size(),
                    o.reconciled().measure("total_gb").drift().toPlainString(), o.reconciled().measure("total_gb").driftRel() == null ? 0.0 : o.reconciled().measure("total_gb").driftRel()));
        }
        sb.append(String.format("* of the day's windows, final before the next day's records (%d batches)%n", outcomes.get("spark").mainBatches()));
        long[] laterBatches = both.stream().mapToLong(b -> b[3] - b[1]).sorted().toArray();
        long[] sparkAhead = both.stream().mapToLong(b -> b[2]).sorted().toArray();
        long[] minAhead = both.stream().mapToLong(b -> b[4]).sorted().toArray();
        long[] skew = both.stream().mapToLong(b -> b[5]).sorted().toArray();
        sb.append(String.format("windows final under both: %d; batches later under min-partition: median %d, max %d%n", both.size(),
                laterBatches[laterBatches.length / 2], laterBatches[laterBatches.length - 1]));
        sb.append(String.format("leading clock past the window end when final: spark median %s max %s; min-partition median %s max %s; "
                        + "partition skew then: median %s max %s%n",
                min(sparkAhead[sparkAhead.length / 2]), min(sparkAhead[sparkAhead.length - 1]), min(minAhead[minAhead.length / 2]),
                min(minAhead[minAhead.length - 1]), min(skew[skew.length / 2]), min(skew[skew.length - 1])));
        return sb.toString();
    }

    private static String min(long ms) {
        return String.format("%.1f min", ms / 60_000.0);
    }

    private static String loadAverage() {
        try {
            return java.nio.file.Files.readString(Path.of("/proc/loadavg")).trim();
        } catch (java.io.IOException e) {
            return "unknown";
        }
    }
}
