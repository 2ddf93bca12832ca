package io.tidemark.pipeline;

import java.util.List;
import java.util.Locale;
import java.util.Optional;

import org.apache.datasketches.kll.KllDoublesSketch;
import org.apache.datasketches.kll.KllLongsSketch;
import org.apache.datasketches.memory.Memory;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.sql.types.DoubleType;
import org.apache.spark.sql.types.FloatType;
import org.apache.spark.sql.types.NumericType;

/**
 * {@code percentile_approx(col, quantile)}: a KLL sketch while streaming (merged by Spark's
 * {@code kll_sketch_merge_*}), the exact ceil(quantile * n)-th smallest value after reconcile.
 *
 * @param quantile the percentile, in (0, 1)
 */
public record Percentile(double quantile) implements AggregateFunction {

    @Override
    public String spelling() {
        return "percentile_approx(col, p)";
    }

    @Override
    public String call(String input, boolean exact) {
        return exact ? "percentile_disc(" + quantile + ") WITHIN GROUP (ORDER BY " + input + ")"
                : "percentile_approx(" + input + ", " + quantile + ")";
    }

    @Override
    public DataType resultType(DataType argType) {
        return argType;
    }

    /** The sketch's name in Spark's function names: bigint for whole numbers, double for the rest. */
    private static String kllType(Measure m) {
        DataType t = m.argType();
        return t instanceof DecimalType || t instanceof DoubleType || t instanceof FloatType ? "double" : "bigint";
    }

    @Override
    public boolean sketched() {
        return true;
    }

    @Override
    public List<Measure.Computed> partial(Measure m) {
        return List.of(new Measure.Computed(m.sketch(), "kll_sketch_agg_" + kllType(m) + "(CAST(" + m.input() + " AS "
                + kllType(m).toUpperCase(Locale.ROOT) + "))"));
    }

    /** As Spark's {@code kll_sketch_merge_*}: the first sketch heapified and the second merged in. */
    @Override
    public Object merge(Measure m, Object stored, Object batch) {
        if (kllType(m).equals("double")) {
            KllDoublesSketch first = KllDoublesSketch.heapify(Memory.wrap((byte[]) stored));
            first.merge(KllDoublesSketch.wrap(Memory.wrap((byte[]) batch)));
            return first.toByteArray();
        }
        KllLongsSketch first = KllLongsSketch.heapify(Memory.wrap((byte[]) stored));
        first.merge(KllLongsSketch.wrap(Memory.wrap((byte[]) batch)));
        return first.toByteArray();
    }

    @Override
    public List<Measure.Computed> mergeSql(Measure m) {
        return List.of(new Measure.Computed(m.sketch(), Measure.nullSafe("kll_sketch_merge_" + kllType(m) + "(s." + m.sketch() + ", b."
                + m.sketch() + ")", m.sketch())));
    }

    @Override
    public List<Measure.Computed> rollup(Measure m) {
        return List.of(new Measure.Computed(m.sketch(), "kll_merge_agg_" + kllType(m) + "(" + m.sketch() + ")"));
    }

    @Override
    public String value(Measure m) {
        return "CAST(kll_sketch_get_quantile_" + kllType(m) + "(" + m.sketch() + ", " + quantile + ") AS " + m.resultType().sql() + ")";
    }

    /** The ceil(p * n)-th smallest value, in the column's own type (percentile_disc answers in DOUBLE). */
    @Override
    public String exact(Measure m) {
        return "try_element_at(sort_array(collect_list(" + m.input() + ")), CAST(greatest(ceil(" + quantile + " * count(" + m.input()
                + ")), 1) AS INT))";
    }

    @Override
    public String describe() {
        return ": KLL estimate while streaming, exact after reconcile";
    }

    @Override
    public String sketchMerge() {
        return "kll_sketch_merge_* / kll_merge_agg_*";
    }

    @Override
    public int arguments() {
        return 2;
    }

    @Override
    public String argumentsNote(int given) {
        return given == 3 ? " (the sketch's accuracy is Tidemark's)" : "";
    }

    @Override
    public Optional<Refusal> refuse(String fn, String column, DataType type) {
        return type instanceof NumericType ? Optional.empty()
                : Optional.of(new Refusal("percentile_approx over " + column + ", a " + type.sql() + " column",
                        "percentile_approx over a numeric column"));
    }
}
