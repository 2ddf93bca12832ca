package io.tidemark.generate;

import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.List;
import java.util.SplittableRandom;
import java.util.stream.IntStream;

/**
 * The records of one {@link TrafficProfile}, valid and malformed, drawn from the generator's random
 * sequence. {@link TrafficGenerator} decides each message's kind and event time; this class writes
 * the message.
 *
 * <p>What every profile shares is written here, once: a record is a flat JSON object of the
 * profile's fields ({@link Format}) in their order, one of them the Kafka key (a string
 * {@code prefix-digits}), one a number and one the event time (ISO-8601, 3 % of them in a non-UTC
 * offset); and the malformed
 * messages any pipeline must dead-letter (truncated JSON, plain text, bad UTF-8, binary garbage,
 * empty, tombstone, not an object, a field missing, null, wrong-typed, nested, duplicated, a bad,
 * future or past timestamp, oversized) are made from such a record the same way for every profile.
 *
 * <p>A subclass supplies what is its own: its fields and how to draw and write their values
 * ({@link #draft}, {@link #writeText}, {@link #nudge}), its wrong-typed values ({@link #writeWrongType}),
 * its unreadable timestamps and Latin-1 field, and the invalid kinds of its pipeline's CHECKs
 * ({@link #writeOwnInvalid}).
 *
 * <p>Not thread-safe, like its generator.
 */
abstract class ProfileTraffic {

    static final double OFFSET_SHARE = 0.03;
    static final long FUTURE_MIN_MILLIS = 2 * 3_600_000L;
    static final long FUTURE_MAX_MILLIS = 24 * 3_600_000L;
    static final double MISSPELL_SHARE = 0.3;

    private static final int[] OFFSETS_MINUTES = {60, 120, -300, 330, 540, -210, 0};
    private static final byte[] NULL = ascii("null");
    private static final byte[][] BAD_UTF8 = {
            {(byte) 0xFF},                                              // never valid in UTF-8
            {(byte) 0xC3, (byte) 0x28},                                 // lead byte, bad continuation
            {(byte) 0xC0, (byte) 0xAF},                                 // overlong '/'
            {(byte) 0xED, (byte) 0xA0, (byte) 0x80},                    // UTF-16 surrogate D800
            {(byte) 0x80},                                              // lone continuation
            {(byte) 0xE2, (byte) 0x82},                                 // truncated 3-byte sequence
            {(byte) 0xF8, (byte) 0x88, (byte) 0x80, (byte) 0x80, (byte) 0x80}, // 5-byte form
            {(byte) 0xF4, (byte) 0x90, (byte) 0x80, (byte) 0x80}};      // above U+10FFFF
    private static final byte[][] WHITESPACE = {ascii(" "), ascii("\n"), ascii("  \t\r\n")};
    private static final String[] PLAIN_TEXT = {"ping", "hello from the load balancer health check", "GET /health HTTP/1.1"};

    /**
     * A profile's record, and what its malformed messages are made of besides it.
     *
     * @param name          what one record is called: the root element of its XML form
     * @param fields        the field names, in the order they are written; a valid record has exactly these
     * @param misspellings  a misspelling of each name, in the same order (what a MISSING_FIELD message may carry instead)
     * @param key           the string field whose value is the Kafka key of a valid message, {@code prefix-digits}
     * @param number        the field holding a JSON number
     * @param time          the field holding the event time, an ISO-8601 timestamp
     * @param badTimestamps strings the stream cannot read as the event time
     * @param latin1Field   an extra string field as a misconfigured producer writes it: {@code "name":"value"}
     *                      with non-ASCII characters in the value, sent in Latin-1 (so not UTF-8)
     */
    record Format(String name, List<String> fields, List<String> misspellings, int key, int number, int time,
                  List<String> badTimestamps, String latin1Field) {
        Format {
            fields = List.copyOf(fields);
            misspellings = List.copyOf(misspellings);
            badTimestamps = List.copyOf(badTimestamps);
            if (misspellings.size() != fields.size()) {
                throw new IllegalArgumentException("one misspelling per field: " + fields + " vs " + misspellings);
            }
            if (key == time || key == number || number == time) {
                throw new IllegalArgumentException("the key, the number and the time are three different fields");
            }
        }
    }

