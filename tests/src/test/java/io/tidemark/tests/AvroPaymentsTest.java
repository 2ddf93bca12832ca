package io.tidemark.tests;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.math.BigDecimal;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import org.apache.avro.Conversions;
import org.apache.avro.LogicalTypes;
import org.apache.avro.Schema;
import org.apache.avro.generic.GenericData;
import org.apache.avro.generic.GenericDatumWriter;
import org.apache.avro.generic.GenericRecord;
import org.apache.spark.sql.Row;
import org.junit.jupiter.api.Test;

import io.tidemark.lakehouse.SchemaRegistry;
import io.tidemark.lakehouse.Lakehouse;
import io.tidemark.lakehouse.Lakehouse.Table;
import io.tidemark.lakehouse.RequestRefusedException;
import io.tidemark.lakehouse.TidemarkConfig;
import io.tidemark.operations.ConservationCheck;
import io.tidemark.stream.StreamingJob;

/**
 * The payments pipeline with {@code format 'avro'} on the real broker: payments in Confluent's wire
 * format written by Avro under two writer schemas of one topic, every Avro way of not being an event
 * (and the pipeline's CHECKs, and a tombstone) in dead_letter with its reason and bytes, each payment in
 * raw_events with exactly the values written, the tables conserving every record. The writer schemas
 * come from schema files ({@code <id>.avsc}): no Confluent-compatible registry can be installed on
 * this machine (docs/testing.md says why). A missing registry refuses the start in one line;
 * one that goes away mid-run holds the batch that needs a new schema until it is back, and nothing is
 * lost.
 */
class AvroPaymentsTest extends OnSharedInfrastructure {
    static final String V1 = """
            {"type": "record", "name": "Payment", "namespace": "pay", "fields": [
              {"name": "txn_id", "type": "string"},
              {"name": "user_id", "type": "string"},
              {"name": "merchant_id", "type": "string"},
              {"name": "country", "type": "string"},
              {"name": "amount", "type": {"type": "bytes", "logicalType": "decimal", "precision": 12, "scale": 2}},
              {"name": "status", "type": "string"},
              {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}}
            ]}""";
    /** v2: a field added, the amount's precision widened, the time in microseconds. */
    static final String V2 = V1.replace("\"precision\": 12", "\"precision\": 16").replace("timestamp-millis", "timestamp-micros")
            .replace("{\"name\": \"status\", \"type\": \"string\"},", "{\"name\": \"status\", \"type\": \"string\"},\n"
                    + "  {\"name\": \"channel\", \"type\": [\"null\", \"string\"], \"default\": null},");
    static final String AMOUNT_AS_STRING = V1.replace("{\"type\": \"bytes\", \"logicalType\": \"decimal\", \"precision\": 12, \"scale\": 2}",
            "\"string\"");
    static final String NO_USER = V1.replace("{\"name\": \"user_id\", \"type\": \"string\"},", "");
    static final String NULLABLE_USER = V1.replace("{\"name\": \"user_id\", \"type\": \"string\"}",
            "{\"name\": \"user_id\", \"type\": [\"null\", \"string\"]}");
    /** v3, first used after the registry has gone away: one more optional field. */
    static final String V3 = V2.replace("{\"name\": \"channel\"", "{\"name\": \"device\", \"type\": [\"null\", \"string\"], \"default\": null},\n"
            + "  {\"name\": \"channel\"");

    static final List<String> COUNTRIES = List.of("US", "GB", "DE", "FR", "NL");
    /** The bad kinds, in turn, each with its expected reason. */
    static final List<String> BAD = List.of("UNKNOWN_SCHEMA", "NOT_AVRO", "BAD_AVRO", "SCHEMA_MISMATCH", "MISSING_FIELD", "NULL_FIELD",
            "POSITIVE_AMOUNT", "KNOWN_STATUS", "EMPTY");

    /** One payment as written; {@code reason} null for a valid one. */
    record Sent(long offset, byte[] value, String reason, Object[] columns) {
    }

