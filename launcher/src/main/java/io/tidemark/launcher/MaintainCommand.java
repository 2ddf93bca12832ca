package io.tidemark.launcher;

import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;

import org.apache.spark.sql.SparkSession;

import io.tidemark.lakehouse.TidemarkConfig;
import io.tidemark.lakehouse.CommitRetry;
import io.tidemark.operations.Maintenance;
import io.tidemark.lakehouse.RequestRefusedException;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code tidemark maintain}: compaction of closed days and vacuum, through {@link Maintenance}. */
@Command(name = "maintain", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"Compact the closed days of raw_events, late_events, dead_letter and kpi_5m (OPTIMIZE, closed days only, so it "
                + "never contends with the stream), then vacuum files older than maintain.vacuum-retention (default 7 days).",
                "Prints a line per table: days compacted, files and bytes before and after, files vacuumed. Exit code 1 when a table "
                        + "could not be compacted (a reconcile kept winning), 2 on bad input."})
final class MaintainCommand extends TidemarkCommand {

    @Option(names = "--dry-run", description = "Print what would be compacted and vacuumed; write nothing.")
    boolean dryRun;

    @Option(names = "--no-vacuum", description = "Compact only.")
    boolean noVacuum;

    @Option(names = "--force", description = "Allow a vacuum retention below Delta's safety minimum of 7 days (only when nothing reads or "
            + "writes the tables meanwhile).")
    boolean force;

    @Override
    public Integer call() {
        TidemarkConfig config = config();
        SparkSession spark = spark(config, "tidemark-maintain");
        try (PrintStream ps = new PrintStream(new LineOutputStream(out()), true, StandardCharsets.UTF_8)) {
            List<Maintenance.TableReport> reports = new Maintenance(spark, config, ps, CommitRetry.defaults())
                    .run(new Maintenance.Options(dryRun, noVacuum ? null : config.vacuumRetention(), force));
            ps.flush();
            if (reports.stream().anyMatch(r -> r.problem() != null)) {
                say("maintain: some tables could not be compacted (see PROBLEM above); run it again");
                return 1;
            }
        } catch (RequestRefusedException e) {
            throw new UserError(e.getMessage(), e);
        } finally {
            release(spark);
        }
        return Tidemark.OK;
    }
}
