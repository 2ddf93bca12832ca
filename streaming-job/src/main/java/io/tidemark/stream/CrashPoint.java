package io.tidemark.stream;

import java.util.Set;

/**
 * Named points inside a micro-batch where a crash test stops the batch dead. Two ways:
 * <ul>
 * <li>the system property {@code tidemark.crash-at=<point>@<batch>[,...]} halts the JVM as
 * {@code kill -9} would (no shutdown hooks, no finally blocks): a child-process test;</li>
 * <li>{@link #throwAt} makes the point throw {@link Crash} out of the batch, so the query fails
 * where it stands and a test restarts it in the same JVM: "the process died between commit X and
 * commit Y" without starting a JVM per crash.</li>
 * </ul>
 * Unarmed (always, in production) a point costs one volatile read.
 */
public enum CrashPoint {
    /** Classified and cached; nothing written. */
    AFTER_CLASSIFY,
    /** raw_events committed; the other commits may be running. */
    AFTER_RAW_EVENTS,
    /** A KPI table committed (each one, in turn); the other commits may be running. */
    AFTER_KPI_WRITE,
    /** Every table but stream_progress committed. */
    BEFORE_PROGRESS,
    /** stream_progress committed; Spark has not yet written its commit log for the batch. */
    AFTER_PROGRESS;

    public static final String PROPERTY = "tidemark.crash-at";

    private record Armed(Set<String> points, boolean halt) {
    }

    private static volatile Armed armed = new Armed(parse(System.getProperty(PROPERTY)), true);

    private static Set<String> parse(String v) {
        return v == null || v.isBlank() ? Set.of() : Set.of(v.toUpperCase().replace('-', '_').split(","));
    }

    /** What an in-process crash throws out of the batch: the point and the batch it stopped. */
    public static final class Crash extends RuntimeException {
        private static final long serialVersionUID = 1L;

        Crash(CrashPoint point, long batchId) {
            super("crash test: stopped at " + point + " of batch " + batchId);
        }
    }

    /**
     * Arms {@code points} ({@code <point>@<batch>}, as the property) to throw {@link Crash} in this
     * JVM until the returned handle is closed.
     */
    public static AutoCloseable throwAt(String... points) {
        armed = new Armed(parse(String.join(",", points)), false);
        return () -> armed = new Armed(Set.of(), false);
    }

    void reached(long batchId) {
        Armed a = armed;
        if (!a.points().isEmpty() && a.points().contains(name() + "@" + batchId)) {
            if (!a.halt()) {
                throw new Crash(this, batchId);
            }
            System.err.println("tidemark: crash test: halting at " + name() + " of batch " + batchId);
            Runtime.getRuntime().halt(137);
        }
    }
}
