package io.tidemark.stream;

import static org.assertj.core.api.Assertions.assertThat;

import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.stream.IntStream;

import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * A hand-made micro-batch of Kafka records through the classifier: two on time, one late, two
 * invalid; the kind of each, the reasons, and the one-pass summary with the on-time partial KPI row.
 */
class RecordClassifierTest {
    private static final StructType KAFKA = StructType.fromDDL(
            "key BINARY, value BINARY, topic STRING, partition INT, offset BIGINT, timestamp TIMESTAMP");
    private static final String TOPIC = "network-events";
    /** The watermark in force for the batch: the window [13:50, 14:00) has just closed. */
    private static final long WATERMARK_MS = Instant.parse("2026-11-29T14:00:00Z").toEpochMilli();

    private static final String ON_TIME_1 =
            "{\"subscriber_id\":\"sub-1\",\"cell_site_id\":\"cell-A\",\"event_ts\":\"2026-11-29T14:12:30.250Z\",\"volume_gb\":0.1}";
    private static final String ON_TIME_2 = // the same window, written with an offset
            "{\"subscriber_id\":\"sub-2\",\"cell_site_id\":\"cell-A\",\"event_ts\":\"2026-11-29T15:19:59.999+01:00\",\"volume_gb\":0.2}";
    private static final String LATE = // its window ends exactly at the watermark
            "{\"subscriber_id\":\"sub-3\",\"cell_site_id\":\"cell-A\",\"event_ts\":\"2026-11-29T13:55:00Z\",\"volume_gb\":7.5}";
    private static final String NOT_JSON = "not json";
    private static final String NO_VOLUME =
            "{\"subscriber_id\":\"sub-4\",\"cell_site_id\":\"cell-B\",\"event_ts\":\"2026-11-29T14:15:00Z\"}";

    private static SparkSession spark;
    private final RecordClassifier classifier =
            new RecordClassifier(1024, Duration.ofMinutes(5), Duration.ofDays(7), Duration.ofMinutes(10));

    @BeforeAll
    static void start() {
        spark = LocalSpark.start("record-classifier-test");
    }

    @AfterAll
    static void stop() {
        spark.stop();
    }

    private static Instant t(String iso) {
        return Instant.parse(iso);
    }

    private static Row kafka(String key, String value, long offset, String timestamp) {
        return RowFactory.create(key == null ? null : key.getBytes(StandardCharsets.UTF_8), value.getBytes(StandardCharsets.UTF_8),
                TOPIC, offset == 102 ? 1 : 0, offset, t(timestamp)); // the late record from partition 1, the rest from 0
    }

    private static Dataset<Row> batch() {
        return spark.createDataFrame(List.of(
                kafka("sub-1", ON_TIME_1, 100, "2026-11-29T14:12:31Z"),
                kafka("sub-2", ON_TIME_2, 101, "2026-11-29T14:20:02.500Z"),
                kafka("sub-3", LATE, 102, "2026-11-29T14:20:03Z"),
                kafka(null, NOT_JSON, 103, "2026-11-29T14:20:04Z"),
                kafka("sub-4", NO_VOLUME, 104, "2026-11-29T14:20:05Z")), KAFKA);
    }

    private static List<List<Object>> values(Dataset<Row> ds) {
        List<List<Object>> out = new ArrayList<>();
        for (Row r : ds.collectAsList()) {
            out.add(IntStream.range(0, r.size()).mapToObj(r::get).toList());
        }
        return out;
    }

    private static List<Object> row(Object... values) {
        return Arrays.asList(values); // allows nulls, unlike List.of
    }

