package io.tidemark.generate;

import io.tidemark.generate.GeneratedMessage.Kind;

import java.util.List;
import java.util.SplittableRandom;

/**
 * The records of the {@link TrafficProfile#NETWORK network} profile, the event table of
 * {@code pipelines/network.sql}:
 * {@code {"subscriber_id":"sub-000123","cell_site_id":"cell-0042","event_ts":"2026-11-29T14:03:12.345Z","volume_gb":0.0123}},
 * sometimes with an extra {@code "rat"} field and sometimes with {@code event_ts} written in a
 * non-UTC offset ({@code 2026-11-29T15:03:12.345+01:00}, the same instant). Subscribers are
 * Zipf-active (exponent 1.1), each on a home cell 80% of the time; volume_gb is log-normal
 * (median 0.01 GB, capped at 5 GB) with six decimals. The Kafka key of a valid event is its
 * subscriber_id.
 *
 * <p>{@link ProfileTraffic} writes the malformed messages every profile has; this class adds the
 * network's own: a negative or non-finite volume, a blank id.
 */
final class NetworkTraffic extends ProfileTraffic {

    static final double ZIPF_EXPONENT = 1.1;
    static final double HOME_CELL_SHARE = 0.8;
    static final double VOLUME_MEDIAN_GB = 0.01;
    static final double VOLUME_SIGMA = 1.6;
    static final long VOLUME_MAX_MICROS = 5_000_000L;
    static final double RAT_SHARE = 0.25;

    /** The event table's columns, in the order they are written. */
    static final List<String> FIELDS = List.of("subscriber_id", "cell_site_id", "event_ts", "volume_gb");

    /**
     * {@link TrafficProfile#sparkColumns}: about 2,000 cells, subscribers Zipf-like over about 1 M ids
     * (P(k) ~ 1/k), volumes up to 0.05 GB with 9 decimals.
     */
    static List<String> sparkColumns(long d, String eventTime) {
        return List.of(
                "concat('sub-', lpad(CAST(CAST(floor(pow(1000000.0D, pmod(xxhash64(id, " + d + "L, 'sub'), 1000000007L) / 1000000007.0D)) "
                        + "AS BIGINT) AS STRING), 7, '0')) AS subscriber_id",
                "concat('cell-', lpad(CAST(pmod(xxhash64(id, " + d + "L, 'cell'), 2000) AS STRING), 4, '0')) AS cell_site_id",
                eventTime + " AS event_ts",
                "pmod(xxhash64(id, " + d + "L, 'vol'), 50000000L) / 1000000000.0D AS volume_gb");
    }

    private static final int SUBSCRIBER = 0;
    private static final int CELL = 1;
    private static final int EVENT_TS = 2;
    private static final int VOLUME = 3;
    private static final Format FORMAT = new Format("event", FIELDS, List.of("subscriberId", "cell_id", "ts", "volume"),
            SUBSCRIBER, VOLUME, EVENT_TS,
            List.of("yesterday", "2026-13-45T99:00:00Z", "", "2026-11-29T25:61:00Z", "not a timestamp",
                    "29/11/2026 14:03:12", "2026-02-30T10:00:00Z", "2026-11-29T14:03:12+25:00"),
            "\"cell_name\":\"Z\u00FCrich\"");

    private static final String[] BLANKS = {"", " ", "   ", "\\t", " \\n "};
    private static final byte[] CELL_PREFIX = ascii("cell-");
    private static final byte[] RAT_KEY = ascii(",\"rat\":\"");
    private static final String[] RATS = {"5G", "5G", "5G", "5G", "5G", "4G", "4G", "4G", "4G", "3G"};
    private static final String[] NON_FINITE = {"1e999", "-1e999", "NaN", "Infinity", "-Infinity"};

    private final ZipfIds subscribers;
    private final long cellSalt;
    private final int cellWidth;

