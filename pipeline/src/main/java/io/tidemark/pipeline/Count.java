package io.tidemark.pipeline;

import java.util.List;

import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;

/** {@code count(*)} ({@code star}) or {@code count(col)}: a BIGINT that merges by addition; exact while streaming. */
public record Count(boolean star) implements AggregateFunction {

    @Override
    public String spelling() {
        return star ? "count(*)" : "count(col)";
    }

    @Override
    public String call(String input, boolean exact) {
        return "count(" + input + ")";
    }

    @Override
    public DataType resultType(DataType argType) {
        return DataTypes.LongType;
    }

    @Override
    public Object merge(Measure m, Object stored, Object batch) {
        return (Long) stored + (Long) batch;
    }

    @Override
    public List<Measure.Computed> mergeSql(Measure m) {
        return List.of(new Measure.Computed(m.name(), "s." + m.name() + " + b." + m.name()));
    }

    @Override
    public List<Measure.Computed> rollup(Measure m) {
        return List.of(new Measure.Computed(m.name(), "sum(" + m.name() + ")"));
    }

    @Override
    public String empty() {
        return "0";
    }
}
