package io.tidemark.tests;

import static org.apache.spark.sql.functions.col;
import static org.assertj.core.api.Assertions.assertThat;

import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.types.StructType;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.json.JsonMapper;

import io.tidemark.generate.GeneratedMessage;
import io.tidemark.generate.PaymentKind;
import io.tidemark.generate.TrafficGenerator;
import io.tidemark.generate.TrafficProfile;
import io.tidemark.generate.TrafficSpec;
import io.tidemark.lakehouse.Watermark;
import io.tidemark.lakehouse.pipeline.KpiAggregation;
import io.tidemark.lakehouse.pipeline.Pipeline;
import io.tidemark.lakehouse.pipeline.PipelineParser;
import io.tidemark.stream.RecordClassifier;

/**
 * The generator's payments profile against the stream's classification with the shipped payments
 * pipeline: 4,000 generated messages, half of them malformed, each with the Kafka timestamp of the
 * event clock it was generated at. Every valid payment must decode to the values its JSON holds, be
 * late exactly when it was generated late, and count in merchant_1m when on time; every malformed one
 * must get exactly the reason its {@link PaymentKind} names.
 *
 * <p>The classification is the stream's own ({@link RecordClassifier#classify} over Kafka-shaped rows,
 * built from the pipeline's event table and the stream's default settings), and the KPI partials
 * {@link KpiAggregation}'s. No broker.
 */
class PaymentsTrafficClassificationTest {
    private static final Instant START = Instant.parse("2026-11-29T12:00:00Z");
    private static final int COUNT = 4_000;
    /** The stream's defaults: max-message-bytes, clock-skew, max-event-age. */
    private static final int MAX_MESSAGE_BYTES = 65_536;
    private static final Duration CLOCK_SKEW = Duration.ofMinutes(5);
    private static final Duration MAX_EVENT_AGE = Duration.ofDays(365);
    private static final JsonMapper JSON = JsonMapper.builder().build();

    private static SparkSession spark;
    /** Whether this class started the session (and so stops it): in a run of the whole module, another test's may be running. */
    private static boolean ownSession;

    @BeforeAll
    static void start() {
        ownSession = SparkSession.getDefaultSession().isEmpty();
        spark = ownSession
                ? SparkSession.builder().master("local[1]").appName("payments-traffic-classification-test")
                        .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
                        .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
                        .config("spark.sql.shuffle.partitions", "2").config("spark.sql.session.timeZone", "UTC").getOrCreate()
                : SparkSession.getDefaultSession().get();
    }

    @AfterAll
    static void stop() {
        if (ownSession) {
            spark.stop();
        }
    }

    /** A TIMESTAMP as collected: an Instant or a java.sql.Timestamp, depending on the session's java8API setting. */
    private static Instant instant(Object value) {
        return value instanceof Timestamp t ? t.toInstant() : (Instant) value;
    }

