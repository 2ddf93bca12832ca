package io.tidemark.late;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.HashMap;
import java.util.Map;

import org.junit.jupiter.api.Test;

import io.tidemark.lakehouse.PartitionClock;
import io.tidemark.lakehouse.TidemarkConfig.WatermarkPolicy;

class WatermarkLedgerTest {
    private static final long L = 600_000; // 10 minutes
    private static final long IDLE = 60_000; // 1 minute
    private static final long TICK = 10_000; // batches 10 s apart

    private static WatermarkLedger spark() {
        return WatermarkLedger.fresh(WatermarkPolicy.SPARK, L, IDLE);
    }

    private static WatermarkLedger minPartition() {
        return WatermarkLedger.fresh(WatermarkPolicy.MIN_PARTITION, L, IDLE);
    }

    /** One partition (0) with this batch's max, batches TICK apart. */
    private static WatermarkLedger.Entry one(WatermarkLedger ledger, long batchId, Long max) {
        return ledger.record(batchId, max == null ? Map.of() : Map.of(0, max), batchId * TICK);
    }

    /** Two partitions' maxima (null: no valid record from it in this batch). */
    private static WatermarkLedger.Entry two(WatermarkLedger ledger, long batchId, Long p0, Long p1) {
        Map<Integer, Long> m = new HashMap<>();
        if (p0 != null) m.put(0, p0);
        if (p1 != null) m.put(1, p1);
        return ledger.record(batchId, m, batchId * TICK);
    }

    @Test
    void thresholdTrailsSparksRecordedWatermarkByOneBatch() {
        WatermarkLedger ledger = spark();
        // batch 0 and 1 run with watermark 0, as in Spark
        assertThat(one(ledger, 0, 5_000_000L)).isEqualTo(new WatermarkLedger.Entry(0, 0, 0, 5_000_000L, 5_000_000L, 0,
                Map.of(0, new PartitionClock(5_000_000L, 0))));
        assertThat(one(ledger, 1, 4_000_000L)).isEqualTo(new WatermarkLedger.Entry(1, 0, 5_000_000 - L, 4_000_000L, 5_000_000L, TICK,
                Map.of(0, new PartitionClock(5_000_000L, TICK))));
        // batch 2 uses max(batches <= 0) - L; its own and batch 1's maxima only count later
        WatermarkLedger.Entry e2 = one(ledger, 2, 9_000_000L);
        assertThat(e2.watermarkMs()).isEqualTo(5_000_000 - L);
        assertThat(e2.nextWatermarkMs()).isEqualTo(5_000_000 - L);
        WatermarkLedger.Entry e3 = one(ledger, 3, null);
        assertThat(e3.watermarkMs()).isEqualTo(5_000_000 - L);
        assertThat(e3.nextWatermarkMs()).isEqualTo(9_000_000 - L);
        assertThat(e3.maxEventSeenMs()).isEqualTo(9_000_000L);
        assertThat(e3.partitions()).containsExactly(Map.entry(0, new PartitionClock(9_000_000L, 2 * TICK)));
    }

    @Test
    void neverDecreasesAndIgnoresEmptyBatches() {
        WatermarkLedger ledger = spark();
        one(ledger, 0, 9_000_000L);
        one(ledger, 1, null);
        one(ledger, 2, 1_000_000L);
        assertThat(one(ledger, 3, 1_000_000L).watermarkMs()).isEqualTo(9_000_000 - L);
        assertThat(ledger.next().watermarkMs()).isEqualTo(9_000_000 - L);
    }

    @Test
    void resumingFromAPersistedEntryGivesTheSameDecisions() {
        for (WatermarkPolicy policy : WatermarkPolicy.values()) {
            WatermarkLedger a = WatermarkLedger.fresh(policy, L, IDLE);
            two(a, 0, 2_000_000L, 1_000_000L);
            WatermarkLedger.Entry e1 = two(a, 1, 3_000_000L, null);
            WatermarkLedger.Entry e2 = two(a, 2, 7_000_000L, 1_500_000L);
            WatermarkLedger b = WatermarkLedger.resumeAfter(e1, policy, L, IDLE);
            assertThat(two(b, 2, 7_000_000L, 1_500_000L)).isEqualTo(e2);
            assertThat(b.next()).isEqualTo(a.next());
        }
    }

