package io.tidemark.reconcile;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Instant;
import java.time.LocalDate;

import org.junit.jupiter.api.Test;

class ClosedDaysTest {

    @Test
    void theEpochWatermarkOfTheFirstBatchesClosesNothing() {
        ClosedDays none = ClosedDays.at(Instant.EPOCH);
        assertThat(none.watermark()).isEmpty();
        assertThat(none.lastClosed()).isEmpty();
        assertThat(none.mostRecent(2)).isEmpty();
        assertThat(none.isClosed(LocalDate.parse("1969-12-31"))).isFalse();
    }

    @Test
    void aDayIsClosedOnceTheWatermarkReachesItsEnd() {
        ClosedDays at = ClosedDays.at(Instant.parse("2026-11-29T00:00:00Z"));
        assertThat(at.isClosed(LocalDate.parse("2026-11-28"))).isTrue();
        assertThat(at.isClosed(LocalDate.parse("2026-11-29"))).isFalse();
        assertThat(at.mostRecent(2)).containsExactly(LocalDate.parse("2026-11-27"), LocalDate.parse("2026-11-28"));
        assertThat(ClosedDays.at(Instant.parse("2026-11-28T23:59:59.999Z")).isClosed(LocalDate.parse("2026-11-28"))).isFalse();
    }
}
