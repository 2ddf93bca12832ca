package io.tidemark.stream;

import static org.apache.spark.sql.functions.col;

import java.sql.Date;
import java.sql.Timestamp;
import java.time.Instant;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.TreeSet;

import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.types.StructType;

import io.tidemark.lakehouse.Lakehouse;
import io.tidemark.lakehouse.Lakehouse.Table;
import io.tidemark.lakehouse.TableUpdate;
import io.tidemark.pipeline.KpiAggregation;
import io.tidemark.pipeline.Watermark;

/**
 * Keeps a KPI table up to date for the windows the watermark has not passed yet: the open windows.
 *
 * <p>The open windows are few (windows within the allowed lateness x dimensions), so their rows live on
 * the driver as well as in the table: each batch merges its partial aggregates into them here
 * ({@link KpiAggregation#merge}: counts and sums added, sketches unioned), without a Spark job, and
 * replaces exactly those windows in the table with one {@code replaceWhere} overwrite of rows built on
 * the driver. Rows are written split by {@code is_final}, so a file holds either final rows, never
 * touched again by the stream, or exactly the open windows, which the next batch's predicate covers
 * whole: Delta's delete path still reads that one file (a job to find the files the predicate touches,
 * then one to write back their rows it does not match: none), but carries no row over, and the per-batch
 * cost stays flat however long the day gets. (Spark's event log of a batch: five jobs for this commit,
 * the post-commit snapshot's state included; bench/RESULTS.md has what a commit costs.)
 *
 * <p>Only the stream writes open windows (reconcile touches closed days only), so the rows held here
 * are the table's. After a restart or a replay they are read back from the table once. Every row the
 * overwrite writes carries the batch id ({@code stream_batch_id}): that is how a replay knows the
 * batch is in.
 */
final class OpenWindowKpis {

    private final Lakehouse lakehouse;
    private final KpiAggregation aggregation;
    private final Table table;
    private final long windowUs;
    /** Its columns in the batch's summary ({@link RecordClassifier#partialColumn}): the state's, then updated_at. */
    private final List<String> partialState;
    private final String partialUpdatedAt;
    /** The open rows, by window start (epoch micros) and dimensions, as they are in the table; null until loaded. */
    private TreeMap<Key, Kpi> open;

    /** A (window, dimensions) row of the KPI table. */
    record Key(long windowStartUs, List<Object> dimensions) implements Comparable<Key> {
        @Override
        @SuppressWarnings({"unchecked", "rawtypes"})
        public int compareTo(Key o) {
            int c = Long.compare(windowStartUs, o.windowStartUs);
            for (int i = 0; c == 0 && i < dimensions.size(); i++) {
                Object a = dimensions.get(i);
                Object b = o.dimensions.get(i);
                c = a == null ? (b == null ? 0 : -1) : b == null ? 1 : ((Comparable) a).compareTo(b);
            }
            return c;
        }
    }

    /** The state of one (window, dimensions) row: immutable, merged into a new value. */
    record Kpi(LocalDate day, Object[] state, Timestamp updatedAt) {
        Kpi plus(Kpi other, KpiAggregation aggregation) {
            return new Kpi(day, aggregation.merge(state, other.state), updatedAt.after(other.updatedAt) ? updatedAt : other.updatedAt);
        }
    }

    /** The KPI table {@code aggregation} keeps, table {@code index} of the pipeline (its partial rows' {@code kpi}). */
    OpenWindowKpis(Lakehouse lakehouse, KpiAggregation aggregation, int index) {
        this.lakehouse = lakehouse;
        this.aggregation = aggregation;
        this.table = Table.kpi(aggregation.table().name());
        this.windowUs = aggregation.table().window().size().toNanos() / 1000;
        this.partialState = aggregation.state().stream().map(c -> RecordClassifier.partialColumn(index, c)).toList();
        this.partialUpdatedAt = RecordClassifier.partialColumn(index, "updated_at");
    }

    KpiAggregation aggregation() {
        return aggregation;
    }

    /** The KPI table it keeps. */
    Table table() {
        return table;
    }

    /** Forgets the open rows; they are read from the table again before the next plan (after a restart or a replay). */
    void reset() {
        open = null;
    }

    /** Whether the open rows are known: read from the table since the last {@link #reset}. */
    boolean loaded() {
        return open != null;
    }

    /** Reads the open rows from the table, unless they are known (the edge of a batch: its only read of the table). */
    void load(SparkSession spark) {
        if (open == null) {
            open = read(spark);
        }
    }

    /** The open rows as known (tests: where a plan starts from). */
    void assume(Map<Key, Kpi> rows) {
        open = new TreeMap<>(rows);
    }

    /** A batch's partial aggregate of one (window, dimensions) row of this table. */
    record Partial(Key key, Kpi kpi) {
    }

    /** One summary row of this table ({@link RecordClassifier#summary}), typed. */
    Partial partial(Row summaryRow) {
        return new Partial(key(summaryRow), kpi(summaryRow, partialState, partialUpdatedAt));
    }

