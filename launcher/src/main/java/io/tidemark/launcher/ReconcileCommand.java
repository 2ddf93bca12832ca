package io.tidemark.launcher;

import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.LocalDate;

import org.apache.spark.sql.SparkSession;

import io.tidemark.lakehouse.TidemarkConfig;
import io.tidemark.reconcile.DaySelection;
import io.tidemark.reconcile.ReconcileJob;
import io.tidemark.lakehouse.RequestRefusedException;
import io.tidemark.reconcile.ReconcileResult;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code tidemark reconcile}: the batch layer, through {@link ReconcileJob}. */
@Command(name = "reconcile", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"The batch layer: recompute closed days from raw_events (late records included, exact distinct subscribers), "
                + "replace their kpi_5m partitions atomically (source = batch) and write the drift to reconcile_report.",
                "Selection: --from/--to, --recent N (default: the reconcile.recent-days setting) or --dirty. "
                        + "Asking for a day that is not closed is refused (exit code 2); nothing is written then."})
final class ReconcileCommand extends TidemarkCommand {

    @Option(names = "--from", paramLabel = "DAY", converter = DayConverter.class, description = "First day (yyyy-MM-dd, UTC) of a range; needs --to.")
    LocalDate from;

    @Option(names = "--to", paramLabel = "DAY", converter = DayConverter.class, description = "Last day of the range, included; one day: the same as --from.")
    LocalDate to;

    @Option(names = "--recent", paramLabel = "N", description = "The N most recent closed days.")
    Integer recent;

    @Option(names = "--dirty", description = "Closed days whose raw record count differs from their KPIs (late records not folded in yet).")
    boolean dirty;

    @Option(names = "--dry-run", description = "Compute and print the drift; write nothing.")
    boolean dryRun;

    @Option(names = "--run-id", paramLabel = "ID", description = "The run's id in reconcile_report (letters, digits, _.:+@-); default: generated.")
    String runId;

    @Override
    public Integer call() {
        TidemarkConfig config = config();
        DaySelection selection = selection(config);
        SparkSession spark = spark(config, "tidemark-reconcile");
        try (PrintStream ps = new PrintStream(new LineOutputStream(out()), true, StandardCharsets.UTF_8)) {
            ReconcileResult result = new ReconcileJob(spark, config, ps).run(selection, dryRun, runId);
            ps.flush();
            say("%s: %d day%s%s", result.runId(), result.days().size(), result.days().size() == 1 ? "" : "s",
                    dryRun ? " computed, nothing written (dry run)" : " reconciled");
        } catch (RequestRefusedException e) {
            throw new UserError(e.getMessage(), e);
        } finally {
            release(spark);
        }
        return Tidemark.OK;
    }

    /** The day selection from the flags (the rules are DaySelection's), and a checked run id. */
    DaySelection selection(TidemarkConfig config) {
        return UserError.check(() -> {
            if (runId != null) {
                DaySelection.checkRunId(runId);
            }
            return DaySelection.of(from, to, recent, dirty, config.reconcileRecentDays());
        });
    }

    /** yyyy-MM-dd, refused with the reconcile job's own wording. */
    static final class DayConverter implements CommandLine.ITypeConverter<LocalDate> {
        @Override
        public LocalDate convert(String value) {
            try {
                return DaySelection.parseDay("day", value);
            } catch (IllegalArgumentException e) {
                throw new CommandLine.TypeConversionException("'" + value + "' is not a day; write it as yyyy-MM-dd, e.g. 2026-11-27");
            }
        }
    }
}
