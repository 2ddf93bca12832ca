package io.tidemark.lakehouse;

/**
 * The exit codes of every Tidemark command ({@code tidemark ...}) and every spark-submit entry point,
 * one meaning each. docs/commands.md shows this table (a test holds the two together).
 */
public enum ExitCode {
    OK(0, "done; for `status --json` also: healthy or idle"),
    FAILED(1, "a failure; the last line on stderr says what failed and what to do"),
    BAD_INPUT(2, "bad input or a refused request; one line on stderr names it; nothing was done"),
    STALLED(3, "`status --json`: no batch for too long while records wait, or Kafka does not answer"),
    LAGGING(4, "`status --json`: more records wait in the topic than `--max-lag`"),
    NOT_STARTED(5, "`status --json`: no stream has committed a batch to this lakehouse"),
    INCOMPLETE(6, "`catalog status`: a table is not registered at this lakehouse, or a view is not current"),
    INTERRUPTED(130, "stopped by Ctrl-C or SIGTERM before it was done");

    private final int code;
    private final String meaning;

    ExitCode(int code, String meaning) {
        this.code = code;
        this.meaning = meaning;
    }

    public int code() {
        return code;
    }

    /** What the code means, as docs/commands.md says it. */
    public String meaning() {
        return meaning;
    }

    /** The table of docs/commands.md: "| code | meaning |" lines. */
    public static String markdownTable() {
        StringBuilder out = new StringBuilder("| exit code | meaning |\n|---|---|\n");
        for (ExitCode c : values()) {
            out.append("| ").append(c.code).append(" | ").append(c.meaning).append(" |\n");
        }
        return out.toString();
    }
}
