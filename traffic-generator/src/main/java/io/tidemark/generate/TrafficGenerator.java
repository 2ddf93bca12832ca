package io.tidemark.generate;

import io.tidemark.generate.GeneratedMessage.Kind;

import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.time.InstantSource;
import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;
import java.util.Optional;
import java.util.SplittableRandom;
import java.util.Spliterator;
import java.util.Spliterators;
import java.util.stream.Stream;
import java.util.stream.StreamSupport;

/**
 * The messages of a {@link TrafficSpec}, one at a time: a pure, deterministic function of the spec
 * and (in {@link IngestMode#LIVE} mode, or BACKLOG without an explicit start) the wall clock. No I/O.
 *
 * <p>Valid messages look like
 * {@code {"subscriber_id":"sub-000123","cell_site_id":"cell-0042","event_ts":"2026-11-29T14:03:12.345Z","volume_gb":0.0123}},
 * sometimes with an extra {@code "rat"} field and sometimes with {@code event_ts} written in a
 * non-UTC offset ({@code 2026-11-29T15:03:12.345+01:00}, the same instant). Subscribers are
 * Zipf-active (exponent 1.1), each on a home cell 80% of the time; volume_gb is log-normal
 * (median 0.01 GB, capped at 5 GB) with six decimals.
 *
 * <p>Not thread-safe: one generator per producing thread.
 */
public final class TrafficGenerator implements Iterator<GeneratedMessage> {

    static final double ZIPF_EXPONENT = 1.1;
    static final double HOME_CELL_SHARE = 0.8;
    static final double VOLUME_MEDIAN_GB = 0.01;
    static final double VOLUME_SIGMA = 1.6;
    static final long VOLUME_MAX_MICROS = 5_000_000L;
    static final double OFFSET_SHARE = 0.03;
    static final double RAT_SHARE = 0.25;
    static final long FUTURE_MIN_MILLIS = 2 * 3_600_000L;
    static final long FUTURE_MAX_MILLIS = 24 * 3_600_000L;
    /** Field names in the order they are written. */
    public static final List<String> REQUIRED_FIELDS = List.of("subscriber_id", "cell_site_id", "event_ts", "volume_gb");

    private static final String[] BLANKS = {"", " ", "   ", "\\t", " \\n "};
    private static final int SUBSCRIBER = 0;
    private static final int CELL = 1;
    private static final int EVENT_TS = 2;
    private static final int VOLUME = 3;
    private static final byte[][] FIELD_KEYS = {
            ascii("\"subscriber_id\":"), ascii("\"cell_site_id\":"), ascii("\"event_ts\":"), ascii("\"volume_gb\":")};
    private static final byte[][] MISSPELLED_KEYS = {
            ascii("\"subscriberId\":"), ascii("\"cell_id\":"), ascii("\"ts\":"), ascii("\"volume\":")};
    private static final byte[] SUB_PREFIX = ascii("sub-");
    private static final byte[] CELL_PREFIX = ascii("cell-");
    private static final byte[] RAT_KEY = ascii(",\"rat\":\"");
    private static final String[] RATS = {"5G", "5G", "5G", "5G", "5G", "4G", "4G", "4G", "4G", "3G"};
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
    private static final String[] NON_FINITE = {"1e999", "-1e999", "NaN", "Infinity", "-Infinity"};
    private static final String[] BAD_TIMESTAMPS = {
            "yesterday", "2026-13-45T99:00:00Z", "", "2026-11-29T25:61:00Z", "not a timestamp",
            "29/11/2026 14:03:12", "2026-02-30T10:00:00Z", "2026-11-29T14:03:12+25:00"};
    private static final byte[][] WHITESPACE = {ascii(" "), ascii("\n"), ascii("  \t\r\n")};
    private static final String[] PLAIN_TEXT = {"ping", "hello from the load balancer health check", "GET /health HTTP/1.1"};

    private static final Kind[] INVALID_KINDS = Kind.invalidKinds().toArray(new Kind[0]);
    private static final double[] INVALID_CUMULATIVE = cumulativeWeights();

    private final TrafficSpec spec;
    private final InstantSource wallClock;
    private final IngestMode mode;
    private final SplittableRandom rng;
    private final ZipfSampler zipf;
    private final long subscriberMultiplier;
    private final long subscriberOffset;
    private final long cellSalt;
    private final int subscriberWidth;
    private final int cellWidth;
    private final double invalidFraction;
    private final double validThreshold;
    private final long spreadMillis;
    private final long lateMinMillis;
    private final long lateRangeMillis;
    private final long clockStartMillis;
    private final double millisPerEvent;
    private final long backlogEndMillis;
    private final MessageBuffer buf = new MessageBuffer();
    private byte[] padding;