    @Test
    void avroPaymentsOfTwoWriterSchemasLandAsWrittenAndTheRegistryIsWaitedFor() throws Exception {
        Path dir = infra.newDir("avro-payments");
        Path schemas = Files.createDirectories(dir.resolve("schemas"));
        Files.writeString(schemas.resolve("1.avsc"), V1);
        Files.writeString(schemas.resolve("2.avsc"), V2);
        Files.writeString(schemas.resolve("3.avsc"), AMOUNT_AS_STRING);
        Files.writeString(schemas.resolve("4.avsc"), NO_USER);
        Files.writeString(schemas.resolve("5.avsc"), NULLABLE_USER);
        String topic = "avro-payments-" + dir.getFileName();
        Path pipeline = pipeline(dir, topic, schemas.toString());
        infra.broker.createTopic(topic, 1);
        TidemarkConfig config = infra.config(dir, topic).set(TidemarkConfig.Key.PIPELINE, pipeline.toString())
                .set(TidemarkConfig.Key.MAX_OFFSETS_PER_TRIGGER, "500").set(TidemarkConfig.Key.TRIGGER, "1s").build();

        // A registry that is not there refuses the start, in one line, before anything is written.
        Path gone = dir.resolve("no-such-schemas");
        TidemarkConfig missing = infra.config(dir.resolve("missing"), topic).set(TidemarkConfig.Key.PIPELINE,
                pipeline(dir.resolve("missing"), topic, gone.toString()).toString()).build();
        assertThatThrownBy(() -> new StreamingJob(infra.spark, missing, null).start(true)).isInstanceOf(RequestRefusedException.class)
                .hasMessage("the schema directory " + gone + " does not exist: start the registry, or correct schema_registry in "
                        + dir.resolve("missing").resolve("payments.sql"));

        Instant begin = Instant.now().minus(3, ChronoUnit.HOURS).truncatedTo(ChronoUnit.MINUTES);
        List<Sent> sent = new ArrayList<>();
        List<KafkaFixtures.Raw> first = messages(sent, 0, 1_500, begin, false);
        KafkaFixtures.sendRaw(infra.broker.bootstrapServers(), topic, 0, first);
        LiveStream stream = new LiveStream(infra.spark, config);
        stream.drain();
        Lakehouse lakehouse = Lakehouse.of(config);
        assertThat(lakehouse.read(infra.spark, Table.RAW_EVENTS).count()).isEqualTo(sent.stream().filter(s -> s.reason() == null).count());
        // Read from the files: while the stream waits, its tasks hold both of Spark's cores here, and a query would wait behind them.
        Path progressLog = Path.of(config.lakehouseUri(), "stream_progress", "_delta_log");
        long batchesBefore = TableChecks.commits(progressLog);

        // The registry goes away; the next messages need a schema id the stream has not seen yet.
        Path away = dir.resolve("schemas-away");
        Files.move(schemas, away);
        List<KafkaFixtures.Raw> second = messages(sent, 1_500, 500, begin, true);
        KafkaFixtures.sendRaw(infra.broker.bootstrapServers(), topic, 0, second);
        Thread.sleep(4_000);
        stream.keepRunning();
        assertThat(stream.failures).as("the stream waits, it does not fail").isEmpty();
        assertThat(stream.batchRunning()).as("a batch is held, waiting for the registry").isTrue();
        assertThat(TableChecks.commits(progressLog)).as("the waiting batch has not committed").isEqualTo(batchesBefore);
        Files.writeString(away.resolve("6.avsc"), V3);
        Files.move(away, schemas);
        stream.drainAndStop();
        assertThat(stream.failures).isEmpty();

        // Every payment in raw_events with the values written; every other message in dead_letter with its reason and bytes.
        List<Sent> valid = sent.stream().filter(s -> s.reason() == null).toList();
        List<Row> raw = infra.spark.sql("SELECT kafka_offset, txn_id, user_id, merchant_id, country, amount, status, ts FROM "
                + lakehouse.ref(Table.RAW_EVENTS) + " ORDER BY kafka_offset").collectAsList();
        assertThat(raw).hasSize(valid.size());
        for (int i = 0; i < raw.size(); i++) {
            Row r = raw.get(i);
            assertThat(r.getLong(0)).isEqualTo(valid.get(i).offset());
            Object[] got = new Object[7];
            for (int c = 0; c < 7; c++) {
                got[c] = r.get(c + 1);
            }
            got[6] = r.get(7) instanceof java.sql.Timestamp t ? t.toInstant() : r.get(7);
            assertThat(got).as("offset %d", r.getLong(0)).containsExactly(valid.get(i).columns());
        }
        Map<String, Long> expectedReasons = new TreeMap<>();
        sent.stream().filter(s -> s.reason() != null).forEach(s -> expectedReasons.merge(s.reason(), 1L, Long::sum));
        Map<String, Long> reasons = new TreeMap<>();
        infra.spark.sql("SELECT reason, count(*) FROM " + lakehouse.ref(Table.DEAD_LETTER) + " GROUP BY reason").collectAsList()
                .forEach(r -> reasons.put(r.getString(0), r.getLong(1)));
        assertThat(reasons).isEqualTo(expectedReasons);
        assertThat(reasons.keySet()).containsExactlyInAnyOrderElementsOf(BAD);
        for (Row d : infra.spark.sql("SELECT kafka_offset, raw_bytes FROM " + lakehouse.ref(Table.DEAD_LETTER) + " WHERE reason <> 'EMPTY'")
                .collectAsList()) {
            assertThat((byte[]) d.get(1)).isEqualTo(sent.get((int) d.getLong(0)).value());
        }
        ConservationCheck.Report report = ConservationCheck.check(infra.spark, lakehouse, (long) sent.size());
        assertThat(report.violations()).as(report.summary()).isEmpty();
        assertThat(report.duplicates()).isZero();
        assertThat(report.rawEvents()).isEqualTo(valid.size());
        assertThat(report.lateEvents()).isPositive();
        // the payload: the record as its writer schema holds it, v3's new field included
        assertThat(infra.spark.sql("SELECT payload FROM " + lakehouse.ref(Table.RAW_EVENTS) + " WHERE kafka_offset = 1501").first().getString(0))
                .isEqualTo(json(sent.get(1501)));
    }

