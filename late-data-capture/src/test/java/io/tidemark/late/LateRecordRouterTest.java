package io.tidemark.late;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Instant;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.stream.IntStream;

import io.tidemark.lakehouse.TidemarkConfig;
import io.tidemark.pipeline.Pipeline;
import io.tidemark.pipeline.PipelineParser;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import io.tidemark.testing.LocalSpark;

/**
 * The late rule on hand-made records: late when {@code window_end <= watermark}, to the millisecond,
 * and the {@code late_events} rows it makes of them.
 */
class LateRecordRouterTest {
    /** The network pipeline with 10-minute windows. */
    private static final Pipeline TEN_MINUTES = TidemarkConfig.builder().set("window", "10 minutes").build().pipeline();
    private static final StructType VALID = StructType.fromDDL("subscriber_id STRING, cell_site_id STRING, event_ts TIMESTAMP, "
            + "volume_gb DOUBLE, kafka_topic STRING, kafka_partition INT, kafka_offset BIGINT, ingest_ts TIMESTAMP");
    /** The columns of tidemark.late_events in sql/tables.sql, in order. */
    private static final StructType LATE_EVENTS = StructType.fromDDL("subscriber_id STRING, cell_site_id STRING, event_ts TIMESTAMP, "
            + "volume_gb DOUBLE, window_start TIMESTAMP, window_end TIMESTAMP, watermark TIMESTAMP, late_by_ms BIGINT, batch_id BIGINT, "
            + "kafka_topic STRING, kafka_partition INT, kafka_offset BIGINT, arrival_ts TIMESTAMP, event_date DATE, kpi STRING");

    private static SparkSession spark;

    @BeforeAll
    static void start() {
        spark = LocalSpark.start("late-record-router-test");
    }

    @AfterAll
    static void stop() {
        spark.stop();
    }

    private static Instant t(String iso) {
        return Instant.parse(iso);
    }

    private static long ms(String iso) {
        return t(iso).toEpochMilli();
    }

    private static Row record(long offset, String subscriber, String cell, String eventTs, double gb, String ingestTs) {
        return RowFactory.create(subscriber, cell, t(eventTs), gb, "network-events", (int) (offset % 3), offset, t(ingestTs));
    }

    private static Dataset<Row> records(Row... rows) {
        return spark.createDataFrame(Arrays.asList(rows), VALID);
    }

    /** Records whose windows end at 14:10, 14:20 and 13:50. */
    private static Dataset<Row> boundary() {
        return records(
                record(1, "sub-1", "cell-A", "2026-11-29T14:09:59.999999Z", 1, "2026-11-29T14:10:30Z"), // window ends 14:10
                record(2, "sub-2", "cell-A", "2026-11-29T14:10:00Z", 1, "2026-11-29T14:10:30Z"),        // window ends 14:20
                record(3, "sub-3", "cell-B", "2026-11-29T13:42:00Z", 1, "2026-11-29T14:10:30Z"));       // window ends 13:50
    }

    private static List<Long> lateOffsets(long watermarkMs) {
        return lateOffsets(boundary(), watermarkMs);
    }

    private static List<Long> lateOffsets(Dataset<Row> records, long watermarkMs) {
        // One query per watermark: every record is marked, true or false, never null.
        List<Long> late = new ArrayList<>();
        for (Row r : LateRecordRouter.markLate(records, TEN_MINUTES, watermarkMs).select("kafka_offset", "is_late")
                .orderBy("kafka_offset").collectAsList()) {
            assertThat(r.isNullAt(1)).as("is_late of offset %d", r.getLong(0)).isFalse();
            if (r.getBoolean(1)) {
                late.add(r.getLong(0));
            }
        }
        return late;
    }

    @Test
    void aWindowEndingExactlyAtTheWatermarkIsLate() {
        assertThat(lateOffsets(ms("2026-11-29T14:10:00Z"))).containsExactly(1L, 3L);
    }

