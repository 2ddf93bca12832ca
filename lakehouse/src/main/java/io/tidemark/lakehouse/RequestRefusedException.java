package io.tidemark.lakehouse;

/**
 * A job's request cannot be honoured as asked: reconcile of an open or future day, a malformed date,
 * {@code --from} after {@code --to}; a vacuum retention below the safety minimum; a report of a
 * lakehouse no stream wrote. Nothing was written. The message is one line naming the input and what to
 * do; the command-line entry point exits with status 2 ({@link JobMain}).
 */
public final class RequestRefusedException extends IllegalArgumentException {
    private static final long serialVersionUID = 1L;

    public RequestRefusedException(String message) {
        super(message);
    }
}