    /**
     * What a batch writes to this table: the rows of every window it touched or that was open, final
     * where the next watermark has passed the window's end, and the days and window starts that bound
     * exactly the rows they replace. {@code contributed} is how many partial rows the batch gave.
     */
    record Replacement(Table table, List<Row> finalRows, List<Row> openRows, List<LocalDate> days, List<Instant> windowStarts,
                       Map<Key, Kpi> stillOpen, long contributed) {
        /** The rows replaced, as Delta's replaceWhere reads them ({@link TableUpdate.Replace#predicate}). */
        String predicate() {
            return TableUpdate.Replace.predicate(days, windowStarts);
        }
    }

    /**
     * Merges the batch's partial rows into the open rows ({@link KpiAggregation#merge}: counts and sums
     * added, sketches unioned) and marks final every window that ends at or before {@code next}: a pure
     * function of the open rows (which must be {@link #loaded}) and the batch. Empty when no window is
     * open or touched.
     */
    Optional<Replacement> plan(List<Partial> partials, long batchId, Watermark next) {
        if (open == null) {
            throw new IllegalStateException(table.tableName() + ": the open rows must be read before a batch is planned");
        }
        TreeMap<Key, Kpi> touched = new TreeMap<>(open);
        for (Partial p : partials) {
            touched.merge(p.key(), p.kpi(), (a, b) -> a.plus(b, aggregation));
        }
        if (touched.isEmpty()) {
            return Optional.empty();
        }
        List<Row> finalRows = new ArrayList<>();
        List<Row> openRows = new ArrayList<>();
        TreeMap<Key, Kpi> stillOpen = new TreeMap<>();
        for (Map.Entry<Key, Kpi> e : touched.entrySet()) {
            Key k = e.getKey();
            Kpi v = e.getValue();
            long endUs = k.windowStartUs() + windowUs;
            boolean isFinal = next.closes(Math.floorDiv(endUs, 1000L));
            List<Object> values = new ArrayList<>(List.of(timestamp(k.windowStartUs()), timestamp(endUs)));
            values.addAll(k.dimensions());
            values.addAll(Arrays.asList(v.state()));
            values.addAll(List.of(isFinal, "stream", v.updatedAt(), batchId, Date.valueOf(v.day())));
            Row row = RowFactory.create(values.toArray());
            (isFinal ? finalRows : openRows).add(row);
            if (!isFinal) {
                stillOpen.put(k, v);
            }
        }
        TreeSet<LocalDate> days = new TreeSet<>();
        TreeSet<Long> starts = new TreeSet<>();
        touched.forEach((k, v) -> {
            days.add(v.day());
            starts.add(k.windowStartUs());
        });
        return Optional.of(new Replacement(table, finalRows, openRows, List.copyOf(days), starts.stream().map(OpenWindowKpis::instant).toList(),
                stillOpen, partials.size()));
    }

    /** Writes a {@link #plan} to the table in one commit that replaces its bounds; its open rows are then this table's. */
    void commit(SparkSession spark, Replacement r) {
        // One task per is_final value, so final rows and open rows never share a file.
        StructType schema = aggregation.stateRowSchema();
        Dataset<Row> rows = aggregation.stored(spark.createDataFrame(r.finalRows(), schema).coalesce(1)
                .union(spark.createDataFrame(r.openRows(), schema).coalesce(1)));
        lakehouse.commit(spark, new TableUpdate.Replace(table, rows, r.days(), r.windowStarts(), null));
        open = new TreeMap<>(r.stillOpen());
    }

    /** The (window, dimensions) of a stored row or a partial row. */
    private Key key(Row r) {
        List<Object> dims = new ArrayList<>();
        for (String d : aggregation.dimensions()) {
            dims.add(r.get(r.fieldIndex(d)));
        }
        return new Key(micros(r.getTimestamp(r.fieldIndex("window_start"))), dims);
    }

    /** The state of a stored row or a partial row, its columns named {@code state} and {@code updatedAt}. */
    private static Kpi kpi(Row r, List<String> state, String updatedAt) {
        Object[] values = new Object[state.size()];
        for (int i = 0; i < values.length; i++) {
            values[i] = r.get(r.fieldIndex(state.get(i)));
        }
        return new Kpi(r.getDate(r.fieldIndex("event_date")).toLocalDate(), values, r.getTimestamp(r.fieldIndex(updatedAt)));
    }

    private TreeMap<Key, Kpi> read(SparkSession spark) {
        List<String> columns = new ArrayList<>(List.of("event_date", "window_start"));
        columns.addAll(aggregation.dimensions());
        columns.addAll(aggregation.state());
        columns.add("updated_at");
        TreeMap<Key, Kpi> m = new TreeMap<>();
        for (Row r : lakehouse.read(spark, table).filter(col("is_final").equalTo(false))
                .selectExpr(columns.toArray(String[]::new)).collectAsList()) {
            m.put(key(r), kpi(r, aggregation.state(), "updated_at"));
        }
        return m;
    }

    private static Timestamp timestamp(long us) {
        return Timestamp.from(instant(us));
    }

    private static Instant instant(long us) {
        return Instant.ofEpochSecond(Math.floorDiv(us, 1_000_000L), Math.floorMod(us, 1_000_000L) * 1000);
    }

    private static long micros(Timestamp t) {
        return Math.floorDiv(t.getTime(), 1000L) * 1_000_000L + t.getNanos() / 1000;
    }
}
