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
import io.tidemark.lakehouse.pipeline.Watermark;

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
