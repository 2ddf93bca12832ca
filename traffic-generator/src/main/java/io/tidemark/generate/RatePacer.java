package io.tidemark.generate;

import java.util.function.LongSupplier;

/**
 * Token bucket for a steady message rate: {@link #acquire()} blocks (sleeping, never spinning)
 * until the next message is due. Sleeps only when at least {@value #MIN_SLEEP_NANOS} ns ahead of
 * schedule, so high rates are sent in small bursts with millisecond sleeps between them; the
 * average rate stays exact. After a stall, at most {@value #BURST_NANOS} ns of missed sends are
 * caught up at full speed, the rest is forgotten.
 */
final class RatePacer {

    /** How the pacer waits; {@link Thread#sleep} in production, a fake clock in tests. */
    @FunctionalInterface
    interface Sleeper {
        void sleepNanos(long nanos) throws InterruptedException;

        Sleeper THREAD_SLEEP = nanos -> Thread.sleep(nanos / 1_000_000, (int) (nanos % 1_000_000));
    }

    static final long MIN_SLEEP_NANOS = 1_000_000L;
    static final long BURST_NANOS = 100_000_000L;

    private final double intervalNanos;
    private final LongSupplier nanoTime;
    private final Sleeper sleeper;
    private long origin;
    private double next = Double.NaN;

    RatePacer(double ratePerSecond, LongSupplier nanoTime, Sleeper sleeper) {
        if (!(ratePerSecond > 0) || Double.isInfinite(ratePerSecond)) {
            throw new IllegalArgumentException("rate must be a finite number > 0; got " + ratePerSecond);
        }
        this.intervalNanos = 1e9 / ratePerSecond;
        this.nanoTime = nanoTime;
        this.sleeper = sleeper;
    }

    /** Waits until the next message may be sent. */
    void acquire() throws InterruptedException {
        long now = nanoTime.getAsLong();
        if (Double.isNaN(next)) {
            origin = now;
            next = 0;
        }
        double relNow = now - origin;
        if (next < relNow - BURST_NANOS) {
            next = relNow - BURST_NANOS;
        }
        long wait = (long) (next - relNow);
        if (wait >= MIN_SLEEP_NANOS) {
            sleeper.sleepNanos(wait);
        }
        next += intervalNanos;
    }
}
