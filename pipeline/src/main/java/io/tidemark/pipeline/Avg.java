package io.tidemark.pipeline;

import java.util.List;
import java.util.Optional;

import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.sql.types.StructField;

/**
 * {@code avg(col)}: stored as the exact sum and count beside the value ({@code <name>_sum},
 * {@code <name>_count}), which merge by addition; the value is their quotient.
 */
public record Avg() implements AggregateFunction {

    @Override
    public String spelling() {
        return "avg(col)";
    }

    @Override
    public String call(String input, boolean exact) {
        return "avg(" + input + ")";
    }

    /** A decimal with 4 more digits and 4 more of scale, as Spark's avg gives it; DOUBLE for whole numbers. */
    @Override
    public DataType resultType(DataType argType) {
        return argType instanceof DecimalType d ? new DecimalType(Math.min(38, d.precision() + 4), Math.min(38, d.scale() + 4))
                : DataTypes.DoubleType;
    }

    @Override
    public List<StructField> state(Measure m) {
        return List.of(Measure.field(m.name() + "_sum", Sum.typeOf(m.argType()), !m.notNull()),
                Measure.field(m.name() + "_count", DataTypes.LongType, false));
    }

    @Override
    public List<Measure.Computed> partial(Measure m) {
        return List.of(new Measure.Computed(m.name() + "_sum", "sum(" + m.input() + ")"),
                new Measure.Computed(m.name() + "_count", "count(" + m.input() + ")"));
    }

    @Override
    public Object merge(Measure m, Object stored, Object batch) {
        return Sum.add(stored, batch);
    }

    @Override
    public List<Measure.Computed> mergeSql(Measure m) {
        String sum = m.name() + "_sum";
        String count = m.name() + "_count";
        return List.of(new Measure.Computed(sum, Measure.nullSafe("s." + sum + " + b." + sum, sum)),
                new Measure.Computed(count, "s." + count + " + b." + count));
    }

    @Override
    public List<Measure.Computed> rollup(Measure m) {
        return List.of(new Measure.Computed(m.name() + "_sum", "sum(" + m.name() + "_sum)"),
                new Measure.Computed(m.name() + "_count", "sum(" + m.name() + "_count)"));
    }

    @Override
    public String value(Measure m) {
        return "CAST(" + m.name() + "_sum / " + m.name() + "_count AS " + m.resultType().sql() + ")";
    }

    @Override
    public String exact(Measure m) {
        return "CAST(sum(" + m.input() + ") / count(" + m.input() + ") AS " + m.resultType().sql() + ")";
    }

    @Override
    public String describe() {
        return ": from the exact sum and count beside it";
    }

    @Override
    public Optional<Refusal> refuse(String fn, String column, DataType type) {
        return Sum.refuseSum(fn, column, type);
    }
}
