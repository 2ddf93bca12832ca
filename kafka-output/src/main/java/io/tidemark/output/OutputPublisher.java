package io.tidemark.output;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;

import org.apache.spark.sql.SparkSession;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import io.tidemark.lakehouse.Lakehouse;
import io.tidemark.pipeline.Pipeline;

/**
 * The Kafka output of every KPI table that declares one: a {@link KpiPublisher} each.
 *
 * <p>The stream runs it in the background ({@link #start}): woken after each committed batch, and
 * every few seconds besides (to pick up reconcile's commits), it publishes what has committed, on
 * its own thread, so a slow or unreachable broker never holds a batch: the Delta tables stay the
 * truth and the lag grows until Kafka is back. Reconcile publishes once after its commits
 * ({@link #publishNow}); whichever runs first publishes, the other finds nothing left.
 */
public final class OutputPublisher implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(OutputPublisher.class);
    /** How often the background round runs without a batch to wake it. */
    static final Duration IDLE_ROUND = Duration.ofSeconds(5);
    private static final long WARN_EVERY_MS = 60_000;

    private final List<KpiPublisher> publishers;
    private final Object lock = new Object();
    private boolean pending;
    private boolean stopping;
    private Thread loop;
    private final Map<String, Long> lastWarnedMs = new TreeMap<>();
    /** Per table: whether its last round failed (what the metrics endpoint shows). */
    private final Map<String, Boolean> failing = new ConcurrentHashMap<>();

    private OutputPublisher(List<KpiPublisher> publishers) {
        this.publishers = List.copyOf(publishers);
    }

    /** The publishers of the pipeline's tables with Kafka output; empty when none has one. */
    public static Optional<OutputPublisher> of(Lakehouse lakehouse, Pipeline pipeline, String defaultBootstrapServers) {
        List<KpiPublisher> out = new ArrayList<>();
        for (Pipeline.KpiTable t : pipeline.tables()) {
            if (t.kafkaOutput().isPresent()) {
                out.add(new KpiPublisher(lakehouse, t, defaultBootstrapServers));
            }
        }
        return out.isEmpty() ? Optional.empty() : Optional.of(new OutputPublisher(out));
    }

    /** Creates or checks every output and progress topic ({@link KpiPublisher#prepareTopics}). */
    public void prepareTopics() {
        publishers.forEach(KpiPublisher::prepareTopics);
    }

    /** Starts publishing in the background, beginning with whatever committed before (a restart's catch-up). */
    public void start(SparkSession spark) {
        loop = new Thread(() -> {
            SparkSession.setActiveSession(spark);
            spark.sparkContext().setLocalProperty("spark.sql.execution.id", null);
            while (true) {
                synchronized (lock) {
                    if (!pending && !stopping) {
                        try {
                            lock.wait(IDLE_ROUND.toMillis());
                        } catch (InterruptedException e) {
                            return;
                        }
                    }
                    if (stopping) {
                        return;
                    }
                    pending = false;
                }
                round(spark);
            }
        }, "tidemark-kafka-output");
        loop.setDaemon(true);
        loop.start();
    }

    /** A batch has committed: publish it soon. */
    public void committed() {
        synchronized (lock) {
            pending = true;
            lock.notifyAll();
        }
    }

    /** One round over every table now, on the calling thread; failures are logged, not thrown (the tables hold the truth). */
    public void publishNow(SparkSession spark) {
        round(spark);
    }

    private void round(SparkSession spark) {
        for (KpiPublisher p : publishers) {
            String name = p.table().name();
            try {
                p.publishPending(spark);
                failing.put(name, false);
            } catch (RuntimeException e) {
                failing.put(name, true);
                long now = System.currentTimeMillis();
                Long warned = lastWarnedMs.get(name);
                if (warned == null || now - warned >= WARN_EVERY_MS) {
                    lastWarnedMs.put(name, now);
                    LOG.warn("publishing {} to Kafka failed ({}: {}); its commits stay in Delta and are published on a later round", name,
                            e.getClass().getSimpleName(), e.getMessage());
                }
                LOG.debug("publishing {} failed", name, e);
            }
        }
    }

    /** Per table: the publish lag as of its last round ({@link KpiPublisher#lastLag}), when known; no I/O. */
    public Map<String, Long> lastLag() {
        Map<String, Long> out = new TreeMap<>();
        publishers.forEach(p -> p.lastLag().ifPresent(l -> out.put(p.table().name(), l)));
        return out;
    }

    /** Per table that has run a round: 1 when its last round failed, else 0. */
    public Map<String, Boolean> failing() {
        return new TreeMap<>(failing);
    }

    /** One line: per table, its topic, the last version published and the lag, as of its last round. */
    public String describe() {
        Map<String, Long> lag = lastLag();
        List<String> parts = new ArrayList<>();
        for (KpiPublisher p : publishers) {
            String name = p.table().name();
            parts.add(name + " -> " + p.table().output().topic() + " " + p.published().map(v -> "published up to version " + v
                    + (lag.containsKey(name) ? ", " + lag.get(name) + " behind" : "")).orElse("not published yet (see the log)"));
        }
        return String.join("; ", parts);
    }

    /** Per table, its output as {@code tidemark status} shows it ({@link KpiPublisher#status}). */
    public List<KpiPublisher.OutputStatus> status(SparkSession spark, Duration timeout) {
        return publishers.stream().map(p -> p.status(spark, timeout)).toList();
    }

    /**
     * Stops the background round, runs a last one with {@code spark} (what the final batches committed),
     * and closes the producers.
     */
    public void stop(SparkSession spark) {
        stopLoop();
        round(spark);
        close();
    }

    private void stopLoop() {
        synchronized (lock) {
            stopping = true;
            lock.notifyAll();
        }
        if (loop != null) {
            try {
                loop.join(Duration.ofSeconds(120).toMillis());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    @Override
    public void close() {
        stopLoop();
        publishers.forEach(KpiPublisher::close);
    }
}