    @Test
    void eachRecordIsOnTimeLateOrInvalidWithItsReason() {
        Dataset<Row> classified = classifier.classify(batch(), WATERMARK_MS);

        assertThat(Arrays.stream(classified.schema().fields()).map(StructField::name)).containsExactly(
                "kafka_topic", "kafka_partition", "kafka_offset", "kafka_key", "ingest_ts", "reason", "detail",
                "subscriber_id", "cell_site_id", "event_ts", "volume_gb", "window_start", "window_end", "event_date", "is_late",
                "payload", "message_bytes", "raw_bytes", "raw_text");
        assertThat(values(classified.select("kafka_offset", "reason", "subscriber_id", "cell_site_id", "event_ts", "volume_gb",
                "window_start", "window_end", "is_late", "payload", "raw_text", "message_bytes", "ingest_ts").orderBy("kafka_offset")))
                .containsExactly(
                        row(100L, null, "sub-1", "cell-A", t("2026-11-29T14:12:30.250Z"), 0.1,
                                t("2026-11-29T14:10:00Z"), t("2026-11-29T14:20:00Z"), false, ON_TIME_1, null, ON_TIME_1.length(),
                                t("2026-11-29T14:12:31Z")),
                        row(101L, null, "sub-2", "cell-A", t("2026-11-29T14:19:59.999Z"), 0.2,
                                t("2026-11-29T14:10:00Z"), t("2026-11-29T14:20:00Z"), false, ON_TIME_2, null, ON_TIME_2.length(),
                                t("2026-11-29T14:20:02.500Z")),
                        row(102L, null, "sub-3", "cell-A", t("2026-11-29T13:55:00Z"), 7.5,
                                t("2026-11-29T13:50:00Z"), t("2026-11-29T14:00:00Z"), true, LATE, null, LATE.length(),
                                t("2026-11-29T14:20:03Z")),
                        row(103L, "NOT_JSON", null, null, null, null, null, null, null, null, NOT_JSON, NOT_JSON.length(),
                                t("2026-11-29T14:20:04Z")),
                        row(104L, "MISSING_FIELD", null, null, null, null, null, null, null, null, NO_VOLUME, NO_VOLUME.length(),
                                t("2026-11-29T14:20:05Z")));

        List<Row> invalid = classified.filter("reason IS NOT NULL").orderBy("kafka_offset")
                .select("detail", "raw_bytes", "kafka_key").collectAsList();
        assertThat(invalid.get(0).getString(0)).startsWith("Unrecognized token 'not'");
        assertThat((byte[]) invalid.get(0).get(1)).isEqualTo(NOT_JSON.getBytes(StandardCharsets.UTF_8));
        assertThat(invalid.get(0).get(2)).isNull();
        assertThat(invalid.get(1).getString(0)).isEqualTo("volume_gb is missing");
        assertThat((byte[]) invalid.get(1).get(1)).isEqualTo(NO_VOLUME.getBytes(StandardCharsets.UTF_8));
        assertThat((byte[]) invalid.get(1).get(2)).isEqualTo("sub-4".getBytes(StandardCharsets.UTF_8));
    }

    @Test
    void summaryCountsEachKindAndGivesTheOnTimePartialKpis() {
        Dataset<Row> summary = RecordClassifier.summary(classifier.classify(batch(), WATERMARK_MS));

        assertThat(Arrays.stream(summary.schema().fields()).map(StructField::name)).containsExactly(
                "kind", "reason", "event_date", "window_start", "window_end", "cell_site_id",
                "record_count", "total_gb", "subscriber_sketch", "updated_at", "kafka_partition", "max_event_ms");
        LocalDate day = LocalDate.of(2026, 11, 29);
        assertThat(values(summary.selectExpr("kind", "reason", "event_date", "window_start", "window_end", "cell_site_id", "record_count",
                "total_gb", "hll_sketch_estimate(subscriber_sketch)", "updated_at", "kafka_partition", "max_event_ms")
                .orderBy("kind", "reason", "kafka_partition")))
                .containsExactly(
                        // invalid rows form one group per reason: no window, no cell, no volume, no subscriber, no event time
                        row(RecordClassifier.INVALID, "MISSING_FIELD", null, null, null, null, 1L, null, 0L, t("2026-11-29T14:20:05Z"), null, null),
                        row(RecordClassifier.INVALID, "NOT_JSON", null, null, null, null, 1L, null, 0L, t("2026-11-29T14:20:04Z"), null, null),
                        row(RecordClassifier.LATE, null, day, t("2026-11-29T13:50:00Z"), t("2026-11-29T14:00:00Z"), "cell-A", 1L,
                                new BigDecimal("7.500000000"), 1L, t("2026-11-29T14:20:03Z"), null, null),
                        // the batch's contribution to kpi_5m: 0.1 + 0.2 exactly, two subscribers, the newest ingest time
                        row(RecordClassifier.ON_TIME, null, day, t("2026-11-29T14:10:00Z"), t("2026-11-29T14:20:00Z"), "cell-A", 2L,
                                new BigDecimal("0.300000000"), 2L, t("2026-11-29T14:20:02.500Z"), null, null),
                        // the watermark's input: each partition's newest valid event time, late records included
                        row(RecordClassifier.PARTITION, null, null, null, null, null, null, null, null, null, 0,
                                t("2026-11-29T14:19:59.999Z").toEpochMilli()),
                        row(RecordClassifier.PARTITION, null, null, null, null, null, null, null, null, null, 1,
                                t("2026-11-29T13:55:00Z").toEpochMilli()));
    }

    @Test
    void theSameBatchBeforeAnyWatermarkHasNothingLate() {
        Dataset<Row> summary = RecordClassifier.summary(classifier.classify(batch(), 0L));
        assertThat(values(summary.select("kind", "window_start", "record_count").where("kind <> 'partition'")
                .orderBy("kind", "window_start", "reason"))).containsExactly(
                row(RecordClassifier.INVALID, null, 1L),
                row(RecordClassifier.INVALID, null, 1L),
                row(RecordClassifier.ON_TIME, t("2026-11-29T13:50:00Z"), 1L),
                row(RecordClassifier.ON_TIME, t("2026-11-29T14:10:00Z"), 2L));
    }
}
