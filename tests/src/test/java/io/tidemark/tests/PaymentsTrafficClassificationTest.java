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

import io.tidemark.generate.EventFormat;
import io.tidemark.generate.GeneratedMessage;
import io.tidemark.generate.PaymentKind;
import io.tidemark.generate.TrafficGenerator;
import io.tidemark.generate.TrafficProfile;
import io.tidemark.generate.TrafficSpec;
import io.tidemark.pipeline.Watermark;
import io.tidemark.pipeline.KpiAggregation;
import io.tidemark.pipeline.Pipeline;
import io.tidemark.pipeline.PipelineParser;
import io.tidemark.stream.RecordClassifier;
import io.tidemark.testing.LocalSpark;

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
                ? LocalSpark.builder("payments-traffic-classification-test").getOrCreate()
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

    /**
     * The messages of {@code spec}, appended to {@code messages}, as the Kafka source's rows: offsets 0, 1,
     * ... of one partition, each with the Kafka timestamp of the event clock it was generated at, as if
     * sent at once.
     */
    private static Dataset<Row> kafkaRows(TrafficSpec spec, List<GeneratedMessage> messages) {
        TrafficGenerator generator = new TrafficGenerator(spec);
        List<Row> records = new ArrayList<>();
        while (generator.hasNext()) {
            Instant ingest = Instant.ofEpochMilli(generator.eventClockMillis());
            GeneratedMessage m = generator.next();
            records.add(RowFactory.create(m.key(), m.value(), spec.topic(), 0, (long) messages.size(), Timestamp.from(ingest)));
            messages.add(m);
        }
        return spark.createDataFrame(records,
                StructType.fromDDL("key BINARY, value BINARY, topic STRING, partition INT, offset BIGINT, timestamp TIMESTAMP"));
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
        List<GeneratedMessage> messages = new ArrayList<>();
        Dataset<Row> kafkaRows = kafkaRows(spec, messages);
        // The watermark of a stream that has seen the backlog's start: the lateness (10 minutes) behind it. Late
        // payments (20 to 60 minutes behind the clock) are in closed windows, on-time ones (at most 2) in open ones.
        Watermark watermark = Watermark.ofMillis(START.minus(events.lateness()).toEpochMilli());
        Dataset<Row> classified = classifier.classify(kafkaRows, watermark.millis()).cache();
        try {
            Map<Long, Boolean> lateByOffset = new TreeMap<>();
            for (Row r : classified.filter("__tm_reason IS NULL").select(col("kafka_offset"), col("is_late")).collectAsList()) {
                lateByOffset.put(r.getLong(0), r.getBoolean(1));
            }
            List<Row> rows = classified.select("kafka_offset", "__tm_reason", "__tm_detail", "txn_id", "user_id", "merchant_id", "country", "amount",
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
            assertThat(generated.keySet()).containsAll(PaymentKind.invalidKinds(EventFormat.JSON));
            assertThat(reasons).isEqualTo(expectedReasons);
            assertThat(lateByOffset).hasSize(generated.get(PaymentKind.ON_TIME) + generated.get(PaymentKind.LATE));

            // The on-time payments, and only they, count in merchant_1m's windows still open under the watermark.
            Row totals = new KpiAggregation(merchant1m, events.eventTime())
                    .partials(classified.filter("__tm_reason IS NULL"), watermark)
                    .selectExpr("sum(txns)", "sum(approved_amount)").first();
            assertThat(totals.getLong(0)).isEqualTo((long) generated.get(PaymentKind.ON_TIME));
            assertThat(totals.getDecimal(1)).isEqualByComparingTo(onTimeApproved);
        } finally {
            classified.unpersist();
        }
    }

    /**
     * The same with the payments in Avro ({@code format 'avro'}, the writer schemas registered in a
     * directory registry by the generator's own registration): every Avro kind gets exactly its reason
     * from the stream's decoder, every valid payment decodes to the values it was written with.
     */
    @Test
    void everyGeneratedAvroPaymentLandsWhereItsKindSays(@org.junit.jupiter.api.io.TempDir java.nio.file.Path dir) throws Exception {
        String text = java.nio.file.Files.readString(java.nio.file.Path.of(System.getProperty("user.dir")).getParent()
                .resolve("pipelines/payments.sql")).replace("format 'json'", "format 'avro',\n  schema_registry '" + dir + "'");
        Pipeline payments = PipelineParser.parse("payments-avro.sql", text);
        RecordClassifier classifier = new RecordClassifier(payments, MAX_MESSAGE_BYTES, CLOCK_SKEW, MAX_EVENT_AGE);
        io.tidemark.lakehouse.SchemaRegistry registry = new io.tidemark.lakehouse.SchemaRegistry(dir.toString(), Duration.ofSeconds(5));
        Map<String, Integer> ids = io.tidemark.generate.AvroTraffic.register(TrafficProfile.PAYMENTS, "payments", registry::register);
        // A directory registry hands out 1, 2, ... in the order of registration; registering again finds the same ids.
        assertThat(ids.values()).containsExactlyElementsOf(java.util.stream.IntStream.rangeClosed(1, 23).boxed().toList());
        assertThat(io.tidemark.generate.AvroTraffic.register(TrafficProfile.PAYMENTS, "payments", registry::register)).isEqualTo(ids);

        TrafficSpec spec = TrafficSpec.builder().profile(TrafficProfile.PAYMENTS).count(COUNT).invalidFraction(0.5).lateFraction(0.1)
                .eventClockStart(START).seed(13).avro(ids).build();
        List<GeneratedMessage> messages = new ArrayList<>();
        Dataset<Row> kafkaRows = kafkaRows(spec, messages);
        Watermark watermark = Watermark.ofMillis(START.minus(payments.events().lateness()).toEpochMilli());
        Dataset<Row> classified = classifier.classify(kafkaRows, watermark.millis()).cache();
        try {
            List<Row> rows = classified.select("kafka_offset", "__tm_reason", "__tm_detail", "txn_id", "user_id", "merchant_id", "country", "amount",
                    "status", "ts", "is_late").orderBy("kafka_offset").collectAsList();
            assertThat(rows).hasSize(COUNT);
            Map<org.apache.avro.Schema, org.apache.avro.generic.GenericDatumReader<org.apache.avro.generic.GenericRecord>> readers =
                    new java.util.HashMap<>();
            Map<PaymentKind, Integer> generated = new EnumMap<>(PaymentKind.class);
            Map<String, Long> expectedReasons = new TreeMap<>();
            Map<String, Long> reasons = new TreeMap<>();
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
                    continue;
                }
                assertThat(reason).as("%s: %s (detail: %s)", kind, m, r.getString(2)).isNull();
                assertThat(r.getBoolean(10)).as("late: %s", m).isEqualTo(kind == PaymentKind.LATE);
                // The values written, read back with Avro's reader and the writer schema of the message's id.
                org.apache.avro.Schema writer = registry.writerSchema(java.nio.ByteBuffer.wrap(m.value(), 1, 4).getInt()).orElseThrow();
                org.apache.avro.io.BinaryDecoder d = org.apache.avro.io.DecoderFactory.get().binaryDecoder(m.value(), 5, m.value().length - 5, null);
                org.apache.avro.generic.GenericRecord w = readers.computeIfAbsent(writer, org.apache.avro.generic.GenericDatumReader::new).read(null, d);
                assertThat(List.of(r.getString(3), r.getString(4), r.getString(5), r.getString(6), r.getString(8))).as("%s", m)
                        .containsExactly(w.get("txn_id").toString(), w.get("user_id").toString(), w.get("merchant_id").toString(),
                                w.get("country").toString(), w.get("status").toString());
                java.nio.ByteBuffer amount = (java.nio.ByteBuffer) w.get("amount");
                byte[] unscaled = new byte[amount.remaining()];
                amount.duplicate().get(unscaled);
                assertThat(r.getDecimal(7)).as("%s", m).isEqualTo(new BigDecimal(new java.math.BigInteger(unscaled), 2)).isPositive();
                assertThat(instant(r.get(9))).as("%s", m).isEqualTo(Instant.ofEpochMilli(m.eventTimeMillis()));
            }
            // Every Avro kind was there, JSON's own were not, and the reasons add up kind by kind.
            assertThat(generated.keySet()).containsAll(PaymentKind.invalidKinds(EventFormat.AVRO))
                    .doesNotContain(PaymentKind.TRUNCATED_JSON, PaymentKind.NOT_JSON, PaymentKind.WRONG_TYPE);
            assertThat(reasons).isEqualTo(expectedReasons);
            assertThat(reasons).containsKeys("NOT_AVRO", "UNKNOWN_SCHEMA", "BAD_AVRO", "SCHEMA_MISMATCH", "MISSING_FIELD", "NULL_FIELD");
        } finally {
            classified.unpersist();
        }
    }
}
