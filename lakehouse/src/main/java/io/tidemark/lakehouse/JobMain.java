package io.tidemark.lakehouse;

import java.util.function.Function;

import org.apache.spark.sql.SparkSession;

/**
 * How the batch jobs (reconcile, maintain, report) end under {@code spark-submit}: exit status 2 for
 * a refused request (nothing written), 1 for a failure, each with one line {@code tidemark <command>: ...}
 * printed last, after Spark's own shutdown output, so an operator (or Airflow's log tail) sees it.
 */
public final class JobMain {
    private JobMain() {
    }

    /** A command line that could not be parsed: exit 2 with its one-line reason. */
    public static void refuseArguments(String command, IllegalArgumentException e) {
        System.err.println("tidemark " + command + ": " + CommitRetry.oneLine(e));
        System.exit(2);
    }

    /**
     * Runs {@code body} in a new Spark session and exits accordingly.
     *
     * @param body returns null when done, else the one-line reason of a partial failure (exit 1)
     */
    public static void run(String command, TidemarkConfig config, Function<SparkSession, String> body) {
        SparkSession spark = SparkSessions.create(config, "tidemark-" + command);
        int status = 0;
        String message = null;
        try {
            message = body.apply(spark);
            status = message == null ? 0 : 1;
        } catch (RequestRefusedException e) {
            status = 2;
            message = CommitRetry.oneLine(e);
        } catch (StorageCheck.StorageUnavailableException e) {
            status = 1;
            message = e.getMessage();
        } catch (RuntimeException e) {
            e.printStackTrace();
            status = 1;
            message = CommitRetry.oneLine(e);
        } finally {
            spark.stop();
        }
        if (status != 0) {
            System.err.println("tidemark " + command + ": " + message);
            System.exit(status);
        }
    }
}
