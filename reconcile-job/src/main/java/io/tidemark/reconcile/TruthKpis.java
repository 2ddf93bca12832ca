package io.tidemark.reconcile;

import static org.apache.spark.sql.functions.col;
import static org.apache.spark.sql.functions.count;
import static org.apache.spark.sql.functions.expr;
import static org.apache.spark.sql.functions.lit;

import java.time.Duration;

import org.apache.spark.sql.Column;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;

import io.tidemark.lakehouse.KpiComputation;

/**
 * The batch layer's answer for a day, and how far the current KPI rows are from it. Pure
 * {@code Dataset -> Dataset} functions: reading and committing live in {@link ReconcileJob}.
 */
public final class TruthKpis {

    /** The columns of {@code kpi_5m} the KPI defines, in table order (the table may hold others, such as the stream's bookkeeping). */
    static final String[] KPI_COLUMNS = {"window_start", "window_end", "cell_site_id", "record_count", "total_gb", "subscribers",
            "subscriber_sketch", "is_final", "source", "updated_at", "event_date"};

    private TruthKpis() {
    }

    /** {@link #KPI_COLUMNS} as columns, for a select in table order. */
    static Column[] kpiColumns() {
        return java.util.Arrays.stream(KPI_COLUMNS).map(c -> col(c)).toArray(Column[]::new);
    }

    /**
     * The exact KPI rows of complete raw data (late records included), with the columns of
     * {@code kpi_5m} the KPI defines ({@link #KPI_COLUMNS}): the shared KPI
     * definition {@link KpiComputation#exactKpis}, final, {@code source = 'batch'}, {@code updated_at}
     * the ingest time of the newest record counted.
     *
     * <p>Only the sketch is built differently, from the same {@code hll_sketch_agg(subscriber_id, 12)}:
     * as a window aggregate over the distinct subscribers in sorted order, in one pass with no merge
     * of partial sketches. A sketch's bytes (and, past a few hundred subscribers, even its estimate)
     * depend on the order it saw its input, and a grouped aggregation's order depends on how tasks
     * and shuffle blocks happened to line up; the sorted single pass makes re-running reconcile give
     * the same table content, byte for byte.
     */
    public static Dataset<Row> of(Dataset<Row> rawEvents, Duration window) {
        // The exact distinct count is the number of distinct (window, cell, subscriber) rows the
        // sketches are built from: counted there, it spares the grouped count(DISTINCT), which Spark
        // plans as a second aggregation over every record (bench/RESULTS.md, reconcile). The unused
        // aggregates of exactKpis are pruned by the optimizer.
        Dataset<Row> exact = KpiComputation.exactKpis(rawEvents, window).drop("subscriber_sketch", "subscribers");
        Dataset<Row> sketches = orderedSketches(rawEvents, window);
        return exact.join(sketches, exact.col("window_start").equalTo(sketches.col("sketch_window_start"))
                        .and(exact.col("cell_site_id").equalTo(sketches.col("sketch_cell_site_id"))))
                .withColumn("subscribers", col("sketch_subscribers"))
                .withColumn("is_final", lit(true))
                .withColumn("source", lit("batch"))
                .select(kpiColumns());
    }

    /**
     * One sketch per (window, cell), each built from its distinct subscribers in sorted order, and
     * the exact number of those subscribers ({@code sketch_subscribers}).
     */
    static Dataset<Row> orderedSketches(Dataset<Row> rawEvents, Duration window) {
        String over = " OVER (PARTITION BY window_start, cell_site_id ORDER BY subscriber_id";
        String whole = " ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING)";
        return KpiComputation.withWindow(rawEvents, window)
                .select(col("window_start"), col("cell_site_id"), col("subscriber_id"))
                .distinct()
                .withColumn("subscriber_sketch", expr("hll_sketch_agg(subscriber_id, " + KpiComputation.SKETCH_LG_K + ")" + over + whole))
                .withColumn("subscriber_count", expr("count(1)" + over + whole))
                .withColumn("subscriber_rank", expr("row_number()" + over + ")"))
                .filter(col("subscriber_rank").equalTo(1))
                .select(col("window_start").as("sketch_window_start"), col("cell_site_id").as("sketch_cell_site_id"),
                        col("subscriber_sketch"), col("subscriber_count").as("sketch_subscribers"));
    }

    /** Late records per (window, cell): the records the stream's KPIs left out and the truth folds in. */
    public static Dataset<Row> lateByWindow(Dataset<Row> rawEvents, Duration window) {
        return KpiComputation.withWindow(rawEvents.filter(col("is_late")), window)
                .groupBy(col("window_start").as("late_window_start"), col("cell_site_id").as("late_cell_site_id"))
                .agg(count(lit(1)).as("late_records"));
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
     * @param late    {@link #lateByWindow} for the same day
     */
    public static Dataset<Row> compare(Dataset<Row> current, Dataset<Row> truth, Dataset<Row> late) {
        Dataset<Row> c = current.select(col("window_start").as("c_window_start"), col("window_end").as("c_window_end"),
                col("cell_site_id").as("c_cell_site_id"), col("record_count").as("c_count"), col("total_gb").as("c_gb"),
                col("subscribers").as("c_subscribers"), col("subscriber_sketch").as("stream_sketch"));
        Dataset<Row> t = truth.select(col("window_start").as("t_window_start"), col("window_end").as("t_window_end"),
                col("cell_site_id").as("t_cell_site_id"), col("record_count").as("t_count"), col("total_gb").as("t_gb"),
                col("subscribers").as("t_subscribers"), col("subscriber_sketch").as("batch_sketch"));
        return c.join(t, col("c_window_start").equalTo(col("t_window_start"))
                        .and(col("c_cell_site_id").equalTo(col("t_cell_site_id"))), "full_outer")
                .join(late, expr("coalesce(t_window_start, c_window_start) = late_window_start "
                        + "AND coalesce(t_cell_site_id, c_cell_site_id) = late_cell_site_id"), "left_outer")
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