    /**
     * Ids {@code 0..n-1} drawn Zipf-active, a few ids taking most draws, and written {@code prefix}
     * then the id zero-padded to at least {@code minDigits} digits (more when n needs them). The
     * busiest id is not 0: Zipf rank r is id {@code ((r - 1) * multiplier + offset) mod n}, a
     * permutation (the multiplier is coprime to n) chosen by the salts.
     */
    static final class ZipfIds {
        private final byte[] prefix;
        private final int width;
        private final ZipfSampler zipf;
        private final long n;
        private final long multiplier;
        private final long offset;

        ZipfIds(String prefix, int n, int minDigits, double exponent, long multiplierSalt, long offsetSalt) {
            this.prefix = ascii(prefix);
            this.width = Math.max(minDigits, MessageBuffer.digits(n - 1L));
            this.zipf = new ZipfSampler(n, exponent);
            this.n = n;
            long m = n == 1 ? 1 : Math.floorMod(mix64(multiplierSalt), this.n) | 1;
            while (gcd(m, n) != 1) {
                m = (m + 2) % n;
            }
            this.multiplier = m;
            this.offset = Math.floorMod(mix64(offsetSalt), this.n);
        }

        long next(SplittableRandom rng) {
            return ((zipf.sample(rng) - 1L) * multiplier + offset) % n;
        }

        /** {@code id} as text, e.g. {@code sub-000123}. */
        MessageBuffer write(MessageBuffer out, long id) {
            return out.bytes(prefix).zeroPadded(id, width);
        }

        private static long gcd(long a, long b) {
            while (b != 0) {
                long t = a % b;
                a = b;
                b = t;
            }
            return a;
        }
    }

    /** The malformed messages every profile has, whatever its pipeline; each profile's kind enum has one of each name. */
    private enum Malformation {
        TRUNCATED_JSON, NOT_JSON, INVALID_UTF8, BINARY_GARBAGE, EMPTY, NULL_VALUE, NOT_AN_OBJECT, MISSING_FIELD,
        NULL_FIELD, WRONG_TYPE, NESTED_JUNK, BAD_TIMESTAMP, FUTURE_EVENT_TIME, PAST_EVENT_TIME, DUPLICATE_FIELD, OVERSIZED
    }

    protected final TrafficSpec spec;
    protected final SplittableRandom rng;
    /** Where a message is written; its bytes are copied out. */
    protected final MessageBuffer buf = new MessageBuffer();
    private final Format format;
    private final byte[][] fieldKeys;
    private final byte[][] misspelledKeys;
    private final int[] allFields;
    /** By a kind's ordinal: its {@link Malformation}, or null for a valid kind or one of the profile's own. */
    private final Malformation[] malformations;
    private byte[] padding;

    private int missingCursor;
    private int nullCursor;
    private int duplicateCursor;
    private int nestedCursor;
    private int wrongTypeCursor;

    // The drafted record's event time; the subclass keeps the rest (reused; no allocation per message).
    private long eventMillis;
    private int offsetMinutes;
    private int keyFrom;
    private int keyTo;
    private double spareGaussian = Double.NaN;

