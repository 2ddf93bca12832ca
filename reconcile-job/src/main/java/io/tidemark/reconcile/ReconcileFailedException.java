package io.tidemark.reconcile;

import java.time.LocalDate;

/**
 * Reconciling a day failed (after the retries, when the cause was a concurrent writer). The days
 * before it in the run are reconciled; the failed day is wholly as it was, since its replacement is a
 * single Delta commit. The command-line entry point exits with status 1.
 */
public final class ReconcileFailedException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final LocalDate day;

    public ReconcileFailedException(LocalDate day, String message, Throwable cause) {
        super(message, cause);
        this.day = day;
    }

    /** The day that failed. */
    public LocalDate day() {
        return day;
    }
}
