package io.tidemark.reconcile;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Instant;
import java.time.LocalDate;
import java.util.Map;

import org.junit.jupiter.api.Test;
import io.tidemark.lakehouse.RequestRefusedException;

class DaySelectionTest {
    private static final LocalDate D27 = LocalDate.parse("2026-11-27");
    private static final LocalDate D28 = LocalDate.parse("2026-11-28");

    @Test
    void rangesRunFromTheEarlierDayAndNIsAtLeastOne() {
        assertThat(DaySelection.range(D27, D28).toString()).isEqualTo("days 2026-11-27 to 2026-11-28");
        assertThat(DaySelection.day(D27).toString()).isEqualTo("day 2026-11-27");
        assertThatThrownBy(() -> DaySelection.range(D28, D27)).isInstanceOf(RequestRefusedException.class)
                .hasMessage("--from 2026-11-28 is after --to 2026-11-27; give the earlier day first");
        assertThatThrownBy(() -> DaySelection.recent(0)).isInstanceOf(RequestRefusedException.class)
                .hasMessage("--recent 0: the number of days must be at least 1");
        assertThat(DaySelection.recent(3).toString()).isEqualTo("the 3 most recent closed days");
        assertThatThrownBy(() -> DaySelection.parseDay("--from", "2026-13-01")).isInstanceOf(RequestRefusedException.class)
                .hasMessage("--from '2026-13-01' is not a day; write it as yyyy-MM-dd, e.g. 2026-11-27");
    }

    @Test
    void theCommandLineOfTheJobAndOfTheLauncherShareOneSelectionRule() {
        assertThat(DaySelection.of(D27, D28, null, false, 3)).isEqualTo(DaySelection.range(D27, D28));
        assertThat(DaySelection.of(null, null, null, false, 3)).isEqualTo(DaySelection.recent(3));
        assertThat(DaySelection.of(null, null, 5, false, 3)).isEqualTo(DaySelection.recent(5));
        assertThat(DaySelection.of(null, null, null, true, 3)).isEqualTo(DaySelection.dirty());
        assertThatThrownBy(() -> DaySelection.of(D27, D28, 2, false, 3)).isInstanceOf(RequestRefusedException.class)
                .hasMessage("choose one selection: --from/--to, --recent N or --dirty");
        assertThatThrownBy(() -> DaySelection.of(null, D28, null, false, 3))
                .hasMessage("--to 2026-11-28 needs --from (for one day give the same date to both)");
        assertThat(DaySelection.checkRunId("manual__2026-12-01T05:48:34.123+00:00.reconcile_selection.1"))
                .isEqualTo("manual__2026-12-01T05:48:34.123+00:00.reconcile_selection.1");
        assertThatThrownBy(() -> DaySelection.checkRunId("x'; DROP TABLE y")).isInstanceOf(RequestRefusedException.class)
                .hasMessageContaining("is not a run id");
        assertThatThrownBy(() -> DaySelection.checkRunId("")).hasMessageContaining("is not a run id");
        assertThatThrownBy(() -> DaySelection.checkRunId("a".repeat(201))).hasMessageContaining("is not a run id");
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
        assertThat(ReconcileArguments.parse(new String[] {"--dirty", "--run-id", "dag.run.1"}, env).runId()).isEqualTo("dag.run.1");
        assertThat(ReconcileArguments.parse(new String[] {"--run-id=r1"}, env).runId()).isEqualTo("r1");
        assertThat(ReconcileArguments.parse(new String[] {}, env).runId()).isNull();
        assertThatThrownBy(() -> ReconcileArguments.parse(new String[] {"--run-id", "a b"}, env)).hasMessageContaining("is not a run id");

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