    private long index;
    private int missingCursor;
    private int nullCursor;
    private int duplicateCursor;
    private int nestedCursor;
    private int wrongTypeCursor;

    // The record being written (reused; no allocation per message).
    private long subscriber;
    private long cell;
    private long eventMillis;
    private long volumeMicros;
    private int offsetMinutes;
    private int rat;
    private int keyFrom;
    private int keyTo;
    private double spareGaussian = Double.NaN;

    /** A generator on the system clock. */
    public TrafficGenerator(TrafficSpec spec) {
        this(spec, InstantSource.system());
    }

    /**
     * @param wallClock the "now" of LIVE mode, and of the default BACKLOG start (read once, here)
     */
    public TrafficGenerator(TrafficSpec spec, InstantSource wallClock) {
        this.spec = spec;
        this.wallClock = wallClock;
        this.mode = spec.resolvedIngestMode();
        this.rng = new SplittableRandom(spec.seed());
        this.zipf = new ZipfSampler(spec.subscribers(), ZIPF_EXPONENT);
        long n = spec.subscribers();
        long multiplier = n == 1 ? 1 : Math.floorMod(mix64(spec.seed() ^ 0x5DEECE66DL), n) | 1;
        while (gcd(multiplier, n) != 1) {
            multiplier = (multiplier + 2) % n;
        }
        this.subscriberMultiplier = multiplier;
        this.subscriberOffset = Math.floorMod(mix64(spec.seed() + 1), n);
        this.cellSalt = mix64(spec.seed() + 2);
        this.subscriberWidth = Math.max(6, MessageBuffer.digits(n - 1));
        this.cellWidth = Math.max(4, MessageBuffer.digits(spec.cells() - 1L));
        this.invalidFraction = spec.invalidFraction();
        this.validThreshold = spec.invalidFraction() + spec.lateFraction();
        this.spreadMillis = spec.outOfOrderSpread().toMillis();
        this.lateMinMillis = spec.lateDelayMin().toMillis();
        this.lateRangeMillis = spec.lateDelayMax().toMillis() - lateMinMillis;
        this.millisPerEvent = 1000.0 / spec.eventsPerSecondOfEventTime();
        if (mode == IngestMode.BACKLOG) {
            long span = TrafficSpec.backlogSpanMillis(spec.count(), spec.eventsPerSecondOfEventTime());
            this.clockStartMillis = spec.eventClockStart() != null
                    ? spec.eventClockStart().toEpochMilli() : wallClock.millis() - span;
            this.backlogEndMillis = clockStartMillis + span;
        } else {
            this.clockStartMillis = Long.MIN_VALUE;
            this.backlogEndMillis = Long.MIN_VALUE;
        }
    }

    public TrafficSpec spec() {
        return spec;
    }

    /** LIVE or BACKLOG. */
    public IngestMode mode() {
        return mode;
    }

    /** Where the BACKLOG event clock starts (resolved default included); empty in LIVE mode. */
    public Optional<Instant> eventClockStart() {
        return mode == IngestMode.BACKLOG ? Optional.of(Instant.ofEpochMilli(clockStartMillis)) : Optional.empty();
    }

    /** Messages generated so far. */
    public long generated() {
        return index;
    }

    /** False once {@code count} messages were generated; a run without a count never ends here. */
    @Override
    public boolean hasNext() {
        return spec.count() == null || index < spec.count();
    }

    /** The event clock for the next message: the wall clock (LIVE) or the backlog's synthetic clock. */
    public long eventClockMillis() {
        return mode == IngestMode.LIVE ? wallClock.millis() : clockStartMillis + (long) (index * millisPerEvent);
    }

    @Override
    public GeneratedMessage next() {
        if (!hasNext()) {
            throw new NoSuchElementException("all " + spec.count() + " messages were generated");
        }
        long clock = eventClockMillis();
        index++;
        double u = rng.nextDouble();
        if (u < invalidFraction) {
            return invalid(pickInvalidKind(), clock);
        }
        if (u < validThreshold) {
            return valid(Kind.LATE, clock - lateMinMillis - (lateRangeMillis == 0 ? 0 : rng.nextLong(lateRangeMillis + 1)));
        }
        return valid(Kind.ON_TIME, clock - onTimeDelay());
    }

    /** The remaining messages as a sequential stream (infinite for a run without a count). */
    public Stream<GeneratedMessage> stream() {
        int characteristics = Spliterator.ORDERED | Spliterator.NONNULL;
        return StreamSupport.stream(Spliterators.spliteratorUnknownSize(this, characteristics), false);
    }

