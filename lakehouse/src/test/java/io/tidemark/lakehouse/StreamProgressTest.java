package io.tidemark.lakehouse;

import static org.assertj.core.api.Assertions.assertThat;

import java.sql.Timestamp;
import java.time.Instant;
import java.time.LocalDate;
import java.util.Map;
import java.util.TreeMap;

import org.apache.spark.sql.Row;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.junit.jupiter.api.Test;

import io.tidemark.lakehouse.Lakehouse.Table;

class StreamProgressTest {

    private static final Instant T = Instant.parse("2026-05-03T00:10:00Z");

    @Test
    void aRowReadsBackAsTheProgressItWasWrittenFrom() {
        StreamProgress p = new StreamProgress(7, "q-1", T.minusSeconds(600), T, T.minusSeconds(5), T.minusSeconds(1), 10, 7, 2, 1, 4,
                T.plusSeconds(1), T.plusSeconds(3), 2_000, 800, 1_200, 4_000L, LocalDate.parse("2026-05-02"), T.plusSeconds(1),
                new TreeMap<>(Map.of(1, new PartitionClock(T.minusSeconds(1).toEpochMilli(), T.toEpochMilli()),
                        0, new PartitionClock(T.minusSeconds(90).toEpochMilli(), T.minusSeconds(10).toEpochMilli()))));
        Row row = p.toRow();
        assertThat(row.schema()).isEqualTo(Lakehouse.ownSchema(Table.STREAM_PROGRESS));
        assertThat(row.<Timestamp>getAs("next_watermark")).isEqualTo(Timestamp.from(T));
        assertThat(row.<java.sql.Date>getAs(ClosedDays.COLUMN)).isEqualTo(java.sql.Date.valueOf("2026-05-02"));
        assertThat(StreamProgress.of(row)).isEqualTo(p);
        assertThat(p.partitionClocks().keySet()).containsExactly(0, 1);
        assertThat(p.closedDays().lastClosed()).contains(LocalDate.parse("2026-05-02"));
        assertThat(p.closedDays().watermark().instant()).contains(T);
    }

    @Test
    void aRowOfAnEarlierVersionLacksTheNewestColumns() {
        StructType schema = new StructType()
                .add("batch_id", DataTypes.LongType).add("query_id", DataTypes.StringType)
                .add("watermark", DataTypes.TimestampType).add("next_watermark", DataTypes.TimestampType)
                .add("max_event_ts", DataTypes.TimestampType).add("max_event_ts_seen", DataTypes.TimestampType)
                .add("records_in", DataTypes.LongType).add("on_time", DataTypes.LongType).add("late", DataTypes.LongType)
                .add("invalid", DataTypes.LongType).add("kpi_rows", DataTypes.LongType)
                .add("started_at", DataTypes.TimestampType).add("finished_at", DataTypes.TimestampType)
                .add("duration_ms", DataTypes.LongType).add("classify_ms", DataTypes.LongType).add("write_ms", DataTypes.LongType)
                .add("freshness_ms", DataTypes.LongType);
        Timestamp t = Timestamp.from(T);
        Row old = new org.apache.spark.sql.catalyst.expressions.GenericRowWithSchema(new Object[] {3L, "q-0", t, t, null, null, 0L, 0L, 0L, 0L,
                0L, t, t, 5L, 1L, 4L, null}, schema);
        StreamProgress p = StreamProgress.of(old);
        assertThat(p.batchId()).isEqualTo(3);
        assertThat(p.maxEventTs()).isNull();
        assertThat(p.freshnessMs()).isNull();
        assertThat(p.lastClosedDay()).isNull();
        assertThat(p.batchTs()).isNull();
        assertThat(p.partitionClocks()).isEmpty();
        // No recorded decision, and a watermark that closes 2026-05-02: nothing is closed until the stream records it.
        assertThat(p.closedDays().lastClosed()).isEmpty();
        assertThat(p.closedDays().whyOpen(LocalDate.parse("2026-05-02"))).hasValueSatisfying(why -> assertThat(why)
                .contains("earlier version of Tidemark"));
    }
}
