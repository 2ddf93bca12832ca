package io.tidemark.late;

import static org.apache.spark.sql.functions.col;
import static org.apache.spark.sql.functions.expr;
import static org.apache.spark.sql.functions.lit;

import java.util.ArrayList;
import java.util.List;

import org.apache.spark.sql.Column;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;

import io.tidemark.pipeline.BatchConstant;
import io.tidemark.pipeline.Watermark;
import io.tidemark.pipeline.KpiAggregation;
import io.tidemark.pipeline.Pipeline;

/**
 * The late rule, per KPI table and window ({@link WatermarkLedger} gives the watermark): a record's
 * contribution to a window is late when the window ended at or before the watermark in force for its
 * batch ({@link Watermark#closes}). Where Spark drops such a contribution silently, the router turns it
 * into a {@code late_events} row naming the KPI table and the window; its contributions to windows
 * still open count as usual ({@link KpiAggregation#partials} takes only those). A record counts for a
 * table only when it passes the table's WHERE.
 */
public final class LateRecordRouter {
    private LateRecordRouter() {
    }

    /**
     * Adds {@code is_late}: whether any of the record's contributions is late. A table's earliest
     * window for a record (the first to close) ends one slide after the record's time rounded down to
     * the slide, for tumbling (slide = size) and hopping windows alike. Input: valid records with the
     * pipeline's event columns; {@code is_late} is a column raw_events stores, which no event column may take.
     */
    public static Dataset<Row> markLate(Dataset<Row> valid, Pipeline pipeline, long watermarkMs) {
        Watermark watermark = Watermark.ofMillis(watermarkMs);
        String ts = "unix_micros(" + Pipeline.quote(pipeline.events().eventTime()) + ")";
        Column late = lit(false);
        for (Pipeline.KpiTable t : pipeline.tables()) {
            long slideUs = t.window().slide().toNanos() / 1000;
            Column firstEnd = expr("timestamp_micros(" + ts + " - pmod(" + ts + ", " + slideUs + "L) + " + slideUs + "L)");
            Column lateHere = watermark.closes(firstEnd);
            if (t.where() != null) {
                lateHere = expr("coalesce(" + t.where() + ", false)").and(lateHere);
            }
            late = late.or(lateHere);
        }
        return valid.withColumn("is_late", late);
    }

    /**
     * The {@code late_events} rows of the marked records of batch {@code batchId}: one per late
     * contribution, that is per (record, KPI table, closed window): the event's columns, where it
     * belonged (window and, last, the KPI table), the watermark and how late, and where it came from.
     */
    public static Dataset<Row> lateEvents(Dataset<Row> marked, Pipeline pipeline, long watermarkMs, long batchId) {
        Watermark watermark = Watermark.ofMillis(watermarkMs);
        Dataset<Row> late = marked.filter(col("is_late"));
        Dataset<Row> out = null;
        for (Pipeline.KpiTable t : pipeline.tables()) {
            Dataset<Row> in = t.where() == null ? late : late.filter(expr(t.where()));
            List<Column> columns = new ArrayList<>();
            pipeline.events().columns().forEach(c -> columns.add(col(c.name())));
            columns.addAll(List.of(
                    col("window_start"), col("window_end"),
                    watermark.column().as("watermark"),
                    BatchConstant.of(watermarkMs).minus(expr("unix_millis(window_end)")).as("late_by_ms"),
                    BatchConstant.of(batchId).as("batch_id"),
                    col("kafka_topic"), col("kafka_partition"), col("kafka_offset"),
                    col("ingest_ts").as("arrival_ts"),
                    col("event_date"),
                    lit(t.name()).as("kpi")));
            Dataset<Row> rows = KpiAggregation.windowed(in, pipeline.events().eventTime(), t.window())
                    .filter(watermark.closes(col("window_end"))).select(columns.toArray(Column[]::new));
            out = out == null ? rows : out.union(rows);
        }
        return out;
    }
}
