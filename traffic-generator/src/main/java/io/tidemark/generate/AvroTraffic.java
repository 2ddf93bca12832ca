package io.tidemark.generate;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.math.RoundingMode;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.function.IntFunction;

import org.apache.avro.Conversions;
import org.apache.avro.LogicalTypes;
import org.apache.avro.Schema;
import org.apache.avro.generic.GenericData;
import org.apache.avro.generic.GenericDatumWriter;
import org.apache.avro.generic.GenericRecord;
import org.apache.avro.io.BinaryEncoder;
import org.apache.avro.io.EncoderFactory;

import com.fasterxml.jackson.core.json.JsonReadFeature;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.json.JsonMapper;

/**
 * The generator's records in Avro, Confluent's wire format (a 0 byte, the writer schema's id in 4
 * bytes big-endian, the record in Avro's binary encoding, written by Avro's own
 * {@link GenericDatumWriter}), for a pipeline whose event table says {@code format 'avro'}.
 *
 * <p>A record's values are the ones its JSON form holds: the profile writes the JSON message
 * ({@link ProfileTraffic}, the one place where values, skew and the CHECK-breaking values are
 * decided) and this class writes the same fields under a writer schema. So a payment is the same
 * payment in both formats, and the kinds about values (a CHECK broken, an event time far ahead or
 * behind) break the same rule. What is Avro's own is here: the writer schemas
 * ({@link #writerSchemas}: the record's, a second version that adds an optional field, and the
 * deliberately wrong ones), and the kinds only Avro has ({@link EventFormat#AVRO}): no header, an
 * unknown schema id, bytes that do not decode, a field of another type; and the Avro form of a field
 * missing (absent from the writer schema) or null (a nullable writer field).
 *
 * <p>Not thread-safe, like its generator.
 */
public final class AvroTraffic {

    /** Registers a schema under a subject and returns its id: a schema registry's client ({@code SchemaRegistry::register}). */
    @FunctionalInterface
    public interface Registrar {
        int register(String subject, Schema schema) throws IOException;
    }

    /**
     * Registers every writer schema of {@code profile} for {@code topic} ({@link #writerSchemas}, each
     * under {@link #subject}) and returns their ids by name, for {@link TrafficSpec.Builder#avro}.
     */
    public static Map<String, Integer> register(TrafficProfile profile, String topic, Registrar registry) throws IOException {
        Map<String, Integer> ids = new LinkedHashMap<>();
        for (Map.Entry<String, Schema> e : writerSchemas(profile).entrySet()) {
            ids.put(e.getKey(), registry.register(subject(topic, e.getKey()), e.getValue()));
        }
        return ids;
    }

    /** The added field of the second writer schema: valid records under it carry it, an oversized one is padded in it. */
    static final String ADDED_FIELD = "channel";
    private static final String[] CHANNELS = {"web", "app", "pos"};
    /** Schema ids no registry has handed out: Confluent's and Apicurio's ids count up from 1. */
    static final int UNKNOWN_ID_BASE = Integer.MAX_VALUE - 1_000;

    private static final JsonMapper JSON = JsonMapper.builder()
            .enable(JsonReadFeature.ALLOW_NON_NUMERIC_NUMBERS) // NaN and Infinity: a CHECK's business
            .enable(DeserializationFeature.USE_BIG_DECIMAL_FOR_FLOATS) // an amount exactly as written
            .build();
    private static final GenericData MODEL = model();

    /** How a field of a profile's record is written in Avro. */
    private enum FieldType { STRING, DOUBLE, DECIMAL_12_2, TIMESTAMP }

    private final TrafficSpec spec;
    private final ProfileTraffic records;
    private final List<String> fields;
    private final FieldType[] types;
    private final Map<String, Schema> schemas;
    private final Map<String, GenericDatumWriter<GenericRecord>> writers = new LinkedHashMap<>();
    private final ByteArrayOutputStream out = new ByteArrayOutputStream(256);
    private BinaryEncoder encoder;
    /** Per kind (by ordinal): how many of its messages were written, which picks the field or the form of the next. */
    private final int[] turns;

