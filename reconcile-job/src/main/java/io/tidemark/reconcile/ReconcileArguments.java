package io.tidemark.reconcile;

import java.time.LocalDate;
import java.util.Map;

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

    /** Parses {@code args} over the defaults, the config file and {@code env}. */
    public static ReconcileArguments parse(String[] args, Map<String, String> env) {
        TidemarkConfig.Builder settings = TidemarkConfig.load(null, env);
        LocalDate from = null;
        LocalDate to = null;
        Integer recent = null;
        boolean dirty = false;
        boolean dryRun = false;
        String runId = null;
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            String name = a;
            String value = null;
            if (a.startsWith("--") && a.indexOf('=') > 0) {
                name = a.substring(0, a.indexOf('='));
                value = a.substring(a.indexOf('=') + 1);
            }
            switch (name) {
                case "--help", "-h" -> {
                    return new ReconcileArguments(settings.build(), null, false, null, true);
                }
                case "--dry-run" -> dryRun = true;
                case "--dirty" -> dirty = true;
                case "--from" -> {
                    if (value == null) value = next(args, ++i, name);
                    from = DaySelection.parseDay(name, value);
                }
                case "--to" -> {
                    if (value == null) value = next(args, ++i, name);
                    to = DaySelection.parseDay(name, value);
                }
                case "--run-id" -> {
                    if (value == null) value = next(args, ++i, name);
                    runId = DaySelection.checkRunId(value);
                }
                case "--recent" -> {
                    if (value == null) value = next(args, ++i, name);
                    try {
                        recent = Integer.parseInt(value.trim());
                    } catch (NumberFormatException e) {
                        throw new RequestRefusedException("--recent '" + value + "' is not a whole number of days");
                    }
                }
                default -> {
                    int eq = a.indexOf('=');
                    if (a.startsWith("-") || eq <= 0) {
                        throw new RequestRefusedException("argument '" + a + "' is neither an option (--from, --to, --recent, --dirty, "
                                + "--dry-run, --run-id, --help) nor a key=value setting");
                    }
                    settings.set(a.substring(0, eq), a.substring(eq + 1));
                }
            }
        }
        TidemarkConfig config = settings.build();
        DaySelection selection = DaySelection.of(from, to, recent, dirty, config.reconcileRecentDays());
        return new ReconcileArguments(config, selection, dryRun, runId, false);
    }

    private static String next(String[] args, int i, String option) {
        if (i >= args.length) {
            throw new RequestRefusedException(option + " needs a value");
        }
        return args[i];
    }

    public static String usage() {
        return USAGE + TidemarkConfig.describeKeys();
    }
}
