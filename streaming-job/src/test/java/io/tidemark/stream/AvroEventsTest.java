package io.tidemark.stream;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.Arrays;

import org.apache.avro.Conversions;
import org.apache.avro.LogicalTypes;
import org.apache.avro.Schema;
import org.apache.avro.generic.GenericData;
import org.apache.avro.generic.GenericRecord;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import io.tidemark.lakehouse.SchemaRegistry;
import io.tidemark.pipeline.Pipeline;
import io.tidemark.pipeline.PipelineParser;

/**
 * The Avro decoder against schema files (a registry exported to {@code <id>.avsc}): messages in
 * Confluent's wire format written with Avro's own writer, two compatible writer schemas of one topic,
 * and each way a message is not an event, with its reason.
 */
class AvroEventsTest {
    private static final long INGEST = micros("2026-11-29T12:00:00Z");

    /** v1: n as int, ts in milliseconds, amount decimal(12,2). */
    static final String V1 = """
            {"type": "record", "name": "Order", "namespace": "shop", "fields": [
              {"name": "id", "type": "string"},
              {"name": "n", "type": "int"},
              {"name": "amount", "type": {"type": "bytes", "logicalType": "decimal", "precision": 12, "scale": 2}},
              {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}},
              {"name": "note", "type": ["null", "string"], "default": null}
            ]}""";
    /** v2, a compatible evolution: n widened to long, ts in microseconds, amount with 3 decimals, note dropped, channel added. */
    static final String V2 = """
            {"type": "record", "name": "Order", "namespace": "shop", "fields": [
              {"name": "id", "type": "string"},
              {"name": "n", "type": "long"},
              {"name": "amount", "type": {"type": "bytes", "logicalType": "decimal", "precision": 14, "scale": 3}},
              {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-micros"}},
              {"name": "channel", "type": ["null", "string"], "default": null}
            ]}""";
    /** amount as a string: not readable as DECIMAL. */
    static final String AMOUNT_AS_STRING = V1.replace("{\"type\": \"bytes\", \"logicalType\": \"decimal\", \"precision\": 12, \"scale\": 2}",
            "\"string\"");
    /** No id: a NOT NULL column missing. */
    static final String NO_ID = V1.replace("{\"name\": \"id\", \"type\": \"string\"},", "");
    /** id nullable in the writer: a null id is NULL_FIELD for this record only. */
    static final String NULLABLE_ID = V1.replace("{\"name\": \"id\", \"type\": \"string\"}", "{\"name\": \"id\", \"type\": [\"null\", \"string\"]}");

    @TempDir
    static Path schemas;
    static EventDecoder decoder;

    @BeforeAll
    static void registry() throws IOException {
        Files.writeString(schemas.resolve("1.avsc"), V1);
        Files.writeString(schemas.resolve("2.avsc"), V2);
        Files.writeString(schemas.resolve("3.avsc"), AMOUNT_AS_STRING);
        Files.writeString(schemas.resolve("4.avsc"), NO_ID);
        Files.writeString(schemas.resolve("5.avsc"), NULLABLE_ID);
        Pipeline p = PipelineParser.parse("orders.sql", pipeline(schemas.toString()));
        decoder = new EventDecoder(p.events(), 4096, 5 * 60 * 1_000_000L, 365 * 86_400_000_000L);
    }

    static String pipeline(String registry) {
        return """
                CREATE TABLE events (
                  id STRING NOT NULL, n BIGINT NOT NULL, amount DECIMAL(12,2) NOT NULL, ts TIMESTAMP NOT NULL, note STRING,
                  CONSTRAINT positive_amount CHECK (amount > 0)
                ) USING kafka OPTIONS (topic 'orders', format 'avro', schema_registry '%s', event_time 'ts', lateness '1 minute');
                CREATE STREAMING TABLE orders_1m AS
                SELECT window(ts, '1 minute') AS w, count(*) AS orders, sum(amount) AS amount FROM STREAM events GROUP BY window(ts, '1 minute');
                """.formatted(registry);
    }

    private static long micros(String iso) {
        Instant i = Instant.parse(iso);
        return i.getEpochSecond() * 1_000_000L + i.getNano() / 1000;
    }

    /** A record of {@code schema} in Confluent's wire format with schema id {@code id}, written by Avro. */
    static byte[] wire(int id, String schema, Object... fieldValues) throws IOException {
        Schema s = new Schema.Parser().parse(schema);
        GenericRecord r = new GenericData.Record(s);
        for (int i = 0; i < fieldValues.length; i += 2) {
            String name = (String) fieldValues[i];
            Object v = fieldValues[i + 1];
            Schema fs = s.getField(name).schema();
            if (v instanceof BigDecimal d) {
                v = new Conversions.DecimalConversion().toBytes(d, fs, LogicalTypes.fromSchema(fs));
            }
            r.put(name, v);
        }
        return SchemaRegistry.wire(id, r);
    }

