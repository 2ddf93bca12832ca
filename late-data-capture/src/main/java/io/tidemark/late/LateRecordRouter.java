package io.tidemark.late;

import static org.apache.spark.sql.functions.col;
import static org.apache.spark.sql.functions.expr;
import static org.apache.spark.sql.functions.lit;

import java.time.Duration;

import org.apache.spark.sql.Column;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;

import io.tidemark.lakehouse.Watermark;

/**
 * Splits valid records into on-time and late with the rule of {@link WatermarkLedger}: a record is
 * late when its window ended at or before the watermark in force for its batch ({@link Watermark#closes}). Where Spark drops
 * such a record silently, the router turns it into a {@code late_events} row.
 */
public final class LateRecordRouter {
    private LateRecordRouter() {
    }

    /** Adds the window columns of the tumbling {@code window} and {@code is_late}. Input: valid records with the event time column {@code eventTime}. */
    public static Dataset<Row> markLate(Dataset<Row> valid, String eventTime, Duration window, long watermarkMs) {
        return io.tidemark.lakehouse.pipeline.KpiAggregation.windowed(valid, eventTime, new io.tidemark.lakehouse.pipeline.Pipeline.Window(window, window))
                .withColumn("is_late", Watermark.ofMillis(watermarkMs).closes(col("window_end")));
    }

    /** The {@code late_events} rows of marked records of batch {@code batchId}: the event's columns ({@code eventColumns}), then where it belonged and why it is late. */
    public static Dataset<Row> lateEvents(Dataset<Row> marked, java.util.List<String> eventColumns, long watermarkMs, long batchId) {
        java.util.List<Column> columns = new java.util.ArrayList<>();
        eventColumns.forEach(c -> columns.add(col(c)));
        columns.addAll(java.util.List.of(
                col("window_start"), col("window_end"),
                Watermark.ofMillis(watermarkMs).literal().as("watermark"),
                lit(watermarkMs).minus(expr("unix_millis(window_end)")).as("late_by_ms"),
                lit(batchId).as("batch_id"),
                col("kafka_topic"), col("kafka_partition"), col("kafka_offset"),
                col("ingest_ts").as("arrival_ts"),
                col("event_date")));
        return marked.filter(col("is_late")).select(columns.toArray(Column[]::new));
    }
}
