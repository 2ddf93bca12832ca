package io.tidemark.stream;

import java.util.Set;

/**
 * Named points inside a micro-batch where a crash test can halt the JVM as {@code kill -9} would
 * (no shutdown hooks, no finally blocks). Armed only by the system property
 * {@code tidemark.crash-at=<point>@<batch>[,...]}; unset (always, in production) it costs one
 * field read.
 */
public enum CrashPoint {
    /** Classified and cached; nothing written. */
    AFTER_CLASSIFY,
    /** raw_events committed; the other commits may be running. */
    AFTER_RAW_EVENTS,
    /** kpi_5m committed; the other commits may be running. */
    AFTER_KPI_WRITE,
    /** Every table but stream_progress committed. */
    BEFORE_PROGRESS,
    /** stream_progress committed; Spark has not yet written its commit log for the batch. */
    AFTER_PROGRESS;

    public static final String PROPERTY = "tidemark.crash-at";
    private static final Set<String> ARMED = parse(System.getProperty(PROPERTY));

    private static Set<String> parse(String v) {
        return v == null || v.isBlank() ? Set.of() : Set.of(v.toUpperCase().replace('-', '_').split(","));
    }

    void reached(long batchId) {
        if (!ARMED.isEmpty() && ARMED.contains(name() + "@" + batchId)) {
            System.err.println("tidemark: crash test: halting at " + name() + " of batch " + batchId);
            Runtime.getRuntime().halt(137);
        }
    }
}