    /**
     * @param rng the generator's random sequence, shared so that one seed gives one stream of messages
     */
    protected ProfileTraffic(TrafficSpec spec, SplittableRandom rng, Format format) {
        this.spec = spec;
        this.rng = rng;
        this.format = format;
        this.fieldKeys = keys(format.fields());
        this.misspelledKeys = keys(format.misspellings());
        this.allFields = IntStream.range(0, fieldKeys.length).toArray();
        List<MessageKind> kinds = spec.profile().kinds();
        this.malformations = new Malformation[kinds.size()];
        int found = 0;
        for (MessageKind k : kinds) {
            for (Malformation m : Malformation.values()) {
                if (!k.isValid() && m.name().equals(k.name())) {
                    malformations[k.ordinal()] = m;
                    found++;
                }
            }
        }
        if (found != Malformation.values().length) {
            throw new IllegalStateException("the " + spec.profile().cliName() + " kinds lack some of "
                    + List.of(Malformation.values()));
        }
    }

    // ------------------------------------------------------------------ what a profile supplies

    /**
     * Draws the fields of one record into the subclass's scratch fields, calling {@link #stamp} at
     * its place in the draw order.
     *
     * @param number the message's number in the run, from 0
     */
    protected abstract void draft(long number, long eventTime);

    /**
     * The drafted value of {@code field}, never the time field, as text: a string's characters
     * without quotes, a number as JSON writes it.
     */
    protected abstract void writeText(MessageBuffer out, int field);

    /** Changes the drafted value of {@code field}, never the time field, to another valid one. */
    protected abstract void nudge(int field);

    /**
     * Writes a value of the wrong JSON type (or one the pipeline's column cannot hold) for one of the
     * fields, the {@code turn}-th of the profile's cycle of such values.
     *
     * @return the field it is for
     */
    protected abstract int writeWrongType(MessageBuffer out, int turn);

    /**
     * Writes a message of one of the profile's own invalid kinds (those of its pipeline's CHECKs),
     * usually by {@link #writeRecordWith}.
     *
     * @return false if {@code kind} is not one of them
     */
    protected abstract boolean writeOwnInvalid(MessageKind kind);

    /** Fields a record may carry after the declared ones (the stream ignores them); none by default. */
    protected void writeExtraFields() {
    }

    /** The fields of the {@code key=value} plain-text form, in order: all of them by default. */
    protected int[] logLineFields() {
        return allFields;
    }

    /** The fields of the XML plain-text form, in order: all of them by default. */
    protected int[] xmlFields() {
        return allFields;
    }

    /** How many of the bad UTF-8 sequences the profile draws from, in their order: all by default. */
    protected int badUtf8Forms() {
        return BAD_UTF8.length;
    }

    /**
     * Whether a binary payload always holds a 0xFF byte, so that it can never happen to be UTF-8 text
     * (and the stream always says NOT_UTF8): not by default.
     */
    protected boolean binaryHoldsNonUtf8Byte() {
        return false;
    }

    // ------------------------------------------------------------------ what a profile may use

    /** Sets the drafted record's event time, and draws whether it is written in a non-UTC offset. */
    protected final void stamp(long eventTime) {
        eventMillis = eventTime;
        offsetMinutes = rng.nextDouble() < OFFSET_SHARE ? OFFSETS_MINUTES[rng.nextInt(OFFSETS_MINUTES.length)] : 0;
    }

    /** The drafted record's event time (epoch millis). */
    protected final long eventMillis() {
        return eventMillis;
    }

    /** A log-normal draw: {@code median * e^(sigma * N(0,1))}, rounded, at most {@code max}. */
    protected final long logNormal(double median, double sigma, long max) {
        return Math.min(max, Math.round(median * StrictMath.exp(sigma * gaussian())));
    }

    /** A standard normal draw: Box-Muller on StrictMath, so the sequence is the same on every JVM. */
    private double gaussian() {
        if (!Double.isNaN(spareGaussian)) {
            double g = spareGaussian;
            spareGaussian = Double.NaN;
            return g;
        }
        double r = StrictMath.sqrt(-2.0 * StrictMath.log(1.0 - rng.nextDouble()));
        double theta = 2.0 * Math.PI * rng.nextDouble();
        spareGaussian = r * StrictMath.sin(theta);
        return r * StrictMath.cos(theta);
    }