    @Test
    void refusesBatchesOutOfOrder() {
        WatermarkLedger ledger = spark();
        assertThatThrownBy(() -> one(ledger, 1, null)).hasMessageContaining("expects batch 0");
    }

    @Test
    void sparkFollowsTheLeadingPartitionMinPartitionTheTrailingOne() {
        WatermarkLedger s = spark();
        WatermarkLedger m = minPartition();
        for (WatermarkLedger l : new WatermarkLedger[] {s, m}) {
            two(l, 0, 9_000_000L, 3_000_000L);
            two(l, 1, 9_500_000L, 3_100_000L);
        }
        // batch 2 runs with the clocks of batch 0
        assertThat(two(s, 2, 9_600_000L, 3_200_000L).watermarkMs()).isEqualTo(9_000_000 - L);
        assertThat(two(m, 2, 9_600_000L, 3_200_000L).watermarkMs()).isEqualTo(3_000_000 - L);
        assertThat(s.next().watermarkMs()).isEqualTo(9_500_000 - L);
        assertThat(m.next().watermarkMs()).isEqualTo(3_100_000 - L);
    }

    @Test
    void anIdlePartitionStopsHoldingTheWatermarkBackAndWakesUpJudgedByTheWatermarkThenInForce() {
        WatermarkLedger m = minPartition();
        two(m, 0, 9_000_000L, 3_000_000L);
        // partition 1 sends nothing from batch 1 on; it last had a record at batch time 0
        for (long b = 1; b <= 5; b++) {
            two(m, b, 9_000_000L + b, null);
            assertThat(m.next().watermarkMs()).as("batch %d: %d ms since partition 1's last record", b + 1, b * TICK)
                    .isEqualTo(3_000_000 - L);
        }
        // batch 6 starts 60 s after partition 1's last record: idle from the threshold of batch 7 on
        two(m, 6, 9_000_006L, null);
        assertThat(m.next().watermarkMs()).isEqualTo(9_000_005L - L);
        // partition 1 wakes up with old records: they are judged against the watermark in force
        WatermarkLedger.Entry woke = two(m, 7, 9_000_007L, 3_200_000L);
        assertThat(woke.watermarkMs()).isEqualTo(9_000_005L - L);
        // from the next batch it holds the watermark back again, which does not go down
        WatermarkLedger.Entry after = two(m, 8, 9_000_008L, null);
        assertThat(after.watermarkMs()).isEqualTo(9_000_006L - L);
        assertThat(m.next().watermarkMs()).isEqualTo(9_000_006L - L);
        assertThat(m.next().partitionsBefore().get(1)).isEqualTo(new PartitionClock(3_200_000L, 7 * TICK));
    }

    @Test
    void whenEveryPartitionIsIdleTheLeadingClockClosesWindows() {
        WatermarkLedger m = minPartition();
        two(m, 0, 9_000_000L, 3_000_000L);
        WatermarkLedger.Entry quiet = m.record(1, Map.of(), IDLE);
        assertThat(quiet.nextWatermarkMs()).isEqualTo(9_000_000 - L);
    }

    @Test
    void policiesByTheirSettingNames() {
        assertThat(WatermarkPolicy.of("spark")).isEqualTo(WatermarkPolicy.SPARK);
        assertThat(WatermarkPolicy.of("min-partition")).isEqualTo(WatermarkPolicy.MIN_PARTITION);
        assertThatThrownBy(() -> WatermarkPolicy.of("min")).hasMessage("watermark.policy must be spark or min-partition; got 'min'");
    }
}
