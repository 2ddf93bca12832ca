package io.tidemark.reconcile;

import static org.apache.spark.sql.functions.col;
import static org.apache.spark.sql.functions.expr;

import java.time.Duration;

import org.apache.spark.sql.Column;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;

import io.tidemark.lakehouse.KpiComputation;
import io.tidemark.lakehouse.Lakehouse;
import io.tidemark.lakehouse.Lakehouse.Table;

/**
 * The batch layer's answer for a day, and how far the current KPI rows are from it. Pure
 * {@code Dataset -> Dataset} functions: reading and committing live in {@link ReconcileJob}.
 */
public final class TruthKpis {

    private TruthKpis() {
    }

    /**
     * The columns of {@code kpi_5m} (sql/tables.sql) the fold gives, in table order, then {@code more}:
     * the table's own bookkeeping columns (such as the stream's {@code stream_batch_id}) are not the KPI's.
     */
    private static Column[] kpiColumnsAnd(String... more) {
        java.util.Set<String> folded = new java.util.HashSet<>(java.util.Arrays.asList(SortedKpiFold.OUTPUT.fieldNames()));
        return java.util.stream.Stream.concat(
                        java.util.Arrays.stream(Lakehouse.schema(Table.KPI_5M).fieldNames()).filter(folded::contains),
                        java.util.Arrays.stream(more))
                .map(c -> col(c)).toArray(Column[]::new);
    }

    /**
     * The exact KPI rows of complete raw data (late records included), with the columns of
     * {@code kpi_5m} the KPI defines (in table order) and {@code late_records}: final,
     * {@code source = 'batch'}, {@code updated_at} the ingest time of the newest record counted.
     *
     * <p>The same KPI as {@link KpiComputation#exactKpis} (record count, exact volume, exact distinct
     * subscribers, {@code hll_sketch_agg(subscriber_id, 12)}), computed in one pass: the day's records
     * go to their (window, cell)'s task, sorted by subscriber, and each group is folded in that order.
     * A sketch's bytes (and, past a few hundred subscribers, even its estimate) depend on the order it
     * saw its input; a grouped aggregation's order depends on how tasks and shuffle blocks happened to
     * line up. Fed each distinct subscriber once, in sorted order, the sketch is the same byte for byte
     * on every run, and the distinct count falls out of the sort. The fold is in {@link SortedKpiFold}.
     */
    public static Dataset<Row> of(Dataset<Row> rawEvents, Duration window) {
        return KpiComputation.withWindow(rawEvents, window)
                .select(col("event_date"), col("window_start"), col("window_end"), col("cell_site_id"), col("subscriber_id"),
                        col("volume_gb").cast(KpiComputation.VOLUME_TYPE).as("volume_gb"), col("ingest_ts"), col("is_late"))
                .repartition(col("window_start"), col("cell_site_id"))
                .sortWithinPartitions(col("window_start"), col("cell_site_id"), col("subscriber_id"))
                .mapPartitions(new SortedKpiFold(), Encoders.row(SortedKpiFold.OUTPUT))
                .select(kpiColumnsAnd("late_records"));
    }

    /**
     * Every (window, cell) of the day on either side, the current KPI row beside the truth, a row
     * missing on one side counting as zeros. Columns: window_start, window_end, cell_site_id,
     * stream_count, batch_count, stream_gb, batch_gb, stream_subscribers, batch_subscribers (for
     * stream rows the estimate they hold), stream_sketch, batch_sketch (null where missing),
     * in_truth, late_records, and {@code changed}: count, volume or subscribers differ.
     *
     * @param current the day's current {@code kpi_5m} rows
     * @param truth   {@link #of} for the same day
     */
    public static Dataset<Row> compare(Dataset<Row> current, Dataset<Row> truth) {
        Dataset<Row> c = current.select(col("window_start").as("c_window_start"), col("window_end").as("c_window_end"),
                col("cell_site_id").as("c_cell_site_id"), col("record_count").as("c_count"), col("total_gb").as("c_gb"),
                col("subscribers").as("c_subscribers"), col("subscriber_sketch").as("stream_sketch"));
        Dataset<Row> t = truth.select(col("window_start").as("t_window_start"), col("window_end").as("t_window_end"),
                col("cell_site_id").as("t_cell_site_id"), col("record_count").as("t_count"), col("total_gb").as("t_gb"),
                col("subscribers").as("t_subscribers"), col("subscriber_sketch").as("batch_sketch"), col("late_records"));
        return c.join(t, col("c_window_start").equalTo(col("t_window_start"))
                        .and(col("c_cell_site_id").equalTo(col("t_cell_site_id"))), "full_outer")
                .selectExpr(
                        "coalesce(t_window_start, c_window_start) AS window_start",
                        "coalesce(t_window_end, c_window_end) AS window_end",
                        "coalesce(t_cell_site_id, c_cell_site_id) AS cell_site_id",
                        "coalesce(c_count, 0L) AS stream_count",
                        "coalesce(t_count, 0L) AS batch_count",
                        "CAST(coalesce(c_gb, 0) AS " + KpiComputation.VOLUME_TYPE + ") AS stream_gb",
                        "CAST(coalesce(t_gb, 0) AS " + KpiComputation.VOLUME_TYPE + ") AS batch_gb",
                        "coalesce(c_subscribers, 0L) AS stream_subscribers",
                        "coalesce(t_subscribers, 0L) AS batch_subscribers",
                        "stream_sketch",
                        "batch_sketch",
                        "t_count IS NOT NULL AS in_truth",
                        "coalesce(late_records, 0L) AS late_records",
                        "NOT (c_count <=> t_count) OR NOT (c_gb <=> t_gb) OR NOT (c_subscribers <=> t_subscribers) AS changed");
    }

    /**
     * The {@link #compare comparison}'s changed (window, cell) rows with their drift: window_start,
     * window_end, cell_site_id, stream_count, batch_count, stream_gb, batch_gb, gb_drift
     * (batch - stream), gb_drift_rel ((batch - stream) / batch), stream_subscribers,
     * batch_subscribers, subscribers_drift, subscribers_drift_rel, late_records.
     */
    public static Dataset<Row> windowDrift(Dataset<Row> comparison) {
        return comparison.filter(col("changed"))
                // DECIMAL(38,9) - DECIMAL(38,9) would be rounded to 8 decimals; (37,9) - (37,9) fits in (38,9).
                .withColumn("gb_drift", expr("CAST(CAST(batch_gb AS DECIMAL(37,9)) - CAST(stream_gb AS DECIMAL(37,9)) AS "
                        + KpiComputation.VOLUME_TYPE + ")"))
                .withColumn("gb_drift_rel", expr("CASE WHEN batch_gb = 0 THEN NULL ELSE CAST(gb_drift AS DOUBLE) / CAST(batch_gb AS DOUBLE) END"))
                .withColumn("subscribers_drift", expr("batch_subscribers - stream_subscribers"))
                .withColumn("subscribers_drift_rel", expr("CASE WHEN batch_subscribers = 0 THEN NULL "
                        + "ELSE CAST(subscribers_drift AS DOUBLE) / CAST(batch_subscribers AS DOUBLE) END"))
                .selectExpr("window_start", "window_end", "cell_site_id", "stream_count", "batch_count", "stream_gb", "batch_gb",
                        "gb_drift", "gb_drift_rel", "stream_subscribers", "batch_subscribers", "subscribers_drift",
                        "subscribers_drift_rel", "late_records");
    }
}
