package io.tidemark.lakehouse;

import java.time.LocalDate;

/**
 * A job's commit to a table failed (after the retries, when the cause was a concurrent writer): a
 * reconcile's replacement of a day, a compaction, a retention delete. Each is a single Delta commit, so
 * what it would have changed is wholly as it was; the message says what to do. Reconcile's days before
 * the failed one are done. The command-line entry point exits with status 1 ({@link JobMain}).
 */
public final class CommitFailedException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final LocalDate day;

    public CommitFailedException(LocalDate day, String message, Throwable cause) {
        super(message, cause);
        this.day = day;
    }

    /** The day whose commit failed; null when the commit was not about one day (a whole-table compaction). */
    public LocalDate day() {
        return day;
    }
}