    /** The drafted record, complete, but with {@code raw} as the JSON value of {@code field}. */
    protected final void writeRecordWith(int field, byte[] raw) {
        writeRecord(field, raw, false);
        buf.b('}');
    }

    // ------------------------------------------------------------------ messages

    /** A valid message of {@code kind} stamped {@code eventTime}, keyed by the record's key field. */
    final GeneratedMessage valid(MessageKind kind, long number, long eventTime) {
        draft(number, eventTime);
        buf.reset();
        writeRecord(-1, null, false);
        buf.b('}');
        return new GeneratedMessage(buf.copy(keyFrom, keyTo), buf.toBytes(), kind, eventTime);
    }

    /**
     * An invalid message of {@code kind}: a normal record stamped {@code eventTime}, then broken the
     * way the kind says. Unkeyed.
     *
     * @param clock        the event clock of this message
     * @param futureAnchor what a future event time is ahead of: the clock, or the end of a backlog
     */
    final GeneratedMessage invalid(MessageKind kind, long number, long eventTime, long clock, long futureAnchor) {
        draft(number, eventTime);
        buf.reset();
        Malformation malformation = malformations[kind.ordinal()];
        if (malformation == null) {
            if (!writeOwnInvalid(kind)) {
                throw new IllegalStateException("not an invalid kind: " + kind);
            }
            return new GeneratedMessage(null, buf.toBytes(), kind);
        }
        int n = format.fields().size();
        switch (malformation) {
            case TRUNCATED_JSON -> {
                writeRecord(-1, null, false);
                buf.b('}');
                buf.truncate(1 + rng.nextInt(buf.length() - 1));
            }
            case NOT_JSON -> writePlainText();
            case INVALID_UTF8 -> writeInvalidUtf8();
            case BINARY_GARBAGE -> writeBinaryGarbage();
            case EMPTY -> {
                if (rng.nextInt(10) >= 7) {
                    buf.bytes(WHITESPACE[rng.nextInt(WHITESPACE.length)]);
                }
            }
            case NULL_VALUE -> {
                return new GeneratedMessage(null, null, kind);
            }
            case NOT_AN_OBJECT -> writeNotAnObject();
            case MISSING_FIELD -> {
                int field = Math.floorMod(missingCursor++, n);
                boolean misspell = rng.nextDouble() < MISSPELL_SHARE;
                writeRecord(field, null, misspell);
                buf.b('}');
            }
            case NULL_FIELD -> writeRecordWith(Math.floorMod(nullCursor++, n), NULL);
            case WRONG_TYPE -> {
                MessageBuffer raw = new MessageBuffer();
                int field = writeWrongType(raw, wrongTypeCursor++);
                writeRecordWith(field, raw.toBytes());
            }
            case NESTED_JUNK -> writeRecordWith(Math.floorMod(nestedCursor++, n), nestedJunk());
            case BAD_TIMESTAMP -> {
                List<String> bad = format.badTimestamps();
                writeRecordWith(format.time(), quoted(bad.get(rng.nextInt(bad.size()))));
            }
            case FUTURE_EVENT_TIME -> {
                eventMillis = futureAnchor + FUTURE_MIN_MILLIS + rng.nextLong(FUTURE_MAX_MILLIS - FUTURE_MIN_MILLIS + 1);
                offsetMinutes = 0;
                writeRecord(-1, null, false);
                buf.b('}');
            }
            case PAST_EVENT_TIME -> {
                String ts = switch (rng.nextInt(3)) {
                    case 0 -> "1970-01-01T00:00:00Z";
                    case 1 -> "0001-01-01T00:00:00Z";
                    default -> Instant.ofEpochMilli(clock - (2 + rng.nextInt(29)) * 365L * 86_400_000L).toString();
                };
                writeRecordWith(format.time(), quoted(ts));
            }
            case DUPLICATE_FIELD -> writeDuplicate(Math.floorMod(duplicateCursor++, n));
            case OVERSIZED -> writeOversized();
        }
        return new GeneratedMessage(null, buf.toBytes(), kind);
    }

