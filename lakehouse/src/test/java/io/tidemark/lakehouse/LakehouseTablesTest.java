package io.tidemark.lakehouse;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Path;
import java.sql.Date;
import java.sql.Timestamp;
import java.time.Instant;
import java.time.LocalDate;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.types.DataTypes;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import io.tidemark.lakehouse.Lakehouse.Table;
import io.tidemark.pipeline.Watermark;

/**
 * The tables as sql/tables.sql declares them, on real Delta tables in a temporary directory: the
 * schema Java writes with, the upgrade of a table written before a column existed, and the
 * stream's closed-day decision read back from stream_progress.
 */
class LakehouseTablesTest {
    private static SparkSession spark;

    @BeforeAll
    static void start() {
        spark = SparkSessions.create(TidemarkConfig.load(null, Map.of()).set("spark.master", "local[1]").set("spark.shuffle-partitions", "1")
                .build(), "lakehouse-tables-test");
    }

    @AfterAll
    static void stop() {
        spark.stop();
    }

    @Test
    void writersUseTheSchemaOfTablesSqlAndNoOther() {
        assertThat(Lakehouse.ownSchema(Table.STREAM_GAPS).fieldNames()).containsExactly("batch_id", "topic", "partition", "expected_offset",
                "resumed_offset", "lost_records", "kind", "detected_at");
        assertThat(Lakehouse.ownSchema(Table.STREAM_PROGRESS).apply("last_closed_day").dataType()).isEqualTo(DataTypes.DateType);
        assertThat(Lakehouse.ownSchema(Table.STREAM_PROGRESS).apply("batch_id").nullable()).isFalse();
        assertThat(new Lakehouse("").schema(Table.kpi("kpi_5m")).apply("total_gb").dataType().sql()).isEqualTo("DECIMAL(38,9)");
        Map<String, Object> v = new HashMap<>();
        assertThatThrownBy(() -> Lakehouse.row(Table.STREAM_GAPS, v)).hasMessage("stream_gaps row without column batch_id");
        for (String c : Lakehouse.ownSchema(Table.STREAM_GAPS).fieldNames()) {
            v.put(c, null);
        }
        v.put("batch_id", 3L);
        assertThat(Lakehouse.row(Table.STREAM_GAPS, v).<Long>getAs("batch_id")).isEqualTo(3L);
        v.put("lost", 1L);
        assertThatThrownBy(() -> Lakehouse.row(Table.STREAM_GAPS, v)).hasMessage("stream_gaps has no column [lost]");
    }

