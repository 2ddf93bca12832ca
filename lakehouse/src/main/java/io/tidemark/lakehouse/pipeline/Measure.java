package io.tidemark.lakehouse.pipeline;

import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.List;

import org.apache.datasketches.hll.HllSketch;
import org.apache.datasketches.hll.Union;
import org.apache.datasketches.kll.KllDoublesSketch;
import org.apache.datasketches.kll.KllLongsSketch;
import org.apache.datasketches.memory.Memory;
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
 * @param argument the argument as Spark SQL ({@code amount}, {@code CAST(score AS DECIMAL(20,4))}); null for {@code count(*)}
 * @param argType  the argument's type (after a CAST); null for {@code count(*)}
 * @param filter   the FILTER (WHERE ...) condition as written, or null
 * @param quantile for {@code percentile_approx}: the percentile, in (0, 1); else NaN
 * @param sketch   for a sketch measure: the column that stores the sketch ({@code <name>_sketch} unless the table's
 *                 {@code TBLPROPERTIES ('<name>.sketch_column' = '...')} names it); else null
 * @param notNull  whether every row has a value: a count always; the rest when no FILTER can leave a window without
 *                 records to aggregate and the column is NOT NULL
 */
public record Measure(String name, Kind kind, String column, String argument, DataType argType, String filter, double quantile,
                      String sketch, boolean notNull, Pipeline.Position at) {

    public Measure {
        if (sketch == null && (kind == Kind.APPROX_COUNT_DISTINCT || kind == Kind.PERCENTILE_APPROX)) {
            sketch = name + "_sketch";
        }
    }

    /** This measure with its sketch stored in column {@code column}. */
    public Measure withSketchColumn(String column) {
        return new Measure(name, kind, this.column, argument, argType, filter, quantile, column, notNull, at);
    }

    /** Whether the stream keeps a sketch for it (an estimate until reconcile). */
    public boolean sketched() {
        return sketch != null;
    }

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
        return call(kind == Kind.COUNT_ALL ? "*" : argument, false) + filtered();
    }

    /**
     * What a plain batch job would write for the exact value: the aggregate as written, with
     * {@code count(DISTINCT)} and {@code percentile_disc} for the approximate ones, and the FILTER in the
     * argument ({@code CASE WHEN}), which every aggregation strategy reads the same way.
     */
    public String writtenExact() {
        return call(kind == Kind.COUNT_ALL ? (filter == null ? "*" : in("1")) : in(argument), true);
    }

    private String call(String arg, boolean exact) {
        return switch (kind) {
            case COUNT_ALL, COUNT -> "count(" + arg + ")";
            case SUM -> "sum(" + arg + ")";
            case MIN -> "min(" + arg + ")";
            case MAX -> "max(" + arg + ")";
            case AVG -> "avg(" + arg + ")";
            case APPROX_COUNT_DISTINCT -> (exact ? "count(DISTINCT " : "approx_count_distinct(") + arg + ")";
            case PERCENTILE_APPROX -> exact ? "percentile_disc(" + quantile + ") WITHIN GROUP (ORDER BY " + arg + ")"
                    : "percentile_approx(" + arg + ", " + quantile + ")";
        };
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
        return "CAST(" + in(argument) + " AS " + kllType().toUpperCase(java.util.Locale.ROOT) + ")";
    }

    /** The columns stored for it in the KPI table: the value, and what merging needs besides (a sum and count, a sketch). */
    public List<String> storedColumns() {
        String nn = notNull ? " NOT NULL" : "";
        return switch (kind) {
            case AVG -> List.of(name + " " + resultType() + nn, name + "_sum " + sumType() + nn, name + "_count BIGINT NOT NULL");
            case APPROX_COUNT_DISTINCT, PERCENTILE_APPROX -> List.of(name + " " + resultType() + nn, sketch + " BINARY" + nn);
            default -> List.of(name + " " + resultType() + nn);
        };
    }

    /**
     * Face 1: the aggregates of one micro-batch's records of a window, as {@code expr AS column} (one per stored column but the value).
     * A FILTER is folded into the argument ({@code sum(CASE WHEN cond THEN amount END)}), which every one of these aggregates
     * reads the same way (they skip nulls): Spark's sorted aggregation (spark.sql.execution.replaceHashWithSortAgg, which reconcile
     * relies on) drops an aggregate's FILTER clause when it merges the partial and final aggregates into one (Spark 4.2.0), and
     * would count every record.
     */
    public List<String> partial() {
        return switch (kind) {
            case COUNT_ALL -> List.of("count(" + (filter == null ? "*" : in("1")) + ") AS " + name);
            case COUNT -> List.of("count(" + in(argument) + ") AS " + name);
            case SUM -> List.of("sum(" + in(argument) + ") AS " + name);
            case MIN -> List.of("min(" + in(argument) + ") AS " + name);
            case MAX -> List.of("max(" + in(argument) + ") AS " + name);
            case AVG -> List.of("sum(" + in(argument) + ") AS " + name + "_sum", "count(" + in(argument) + ") AS " + name + "_count");
            case APPROX_COUNT_DISTINCT -> List.of("hll_sketch_agg(" + in(argument) + ", " + HLL_LG_K + ") AS " + sketch);
            case PERCENTILE_APPROX -> List.of("kll_sketch_agg_" + kllType() + "(" + kllInput() + ") AS " + sketch);
        };
    }

    /** {@code value} when the record passes the FILTER, else null (which every aggregate skips): the FILTER folded into an argument. */
    private String in(String value) {
        return filter == null ? value : "CASE WHEN " + filter + " THEN " + value + " END";
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
            case APPROX_COUNT_DISTINCT -> List.of(nullSafe("hll_union(s." + sketch + ", b." + sketch + ")", sketch) + " AS " + sketch);
            case PERCENTILE_APPROX -> List.of(nullSafe("kll_sketch_merge_" + kllType() + "(s." + sketch + ", b." + sketch + ")", sketch)
                    + " AS " + sketch);
        };
    }

    /**
     * The columns a micro-batch's partial gives and a stored row keeps to merge the next one, as
     * {@code name TYPE}, in {@link #partial} order: the value itself for what merges as it is, the sum
     * and count of an avg, the sketch of an estimate.
     */
    public List<String> stateColumns() {
        return switch (kind) {
            case AVG -> List.of(name + "_sum " + sumType(), name + "_count BIGINT");
            case APPROX_COUNT_DISTINCT, PERCENTILE_APPROX -> List.of(sketch + " BINARY");
            default -> List.of(name + " " + resultType());
        };
    }

    /**
     * Face 2 as the stream runs it, on the driver: the state values of a stored row {@code s} and of a
     * batch's partial {@code b} (each in {@link #stateColumns} order) merged, as {@link #merge} says in
     * SQL (MeasureFacesTest holds the two equal). A null is a side no record passed the FILTER of.
     * The sketches merge as Spark's {@code hll_union} and {@code kll_sketch_merge_*} do: a union of the
     * first sketch's lgK updated with both (HLL), the first sketch heapified and the second merged in (KLL).
     */
    public Object[] mergeState(Object[] s, Object[] b) {
        Object[] out = new Object[s.length];
        for (int i = 0; i < s.length; i++) {
            out[i] = s[i] == null ? b[i] : b[i] == null ? s[i] : merge(s[i], b[i]);
        }
        return out;
    }

    private Object merge(Object s, Object b) {
        return switch (kind) {
            case COUNT_ALL, COUNT, SUM, AVG -> add(s, b);
            case MIN -> compare(s, b) <= 0 ? s : b;
            case MAX -> compare(s, b) >= 0 ? s : b;
            case APPROX_COUNT_DISTINCT -> {
                HllSketch first = HllSketch.wrap(
                        Memory.wrap((byte[]) s));
                Union union = new Union(first.getLgConfigK());
                union.update(first);
                union.update(HllSketch.wrap(Memory.wrap((byte[]) b)));
                yield union.toUpdatableByteArray();
            }
            case PERCENTILE_APPROX -> {
                if (kllType().equals("double")) {
                    KllDoublesSketch first = KllDoublesSketch.heapify(
                            Memory.wrap((byte[]) s));
                    first.merge(KllDoublesSketch.wrap(Memory.wrap((byte[]) b)));
                    yield first.toByteArray();
                }
                KllLongsSketch first = KllLongsSketch.heapify(
                        Memory.wrap((byte[]) s));
                first.merge(KllLongsSketch.wrap(Memory.wrap((byte[]) b)));
                yield first.toByteArray();
            }
        };
    }

    /** A sum of two values of the same SQL type: BIGINT (count, a sum of whole numbers) or DECIMAL. */
    private static Object add(Object s, Object b) {
        if (s instanceof Long l) {
            return l + (Long) b;
        }
        return ((BigDecimal) s).add((BigDecimal) b);
    }

    /** Spark's ordering of two values of the column's type (NaN above every other double, as Spark orders it). */
    @SuppressWarnings({"unchecked", "rawtypes"})
    private static int compare(Object s, Object b) {
        return ((Comparable) s).compareTo(b);
    }

    /** A merge that keeps one side where the other has nothing (no record passed the FILTER yet). */
    private static String nullSafe(String both, String column) {
        return "coalesce(" + both + ", s." + column + ", b." + column + ")";
    }

    /**
     * The roll-up face: the stored rows of many windows (an hour's, a day's) merged into one, as
     * aggregates over the state columns, {@code expr AS column} in {@link #stateColumns} order;
     * {@link #value} over the result is the measure of the whole span. Counts and sums add, min and
     * max of the windows', an avg from its summed sum and count, sketches by their union (HLL:
     * {@link #orderFreeUnion}; KLL: {@code kll_merge_agg_*}).
     */
    public List<String> rollup() {
        return switch (kind) {
            case COUNT_ALL, COUNT, SUM -> List.of("sum(" + name + ") AS " + name);
            case MIN -> List.of("min(" + name + ") AS " + name);
            case MAX -> List.of("max(" + name + ") AS " + name);
            case AVG -> List.of("sum(" + name + "_sum) AS " + name + "_sum", "sum(" + name + "_count) AS " + name + "_count");
            case APPROX_COUNT_DISTINCT -> List.of(orderFreeUnion(sketch) + " AS " + sketch);
            case PERCENTILE_APPROX -> List.of("kll_merge_agg_" + kllType() + "(" + sketch + ") AS " + sketch);
        };
    }

    /**
     * The union of a group's HLL sketches in {@code column} whose estimate depends on the set of
     * sketches alone, not on the order they reach the union: every reader (the roll-up views,
     * reconcile's day figures, docs/python.md's recipe) spells it this way.
     *
     * <p>{@code hll_union_agg} keeps DataSketches' HIP accumulator while its inputs are in list or
     * set mode, and that accumulator depends on the order of the coupons: Spark and another reader
     * (or Spark twice, over other files) give estimates a unit or two apart. A union of that union
     * with itself merges an HLL-mode sketch into an HLL-mode gadget, which DataSketches marks out
     * of order: its estimate is then the composite estimator over the registers. In list or set
     * mode the estimate is the coupon count's, already order-free; the registers or coupons are
     * unchanged either way.
     */
    public static String orderFreeUnion(String column) {
        String union = "hll_union_agg(" + column + ")";
        return "hll_union(" + union + ", " + union + ")";
    }

    /** The value analysts read, from the stored (merged) columns: the identity for most, a quotient or an estimate for the rest. */
    public String value() {
        return switch (kind) {
            case AVG -> "CAST(" + name + "_sum / " + name + "_count AS " + resultType() + ")";
            case APPROX_COUNT_DISTINCT -> "hll_sketch_estimate(" + sketch + ")";
            case PERCENTILE_APPROX -> "CAST(kll_sketch_get_quantile_" + kllType() + "(" + sketch + ", " + quantile + ") AS " + resultType() + ")";
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
        return switch (kind) {
            // The distinct values' set, whose size is count(DISTINCT) without the plan Spark needs for a DISTINCT beside other
            // aggregates; reconcile builds the sketch from the same set (distinctValues).
            case APPROX_COUNT_DISTINCT -> "CAST(size(" + distinctValues() + ") AS BIGINT)";
            // The ceil(p * n)-th smallest value, in the column's own type (percentile_disc answers in DOUBLE).
            case PERCENTILE_APPROX -> "try_element_at(sort_array(collect_list(" + in(argument) + ")), CAST(greatest(ceil(" + quantile
                    + " * count(" + in(argument) + ")), 1) AS INT))";
            case AVG -> "CAST(sum(" + in(argument) + ") / count(" + in(argument) + ") AS " + resultType() + ")";
            default -> partial().get(0).substring(0, partial().get(0).lastIndexOf(" AS "));
        };
    }

    /** For a distinct count: the window's distinct values, sorted, as Spark SQL (the exact count is its size). */
    public String distinctValues() {
        return "array_sort(collect_set(" + in(argument) + "))";
    }

    /** Face 4: how far the stream's value was from the truth, relative to the truth: null when the truth is 0 or absent. */
    public String drift(String stream, String truth) {
        return "CASE WHEN " + truth + " IS NULL OR " + truth + " = 0 THEN NULL ELSE abs(CAST(" + truth + " AS DOUBLE) - CAST(" + stream
                + " AS DOUBLE)) / abs(CAST(" + truth + " AS DOUBLE)) END";
    }

    /** Whether the stream's value is already the exact one (only sketches are estimates until reconcile). */
    public boolean exactWhileStreaming() {
        return !sketched();
    }
}
