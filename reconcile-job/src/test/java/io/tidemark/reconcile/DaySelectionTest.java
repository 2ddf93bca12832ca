package io.tidemark.reconcile;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Instant;
import java.time.LocalDate;
import java.util.Map;

import org.junit.jupiter.api.Test;

class DaySelectionTest {
    private static final LocalDate D27 = LocalDate.parse("2026-11-27");
    private static final LocalDate D28 = LocalDate.parse("2026-11-28");

    @Test
    void rangesRunFromTheEarlierDayAndNIsAtLeastOne() {
        assertThat(DaySelection.range(D27, D28).toString()).isEqualTo("days 2026-11-27 to 2026-11-28");
        assertThat(DaySelection.day(D27).toString()).isEqualTo("day 2026-11-27");
        assertThatThrownBy(() -> DaySelection.range(D28, D27)).isInstanceOf(ReconcileRefusedException.class)
                .hasMessage("--from 2026-11-28 is after --to 2026-11-27; give the earlier day first");
        assertThatThrownBy(() -> DaySelection.recent(0)).isInstanceOf(ReconcileRefusedException.class)
                .hasMessage("--recent 0: the number of days must be at least 1");
        assertThat(DaySelection.recent(3).toString()).isEqualTo("the 3 most recent closed days");
        assertThatThrownBy(() -> DaySelection.parseDay("--from", "2026-13-01")).isInstanceOf(ReconcileRefusedException.class)
                .hasMessage("--from '2026-13-01' is not a day; write it as yyyy-MM-dd, e.g. 2026-11-27");
    }

    @Test
    void aDayIsClosedOnceTheWatermarkReachesTheNextMidnight() {
        ClosedDays atMidnight = ClosedDays.at(Instant.parse("2026-11-29T00:00:00Z"));
        assertThat(atMidnight.isClosed(D28)).isTrue();
        assertThat(atMidnight.isClosed(LocalDate.parse("2026-11-29"))).isFalse();
        assertThat(atMidnight.lastClosed()).contains(D28);
        assertThat(atMidnight.mostRecent(3)).containsExactly(LocalDate.parse("2026-11-26"), D27, D28);

        ClosedDays justBefore = ClosedDays.at(Instant.parse("2026-11-28T23:59:59.999Z"));
        assertThat(justBefore.isClosed(D28)).isFalse();
        assertThat(justBefore.lastClosed()).contains(D27);
        assertThatThrownBy(() -> justBefore.requireClosed(D28)).isInstanceOf(ReconcileRefusedException.class)
                .hasMessage("day 2026-11-28 is not closed: the stream's watermark is 2026-11-28T23:59:59.999Z and the day closes only "
                        + "when it reaches 2026-11-29T00:00:00Z; the last closed day is 2026-11-27. Reconcile closed days only.");

        ClosedDays none = ClosedDays.at(null);
        assertThat(none.isClosed(LocalDate.parse("1990-01-01"))).isFalse();
        assertThat(none.mostRecent(3)).isEmpty();
        assertThatThrownBy(() -> none.requireClosed(D27)).hasMessageContaining("stream_progress is empty");
    }

    @Test
    void argumentsSelectOneWayAndRefuseTheRest() {
        Map<String, String> env = Map.of();
        ReconcileArguments a = ReconcileArguments.parse(new String[] {"--from", "2026-11-27", "--to=2026-11-28", "--dry-run",
                "lakehouse=/tmp/x"}, env);
        assertThat(a.selection()).isEqualTo(DaySelection.range(D27, D28));
        assertThat(a.dryRun()).isTrue();
        assertThat(a.config().lakehouseUri()).isEqualTo("/tmp/x");
        assertThat(ReconcileArguments.parse(new String[] {}, env).selection()).isEqualTo(DaySelection.recent(3));
        assertThat(ReconcileArguments.parse(new String[] {"reconcile.recent-days=5"}, env).selection()).isEqualTo(DaySelection.recent(5));
        assertThat(ReconcileArguments.parse(new String[] {"--recent", "2"}, env).selection()).isEqualTo(DaySelection.recent(2));
        assertThat(ReconcileArguments.parse(new String[] {"--dirty"}, env).selection()).isEqualTo(DaySelection.dirty());
        assertThat(ReconcileArguments.parse(new String[] {"--help"}, env).help()).isTrue();

        assertThatThrownBy(() -> ReconcileArguments.parse(new String[] {"--recent", "0"}, env)).hasMessageContaining("at least 1");
        assertThatThrownBy(() -> ReconcileArguments.parse(new String[] {"--recent", "x"}, env))
                .hasMessage("--recent 'x' is not a whole number of days");
        assertThatThrownBy(() -> ReconcileArguments.parse(new String[] {"--from", "2026-11-27"}, env))
                .hasMessage("--from 2026-11-27 needs --to (for one day give the same date to both)");
        assertThatThrownBy(() -> ReconcileArguments.parse(new String[] {"--from", "27.11.2026", "--to", "2026-11-28"}, env))
                .hasMessageContaining("'27.11.2026' is not a day");
        assertThatThrownBy(() -> ReconcileArguments.parse(new String[] {"--from", "2026-11-28", "--to", "2026-11-27"}, env))
                .hasMessageContaining("is after --to");
        assertThatThrownBy(() -> ReconcileArguments.parse(new String[] {"--dirty", "--recent", "2"}, env))
                .hasMessage("choose one selection: --from/--to, --recent N or --dirty");
        assertThatThrownBy(() -> ReconcileArguments.parse(new String[] {"--to"}, env)).hasMessage("--to needs a value");
        assertThatThrownBy(() -> ReconcileArguments.parse(new String[] {"--frm", "x"}, env)).hasMessageContaining("'--frm' is neither");
        assertThatThrownBy(() -> ReconcileArguments.parse(new String[] {"lakehous=x"}, env)).hasMessageContaining("unknown setting 'lakehous'");
    }
}
