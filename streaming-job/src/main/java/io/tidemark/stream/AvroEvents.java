package io.tidemark.stream;

import java.io.IOException;
import java.io.Serializable;
import java.math.BigDecimal;
import java.nio.ByteBuffer;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;

import org.apache.avro.Conversions;
import org.apache.avro.LogicalType;
import org.apache.avro.LogicalTypes;
import org.apache.avro.Schema;
import org.apache.avro.data.TimeConversions;
import org.apache.avro.generic.GenericData;
import org.apache.avro.generic.GenericDatumReader;
import org.apache.avro.generic.GenericRecord;
import org.apache.avro.io.BinaryDecoder;
import org.apache.avro.io.DecoderFactory;
import org.apache.spark.sql.types.BooleanType;
import org.apache.spark.sql.types.ByteType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DateType;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.sql.types.DoubleType;
import org.apache.spark.sql.types.FloatType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.ShortType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.TimestampType;

import io.tidemark.lakehouse.SchemaRegistry;

/**
 * The Avro side of {@link EventDecoder}: a message in Confluent's wire format (a 0 byte, the writer
 * schema's id in 4 bytes big-endian, the record in Avro binary) read with Avro's own
 * {@link GenericDatumReader} and its writer schema from the {@link SchemaRegistry}, then taken as the
 * declared columns, each matched by the field it reads (its own name, or the one its event table's
 * option {@code 'field.<column>'} names).
 *
 * <p>Per writer schema, once: each declared column is looked up in it and its type checked against the
 * declared one with Avro's promotions (int to long, float or double; long to float or double; float
 * to double), a decimal's scale and a timestamp's unit taken from the writer's logical type. A writer
 * schema that adds fields (they are kept in {@code payload}) or widens a type reads; one that lacks a
 * NOT NULL column (MISSING_FIELD) or carries a column as another type (SCHEMA_MISMATCH) sends each of
 * its records to dead_letter, the stream goes on. A nullable column the writer lacks is null.
 */
final class AvroEvents implements Serializable {
    private static final long serialVersionUID = 1L;

    /** The fields the declared columns read, in their order. */
    private final String[] names;
    private final DataType[] types;
    private final boolean[] notNull;
    private final int eventTime;
    private final SchemaRegistry registry;
    /** How each writer schema (by id) is read; per decoder instance, so per task; the schemas themselves are cached per JVM. */
    private transient Map<Integer, Plan> plans;
    private transient BinaryDecoder reuse;

    AvroEvents(String[] names, DataType[] types, boolean[] notNull, int eventTime, SchemaRegistry registry) {
        this.names = names;
        this.types = types;
        this.notNull = notNull;
        this.eventTime = eventTime;
        this.registry = registry;
    }

    /** How a column's value is turned into the declared type, decided from the writer's field once. */
    private enum Conversion { STRING, BOOLEAN, INT, LONG, FLOAT, DOUBLE, DECIMAL, TIMESTAMP, DATE }

    /**
     * Avro's generic model with its conversions of the logical types Tidemark reads: a decimal arrives as
     * a BigDecimal of the writer's scale, a timestamp as an Instant of the writer's unit, a date as a
     * LocalDate; the payload's JSON shows them so.
     */
    private static GenericData model() {
        GenericData m = new GenericData();
        m.addLogicalTypeConversion(new Conversions.DecimalConversion());
        m.addLogicalTypeConversion(new TimeConversions.TimestampMillisConversion());
        m.addLogicalTypeConversion(new TimeConversions.TimestampMicrosConversion());
        m.addLogicalTypeConversion(new TimeConversions.TimestampNanosConversion());
        m.addLogicalTypeConversion(new TimeConversions.DateConversion());
        return m;
    }

    /** A writer schema's plan: the reader and, per declared column, the writer field's position (-1: absent) and conversion; or why none. */
    private record Plan(GenericDatumReader<GenericRecord> reader, int[] positions, Conversion[] conversions, InvalidReason rejected,
                        String detail) {
    }

