package io.tidemark.pipeline;

import static org.apache.spark.sql.functions.col;
import static org.apache.spark.sql.functions.expr;
import static org.apache.spark.sql.functions.max;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import org.apache.spark.sql.Column;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

import io.tidemark.pipeline.Pipeline.KpiTable;

/**
 * How the stream keeps one KPI table, derived from its definition: the windows a record counts in,
 * a micro-batch's partial rows per (window, dimensions), their merge with the stored row on the
 * driver, and the stored columns written from the merged state.
 *
 * <p>A row's <em>state</em> is what merging needs ({@link Measure#state}: a count, a sum, an
 * avg's sum and count, a sketch); the values analysts read beside it (an avg, an estimate) are
 * computed from the state by {@link Measure#value} when the row is written, in the same projection.
 */
public final class KpiAggregation {
    /** The window columns every KPI row has, then the table's dimensions. */
    public static final List<String> WINDOW_COLUMNS = List.of("event_date", "window_start", "window_end");

    private final KpiTable table;
    private final String eventTime;
    private final List<String> stateNames = new ArrayList<>();
    private final int[] stateOffsets;
    private final StructType stateRowSchema;

    public KpiAggregation(KpiTable table, String eventTime) {
        this.table = table;
        this.eventTime = eventTime;
        this.stateOffsets = new int[table.measures().size() + 1];
        // the table's columns with each measure's state in place of its stored columns, every one nullable (rows built on the driver)
        List<StructField> fields = new ArrayList<>(KpiTable.OWN_COLUMNS.subList(0, 2));
        table.dimensions().forEach(d -> fields.add(Measure.field(d.name(), d.type(), true)));
        for (int i = 0; i < table.measures().size(); i++) {
            stateOffsets[i] = stateNames.size();
            for (StructField f : table.measures().get(i).state()) {
                stateNames.add(f.name());
                fields.add(f);
            }
        }
        stateOffsets[table.measures().size()] = stateNames.size();
        fields.addAll(KpiTable.OWN_COLUMNS.subList(2, KpiTable.OWN_COLUMNS.size()));
        this.stateRowSchema = new StructType(fields.stream().map(f -> Measure.field(f.name(), f.dataType(), true)).toArray(StructField[]::new));
    }

    public KpiTable table() {
        return table;
    }

    /** The dimension columns, in the table's order. */
    public List<String> dimensions() {
        return table.dimensions().stream().map(Pipeline.Column::name).toList();
    }

    /** The state columns' names, in {@link #merge} order. */
    public List<String> state() {
        return stateNames;
    }

    /**
     * One row per (record, window of this table) with {@code window_start}, {@code window_end} and
     * {@code event_date} (the UTC date of the window's start) added. A tumbling window is the one
     * whose start is the event time rounded down to the size; a hopping window of size S sliding by L
     * gives each record the S / L windows whose start is its time rounded down to L, minus 0..S/L-1 slides.
     * The three columns are ones late_events and the KPI tables store, which no event column may take
     * ({@link PipelineTables#ownEventColumns}).
     */
    public Dataset<Row> windowed(Dataset<Row> events) {
        return windowed(events, eventTime, table.window());
    }

    /** {@link #windowed(Dataset)} for any event-time column and window: the one place a record is given its windows. */
    public static Dataset<Row> windowed(Dataset<Row> events, String eventTime, Pipeline.Window window) {
        long sizeUs = window.size().toNanos() / 1000;
        long slideUs = window.slide().toNanos() / 1000;
        String ts = "unix_micros(" + Pipeline.quote(eventTime) + ")";
        Dataset<Row> out;
        if (window.tumbling()) {
            out = events.withColumn("window_start", expr("timestamp_micros(" + ts + " - pmod(" + ts + ", " + sizeUs + "L))"));
        } else {
            out = events.withColumn(WorkingColumns.SLIDE, expr("explode(sequence(0L, " + (window.windowsPerRecord() - 1) + "L))"))
                    .withColumn("window_start", expr("timestamp_micros(" + ts + " - pmod(" + ts + ", " + slideUs + "L) - "
                            + WorkingColumns.SLIDE + " * " + slideUs + "L)"))
                    .drop(WorkingColumns.SLIDE);
        }
        return out.withColumn("window_end", expr("timestamp_micros(unix_micros(window_start) + " + sizeUs + "L)"))
                .withColumn("event_date", expr("to_date(window_start)"));
    }

    /**
     * The partial rows of valid records whose window {@code watermark} has not closed (the records
     * of a closed window are late for it): per (window, dimensions), the state of every measure and
     * {@code updated_at}, the ingest time of the newest record counted. The table's WHERE applies
     * first: a record that fails it counts in none of its windows.
     */
    public Dataset<Row> partials(Dataset<Row> validRecords, Watermark watermark) {
        Dataset<Row> in = table.where() == null ? validRecords : validRecords.filter(expr(table.where()));
        Dataset<Row> windowed = windowed(in);
        windowed = windowed.filter(watermark.closes(col("window_end")).unary_$bang());
        List<Column> keys = new ArrayList<>();
        WINDOW_COLUMNS.forEach(c -> keys.add(col(c)));
        dimensions().forEach(d -> keys.add(col(d)));
        List<Column> aggregates = new ArrayList<>();
        table.measures().forEach(m -> m.partial().forEach(p -> aggregates.add(expr(p.sql()).as(p.column()))));
        aggregates.add(max(col("ingest_ts")).as("updated_at"));
        // the groups' own columns: window, dimensions, state and updated_at, none of which a dimension or measure may take twice
        return windowed.groupBy(keys.toArray(Column[]::new))
                .agg(aggregates.get(0), aggregates.subList(1, aggregates.size()).toArray(Column[]::new));
    }

    /** The state of a stored row {@code s} and of a partial row {@code b} ({@link #state} order) merged, measure by measure. */
    public Object[] merge(Object[] s, Object[] b) {
        Object[] out = new Object[s.length];
        for (int i = 0; i < table.measures().size(); i++) {
            int from = stateOffsets[i];
            int to = stateOffsets[i + 1];
            Object[] merged = table.measures().get(i).mergeState(Arrays.copyOfRange(s, from, to), Arrays.copyOfRange(b, from, to));
            System.arraycopy(merged, 0, out, from, merged.length);
        }
        return out;
    }

    /**
     * The rows the stream builds on the driver: window bounds, dimensions, the state, then
     * is_final, source, updated_at, stream_batch_id and event_date; {@link #stored} turns them into the table's.
     */
    public StructType stateRowSchema() {
        return stateRowSchema;
    }

    /** Rows of {@link #stateRowSchema} as the table's columns ({@link KpiTable#columns}), each value computed from the state. */
    public Dataset<Row> stored(Dataset<Row> stateRows) {
        List<String> state = state();
        List<Column> out = new ArrayList<>(List.of(col("window_start"), col("window_end")));
        dimensions().forEach(d -> out.add(col(d)));
        for (Measure m : table.measures()) {
            for (StructField stored : m.stored()) {
                out.add(state.contains(stored.name()) ? col(stored.name()) : expr(m.value()).as(stored.name()));
            }
        }
        for (String c : List.of("is_final", "source", "updated_at", "stream_batch_id", "event_date")) {
            out.add(col(c));
        }
        return stateRows.select(out.toArray(Column[]::new));
    }
}
