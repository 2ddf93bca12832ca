package io.tidemark.bench;

import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.StreamingQuery;

import io.tidemark.lakehouse.SparkSessions;
import io.tidemark.lakehouse.TidemarkConfig;
import io.tidemark.stream.MicroBatchWriter;
import io.tidemark.stream.StreamingJob;

/**
 * The speed layer as {@link FreshnessBenchmark} and {@link LongHaulBenchmark} run it, in a JVM of its
 * own: the Tidemark stream with a processing-time trigger (not AvailableNow), until its standard
 * input is closed (or the file {@code workDir/stop} appears); it then stops between micro-batches
 * and exits 0.
 *
 * <p>Standard output, for the orchestrator: {@code STARTED <epoch ms>} once the query runs, then one
 * {@code BATCH <batch id> <records in> <duration ms> <finished epoch ms>} line per committed batch
 * (after its stream_progress row has committed), {@code STOPPED <epoch ms>} at the end.
 *
 * <p>Arguments: {@code bootstrap topic triggerMillis workDir [key=value ...]}: the settings after
 * the fourth argument are further Tidemark settings (e.g. {@code stream.max-offsets-per-trigger=20}).
 */
public final class FreshnessStreamJob {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String topic = args[1];
        long triggerMs = Long.parseLong(args[2]);
        Path work = Path.of(args[3]);
        Files.createDirectories(work);
        TidemarkConfig.Builder settings = TidemarkConfig.builder()
                .set(TidemarkConfig.Key.KAFKA_BOOTSTRAP, bootstrap)
                .set(TidemarkConfig.Key.TOPIC, topic)
                .set(TidemarkConfig.Key.TRIGGER, triggerMs + " ms")
                .set(TidemarkConfig.Key.LAKEHOUSE, work.resolve("lakehouse").toString())
                .set(TidemarkConfig.Key.CHECKPOINT, work.resolve("checkpoint").toString());
        for (int i = 4; i < args.length; i++) {
            int eq = args[i].indexOf('=');
            settings.set(args[i].substring(0, eq), args[i].substring(eq + 1));
        }
        TidemarkConfig config = settings.build();
        SparkSession spark = SparkSessions.create(config, "bench-freshness-stream");
        MicroBatchWriter.BatchListener listener = progress -> {
            long id = progress.batchId();
            long in = progress.recordsIn();
            long ms = progress.durationMs();
            long finished = progress.finishedAt().toEpochMilli();
            synchronized (System.out) {
                System.out.println("BATCH " + id + " " + in + " " + ms + " " + finished);
                System.out.flush();
            }
        };
        StreamingJob job = new StreamingJob(spark, config, listener);
        StreamingQuery q = job.start(false);
        System.out.println("STARTED " + System.currentTimeMillis());
        System.out.flush();

        CountDownLatch stop = new CountDownLatch(1);
        Thread stdin = new Thread(() -> {
            try (InputStream in = System.in) {
                byte[] buf = new byte[256];
                while (in.read(buf) >= 0) {
                    // anything but end of input is ignored
                }
            } catch (Exception e) {
                // treated as end of input
            }
            stop.countDown();
        }, "freshness-stdin");
        stdin.setDaemon(true);
        stdin.start();
        Path stopFile = work.resolve("stop");
        while (q.isActive() && !Files.exists(stopFile) && !stop.await(200, TimeUnit.MILLISECONDS)) {
            // running
        }
        int exit = 0;
        if (q.isActive()) {
            stopBetweenBatches(q, Duration.ofMinutes(2));
        }
        if (q.exception().isDefined()) {
            System.err.println("freshness stream: the query failed: " + q.exception().get());
            q.exception().get().printStackTrace();
            exit = 1;
        }
        job.close();
        System.out.println("STOPPED " + System.currentTimeMillis());
        System.out.flush();
        spark.stop();
        System.exit(exit);
    }

    /** Waits (up to {@code patience}) until no trigger is running, then stops the query. */
    static void stopBetweenBatches(StreamingQuery q, Duration patience) throws Exception {
        long deadline = System.nanoTime() + patience.toNanos();
        while (q.isActive() && q.status().isTriggerActive() && System.nanoTime() < deadline) {
            Thread.sleep(20);
        }
        q.stop();
    }

    private FreshnessStreamJob() {
    }
}