    /**
     * Reads {@code value} (already checked non-empty and within the size limit) into {@code values};
     * false with the reason in {@code out} when it is not an event.
     */
    boolean read(byte[] value, Object[] values, EventDecoder.Decoded out) {
        if (value.length < 5 || value[0] != 0) {
            return out.invalid(InvalidReason.NOT_AVRO, value.length < 5 ? "message is " + value.length
                    + " bytes, shorter than the 5-byte Confluent wire-format header" : String.format(Locale.ROOT,
                    "first byte is 0x%02x, not the Confluent wire format's 0x00", value[0] & 0xff));
        }
        int id = ByteBuffer.wrap(value, 1, 4).getInt();
        Plan plan = plan(id);
        if (plan.rejected() != null) {
            return out.invalid(plan.rejected(), plan.detail());
        }
        GenericRecord record;
        try {
            reuse = DecoderFactory.get().binaryDecoder(value, 5, value.length - 5, reuse);
            record = plan.reader().read(null, reuse);
            if (!reuse.isEnd()) {
                return out.invalid(InvalidReason.BAD_AVRO, "bytes left after the record of schema id " + id);
            }
        } catch (IOException | RuntimeException e) {
            return out.invalid(InvalidReason.BAD_AVRO, "does not decode with schema id " + id + ": " + e.getClass().getSimpleName()
                    + (e.getMessage() == null ? "" : " " + abbreviate(e.getMessage())));
        }
        for (int i = 0; i < names.length; i++) {
            int pos = plan.positions()[i];
            Object v = pos < 0 ? null : record.get(pos);
            if (v == null) {
                if (notNull[i]) {
                    return out.invalid(InvalidReason.NULL_FIELD, names[i] + " is null");
                }
                continue;
            }
            if (!convert(v, i, plan, values, out)) {
                return false;
            }
        }
        out.payload = plan.reader().getData().toString(record);
        return true;
    }

    private boolean convert(Object v, int i, Plan plan, Object[] values, EventDecoder.Decoded out) {
        DataType type = types[i];
        switch (plan.conversions()[i]) {
            case STRING -> values[i] = v.toString();
            case BOOLEAN -> values[i] = v;
            case INT -> {
                int n = (Integer) v;
                if (type instanceof ByteType && (n < Byte.MIN_VALUE || n > Byte.MAX_VALUE)
                        || type instanceof ShortType && (n < Short.MIN_VALUE || n > Short.MAX_VALUE)) {
                    return out.invalid(InvalidReason.WRONG_TYPE, names[i] + " is " + n + ", outside " + type.sql());
                }
                values[i] = type instanceof ByteType ? (Object) (byte) n : type instanceof ShortType ? (Object) (short) n : (Object) n;
            }
            case LONG -> values[i] = ((Number) v).longValue();
            case FLOAT -> values[i] = ((Number) v).floatValue();
            case DOUBLE -> values[i] = ((Number) v).doubleValue();
            case DECIMAL -> {
                return EventDecoder.fitDecimal(names[i], (BigDecimal) v, (DecimalType) type, values, i, out);
            }
            case TIMESTAMP -> {
                // Spark keeps microseconds: a nanosecond timestamp is truncated, as a JSON one is.
                Instant t = (Instant) v;
                long micros = Math.addExact(Math.multiplyExact(t.getEpochSecond(), 1_000_000L), t.getNano() / 1000);
                values[i] = Instant.ofEpochSecond(t.getEpochSecond(), (t.getNano() / 1000) * 1000L);
                if (i == eventTime) {
                    out.eventMicros = micros;
                }
            }
            case DATE -> values[i] = v;
            default -> throw new IllegalStateException(plan.conversions()[i].name());
        }
        return true;
    }

    private Plan plan(int id) {
        if (plans == null) {
            plans = new ConcurrentHashMap<>();
        }
        return plans.computeIfAbsent(id, this::newPlan);
    }

    private Plan newPlan(int id) {
        Optional<Schema> found = registry.writerSchema(id);
        if (found.isEmpty()) {
            return rejected(InvalidReason.UNKNOWN_SCHEMA, "schema id " + id + " is not in the schema registry " + registry.location());
        }
        Schema writer = found.get();
        if (writer.getType() != Schema.Type.RECORD) {
            return rejected(InvalidReason.SCHEMA_MISMATCH, "schema id " + id + " is " + writer.getType().getName() + ", not a record");
        }
        int[] positions = new int[names.length];
        Conversion[] conversions = new Conversion[names.length];
        for (int i = 0; i < names.length; i++) {
            Schema.Field f = writer.getField(names[i]);
            if (f == null) {
                if (notNull[i]) {
                    return rejected(InvalidReason.MISSING_FIELD, names[i] + " is missing from schema id " + id + " (" + writer.getFullName() + ")");
                }
                positions[i] = -1;
                continue;
            }
            positions[i] = f.pos();
            Schema s = nonNull(f.schema());
            Conversion c = s == null ? null : conversion(s, types[i]);
            if (c == null) {
                return rejected(InvalidReason.SCHEMA_MISMATCH, names[i] + " is " + describe(f.schema()) + " in schema id " + id
                        + "; the pipeline declares " + types[i].sql() + ", which reads " + readable(types[i]));
            }
            conversions[i] = c;
        }
        return new Plan(new GenericDatumReader<>(writer, writer, model()), positions, conversions, null, null);
    }

