package io.tidemark.reconcile;

import java.util.function.Function;

import org.apache.spark.sql.SparkSession;

import io.tidemark.lakehouse.SparkSessions;
import io.tidemark.lakehouse.StorageCheck;
import io.tidemark.lakehouse.TidemarkConfig;

/**
 * How the batch side's jobs end under {@code spark-submit}: exit status 2 for a refused request
 * (nothing written), 1 for a failure, each with one line {@code tidemark <command>: ...} printed
 * last, after Spark's own shutdown output, so an operator (or Airflow's log tail) sees it.
 */
final class BatchJobMain {
    private BatchJobMain() {
    }

    /** A command line that could not be parsed: exit 2 with its one-line reason. */
    static void refuseArguments(String command, IllegalArgumentException e) {
        System.err.println("tidemark " + command + ": " + CommitRetry.oneLine(e));
        System.exit(2);
    }

    /**
     * Runs {@code body} in a new Spark session and exits accordingly.
     *
     * @param body returns null when done, else the one-line reason of a partial failure (exit 1)
     */
    static void run(String command, TidemarkConfig config, Function<SparkSession, String> body) {
        SparkSession spark = SparkSessions.create(config, "tidemark-" + command);
        int status = 0;
        String message = null;
        try {
            message = body.apply(spark);
            status = message == null ? 0 : 1;
        } catch (ReconcileRefusedException e) {
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
