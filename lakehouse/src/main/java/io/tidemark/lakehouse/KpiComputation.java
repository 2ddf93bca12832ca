package io.tidemark.lakehouse;

import static org.apache.spark.sql.functions.col;
import static org.apache.spark.sql.functions.count;
import static org.apache.spark.sql.functions.count_distinct;
import static org.apache.spark.sql.functions.expr;
import static org.apache.spark.sql.functions.lit;
import static org.apache.spark.sql.functions.max;
import static org.apache.spark.sql.functions.sum;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import org.apache.spark.sql.Column;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;

/**
 * The KPI, defined once and used by both layers, so speed and truth compute the same thing.
 *
 * <p>Input rows carry {@code event_ts}, {@code cell_site_id}, {@code subscriber_id},
 * {@code volume_gb} and {@code ingest_ts} (the columns of {@code raw_events}).
 */
public final class KpiComputation {

    /** lgK of the subscriber sketch: ~1.6% error, ~2-4 KB per (window, cell). */
    public static final int SKETCH_LG_K = 12;
    /** Volumes are summed exactly as DECIMAL(38,9), one unit = 1e-9 GB = one byte. */
    public static final String VOLUME_TYPE = "DECIMAL(38,9)";

    private KpiComputation() {
    }

    /** {@code hll_sketch_estimate} of {@link io.tidemark.lakehouse.pipeline.Measure#orderFreeUnion}: a group's distinct count, as every reader computes it. */
    public static String distinctOfUnion(String sketchColumn) {
        return "hll_sketch_estimate(" + io.tidemark.lakehouse.pipeline.Measure.orderFreeUnion(sketchColumn) + ")";
    }

    /** Adds {@code window_start}, {@code window_end} and {@code event_date} (UTC date of the window start) of the tumbling {@code window}. */
    public static Dataset<Row> withWindow(Dataset<Row> events, Duration window) {
        return io.tidemark.lakehouse.pipeline.KpiAggregation.windowed(events, "event_ts", new io.tidemark.lakehouse.pipeline.Pipeline.Window(window, window));
    }

    /**
     * Per (window, cell): record count, exact volume, a mergeable subscriber sketch and the
     * ingest time of the newest record. Input must already have the window columns.
     */
    public static Dataset<Row> partialKpis(Dataset<Row> windowed) {
        return partialKpis(windowed, List.of(), List.of());
    }

    /**
     * {@link #partialKpis(Dataset)} grouped by {@code extraKeys} too (they come first), with
     * {@code extraAggregates} after the KPI's own: one pass that also tells what else a caller needs
     * of the same rows.
     */
    public static Dataset<Row> partialKpis(Dataset<Row> windowed, List<Column> extraKeys, List<Column> extraAggregates) {
        List<Column> keys = new ArrayList<>(extraKeys);
        keys.addAll(List.of(col("event_date"), col("window_start"), col("window_end"), col("cell_site_id")));
        List<Column> aggregates = new ArrayList<>(List.of(
                sum(col("volume_gb").cast(VOLUME_TYPE)).cast(VOLUME_TYPE).as("total_gb"),
                expr("hll_sketch_agg(subscriber_id, " + SKETCH_LG_K + ")").as("subscriber_sketch"),
                max(col("ingest_ts")).as("updated_at")));
        aggregates.addAll(extraAggregates);
        return windowed.groupBy(keys.toArray(Column[]::new))
                .agg(count(lit(1)).as("record_count"), aggregates.toArray(Column[]::new));
    }

    /** The exact KPIs of complete data (the batch layer's truth): exact distinct subscribers. */
    public static Dataset<Row> exactKpis(Dataset<Row> rawEvents, Duration window) {
        return withWindow(rawEvents, window)
                .groupBy(col("event_date"), col("window_start"), col("window_end"), col("cell_site_id"))
                .agg(count(lit(1)).as("record_count"),
                        sum(col("volume_gb").cast(VOLUME_TYPE)).cast(VOLUME_TYPE).as("total_gb"),
                        count_distinct(col("subscriber_id")).as("subscribers"),
                        expr("hll_sketch_agg(subscriber_id, " + SKETCH_LG_K + ")").as("subscriber_sketch"),
                        max(col("ingest_ts")).as("updated_at"));
    }
}
