package io.tidemark.pipeline;

import java.util.List;
import java.util.Optional;

import org.apache.spark.sql.types.BooleanType;
import org.apache.spark.sql.types.DataType;

/** {@code min(col)} or {@code max(col)} ({@code max}): the column's own type, exact, merged by comparison. */
public record MinMax(boolean max) implements AggregateFunction {

    private String fn() {
        return max ? "max" : "min";
    }

    @Override
    public String spelling() {
        return fn() + "(col)";
    }

    @Override
    public String call(String input, boolean exact) {
        return fn() + "(" + input + ")";
    }

    @Override
    public DataType resultType(DataType argType) {
        return argType;
    }

    /** Spark's ordering of two values of the column's type (NaN above every other double, as Spark orders it). */
    @Override
    @SuppressWarnings({"unchecked", "rawtypes"})
    public Object merge(Measure m, Object stored, Object batch) {
        int c = ((Comparable) stored).compareTo(batch);
        return max ? (c >= 0 ? stored : batch) : (c <= 0 ? stored : batch);
    }

    @Override
    public List<Measure.Computed> mergeSql(Measure m) {
        return List.of(new Measure.Computed(m.name(), (max ? "greatest" : "least") + "(s." + m.name() + ", b." + m.name() + ")"));
    }

    @Override
    public List<Measure.Computed> rollup(Measure m) {
        return List.of(new Measure.Computed(m.name(), fn() + "(" + m.name() + ")"));
    }

    @Override
    public Optional<Refusal> refuse(String fn, String column, DataType type) {
        return type instanceof BooleanType
                ? Optional.of(new Refusal(fn + " over " + column + ", a BOOLEAN column", "count(*) FILTER (WHERE " + column + ")"))
                : Optional.empty();
    }
}
