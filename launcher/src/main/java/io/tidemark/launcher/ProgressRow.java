package io.tidemark.launcher;

import java.sql.Timestamp;
import java.util.List;

import org.apache.spark.sql.Row;

/**
 * A stream_progress row by position: the rows the stream hands its listener carry no schema, so
 * fields are read in the table's column order (sql/tables.sql), the order {@link #COLUMNS} selects.
 */
record ProgressRow(Row row) {

    static final List<String> COLUMNS = List.of("batch_id", "query_id", "watermark", "next_watermark", "max_event_ts",
            "max_event_ts_seen", "records_in", "on_time", "late", "invalid", "kpi_rows", "started_at", "finished_at",
            "duration_ms", "classify_ms", "write_ms", "freshness_ms");

    long batchId() { return row.getLong(0); }
    String queryId() { return row.getString(1); }
    Timestamp watermark() { return (Timestamp) row.get(2); }
    Timestamp nextWatermark() { return (Timestamp) row.get(3); }
    Timestamp maxEventTsSeen() { return (Timestamp) row.get(5); }
    long recordsIn() { return row.getLong(6); }
    long onTime() { return row.getLong(7); }
    long late() { return row.getLong(8); }
    long invalid() { return row.getLong(9); }
    Timestamp startedAt() { return (Timestamp) row.get(11); }
    Timestamp finishedAt() { return (Timestamp) row.get(12); }
    long durationMs() { return row.getLong(13); }
    Long freshnessMs() { return row.isNullAt(16) ? null : row.getLong(16); }
}