    // ------------------------------------------------------------------ writers

    /**
     * Writes the drafted record without its closing brace. Field {@code special}: omitted (raw null),
     * written under its misspelled name, or with {@code raw} as its JSON value.
     */
    private void writeRecord(int special, byte[] raw, boolean misspell) {
        buf.b('{');
        boolean first = true;
        for (int field = 0; field < fieldKeys.length; field++) {
            boolean isSpecial = field == special;
            if (isSpecial && raw == null && !misspell) {
                continue;
            }
            if (!first) {
                buf.b(',');
            }
            first = false;
            buf.bytes(isSpecial && misspell ? misspelledKeys[field] : fieldKeys[field]);
            if (isSpecial && raw != null) {
                buf.bytes(raw);
            } else if (field == format.key()) {
                keyFrom = buf.length() + 1;
                writeValue(buf, field);
                keyTo = buf.length() - 1;
            } else {
                writeValue(buf, field);
            }
        }
        writeExtraFields();
    }

    /** The drafted value of {@code field} as JSON: a string quoted, the time in its drafted offset. */
    private void writeValue(MessageBuffer out, int field) {
        if (field == format.time()) {
            out.b('"').isoInstant(eventMillis, offsetMinutes).b('"');
        } else if (field == format.number()) {
            writeText(out, field);
        } else {
            out.b('"');
            writeText(out, field);
            out.b('"');
        }
    }

    /** The drafted value of {@code field} as plain text: unquoted, the time in UTC. */
    private void writeTextOf(int field) {
        if (field == format.time()) {
            buf.isoInstant(eventMillis, 0);
        } else {
            writeText(buf, field);
        }
    }

    /** Plain text that starts with a letter or '<', never like a JSON value: CSV, key=value, XML, or a line of text. */
    private void writePlainText() {
        switch (rng.nextInt(4)) {
            case 0 -> {
                for (int field = 0; field < fieldKeys.length; field++) {
                    if (field > 0) {
                        buf.b(',');
                    }
                    writeTextOf(field);
                }
            }
            case 1 -> {
                int[] logLine = logLineFields();
                for (int i = 0; i < logLine.length; i++) {
                    if (i > 0) {
                        buf.b(' ');
                    }
                    buf.ascii(format.fields().get(logLine[i])).b('=');
                    writeTextOf(logLine[i]);
                }
            }
            case 2 -> {
                buf.b('<').ascii(format.name()).b('>');
                for (int field : xmlFields()) {
                    String name = format.fields().get(field);
                    buf.b('<').ascii(name).b('>');
                    writeTextOf(field);
                    buf.ascii("</").ascii(name).b('>');
                }
                buf.ascii("</").ascii(format.name()).b('>');
            }
            default -> buf.ascii(PLAIN_TEXT[rng.nextInt(PLAIN_TEXT.length)]);
        }
    }

    /** A record with a Latin-1 extra field, or with bad UTF-8 in its key after the key's prefix (up to its '-'). */
    private void writeInvalidUtf8() {
        if (rng.nextBoolean()) {
            writeRecord(-1, null, false);
            buf.b(',').bytes(format.latin1Field().getBytes(StandardCharsets.ISO_8859_1)).b('}');
            return;
        }
        byte[] bad = BAD_UTF8[rng.nextInt(badUtf8Forms())];
        MessageBuffer text = new MessageBuffer();
        writeText(text, format.key());
        byte[] key = text.toBytes();
        int prefix = 0;
        while (key[prefix++] != '-') {
            // the prefix ends with its '-'
        }
        MessageBuffer raw = new MessageBuffer();
        raw.b('"').bytes(key, 0, prefix).bytes(bad).bytes(key, prefix, key.length - prefix).b('"');
        writeRecordWith(format.key(), raw.toBytes());
    }

