package io.tidemark.operations;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;

import org.apache.spark.sql.SparkSession;

import io.tidemark.lakehouse.JobMain;
import io.tidemark.lakehouse.Lakehouse;
import io.tidemark.lakehouse.RequestRefusedException;
import io.tidemark.lakehouse.TidemarkConfig;

/**
 * The drift and health report: {@link HealthFigures} read from the lakehouse, drawn by
 * {@link HealthPage} into one self-contained HTML file.
 *
 * <p>{@code tidemark report --out report.html}, or under spark-submit
 * {@code --class io.tidemark.operations.HealthReport ... --out report.html [--days N] [key=value ...]}.
 */
public final class HealthReport {

    private HealthReport() {
    }

    /** Writes the page of {@code lakehouse} to {@code out}; returns the figures it shows. */
    public static HealthFigures write(SparkSession spark, Lakehouse lakehouse, int days, Path out) throws IOException {
        HealthFigures f = HealthFigures.read(spark, lakehouse, days);
        Path parent = out.toAbsolutePath().getParent();
        if (parent != null) {
            Files.createDirectories(parent);
        }
        Path tmp = Files.createTempFile(parent, ".report-", ".html.tmp");
        Files.writeString(tmp, HealthPage.html(f), StandardCharsets.UTF_8);
        Files.move(tmp, out, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        return f;
    }

    static final String USAGE = """
            Usage: spark-submit --class io.tidemark.operations.HealthReport tidemark-spark-jobs.jar --out FILE [--days N] [key=value ...]
            Write the drift and health report: one self-contained HTML page (charts and the numbers under them).
              --out FILE    where to write it (replaced atomically)
              --days N      the last N event days with data (default 14)
              key=value     a setting, e.g. lakehouse=/data/lakehouse; settings:
            """;

    static final JobMain.Spec COMMAND_LINE = JobMain.Spec.of("report", USAGE).valued("--out", "--days");

    /** Entry point for spark-submit ({@link JobMain}): exit 2 on bad input, 1 when the report could not be written. */
    public static void main(String[] args) {
        JobMain.Arguments a = JobMain.parseOrExit(COMMAND_LINE, args);
        Path target = JobMain.orRefuse(COMMAND_LINE.command(),
                () -> Path.of(a.value("--out").orElseThrow(() -> new RequestRefusedException("--out FILE is required"))));
        int n = JobMain.orRefuse(COMMAND_LINE.command(), () -> a.value("--days").map(HealthReport::days).orElse(14));
        TidemarkConfig config = a.config();
        JobMain.run(COMMAND_LINE.command(), config, spark -> {
            try {
                Lakehouse lakehouse = Lakehouse.of(config);
                HealthFigures f = write(spark, lakehouse, n, target);
                System.out.println("tidemark report: " + target.toAbsolutePath() + " (" + f.days().size() + " days, " + f.timeline().size() + " time points)");
                return null;
            } catch (IOException e) {
                return "cannot write " + target + ": " + e.getMessage();
            }
        });
    }

    /** Parses --days: a whole number from 1 to 3660. */
    public static int days(String text) {
        try {
            int n = Integer.parseInt(text.trim());
            if (n >= 1 && n <= 3660) {
                return n;
            }
        } catch (NumberFormatException e) {
            // below
        }
        throw new IllegalArgumentException("--days must be a whole number from 1 to 3660, got '" + text + "'");
    }
}
