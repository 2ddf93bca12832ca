package io.tidemark.launcher;

/** The user stopped a command (Ctrl-C, SIGTERM) before it was done: exit code 130, one line. */
final class Interrupted extends RuntimeException {
    private static final long serialVersionUID = 1L;

    Interrupted(String message) {
        super(message);
    }
}
