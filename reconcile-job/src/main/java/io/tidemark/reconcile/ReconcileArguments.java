package io.tidemark.reconcile;

import java.time.LocalDate;
import java.util.Map;

import io.tidemark.lakehouse.JobMain;
import io.tidemark.lakehouse.TidemarkConfig;
import io.tidemark.lakehouse.RequestRefusedException;

/**
 * The command line of {@link ReconcileJob#main}: {@code --from D --to D}, {@code --recent N},
 * {@code --dirty}, {@code --dry-run}, {@code --help}, and {@code key=value} settings (see
 * {@link TidemarkConfig.Key}). Options also take the {@code --option=value} form. Bad input is
 * refused with a {@link RequestRefusedException} (or the configuration's own
 * {@link IllegalArgumentException}) whose message is one line.
 */
public record ReconcileArguments(TidemarkConfig config, DaySelection selection, boolean dryRun, String runId, boolean help) {

    public static final String USAGE = """
            Usage: spark-submit --class io.tidemark.reconcile.ReconcileJob tidemark-spark-jobs.jar [selection] [--dry-run] [key=value ...]
            Recompute closed days from raw_events, replace their kpi_5m partitions atomically and report the drift.
              --from yyyy-MM-dd --to yyyy-MM-dd   these days, both included; every one must be closed
              --recent N                          the N most recent closed days (default: reconcile.recent-days)
              --dirty                             closed days whose raw record count differs from their KPIs
              --dry-run                           compute and print the drift, write nothing
              --run-id ID                         the run's id in reconcile_report (letters, digits, _.:+@-; default: generated)
              key=value                           a setting, e.g. lakehouse=/data/lakehouse; settings:
            """;

    static final JobMain.Spec COMMAND_LINE = JobMain.Spec.of("reconcile", USAGE).flags("--dirty", "--dry-run")
            .valued("--from", "--to", "--recent", "--run-id");

    /** Parses {@code args} over the defaults, the config file and {@code env}. */
    public static ReconcileArguments parse(String[] args, Map<String, String> env) {
        JobMain.Arguments a = JobMain.parse(COMMAND_LINE, args, env);
        if (a.help()) {
            return new ReconcileArguments(a.config(), null, false, null, true);
        }
        LocalDate from = a.value("--from").map(v -> DaySelection.parseDay("--from", v)).orElse(null);
        LocalDate to = a.value("--to").map(v -> DaySelection.parseDay("--to", v)).orElse(null);
        String runId = a.value("--run-id").map(DaySelection::checkRunId).orElse(null);
        Integer recent = a.value("--recent").map(v -> {
            try {
                return Integer.parseInt(v.trim());
            } catch (NumberFormatException e) {
                throw new RequestRefusedException("--recent '" + v + "' is not a whole number of days");
            }
        }).orElse(null);
        DaySelection selection = DaySelection.of(from, to, recent, a.has("--dirty"), a.config().reconcileRecentDays());
        return new ReconcileArguments(a.config(), selection, a.has("--dry-run"), runId, false);
    }

    public static String usage() {
        return JobMain.usage(COMMAND_LINE);
    }
}
