package io.tidemark.generate;

import java.util.Locale;
import java.util.Set;

/**
 * How the generator writes its records, as a pipeline's event table reads them ({@code format 'json'}
 * or {@code format 'avro'}), and which invalid kinds exist in each: a truncated JSON object is a JSON
 * producer's mistake, an unknown schema id an Avro producer's. The kinds about values (a CHECK broken,
 * an event time out of range, a field missing or null) and about the message as a whole (empty, a
 * tombstone, oversized) exist in both.
 */
public enum EventFormat {
    /** One JSON object per message, the fields in the profile's order. */
    JSON(Set.of("TRUNCATED_JSON", "NOT_JSON", "INVALID_UTF8", "BINARY_GARBAGE", "NOT_AN_OBJECT", "WRONG_TYPE", "NESTED_JUNK",
            "BAD_TIMESTAMP", "DUPLICATE_FIELD")),
    /**
     * Confluent's wire format: a 0 byte, the writer schema's id in 4 bytes big-endian, the record in
     * Avro's binary encoding ({@link AvroTraffic}).
     */
    AVRO(Set.of("NOT_AVRO", "UNKNOWN_SCHEMA", "BAD_AVRO", "SCHEMA_MISMATCH"));

    /** The names of the kinds only this format has. */
    private final Set<String> ownKinds;

    EventFormat(Set<String> ownKinds) {
        this.ownKinds = ownKinds;
    }

    /** Whether a message of {@code kind} is written in this format: a kind of every format, or one of this format's own. */
    public boolean writes(MessageKind kind) {
        for (EventFormat f : values()) {
            if (f != this && f.ownKinds.contains(kind.name())) {
                return false;
            }
        }
        return true;
    }

    /** The name in a pipeline and on the command line: {@code json} or {@code avro}. */
    public String cliName() {
        return name().toLowerCase(Locale.ROOT);
    }

    /**
     * The format named {@code name}, case-insensitively.
     *
     * @throws IllegalArgumentException naming the formats there are
     */
    public static EventFormat of(String name) {
        for (EventFormat f : values()) {
            if (f.cliName().equalsIgnoreCase(name == null ? "" : name.trim())) {
                return f;
            }
        }
        throw new IllegalArgumentException("format must be json or avro; got " + (name == null ? "null" : "'" + name + "'"));
    }
}