    AvroTraffic(TrafficSpec spec, ProfileTraffic records) {
        this.spec = spec;
        this.records = records;
        this.fields = spec.profile().fields();
        this.types = types(spec.profile());
        this.schemas = writerSchemas(spec.profile());
        this.turns = new int[spec.profile().kinds().size()];
    }

    private static FieldType[] types(TrafficProfile profile) {
        return switch (profile) {
            case NETWORK -> new FieldType[]{FieldType.STRING, FieldType.STRING, FieldType.TIMESTAMP, FieldType.DOUBLE};
            case PAYMENTS -> new FieldType[]{FieldType.STRING, FieldType.STRING, FieldType.STRING, FieldType.STRING, FieldType.DECIMAL_12_2,
                    FieldType.STRING, FieldType.TIMESTAMP};
        };
    }

    private static Schema schemaOf(FieldType t) {
        return switch (t) {
            case STRING -> Schema.create(Schema.Type.STRING);
            case DOUBLE -> Schema.create(Schema.Type.DOUBLE);
            case DECIMAL_12_2 -> LogicalTypes.decimal(12, 2).addToSchema(Schema.create(Schema.Type.BYTES));
            case TIMESTAMP -> LogicalTypes.timestampMicros().addToSchema(Schema.create(Schema.Type.LONG));
        };
    }

    /**
     * The writer schemas the generator writes {@code profile}'s records under, by name, in a fixed
     * order: {@code v1}, the record (strings, {@code double}, a {@code decimal(12,2)} in bytes, a
     * {@code timestamp-micros}); {@code v2}, v1 and an optional {@code channel} (a compatible
     * evolution); then per field {@code missing-<field>} (v1 without it), {@code nullable-<field>} (it
     * may be null) and {@code mismatch-<field>} (a string field as {@code bytes}, any other as
     * {@code string}), which the stream must refuse. Each has to be registered (its id goes into
     * {@link TrafficSpec#schemaIds()}) before the generator runs.
     */
    public static Map<String, Schema> writerSchemas(TrafficProfile profile) {
        List<String> names = profile.fields();
        FieldType[] types = types(profile);
        String record = profile == TrafficProfile.NETWORK ? "NetworkEvent" : "Payment";
        Map<String, Schema> out = new LinkedHashMap<>();
        out.put("v1", record(record, names, i -> schemaOf(types[i]), null));
        out.put("v2", record(record, names, i -> schemaOf(types[i]), ADDED_FIELD));
        for (int f = 0; f < names.size(); f++) {
            int field = f;
            out.put("missing-" + names.get(f), record(record, names, i -> i == field ? null : schemaOf(types[i]), null));
            out.put("nullable-" + names.get(f), record(record, names, i -> i == field
                    ? Schema.createUnion(Schema.create(Schema.Type.NULL), schemaOf(types[i])) : schemaOf(types[i]), null));
            out.put("mismatch-" + names.get(f), record(record, names, i -> i != field ? schemaOf(types[i])
                    : Schema.create(types[i] == FieldType.STRING ? Schema.Type.BYTES : Schema.Type.STRING), null));
        }
        return out;
    }

    /**
     * The registry subject a writer schema is registered under for {@code topic}, by Confluent's
     * TopicNameStrategy: {@code <topic>-value} for the record's two versions (v2 is a compatible
     * evolution of v1); each deliberately wrong one under a subject of its own,
     * {@code <topic>-value-<name>}, as a producer with another naming strategy registers it, so a
     * registry's compatibility rule for the topic does not refuse it.
     */
    public static String subject(String topic, String schemaName) {
        return schemaName.equals("v1") || schemaName.equals("v2") ? topic + "-value" : topic + "-value-" + schemaName;
    }

