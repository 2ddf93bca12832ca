package io.tidemark.stream;

import java.io.IOException;
import java.io.Serializable;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.time.DateTimeException;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDate;
import java.util.List;

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

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.json.JsonReadFeature;

import io.tidemark.lakehouse.Errors;
import io.tidemark.lakehouse.SchemaRegistry;
import io.tidemark.pipeline.Pipeline;

/**
 * Decodes one Kafka message into an event of the pipeline's event table, or says exactly why it is
 * not one.
 *
 * <p>Strict on purpose: each declared field must be present once with its JSON type, because a
 * lenient parse (Spark's {@code from_json}) turns a wrong type into a null and a duplicate key into
 * whichever value came last, and both end up as silently wrong numbers. A NOT NULL column must be
 * there and not null; another may be absent or null. Extra fields are allowed and skipped. Pure Java
 * and allocation-light: it runs once per record.
 *
 * <p>What it decides, in order: the message's shape (EMPTY, OVERSIZED, NOT_UTF8, NOT_JSON,
 * NOT_AN_OBJECT), each field as it comes (DUPLICATE_FIELD, NULL_FIELD, WRONG_TYPE), then the absent
 * ones (MISSING_FIELD). The table's CHECKs come next and are Spark SQL, so {@link RecordClassifier}
 * evaluates them; a time that does not parse (BAD_TIMESTAMP, BAD_DATE) and an event time out of range
 * of the Kafka timestamp (FUTURE_EVENT_TIME, PAST_EVENT_TIME) are decided here but reported after
 * them, as the <em>deferred</em> reason, so that a record that breaks a CHECK is named by it.
 */
public final class EventDecoder implements Serializable {
    private static final long serialVersionUID = 1L;

    /** The declared columns: the field each reads (its name in the record, which messages name), how JSON carries it, NOT NULL. */
    private final String[] names;
    /** The columns' own names, in the same order. */
    private final String[] columns;
    private final DataType[] types;
    private final boolean[] notNull;
    /** The index of the event-time column. */
    private final int eventTime;
    private final int maxMessageBytes;
    private final long clockSkewMicros;
    private final long maxAgeMicros;
    private transient JsonFactory json;
    /** The Avro reader for {@code format 'avro'}; null for JSON. */
    private final AvroEvents avro;

    /**
     * @param clockSkewMicros how far the event time may be ahead of the Kafka timestamp
     * @param maxAgeMicros how far the event time may be behind the Kafka timestamp
     */
    public EventDecoder(Pipeline.EventTable events, int maxMessageBytes, long clockSkewMicros, long maxAgeMicros) {
        List<Pipeline.Column> columns = events.columns();
        this.names = columns.stream().map(Pipeline.Column::field).toArray(String[]::new);
        this.columns = columns.stream().map(Pipeline.Column::name).toArray(String[]::new);
        this.types = columns.stream().map(Pipeline.Column::type).toArray(DataType[]::new);
        this.notNull = new boolean[columns.size()];
        int et = -1;
        for (int i = 0; i < columns.size(); i++) {
            notNull[i] = columns.get(i).notNull();
            if (columns.get(i).name().equals(events.eventTime())) {
                et = i;
            }
        }
        if (et < 0) {
            throw new IllegalArgumentException("the event time column " + events.eventTime() + " is not a column of " + events.name());
        }
        this.eventTime = et;
        this.maxMessageBytes = maxMessageBytes;
        this.clockSkewMicros = clockSkewMicros;
        this.maxAgeMicros = maxAgeMicros;
        this.avro = events.format().equals("avro")
                ? new AvroEvents(names, types, notNull, et, new SchemaRegistry(events.schemaRegistry(), REGISTRY_WAIT)) : null;
    }

    /** How long an Avro lookup waits for a schema registry that does not answer before the batch fails. */
    static final Duration REGISTRY_WAIT = Duration.ofMinutes(30);

    /** Whether messages are Avro ({@code format 'avro'}): then {@link Decoded#payload} is the record as JSON. */
    public boolean avro() {
        return avro != null;
    }

    /** The declared columns' names, in order: {@link Decoded#values} holds one value for each. */
    public List<String> columns() {
        return List.of(columns);
    }

    /** The declared columns' types, in order. */
    public List<DataType> types() {
        return List.of(types);
    }

    /**
     * The outcome: {@code reason == null} and the values set (each as Spark takes it in a Row:
     * String, Boolean, Byte, Short, Integer, Long, Float, Double, BigDecimal, LocalDate, Instant, or
     * null), with perhaps a {@link #deferred} reason; or a reason and its detail.
     */
    public static final class Decoded {
        public String reason;
        public String detail;
        /** A reason that counts only if no CHECK fails first (see the class comment), and its detail. */
        public String deferred;
        public String deferredDetail;
        public Object[] values;
        /** The event time in epoch microseconds, when it parsed. */
        public long eventMicros;
        /** For Avro: the record as its writer schema holds it, in Avro's JSON rendering (raw_events.payload); null for JSON. */
        public String payload;

