package io.tidemark.pipeline;

import java.math.BigDecimal;

/**
 * The one drift rule: whether the stream's answer for a measure of a day was too far from the
 * truth. Reconcile applies it and writes the verdict with each summary row of
 * {@code reconcile_report} ({@code over_threshold}, beside the {@code drift_threshold} it used);
 * the Python client, the DAG, the HTML report and the Prometheus alert read that verdict, so none
 * of them has a rule of its own.
 *
 * <p>A measure the stream keeps exactly (counts, sums, min, max, avg) is over when its relative
 * drift, |truth - stream| / |truth|, exceeds the threshold, or when the truth is zero (or absent)
 * and the stream's value is not: only late records can move it, and the threshold says how many
 * may. A measure the stream estimates with a sketch (a distinct count, a percentile) is reported
 * but never over: its drift is mostly the sketch's own error, which reconcile removes.
 *
 * @param threshold the pipeline's {@code drift_threshold} (default 0.01)
 */
public record DriftRule(double threshold) {

    public DriftRule {
        if (!(threshold >= 0 && threshold <= 1)) {
            throw new IllegalArgumentException("a drift threshold is a fraction between 0 and 1; got " + threshold);
        }
    }

    /** The rule of a pipeline: its threshold. */
    public static DriftRule of(Pipeline pipeline) {
        return new DriftRule(pipeline.driftThreshold());
    }

    /**
     * Whether the drift of {@code m} from {@code stream} to {@code truth} is over the threshold; a
     * null value is no value (a measure no record passed the FILTER of).
     */
    public boolean over(Measure m, BigDecimal stream, BigDecimal truth) {
        if (m.sketched()) {
            return false;
        }
        Double rel = relative(stream, truth);
        return rel == null ? stream != null && stream.signum() != 0 : Math.abs(rel) > threshold;
    }

    /** (truth - stream) / truth, or null when the truth is zero or absent. */
    public static Double relative(BigDecimal stream, BigDecimal truth) {
        if (truth == null || truth.signum() == 0) {
            return null;
        }
        return truth.subtract(stream == null ? BigDecimal.ZERO : stream).doubleValue() / truth.doubleValue();
    }

    /**
     * {@link #relative} in Spark SQL, over two expressions of numbers: how the report's window rows
     * carry it ({@code drift_rel}).
     */
    public static String relativeSql(String stream, String truth) {
        return "CASE WHEN " + truth + " IS NULL OR " + truth + " = 0 THEN NULL ELSE CAST(" + truth + " - coalesce(" + stream
                + ", 0) AS DOUBLE) / CAST(" + truth + " AS DOUBLE) END";
    }
}
