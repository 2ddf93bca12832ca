package io.tidemark.launcher;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.spark.sql.streaming.StreamingQuery;
import org.apache.spark.sql.streaming.StreamingQueryListener;

import sun.misc.Signal;

/**
 * Ctrl-C and SIGTERM for long-running commands. The first signal runs {@code graceful} (on its own
 * thread) instead of shutting the JVM down at once, which would stop the SparkContext under a
 * running micro-batch; the second exits at once ({@code System.exit(130)}: shutdown hooks still run).
 */
final class GracefulStop {
    private final AtomicInteger signals = new AtomicInteger();

    private GracefulStop() {
    }

    /** Installs the handlers; without sun.misc.Signal, the JVM's default shutdown applies. */
    static GracefulStop install(Runnable graceful) {
        GracefulStop stop = new GracefulStop();
        for (String name : new String[] {"INT", "TERM"}) {
            try {
                Signal.handle(new Signal(name), s -> stop.onSignal(graceful));
            } catch (Throwable e) {
                // platform without this signal: default behaviour
            }
        }
        return stop;
    }

    boolean requested() {
        return signals.get() > 0;
    }

    private void onSignal(Runnable graceful) {
        if (signals.incrementAndGet() == 1) {
            Thread t = new Thread(graceful, "tidemark-graceful-stop");
            t.setDaemon(true);
            t.start();
        } else {
            new Thread(() -> System.exit(130), "tidemark-stop-now").start();
        }
    }

    /**
     * Stops a query between micro-batches: waits (up to {@code patience}) until no trigger is
     * running or the running batch has committed, then stops it. When batches run back to back the
     * next one has only just begun then; a batch cut short is replayed from the checkpoint.
     */
    static void stopBetweenBatches(StreamingQuery query, Duration patience) {
        CountDownLatch committed = new CountDownLatch(1);
        StreamingQueryListener listener = new StreamingQueryListener() {
            @Override
            public void onQueryStarted(QueryStartedEvent event) {
            }

            @Override
            public void onQueryProgress(QueryProgressEvent event) {
                if (event.progress().id().equals(query.id())) {
                    committed.countDown();
                }
            }

            @Override
            public void onQueryTerminated(QueryTerminatedEvent event) {
            }
        };
        query.sparkSession().streams().addListener(listener);
        try {
            long deadline = System.nanoTime() + patience.toNanos();
            while (query.isActive() && query.status().isTriggerActive() && System.nanoTime() < deadline) {
                if (committed.await(50, TimeUnit.MILLISECONDS)) {
                    break;
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } finally {
            query.sparkSession().streams().removeListener(listener);
        }
        try {
            query.stop();
        } catch (Exception e) {
            // stopping anyway
        }
    }
}