        boolean invalid(InvalidReason r, String d) {
            reason = r.name();
            detail = d;
            return false;
        }

        void defer(InvalidReason r, String d) {
            if (deferred == null) {
                deferred = r.name();
                deferredDetail = d;
            }
        }
    }

    /**
     * @param value the message bytes, possibly null
     * @param ingestMicros the Kafka record timestamp: the clock-skew rule compares against it, so a
     *     replayed batch decodes exactly as the first attempt did
     */
    public Decoded decode(byte[] value, long ingestMicros) {
        Decoded d = new Decoded();
        decodeInto(value, ingestMicros, d);
        return d;
    }

    boolean decodeInto(byte[] value, long ingestMicros, Decoded out) {
        if (value == null || value.length == 0) {
            return out.invalid(InvalidReason.EMPTY, "message has no bytes");
        }
        if (value.length > maxMessageBytes) {
            return out.invalid(InvalidReason.OVERSIZED, "message is " + value.length + " bytes, more than max-message-bytes " + maxMessageBytes);
        }
        Object[] values = new Object[names.length];
        if (!(avro != null ? avro.read(value, values, out) : readJson(value, values, out))) {
            return false;
        }
        out.reason = null;
        out.detail = null;
        out.values = values;
        if (values[eventTime] != null) {
            long micros = out.eventMicros;
            String ts = names[eventTime] + " " + values[eventTime];
            if (micros - ingestMicros > clockSkewMicros) {
                out.defer(InvalidReason.FUTURE_EVENT_TIME, ts + " is " + ((micros - ingestMicros) / 1_000_000)
                        + " s ahead of the Kafka timestamp; allowed clock skew is " + (clockSkewMicros / 1_000_000) + " s");
            } else if (ingestMicros - micros > maxAgeMicros) {
                out.defer(InvalidReason.PAST_EVENT_TIME, ts + " is " + ((ingestMicros - micros) / 86_400_000_000L)
                        + " days before the Kafka timestamp; max-event-age is " + (maxAgeMicros / 86_400_000_000L) + " days");
            }
            // A record out of range keeps no value for its event time: nothing downstream may place it in a window.
            if (out.deferred != null) {
                values[eventTime] = null;
            }
        }
        return true;
    }

    /** A JSON message into {@code values}: false with the reason in {@code out} when it is not an event. */
    private boolean readJson(byte[] value, Object[] values, Decoded out) {
        String utf8Error = utf8Error(value);
        if (utf8Error != null) {
            return out.invalid(InvalidReason.NOT_UTF8, utf8Error);
        }
        if (json == null) {
            json = JsonFactory.builder()
                    .enable(JsonReadFeature.ALLOW_NON_NUMERIC_NUMBERS) // NaN/Infinity: a CHECK's problem, not a syntax one
                    .build();
        }
        boolean[] seen = new boolean[names.length];
        try (JsonParser p = json.createParser(value)) {
            JsonToken first = p.nextToken();
            if (first == null) {
                return out.invalid(InvalidReason.EMPTY, "message holds only whitespace");
            }
            if (first != JsonToken.START_OBJECT) {
                return out.invalid(InvalidReason.NOT_AN_OBJECT, "top-level JSON value is " + describe(first) + ", not an object");
            }
            JsonToken t;
            while ((t = p.nextToken()) == JsonToken.FIELD_NAME) {
                String name = p.currentName();
                JsonToken v = p.nextToken();
                int i = indexOf(name);
                if (i < 0) {
                    p.skipChildren();
                    continue;
                }
                if (seen[i]) {
                    return duplicate(out, name);
                }
                seen[i] = true;
                if (v == JsonToken.VALUE_NULL) {
                    if (notNull[i]) {
                        return out.invalid(InvalidReason.NULL_FIELD, name + " is null");
                    }
                    continue;
                }
                if (!read(p, v, i, values, out)) {
                    return false;
                }
            }
            if (t != JsonToken.END_OBJECT) {
                return out.invalid(InvalidReason.NOT_JSON, "unexpected " + describe(t) + " inside the object");
            }
            JsonToken trailing = p.nextToken();
            if (trailing != null) {
                return out.invalid(InvalidReason.NOT_JSON, "trailing content after the JSON object: " + describe(trailing));
            }
        } catch (IOException | RuntimeException e) {
            return out.invalid(InvalidReason.NOT_JSON, firstLine(e.getMessage()));
        }
        for (int i = 0; i < names.length; i++) {
            if (notNull[i] && !seen[i]) {
                return out.invalid(InvalidReason.MISSING_FIELD, names[i] + " is missing");
            }
        }
        return true;
    }