    // The event being written (reused; no allocation per message).
    private long subscriber;
    private long cell;
    private long volumeMicros;
    private int rat;

    NetworkTraffic(TrafficSpec spec, SplittableRandom rng) {
        super(spec, rng, FORMAT);
        this.subscribers = new ZipfIds("sub-", spec.subscribers(), 6, ZIPF_EXPONENT, spec.seed() ^ 0x5DEECE66DL, spec.seed() + 1);
        this.cellSalt = mix64(spec.seed() + 2);
        this.cellWidth = Math.max(4, MessageBuffer.digits(spec.cells() - 1L));
    }

    @Override
    protected void draft(long number, long eventTime) {
        subscriber = subscribers.next(rng);
        cell = rng.nextDouble() < HOME_CELL_SHARE ? homeCell(subscriber) : rng.nextInt(spec.cells());
        volumeMicros = logNormal(VOLUME_MEDIAN_GB * 1e6, VOLUME_SIGMA, VOLUME_MAX_MICROS);
        stamp(eventTime);
        rat = rng.nextDouble() < RAT_SHARE ? rng.nextInt(RATS.length) : -1;
    }

    private long homeCell(long subscriberId) {
        return Math.floorMod(mix64(cellSalt ^ subscriberId), (long) spec.cells());
    }

    @Override
    protected void writeText(MessageBuffer out, int field) {
        switch (field) {
            case SUBSCRIBER -> subscribers.write(out, subscriber);
            case CELL -> out.bytes(CELL_PREFIX).zeroPadded(cell, cellWidth);
            case VOLUME -> out.micros(volumeMicros);
            default -> throw new IllegalArgumentException("field " + field);
        }
    }

    @Override
    protected void writeExtraFields() {
        if (rat >= 0) {
            buf.bytes(RAT_KEY).ascii(RATS[rat]).b('"');
        }
    }

    @Override
    protected void nudge(int field) {
        switch (field) {
            case SUBSCRIBER -> subscriber = (subscriber + 1) % spec.subscribers();
            case CELL -> cell = (cell + 1) % spec.cells();
            case VOLUME -> volumeMicros += 1;
            default -> throw new IllegalArgumentException("field " + field);
        }
    }

    @Override
    protected int writeWrongType(MessageBuffer raw, int turn) {
        int field;
        switch (Math.floorMod(turn, 7)) {
            case 0 -> { field = VOLUME; raw.ascii("\"abc\""); }
            case 1 -> { field = EVENT_TS; raw.decimal(eventMillis()); }           // epoch millis as a number
            case 2 -> { field = SUBSCRIBER; raw.decimal(subscriber); }           // a number, not a string
            case 3 -> { field = CELL; raw.ascii("[\"").bytes(CELL_PREFIX).zeroPadded(cell, cellWidth).ascii("\"]"); }
            case 4 -> { field = VOLUME; raw.ascii("true"); }
            case 5 -> { field = EVENT_TS; raw.ascii("{\"$date\":\"").isoInstant(eventMillis(), 0).ascii("\"}"); }
            default -> { field = VOLUME; raw.b('"').micros(volumeMicros).b('"'); } // a number in a string
        }
        return field;
    }

    @Override
    protected boolean writeOwnInvalid(MessageKind kind) {
        switch ((Kind) kind) {
            case NEGATIVE_VOLUME -> writeRecordWith(VOLUME, new MessageBuffer().micros(-Math.max(1, volumeMicros)).toBytes());
            case NON_FINITE_VOLUME -> writeRecordWith(VOLUME, ascii(NON_FINITE[rng.nextInt(NON_FINITE.length)]));
            case BLANK_ID -> {
                String blank = BLANKS[rng.nextInt(BLANKS.length)];
                writeRecordWith(rng.nextBoolean() ? SUBSCRIBER : CELL, quoted(blank));
            }
            default -> {
                return false;
            }
        }
        return true;
    }
}