    @Test
    void aWindowEndingOneMillisecondAfterTheWatermarkIsNot() {
        assertThat(lateOffsets(ms("2026-11-29T14:09:59.999Z"))).containsExactly(3L);
        assertThat(lateOffsets(ms("2026-11-29T13:49:59.999Z"))).isEmpty();
        assertThat(lateOffsets(ms("2026-11-29T13:50:00Z"))).containsExactly(3L);
    }

    @Test
    void aWatermarkPastTheWindowEndStaysLate() {
        assertThat(lateOffsets(ms("2026-11-29T14:10:00.001Z"))).containsExactly(1L, 3L);
        assertThat(lateOffsets(ms("2026-11-29T14:20:00Z"))).containsExactly(1L, 2L, 3L);
    }

    @Test
    void watermarkZeroMarksNothingLate() {
        // Spark's "no watermark yet" is the epoch: even an event at 1970-01-01T00:00:00Z has its window end after it.
        Dataset<Row> withEpoch = boundary().union(records(
                record(4, "sub-4", "cell-B", "1970-01-01T00:00:00Z", 1, "2026-11-29T14:10:30Z"),   // window ends 00:10 1970
                record(5, "sub-5", "cell-B", "2000-01-01T00:00:00Z", 1, "2026-11-29T14:10:30Z")));
        assertThat(lateOffsets(withEpoch, 0L)).isEmpty();
        // the same records once the watermark reaches the end of the epoch's window: only that one is late
        assertThat(lateOffsets(withEpoch, ms("1970-01-01T00:10:00Z"))).containsExactly(4L);
    }

    @Test
    void markLateAddsIsLateAndTheLateRowsNameTheirWindowAndTable() {
        long watermark = ms("2026-11-29T14:10:00Z");
        Dataset<Row> marked = LateRecordRouter.markLate(boundary(), TEN_MINUTES, watermark);
        assertThat(Arrays.stream(marked.schema().fields()).map(StructField::name)).containsExactly(
                "subscriber_id", "cell_site_id", "event_ts", "volume_gb", "kafka_topic", "kafka_partition", "kafka_offset", "ingest_ts",
                "is_late");
        assertThat(values(LateRecordRouter.lateEvents(marked, TEN_MINUTES, watermark, 0L)
                .select("kafka_offset", "window_start", "window_end", "kpi").orderBy("kafka_offset"))).containsExactly(
                List.of(1L, t("2026-11-29T14:00:00Z"), t("2026-11-29T14:10:00Z"), "kpi_5m"),
                List.of(3L, t("2026-11-29T13:40:00Z"), t("2026-11-29T13:50:00Z"), "kpi_5m"));
    }

    /**
     * Two tables, one hopping with a WHERE: a record's contribution to each closed window is a
     * late_events row of its own; its windows still open are not, and a record the WHERE leaves out
     * is late for no window of that table.
     */
    @Test
    void theLateRuleIsPerTableAndWindow() {
        Pipeline two = PipelineParser.parse("two.sql", """
                CREATE TABLE events (subscriber_id STRING NOT NULL, cell_site_id STRING NOT NULL, event_ts TIMESTAMP NOT NULL,
                  volume_gb DOUBLE NOT NULL) USING kafka OPTIONS (topic 't', format 'json', event_time 'event_ts', lateness '0 minutes');
                CREATE STREAMING TABLE per_cell AS SELECT window(event_ts, '10 minutes') AS w, cell_site_id, count(*) AS n
                FROM STREAM events GROUP BY window(event_ts, '10 minutes'), cell_site_id;
                CREATE STREAMING TABLE sliding AS SELECT window(event_ts, '30 minutes', '10 minutes') AS w, count(*) AS n
                FROM STREAM events WHERE cell_site_id = 'cell-A' GROUP BY window(event_ts, '30 minutes', '10 minutes');
                """);
        long watermark = ms("2026-11-29T14:20:00Z");
        Dataset<Row> marked = LateRecordRouter.markLate(records(
                record(1, "sub-1", "cell-A", "2026-11-29T14:05:00Z", 1, "2026-11-29T14:21:00Z"),  // per_cell 14:00-14:10 closed; sliding: 13:40, 13:50 closed, 14:00 open
                record(2, "sub-2", "cell-B", "2026-11-29T14:05:00Z", 1, "2026-11-29T14:21:00Z"),  // per_cell closed; not in sliding
                record(3, "sub-3", "cell-A", "2026-11-29T14:25:00Z", 1, "2026-11-29T14:21:00Z")), // every window open
                two, watermark);
        assertThat(values(marked.select("kafka_offset", "is_late").orderBy("kafka_offset")))
                .containsExactly(List.of(1L, true), List.of(2L, true), List.of(3L, false));
        assertThat(values(LateRecordRouter.lateEvents(marked, two, watermark, 0L)
                .select("kafka_offset", "kpi", "window_start", "window_end").orderBy("kafka_offset", "kpi", "window_start"))).containsExactly(
                List.of(1L, "per_cell", t("2026-11-29T14:00:00Z"), t("2026-11-29T14:10:00Z")),
                List.of(1L, "sliding", t("2026-11-29T13:40:00Z"), t("2026-11-29T14:10:00Z")),
                List.of(1L, "sliding", t("2026-11-29T13:50:00Z"), t("2026-11-29T14:20:00Z")),
                List.of(2L, "per_cell", t("2026-11-29T14:00:00Z"), t("2026-11-29T14:10:00Z")));
    }

