package io.tidemark.pipeline;

import static org.apache.spark.sql.functions.expr;
import static org.apache.spark.sql.functions.udf;

import java.util.List;
import java.util.Optional;

import org.apache.datasketches.hll.HllSketch;
import org.apache.datasketches.hll.TgtHllType;
import org.apache.datasketches.hll.Union;
import org.apache.datasketches.memory.Memory;
import org.apache.spark.sql.Column;
import org.apache.spark.sql.api.java.UDF1;
import org.apache.spark.sql.expressions.UserDefinedFunction;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;

import scala.collection.Iterator;
import scala.collection.Seq;

/**
 * {@code approx_count_distinct(col)}: an HLL sketch while streaming (merged by union), the exact
 * distinct count after reconcile, whose sketch is built from the window's distinct values.
 */
public record DistinctCount() implements AggregateFunction {

    /** lgK of the HLL sketches: about 1.6 % standard error, 2-4 KB per row (as the network KPI has always used). */
    public static final int LG_K = 12;

    @Override
    public String spelling() {
        return "approx_count_distinct(col)";
    }

    @Override
    public String call(String input, boolean exact) {
        return (exact ? "count(DISTINCT " : "approx_count_distinct(") + input + ")";
    }

    @Override
    public DataType resultType(DataType argType) {
        return DataTypes.LongType;
    }

    @Override
    public boolean sketched() {
        return true;
    }

    @Override
    public List<Measure.Computed> partial(Measure m) {
        return List.of(new Measure.Computed(m.sketch(), "hll_sketch_agg(" + m.input() + ", " + LG_K + ")"));
    }

    /** As Spark's {@code hll_union}: a union of the first sketch's lgK updated with both. */
    @Override
    public Object merge(Measure m, Object stored, Object batch) {
        HllSketch first = HllSketch.wrap(Memory.wrap((byte[]) stored));
        Union union = new Union(first.getLgConfigK());
        union.update(first);
        union.update(HllSketch.wrap(Memory.wrap((byte[]) batch)));
        return union.toUpdatableByteArray();
    }

    @Override
    public List<Measure.Computed> mergeSql(Measure m) {
        return List.of(new Measure.Computed(m.sketch(), Measure.nullSafe("hll_union(s." + m.sketch() + ", b." + m.sketch() + ")", m.sketch())));
    }

    @Override
    public List<Measure.Computed> rollup(Measure m) {
        return List.of(new Measure.Computed(m.sketch(), orderFreeUnion(m.sketch())));
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

    @Override
    public String value(Measure m) {
        return "hll_sketch_estimate(" + m.sketch() + ")";
    }

    /**
     * The size of the window's set of distinct values: count(DISTINCT) without the plan Spark needs for a
     * DISTINCT beside other aggregates; the exact sketch is built from the same set ({@link #exactState}).
     */
    @Override
    public String exact(Measure m) {
        return "CAST(size(" + distinctValues(m) + ") AS BIGINT)";
    }

    /** The window's distinct values, sorted, as Spark SQL (the exact count is its size). */
    static String distinctValues(Measure m) {
        return "array_sort(collect_set(" + m.input() + "))";
    }

    /**
     * The sketch from the window's distinct values fed once each in sorted order ({@link #SORTED_HLL}):
     * a sketch's bytes (and, past a few hundred values, even its estimate) depend on the order it saw
     * its input, and a grouped aggregation's order on how tasks and shuffle blocks happened to line up;
     * fed in sorted order it is the same byte for byte on every run, and it is the sketch
     * {@code hll_sketch_agg} builds from that sorted input (TruthKpisTest).
     */
    @Override
    public List<Column> exactState(Measure m) {
        return List.of(SORTED_HLL.apply(expr(distinctValues(m))).as(m.sketch()));
    }

    /**
     * A sketch from distinct values, sorted: an HLL_8 sketch of lgK {@link #LG_K} updated with each
     * once, in order, as {@code hll_sketch_agg} updates it (a string by its UTF-8 bytes, a whole
     * number as a long, binary as its bytes).
     */
    static final UserDefinedFunction SORTED_HLL = udf((UDF1<Seq<Object>, byte[]>) values -> {
        HllSketch sketch = new HllSketch(LG_K, TgtHllType.HLL_8);
        Iterator<Object> it = values.iterator();
        while (it.hasNext()) {
            Object v = it.next();
            if (v instanceof String s) {
                sketch.update(s);
            } else if (v instanceof byte[] b) {
                sketch.update(b);
            } else if (v instanceof Number n) {
                sketch.update(n.longValue());
            } else if (v != null) {
                throw new IllegalArgumentException("no sketch of a " + v.getClass().getSimpleName());
            }
        }
        return sketch.toUpdatableByteArray();
    }, DataTypes.BinaryType);

    @Override
    public String empty() {
        return "0";
    }

    @Override
    public String describe() {
        return ": HLL estimate while streaming, exact after reconcile";
    }

    @Override
    public String sketchMerge() {
        return "hll_union / hll_union_agg";
    }

    /**
     * The union of a sketch with itself, estimated: from the registers alone, so two sketches of the
     * same values estimate the same whatever order they saw them in (a sketch's own estimate keeps
     * the HIP accumulator, which depends on the order).
     */
    @Override
    public Optional<String> orderFreeIdentity(String column) {
        return Optional.of("hll_sketch_estimate(hll_union(" + column + ", " + column + "))");
    }

    @Override
    public String argumentsNote(int given) {
        return given == 2 ? " (the sketch's precision is Tidemark's: lgK " + LG_K + ")" : "";
    }
}
