package io.tidemark.lakehouse;

/**
 * How Tidemark tells an exception in one line: a command's refusal, a job's failure, a dead-letter
 * reason, a warning. Spark's and Delta's messages run to many lines (a query plan, a stack of quoted
 * causes); the first line says what happened.
 */
public final class Errors {
    private Errors() {
    }

    /** The first non-blank line of a message, trimmed; "" for none. */
    public static String firstLine(String message) {
        if (message == null) {
            return "";
        }
        for (String line : message.split("\\R")) {
            if (!line.isBlank()) {
                return line.trim();
            }
        }
        return "";
    }

    /** The first line of {@code t}'s message, or its class's simple name when it has none. */
    public static String oneLine(Throwable t) {
        String line = firstLine(t.getMessage());
        return line.isEmpty() ? t.getClass().getSimpleName() : line;
    }

    /**
     * {@code t}'s class's simple name and the first line of its message ({@code ConnectException: Connection
     * refused}): for a failure of the network or the disk, whose message alone does not say what it is.
     */
    public static String named(Throwable t) {
        String line = firstLine(t.getMessage());
        return t.getClass().getSimpleName() + (line.isEmpty() ? "" : ": " + line);
    }

    /**
     * The first lines of the exception and of its causes, up to four, joined by {@code " <- "}, without
     * repeating a cause already quoted (Spark quotes a cause's message in its own); each at most 400
     * characters.
     */
    public static String withCauses(Throwable ex) {
        StringBuilder sb = new StringBuilder();
        Throwable t = ex;
        int depth = 0;
        while (t != null && depth < 4) {
            String m = oneLine(t);
            String gist = m.length() > 80 ? m.substring(0, 80) : m;
            if (sb.indexOf(gist) < 0) {
                if (sb.length() > 0) {
                    sb.append(" <- ");
                }
                sb.append(m.length() > 400 ? m.substring(0, 400) + "..." : m);
            }
            t = t.getCause() == t ? null : t.getCause();
            depth++;
        }
        return sb.toString();
    }
}
