package io.tidemark.stream;

import static org.apache.spark.sql.functions.col;

import java.math.BigDecimal;
import java.sql.Timestamp;
import java.time.Instant;
import java.time.LocalDate;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.stream.Collectors;

import org.apache.datasketches.hll.HllSketch;
import org.apache.datasketches.hll.Union;
import org.apache.datasketches.memory.Memory;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.types.StructType;

import io.tidemark.lakehouse.KpiComputation;
import io.tidemark.lakehouse.Lakehouse;
import io.tidemark.lakehouse.Lakehouse.Table;
import io.tidemark.lakehouse.Watermark;
import io.tidemark.late.WatermarkLedger;

/**
 * Keeps kpi_5m up to date for the windows the watermark has not passed yet: the open windows.
 *
 * <p>The open windows are few (windows within the allowed lateness x cells), so their rows live on
 * the driver as well as in the table: each batch adds its partial aggregates (counts, exact volume,
 * sketch union) to them here, without a Spark job, and replaces exactly those windows in the table
 * with one {@code replaceWhere} overwrite of rows built on the driver. Rows are written split by
 * {@code is_final}, so a file holds either final rows, never touched again by the stream, or exactly
 * the open windows, which the next batch's predicate covers whole: Delta removes that file without
 * rewriting anything, and the per-batch cost stays flat however long the day gets.
 *
 * <p>Only the stream writes open windows (reconcile touches closed days only), so the rows held here
 * are the table's. After a restart or a replay they are read back from the table once. The sketch
 * union is the one Spark's {@code hll_union_agg} computes (a {@link Union} of lgK of the first
 * sketch, serialised updatable), and the estimate the one of {@code hll_sketch_estimate}: the table
 * holds the same bytes whichever of the two merged them. Every row the overwrite writes carries the
 * batch id ({@code stream_batch_id}): that is how a replay knows the batch is in.
 */
final class OpenWindowKpis {
    private static final DateTimeFormatter TS = DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm:ss.SSSSSS").withZone(ZoneOffset.UTC);

    private final Lakehouse lakehouse;
    private final long windowUs;
    /** The open rows, by window start (epoch micros) and cell, as they are in the table; null until loaded. */
    private TreeMap<Key, Kpi> open;

    /** A (window, cell) row of kpi_5m. */
    record Key(long windowStartUs, String cell) implements Comparable<Key> {
        @Override
        public int compareTo(Key o) {
            int c = Long.compare(windowStartUs, o.windowStartUs);
            return c != 0 ? c : cell.compareTo(o.cell);
        }
    }

    /** The aggregate of one (window, cell): immutable, merged into a new value. */
    record Kpi(LocalDate day, long count, BigDecimal totalGb, byte[] sketch, Timestamp updatedAt) {
        Kpi plus(Kpi other) {
            // As hll_union_agg: a union of the first sketch's lgK, updated with each sketch.
            HllSketch a = HllSketch.wrap(Memory.wrap(sketch));
            Union u = new Union(a.getLgConfigK());
            u.update(a);
            u.update(HllSketch.wrap(Memory.wrap(other.sketch)));
            return new Kpi(day, count + other.count, totalGb.add(other.totalGb), u.toUpdatableByteArray(),
                    updatedAt.after(other.updatedAt) ? updatedAt : other.updatedAt);
        }

        /** As hll_sketch_estimate. */
        long subscribers() {
            return Math.round(HllSketch.heapify(Memory.wrap(sketch)).getEstimate());
        }
    }

    OpenWindowKpis(Lakehouse lakehouse, java.time.Duration window) {
        this.lakehouse = lakehouse;
        this.windowUs = window.toNanos() / 1000;
    }

    /** Forgets the open rows; the next write reloads them from the table (after a restart or a replay). */
    void reset() {
        open = null;
    }