    private int indexOf(String name) {
        for (int i = 0; i < names.length; i++) {
            if (names[i].equals(name)) {
                return i;
            }
        }
        return -1;
    }

    /** Reads field {@code i}'s value token {@code v} (not null) into {@code values}; false with the reason when it is the wrong type. */
    private boolean read(JsonParser p, JsonToken v, int i, Object[] values, Decoded out) throws IOException {
        String name = names[i];
        DataType type = types[i];
        boolean number = v == JsonToken.VALUE_NUMBER_INT || v == JsonToken.VALUE_NUMBER_FLOAT;
        if (type instanceof StringType) {
            if (v != JsonToken.VALUE_STRING) {
                return wrongType(out, name, v, "a string");
            }
            values[i] = p.getText();
        } else if (type instanceof BooleanType) {
            if (v != JsonToken.VALUE_TRUE && v != JsonToken.VALUE_FALSE) {
                return wrongType(out, name, v, "true or false");
            }
            values[i] = v == JsonToken.VALUE_TRUE;
        } else if (type instanceof DoubleType || type instanceof FloatType) {
            if (!number) {
                return wrongType(out, name, v, "a number");
            }
            double d = p.getDoubleValue();
            values[i] = type instanceof DoubleType ? (Object) d : (Object) (float) d;
        } else if (type instanceof ByteType || type instanceof ShortType || type instanceof IntegerType || type instanceof LongType) {
            if (v != JsonToken.VALUE_NUMBER_INT) {
                return wrongType(out, name, v, "a whole number");
            }
            long min = type instanceof ByteType ? Byte.MIN_VALUE : type instanceof ShortType ? Short.MIN_VALUE
                    : type instanceof IntegerType ? Integer.MIN_VALUE : Long.MIN_VALUE;
            long max = type instanceof ByteType ? Byte.MAX_VALUE : type instanceof ShortType ? Short.MAX_VALUE
                    : type instanceof IntegerType ? Integer.MAX_VALUE : Long.MAX_VALUE;
            BigInteger n = p.getBigIntegerValue();
            if (n.compareTo(BigInteger.valueOf(min)) < 0 || n.compareTo(BigInteger.valueOf(max)) > 0) {
                return out.invalid(InvalidReason.WRONG_TYPE, name + " is " + n + ", outside " + type.sql());
            }
            long l = n.longValue();
            values[i] = type instanceof ByteType ? (Object) (byte) l : type instanceof ShortType ? (Object) (short) l
                    : type instanceof IntegerType ? (Object) (int) l : (Object) l;
        } else if (type instanceof DecimalType dt) {
            if (!number || p.getNumberType() == JsonParser.NumberType.DOUBLE && !Double.isFinite(p.getDoubleValue())) {
                return wrongType(out, name, v, "a number");
            }
            return fitDecimal(name, p.getDecimalValue(), dt, values, i, out);
        } else if (type instanceof TimestampType || type instanceof DateType) {
            if (v != JsonToken.VALUE_STRING) {
                return wrongType(out, name, v, "a string");
            }
            String text = p.getText();
            try {
                if (type instanceof DateType) {
                    values[i] = LocalDate.parse(text);
                } else {
                    long micros = parseIsoInstantMicros(text);
                    values[i] = Instant.ofEpochSecond(Math.floorDiv(micros, 1_000_000L), Math.floorMod(micros, 1_000_000L) * 1000);
                    if (i == eventTime) {
                        out.eventMicros = micros;
                    }
                }
            } catch (DateTimeException | IllegalArgumentException e) {
                out.defer(type instanceof DateType ? InvalidReason.BAD_DATE : InvalidReason.BAD_TIMESTAMP, name + " '" + abbreviate(text) + "': "
                        + (type instanceof DateType ? "expected a date like 2026-11-29" : e.getMessage()));
            }
        } else {
            throw new IllegalStateException("no JSON decoding for " + type.sql());
        }
        return true;
    }

    /**
     * A decimal taken exactly as its column holds it, in {@code values[i]}: false with WRONG_TYPE when it
     * has more decimals than the column's scale or, at that scale, more digits than its precision.
     */
    static boolean fitDecimal(String name, BigDecimal d, DecimalType dt, Object[] values, int i, Decoded out) {
        if (d.stripTrailingZeros().scale() > dt.scale()) {
            return out.invalid(InvalidReason.WRONG_TYPE, name + " is " + d.toPlainString() + ", more decimals than " + dt.sql() + " holds");
        }
        BigDecimal scaled = d.setScale(dt.scale());
        if (scaled.precision() > dt.precision()) {
            return out.invalid(InvalidReason.WRONG_TYPE, name + " is " + scaled.toPlainString() + ", too large for " + dt.sql());
        }
        values[i] = scaled;
        return true;
    }

