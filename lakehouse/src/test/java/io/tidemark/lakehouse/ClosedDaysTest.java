package io.tidemark.lakehouse;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Instant;
import java.time.LocalDate;

import org.junit.jupiter.api.Test;
import io.tidemark.pipeline.Watermark;

/** The one rule (Watermark) and the decision it gives (ClosedDays), without Spark. */
class ClosedDaysTest {

    private static final LocalDate D27 = LocalDate.parse("2026-11-27");
    private static final LocalDate D28 = LocalDate.parse("2026-11-28");

    @Test
    void theEpochWatermarkOfTheFirstBatchesClosesNoDayButStillJudgesWindowsAsSparkDoes() {
        Watermark epoch = Watermark.of(Instant.EPOCH);
        assertThat(epoch).isEqualTo(Watermark.NONE);
        assertThat(epoch.isRecorded()).isFalse();
        assertThat(epoch.lastClosedDay()).isEmpty();
        assertThat(epoch.closes(LocalDate.parse("1969-12-31"))).isFalse();
        // Spark drops a row of a window ending at or before watermark 0, so a pre-epoch window is late.
        assertThat(epoch.closes(0L)).isTrue();
        assertThat(epoch.closes(1L)).isFalse();

        ClosedDays none = ClosedDays.decidedBy(epoch);
        assertThat(none.lastClosed()).isEmpty();
        assertThat(none.mostRecent(2)).isEmpty();
        assertThat(none.isClosed(LocalDate.parse("1969-12-31"))).isFalse();
        assertThat(none.whyOpen(D27)).contains("day 2026-11-27 is not closed: the stream has not recorded a watermark yet, so no day is closed");
        assertThat(ClosedDays.decidedBy(Watermark.of(null)).lastClosed()).isEmpty();
    }

    @Test
    void aDayIsClosedOnceTheWatermarkReachesTheNextMidnight() {
        Watermark midnight = Watermark.of(Instant.parse("2026-11-29T00:00:00Z"));
        assertThat(midnight.closes(D28)).isTrue();
        assertThat(midnight.closes(LocalDate.parse("2026-11-29"))).isFalse();
        assertThat(midnight.lastClosedDay()).contains(D28);
        ClosedDays atMidnight = ClosedDays.decidedBy(midnight);
        assertThat(atMidnight.isClosed(D28)).isTrue();
        assertThat(atMidnight.mostRecent(3)).containsExactly(LocalDate.parse("2026-11-26"), D27, D28);
        assertThat(atMidnight.among(java.util.List.of(LocalDate.parse("2026-11-29"), D28, D27))).containsExactly(D27, D28);
        assertThat(atMidnight.whyOpen(D28)).isEmpty();

        Watermark justBefore = Watermark.of(Instant.parse("2026-11-28T23:59:59.999Z"));
        assertThat(justBefore.closes(D28)).isFalse();
        assertThat(justBefore.lastClosedDay()).contains(D27);
        assertThat(ClosedDays.decidedBy(justBefore).whyOpen(D28)).contains("day 2026-11-28 is not closed: the stream's watermark is "
                + "2026-11-28T23:59:59.999Z and the day closes only when it reaches 2026-11-29T00:00:00Z; the last closed day is 2026-11-27");
    }

    @Test
    void aWindowIsFinalAndARecordLateWhenTheWindowEndsAtOrBeforeTheWatermark() {
        Watermark wm = Watermark.ofMillis(1_000_000L);
        assertThat(wm.closes(1_000_000L)).isTrue();
        assertThat(wm.closes(999_999L)).isTrue();
        assertThat(wm.closes(1_000_001L)).isFalse();
        assertThat(wm.instant()).contains(Instant.ofEpochMilli(1_000_000L));
        assertThat(Watermark.NONE.instant()).isEmpty();
    }
}
