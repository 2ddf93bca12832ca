package io.tidemark.lakehouse.pipeline;

import java.util.ArrayList;
import java.util.List;

import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.sql.types.DoubleType;
import org.apache.spark.sql.types.FloatType;

/**
 * One measure of a KPI table and its four faces, in the manner of Flink's {@code AggregateFunction}:
 * the partial aggregate a micro-batch computes, its merge with the row already stored, the exact
 * recompute reconcile runs over {@code raw_events}, and the drift between the stream's answer and
 * the truth. Each face is Spark SQL over the event columns ({@code partial}, {@code exact}) or over
 * the stored columns of two rows, {@code s} (stored) and {@code b} (the batch's) ({@code merge}).
 *
 * <p>Every measure merges across micro-batches, so a window's row after N batches is the same as if
 * one batch had held all its records: counts, sums, min and max exactly; avg as an exact sum and
 * count; distinct counts and percentiles as mergeable sketches (HLL, KLL) that reconcile replaces
 * with the exact answer.
 *
 * @param name     the output column, as the SELECT names it
 * @param kind     what it computes
 * @param column   the event column it reads; null for {@code count(*)}
 * @param argument the argument as Spark SQL ({@code amount}, {@code CAST(volume_gb AS DECIMAL(38,9))}); null for {@code count(*)}
 * @param argType  the argument's type (after a CAST); null for {@code count(*)}
 * @param filter   the FILTER (WHERE ...) condition as written, or null
 * @param quantile for {@code percentile_approx}: the percentile, in (0, 1); else NaN
 */