    private static Plan rejected(InvalidReason reason, String detail) {
        return new Plan(null, null, null, reason, detail);
    }

    /** The schema itself, or its one non-null branch of a union with null; null for any other union. */
    private static Schema nonNull(Schema s) {
        if (s.getType() != Schema.Type.UNION) {
            return s;
        }
        List<Schema> branches = new ArrayList<>();
        for (Schema b : s.getTypes()) {
            if (b.getType() != Schema.Type.NULL) {
                branches.add(b);
            }
        }
        return branches.size() == 1 ? branches.get(0) : null;
    }

    /** How a writer type reads as {@code declared}, or null when it does not (Avro's promotions; logical types by their unit and scale). */
    private static Conversion conversion(Schema s, DataType declared) {
        Schema.Type t = s.getType();
        LogicalType logical = s.getLogicalType();
        if (declared instanceof StringType) {
            return t == Schema.Type.STRING && logical == null ? Conversion.STRING : null;
        }
        if (declared instanceof BooleanType) {
            return t == Schema.Type.BOOLEAN ? Conversion.BOOLEAN : null;
        }
        if (declared instanceof ByteType || declared instanceof ShortType || declared instanceof IntegerType) {
            return t == Schema.Type.INT && logical == null ? Conversion.INT : null;
        }
        if (declared instanceof LongType) {
            return (t == Schema.Type.INT || t == Schema.Type.LONG) && logical == null ? Conversion.LONG : null;
        }
        if (declared instanceof FloatType) {
            return (t == Schema.Type.INT || t == Schema.Type.LONG || t == Schema.Type.FLOAT) && logical == null ? Conversion.FLOAT : null;
        }
        if (declared instanceof DoubleType) {
            return (t == Schema.Type.INT || t == Schema.Type.LONG || t == Schema.Type.FLOAT || t == Schema.Type.DOUBLE) && logical == null
                    ? Conversion.DOUBLE : null;
        }
        if (declared instanceof DecimalType) {
            return (t == Schema.Type.BYTES || t == Schema.Type.FIXED) && logical instanceof LogicalTypes.Decimal ? Conversion.DECIMAL : null;
        }
        if (declared instanceof TimestampType) {
            if (t != Schema.Type.LONG) {
                return null;
            }
            return logical instanceof LogicalTypes.TimestampMillis || logical instanceof LogicalTypes.TimestampMicros
                    || logical instanceof LogicalTypes.TimestampNanos ? Conversion.TIMESTAMP : null;
        }
        if (declared instanceof DateType) {
            return t == Schema.Type.INT && logical instanceof LogicalTypes.Date ? Conversion.DATE : null;
        }
        return null;
    }

    /** What Avro types a declared type reads, for the SCHEMA_MISMATCH detail. */
    static String readable(DataType declared) {
        if (declared instanceof StringType) return "string";
        if (declared instanceof BooleanType) return "boolean";
        if (declared instanceof ByteType || declared instanceof ShortType || declared instanceof IntegerType) return "int";
        if (declared instanceof LongType) return "int or long";
        if (declared instanceof FloatType) return "int, long or float";
        if (declared instanceof DoubleType) return "int, long, float or double";
        if (declared instanceof DecimalType) return "bytes or fixed with logicalType decimal";
        if (declared instanceof TimestampType) return "long with logicalType timestamp-millis, timestamp-micros or timestamp-nanos";
        if (declared instanceof DateType) return "int with logicalType date";
        return "nothing";
    }

    private static String describe(Schema s) {
        String d = s.toString();
        return d.length() <= 120 ? d : d.substring(0, 117) + "...";
    }

    private static String abbreviate(String s) {
        int nl = s.indexOf('\n');
        String line = nl < 0 ? s : s.substring(0, nl);
        return line.length() <= 120 ? line : line.substring(0, 117) + "...";
    }
}
