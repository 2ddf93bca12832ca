package io.tidemark.tests;

import java.util.ArrayList;
import java.util.List;

import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.StreamingQuery;

import io.tidemark.lakehouse.TidemarkConfig;
import io.tidemark.stream.StreamingJob;

/**
 * The streaming query in the test's JVM, restarted from its checkpoint if it dies, with every
 * failure recorded, so a failing stream does not hide what the rest of the test has to say.
 */
final class LiveStream {
    final List<String> failures = new ArrayList<>();
    private final SparkSession spark;
    private final TidemarkConfig config;
    private StreamingJob job;
    private StreamingQuery query;

    LiveStream(SparkSession spark, TidemarkConfig config) throws Exception {
        this.spark = spark;
        this.config = config;
        start();
    }

    private void start() throws Exception {
        job = new StreamingJob(spark, config, null);
        query = job.start(false);
    }

    void keepRunning() throws Exception {
        if (!query.isActive()) {
            String why = query.exception().isDefined() ? firstLine(query.exception().get()) : "stopped";
            System.out.println("stream died, restarting from its checkpoint: " + why);
            failures.add(why);
            job.close();
            start();
        }
    }

    /** Waits until the stream has processed everything in the topic so far; it keeps running. */
    void drain() throws Exception {
        for (int attempt = 0; ; attempt++) {
            keepRunning();
            try {
                query.processAllAvailable();
                return;
            } catch (RuntimeException e) {
                if (attempt >= 3) {
                    throw e;
                }
            }
        }
    }

    /** Whether a micro-batch is being worked on now. */
    boolean batchRunning() {
        return query.isActive() && query.status().isTriggerActive();
    }

    void drainAndStop() throws Exception {
        drain();
        query.stop();
        job.close();
    }

    private static String firstLine(Throwable t) {
        String m = String.valueOf(t.getMessage());
        return m.contains("\n") ? m.substring(0, m.indexOf('\n')) : m;
    }
}