public record Measure(String name, Kind kind, String column, String argument, DataType argType, String filter, double quantile,
                      Pipeline.Position at) {

    /** lgK of the HLL sketches: about 1.6 % standard error, 2-4 KB per row (as the network KPI has always used). */
    public static final int HLL_LG_K = 12;

    /** The measures Tidemark can keep mergeable; each is written as in Spark SQL. */
    public enum Kind {
        COUNT_ALL("count(*)"),
        COUNT("count(col)"),
        SUM("sum(col)"),
        MIN("min(col)"),
        MAX("max(col)"),
        AVG("avg(col)"),
        APPROX_COUNT_DISTINCT("approx_count_distinct(col)"),
        PERCENTILE_APPROX("percentile_approx(col, p)");

        /** How a pipeline file writes it. */
        public final String spelling;

        Kind(String spelling) {
            this.spelling = spelling;
        }

        /** "count(*), count(col), sum(col), ...": for the messages that list what may be written. */
        public static String all() {
            List<String> out = new ArrayList<>();
            for (Kind k : values()) {
                out.add(k.spelling);
            }
            return String.join(", ", out);
        }
    }

    /** What the measure computes as written: {@code sum(amount) FILTER (WHERE status = 'approved')}. */
    public String written() {
        String call = switch (kind) {
            case COUNT_ALL -> "count(*)";
            case COUNT -> "count(" + argument + ")";
            case SUM -> "sum(" + argument + ")";
            case MIN -> "min(" + argument + ")";
            case MAX -> "max(" + argument + ")";
            case AVG -> "avg(" + argument + ")";
            case APPROX_COUNT_DISTINCT -> "approx_count_distinct(" + argument + ")";
            case PERCENTILE_APPROX -> "percentile_approx(" + argument + ", " + quantile + ")";
        };
        return call + filtered();
    }

    private String filtered() {
        return filter == null ? "" : " FILTER (WHERE " + filter + ")";
    }

    /** The type of the value analysts read in column {@link #name}. */
    public String resultType() {
        return switch (kind) {
            case COUNT_ALL, COUNT, APPROX_COUNT_DISTINCT -> "BIGINT";
            case SUM -> sumType();
            case MIN, MAX, PERCENTILE_APPROX -> argType.sql();
            case AVG -> argType instanceof DecimalType d
                    ? new DecimalType(Math.min(38, d.precision() + 4), Math.min(38, d.scale() + 4)).sql() : "DOUBLE";
        };
    }

    /** The type of sum(argument), as Spark gives it: 10 more digits for a decimal, BIGINT for whole numbers. */
    private String sumType() {
        return argType instanceof DecimalType d ? new DecimalType(Math.min(38, d.precision() + 10), d.scale()).sql() : "BIGINT";
    }

    /** The sketch's name in Spark's function names: bigint for whole numbers, double for the rest. */
    private String kllType() {
        return argType instanceof DecimalType || argType instanceof DoubleType || argType instanceof FloatType ? "double" : "bigint";
    }

    private String kllInput() {
        return "CAST(" + argument + " AS " + kllType().toUpperCase(java.util.Locale.ROOT) + ")";
    }

    /** The columns stored for it in the KPI table: the value, and what merging needs besides (a sum and count, a sketch). */
    public List<String> storedColumns() {
        return switch (kind) {
            case AVG -> List.of(name + " " + resultType(), name + "_sum " + sumType(), name + "_count BIGINT");
            case APPROX_COUNT_DISTINCT, PERCENTILE_APPROX -> List.of(name + " " + resultType(), name + "_sketch BINARY");
            default -> List.of(name + " " + resultType());
        };
    }

    /** Face 1: the aggregates of one micro-batch's records of a window, as {@code expr AS column} (one per stored column but the value). */
    public List<String> partial() {
        String f = filtered();
        return switch (kind) {
            case COUNT_ALL -> List.of("count(*)" + f + " AS " + name);
            case COUNT -> List.of("count(" + argument + ")" + f + " AS " + name);
            case SUM -> List.of("sum(" + argument + ")" + f + " AS " + name);
            case MIN -> List.of("min(" + argument + ")" + f + " AS " + name);
            case MAX -> List.of("max(" + argument + ")" + f + " AS " + name);
            case AVG -> List.of("sum(" + argument + ")" + f + " AS " + name + "_sum", "count(" + argument + ")" + f + " AS " + name + "_count");
            case APPROX_COUNT_DISTINCT -> List.of("hll_sketch_agg(" + argument + ", " + HLL_LG_K + ")" + f + " AS " + name + "_sketch");
            case PERCENTILE_APPROX -> List.of("kll_sketch_agg_" + kllType() + "(" + kllInput() + ")" + f + " AS " + name + "_sketch");
        };
    }

    /** Face 2: a stored row {@code s} and a batch's partial row {@code b} of the same window merged, as {@code expr AS column}. */
    public List<String> merge() {
        return switch (kind) {
            case COUNT_ALL, COUNT -> List.of("s." + name + " + b." + name + " AS " + name);
            case SUM -> List.of(nullSafe("s." + name + " + b." + name, name) + " AS " + name);
            case MIN -> List.of("least(s." + name + ", b." + name + ") AS " + name);
            case MAX -> List.of("greatest(s." + name + ", b." + name + ") AS " + name);
            case AVG -> List.of(nullSafe("s." + name + "_sum + b." + name + "_sum", name + "_sum") + " AS " + name + "_sum",
                    "s." + name + "_count + b." + name + "_count AS " + name + "_count");
            case APPROX_COUNT_DISTINCT -> List.of(nullSafe("hll_union(s." + name + "_sketch, b." + name + "_sketch)", name + "_sketch") + " AS "
                    + name + "_sketch");
            case PERCENTILE_APPROX -> List.of(nullSafe("kll_sketch_merge_" + kllType() + "(s." + name + "_sketch, b." + name + "_sketch)",
                    name + "_sketch") + " AS " + name + "_sketch");
        };
    }

    /** A merge that keeps one side where the other has nothing (no record passed the FILTER yet). */
    private static String nullSafe(String both, String column) {
        return "coalesce(" + both + ", s." + column + ", b." + column + ")";
    }

    /** The value analysts read, from the stored (merged) columns: the identity for most, a quotient or an estimate for the rest. */
    public String value() {
        return switch (kind) {
            case AVG -> "CAST(" + name + "_sum / " + name + "_count AS " + resultType() + ")";
            case APPROX_COUNT_DISTINCT -> "hll_sketch_estimate(" + name + "_sketch)";
            case PERCENTILE_APPROX -> "CAST(kll_sketch_get_quantile_" + kllType() + "(" + name + "_sketch, " + quantile + ") AS " + resultType() + ")";
            default -> name;
        };
    }

    /**
     * Face 3: the exact value over all of a window's records in {@code raw_events}, as reconcile
     * computes it. The same as the partial for what merges exactly; the distinct count and the
     * percentile themselves where the stream keeps a sketch (the percentile as the ceil(p * n)-th
     * smallest value, which percentile_approx estimates).
     */
    public String exact() {
        String f = filtered();
        return switch (kind) {
            case APPROX_COUNT_DISTINCT -> "count(DISTINCT " + argument + ")" + f;
            // The ceil(p * n)-th smallest value, in the column's own type (percentile_disc answers in DOUBLE).
            case PERCENTILE_APPROX -> "try_element_at(sort_array(collect_list(" + argument + ")" + f + "), CAST(greatest(ceil(" + quantile
                    + " * count(" + argument + ")" + f + "), 1) AS INT))";
            case AVG -> "CAST(sum(" + argument + ")" + f + " / count(" + argument + ")" + f + " AS " + resultType() + ")";
            default -> partial().get(0).substring(0, partial().get(0).lastIndexOf(" AS "));
        };
    }

    /** Face 4: how far the stream's value was from the truth, relative to the truth: null when the truth is 0 or absent. */
    public String drift(String stream, String truth) {
        return "CASE WHEN " + truth + " IS NULL OR " + truth + " = 0 THEN NULL ELSE abs(CAST(" + truth + " AS DOUBLE) - CAST(" + stream
                + " AS DOUBLE)) / abs(CAST(" + truth + " AS DOUBLE)) END";
    }

    /** Whether the stream's value is already the exact one (only sketches are estimates until reconcile). */
    public boolean exactWhileStreaming() {
        return kind != Kind.APPROX_COUNT_DISTINCT && kind != Kind.PERCENTILE_APPROX;
    }
}