    /** Binary payloads of 8 to 512 bytes: Confluent wire format, gzip, or a control byte first. */
    private void writeBinaryGarbage() {
        int length = 8 + rng.nextInt(505);
        switch (rng.nextInt(3)) {
            case 0 -> buf.b(0x00).b(0x00).b(0x00).b(0x00).b(1 + rng.nextInt(255)); // Confluent wire format
            case 1 -> buf.b(0x1F).b(0x8B).b(0x08).b(0x00);                           // gzip header
            default -> buf.b(1 + rng.nextInt(8));                                     // a control byte first
        }
        int ffAt = binaryHoldsNonUtf8Byte() ? buf.length() + rng.nextInt(length - buf.length()) : -1;
        while (buf.length() < length) {
            long bits = rng.nextLong();
            for (int i = 0; i < 8 && buf.length() < length; i++, bits >>>= 8) {
                buf.b(buf.length() == ffAt ? 0xFF : (int) bits);
            }
        }
    }

    private void writeNotAnObject() {
        switch (rng.nextInt(7)) {
            case 0 -> {
                // An array wrapping a valid record: Spark's from_json unwraps it, the stream does not.
                buf.b('[');
                writeRecord(-1, null, false);
                buf.ascii("}]");
            }
            case 1 -> buf.ascii("[]");
            case 2 -> writeValue(buf, format.number());
            case 3 -> writeValue(buf, 0);    // the first field, a string
            case 4 -> buf.bytes(NULL);
            case 5 -> buf.ascii("true");
            default -> buf.ascii("[1,2,3]");
        }
    }

    /** The record's number wrapped in 3 to 40 levels of objects and arrays. */
    private byte[] nestedJunk() {
        MessageBuffer raw = new MessageBuffer();
        int depth = 3 + rng.nextInt(38);
        for (int d = 0; d < depth; d++) {
            raw.ascii((d & 1) == 0 ? "{\"v\":" : "[");
        }
        writeValue(raw, format.number());
        for (int d = depth - 1; d >= 0; d--) {
            raw.b((d & 1) == 0 ? '}' : ']');
        }
        return raw.toBytes();
    }

    /** {@code field} written a second time, with another valid value. */
    private void writeDuplicate(int field) {
        writeRecord(-1, null, false);
        buf.b(',').bytes(fieldKeys[field]);
        if (field == format.time()) {
            eventMillis += 1000;
        } else {
            nudge(field);
        }
        writeValue(buf, field);
        buf.b('}');
    }

    /** The record padded by an extra field to {@code oversizedBytes}. */
    private void writeOversized() {
        writeRecord(-1, null, false);
        buf.ascii(",\"padding\":\"");
        int fill = spec.oversizedBytes() - buf.length() - 2;
        if (padding == null) {
            padding = base64Padding(spec.oversizedBytes(), spec.seed());
        }
        buf.bytes(padding, 0, fill).ascii("\"}");
    }

    // ------------------------------------------------------------------ helpers

    /** {@code size} base64 characters, the same for a seed: the filler of an oversized message. */
    static byte[] base64Padding(int size, long seed) {
        byte[] alphabet = ascii("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/");
        SplittableRandom r = new SplittableRandom(seed ^ 0x0DDBA11L);
        byte[] out = new byte[size];
        for (int i = 0; i < size; i++) {
            out[i] = alphabet[r.nextInt(64)];
        }
        return out;
    }

    /** SplitMix64's finaliser: a good 64-bit mix, and a bijection. */
    static long mix64(long z) {
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }

    static byte[] quoted(String s) {
        return ascii('"' + s + '"');
    }

    static byte[] ascii(String s) {
        return s.getBytes(StandardCharsets.US_ASCII);
    }

    private static byte[][] keys(List<String> names) {
        byte[][] out = new byte[names.size()][];
        for (int i = 0; i < out.length; i++) {
            out[i] = ascii('"' + names.get(i) + "\":");
        }
        return out;
    }
}
