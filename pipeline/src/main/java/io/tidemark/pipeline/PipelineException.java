package io.tidemark.pipeline;

/**
 * A pipeline definition Tidemark refuses, before anything starts: where ({@code file:line:column}),
 * what is wrong and what to write instead, on one line.
 */
public final class PipelineException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final Pipeline.Position at;
    private final String problem;
    private final String fix;

    public PipelineException(Pipeline.Position at, String problem, String fix) {
        super(at + ": " + problem + (fix == null || fix.isEmpty() ? "" : "; write instead: " + fix));
        this.at = at;
        this.problem = problem;
        this.fix = fix;
    }

    /** Where in the file. */
    public Pipeline.Position at() {
        return at;
    }

    /** What is wrong. */
    public String problem() {
        return problem;
    }

    /** What to write instead. */
    public String fix() {
        return fix;
    }
}