    /**
     * Adds the batch's partial aggregates (rows of {@link KpiComputation#partialKpis}) and marks final
     * every window that ends at or before the next watermark. Returns the number of (window, cell)
     * rows the batch contributed to.
     */
    long write(SparkSession spark, List<Row> partials, WatermarkLedger.Entry entry) {
        if (open == null) {
            open = load(spark);
        }
        TreeMap<Key, Kpi> touched = new TreeMap<>(open);
        for (Row r : partials) {
            touched.merge(key(r), kpi(r), Kpi::plus);
        }
        if (touched.isEmpty()) {
            return 0;
        }
        Watermark next = Watermark.ofMillis(entry.nextWatermarkMs());
        List<Row> finalRows = new ArrayList<>();
        List<Row> openRows = new ArrayList<>();
        TreeMap<Key, Kpi> stillOpen = new TreeMap<>();
        for (Map.Entry<Key, Kpi> e : touched.entrySet()) {
            Key k = e.getKey();
            Kpi v = e.getValue();
            long endUs = k.windowStartUs() + windowUs;
            boolean isFinal = next.closes(Math.floorDiv(endUs, 1000L));
            Map<String, Object> values = new java.util.HashMap<>();
            values.put("window_start", instant(k.windowStartUs()));
            values.put("window_end", instant(endUs));
            values.put("cell_site_id", k.cell());
            values.put("record_count", v.count());
            values.put("total_gb", v.totalGb());
            values.put("subscribers", v.subscribers());
            values.put("subscriber_sketch", v.sketch());
            values.put("is_final", isFinal);
            values.put("source", "stream");
            values.put("updated_at", v.updatedAt());
            values.put("stream_batch_id", entry.batchId());
            values.put("event_date", v.day());
            Row row = Lakehouse.row(Table.KPI_5M, values);
            (isFinal ? finalRows : openRows).add(row);
            if (!isFinal) {
                stillOpen.put(k, v);
            }
        }
        // One task per is_final value, so final rows and open rows never share a file.
        StructType schema = Lakehouse.schema(Table.KPI_5M);
        Dataset<Row> rows = spark.createDataFrame(finalRows, schema).coalesce(1)
                .union(spark.createDataFrame(openRows, schema).coalesce(1));
        lakehouse.replaceWhere(rows, Table.KPI_5M, predicate(touched), null);
        open = stillOpen;
        return partials.size();
    }

    /** The (window, cell) of a row of kpi_5m or of the partial KPIs. */
    private static Key key(Row r) {
        return new Key(micros(r.getTimestamp(r.fieldIndex("window_start"))), r.getString(r.fieldIndex("cell_site_id")));
    }

    /** The aggregate of a row of kpi_5m or of the partial KPIs. */
    private static Kpi kpi(Row r) {
        return new Kpi(r.getDate(r.fieldIndex("event_date")).toLocalDate(), r.getLong(r.fieldIndex("record_count")),
                r.getDecimal(r.fieldIndex("total_gb")), (byte[]) r.get(r.fieldIndex("subscriber_sketch")),
                r.getTimestamp(r.fieldIndex("updated_at")));
    }

    private TreeMap<Key, Kpi> load(SparkSession spark) {
        TreeMap<Key, Kpi> m = new TreeMap<>();
        for (Row r : lakehouse.read(spark, Table.KPI_5M).filter(col("is_final").equalTo(false))
                .select("event_date", "window_start", "cell_site_id", "record_count", "total_gb", "subscriber_sketch", "updated_at")
                .collectAsList()) {
            m.put(key(r), kpi(r));
        }
        return m;
    }

    /** {@code event_date IN (...) AND window_start IN (...)} with literals only, so Delta prunes partitions and files. */
    static String predicate(Map<Key, Kpi> rows) {
        TreeSet<LocalDate> days = new TreeSet<>();
        TreeSet<Long> starts = new TreeSet<>();
        rows.forEach((k, v) -> {
            days.add(v.day());
            starts.add(k.windowStartUs());
        });
        return "event_date IN (" + days.stream().map(d -> "DATE'" + d + "'").collect(Collectors.joining(", ")) + ") AND window_start IN ("
                + starts.stream().map(us -> "TIMESTAMP'" + TS.format(instant(us)) + "'").collect(Collectors.joining(", ")) + ")";
    }

    private static Instant instant(long us) {
        return Instant.ofEpochSecond(Math.floorDiv(us, 1_000_000L), Math.floorMod(us, 1_000_000L) * 1000);
    }

    private static long micros(Timestamp t) {
        return Math.floorDiv(t.getTime(), 1000L) * 1_000_000L + t.getNanos() / 1000;
    }
}
