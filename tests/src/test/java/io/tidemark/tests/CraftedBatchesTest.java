package io.tidemark.tests;

import static io.tidemark.tests.KafkaFixtures.event;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.tuple;

import java.nio.file.Path;
import java.time.Instant;
import java.util.List;

import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

import io.tidemark.operations.ConservationCheck;
import io.tidemark.lakehouse.Lakehouse;
import io.tidemark.lakehouse.TidemarkConfig;
import io.tidemark.tests.KafkaFixtures.Message;

/**
 * Crafted out-of-order input through the stream's whole writer ({@link BatchDriver}: no broker, no
 * streaming query), four records per micro-batch, with the exact rows every table must hold
 * afterwards. Window 5 min, lateness 10 min. The comments give the watermark in force per batch (the
 * threshold of {@code WatermarkLedger}). The same input through the real broker and query is
 * {@link StatusJsonTest}'s.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class CraftedBatchesTest extends OnSharedInfrastructure {
    private static final Instant INGEST = Instant.parse("2026-11-28T12:00:00Z");
    private static final String D = "2026-11-28T";
    private Lakehouse lakehouse;
    private SparkSession spark;

    @BeforeAll
    void writeTheCraftedBatches() throws Exception {
        Path dir = infra.newDir("crafted");
        TidemarkConfig config = infra.config(dir, "crafted-" + dir.getFileName()).build();
        spark = infra.spark;
        lakehouse = Lakehouse.of(config);
        List<Message> m = messages();
        try (BatchDriver driver = new BatchDriver(spark, config)) {
            for (int b = 0; b < m.size() / 4; b++) {
                driver.pipe(INGEST.plusSeconds(b), m.subList(4 * b, 4 * b + 4).toArray(Message[]::new));
            }
        }
    }

    private static Message msg(String value) {
        return new Message(value, INGEST);
    }

    /**
     * The crafted input, 24 records on one partition, four per batch (as stream.max-offsets-per-trigger=4 makes them),
     * all with the Kafka timestamp {@link #INGEST}: 14 on time, 6 late, 4 invalid, in 6 batches.
     */
    static List<Message> messages() {
        return List.of(
                // batch 0, watermark 0: everything is on time
                msg(event("s1", "c1", D + "10:00:00Z", 1.0)),            // 0: exactly on a window start
                msg(event("s2", "c1", D + "10:04:59.999Z", 2.0)),        // 1: last instant of the same window
                msg(event("s1", "c2", D + "10:30:00Z", 0.5)),            // 2
                msg(event("s3", "c1", "2026-11-27T23:58:00Z", 0.25)),    // 3: the day before
                // batch 1, watermark 0
                msg(event("s2", "c2", D + "10:05:00Z", 1.0)),            // 4
                msg("{\"subscriber_id\":\"s9\",\"cell_site_id\":\"c1\",\"event_ts\":null,\"volume_gb\":1}"), // 5: null event time
                msg(event("s9", "c1", D + "13:00:00Z", 1.0)),            // 6: an hour ahead of its Kafka timestamp
                msg("not json"),                                          // 7
                // batch 2, watermark 10:20 (max of batch 0 minus 10 min); the far-future record did not move it
                msg(event("s4", "c1", D + "10:15:00Z", 3.0)),            // 8: window ends exactly at the watermark: late
                msg(event("s5", "c1", D + "10:20:00Z", 4.0)),            // 9: window ends 5 min after it: on time
                msg(event("s1", "c2", D + "10:30:00Z", 0.5)),            // 10: same event time as 2, another batch
                msg(event("s6", "c3", D + "10:19:59.999Z", 1.0)),        // 11: late
                // batch 3, watermark 10:20
                msg(event("s7", "c1", "2026-11-27T23:59:00Z", 9.0)),     // 12: late, for a closed day
                msg(event("s1", "c1", D + "11:00:00Z", 1.0)),            // 13
                msg(event("s2", "c1", D + "10:12:00Z", 1.0)),            // 14: late by 5 min
                msg(event("s8", "c4", D + "10:21:00Z", 2.0)),            // 15
                // batch 4, watermark 10:20
                msg(event("s1", "c1", D + "10:20:00Z", 0.1)),            // 16
                msg(event("s2", "c1", D + "10:24:59Z", 0.2)),            // 17
                msg(""),                                                  // 18: empty
                msg(event("s3", "c2", D + "10:50:00Z", 0.7)),            // 19
                // batch 5, watermark 10:50 (11:00 seen in batch 3, minus 10 min)
                msg(event("s1", "c1", D + "10:45:00Z", 5.0)),            // 20: window ends at the watermark: late
                msg(event("s1", "c1", D + "10:50:00Z", 0.3)),            // 21
                msg(event("s1", "c1", D + "10:22:00Z", 6.0)),            // 22: late by 25 min
                msg(event("s2", "c5", D + "10:55:00Z", 0.9)));           // 23
    }

    private List<Row> rows(String sql) {
        return spark.sql(sql.replace("{kpi}", lakehouse.ref(Lakehouse.Table.kpi("kpi_5m")))
                .replace("{late}", lakehouse.ref(Lakehouse.Table.LATE_EVENTS))
                .replace("{raw}", lakehouse.ref(Lakehouse.Table.RAW_EVENTS))
                .replace("{dead}", lakehouse.ref(Lakehouse.Table.DEAD_LETTER))
                .replace("{progress}", lakehouse.ref(Lakehouse.Table.STREAM_PROGRESS))).collectAsList();
    }

    @Test
    void kpisHoldExactlyTheOnTimeRecords() {
        List<Row> kpi = rows("SELECT date_format(window_start, 'yyyy-MM-dd HH:mm'), cell_site_id, record_count, "
                + "CAST(total_gb AS STRING), subscribers, is_final, source FROM {kpi} ORDER BY window_start, cell_site_id");
        assertThat(kpi).extracting(r -> tuple(r.getString(0), r.getString(1), r.getLong(2), r.getString(3), r.getLong(4), r.getBoolean(5), r.getString(6)))
                .containsExactly(
                        tuple("2026-11-27 23:55", "c1", 1L, "0.250000000", 1L, true, "stream"),
                        tuple("2026-11-28 10:00", "c1", 2L, "3.000000000", 2L, true, "stream"),
                        tuple("2026-11-28 10:05", "c2", 1L, "1.000000000", 1L, true, "stream"),
                        tuple("2026-11-28 10:20", "c1", 3L, "4.300000000", 3L, true, "stream"),
                        tuple("2026-11-28 10:20", "c4", 1L, "2.000000000", 1L, true, "stream"),
                        tuple("2026-11-28 10:30", "c2", 2L, "1.000000000", 1L, true, "stream"),
                        tuple("2026-11-28 10:50", "c1", 1L, "0.300000000", 1L, false, "stream"),
                        tuple("2026-11-28 10:50", "c2", 1L, "0.700000000", 1L, false, "stream"),
                        tuple("2026-11-28 10:55", "c5", 1L, "0.900000000", 1L, false, "stream"),
                        tuple("2026-11-28 11:00", "c1", 1L, "1.000000000", 1L, false, "stream"));
    }

    @Test
    void lateRecordsAreCapturedWithTheWatermarkTheyMissed() {
        List<Row> late = rows("SELECT kafka_offset, date_format(window_end, 'yyyy-MM-dd HH:mm'), date_format(watermark, 'HH:mm'), "
                + "late_by_ms, batch_id, CAST(event_date AS STRING) FROM {late} ORDER BY kafka_offset");
        assertThat(late).extracting(r -> tuple(r.getLong(0), r.getString(1), r.getString(2), r.getLong(3), r.getLong(4), r.getString(5)))
                .containsExactly(
                        tuple(8L, "2026-11-28 10:20", "10:20", 0L, 2L, "2026-11-28"),
                        tuple(11L, "2026-11-28 10:20", "10:20", 0L, 2L, "2026-11-28"),
                        tuple(12L, "2026-11-28 00:00", "10:20", 37_200_000L, 3L, "2026-11-27"),
                        tuple(14L, "2026-11-28 10:15", "10:20", 300_000L, 3L, "2026-11-28"),
                        tuple(20L, "2026-11-28 10:50", "10:50", 0L, 5L, "2026-11-28"),
                        tuple(22L, "2026-11-28 10:25", "10:50", 1_500_000L, 5L, "2026-11-28"));
        assertThat(rows("SELECT kafka_offset FROM {raw} WHERE is_late ORDER BY kafka_offset"))
                .extracting(r -> r.getLong(0)).containsExactly(8L, 11L, 12L, 14L, 20L, 22L);
    }

    @Test
    void invalidRecordsGoToDeadLetterWithTheirReason() {
        assertThat(rows("SELECT kafka_offset, reason, raw_text FROM {dead} ORDER BY kafka_offset"))
                .extracting(r -> tuple(r.getLong(0), r.getString(1), r.getString(2)))
                .containsExactly(
                        tuple(5L, "NULL_FIELD", "{\"subscriber_id\":\"s9\",\"cell_site_id\":\"c1\",\"event_ts\":null,\"volume_gb\":1}"),
                        tuple(6L, "FUTURE_EVENT_TIME", event("s9", "c1", D + "13:00:00Z", 1.0)),
                        tuple(7L, "NOT_JSON", "not json"),
                        tuple(18L, "EMPTY", ""));
    }

    @Test
    void progressRecordsTheWatermarkPerBatchUnmovedByTheFarFutureRecord() {
        List<Row> p = rows("SELECT batch_id, date_format(watermark, 'HH:mm'), date_format(next_watermark, 'HH:mm'), "
                + "records_in, on_time, late, invalid FROM {progress} ORDER BY batch_id");
        assertThat(p).extracting(r -> tuple(r.getLong(0), r.getString(1), r.getString(2), r.getLong(3), r.getLong(4), r.getLong(5), r.getLong(6)))
                .containsExactly(
                        tuple(0L, "00:00", "00:00", 4L, 4L, 0L, 0L),
                        tuple(1L, "00:00", "10:20", 4L, 1L, 0L, 3L),
                        tuple(2L, "10:20", "10:20", 4L, 2L, 2L, 0L),
                        tuple(3L, "10:20", "10:20", 4L, 2L, 2L, 0L),
                        tuple(4L, "10:20", "10:50", 4L, 3L, 0L, 1L),
                        tuple(5L, "10:50", "10:50", 4L, 2L, 2L, 0L));
    }

    @Test
    void conservationHolds() {
        ConservationCheck.Report r = ConservationCheck.check(spark, lakehouse, 24L);
        assertThat(r.violations()).isEmpty();
        assertThat(r.rawEvents()).isEqualTo(20);
        assertThat(r.deadLetters()).isEqualTo(4);
        assertThat(r.kpiRecords()).isEqualTo(14);
        assertThat(r.lateEvents()).isEqualTo(6);
    }
}
