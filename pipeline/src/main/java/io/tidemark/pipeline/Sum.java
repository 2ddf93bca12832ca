package io.tidemark.pipeline;

import java.math.BigDecimal;
import java.util.List;
import java.util.Optional;

import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.sql.types.DoubleType;
import org.apache.spark.sql.types.FloatType;
import org.apache.spark.sql.types.NumericType;

/** {@code sum(col)} of whole numbers or decimals: exact, merged by addition. */
public record Sum() implements AggregateFunction {

    @Override
    public String spelling() {
        return "sum(col)";
    }

    @Override
    public String call(String input, boolean exact) {
        return "sum(" + input + ")";
    }

    @Override
    public DataType resultType(DataType argType) {
        return typeOf(argType);
    }

    /** The type of sum(argument), as Spark gives it: 10 more digits for a decimal, BIGINT for whole numbers. */
    static DataType typeOf(DataType argType) {
        return argType instanceof DecimalType d ? new DecimalType(Math.min(38, d.precision() + 10), d.scale()) : DataTypes.LongType;
    }

    /** A sum of two values of the same SQL type: BIGINT or DECIMAL. */
    static Object add(Object s, Object b) {
        return s instanceof Long l ? (Object) (l + (Long) b) : ((BigDecimal) s).add((BigDecimal) b);
    }

    /** Whether {@code fn} (sum or avg) may add up a column of {@code type}: a number, and not a floating-point one. */
    static Optional<Refusal> refuseSum(String fn, String column, DataType type) {
        if (!(type instanceof NumericType)) {
            return Optional.of(new Refusal(fn + " over " + column + ", a " + type.sql() + " column", fn + " over a numeric column"));
        }
        if (type instanceof DoubleType || type instanceof FloatType) {
            return Optional.of(new Refusal(fn + " over " + column + ", a " + type.sql() + " column: a floating-point sum depends on the order "
                    + "of its terms, so the stream's and reconcile's answers could differ", fn + "(CAST(" + column
                    + " AS DECIMAL(38, 9))) (declare the scale the values need)"));
        }
        return Optional.empty();
    }

    @Override
    public Object merge(Measure m, Object stored, Object batch) {
        return add(stored, batch);
    }

    @Override
    public List<Measure.Computed> mergeSql(Measure m) {
        return List.of(new Measure.Computed(m.name(), Measure.nullSafe("s." + m.name() + " + b." + m.name(), m.name())));
    }

    @Override
    public List<Measure.Computed> rollup(Measure m) {
        return List.of(new Measure.Computed(m.name(), "sum(" + m.name() + ")"));
    }

    @Override
    public String empty() {
        return "0";
    }

    @Override
    public String describe() {
        return ": exact";
    }

    @Override
    public Optional<Refusal> refuse(String fn, String column, DataType type) {
        return refuseSum(fn, column, type);
    }
}
