package io.tidemark.operations;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Instant;
import java.time.LocalDate;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import org.junit.jupiter.api.Test;

import io.tidemark.lakehouse.ClosedDays;
import io.tidemark.lakehouse.DayBalance;
import io.tidemark.lakehouse.ExpiredDays;
import io.tidemark.lakehouse.StreamProgress;
import io.tidemark.pipeline.Watermark;

class LakehouseFiguresTest {

    @Test
    void closedDaysAreTheStreamsDecisionAndDirtyOnesDisagree() {
        java.util.NavigableMap<LocalDate, DayBalance> days = new TreeMap<>(Map.of(
                LocalDate.parse("2026-05-01"), new DayBalance(LocalDate.parse("2026-05-01"), 100, 3, 97, 10),
                LocalDate.parse("2026-05-02"), new DayBalance(LocalDate.parse("2026-05-02"), 50, 0, 50, 5),
                LocalDate.parse("2026-05-03"), new DayBalance(LocalDate.parse("2026-05-03"), 10, 1, 9, 2)));
        Instant t = Instant.parse("2026-05-03T00:00:00Z");
        StreamProgress last = new StreamProgress(7, "q", t, t, t, t, 10, 9, 1, 0, 3, t, t, 1500, 500, 1000, 2000L, null, null, new TreeMap<>());
        LakehouseFigures f = new LakehouseFigures(List.of(last), decided("2026-05-03T00:00:00Z"), 160, 4, 4, 2, 30, 20, days, ExpiredDays.none());
        assertThat(f.closedDays()).containsExactly(LocalDate.parse("2026-05-01"), LocalDate.parse("2026-05-02"));
        assertThat(f.dirtyDays()).containsExactly(LocalDate.parse("2026-05-01"));
        assertThat(f.closingWatermark()).contains(Instant.parse("2026-05-03T00:00:00Z"));
        LakehouseFigures earlier = new LakehouseFigures(List.of(last), decided("2026-05-02T23:59:59.999Z"), 0, 0, 0, 0, 0, 0, days, ExpiredDays.none());
        assertThat(earlier.closedDays()).containsExactly(LocalDate.parse("2026-05-01"));
        LakehouseFigures none = new LakehouseFigures(List.of(), ClosedDays.none(), 0, 0, 0, 0, 0, 0, days, ExpiredDays.none());
        assertThat(none.closedDays()).isEmpty();
    }

    private static ClosedDays decided(String nextWatermark) {
        return ClosedDays.decidedBy(Watermark.of(Instant.parse(nextWatermark)));
    }
}
