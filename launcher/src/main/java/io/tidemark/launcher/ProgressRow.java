package io.tidemark.launcher;

import java.sql.Timestamp;

import org.apache.spark.sql.Row;

/** A stream_progress row, read by column name (the stream's rows and the table's carry its schema). */
record ProgressRow(Row row) {

    private <T> T get(String column) {
        return row.getAs(column);
    }

    long batchId() { return get("batch_id"); }
    String queryId() { return get("query_id"); }
    Timestamp watermark() { return get("watermark"); }
    Timestamp nextWatermark() { return get("next_watermark"); }
    Timestamp maxEventTsSeen() { return get("max_event_ts_seen"); }
    long recordsIn() { return get("records_in"); }
    long onTime() { return get("on_time"); }
    long late() { return get("late"); }
    long invalid() { return get("invalid"); }
    Timestamp startedAt() { return get("started_at"); }
    Timestamp finishedAt() { return get("finished_at"); }
    long durationMs() { return get("duration_ms"); }
    Long freshnessMs() { return get("freshness_ms"); }

    /** Each Kafka partition's event clock after this batch; empty for a row written before clocks were recorded. */
    java.util.Map<Integer, io.tidemark.late.WatermarkLedger.PartitionClock> partitionClocks() {
        java.util.Map<Integer, io.tidemark.late.WatermarkLedger.PartitionClock> out = new java.util.TreeMap<>();
        if (!java.util.Arrays.asList(row.schema().fieldNames()).contains("partition_clocks") || row.isNullAt(row.fieldIndex("partition_clocks"))) {
            return out;
        }
        for (Row c : row.<Row>getList(row.fieldIndex("partition_clocks"))) {
            out.put(c.getInt(0), new io.tidemark.late.WatermarkLedger.PartitionClock(c.getTimestamp(1).getTime(), c.getTimestamp(2).getTime()));
        }
        return out;
    }
}