    private static Schema record(String name, List<String> names, IntFunction<Schema> typeOf, String added) {
        List<Schema.Field> fs = new ArrayList<>();
        for (int i = 0; i < names.size(); i++) {
            Schema t = typeOf.apply(i);
            if (t != null) {
                fs.add(new Schema.Field(names.get(i), t));
            }
        }
        if (added != null) {
            fs.add(new Schema.Field(added, Schema.createUnion(Schema.create(Schema.Type.NULL), Schema.create(Schema.Type.STRING)), null,
                    Schema.Field.NULL_DEFAULT_VALUE));
        }
        return Schema.createRecord(name, null, "io.tidemark.generate", false, fs);
    }

    private static GenericData model() {
        GenericData m = new GenericData();
        m.addLogicalTypeConversion(new Conversions.DecimalConversion());
        return m;
    }

    // ------------------------------------------------------------------ messages

    /** A valid message: the profile's record, under v1, or every fourth under v2 with a channel. */
    GeneratedMessage valid(GeneratedMessage json, long number) {
        boolean v2 = number % 4 == 3;
        GenericRecord r = transcode(json.value(), v2 ? "v2" : "v1", -1);
        if (v2) {
            r.put(ADDED_FIELD, CHANNELS[(int) (number / 4 % CHANNELS.length)]);
        }
        return new GeneratedMessage(json.key(), wire(v2 ? "v2" : "v1", r), json.messageKind(), json.eventTimeMillis());
    }

    /**
     * An invalid message of {@code kind}, one of those {@link EventFormat#AVRO} writes.
     *
     * @param onTime the profile's valid kind: the record broken by an Avro kind is drafted as one
     */
    GeneratedMessage invalid(MessageKind kind, long number, long eventTime, long clock, long futureAnchor, MessageKind onTime,
                             SplittableRandom rng) {
        int n = fields.size();
        String name = kind.name();
        int turn = turns[kind.ordinal()]++;
        switch (name) {
            case "EMPTY" -> {
                records.valid(onTime, number, eventTime); // the same draws as the other kinds: one record per message
                return new GeneratedMessage(null, new byte[0], kind);
            }
            case "NULL_VALUE" -> {
                return new GeneratedMessage(null, null, kind);
            }
            case "OVERSIZED" -> {
                GenericRecord r = transcode(records.valid(onTime, number, eventTime).value(), "v2", -1);
                r.put(ADDED_FIELD, "x".repeat(spec.oversizedBytes()));
                return new GeneratedMessage(null, wire("v2", r), kind);
            }
            case "MISSING_FIELD", "NULL_FIELD", "SCHEMA_MISMATCH" -> {
                int field = Math.floorMod(turn, n);
                String schema = (name.equals("MISSING_FIELD") ? "missing-" : name.equals("NULL_FIELD") ? "nullable-" : "mismatch-")
                        + fields.get(field);
                byte[] json = records.valid(onTime, number, eventTime).value();
                GenericRecord r = transcode(json, schema, field);
                if (name.equals("SCHEMA_MISMATCH")) {
                    r.put(fields.get(field), mismatched(json, field));
                }
                return new GeneratedMessage(null, wire(schema, r), kind);
            }
            case "NOT_AVRO" -> {
                byte[] text = records.valid(onTime, number, eventTime).value();
                byte[] wire = wire("v1", transcode(text, "v1", -1));
                byte[] value = switch (Math.floorMod(turn, 4)) {
                    case 0 -> text;                                          // JSON, from a producer not set up for Avro
                    case 1 -> Arrays.copyOfRange(wire, 5, wire.length);     // the Avro body without the header
                    case 2 -> withFirstByte(wire, (byte) 1);                 // another serializer's magic byte
                    default -> Arrays.copyOf(wire, 1 + rng.nextInt(4));      // cut within the header
                };
                return new GeneratedMessage(null, value, kind);
            }
            case "UNKNOWN_SCHEMA" -> {
                byte[] wire = wire("v1", transcode(records.valid(onTime, number, eventTime).value(), "v1", -1));
                ByteBuffer.wrap(wire, 1, 4).putInt(UNKNOWN_ID_BASE + rng.nextInt(1_000));
                return new GeneratedMessage(null, wire, kind);
            }
            case "BAD_AVRO" -> {
                byte[] wire = wire("v1", transcode(records.valid(onTime, number, eventTime).value(), "v1", -1));
                byte[] value;
                if (Math.floorMod(turn, 2) == 0) {
                    value = Arrays.copyOf(wire, 5 + rng.nextInt(wire.length - 5)); // cut short: a strict prefix, header kept
                } else {
                    value = Arrays.copyOf(wire, wire.length + 1 + rng.nextInt(8));   // bytes after the record
                    for (int i = wire.length; i < value.length; i++) {
                        value[i] = (byte) (1 + rng.nextInt(255));
                    }
                }
                return new GeneratedMessage(null, value, kind);
            }
            default -> {
                // A kind about values (a CHECK broken, an event time out of range): the profile's JSON record, in Avro.
                if (!EventFormat.JSON.writes(kind) || !EventFormat.AVRO.writes(kind)) {
                    throw new IllegalStateException("not an invalid kind of format AVRO: " + kind);
                }
                return new GeneratedMessage(null, wire("v1", transcode(records.invalid(kind, number, eventTime, clock, futureAnchor).value(),
                        "v1", -1)), kind);
            }
        }
    }

