package io.tidemark.pipeline;

import static org.assertj.core.api.Assertions.assertThat;

import java.math.BigDecimal;
import java.nio.file.Path;
import java.sql.Timestamp;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;

import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import io.tidemark.testing.LocalSpark;

/**
 * The stream's aggregation of payments.sql's hopping table (1 hour every 15 minutes, per country,
 * refunds filtered out) on five crafted payments, against windows worked out by hand: each record in
 * its four windows, the WHERE applied first, and under a watermark a record counted in the windows
 * still open and in none of those closed.
 */
class KpiAggregationTest {

    private static final Pipeline PAYMENTS = PipelineParser.parse(
            Path.of(System.getProperty("user.dir")).getParent().resolve("pipelines/payments.sql"));
    private static final KpiAggregation COUNTRY_1H = new KpiAggregation(PAYMENTS.table("country_1h").orElseThrow(), "ts");

    private static SparkSession spark;
    private static Dataset<Row> payments;

    @BeforeAll
    static void start() {
        spark = LocalSpark.builder("kpi-aggregation-test").getOrCreate();
        StructType schema = new StructType();
        for (Pipeline.Column c : PAYMENTS.events().columns()) {
            schema = schema.add(c.name(), c.type(), !c.notNull());
        }
        schema = schema.add("ingest_ts", DataTypes.TimestampType, false);
        payments = spark.createDataFrame(List.of(
                payment("t1", "u1", "DE", "10.00", "approved", "10:07"),
                payment("t2", "u2", "DE", "20.00", "declined", "10:22"),
                payment("t3", "u1", "FR", "5.50", "approved", "10:58"),
                payment("t4", "u3", "DE", "99.99", "refunded", "10:30"), // WHERE status <> 'refunded': in no window
                payment("t5", "u2", "DE", "1.25", "approved", "09:50")), schema);
    }

    @AfterAll
    static void stop() {
        spark.stop();
    }

    private static Row payment(String txn, String user, String country, String amount, String status, String time) {
        Timestamp ts = Timestamp.from(Instant.parse("2026-12-01T" + time + ":00Z"));
        return RowFactory.create(txn, user, "m1", country, new BigDecimal(amount), status, ts, new Timestamp(ts.getTime() + 60_000));
    }

    private static List<String> rows(Dataset<Row> partials) {
        List<String> out = new ArrayList<>();
        for (Row r : partials.selectExpr("date_format(window_start, 'HH:mm')", "date_format(window_end, 'HH:mm')", "country", "txns",
                "avg_amount_sum", "avg_amount_count", "min_amount", "hll_sketch_estimate(users_sketch)", "date_format(updated_at, 'HH:mm')",
                "CAST(event_date AS STRING)").orderBy("country", "window_start").collectAsList()) {
            out.add(r.mkString(" "));
        }
        return out;
    }

    @Test
    void eachRecordCountsInItsFourWindowsAndARefundInNone() {
        assertThat(rows(COUNTRY_1H.partials(payments, Watermark.ofMillis(0)))).containsExactly(
                "09:00 10:00 DE 1 1.25 1 1.25 1 09:51 2026-12-01",
                "09:15 10:15 DE 2 11.25 2 1.25 2 10:08 2026-12-01",
                "09:30 10:30 DE 3 31.25 3 1.25 2 10:23 2026-12-01",
                "09:45 10:45 DE 3 31.25 3 1.25 2 10:23 2026-12-01",
                "10:00 11:00 DE 2 30.00 2 10.00 2 10:23 2026-12-01",
                "10:15 11:15 DE 1 20.00 1 20.00 1 10:23 2026-12-01",
                "10:00 11:00 FR 1 5.50 1 5.50 1 10:59 2026-12-01",
                "10:15 11:15 FR 1 5.50 1 5.50 1 10:59 2026-12-01",
                "10:30 11:30 FR 1 5.50 1 5.50 1 10:59 2026-12-01",
                "10:45 11:45 FR 1 5.50 1 5.50 1 10:59 2026-12-01");
    }

    @Test
    void aRecordLateForSomeWindowsStillCountsInTheOpenOnes() {
        // At 10:15 the windows ending at or before it (09:00-10:00, 09:15-10:15) are closed: t5 (09:50) counts only in 09:30 and 09:45.
        assertThat(rows(COUNTRY_1H.partials(payments, Watermark.ofMillis(Instant.parse("2026-12-01T10:15:00Z").toEpochMilli()))))
                .containsExactly(
                        "09:30 10:30 DE 3 31.25 3 1.25 2 10:23 2026-12-01",
                        "09:45 10:45 DE 3 31.25 3 1.25 2 10:23 2026-12-01",
                        "10:00 11:00 DE 2 30.00 2 10.00 2 10:23 2026-12-01",
                        "10:15 11:15 DE 1 20.00 1 20.00 1 10:23 2026-12-01",
                        "10:00 11:00 FR 1 5.50 1 5.50 1 10:59 2026-12-01",
                        "10:15 11:15 FR 1 5.50 1 5.50 1 10:59 2026-12-01",
                        "10:30 11:30 FR 1 5.50 1 5.50 1 10:59 2026-12-01",
                        "10:45 11:45 FR 1 5.50 1 5.50 1 10:59 2026-12-01");
    }

    @Test
    void theStoredRowCarriesEachValueBesideItsState() {
        Dataset<Row> partials = COUNTRY_1H.partials(payments, Watermark.ofMillis(0)).where("country = 'DE' AND hour(window_start) = 9 "
                + "AND minute(window_start) = 30");
        Dataset<Row> state = partials.selectExpr("window_start", "window_end", "country", "txns", "avg_amount_sum", "avg_amount_count",
                "min_amount", "users_sketch", "false AS is_final", "'stream' AS source", "updated_at", "7L AS stream_batch_id", "event_date");
        Dataset<Row> stored = COUNTRY_1H.stored(spark.createDataFrame(state.collectAsList(), COUNTRY_1H.stateRowSchema()));
        assertThat(stored.columns()).containsExactlyElementsOf(COUNTRY_1H.table().columnNames());
        Row r = stored.first();
        // avg = 31.25 / 3 in the table's DECIMAL(16,6); users = the sketch's estimate
        assertThat(r.getDecimal(r.fieldIndex("avg_amount"))).isEqualTo(new BigDecimal("10.416667"));
        assertThat(r.getLong(r.fieldIndex("users"))).isEqualTo(2L);
        assertThat(r.getLong(r.fieldIndex("stream_batch_id"))).isEqualTo(7L);
    }
}