    @Test
    void theClosedDaysAreTheDecisionOfTheBatchWithTheHighestIdAndATableFromBeforeTheDecisionColumnIsUpgraded(@TempDir Path dir) {
        Lakehouse lakehouse = new Lakehouse(dir.toString());
        // A stream_progress table as an earlier version wrote it: without last_closed_day.
        spark.sql("CREATE TABLE delta.`" + lakehouse.path(Table.STREAM_PROGRESS) + "` (batch_id BIGINT NOT NULL, query_id STRING NOT NULL, "
                + "watermark TIMESTAMP NOT NULL, next_watermark TIMESTAMP NOT NULL, max_event_ts TIMESTAMP, max_event_ts_seen TIMESTAMP, "
                + "records_in BIGINT NOT NULL, on_time BIGINT NOT NULL, late BIGINT NOT NULL, invalid BIGINT NOT NULL, kpi_rows BIGINT NOT NULL, "
                + "started_at TIMESTAMP NOT NULL, finished_at TIMESTAMP NOT NULL, duration_ms BIGINT NOT NULL, classify_ms BIGINT NOT NULL, "
                + "write_ms BIGINT NOT NULL, freshness_ms BIGINT) USING delta");
        assertThat(ClosedDays.load(spark, lakehouse).lastClosed()).isEmpty();
        // The first batches run with the epoch: nothing closed, not 1969-12-31.
        spark.sql("INSERT INTO delta.`" + lakehouse.path(Table.STREAM_PROGRESS) + "` VALUES (0, 'q', TIMESTAMP'1970-01-01 00:00:00', "
                + "TIMESTAMP'1970-01-01 00:00:00', NULL, NULL, 0, 0, 0, 0, 0, now(), now(), 0, 0, 0, NULL)");
        assertThat(ClosedDays.load(spark, lakehouse).lastClosed()).isEmpty();
        // An old row without the decision: readers do not decide again, nothing is closed until the stream records it.
        spark.sql("INSERT INTO delta.`" + lakehouse.path(Table.STREAM_PROGRESS) + "` VALUES (1, 'q', TIMESTAMP'1970-01-01 00:00:00', "
                + "TIMESTAMP'2026-11-28 00:00:00', NULL, NULL, 0, 0, 0, 0, 0, TIMESTAMP'2026-12-01 10:00:00', TIMESTAMP'2026-12-01 10:00:00', 0, 0, 0, NULL)");
        assertThat(ClosedDays.load(spark, lakehouse).lastClosed()).isEmpty();
        assertThat(ClosedDays.load(spark, lakehouse).whyOpen(LocalDate.parse("2026-11-27")))
                .hasValueSatisfying(why -> assertThat(why).contains("has not recorded which days are closed yet"));

        lakehouse.createAndRegister(spark);
        assertThat(spark.read().format("delta").load(lakehouse.path(Table.STREAM_PROGRESS)).columns()).contains(ClosedDays.COLUMN);
        // The stream sets the declared Delta properties on a table created before they were declared, once.
        assertThat(properties(lakehouse, Table.STREAM_PROGRESS)).doesNotContainKey("delta.logRetentionDuration");
        lakehouse.applyDeclaredProperties(spark);
        assertThat(properties(lakehouse, Table.STREAM_PROGRESS)).containsAllEntriesOf(new Lakehouse("").declaredProperties(Table.STREAM_PROGRESS));
        long version = io.delta.tables.DeltaTable.forPath(spark, lakehouse.path(Table.STREAM_PROGRESS)).history(1).first().getLong(0);
        lakehouse.applyDeclaredProperties(spark);
        assertThat(io.delta.tables.DeltaTable.forPath(spark, lakehouse.path(Table.STREAM_PROGRESS)).history(1).first().getLong(0))
                .as("nothing to change: no commit").isEqualTo(version);
        assertThat(properties(lakehouse, Table.RAW_EVENTS)).as("created with them").containsAllEntriesOf(new Lakehouse("").declaredProperties(Table.RAW_EVENTS));
        assertThat(ClosedDays.load(spark, lakehouse).lastClosed()).isEmpty();

        // Batch 2 decided 2026-11-28 but finished "before" batch 1 by the wall clock (a clock step):
        // the decision is the highest batch id's, not the newest finished_at's.
        append(lakehouse, 2, Instant.parse("2026-11-29T06:00:00Z"), Instant.parse("2026-12-01T09:00:00Z"));
        ClosedDays closed = ClosedDays.load(spark, lakehouse);
        assertThat(closed.lastClosed()).contains(LocalDate.parse("2026-11-28"));
        assertThat(closed.watermark()).isEqualTo(Watermark.of(Instant.parse("2026-11-29T06:00:00Z")));

        // Readers take the recorded decision as it is; they do not decide again from the watermark.
        append(lakehouse, 3, Instant.parse("2026-11-30T06:00:00Z"), Instant.parse("2026-12-01T11:00:00Z"), LocalDate.parse("2026-11-28"));
        assertThat(ClosedDays.load(spark, lakehouse).lastClosed()).contains(LocalDate.parse("2026-11-28"));
    }

