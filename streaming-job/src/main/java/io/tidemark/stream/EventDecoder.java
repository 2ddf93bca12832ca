package io.tidemark.stream;

import java.io.IOException;
import java.io.Serializable;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.time.DateTimeException;
import java.time.LocalDate;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.json.JsonReadFeature;

/**
 * Decodes one Kafka message into a network event, or says exactly why it is not one.
 *
 * <p>Strict on purpose: each required field must be present once with its JSON type, because a
 * lenient parse (Spark's {@code from_json}) turns a wrong type into a null and a duplicate key
 * into whichever value came last, and both end up as silently wrong numbers. Extra fields are
 * allowed and skipped. Pure Java and allocation-light: it runs once per record.
 */
public final class EventDecoder implements Serializable {
    private static final long serialVersionUID = 1L;

    public static final String SUBSCRIBER_ID = "subscriber_id";
    public static final String CELL_SITE_ID = "cell_site_id";
    public static final String EVENT_TS = "event_ts";
    public static final String VOLUME_GB = "volume_gb";

    private final int maxMessageBytes;
    private final long clockSkewMicros;
    private final long maxAgeMicros;

    /**
     * The largest volume one record may carry: 1e12 GB, a zettabyte. Volumes are summed exactly as
     * DECIMAL(38,9), whose largest value is just under 1e29; with this bound a window would need
     * 1e17 records to overflow.
     */
    public static final double MAX_VOLUME_GB = 1e12;
    private transient JsonFactory json;

    /**
     * @param clockSkewMicros how far event_ts may be ahead of the Kafka timestamp
     * @param maxAgeMicros how far event_ts may be behind the Kafka timestamp
     */
    public EventDecoder(int maxMessageBytes, long clockSkewMicros, long maxAgeMicros) {
        this.maxMessageBytes = maxMessageBytes;
        this.clockSkewMicros = clockSkewMicros;
        this.maxAgeMicros = maxAgeMicros;
    }

    /** The outcome: either {@code reason == null} and the four fields set, or a reason and its detail. */
    public static final class Decoded {
        public InvalidReason reason;
        public String detail;
        public String subscriberId;
        public String cellSiteId;
        public long eventMicros;
        public double volumeGb;

        boolean invalid(InvalidReason r, String d) {
            reason = r;
            detail = d;
            return false;
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
        String utf8Error = utf8Error(value);
        if (utf8Error != null) {
            return out.invalid(InvalidReason.NOT_UTF8, utf8Error);
        }
        if (json == null) {
            json = JsonFactory.builder()
                    .enable(JsonReadFeature.ALLOW_NON_NUMERIC_NUMBERS) // NaN/Infinity: a volume problem, not a syntax one
                    .build();
        }
        String subscriber = null;
        String cell = null;
        String ts = null;
        double volume = 0;
        boolean hasVolume = false;
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
                switch (name) {
                    case SUBSCRIBER_ID -> {
                        if (subscriber != null) return duplicate(out, name);
                        subscriber = requireString(p, v, name, out);
                        if (subscriber == null) return false;
                    }
                    case CELL_SITE_ID -> {
                        if (cell != null) return duplicate(out, name);
                        cell = requireString(p, v, name, out);
                        if (cell == null) return false;
                    }
                    case EVENT_TS -> {
                        if (ts != null) return duplicate(out, name);
                        ts = requireString(p, v, name, out);
                        if (ts == null) return false;
                    }
                    case VOLUME_GB -> {
                        if (hasVolume) return duplicate(out, name);
                        if (v == JsonToken.VALUE_NULL) return out.invalid(InvalidReason.NULL_FIELD, name + " is null");
                        if (v != JsonToken.VALUE_NUMBER_INT && v != JsonToken.VALUE_NUMBER_FLOAT) {
                            return out.invalid(InvalidReason.WRONG_TYPE, name + " is " + describe(v) + ", expected a number");
                        }
                        volume = p.getDoubleValue();
                        hasVolume = true;
                    }
                    default -> p.skipChildren();
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
        if (subscriber == null) return out.invalid(InvalidReason.MISSING_FIELD, SUBSCRIBER_ID + " is missing");
        if (cell == null) return out.invalid(InvalidReason.MISSING_FIELD, CELL_SITE_ID + " is missing");
        if (ts == null) return out.invalid(InvalidReason.MISSING_FIELD, EVENT_TS + " is missing");
        if (!hasVolume) return out.invalid(InvalidReason.MISSING_FIELD, VOLUME_GB + " is missing");
        if (subscriber.isBlank()) return out.invalid(InvalidReason.BLANK_ID, SUBSCRIBER_ID + " is blank");
        if (cell.isBlank()) return out.invalid(InvalidReason.BLANK_ID, CELL_SITE_ID + " is blank");
        if (Double.isNaN(volume) || Double.isInfinite(volume)) {
            return out.invalid(InvalidReason.NON_FINITE_VOLUME, VOLUME_GB + " is " + volume);
        }
        if (volume < 0) {
            return out.invalid(InvalidReason.NEGATIVE_VOLUME, VOLUME_GB + " is " + volume);
        }
        if (volume > MAX_VOLUME_GB) {
            return out.invalid(InvalidReason.VOLUME_TOO_LARGE, VOLUME_GB + " is " + volume + "; at most " + MAX_VOLUME_GB
                    + " GB per record, so that exact sums fit DECIMAL(38,9)");
        }
        long micros;
        try {
            micros = parseIsoInstantMicros(ts);
        } catch (DateTimeException | IllegalArgumentException e) {
            return out.invalid(InvalidReason.BAD_TIMESTAMP, EVENT_TS + " '" + abbreviate(ts) + "': " + e.getMessage());
        }
        if (micros - ingestMicros > clockSkewMicros) {
            return out.invalid(InvalidReason.FUTURE_EVENT_TIME, EVENT_TS + " " + ts + " is " + ((micros - ingestMicros) / 1_000_000)
                    + " s ahead of the Kafka timestamp; allowed clock skew is " + (clockSkewMicros / 1_000_000) + " s");
        }
        if (ingestMicros - micros > maxAgeMicros) {
            return out.invalid(InvalidReason.PAST_EVENT_TIME, EVENT_TS + " " + ts + " is " + ((ingestMicros - micros) / 86_400_000_000L)
                    + " days before the Kafka timestamp; max-event-age is " + (maxAgeMicros / 86_400_000_000L) + " days");
        }
        out.reason = null;
        out.detail = null;
        out.subscriberId = subscriber;
        out.cellSiteId = cell;
        out.eventMicros = micros;
        out.volumeGb = volume;
        return true;
    }

    private static boolean duplicate(Decoded out, String name) {
        return out.invalid(InvalidReason.DUPLICATE_FIELD, name + " appears more than once");
    }

    private static String requireString(JsonParser p, JsonToken v, String name, Decoded out) throws IOException {
        if (v == JsonToken.VALUE_STRING) {
            return p.getText();
        }
        if (v == JsonToken.VALUE_NULL) {
            out.invalid(InvalidReason.NULL_FIELD, name + " is null");
        } else {
            out.invalid(InvalidReason.WRONG_TYPE, name + " is " + describe(v) + ", expected a string");
        }
        return null;
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
        if (m == null) return "unparseable";
        int nl = m.indexOf('\n');
        return abbreviate(nl < 0 ? m : m.substring(0, nl));
    }

    private static String abbreviate(String s) {
        return s.length() <= 120 ? s : s.substring(0, 117) + "...";
    }
}