    private long onTimeDelay() {
        // Most events arrive promptly, a tail arrives up to the full spread behind: u^2 skews toward 0.
        double u = rng.nextDouble();
        return (long) (u * u * spreadMillis);
    }

    private GeneratedMessage valid(Kind kind, long eventTime) {
        draft(eventTime);
        buf.reset();
        writeRecord(-1, null, false);
        buf.b('}');
        return new GeneratedMessage(buf.copy(keyFrom, keyTo), buf.toBytes(), kind, eventTime);
    }

    private Kind pickInvalidKind() {
        double u = rng.nextDouble() * INVALID_CUMULATIVE[INVALID_CUMULATIVE.length - 1];
        for (int i = 0; i < INVALID_CUMULATIVE.length; i++) {
            if (u < INVALID_CUMULATIVE[i]) {
                return INVALID_KINDS[i];
            }
        }
        return INVALID_KINDS[INVALID_KINDS.length - 1];
    }

    private GeneratedMessage invalid(Kind kind, long clock) {
        draft(clock - onTimeDelay());
        buf.reset();
        byte[] value;
        switch (kind) {
            case TRUNCATED_JSON -> {
                writeRecord(-1, null, false);
                buf.b('}');
                buf.truncate(1 + rng.nextInt(buf.length() - 1));
            }
            case NOT_JSON -> writePlainText();
            case INVALID_UTF8 -> {
                if (rng.nextBoolean()) {
                    // A Latin-1 encoded extra field, as from a misconfigured producer: "Zürich".
                    writeRecord(-1, null, false);
                    buf.ascii(",\"cell_name\":\"Z").b(0xFC).ascii("rich\"}");
                } else {
                    byte[] bad = BAD_UTF8[rng.nextInt(BAD_UTF8.length)];
                    MessageBuffer raw = new MessageBuffer();
                    raw.b('"').bytes(SUB_PREFIX).bytes(bad).zeroPadded(subscriber, subscriberWidth).b('"');
                    writeRecord(SUBSCRIBER, raw.toBytes(), false);
                    buf.b('}');
                }
            }
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
                int field = missingCursor++ & 3;
                boolean misspell = rng.nextDouble() < 0.3;
                writeRecord(field, null, misspell);
                buf.b('}');
            }
            case NULL_FIELD -> {
                writeRecord(nullCursor++ & 3, NULL, false);
                buf.b('}');
            }
            case WRONG_TYPE -> writeWrongType();
            case NEGATIVE_VOLUME -> {
                MessageBuffer raw = new MessageBuffer().micros(-Math.max(1, volumeMicros));
                writeRecord(VOLUME, raw.toBytes(), false);
                buf.b('}');
            }
            case NON_FINITE_VOLUME -> {
                writeRecord(VOLUME, ascii(NON_FINITE[rng.nextInt(NON_FINITE.length)]), false);
                buf.b('}');
            }
            case BAD_TIMESTAMP -> {
                writeRecord(EVENT_TS, ascii('"' + BAD_TIMESTAMPS[rng.nextInt(BAD_TIMESTAMPS.length)] + '"'), false);
                buf.b('}');
            }
            case FUTURE_EVENT_TIME -> {
                long anchor = Math.max(clock, backlogEndMillis);
                eventMillis = anchor + FUTURE_MIN_MILLIS + rng.nextLong(FUTURE_MAX_MILLIS - FUTURE_MIN_MILLIS + 1);
                offsetMinutes = 0;
                writeRecord(-1, null, false);
                buf.b('}');
            }
            case DUPLICATE_FIELD -> {
                int field = duplicateCursor++ & 3;
                writeRecord(-1, null, false);
                buf.b(',').bytes(FIELD_KEYS[field]);
                long keepSubscriber = subscriber;
                long keepCell = cell;
                long keepVolume = volumeMicros;
                long keepEvent = eventMillis;
                subscriber = (subscriber + 1) % spec.subscribers();
                cell = (cell + 1) % spec.cells();
                volumeMicros += 1;
                eventMillis += 1000;
                writeValue(field);
                subscriber = keepSubscriber;
                cell = keepCell;
                volumeMicros = keepVolume;
                eventMillis = keepEvent;
                buf.b('}');
            }
            case BLANK_ID -> {
                String blank = BLANKS[rng.nextInt(BLANKS.length)];
                writeRecord(rng.nextBoolean() ? SUBSCRIBER : CELL, ascii('"' + blank + '"'), false);
                buf.b('}');
            }
            case NESTED_JUNK -> {
                MessageBuffer raw = new MessageBuffer();
                int depth = 3 + rng.nextInt(38);
                for (int d = 0; d < depth; d++) {
                    raw.ascii((d & 1) == 0 ? "{\"v\":" : "[");
                }
                raw.micros(volumeMicros);
                for (int d = depth - 1; d >= 0; d--) {
                    raw.b((d & 1) == 0 ? '}' : ']');
                }
                writeRecord(nestedCursor++ & 3, raw.toBytes(), false);
                buf.b('}');
            }
            case PAST_EVENT_TIME -> {
                String ts = switch (rng.nextInt(3)) {
                    case 0 -> "1970-01-01T00:00:00Z";
                    case 1 -> "0001-01-01T00:00:00Z";
                    default -> java.time.Instant.ofEpochMilli(clock - (2 + rng.nextInt(29)) * 365L * 86_400_000L).toString();
                };
                writeRecord(EVENT_TS, ascii('"' + ts + '"'), false);
                buf.b('}');
            }
            case OVERSIZED -> writeOversized();
            default -> throw new IllegalStateException("not an invalid kind: " + kind);
        }
        value = buf.toBytes();
        return new GeneratedMessage(null, value, kind);
    }

    /** Draws the fields of one record into this generator's scratch fields. */
    private void draft(long eventTime) {
        long rank = zipf.sample(rng);
        subscriber = ((rank - 1) * subscriberMultiplier + subscriberOffset) % spec.subscribers();
        cell = rng.nextDouble() < HOME_CELL_SHARE ? homeCell(subscriber) : rng.nextInt(spec.cells());
        volumeMicros = Math.min(VOLUME_MAX_MICROS,
                Math.round(VOLUME_MEDIAN_GB * 1e6 * StrictMath.exp(VOLUME_SIGMA * gaussian())));
        eventMillis = eventTime;
        offsetMinutes = rng.nextDouble() < OFFSET_SHARE ? OFFSETS_MINUTES[rng.nextInt(OFFSETS_MINUTES.length)] : 0;
        rat = rng.nextDouble() < RAT_SHARE ? rng.nextInt(RATS.length) : -1;
    }

    private long homeCell(long subscriberId) {
        return Math.floorMod(mix64(cellSalt ^ subscriberId), (long) spec.cells());
    }

    /** Box-Muller on StrictMath, so the sequence is the same on every JVM. */
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

    /**
     * Writes the drafted record without its closing brace. Field {@code special}: omitted (raw null),
     * written under a misspelled key, or with {@code raw} as its JSON value.
     */
    private void writeRecord(int special, byte[] raw, boolean misspell) {
        buf.b('{');
        boolean first = true;
        for (int field = 0; field < 4; field++) {
            boolean isSpecial = field == special;
            if (isSpecial && raw == null && !misspell) {
                continue;
            }
            if (!first) {
                buf.b(',');
            }
            first = false;
            buf.bytes(isSpecial && misspell ? MISSPELLED_KEYS[field] : FIELD_KEYS[field]);
            if (isSpecial && raw != null) {
                buf.bytes(raw);
            } else {
                writeValue(field);
            }
        }
        if (rat >= 0) {
            buf.bytes(RAT_KEY).ascii(RATS[rat]).b('"');
        }
    }

    private void writeValue(int field) {
        switch (field) {
            case SUBSCRIBER -> {
                buf.b('"');
                keyFrom = buf.length();
                buf.bytes(SUB_PREFIX).zeroPadded(subscriber, subscriberWidth);
                keyTo = buf.length();
                buf.b('"');
            }
            case CELL -> buf.b('"').bytes(CELL_PREFIX).zeroPadded(cell, cellWidth).b('"');
            case EVENT_TS -> buf.b('"').isoInstant(eventMillis, offsetMinutes).b('"');
            case VOLUME -> buf.micros(volumeMicros);
            default -> throw new IllegalArgumentException("field " + field);
        }
    }

    private void writePlainText() {
        switch (rng.nextInt(4)) {
            case 0 -> {
                writeValueUnquoted(SUBSCRIBER);
                buf.b(',');
                writeValueUnquoted(CELL);
                buf.b(',').isoInstant(eventMillis, 0).b(',').micros(volumeMicros);
            }
            case 1 -> {
                buf.ascii("subscriber_id=");
                writeValueUnquoted(SUBSCRIBER);
                buf.ascii(" cell_site_id=");
                writeValueUnquoted(CELL);
                buf.ascii(" event_ts=").isoInstant(eventMillis, 0).ascii(" volume_gb=").micros(volumeMicros);
            }
            case 2 -> {
                buf.ascii("<event><subscriber_id>");
                writeValueUnquoted(SUBSCRIBER);
                buf.ascii("</subscriber_id><cell_site_id>");
                writeValueUnquoted(CELL);
                buf.ascii("</cell_site_id><event_ts>").isoInstant(eventMillis, 0).ascii("</event_ts><volume_gb>")
                        .micros(volumeMicros).ascii("</volume_gb></event>");
            }
            default -> buf.ascii(PLAIN_TEXT[rng.nextInt(PLAIN_TEXT.length)]);
        }
    }

    private void writeValueUnquoted(int field) {
        if (field == SUBSCRIBER) {
            buf.bytes(SUB_PREFIX).zeroPadded(subscriber, subscriberWidth);
        } else {
            buf.bytes(CELL_PREFIX).zeroPadded(cell, cellWidth);
        }
    }

    private void writeBinaryGarbage() {
        int length = 8 + rng.nextInt(505);
        switch (rng.nextInt(3)) {
            case 0 -> buf.b(0x00).b(0x00).b(0x00).b(0x00).b(1 + rng.nextInt(255)); // Confluent wire format
            case 1 -> buf.b(0x1F).b(0x8B).b(0x08).b(0x00);                           // gzip header
            default -> buf.b(1 + rng.nextInt(8));                                     // a control byte first
        }
        while (buf.length() < length) {
            long bits = rng.nextLong();
            for (int i = 0; i < 8 && buf.length() < length; i++, bits >>>= 8) {
                buf.b((int) bits);
            }
        }
    }

    private void writeNotAnObject() {
        switch (rng.nextInt(7)) {
            case 0 -> {
                // An array wrapping a valid object: Spark's from_json unwraps it, the spec does not.
                buf.b('[');
                writeRecord(-1, null, false);
                buf.ascii("}]");
            }
            case 1 -> buf.ascii("[]");
            case 2 -> buf.micros(volumeMicros);
            case 3 -> {
                buf.b('"');
                writeValueUnquoted(SUBSCRIBER);
                buf.b('"');
            }
            case 4 -> buf.bytes(NULL);
            case 5 -> buf.ascii("true");
            default -> buf.ascii("[1,2,3]");
        }
    }

    private void writeWrongType() {
        MessageBuffer raw = new MessageBuffer();
        int field;
        switch (wrongTypeCursor++ % 7) {
            case 0 -> { field = VOLUME; raw.ascii("\"abc\""); }
            case 1 -> { field = EVENT_TS; raw.decimal(eventMillis); }             // epoch millis as a number
            case 2 -> { field = SUBSCRIBER; raw.decimal(subscriber); }           // a number, not a string
            case 3 -> { field = CELL; raw.ascii("[\"").bytes(CELL_PREFIX).zeroPadded(cell, cellWidth).ascii("\"]"); }
            case 4 -> { field = VOLUME; raw.ascii("true"); }
            case 5 -> { field = EVENT_TS; raw.ascii("{\"$date\":\"").isoInstant(eventMillis, 0).ascii("\"}"); }
            default -> { field = VOLUME; raw.b('"').micros(volumeMicros).b('"'); } // a number in a string
        }
        writeRecord(field, raw.toBytes(), false);
        buf.b('}');
    }

    private void writeOversized() {
        writeRecord(-1, null, false);
        buf.ascii(",\"padding\":\"");
        int fill = spec.oversizedBytes() - buf.length() - 2;
        if (padding == null) {
            padding = base64Padding(spec.oversizedBytes(), spec.seed());
        }
        buf.bytes(padding, 0, fill).ascii("\"}");
    }

    private static byte[] base64Padding(int size, long seed) {
        byte[] alphabet = ascii("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/");
        SplittableRandom r = new SplittableRandom(seed ^ 0x0DDBA11L);
        byte[] out = new byte[size];
        for (int i = 0; i < size; i++) {
            out[i] = alphabet[r.nextInt(64)];
        }
        return out;
    }

    private static double[] cumulativeWeights() {
        double[] c = new double[INVALID_KINDS.length];
        double sum = 0;
        for (int i = 0; i < c.length; i++) {
            sum += INVALID_KINDS[i].invalidWeight();
            c[i] = sum;
        }
        return c;
    }

    /** SplitMix64's finaliser: a good 64-bit mix. */
    static long mix64(long z) {
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }

    private static long gcd(long a, long b) {
        while (b != 0) {
            long t = a % b;
            a = b;
            b = t;
        }
        return a;
    }

    private static byte[] ascii(String s) {
        return s.getBytes(StandardCharsets.US_ASCII);
    }
}
