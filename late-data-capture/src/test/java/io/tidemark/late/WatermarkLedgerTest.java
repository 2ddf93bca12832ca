package io.tidemark.late;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class WatermarkLedgerTest {
    private static final long L = 600_000; // 10 minutes

    @Test
    void thresholdTrailsSparksRecordedWatermarkByOneBatch() {
        WatermarkLedger ledger = WatermarkLedger.fresh(L);
        // batch 0 and 1 run with watermark 0, as in Spark
        assertThat(ledger.record(0, 5_000_000L)).isEqualTo(new WatermarkLedger.Entry(0, 0, 0, 5_000_000L, 5_000_000L));
        assertThat(ledger.record(1, 4_000_000L)).isEqualTo(new WatermarkLedger.Entry(1, 0, 5_000_000 - L, 4_000_000L, 5_000_000L));
        // batch 2 uses max(batches <= 0) - L; its own and batch 1's maxima only count later
        WatermarkLedger.Entry e2 = ledger.record(2, 9_000_000L);
        assertThat(e2.watermarkMs()).isEqualTo(5_000_000 - L);
        assertThat(e2.nextWatermarkMs()).isEqualTo(5_000_000 - L);
        WatermarkLedger.Entry e3 = ledger.record(3, null);
        assertThat(e3.watermarkMs()).isEqualTo(5_000_000 - L);
        assertThat(e3.nextWatermarkMs()).isEqualTo(9_000_000 - L);
        assertThat(e3.maxEventSeenMs()).isEqualTo(9_000_000L);
    }

    @Test
    void neverDecreasesAndIgnoresEmptyBatches() {
        WatermarkLedger ledger = WatermarkLedger.fresh(L);
        ledger.record(0, 9_000_000L);
        ledger.record(1, null);
        ledger.record(2, 1_000_000L);
        assertThat(ledger.record(3, 1_000_000L).watermarkMs()).isEqualTo(9_000_000 - L);
        assertThat(ledger.next().watermarkMs()).isEqualTo(9_000_000 - L);
    }

    @Test
    void resumingFromAPersistedEntryGivesTheSameDecisions() {
        WatermarkLedger a = WatermarkLedger.fresh(L);
        a.record(0, 2_000_000L);
        WatermarkLedger.Entry e1 = a.record(1, 3_000_000L);
        WatermarkLedger.Entry e2 = a.record(2, 7_000_000L);
        WatermarkLedger b = WatermarkLedger.resumeAfter(e1, L);
        assertThat(b.record(2, 7_000_000L)).isEqualTo(e2);
        assertThat(b.next()).isEqualTo(a.next());
    }

    @Test
    void refusesBatchesOutOfOrder() {
        WatermarkLedger ledger = WatermarkLedger.fresh(L);
        assertThatThrownBy(() -> ledger.record(1, null)).hasMessageContaining("expects batch 0");
    }
}