    @Test
    void lateEventsRowsCarryTheWatermarkHowLateTheBatchAndTheArrival() {
        long watermark = ms("2026-11-29T14:25:00.500Z");
        Dataset<Row> marked = LateRecordRouter.markLate(records(
                record(41, "sub-1", "cell-A", "2026-11-29T14:03:20.123456Z", 0.5, "2026-11-29T14:26:01.250Z"),
                record(42, "sub-2", "cell-B", "2026-11-29T14:19:59Z", 1.75, "2026-11-29T14:26:02Z"),
                record(43, "sub-3", "cell-A", "2026-11-29T14:20:00Z", 3.0, "2026-11-29T14:26:03Z")), // window ends 14:30: on time
                TEN_MINUTES, watermark);

        Dataset<Row> late = LateRecordRouter.lateEvents(marked, TEN_MINUTES, watermark, 7L);

        assertThat(Arrays.stream(late.schema().fields()).map(f -> f.name() + " " + f.dataType().sql()))
                .containsExactlyElementsOf(Arrays.stream(LATE_EVENTS.fields()).map(f -> f.name() + " " + f.dataType().sql()).toList());
        assertThat(values(late.orderBy("kafka_offset"))).containsExactly(
                List.of("sub-1", "cell-A", t("2026-11-29T14:03:20.123456Z"), 0.5, t("2026-11-29T14:00:00Z"), t("2026-11-29T14:10:00Z"),
                        t("2026-11-29T14:25:00.500Z"), 900_500L, 7L, "network-events", 2, 41L, t("2026-11-29T14:26:01.250Z"),
                        LocalDate.of(2026, 11, 29), "kpi_5m"),
                List.of("sub-2", "cell-B", t("2026-11-29T14:19:59Z"), 1.75, t("2026-11-29T14:10:00Z"), t("2026-11-29T14:20:00Z"),
                        t("2026-11-29T14:25:00.500Z"), 300_500L, 7L, "network-events", 0, 42L, t("2026-11-29T14:26:02Z"),
                        LocalDate.of(2026, 11, 29), "kpi_5m"));
    }

    @Test
    void lateByIsZeroForAWindowEndingAtTheWatermark() {
        long watermark = ms("2026-11-29T14:10:00Z");
        Dataset<Row> late = LateRecordRouter.lateEvents(LateRecordRouter.markLate(boundary(), TEN_MINUTES, watermark), TEN_MINUTES, watermark, 0L);
        assertThat(values(late.select("kafka_offset", "late_by_ms", "batch_id").orderBy("kafka_offset")))
                .containsExactly(List.of(1L, 0L, 0L), List.of(3L, 1_200_000L, 0L));
    }

    private static List<List<Object>> values(Dataset<Row> ds) {
        List<List<Object>> out = new ArrayList<>();
        for (Row r : ds.collectAsList()) {
            out.add(IntStream.range(0, r.size()).mapToObj(r::get).toList());
        }
        return out;
    }
}
