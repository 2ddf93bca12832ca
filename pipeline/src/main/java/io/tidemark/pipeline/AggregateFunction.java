package io.tidemark.pipeline;

import java.util.List;
import java.util.Optional;

import org.apache.spark.sql.Column;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;

import static org.apache.spark.sql.functions.expr;

/**
 * One aggregate function a measure can use, in the manner of Flink's {@code AggregateFunction} and
 * Paimon's per-column merge functions: what a micro-batch computes for a window (the partial), what a
 * row stores to merge the next batch into it (the state), the merge itself, the roll-up of many
 * windows, the value analysts read, and the exact recompute reconcile runs over {@code raw_events}.
 * Each face is Spark SQL over the event columns, or over the state columns of two rows {@code s}
 * (stored) and {@code b} (the batch's) for the merge; the {@link Measure} it serves gives the name,
 * the argument with its FILTER folded in ({@link Measure#input}) and the types.
 *
 * <p>Adding an aggregate is one implementation of this interface and one entry in the parser's
 * table of function names ({@code PipelineParser.AGGREGATES}).
 */
public interface AggregateFunction {

    /** How a pipeline file writes it, for the messages that list what may be written: {@code sum(col)}. */
    String spelling();

    /** The call over {@code input}: as written ({@code exact} false) or as a plain batch job would write the exact value. */
    String call(String input, boolean exact);

    /** The type of the value analysts read, given the argument's type (null for {@code count(*)}). */
    DataType resultType(DataType argType);

    /**
     * The columns a row keeps to merge the next batch into it, typed, in {@link #partial} order; a
     * column is nullable unless every row has a value. By default the sketch column of a sketched aggregate,
     * else the value column itself (an aggregate that merges as it is); others keep more (an avg's sum and count).
     */
    default List<StructField> state(Measure m) {
        return List.of(sketched() ? Measure.field(m.sketch(), DataTypes.BinaryType, !m.notNull())
                : Measure.field(m.name(), m.resultType(), !m.notNull()));
    }

    /** Face 1: one micro-batch's aggregates of a window's records, one per state column; by default the call itself. */
    default List<Measure.Computed> partial(Measure m) {
        return List.of(new Measure.Computed(m.name(), call(m.input(), false)));
    }

    /**
     * Face 2, the stream's merge: a state value of a stored row and the batch's, both non-null (a
     * null is a side no record passed the FILTER of, and the measure keeps the other).
     */
    Object merge(Measure m, Object stored, Object batch);

    /**
     * Face 2 in SQL, over the state columns of rows {@code s} and {@code b}: what {@code pipeline explain}
     * shows, and the oracle {@link #merge} is held to (MeasureFacesTest).
     */
    List<Measure.Computed> mergeSql(Measure m);

    /**
     * The roll-up face: the stored rows of many windows (an hour's, a day's) merged into one, as
     * aggregates over the state columns in {@link #state} order; {@link #value} over the result is
     * the measure of the whole span.
     */
    List<Measure.Computed> rollup(Measure m);

    /** The value analysts read, from the state columns: the identity unless the value is computed from the state. */
    default String value(Measure m) {
        return m.name();
    }

    /** Face 3: the exact value over all of a window's records, as reconcile computes it; by default the call itself. */
    default String exact(Measure m) {
        return call(m.input(), true);
    }

    /**
     * The exact state columns beside the value ({@link #state} but the value column), over all of a
     * window's records: by default the partial's aggregates, which are exact over any set of records.
     */
    default List<Column> exactState(Measure m) {
        return partial(m).stream().filter(p -> !p.column().equals(m.name())).map(p -> expr(p.sql()).as(p.column())).toList();
    }

    /** The value over no record, for a row one side of a comparison lacks: 0 for what counts or adds up, else NULL. */
    default String empty() {
        return "NULL";
    }

    /** Whether the stream keeps a sketch (an estimate until reconcile). */
    default boolean sketched() {
        return false;
    }

    /** How the value is known, for the column's comment: {@code ": exact"}, {@code ": HLL estimate while streaming, ..."}. */
    default String describe() {
        return "";
    }

    /** For a sketch: the SQL functions that merge it, for the sketch column's comment. */
    default String sketchMerge() {
        return null;
    }

    /**
     * For a sketch: an expression over the sketch column {@code column} that is equal for two sketches
     * of the same values whatever order they saw them in, or empty when there is none (a KLL sketch's
     * content depends on its sampling).
     */
    default Optional<String> orderFreeIdentity(String column) {
        return Optional.empty();
    }

    /** How many arguments it takes (a percentile: the column and the percentile). */
    default int arguments() {
        return 1;
    }

    /** A note for a call with {@code given} arguments where {@link #arguments} are expected ("" when none). */
    default String argumentsNote(int given) {
        return "";
    }

    /**
     * Why {@code fn} cannot read {@code column} of type {@code type}, and what to write instead; empty
     * when it can.
     */
    default Optional<Refusal> refuse(String fn, String column, DataType type) {
        return Optional.empty();
    }

    /** Why a measure's argument is refused, and what to write instead. */
    record Refusal(String what, String instead) {
    }
}
