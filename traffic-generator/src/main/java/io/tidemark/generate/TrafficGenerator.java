package io.tidemark.generate;

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
 * <p>The spec's {@link TrafficProfile} says which records. This class keeps what the profiles share:
 * the event clock, the choice of each message's kind (invalid, by the kinds' weights; late; on time)
 * and the event times of late and out-of-order ones. The records, valid and malformed, are written by
 * the profile's {@code ProfileTraffic}: {@code NetworkTraffic} (the network events of
 * {@code pipelines/network.sql}, e.g.
 * {@code {"subscriber_id":"sub-000123","cell_site_id":"cell-0042","event_ts":"2026-11-29T14:03:12.345Z","volume_gb":0.0123}})
 * or {@code PaymentsTraffic} (the card payments of {@code pipelines/payments.sql}).
 *
 * <p>Not thread-safe: one generator per producing thread.
 */
public final class TrafficGenerator implements Iterator<GeneratedMessage> {

    /** The network profile's fields, in the order they are written ({@link TrafficProfile#fields()} has each profile's). */
    public static final List<String> REQUIRED_FIELDS = NetworkTraffic.FIELDS;

    private final TrafficSpec spec;
    private final InstantSource wallClock;
    private final IngestMode mode;
    private final SplittableRandom rng;
    private final double invalidFraction;
    private final double validThreshold;
    private final long spreadMillis;
    private final long lateMinMillis;
    private final long lateRangeMillis;
    private final long clockStartMillis;
    private final double millisPerEvent;
    private final long backlogEndMillis;
    /** The profile's invalid kinds, and their weights' running sums: how an invalid message's kind is drawn. */
    private final MessageKind[] invalidKinds;
    private final double[] invalidCumulative;
    /** Writes the profile's records. */
    private final ProfileTraffic records;
    /** With format AVRO: writes them in Avro, and the kinds only Avro has; null for JSON. */
    private final AvroTraffic avro;

    private long index;

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
        this.invalidKinds = spec.profile().invalidKinds(spec.format()).toArray(new MessageKind[0]);
        this.invalidCumulative = new double[invalidKinds.length];
        double sum = 0;
        for (int i = 0; i < invalidKinds.length; i++) {
            sum += invalidKinds[i].invalidWeight();
            invalidCumulative[i] = sum;
        }
        this.records = switch (spec.profile()) {
            case NETWORK -> new NetworkTraffic(spec, rng);
            case PAYMENTS -> new PaymentsTraffic(spec, rng);
        };
        this.avro = spec.format() == EventFormat.AVRO ? new AvroTraffic(spec, records) : null;
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
        long number = index++;
        double u = rng.nextDouble();
        if (u < invalidFraction) {
            MessageKind kind = pickInvalidKind();
            long eventTime = clock - onTimeDelay();
            long futureAnchor = Math.max(clock, backlogEndMillis);
            return avro == null ? records.invalid(kind, number, eventTime, clock, futureAnchor)
                    : avro.invalid(kind, number, eventTime, clock, futureAnchor, spec.profile().onTime(), rng);
        }
        GeneratedMessage valid = u < validThreshold ? records.valid(spec.profile().late(), number, lateEventTime(clock))
                : records.valid(spec.profile().onTime(), number, clock - onTimeDelay());
        return avro == null ? valid : avro.valid(valid, number);
    }

    /** A late event's time: {@code lateDelayMin..lateDelayMax} behind the clock, uniformly. */
    private long lateEventTime(long clock) {
        return clock - lateMinMillis - (lateRangeMillis == 0 ? 0 : rng.nextLong(lateRangeMillis + 1));
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

    /** One of the profile's invalid kinds, by their weights. */
    private MessageKind pickInvalidKind() {
        double u = rng.nextDouble() * invalidCumulative[invalidCumulative.length - 1];
        for (int i = 0; i < invalidCumulative.length; i++) {
            if (u < invalidCumulative[i]) {
                return invalidKinds[i];
            }
        }
        return invalidKinds[invalidKinds.length - 1];
    }
}