    private static Path pipeline(Path dir, String topic, String registry) throws Exception {
        Files.createDirectories(dir);
        String text = Files.readString(Path.of(System.getProperty("user.dir")).getParent().resolve("pipelines/payments.sql"))
                .replace("topic 'payments'", "topic '" + topic + "'")
                .replace("format 'json'", "format 'avro',\n  schema_registry '" + registry + "'");
        return Files.writeString(dir.resolve("payments.sql"), text);
    }

    /**
     * {@code count} messages from offset {@code from}: a payment every 3 seconds of event time from
     * {@code begin}, every 40th 90 minutes behind (late from the third batch on: the watermark in force
     * is the one of the batch before last), every 25th one of {@link #BAD} in turn. Valid
     * payments alternate between writer schemas 1 and 2, or use schema 6 when {@code v3}.
     */
    private static List<KafkaFixtures.Raw> messages(List<Sent> sent, int from, int count, Instant begin, boolean v3) throws Exception {
        List<KafkaFixtures.Raw> out = new ArrayList<>();
        for (int i = from; i < from + count; i++) {
            Instant ts = begin.plusSeconds(3L * i).minus(i % 40 == 39 ? 90 : 0, ChronoUnit.MINUTES).plusMillis(i % 1000);
            String status = i % 10 == 3 ? "declined" : i % 50 == 7 ? "refunded" : "approved";
            Object[] columns = {String.format("txn-%06d", i), String.format("usr-%04d", (i * 7) % 150), String.format("mer-%03d", i % 23),
                    COUNTRIES.get(i % COUNTRIES.size()), new BigDecimal((i * 37) % 5000 + 1).movePointLeft(2), status, ts};
            String reason = null;
            byte[] value;
            if (i % 25 == 24) {
                reason = BAD.get((i / 25) % BAD.size());
                value = switch (reason) {
                    case "UNKNOWN_SCHEMA" -> wire(99, V1, columns, null);
                    case "NOT_AVRO" -> ("{\"txn_id\": \"" + columns[0] + "\"}").getBytes(java.nio.charset.StandardCharsets.UTF_8);
                    case "BAD_AVRO" -> Arrays.copyOf(wire(1, V1, columns, null), 12);
                    case "SCHEMA_MISMATCH" -> wire(3, AMOUNT_AS_STRING, with(columns, 4, columns[4].toString()), null);
                    case "MISSING_FIELD" -> wire(4, NO_USER, columns, null);
                    case "NULL_FIELD" -> wire(5, NULLABLE_USER, with(columns, 1, null), null);
                    case "POSITIVE_AMOUNT" -> wire(1, V1, with(columns, 4, new BigDecimal("-1.00")), null);
                    case "KNOWN_STATUS" -> wire(2, V2, with(columns, 5, "pending"), "web");
                    default -> new byte[0];
                };
            } else if (v3) {
                value = wire(6, V3, columns, "app");
            } else {
                value = i % 2 == 0 ? wire(1, V1, columns, null) : wire(2, V2, columns, "pos");
            }
            sent.add(new Sent(i, value, reason, columns));
            out.add(new KafkaFixtures.Raw(value, Instant.now()));
        }
        return out;
    }

    private static Object[] with(Object[] columns, int i, Object v) {
        Object[] c = columns.clone();
        c[i] = v;
        return c;
    }

    /** The payment in Confluent's wire format, written by Avro's GenericDatumWriter with writer schema {@code id}. */
    static byte[] wire(int id, String schema, Object[] columns, String channel) throws Exception {
        Schema s = new Schema.Parser().parse(schema);
        GenericRecord r = new GenericData.Record(s);
        String[] names = {"txn_id", "user_id", "merchant_id", "country", "amount", "status", "ts"};
        for (int c = 0; c < names.length; c++) {
            Schema.Field f = s.getField(names[c]);
            if (f == null) {
                continue;
            }
            Object v = columns[c];
            if (v instanceof BigDecimal d) {
                v = new Conversions.DecimalConversion().toBytes(d, f.schema(), LogicalTypes.fromSchema(f.schema()));
            } else if (v instanceof Instant t) {
                v = f.schema().getLogicalType() instanceof LogicalTypes.TimestampMicros ? ChronoUnit.MICROS.between(Instant.EPOCH, t) : t.toEpochMilli();
            }
            r.put(names[c], v);
        }
        if (s.getField("channel") != null) {
            r.put("channel", channel);
        }
        return SchemaRegistry.wire(id, r);
    }

    /** What raw_events.payload holds for a v3 payment: Avro's JSON of the record, its logical types as values. */
    private static String json(Sent s) {
        Object[] c = s.columns();
        return "{\"txn_id\": \"" + c[0] + "\", \"user_id\": \"" + c[1] + "\", \"merchant_id\": \"" + c[2] + "\", \"country\": \"" + c[3]
                + "\", \"amount\": " + c[4] + ", \"status\": \"" + c[5] + "\", \"device\": null, \"channel\": \"app\", \"ts\": \"" + c[6] + "\"}";
    }
}
