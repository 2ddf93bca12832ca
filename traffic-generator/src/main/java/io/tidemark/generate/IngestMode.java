package io.tidemark.generate;

/**
 * Where the generator's event clock comes from.
 *
 * <p>The event clock is the "now" of the simulated network: on-time events are stamped at most
 * {@link TrafficSpec#outOfOrderSpread()} before it, late events
 * {@link TrafficSpec#lateDelayMin()}..{@link TrafficSpec#lateDelayMax()} before it.
 */
public enum IngestMode {
    /**
     * {@link #BACKLOG} when an {@link TrafficSpec#eventClockStart()} is given or the traffic is
     * unpaced ({@code ratePerSecond = 0}), otherwise {@link #LIVE}.
     */
    AUTO,
    /**
     * The event clock is the wall clock at the moment each message is generated, so event times
     * are realistic against ingest time. Not reproducible byte for byte.
     */
    LIVE,
    /**
     * A synthetic event clock: it starts at {@link TrafficSpec#eventClockStart()} (default: now minus
     * the span of the backlog) and advances {@code 1 / eventsPerSecondOfEventTime} seconds per
     * message, whatever the real sending rate. With an explicit start the output is a pure function
     * of the spec: byte-identical for the same seed.
     */
    BACKLOG
}