    private static boolean wrongType(Decoded out, String name, JsonToken v, String expected) {
        return out.invalid(InvalidReason.WRONG_TYPE, name + " is " + describe(v) + ", expected " + expected);
    }

    private static boolean duplicate(Decoded out, String name) {
        return out.invalid(InvalidReason.DUPLICATE_FIELD, name + " appears more than once");
    }

    private static String describe(JsonToken t) {
        if (t == null) return "nothing";
        return switch (t) {
            case START_OBJECT -> "an object";
            case START_ARRAY -> "an array";
            case VALUE_STRING -> "a string";
            case VALUE_NUMBER_INT, VALUE_NUMBER_FLOAT -> "a number";
            case VALUE_TRUE, VALUE_FALSE -> "a boolean";
            case VALUE_NULL -> "null";
            default -> t.name();
        };
    }

    /** Null when the bytes are strict UTF-8; otherwise where they are not. ASCII (the usual case) is checked without decoding. */
    static String utf8Error(byte[] b) {
        int i = 0;
        while (i < b.length && b[i] >= 0) {
            i++;
        }
        if (i == b.length) {
            return null;
        }
        try {
            StandardCharsets.UTF_8.newDecoder()
                    .onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT)
                    .decode(ByteBuffer.wrap(b));
            return null;
        } catch (CharacterCodingException e) {
            return "invalid UTF-8 near byte " + i;
        }
    }

    /**
     * Parses {@code yyyy-MM-ddTHH:mm:ss[.fraction](Z|±HH:MM|±HHMM)} to epoch microseconds. A zone is
     * required: a time without one is ambiguous. Fractions beyond microseconds are truncated.
     */
    static long parseIsoInstantMicros(String s) {
        int n = s.length();
        if (n < 20 || s.charAt(4) != '-' || s.charAt(7) != '-' || (s.charAt(10) != 'T' && s.charAt(10) != 't' && s.charAt(10) != ' ')
                || s.charAt(13) != ':' || s.charAt(16) != ':') {
            throw new IllegalArgumentException("expected ISO-8601 like 2026-11-29T14:03:12.345Z");
        }
        int year = digits(s, 0, 4);
        int month = digits(s, 5, 7);
        int day = digits(s, 8, 10);
        int hour = digits(s, 11, 13);
        int minute = digits(s, 14, 16);
        int second = digits(s, 17, 19);
        if (hour > 23 || minute > 59 || second > 59) {
            throw new IllegalArgumentException("time of day out of range");
        }
        long epochDay = LocalDate.of(year, month, day).toEpochDay(); // validates month and day
        int i = 19;
        long fractionMicros = 0;
        if (i < n && s.charAt(i) == '.') {
            i++;
            int start = i;
            long scale = 100_000;
            while (i < n && Character.isDigit(s.charAt(i))) {
                if (scale > 0) {
                    fractionMicros += (s.charAt(i) - '0') * scale;
                    scale /= 10;
                }
                i++;
            }
            if (i == start) {
                throw new IllegalArgumentException("empty fraction of a second");
            }
        }
        if (i >= n) {
            throw new IllegalArgumentException("no zone: add Z or an offset like +01:00");
        }
        int offsetSeconds;
        char z = s.charAt(i);
        if ((z == 'Z' || z == 'z') && i == n - 1) {
            offsetSeconds = 0;
        } else if (z == '+' || z == '-') {
            int oh;
            int om;
            if (n - i == 6 && s.charAt(i + 3) == ':') {
                oh = digits(s, i + 1, i + 3);
                om = digits(s, i + 4, i + 6);
            } else if (n - i == 5) {
                oh = digits(s, i + 1, i + 3);
                om = digits(s, i + 3, i + 5);
            } else {
                throw new IllegalArgumentException("bad zone offset");
            }
            if (oh > 18 || om > 59) {
                throw new IllegalArgumentException("zone offset out of range");
            }
            offsetSeconds = (oh * 3600 + om * 60) * (z == '-' ? -1 : 1);
        } else {
            throw new IllegalArgumentException("bad zone");
        }
        long seconds = epochDay * 86_400L + hour * 3600L + minute * 60L + second - offsetSeconds;
        return seconds * 1_000_000L + fractionMicros;
    }

    private static int digits(String s, int from, int to) {
        int v = 0;
        for (int i = from; i < to; i++) {
            char c = s.charAt(i);
            if (c < '0' || c > '9') {
                throw new IllegalArgumentException("expected a digit at position " + i);
            }
            v = v * 10 + (c - '0');
        }
        return v;
    }

    private static String firstLine(String m) {
        String line = Errors.firstLine(m);
        return line.isEmpty() ? "unparseable" : abbreviate(line);
    }

    private static String abbreviate(String s) {
        return s.length() <= 120 ? s : s.substring(0, 117) + "...";
    }
}
