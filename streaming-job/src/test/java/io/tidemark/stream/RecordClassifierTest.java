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

import io.tidemark.lakehouse.TidemarkConfig;
import io.tidemark.pipeline.Watermark;
import io.tidemark.pipeline.KpiAggregation;
import io.tidemark.pipeline.Pipeline;
import io.tidemark.testing.LocalSpark;

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
            new RecordClassifier(io.tidemark.lakehouse.TidemarkConfig.builder().set("window", "10 minutes")
                    .build().pipeline(), 1024, Duration.ofMinutes(5), Duration.ofDays(7));

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
                "kafka_topic", "kafka_partition", "kafka_offset", "__tm_kafka_key", "ingest_ts", "__tm_reason", "__tm_detail",
                "subscriber_id", "cell_site_id", "event_ts", "volume_gb", "is_late",
                "payload", "__tm_message_bytes", "__tm_raw_bytes", "__tm_raw_text");
        // (a record's windows are per KPI table: its late ones are in the late_events rows, LateRecordRouterTest)
        assertThat(values(classified.select("kafka_offset", "__tm_reason", "subscriber_id", "cell_site_id", "event_ts", "volume_gb",
                "is_late", "payload", "__tm_raw_text", "__tm_message_bytes", "ingest_ts").orderBy("kafka_offset")))
                .containsExactly(
                        row(100L, null, "sub-1", "cell-A", t("2026-11-29T14:12:30.250Z"), 0.1,
                                false, ON_TIME_1, null, ON_TIME_1.length(),
                                t("2026-11-29T14:12:31Z")),
                        row(101L, null, "sub-2", "cell-A", t("2026-11-29T14:19:59.999Z"), 0.2,
                                false, ON_TIME_2, null, ON_TIME_2.length(),
                                t("2026-11-29T14:20:02.500Z")),
                        row(102L, null, "sub-3", "cell-A", t("2026-11-29T13:55:00Z"), 7.5,
                                true, LATE, null, LATE.length(),
                                t("2026-11-29T14:20:03Z")),
                        row(103L, "NOT_JSON", null, null, null, null, null, null, NOT_JSON, NOT_JSON.length(),
                                t("2026-11-29T14:20:04Z")),
                        row(104L, "MISSING_FIELD", null, null, null, null, null, null, NO_VOLUME, NO_VOLUME.length(),
                                t("2026-11-29T14:20:05Z")));

        List<Row> invalid = classified.filter("__tm_reason IS NOT NULL").orderBy("kafka_offset")
                .select("__tm_detail", "__tm_raw_bytes", "__tm_kafka_key").collectAsList();
        assertThat(invalid.get(0).getString(0)).startsWith("Unrecognized token 'not'");
        assertThat((byte[]) invalid.get(0).get(1)).isEqualTo(NOT_JSON.getBytes(StandardCharsets.UTF_8));
        assertThat(invalid.get(0).get(2)).isNull();
        assertThat(invalid.get(1).getString(0)).isEqualTo("volume_gb is missing");
        assertThat((byte[]) invalid.get(1).get(1)).isEqualTo(NO_VOLUME.getBytes(StandardCharsets.UTF_8));
        assertThat((byte[]) invalid.get(1).get(2)).isEqualTo("sub-4".getBytes(StandardCharsets.UTF_8));
    }

    /** kpi_5m as the network pipeline declares it, with this test's 10-minute windows. */
    private static final List<KpiAggregation> KPI_10M = List.of(new KpiAggregation(TidemarkConfig.builder()
            .set("window", "10 minutes").build().pipeline().table("kpi_5m").orElseThrow(), "event_ts"));

    private Dataset<Row> summary(long watermarkMs) {
        return classifier.summary(classifier.classify(batch(), watermarkMs), KPI_10M, Watermark.ofMillis(watermarkMs));
    }

    @Test
    void summaryCountsEachKindAndGivesTheOnTimePartialKpis() {
        Dataset<Row> summary = summary(WATERMARK_MS);

        assertThat(Arrays.stream(summary.schema().fields()).map(StructField::name)).containsExactly(
                "__tm_kind", "__tm_reason", "kafka_partition", "__tm_records", "__tm_max_event_ms", "__tm_kpi", "event_date", "window_start", "window_end",
                "cell_site_id", "__tm_kpi0_record_count", "__tm_kpi0_total_gb", "__tm_kpi0_subscriber_sketch", "__tm_kpi0_updated_at");
        LocalDate day = LocalDate.of(2026, 11, 29);
        assertThat(values(summary.selectExpr("__tm_kind", "__tm_reason", "kafka_partition", "__tm_records", "__tm_max_event_ms")
                .where("__tm_kind <> 'kpi'").orderBy("__tm_kind", "__tm_reason", "kafka_partition")))
                .containsExactly(
                        // invalid records form one group per reason: no event time
                        row(RecordClassifier.INVALID, "MISSING_FIELD", 0, 1L, null),
                        row(RecordClassifier.INVALID, "NOT_JSON", 0, 1L, null),
                        // the watermark's input: each partition's newest valid event time, late records included
                        row(RecordClassifier.LATE, null, 1, 1L, t("2026-11-29T13:55:00Z").toEpochMilli()),
                        row(RecordClassifier.ON_TIME, null, 0, 2L, t("2026-11-29T14:19:59.999Z").toEpochMilli()));
        assertThat(values(summary.selectExpr("__tm_kpi", "event_date", "window_start", "window_end", "cell_site_id", "__tm_kpi0_record_count",
                "__tm_kpi0_total_gb", "hll_sketch_estimate(__tm_kpi0_subscriber_sketch)", "__tm_kpi0_updated_at").where("__tm_kind = 'kpi'")))
                .containsExactly(
                        // the batch's contribution to kpi_5m: 0.1 + 0.2 exactly, two subscribers, the newest ingest time; the late
                        // record's window has closed, so it has none
                        row(0, day, t("2026-11-29T14:10:00Z"), t("2026-11-29T14:20:00Z"), "cell-A", 2L,
                                new BigDecimal("0.300000000"), 2L, t("2026-11-29T14:20:02.500Z")));
    }

    @Test
    void theSameBatchBeforeAnyWatermarkHasNothingLate() {
        Dataset<Row> summary = summary(0L);
        assertThat(values(summary.select("__tm_kind", "__tm_reason", "__tm_records").where("__tm_kind <> 'kpi'").orderBy("__tm_kind", "__tm_reason", "kafka_partition")))
                .containsExactly(
                        row(RecordClassifier.INVALID, "MISSING_FIELD", 1L),
                        row(RecordClassifier.INVALID, "NOT_JSON", 1L),
                        row(RecordClassifier.ON_TIME, null, 2L), // partition 0
                        row(RecordClassifier.ON_TIME, null, 1L)); // partition 1: the record late above
        assertThat(values(summary.select("window_start", "__tm_kpi0_record_count").where("__tm_kind = 'kpi'").orderBy("window_start"))).containsExactly(
                row(t("2026-11-29T13:50:00Z"), 1L),
                row(t("2026-11-29T14:10:00Z"), 2L));
    }

    private static String event(String subscriber, String ts, String volume) {
        return "{\"subscriber_id\":\"" + subscriber + "\",\"cell_site_id\":\"c\",\"event_ts\":\"" + ts + "\",\"volume_gb\":" + volume + "}";
    }

    /**
     * The network pipeline's CHECKs name the records that break them (the reasons the decoder gave
     * before they were declared in pipelines/network.sql), before a time that does not parse or is
     * out of range, which the decoder defers.
     */
    @Test
    void eachCheckNamesTheRecordsThatBreakIt() {
        String now = "2026-11-29T14:20:00Z";
        List<String> messages = List.of(
                event(" ", now, "1"),
                event("s", now, "-0.1"),
                event("s", now, "NaN"),
                event("s", now, "1e999"),
                event("s", now, "-1e999"),
                // finite, but no DECIMAL(38,9) holds it: it crashed every replay of its batch (hostile-conditions suite)
                event("s", now, "1e308"),
                event("s", now, "1.0000001e12"),
                event("s", now, "1e12"), // the largest volume allowed
                event(" ", "yesterday", "1"), // a CHECK first, then the time
                event("s", "2026-11-29T15:00:00Z", "-1"), // negative and from the future
                event("s", "yesterday", "1"),
                event("\\t\\u2003", now, "1")); // a tab and an em space: blank as String.isBlank has it
        List<Row> kafka = new ArrayList<>();
        for (int i = 0; i < messages.size(); i++) {
            kafka.add(RowFactory.create(null, messages.get(i).getBytes(StandardCharsets.UTF_8), TOPIC, 0, (long) i, t(now)));
        }
        Dataset<Row> classified = classifier.classify(spark.createDataFrame(kafka, KAFKA), 0L);
        assertThat(values(classified.orderBy("kafka_offset").select("__tm_reason"))).containsExactly(
                row("BLANK_ID"), row("NEGATIVE_VOLUME"), row("NON_FINITE_VOLUME"), row("NON_FINITE_VOLUME"), row("NON_FINITE_VOLUME"),
                row("VOLUME_TOO_LARGE"), row("VOLUME_TOO_LARGE"), row((Object) null), row("BLANK_ID"), row("NEGATIVE_VOLUME"),
                row("BAD_TIMESTAMP"), row("BLANK_ID"));
        assertThat(values(classified.where("kafka_offset = 7").select("volume_gb", "is_late"))).containsExactly(row(1e12, false));
        assertThat(values(classified.where("kafka_offset IN (1, 2, 10)").orderBy("kafka_offset").select("__tm_detail"))).containsExactly(
                row("CHECK negative_volume (volume_gb >= 0) is false for volume_gb = -0.1"),
                row("CHECK non_finite_volume (NOT isnan(volume_gb) AND abs(volume_gb) < double('infinity')) is false for volume_gb = NaN"),
                row("event_ts 'yesterday': expected ISO-8601 like 2026-11-29T14:03:12.345Z"));
    }

    /**
     * Avro events (AvroEventsTest's two writer schemas, from schema files) through the classifier: the
     * valid rows carry the declared columns and Avro's JSON of the record as payload, a CHECK still names
     * its record, and the decoder's reasons reach dead_letter's columns with the bytes kept.
     */
    @Test
    void avroEventsAreClassifiedAsTheirJsonTwinsAre(@org.junit.jupiter.api.io.TempDir java.nio.file.Path schemas) throws Exception {
        java.nio.file.Files.writeString(schemas.resolve("1.avsc"), AvroEventsTest.V1);
        java.nio.file.Files.writeString(schemas.resolve("2.avsc"), AvroEventsTest.V2);
        Pipeline orders = io.tidemark.pipeline.PipelineParser.parse("orders.sql", AvroEventsTest.pipeline(schemas.toString()));
        RecordClassifier avro = new RecordClassifier(orders, 1024, Duration.ofMinutes(5), Duration.ofDays(7));
        long ts = t("2026-11-29T14:12:30Z").toEpochMilli();
        List<byte[]> messages = List.of(
                AvroEventsTest.wire(1, AvroEventsTest.V1, "id", "o-1", "n", 7, "amount", new BigDecimal("12.50"), "ts", ts, "note", "hi"),
                AvroEventsTest.wire(2, AvroEventsTest.V2, "id", "o-2", "n", 8L, "amount", new BigDecimal("1.500"), "ts", ts * 1000, "channel", "app"),
                AvroEventsTest.wire(1, AvroEventsTest.V1, "id", "o-3", "n", 1, "amount", new BigDecimal("-2.00"), "ts", ts),
                AvroEventsTest.wire(7, AvroEventsTest.V1, "id", "o-4", "n", 1, "amount", new BigDecimal("2.00"), "ts", ts),
                "{\"id\": 1}".getBytes(StandardCharsets.UTF_8));
        List<Row> kafka = new ArrayList<>();
        for (int i = 0; i < messages.size(); i++) {
            kafka.add(RowFactory.create(null, messages.get(i), "orders", 0, (long) i, t("2026-11-29T14:13:00Z")));
        }
        Dataset<Row> classified = avro.classify(spark.createDataFrame(kafka, KAFKA), WATERMARK_MS).orderBy("kafka_offset").cache();
        assertThat(values(classified.select("__tm_reason", "id", "n", "amount", "ts", "note", "is_late"))).containsExactly(
                row(null, "o-1", 7L, new BigDecimal("12.50"), t("2026-11-29T14:12:30Z"), "hi", false),
                row(null, "o-2", 8L, new BigDecimal("1.50"), t("2026-11-29T14:12:30Z"), null, false),
                row("POSITIVE_AMOUNT", "o-3", 1L, new BigDecimal("-2.00"), t("2026-11-29T14:12:30Z"), null, null),
                row("UNKNOWN_SCHEMA", null, null, null, null, null, null),
                row("NOT_AVRO", null, null, null, null, null, null));
        assertThat(values(classified.where("__tm_reason IS NULL").select("payload"))).containsExactly(
                row("{\"id\": \"o-1\", \"n\": 7, \"amount\": 12.50, \"ts\": \"2026-11-29T14:12:30Z\", \"note\": \"hi\"}"),
                row("{\"id\": \"o-2\", \"n\": 8, \"amount\": 1.500, \"ts\": \"2026-11-29T14:12:30Z\", \"channel\": \"app\"}"));
        List<Row> dead = classified.where("__tm_reason IS NOT NULL").select("__tm_raw_bytes", "__tm_detail").collectAsList();
        assertThat((byte[]) dead.get(1).get(0)).isEqualTo(messages.get(3));
        assertThat(dead.get(0).getString(1)).isEqualTo("CHECK positive_amount (amount > 0) is false for amount = -2.00");
        assertThat(dead.get(1).getString(1)).isEqualTo("schema id 7 is not in the schema registry " + schemas);
        classified.unpersist();
    }
}
