package io.tidemark.output;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.math.BigDecimal;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.util.Arrays;

import org.apache.avro.Conversions;
import org.apache.avro.LogicalTypes;
import org.apache.avro.Schema;
import org.apache.avro.generic.GenericDatumReader;
import org.apache.avro.generic.GenericRecord;
import org.apache.avro.io.DecoderFactory;
import org.apache.spark.sql.catalyst.expressions.GenericRowWithSchema;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import io.tidemark.lakehouse.SchemaRegistry;

/** The Avro output's schemas and records, read back with Avro's own reader; registration in a schema directory. */
class AvroRecordsTest {
    private static final StructType VALUE = new StructType()
            .add("table", DataTypes.StringType, false)
            .add("window_start", DataTypes.TimestampType, false)
            .add("merchant_id", DataTypes.StringType, true)
            .add("txns", DataTypes.LongType, false)
            .add("approved_amount", DataTypes.createDecimalType(18, 2), true)
            .add("users", DataTypes.IntegerType, true)
            .add("p95", DataTypes.DoubleType, true)
            .add("is_final", DataTypes.BooleanType, false)
            .add("version", DataTypes.LongType, false);

    @Test
    void theSchemaIsTheStructsFieldByFieldAndARecordReadsBackWithAvrosReader() throws Exception {
        Schema schema = AvroRecords.schemaOf(VALUE, "merchant_1m_value");
        assertThat(schema.toString()).isEqualTo("{\"type\":\"record\",\"name\":\"merchant_1m_value\",\"namespace\":\"io.tidemark.kpi\","
                + "\"fields\":[{\"name\":\"table\",\"type\":\"string\"},"
                + "{\"name\":\"window_start\",\"type\":{\"type\":\"long\",\"logicalType\":\"timestamp-millis\"}},"
                + "{\"name\":\"merchant_id\",\"type\":[\"null\",\"string\"],\"default\":null},"
                + "{\"name\":\"txns\",\"type\":\"long\"},"
                + "{\"name\":\"approved_amount\",\"type\":[\"null\",{\"type\":\"bytes\",\"logicalType\":\"decimal\",\"precision\":18,\"scale\":2}],"
                + "\"default\":null},"
                + "{\"name\":\"users\",\"type\":[\"null\",\"int\"],\"default\":null},"
                + "{\"name\":\"p95\",\"type\":[\"null\",\"double\"],\"default\":null},"
                + "{\"name\":\"is_final\",\"type\":\"boolean\"},"
                + "{\"name\":\"version\",\"type\":\"long\"}]}");

        Instant start = Instant.parse("2026-12-04T23:59:00Z");
        byte[] wire = new AvroRecords(schema, 7).encode(new GenericRowWithSchema(new Object[] {"merchant_1m", Timestamp.from(start), "mer-00042",
                12L, new BigDecimal("1234.5"), null, 99.25, true, 31L}, VALUE));
        // Confluent's wire format: magic byte 0, the schema id big-endian, then Avro's binary encoding
        assertThat(wire[0]).isZero();
        assertThat(ByteBuffer.wrap(wire, 1, 4).getInt()).isEqualTo(7);
        GenericRecord r = new GenericDatumReader<GenericRecord>(schema).read(null,
                DecoderFactory.get().binaryDecoder(Arrays.copyOfRange(wire, 5, wire.length), null));
        assertThat(r.get("table").toString()).isEqualTo("merchant_1m");
        assertThat(r.get("window_start")).isEqualTo(start.toEpochMilli());
        assertThat(r.get("merchant_id").toString()).isEqualTo("mer-00042");
        assertThat(r.get("txns")).isEqualTo(12L);
        Schema decimal = schema.getField("approved_amount").schema().getTypes().get(1);
        assertThat(new Conversions.DecimalConversion().fromBytes((ByteBuffer) r.get("approved_amount"), decimal, LogicalTypes.fromSchema(decimal)))
                .isEqualTo(new BigDecimal("1234.50"));
        assertThat(r.get("users")).isNull();
        assertThat(r.get("p95")).isEqualTo(99.25);
        assertThat(r.get("is_final")).isEqualTo(true);
        assertThat(r.get("version")).isEqualTo(31L);
    }

    @Test
    void aColumnWithoutAnAvroTypeIsRefusedWithWhatToDo() {
        StructType withArray = new StructType().add("table", DataTypes.StringType, false)
                .add("top", DataTypes.createArrayType(DataTypes.StringType), true);
        assertThatThrownBy(() -> AvroRecords.schemaOf(withArray, "t_value")).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("column top of t_value is ARRAY<STRING>, which the Avro output has no type for; publish it as JSON "
                        + "('output.kafka.format' = 'json') or cast the measure to a number or a string");
    }

    /** A directory registry: the same schema keeps its id, a new one takes the next free id, and the reader finds both. */
    @Test
    void aSchemaDirectoryGivesTheSameSchemaItsIdAndANewOneTheNextFreeId(@TempDir Path dir) throws Exception {
        Files.writeString(dir.resolve("1.avsc"), "{\"type\":\"record\",\"name\":\"payment\",\"fields\":[{\"name\":\"id\",\"type\":\"string\"}]}");
        Files.writeString(dir.resolve("notes.txt"), "not a schema");
        SchemaRegistry registry = new SchemaRegistry(dir.toString(), Duration.ofSeconds(1));
        Schema value = AvroRecords.schemaOf(VALUE, "merchant_1m_value");
        Schema key = AvroRecords.schemaOf(new StructType().add("table", DataTypes.StringType, false), "merchant_1m_key");
        assertThat(registry.register("merchant-value", value)).isEqualTo(2);
        assertThat(registry.register("merchant-key", key)).isEqualTo(3);
        assertThat(registry.register("merchant-value", value)).as("the same schema again").isEqualTo(2);
        assertThat(new SchemaRegistry(dir.toString(), Duration.ofSeconds(1)).register("other-value", value)).as("under another subject")
                .isEqualTo(2);
        assertThat(registry.writerSchema(2)).contains(value);
        assertThat(registry.writerSchema(3)).contains(key);
        assertThat(dir.resolve("4.avsc")).doesNotExist();
        assertThatThrownBy(() -> new SchemaRegistry(dir.resolve("gone").toString(), Duration.ofSeconds(1)).register("s", key))
                .hasMessage("the schema directory " + dir.resolve("gone") + " does not exist");
    }
}
