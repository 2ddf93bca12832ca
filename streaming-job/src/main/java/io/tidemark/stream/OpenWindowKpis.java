package io.tidemark.stream;

import static org.apache.spark.sql.functions.col;
import static org.apache.spark.sql.functions.expr;
import static org.apache.spark.sql.functions.lit;
import static org.apache.spark.sql.functions.max;
import static org.apache.spark.sql.functions.sum;

import java.time.Instant;
import java.time.LocalDate;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.stream.Collectors;

import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;

import io.tidemark.lakehouse.KpiComputation;
import io.tidemark.lakehouse.Lakehouse;
import io.tidemark.lakehouse.Lakehouse.Table;
import io.tidemark.late.WatermarkLedger;

/**
 * Keeps kpi_5m up to date for the windows the watermark has not passed yet: the open windows.
 *
 * <p>Instead of a MERGE (two or more passes over the target, seconds of fixed cost per batch), each
 * batch rewrites the open windows in one overwrite: it reads their current rows (one small file),
 * adds the batch's partial aggregates (counts, exact volume, sketch union), and replaces exactly
 * those windows with {@code replaceWhere}. Rows are written split by {@code is_final}, so a file
 * holds either final rows, never touched again by the stream, or exactly the open windows, which
 * the next batch's predicate covers whole: Delta removes it without rewriting anything, and the
 * per-batch cost stays flat however long the day gets.
 *
 * <p>Only the stream writes open windows (reconcile touches closed days only), so the read and the
 * overwrite cannot interleave with another writer of the same rows. Every row the overwrite writes
 * carries the batch id ({@code stream_batch_id}): that is how a replay knows the batch is in.
 */
final class OpenWindowKpis {
    private static final DateTimeFormatter TS = DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm:ss.SSSSSS").withZone(ZoneOffset.UTC);

    private final Lakehouse lakehouse;
    private final long windowUs;
    /** Open windows (start, epoch micros) per day, as they are in the table. */
    private TreeMap<LocalDate, TreeSet<Long>> open;

    OpenWindowKpis(Lakehouse lakehouse, java.time.Duration window) {
        this.lakehouse = lakehouse;
        this.windowUs = window.toNanos() / 1000;
    }

    /** Forgets the open set; the next write reloads it from the table (after a restart or a replay). */
    void reset() {
        open = null;
    }

    /**
     * Adds the batch's on-time records and marks final every window that ends at or before the
     * next watermark. Returns the number of (window, cell) rows the batch touched.
     */
    long write(SparkSession spark, Dataset<Row> onTime, WatermarkLedger.Entry entry) {
        if (open == null) {
            open = load(spark);
        }
        Dataset<Row> aggregated = KpiComputation.partialKpis(onTime);
        long t0 = System.nanoTime();
        List<Row> partials = aggregated.collectAsList();
        MicroBatchWriter.trace(entry.batchId(), "kpi_5m-partials", t0);
        TreeMap<LocalDate, TreeSet<Long>> touched = new TreeMap<>();
        open.forEach((d, w) -> touched.computeIfAbsent(d, k -> new TreeSet<>()).addAll(w));
        for (Row r : partials) {
            touched.computeIfAbsent(r.getDate(r.fieldIndex("event_date")).toLocalDate(), k -> new TreeSet<>())
                    .add(micros(r.getTimestamp(r.fieldIndex("window_start"))));
        }
        if (touched.isEmpty()) {
            return 0;
        }
        long nextUs = entry.nextWatermarkMs() * 1000;
        String predicate = predicate(touched);
        Dataset<Row> current = spark.read().format("delta").load(lakehouse.path(Table.KPI_5M)).where(predicate)
                .select("event_date", "window_start", "window_end", "cell_site_id", "record_count", "total_gb", "subscriber_sketch", "updated_at");
        Dataset<Row> batch = spark.createDataFrame(partials, aggregated.schema())
                .select("event_date", "window_start", "window_end", "cell_site_id", "record_count", "total_gb", "subscriber_sketch", "updated_at");
        // The rows are few (open windows x cells): merge them in one small job and write them from the
        // driver, so the range split below samples a local relation instead of re-running the read.
        Dataset<Row> merged = current.unionByName(batch)
                .groupBy("event_date", "window_start", "window_end", "cell_site_id")
                .agg(sum("record_count").as("record_count"),
                        sum("total_gb").cast(KpiComputation.VOLUME_TYPE).as("total_gb"),
                        expr("hll_union_agg(subscriber_sketch)").as("subscriber_sketch"),
                        max("updated_at").as("updated_at"))
                .select(col("window_start"), col("window_end"), col("cell_site_id"), col("record_count"), col("total_gb"),
                        expr("hll_sketch_estimate(subscriber_sketch)").as("subscribers"), col("subscriber_sketch"),
                        expr("unix_micros(window_end) <= " + nextUs + "L").as("is_final"),
                        lit("stream").as("source"), col("updated_at"), lit(entry.batchId()).as("stream_batch_id"), col("event_date"));
        Dataset<Row> rows = spark.createDataFrame(merged.collectAsList(), merged.schema())
                // one range partition per is_final value: final rows and open rows never share a file
                .repartitionByRange(2, col("is_final"));
        rows.write().format("delta").mode("overwrite")
                .option("replaceWhere", predicate)
                .save(lakehouse.path(Table.KPI_5M));

        TreeMap<LocalDate, TreeSet<Long>> stillOpen = new TreeMap<>();
        for (Map.Entry<LocalDate, TreeSet<Long>> e : touched.entrySet()) {
            for (long start : e.getValue()) {
                long end = start + windowUs;
                if (end > nextUs) {
                    stillOpen.computeIfAbsent(e.getKey(), k -> new TreeSet<>()).add(start);
                }
            }
        }
        open = stillOpen;
        return partials.size();
    }

    private TreeMap<LocalDate, TreeSet<Long>> load(SparkSession spark) {
        TreeMap<LocalDate, TreeSet<Long>> m = new TreeMap<>();
        for (Row r : spark.read().format("delta").load(lakehouse.path(Table.KPI_5M))
                .filter(col("is_final").equalTo(false))
                .select(col("event_date"), expr("unix_micros(window_start)")).distinct().collectAsList()) {
            m.computeIfAbsent(r.getDate(0).toLocalDate(), k -> new TreeSet<>()).add(r.getLong(1));
        }
        return m;
    }

    /** {@code event_date IN (...) AND window_start IN (...)} with literals only, so Delta prunes partitions and files. */
    static String predicate(TreeMap<LocalDate, TreeSet<Long>> windows) {
        String days = windows.keySet().stream().map(d -> "DATE'" + d + "'").collect(Collectors.joining(", "));
        String starts = windows.values().stream().flatMap(TreeSet::stream)
                .map(us -> "TIMESTAMP'" + TS.format(Instant.ofEpochSecond(Math.floorDiv(us, 1_000_000L), Math.floorMod(us, 1_000_000L) * 1000)) + "'")
                .collect(Collectors.joining(", "));
        return "event_date IN (" + days + ") AND window_start IN (" + starts + ")";
    }

    private static long micros(java.sql.Timestamp t) {
        return Math.floorDiv(t.getTime(), 1000L) * 1_000_000L + t.getNanos() / 1000;
    }
}