    /**
     * Every kind of update on a real KPI table: each is one commit (its operation in the table's history) and changes
     * exactly its bounds: a replacement of windows leaves the day's other windows, a replacement of a day its other
     * days, a delete the days it does not name; a compaction leaves the rows as they were.
     */
    @Test
    void everyUpdateIsOneCommitAndChangesExactlyItsBounds(@TempDir Path dir) {
        Lakehouse lakehouse = new Lakehouse(dir.toString());
        lakehouse.createAndRegister(spark);
        Table kpi = Table.kpi("kpi_5m");
        LocalDate d1 = LocalDate.parse("2026-12-01");
        LocalDate d2 = LocalDate.parse("2026-12-02");
        LocalDate d3 = LocalDate.parse("2026-12-03");
        for (LocalDate d : List.of(d1, d2, d3)) { // three windows a day, one file each
            for (int w = 0; w < 3; w++) {
                lakehouse.commit(spark, new TableUpdate.Append(kpi, kpiRows(lakehouse, kpi, d, List.of(w), 1), "append " + d + " " + w));
            }
        }
        assertThat(records(lakehouse, kpi)).isEqualTo("2026-12-01 0:1 1:1 2:1 | 2026-12-02 0:1 1:1 2:1 | 2026-12-03 0:1 1:1 2:1");

        Instant w1 = d1.atStartOfDay(java.time.ZoneOffset.UTC).toInstant().plusSeconds(300);
        TableUpdate.Replace windows = new TableUpdate.Replace(kpi, kpiRows(lakehouse, kpi, d1, List.of(1), 7), List.of(d1), List.of(w1), null);
        assertThat(windows.predicate()).isEqualTo("event_date IN (DATE'2026-12-01') AND window_start IN (TIMESTAMP'2026-12-01 00:05:00.000000')");
        lakehouse.commit(spark, windows);
        assertThat(records(lakehouse, kpi)).isEqualTo("2026-12-01 0:1 1:7 2:1 | 2026-12-02 0:1 1:1 2:1 | 2026-12-03 0:1 1:1 2:1");

        lakehouse.commit(spark, new TableUpdate.Replace(kpi, kpiRows(lakehouse, kpi, d2, List.of(0, 2), 9), List.of(d2), List.of(), "day"));
        assertThat(records(lakehouse, kpi)).isEqualTo("2026-12-01 0:1 1:7 2:1 | 2026-12-02 0:9 2:9 | 2026-12-03 0:1 1:1 2:1");
        // Delta refuses a row outside the bounds
        assertThatThrownBy(() -> lakehouse.commit(spark, new TableUpdate.Replace(kpi, kpiRows(lakehouse, kpi, d3, List.of(0), 5), List.of(d2),
                List.of(), null))).hasMessageContaining("DELTA_REPLACE_WHERE_MISMATCH");

        long files = spark.read().format("delta").load(lakehouse.path(kpi)).where("event_date = DATE'2026-12-03'")
                .select("_metadata.file_path").distinct().count();
        assertThat(files).isEqualTo(3);
        lakehouse.commit(spark, new TableUpdate.Compact(kpi, "event_date", List.of(d3)));
        assertThat(spark.read().format("delta").load(lakehouse.path(kpi)).where("event_date = DATE'2026-12-03'")
                .select("_metadata.file_path").distinct().count()).isEqualTo(1);
        assertThat(records(lakehouse, kpi)).isEqualTo("2026-12-01 0:1 1:7 2:1 | 2026-12-02 0:9 2:9 | 2026-12-03 0:1 1:1 2:1");

        lakehouse.commit(spark, new TableUpdate.DeleteDays(kpi, "event_date", List.of(d1, d3)));
        assertThat(records(lakehouse, kpi)).isEqualTo("2026-12-02 0:9 2:9");

        List<String> operations = io.delta.tables.DeltaTable.forPath(spark, lakehouse.path(kpi)).history().orderBy("version")
                .select("operation").collectAsList().stream().map(r -> r.getString(0)).toList();
        assertThat(operations.subList(operations.size() - 4, operations.size())).containsExactly("WRITE", "WRITE", "OPTIMIZE", "DELETE");
        assertThat(operations.stream().filter(o -> o.equals("WRITE")).count()).as("9 appends and 2 replacements").isEqualTo(11);
    }

