package io.tidemark.output;

import java.math.BigDecimal;
import java.sql.Date;
import java.sql.Timestamp;
import java.time.Instant;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.List;

import org.apache.avro.Conversions;
import org.apache.avro.LogicalTypes;
import org.apache.avro.Schema;
import org.apache.avro.generic.GenericData;
import org.apache.avro.generic.GenericDatumWriter;
import org.apache.avro.generic.GenericRecord;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.types.BooleanType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DateType;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.sql.types.DoubleType;
import org.apache.spark.sql.types.FloatType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.types.TimestampType;

import io.tidemark.lakehouse.SchemaRegistry;

/**
 * A KPI output's keys and values in Avro, as Confluent's wire format frames them: the magic byte 0,
 * the schema's registry id (4 bytes, big-endian), the record in Avro's binary encoding (Avro's own
 * {@link GenericDatumWriter}).
 *
 * <p>The schema is the published struct's, field for field in its order: strings, longs, ints,
 * doubles, floats and booleans as themselves, decimals as {@code bytes} with the {@code decimal}
 * logical type (precision and scale of the column), times as {@code long} {@code timestamp-millis}
 * (UTC milliseconds, as the JSON output writes them), dates as {@code int} {@code date}; a nullable
 * column is a union with {@code null}, null by default. Records are named {@code <table>_key} and
 * {@code <table>_value} in namespace {@code io.tidemark.kpi}.
 */
final class AvroRecords {
    private static final String NAMESPACE = "io.tidemark.kpi";
    private static final Conversions.DecimalConversion DECIMALS = new Conversions.DecimalConversion();

    private final Schema schema;
    private final int id;
    private final GenericDatumWriter<GenericRecord> writer;

    AvroRecords(Schema schema, int id) {
        this.schema = schema;
        this.id = id;
        this.writer = new GenericDatumWriter<>(schema);
    }

    /** The Avro schema of a struct published as record {@code name}; refuses a column type it has no form for. */
    static Schema schemaOf(StructType struct, String name) {
        List<Schema.Field> fields = new ArrayList<>();
        for (StructField f : struct.fields()) {
            Schema type = typeOf(f.dataType(), f.name(), name);
            if (f.nullable()) {
                fields.add(new Schema.Field(f.name(), Schema.createUnion(Schema.create(Schema.Type.NULL), type), null, Schema.Field.NULL_DEFAULT_VALUE));
            } else {
                fields.add(new Schema.Field(f.name(), type));
            }
        }
        return Schema.createRecord(name, null, NAMESPACE, false, fields);
    }

    private static Schema typeOf(DataType t, String column, String record) {
        if (t instanceof StringType) {
            return Schema.create(Schema.Type.STRING);
        } else if (t instanceof LongType) {
            return Schema.create(Schema.Type.LONG);
        } else if (t instanceof IntegerType) {
            return Schema.create(Schema.Type.INT);
        } else if (t instanceof DoubleType) {
            return Schema.create(Schema.Type.DOUBLE);
        } else if (t instanceof FloatType) {
            return Schema.create(Schema.Type.FLOAT);
        } else if (t instanceof BooleanType) {
            return Schema.create(Schema.Type.BOOLEAN);
        } else if (t instanceof DecimalType d) {
            return LogicalTypes.decimal(d.precision(), d.scale()).addToSchema(Schema.create(Schema.Type.BYTES));
        } else if (t instanceof TimestampType) {
            return LogicalTypes.timestampMillis().addToSchema(Schema.create(Schema.Type.LONG));
        } else if (t instanceof DateType) {
            return LogicalTypes.date().addToSchema(Schema.create(Schema.Type.INT));
        }
        throw new IllegalArgumentException("column " + column + " of " + record + " is " + t.sql() + ", which the Avro output has no type for; "
                + "publish it as JSON ('output.kafka.format' = 'json') or cast the measure to a number or a string");
    }

    /** The row (of the struct the schema was made from) in Confluent's wire format. */
    byte[] encode(Row row) {
        GenericRecord record = new GenericData.Record(schema);
        List<Schema.Field> fields = schema.getFields();
        for (int i = 0; i < fields.size(); i++) {
            Object v = row.isNullAt(i) ? null : row.get(i);
            record.put(i, v == null ? null : value(v, fields.get(i).schema()));
        }
        return SchemaRegistry.wire(id, record, writer);
    }

    private static Object value(Object v, Schema s) {
        if (s.getType() == Schema.Type.UNION) {
            s = s.getTypes().get(1);
        }
        if (s.getLogicalType() instanceof LogicalTypes.Decimal d) {
            return DECIMALS.toBytes(((BigDecimal) v).setScale(d.getScale()), s, d);
        } else if (s.getLogicalType() instanceof LogicalTypes.TimestampMillis) {
            return v instanceof Instant i ? i.toEpochMilli() : ((Timestamp) v).getTime();
        } else if (s.getLogicalType() instanceof LogicalTypes.Date) {
            return (int) (v instanceof LocalDate d ? d.toEpochDay() : ((Date) v).toLocalDate().toEpochDay());
        }
        return v;
    }
}