    @Test
    void everyGeneratedPaymentLandsWhereItsKindSays() throws Exception {
        Pipeline payments = PipelineParser.shipped("payments");
        Pipeline.EventTable events = payments.events();
        // The generator writes the pipeline's events to the pipeline's topic.
        assertThat(events.topic()).isEqualTo(TrafficProfile.PAYMENTS.defaultTopic());
        assertThat(events.columns().stream().map(Pipeline.Column::name)).containsExactlyElementsOf(TrafficProfile.PAYMENTS.fields());
        assertThat(events.checks().stream().map(Pipeline.Check::reason)).containsExactly("POSITIVE_AMOUNT", "KNOWN_STATUS", "COUNTRY_CODE");
        Pipeline.KpiTable merchant1m = payments.table("merchant_1m").orElseThrow();
        RecordClassifier classifier = new RecordClassifier(payments, MAX_MESSAGE_BYTES, CLOCK_SKEW, MAX_EVENT_AGE);

        TrafficSpec spec = TrafficSpec.builder().profile(TrafficProfile.PAYMENTS).count(COUNT).invalidFraction(0.5).lateFraction(0.1)
                .eventClockStart(START).seed(11).build();
        assertThat(spec.oversizedBytes()).isGreaterThan(MAX_MESSAGE_BYTES);
        TrafficGenerator generator = new TrafficGenerator(spec);
        StructType kafkaSchema = StructType.fromDDL("key BINARY, value BINARY, topic STRING, partition INT, offset BIGINT, timestamp TIMESTAMP");
        List<GeneratedMessage> messages = new ArrayList<>();
        List<Row> records = new ArrayList<>();
        while (generator.hasNext()) {
            // The Kafka timestamp is the event clock the message was generated at, as if sent at once.
            Instant ingest = Instant.ofEpochMilli(generator.eventClockMillis());
            GeneratedMessage m = generator.next();
            records.add(RowFactory.create(m.key(), m.value(), events.topic(), 0, (long) messages.size(), Timestamp.from(ingest)));
            messages.add(m);
        }
        // The watermark of a stream that has seen the backlog's start: the lateness (10 minutes) behind it. Late
        // payments (20 to 60 minutes behind the clock) are in closed windows, on-time ones (at most 2) in open ones.
        Watermark watermark = Watermark.ofMillis(START.minus(events.lateness()).toEpochMilli());
        Dataset<Row> classified = classifier.classify(spark.createDataFrame(records, kafkaSchema), watermark.millis()).cache();
        try {
            Map<Long, Boolean> lateByOffset = new TreeMap<>();
            for (Row r : classified.filter("reason IS NULL").select(col("kafka_offset"), col("is_late")).collectAsList()) {
                lateByOffset.put(r.getLong(0), r.getBoolean(1));
            }
            List<Row> rows = classified.select("kafka_offset", "reason", "detail", "txn_id", "user_id", "merchant_id", "country", "amount",
                    "status", "ts").orderBy("kafka_offset").collectAsList();
            assertThat(rows).hasSize(COUNT);

            Map<PaymentKind, Integer> generated = new EnumMap<>(PaymentKind.class);
            Map<String, Long> expectedReasons = new TreeMap<>();
            Map<String, Long> reasons = new TreeMap<>();
            BigDecimal onTimeApproved = BigDecimal.ZERO;
            for (int i = 0; i < COUNT; i++) {
                GeneratedMessage m = messages.get(i);
                Row r = rows.get(i);
                PaymentKind kind = m.paymentKind();
                generated.merge(kind, 1, Integer::sum);
                assertThat(r.getLong(0)).isEqualTo(i);
                String reason = r.getString(1);
                if (reason != null) {
                    reasons.merge(reason, 1L, Long::sum);
                }
                if (!kind.isValid()) {
                    expectedReasons.merge(kind.expectedReason(), 1L, Long::sum);
                    assertThat(reason).as("%s: %s (detail: %s)", kind, m, r.getString(2)).isEqualTo(kind.expectedReason());
                    if (kind == PaymentKind.NON_POSITIVE_AMOUNT) {
                        assertThat(r.getString(2)).startsWith("CHECK positive_amount (amount > 0) is false for amount = ");
                    }
                    continue;
                }
                assertThat(reason).as("%s: %s (detail: %s)", kind, m, r.getString(2)).isNull();
                assertThat(lateByOffset.get((long) i)).as("late: %s", m).isEqualTo(kind == PaymentKind.LATE);
                JsonNode json = JSON.readTree(new String(m.value(), StandardCharsets.UTF_8));
                assertThat(List.of(r.getString(3), r.getString(4), r.getString(5), r.getString(6), r.getString(8))).as("%s", m)
                        .containsExactly(json.get("txn_id").textValue(), json.get("user_id").textValue(),
                                json.get("merchant_id").textValue(), json.get("country").textValue(), json.get("status").textValue());
                BigDecimal amount = json.get("amount").decimalValue();
                assertThat(r.getDecimal(7)).as("%s", m).isEqualByComparingTo(amount).isPositive();
                assertThat(r.getDecimal(7).scale()).isEqualTo(2);
                assertThat(instant(r.get(9))).as("%s", m).isEqualTo(Instant.ofEpochMilli(m.eventTimeMillis()));
                if (kind == PaymentKind.ON_TIME && json.get("status").textValue().equals("approved")) {
                    onTimeApproved = onTimeApproved.add(amount);
                }
            }
            // Every malformed kind was there to be checked, and the reasons add up kind by kind.
            assertThat(generated.keySet()).containsAll(PaymentKind.invalidKinds());
            assertThat(reasons).isEqualTo(expectedReasons);
            assertThat(lateByOffset).hasSize(generated.get(PaymentKind.ON_TIME) + generated.get(PaymentKind.LATE));

            // The on-time payments, and only they, count in merchant_1m's windows still open under the watermark.
            Row totals = new KpiAggregation(merchant1m, events.eventTime())
                    .partials(classified.filter("reason IS NULL"), watermark)
                    .selectExpr("sum(txns)", "sum(approved_amount)").first();
            assertThat(totals.getLong(0)).isEqualTo((long) generated.get(PaymentKind.ON_TIME));
            assertThat(totals.getDecimal(1)).isEqualByComparingTo(onTimeApproved);
        } finally {
            classified.unpersist();
        }
    }
}
