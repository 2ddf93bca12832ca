package io.tidemark.lakehouse;

import java.time.Duration;
import java.time.LocalDate;
import java.util.concurrent.ThreadLocalRandom;

import io.delta.exceptions.DeltaConcurrentModificationException;

/**
 * Re-runs a Delta commit that lost a race to a concurrent writer.
 *
 * <p>Delta retries a commit by itself only when there is no logical conflict; a real one (another
 * writer added to or removed from the partition we replace, another reconcile of the same day)
 * reaches the caller as a {@link DeltaConcurrentModificationException} and is never re-run for us
 * (observed with forced overlaps on Delta 4.4). Replacing a day is idempotent, so the whole overwrite is rebuilt and re-run, with
 * jittered exponential backoff so two racing reconciles do not collide again in lock step, at most
 * {@link #DEFAULT_MAX_ATTEMPTS} times; then the day fails loudly.
 */
public final class CommitRetry {

    public static final int DEFAULT_MAX_ATTEMPTS = 5;
    public static final Duration DEFAULT_FIRST_BACKOFF = Duration.ofMillis(500);

    /** One attempt at the commit. */
    @FunctionalInterface
    public interface Attempt {
        void run() throws Exception;
    }

    /** Waits between attempts (replaced in tests). */
    @FunctionalInterface
    public interface Sleeper {
        void sleep(Duration d) throws InterruptedException;
    }

    private final int maxAttempts;
    private final Duration firstBackoff;
    private final Sleeper sleeper;

    public CommitRetry(int maxAttempts, Duration firstBackoff, Sleeper sleeper) {
        if (maxAttempts < 1) {
            throw new IllegalArgumentException("maxAttempts must be at least 1, got " + maxAttempts);
        }
        this.maxAttempts = maxAttempts;
        this.firstBackoff = firstBackoff;
        this.sleeper = sleeper;
    }

    public static CommitRetry defaults() {
        return new CommitRetry(DEFAULT_MAX_ATTEMPTS, DEFAULT_FIRST_BACKOFF, d -> Thread.sleep(d.toMillis()));
    }

    /**
     * Runs {@code attempt} until it succeeds or {@code maxAttempts} attempts lost to concurrent
     * writers. Any other failure propagates at once, wrapped in a {@link CommitFailedException}
     * naming the day.
     *
     * @param day      the day the attempt writes, or null when it is not about one day (a whole-table compaction)
     * @param ifGaveUp what the operator does when the attempts ran out, e.g. "re-run reconcile for it":
     *                 the advice belongs to the operation, not to the retry
     * @return the number of attempts made (1 when the first one committed)
     */
    public int run(LocalDate day, String what, String ifGaveUp, Attempt attempt) {
        String subject = day == null ? what : what + " of " + day;
        for (int n = 1; ; n++) {
            try {
                attempt.run();
                return n;
            } catch (Exception e) {
                DeltaConcurrentModificationException conflict = conflictIn(e);
                if (conflict == null) {
                    throw new CommitFailedException(day, subject + " failed: " + Errors.oneLine(e), e);
                }
                if (n >= maxAttempts) {
                    throw new CommitFailedException(day, subject + " gave up after " + n
                            + " attempts: concurrent writers kept conflicting with it (last: " + conflict.getClass().getSimpleName() + ": "
                            + Errors.oneLine(conflict) + "). " + (day == null ? "The table is unchanged; " : "The day is unchanged; ") + ifGaveUp + ".", e);
                }
                try {
                    sleeper.sleep(backoff(n));
                } catch (InterruptedException ie) {
                    Thread.currentThread().interrupt();
                    throw new CommitFailedException(day, subject + " interrupted while waiting to retry", ie);
                }
            }
        }
    }

    /** Backoff before attempt {@code n + 1}: first * 2^(n-1), jittered to between half and all of it. */
    Duration backoff(int n) {
        long full = firstBackoff.toMillis() << Math.min(n - 1, 16);
        return Duration.ofMillis(full / 2 + ThreadLocalRandom.current().nextLong(full / 2 + 1));
    }

    /** The Delta conflict in {@code t}'s cause chain, if any. */
    static DeltaConcurrentModificationException conflictIn(Throwable t) {
        for (Throwable c = t; c != null; c = c.getCause() == c ? null : c.getCause()) {
            if (c instanceof DeltaConcurrentModificationException d) {
                return d;
            }
        }
        return null;
    }
}
