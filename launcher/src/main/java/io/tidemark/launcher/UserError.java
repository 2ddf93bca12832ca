package io.tidemark.launcher;

import java.util.function.Supplier;

/** Bad input: reported as one line naming the command, exit code 2, no stack trace. */
final class UserError extends RuntimeException {
    private static final long serialVersionUID = 1L;

    UserError(String message) {
        super(message);
    }

    UserError(String message, Throwable cause) {
        super(message, cause);
    }

    /** Runs validation of user input; an IllegalArgumentException it throws becomes a UserError. */
    static <T> T check(Supplier<T> validation) {
        try {
            return validation.get();
        } catch (IllegalArgumentException e) {
            throw new UserError(e.getMessage(), e);
        }
    }
}
