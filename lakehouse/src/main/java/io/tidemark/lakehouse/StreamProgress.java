package io.tidemark.lakehouse;

import static org.apache.spark.sql.functions.col;

import java.sql.Date;
import java.sql.Timestamp;
import java.time.Instant;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.SortedMap;
import java.util.TreeMap;

import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.SparkSession;

import scala.jdk.javaapi.CollectionConverters;

import io.tidemark.lakehouse.Lakehouse.Table;

/**
 * One {@code stream_progress} row: what a committed micro-batch did and the state it leaves for the
 * next one (the watermark in force and the next, the newest event times, each Kafka partition's
 * clock, the closed-day decision). The stream writes it ({@link #toRow()}) as the last commit of a
 * batch; every reader reads it here: the stream when it resumes, {@link ClosedDays}, {@code status},
 * the demo, the metrics endpoint.
 *
 * <p>A row written by an earlier version of Tidemark may lack the newest columns: read, they are null
 * ({@code batch_ts}, {@code last_closed_day}) or empty (the partition clocks).
 *
 * @param maxEventTs      the newest valid event time in this batch; null when it had none
 * @param maxEventTsSeen  the newest valid event time in this and every earlier batch; null before the first
 * @param freshnessMs     finished_at minus maxEventTsSeen; null while no event was seen
 * @param lastClosedDay   the stream's decision: every UTC day up to this one is closed; null while none is (or not recorded)
 * @param batchTs         Spark's timestamp of the batch (from its offset log); null in rows of earlier versions
 * @param partitionClocks per Kafka partition that has had a valid record
 */
public record StreamProgress(long batchId, String queryId, Instant watermark, Instant nextWatermark, Instant maxEventTs,
                             Instant maxEventTsSeen, long recordsIn, long onTime, long late, long invalid, long kpiRows,
                             Instant startedAt, Instant finishedAt, long durationMs, long classifyMs, long writeMs, Long freshnessMs,
                             LocalDate lastClosedDay, Instant batchTs, SortedMap<Integer, PartitionClock> partitionClocks) {

    public StreamProgress {
        partitionClocks = Collections.unmodifiableSortedMap(new TreeMap<>(partitionClocks));
    }

    /** Reads a row by column name (the stream's rows and the table's carry its schema). */
    public static StreamProgress of(Row row) {
        SortedMap<Integer, PartitionClock> clocks = new TreeMap<>();
        if (has(row, "partition_clocks")) {
            for (Row c : row.<Row>getList(row.fieldIndex("partition_clocks"))) {
                clocks.put(c.getInt(0), new PartitionClock(c.getTimestamp(1).getTime(), c.getTimestamp(2).getTime()));
            }
        }
        return new StreamProgress(row.getAs("batch_id"), row.getAs("query_id"), instant(row, "watermark"), instant(row, "next_watermark"),
                instant(row, "max_event_ts"), instant(row, "max_event_ts_seen"), row.getAs("records_in"), row.getAs("on_time"),
                row.getAs("late"), row.getAs("invalid"), row.getAs("kpi_rows"), instant(row, "started_at"), instant(row, "finished_at"),
                row.getAs("duration_ms"), row.getAs("classify_ms"), row.getAs("write_ms"), has(row, "freshness_ms") ? row.getAs("freshness_ms") : null,
                has(row, ClosedDays.COLUMN) ? row.<Date>getAs(ClosedDays.COLUMN).toLocalDate() : null, instant(row, "batch_ts"), clocks);
    }

    /** The row as the stream commits it. */
    public Row toRow() {
        Map<String, Object> v = new HashMap<>();
        v.put("batch_id", batchId);
        v.put("query_id", queryId);
        v.put("watermark", timestamp(watermark));
        v.put("next_watermark", timestamp(nextWatermark));
        v.put("max_event_ts", timestamp(maxEventTs));
        v.put("max_event_ts_seen", timestamp(maxEventTsSeen));
        v.put("records_in", recordsIn);
        v.put("on_time", onTime);
        v.put("late", late);
        v.put("invalid", invalid);
        v.put("kpi_rows", kpiRows);
        v.put("started_at", timestamp(startedAt));
        v.put("finished_at", timestamp(finishedAt));
        v.put("duration_ms", durationMs);
        v.put("classify_ms", classifyMs);
        v.put("write_ms", writeMs);
        v.put("freshness_ms", freshnessMs);
        v.put(ClosedDays.COLUMN, lastClosedDay == null ? null : Date.valueOf(lastClosedDay));
        v.put("batch_ts", timestamp(batchTs));
        List<Row> clocks = new ArrayList<>();
        partitionClocks.forEach((p, c) -> clocks.add(RowFactory.create(p, new Timestamp(c.maxEventMs()), new Timestamp(c.lastRecordBatchTimeMs()))));
        v.put("partition_clocks", CollectionConverters.asScala(clocks).toSeq());
        return Lakehouse.row(Table.STREAM_PROGRESS, v);
    }

    /** The closed-day decision this row records. */
    public ClosedDays closedDays() {
        return ClosedDays.recorded(nextWatermark, lastClosedDay);
    }

    /** The row of the newest batch: the highest batch id, the newest finished_at on a tie; empty when the table has none. */
    public static Optional<StreamProgress> last(SparkSession spark, Lakehouse lakehouse) {
        return first(table(spark, lakehouse).orderBy(col("batch_id").desc(), col("finished_at").desc()));
    }

    /** The row of batch {@code batchId}, if the table holds one. */
    public static Optional<StreamProgress> ofBatch(SparkSession spark, Lakehouse lakehouse, long batchId) {
        return first(table(spark, lakehouse).where(col("batch_id").equalTo(batchId)));
    }

    /** The {@code n} rows that finished last, newest first. */
    public static List<StreamProgress> newest(SparkSession spark, Lakehouse lakehouse, int n) {
        return table(spark, lakehouse).orderBy(col("finished_at").desc(), col("batch_id").desc()).limit(n).collectAsList().stream()
                .map(StreamProgress::of).toList();
    }

    private static Dataset<Row> table(SparkSession spark, Lakehouse lakehouse) {
        return lakehouse.read(spark, Table.STREAM_PROGRESS);
    }

    private static Optional<StreamProgress> first(Dataset<Row> rows) {
        List<Row> r = rows.limit(1).collectAsList();
        return r.isEmpty() ? Optional.empty() : Optional.of(of(r.get(0)));
    }

    /** Whether the row has {@code column} and it is not null. */
    private static boolean has(Row row, String column) {
        return Arrays.asList(row.schema().fieldNames()).contains(column) && !row.isNullAt(row.fieldIndex(column));
    }

    private static Instant instant(Row row, String column) {
        return has(row, column) ? row.<Timestamp>getAs(column).toInstant() : null;
    }

    private static Timestamp timestamp(Instant i) {
        return i == null ? null : Timestamp.from(i);
    }
}