    /** Rows of the network pipeline's kpi_5m for windows {@code windows} (0 = 00:00, 1 = 00:05, ...) of day {@code d}, each with {@code records}. */
    private static org.apache.spark.sql.Dataset<Row> kpiRows(Lakehouse lakehouse, Table kpi, LocalDate d, List<Integer> windows, long records) {
        long day = d.atStartOfDay(java.time.ZoneOffset.UTC).toEpochSecond();
        return spark.sql("SELECT timestamp_seconds(s) AS window_start, timestamp_seconds(s + 300) AS window_end, 'c1' AS cell_site_id, "
                + records + "L AS record_count, CAST(1 AS DECIMAL(38,9)) AS total_gb, 1L AS subscribers, X'01' AS subscriber_sketch, "
                + "false AS is_final, 'stream' AS source, timestamp_seconds(s) AS updated_at, 0L AS stream_batch_id, "
                + "to_date(timestamp_seconds(s)) AS event_date FROM VALUES " + String.join(", ", windows.stream().map(w -> "(" + (day + w * 300L) + ")")
                .toList()) + " AS t(s)").selectExpr(lakehouse.schema(kpi).fieldNames());
    }

    /** "day window:records ... | day ...": the table's rows, in order. */
    private static String records(Lakehouse lakehouse, Table kpi) {
        List<Row> rows = spark.read().format("delta").load(lakehouse.path(kpi)).orderBy("event_date", "window_start")
                .selectExpr("CAST(event_date AS STRING)", "CAST((unix_seconds(window_start) % 86400) / 300 AS INT)", "record_count")
                .collectAsList();
        StringBuilder sb = new StringBuilder();
        String day = null;
        for (Row r : rows) {
            if (!r.getString(0).equals(day)) {
                sb.append(day == null ? "" : " | ").append(r.getString(0));
                day = r.getString(0);
            }
            sb.append(' ').append(r.getInt(1)).append(':').append(r.getLong(2));
        }
        return sb.toString();
    }

    private static Map<String, String> properties(Lakehouse lakehouse, Table table) {
        org.apache.spark.sql.Row detail = spark.sql("DESCRIBE DETAIL " + lakehouse.ref(table)).first();
        return detail.getJavaMap(detail.fieldIndex("properties"));
    }

    @Test
    void theTablesTheStreamWritesEveryBatchDeclareTheSameLogProperties() {
        Map<String, String> expected = Map.of("delta.checkpointInterval", "10", "delta.logRetentionDuration", "interval 7 days",
                "delta.deletedFileRetentionDuration", "interval 7 days");
        for (Table t : java.util.List.of(Table.RAW_EVENTS, Table.kpi("kpi_5m"), Table.LATE_EVENTS, Table.DEAD_LETTER, Table.STREAM_PROGRESS)) {
            assertThat(new Lakehouse("").declaredProperties(t)).as(t.tableName()).containsAllEntriesOf(expected);
        }
        assertThat(new Lakehouse("").declaredProperties(Table.RAW_EVENTS)).containsEntry("delta.dataSkippingStatsColumns",
                "event_ts,cell_site_id,kafka_partition,kafka_offset,batch_id");
        assertThat(new Lakehouse("").declaredProperties(Table.STREAM_GAPS)).isEmpty();
    }

    private static void append(Lakehouse lakehouse, long batchId, Instant nextWatermark, Instant finished) {
        append(lakehouse, batchId, nextWatermark, finished, ClosedDays.decidedBy(Watermark.of(nextWatermark)).lastClosed().orElse(null));
    }

    private static void append(Lakehouse lakehouse, long batchId, Instant nextWatermark, Instant finished, LocalDate lastClosed) {
        Map<String, Object> v = new HashMap<>();
        for (String c : Lakehouse.ownSchema(Table.STREAM_PROGRESS).fieldNames()) {
            v.put(c, null);
        }
        Timestamp f = Timestamp.from(finished);
        v.putAll(Map.of("batch_id", batchId, "query_id", "q", "watermark", Timestamp.from(nextWatermark), "next_watermark",
                Timestamp.from(nextWatermark), "records_in", 0L, "on_time", 0L, "late", 0L, "invalid", 0L, "kpi_rows", 0L));
        v.putAll(Map.of("started_at", f, "finished_at", f, "duration_ms", 0L, "classify_ms", 0L, "write_ms", 0L));
        v.put(ClosedDays.COLUMN, lastClosed == null ? null : Date.valueOf(lastClosed));
        Row row = Lakehouse.row(Table.STREAM_PROGRESS, v);
        spark.createDataFrame(List.of(row), row.schema()).write().format("delta").mode("append").save(lakehouse.path(Table.STREAM_PROGRESS));
    }
}