    @Test
    void twoWriterSchemasOfOneTopicReadAsTheDeclaredColumns() throws IOException {
        long tsMillis = Instant.parse("2026-11-29T11:59:30.123Z").toEpochMilli();
        EventDecoder.Decoded v1 = decoder.decode(wire(1, V1, "id", "o-1", "n", 7, "amount", new BigDecimal("12.50"), "ts", tsMillis,
                "note", "first"), INGEST);
        assertThat(v1.reason).isNull();
        assertThat(v1.deferred).isNull();
        assertThat(v1.values).containsExactly("o-1", 7L, new BigDecimal("12.50"), Instant.parse("2026-11-29T11:59:30.123Z"), "first");
        assertThat(v1.eventMicros).isEqualTo(micros("2026-11-29T11:59:30.123Z"));
        assertThat(v1.payload).isEqualTo("{\"id\": \"o-1\", \"n\": 7, \"amount\": 12.50, \"ts\": \"2026-11-29T11:59:30.123Z\", \"note\": \"first\"}");

        long tsMicros = micros("2026-11-29T11:59:31.000456Z");
        EventDecoder.Decoded v2 = decoder.decode(wire(2, V2, "id", "o-2", "n", 8_000_000_000L, "amount", new BigDecimal("3.100"), "ts", tsMicros,
                "channel", "app"), INGEST);
        assertThat(v2.reason).isNull();
        assertThat(v2.values).containsExactly("o-2", 8_000_000_000L, new BigDecimal("3.10"), Instant.parse("2026-11-29T11:59:31.000456Z"), null);
        assertThat(v2.payload).contains("\"channel\": \"app\"");
    }

    @Test
    void eachWayAMessageIsNotAnEventHasItsReason() throws IOException {
        long ts = Instant.parse("2026-11-29T11:59:30Z").toEpochMilli();
        byte[] good = wire(1, V1, "id", "o-1", "n", 7, "amount", new BigDecimal("12.50"), "ts", ts);
        assertReason(wire(99, V1, "id", "o-1", "n", 7, "amount", new BigDecimal("1.00"), "ts", ts), "UNKNOWN_SCHEMA",
                "schema id 99 is not in the schema registry " + schemas);
        assertReason("{\"id\": \"o-1\"}".getBytes(StandardCharsets.UTF_8), "NOT_AVRO", "first byte is 0x7b, not the Confluent wire format's 0x00");
        assertReason(new byte[] {0, 0, 1}, "NOT_AVRO", "message is 3 bytes, shorter than the 5-byte Confluent wire-format header");
        assertReason(Arrays.copyOf(good, good.length - 3), "BAD_AVRO", null);
        byte[] trailing = Arrays.copyOf(good, good.length + 2);
        assertReason(trailing, "BAD_AVRO", "bytes left after the record of schema id 1");
        assertReason(wire(3, AMOUNT_AS_STRING, "id", "o-1", "n", 7, "amount", "12.50", "ts", ts), "SCHEMA_MISMATCH",
                "amount is \"string\" in schema id 3; the pipeline declares DECIMAL(12,2), which reads bytes or fixed with logicalType decimal");
        assertReason(wire(4, NO_ID, "n", 7, "amount", new BigDecimal("1.00"), "ts", ts), "MISSING_FIELD", "id is missing from schema id 4 (shop.Order)");
        assertReason(wire(5, NULLABLE_ID, "id", null, "n", 7, "amount", new BigDecimal("1.00"), "ts", ts), "NULL_FIELD", "id is null");
        assertReason(wire(1, V1, "id", "o-1", "n", 7, "amount", new BigDecimal("12.5"), "ts", ts), null, null);
        // Valid bytes of a compatible schema with a value the declared type cannot hold: three decimals in DECIMAL(12,2).
        assertReason(wire(2, V2, "id", "o-1", "n", 7L, "amount", new BigDecimal("1.005"), "ts", ts * 1000), "WRONG_TYPE",
                "amount is 1.005, more decimals than DECIMAL(12,2) holds");
        // The id of a nullable-id record that is not null reads.
        assertReason(wire(5, NULLABLE_ID, "id", "o-9", "n", 7, "amount", new BigDecimal("1.00"), "ts", ts), null, null);
    }

    @Test
    void anEventTimeOutOfRangeIsDeferredAsForJson() throws IOException {
        long future = Instant.parse("2026-11-29T13:00:00Z").toEpochMilli();
        EventDecoder.Decoded d = decoder.decode(wire(1, V1, "id", "o-1", "n", 7, "amount", new BigDecimal("1.00"), "ts", future), INGEST);
        assertThat(d.reason).isNull();
        assertThat(d.deferred).isEqualTo("FUTURE_EVENT_TIME");
        assertThat(d.values[3]).isNull();
    }

    private static void assertReason(byte[] message, String reason, String detail) {
        EventDecoder.Decoded d = decoder.decode(message, INGEST);
        assertThat(d.reason).as("reason of %s", Arrays.toString(message)).isEqualTo(reason);
        if (detail != null) {
            assertThat(d.detail).isEqualTo(detail);
        }
        if (reason == null) {
            assertThat(d.values).isNotNull();
        }
    }
}
