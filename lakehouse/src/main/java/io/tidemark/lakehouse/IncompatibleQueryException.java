package io.tidemark.lakehouse;

/**
 * The checkpoint or the lakehouse was written with another query definition ({@link QueryDefinition}):
 * continuing would mix two meanings in one set of tables. The message is one line naming each
 * changed setting (old -> new) and the ways to recover; nothing was read or written.
 */
public final class IncompatibleQueryException extends IllegalArgumentException {
    private static final long serialVersionUID = 1L;

    public IncompatibleQueryException(String message) {
        super(message);
    }
}
