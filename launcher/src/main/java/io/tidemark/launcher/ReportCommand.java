package io.tidemark.launcher;

import java.nio.file.Path;

import org.apache.spark.sql.SparkSession;

import io.tidemark.lakehouse.Lakehouse;
import io.tidemark.lakehouse.TidemarkConfig;
import io.tidemark.operations.HealthFigures;
import io.tidemark.operations.HealthReport;
import io.tidemark.lakehouse.RequestRefusedException;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code tidemark report}: the drift and health report, one self-contained HTML page ({@link HealthReport}). */
@Command(name = "report", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"Write the drift and health report: one self-contained HTML page (no network needed to open it) with charts "
                + "and the numbers under each: drift per day before and after reconcile, late records per day and how late, invalid "
                + "records by reason, freshness and throughput over time, closed and dirty days."})
final class ReportCommand extends TidemarkCommand {

    @Option(names = "--out", paramLabel = "FILE", defaultValue = "tidemark-report.html",
            description = "Where to write the page (default: ${DEFAULT-VALUE}; replaced atomically).")
    Path out;

    @Option(names = "--days", paramLabel = "N", defaultValue = "14", description = "The last N event days with data (default: ${DEFAULT-VALUE}).")
    String days;

    @Override
    public Integer call() throws Exception {
        int n;
        try {
            n = HealthReport.days(days);
        } catch (IllegalArgumentException e) {
            throw new UserError(e.getMessage());
        }
        TidemarkConfig config = config();
        SparkSession spark = spark(config, "tidemark-report");
        try {
            HealthFigures f = HealthReport.write(spark, Lakehouse.of(config), n, out);
            say("report: %s (%d days, %d invalid reasons, %d time points)", out.toAbsolutePath(), f.days().size(), f.invalid().size(),
                    f.timeline().size());
        } catch (RequestRefusedException e) {
            throw new UserError(e.getMessage(), e);
        } finally {
            release(spark);
        }
        return Tidemark.OK;
    }
}