    private static byte[] withFirstByte(byte[] b, byte first) {
        byte[] c = b.clone();
        c[0] = first;
        return c;
    }

    /** The JSON record's fields as a record of writer schema {@code schemaName}; field {@code skip} (if not -1) left null. */
    private GenericRecord transcode(byte[] json, String schemaName, int skip) {
        Schema schema = schemas.get(schemaName);
        GenericRecord r = new GenericData.Record(schema);
        JsonNode node;
        try {
            node = JSON.readTree(json);
        } catch (IOException e) {
            throw new IllegalStateException("the profile wrote a record that is not JSON: " + new String(json, StandardCharsets.UTF_8), e);
        }
        for (int i = 0; i < fields.size(); i++) {
            if (i == skip) {
                continue;
            }
            JsonNode v = node.get(fields.get(i));
            r.put(fields.get(i), switch (types[i]) {
                case STRING -> v.textValue();
                case DOUBLE -> v.doubleValue();
                case DECIMAL_12_2 -> v.decimalValue().setScale(2, RoundingMode.UNNECESSARY);
                case TIMESTAMP -> {
                    Instant t = OffsetDateTime.parse(v.textValue(), DateTimeFormatter.ISO_OFFSET_DATE_TIME).toInstant();
                    yield Math.addExact(Math.multiplyExact(t.getEpochSecond(), 1_000_000L), t.getNano() / 1000);
                }
            });
        }
        return r;
    }

    /** Field {@code field} of the JSON record as its mismatched writer type: a string as its UTF-8 bytes, anything else as its text. */
    private Object mismatched(byte[] json, int field) {
        try {
            JsonNode v = JSON.readTree(json).get(fields.get(field));
            return types[field] == FieldType.STRING ? ByteBuffer.wrap(v.textValue().getBytes(StandardCharsets.UTF_8))
                    : v.isTextual() ? v.textValue() : v.decimalValue().toPlainString();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The record in Confluent's wire format under the id registered for {@code schemaName}. */
    private byte[] wire(String schemaName, GenericRecord r) {
        out.reset();
        out.write(0);
        out.writeBytes(ByteBuffer.allocate(4).putInt(spec.schemaIds().get(schemaName)).array());
        encoder = EncoderFactory.get().directBinaryEncoder(out, encoder);
        try {
            writers.computeIfAbsent(schemaName, s -> new GenericDatumWriter<>(schemas.get(s), MODEL)).write(r, encoder);
            encoder.flush();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return out.toByteArray();
    }
}
