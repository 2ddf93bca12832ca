package io.tidemark.reconcile;

/**
 * The request cannot be honoured as asked: an open or future day, a malformed date, {@code --from}
 * after {@code --to}, N below 1. Nothing was written. The message is one line naming the input and
 * what to do; the command-line entry point exits with status 2.
 */
public final class ReconcileRefusedException extends IllegalArgumentException {
    private static final long serialVersionUID = 1L;

    public ReconcileRefusedException(String message) {
        super(message);
    }
}
