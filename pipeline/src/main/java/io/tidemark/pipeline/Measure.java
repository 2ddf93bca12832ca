package io.tidemark.pipeline;

import java.util.ArrayList;
import java.util.List;

import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.Metadata;
import org.apache.spark.sql.types.StructField;

/**
 * One measure of a KPI table: a name, the {@link Aggregate} it computes, the event column it reads
 * and the FILTER it keeps. What the aggregate stores, how it merges across micro-batches, rolls up
 * and is recomputed exactly is the aggregate's; this record gives it the measure's names and types.
 *
 * <p>Every measure merges across micro-batches, so a window's row after N batches is the same as if
 * one batch had held all its records: counts, sums, min and max exactly; avg as an exact sum and
 * count; distinct counts and percentiles as mergeable sketches (HLL, KLL) that reconcile replaces
 * with the exact answer.
 *
 * @param name     the output column, as the SELECT names it
 * @param function what it computes
 * @param column   the event column it reads; null for {@code count(*)}
 * @param argument the argument as Spark SQL ({@code amount}, {@code CAST(score AS DECIMAL(20,4))}); null for {@code count(*)}
 * @param argType  the argument's type (after a CAST); null for {@code count(*)}
 * @param filter   the FILTER (WHERE ...) condition as written, or null
 * @param sketch   for a sketch measure: the column that stores the sketch ({@code <name>_sketch} unless the table's
 *                 {@code TBLPROPERTIES ('<name>.sketch_column' = '...')} names it); else null
 * @param notNull  whether every row has a value: a count always; the rest when no FILTER can leave a window without
 *                 records to aggregate and the column is NOT NULL
 */
public record Measure(String name, AggregateFunction function, String column, String argument, DataType argType, String filter,
                      String sketch, boolean notNull, Pipeline.Position at) {

    public Measure {
        if (sketch == null && function.sketched()) {
            sketch = name + "_sketch";
        }
    }

    /** A column computed by an aggregate's face: its name and its Spark SQL. */
    public record Computed(String column, String sql) {
        /** {@code sql AS column}. */
        public String aliased() {
            return sql + " AS " + column;
        }
    }

    /** This measure with its sketch stored in column {@code column}. */
    public Measure withSketchColumn(String column) {
        return new Measure(name, function, this.column, argument, argType, filter, column, notNull, at);
    }

    /** Whether the stream keeps a sketch for it (an estimate until reconcile). */
    public boolean sketched() {
        return sketch != null;
    }

    /** Whether it counts the table's records: {@code count(*)} without FILTER. */
    public boolean countsRecords() {
        return function instanceof Count c && c.star() && filter == null;
    }

    /** What the measure computes as written: {@code sum(amount) FILTER (WHERE status = 'approved')}. */
    public String written() {
        return function.call(argument == null ? "*" : argument, false) + (filter == null ? "" : " FILTER (WHERE " + filter + ")");
    }

    /**
     * What a plain batch job would write for the exact value: the aggregate as written, with
     * {@code count(DISTINCT)} and {@code percentile_disc} for the approximate ones, and the FILTER in the
     * argument ({@code CASE WHEN}), which every aggregation strategy reads the same way.
     */
    public String writtenExact() {
        return function.call(input(), true);
    }

    /**
     * The aggregates' input: the argument ({@code *} for {@code count(*)}), with a FILTER folded in
     * ({@code CASE WHEN cond THEN amount END}, {@code count(CASE WHEN cond THEN 1 END)}), which every aggregate
     * reads the same way (they skip nulls). Spark's sorted aggregation (spark.sql.execution.replaceHashWithSortAgg,
     * which reconcile relies on) drops an aggregate's FILTER clause when it merges the partial and final aggregates
     * into one (Spark 4.2.0), and would count every record.
     */
    public String input() {
        if (argument == null) {
            return filter == null ? "*" : "CASE WHEN " + filter + " THEN 1 END";
        }
        return filter == null ? argument : "CASE WHEN " + filter + " THEN " + argument + " END";
    }

    /** The type of the value analysts read in column {@link #name}. */
    public DataType resultType() {
        return function.resultType(argType);
    }

    /** The columns stored for it in the KPI table: the value, then the state beside it (an avg's sum and count, a sketch). */
    public List<StructField> stored() {
        List<StructField> out = new ArrayList<>(List.of(field(name, resultType(), !notNull)));
        function.state(this).stream().filter(f -> !f.name().equals(name)).forEach(out::add);
        return out;
    }

    /** The state a row keeps to merge the next batch into it ({@link Aggregate#state}). */
    public List<StructField> state() {
        return function.state(this);
    }

    /** Face 1 ({@link Aggregate#partial}). */
    public List<Computed> partial() {
        return function.partial(this);
    }

    /** Face 2 in SQL ({@link Aggregate#mergeSql}). */
    public List<Computed> merge() {
        return function.mergeSql(this);
    }

    /**
     * Face 2 as the stream runs it, on the driver: the state values of a stored row {@code s} and of a
     * batch's partial {@code b} (each in {@link #state} order) merged. A null is a side no record passed
     * the FILTER of: the other side's value is kept.
     */
    public Object[] mergeState(Object[] s, Object[] b) {
        Object[] out = new Object[s.length];
        for (int i = 0; i < s.length; i++) {
            out[i] = s[i] == null ? b[i] : b[i] == null ? s[i] : function.merge(this, s[i], b[i]);
        }
        return out;
    }

    /** The roll-up face ({@link Aggregate#rollup}). */
    public List<Computed> rollup() {
        return function.rollup(this);
    }

    /** The value analysts read, from the stored columns ({@link Aggregate#value}). */
    public String value() {
        return function.value(this);
    }

    /** Face 3 ({@link Aggregate#exact}). */
    public String exact() {
        return function.exact(this);
    }

    /** Whether the stream's value is already the exact one (only sketches are estimates until reconcile). */
    public boolean exactWhileStreaming() {
        return !sketched();
    }

    /** A column of a KPI table. */
    static StructField field(String name, DataType type, boolean nullable) {
        return new StructField(name, type, nullable, Metadata.empty());
    }

    /** A merge that keeps one side where the other has nothing (no record passed the FILTER yet). */
    static String nullSafe(String both, String column) {
        return "coalesce(" + both + ", s." + column + ", b." + column + ")";
    }
}
