package io.tidemark.generate;

import java.time.Duration;
import java.time.Instant;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Pattern;

/**
 * What traffic to generate: an immutable, validated value. Build it with {@link #builder()};
 * the canonical constructor validates too, so an invalid spec cannot exist.
 *
 * <p>Bounds: {@code count} messages, or until {@code duration} of wall time has passed, whichever
 * comes first; with neither, a {@link IngestMode#LIVE} run goes on until stopped. The builder
 * defaults {@code count} to {@value #DEFAULT_COUNT} unless a duration is given.
 *
 * <p>Message mix: each message is invalid with probability {@code invalidFraction}, else late with
 * probability {@code lateFraction}, else on time. On-time events are up to
 * {@code outOfOrderSpread} older than the event clock; late ones {@code lateDelayMin} to
 * {@code lateDelayMax} older. The defaults (20 to 60 minutes) put late events behind the default
 * 10-minute allowed lateness plus the 5-minute window, so they miss the watermark once it has
 * advanced. See {@link IngestMode} for where the event clock comes from.
 *
 * <p>Records: the {@link TrafficProfile profile} says which. Network events use {@code cells} and
 * {@code subscribers}; payments use {@code merchants} and {@code users} (each profile ignores the
 * other's two sizes). The topic defaults to the profile's ({@link TrafficProfile#defaultTopic()}).
 *
 * @param topic                      Kafka topic
 * @param count                      total messages, or null when bounded by duration (or unbounded)
 * @param duration                   wall-time bound, or null
 * @param ratePerSecond              messages per second; 0 = as fast as possible
 * @param cells                      number of cell sites ({@code cell-0000}...)
 * @param subscribers                number of subscribers ({@code sub-000000}...), Zipf-active
 * @param outOfOrderSpread           how much older than the event clock an on-time event may be
 * @param lateFraction               share of all messages that are deliberately late
 * @param lateDelayMin               least delay of a late event behind the event clock
 * @param lateDelayMax               greatest delay of a late event behind the event clock
 * @param invalidFraction            share of all messages that are invalid (all invalid kinds)
 * @param seed                       random seed; same seed + explicit clock start = same bytes
 * @param eventClockStart            backlog event clock start, or null for "now minus the backlog's span"
 * @param ingestMode                 where the event clock comes from
 * @param eventsPerSecondOfEventTime backlog mode: messages per second of event time (sets the span)
 * @param oversizedBytes             size of an {@link GeneratedMessage.Kind#OVERSIZED} (or {@link PaymentKind#OVERSIZED}) message
 * @param profile                    which events: network (the default) or payments
 * @param merchants                  payments: number of merchants ({@code mer-00000}...), Zipf-active
 * @param users                      payments: number of card holders ({@code usr-000000}...), Zipf-active
 * @param format                     how the records are written: JSON (the default) or Avro in Confluent's wire format
 * @param schemaIds                  Avro: the registry's id of each of {@link AvroTraffic#writerSchemas}, by name; empty for JSON
 */
public record TrafficSpec(
        String topic,
        Long count,
        Duration duration,
        double ratePerSecond,
        int cells,
        int subscribers,
        Duration outOfOrderSpread,
        double lateFraction,
        Duration lateDelayMin,
        Duration lateDelayMax,
        double invalidFraction,
        long seed,
        Instant eventClockStart,
        IngestMode ingestMode,
        double eventsPerSecondOfEventTime,
        int oversizedBytes,
        TrafficProfile profile,
        int merchants,
        int users,
        EventFormat format,
        Map<String, Integer> schemaIds) {

    /** The network profile's topic, the default one ({@link TrafficProfile#defaultTopic()} has each profile's). */
    public static final String DEFAULT_TOPIC = "network-events";
    public static final long DEFAULT_COUNT = 1_000_000L;
    public static final int DEFAULT_CELLS = 200;
    public static final int DEFAULT_SUBSCRIBERS = 10_000;
    public static final Duration DEFAULT_OUT_OF_ORDER_SPREAD = Duration.ofMinutes(2);
    public static final double DEFAULT_LATE_FRACTION = 0.01;
    public static final Duration DEFAULT_LATE_DELAY_MIN = Duration.ofMinutes(20);
    public static final Duration DEFAULT_LATE_DELAY_MAX = Duration.ofMinutes(60);
    public static final double DEFAULT_INVALID_FRACTION = 0.005;
    public static final long DEFAULT_SEED = 42L;
    public static final double DEFAULT_EVENTS_PER_SECOND_OF_EVENT_TIME = 1000.0;
    /** Twice the default 64 KiB maximum message size of the stream. */
    public static final int DEFAULT_OVERSIZED_BYTES = 128 * 1024;
    public static final int DEFAULT_MERCHANTS = 2_000;
    public static final int DEFAULT_USERS = 50_000;

    public static final int MAX_SUBSCRIBERS = 100_000_000;
    public static final int MAX_CELLS = 10_000_000;
    public static final int MAX_MERCHANTS = 10_000_000;
    public static final int MAX_USERS = 100_000_000;
    /** Stays below the broker's default {@code message.max.bytes} (about 1 MiB). */
    public static final int MAX_OVERSIZED_BYTES = 1_000_000;
    public static final int MIN_OVERSIZED_BYTES = 1024;
    private static final Duration MAX_DELAY = Duration.ofDays(365);
    private static final Pattern KAFKA_TOPIC = Pattern.compile("[a-zA-Z0-9._-]{1,249}");

    public TrafficSpec {
        if (topic == null || !KAFKA_TOPIC.matcher(topic).matches() || topic.equals(".") || topic.equals("..")) {
            throw new IllegalArgumentException("topic must be a legal Kafka topic name (1 to 249 characters of"
                    + " a-z A-Z 0-9 . _ -); got " + quote(topic));
        }
        if (count != null && count < 1) {
            throw new IllegalArgumentException("count must be at least 1 (or absent for a duration-bound run); got " + count);
        }
        if (duration != null && (duration.isNegative() || duration.isZero())) {
            throw new IllegalArgumentException("duration must be positive (or absent for a count-bound run); got " + duration);
        }
        if (!Double.isFinite(ratePerSecond) || ratePerSecond < 0) {
            throw new IllegalArgumentException("ratePerSecond must be a finite number >= 0 (0 = as fast as possible); got "
                    + ratePerSecond);
        }
        if (cells < 1 || cells > MAX_CELLS) {
            throw new IllegalArgumentException("cells must be between 1 and " + MAX_CELLS + "; got " + cells);
        }
        if (subscribers < 1 || subscribers > MAX_SUBSCRIBERS) {
            throw new IllegalArgumentException("subscribers must be between 1 and " + MAX_SUBSCRIBERS + "; got " + subscribers);
        }
        Objects.requireNonNull(profile, "profile must not be null (NETWORK or PAYMENTS)");
        if (merchants < 1 || merchants > MAX_MERCHANTS) {
            throw new IllegalArgumentException("merchants must be between 1 and " + MAX_MERCHANTS + "; got " + merchants);
        }
        if (users < 1 || users > MAX_USERS) {
            throw new IllegalArgumentException("users must be between 1 and " + MAX_USERS + "; got " + users);
        }
        Objects.requireNonNull(format, "format must not be null (JSON or AVRO)");
        schemaIds = schemaIds == null ? Map.of() : Map.copyOf(schemaIds);
        if (format == EventFormat.AVRO) {
            Set<String> missing = new TreeSet<>(AvroTraffic.writerSchemas(profile).keySet());
            missing.removeAll(schemaIds.keySet());
            if (!missing.isEmpty()) {
                throw new IllegalArgumentException("format AVRO needs the registry's id of every writer schema; none for " + missing);
            }
        } else if (!schemaIds.isEmpty()) {
            throw new IllegalArgumentException("schemaIds are for format AVRO; JSON has none");
        }
        requireDelay("outOfOrderSpread", outOfOrderSpread);
        requireDelay("lateDelayMin", lateDelayMin);
        requireDelay("lateDelayMax", lateDelayMax);
        requireFraction("lateFraction", lateFraction);
        requireFraction("invalidFraction", invalidFraction);
        if (lateFraction + invalidFraction > 1.0) {
            throw new IllegalArgumentException(String.format(Locale.ROOT,
                    "lateFraction + invalidFraction must not exceed 1; got %s + %s = %s",
                    lateFraction, invalidFraction, lateFraction + invalidFraction));
        }
        if (lateDelayMin.compareTo(lateDelayMax) > 0) {
            throw new IllegalArgumentException("lateDelayMin must not exceed lateDelayMax; got " + lateDelayMin
                    + " > " + lateDelayMax);
        }
        if (lateFraction > 0 && lateDelayMin.compareTo(outOfOrderSpread) <= 0) {
            throw new IllegalArgumentException("lateDelayMin (" + lateDelayMin + ") must be greater than outOfOrderSpread ("
                    + outOfOrderSpread + "), otherwise late events cannot be told from out-of-order ones;"
                    + " raise lateDelayMin or set lateFraction to 0");
        }
        if (!Double.isFinite(eventsPerSecondOfEventTime) || eventsPerSecondOfEventTime <= 0) {
            throw new IllegalArgumentException("eventsPerSecondOfEventTime must be a finite number > 0; got "
                    + eventsPerSecondOfEventTime);
        }
        if (oversizedBytes < MIN_OVERSIZED_BYTES || oversizedBytes > MAX_OVERSIZED_BYTES) {
            throw new IllegalArgumentException("oversizedBytes must be between " + MIN_OVERSIZED_BYTES + " and "
                    + MAX_OVERSIZED_BYTES + " (the broker's default message.max.bytes is about 1 MiB); got " + oversizedBytes);
        }
        Objects.requireNonNull(ingestMode, "ingestMode must not be null (use AUTO)");
        if (ingestMode == IngestMode.LIVE && eventClockStart != null) {
            throw new IllegalArgumentException("eventClockStart (" + eventClockStart + ") only applies to BACKLOG mode;"
                    + " in LIVE mode the event clock is the wall clock. Drop it or use ingestMode BACKLOG");
        }
        IngestMode resolved = resolve(ingestMode, ratePerSecond, eventClockStart);
        if (resolved == IngestMode.BACKLOG && count == null) {
            throw new IllegalArgumentException("BACKLOG mode needs a count: the event clock spans count / "
                    + "eventsPerSecondOfEventTime. Set a count, or give a ratePerSecond > 0 for LIVE mode");
        }
        if (resolved == IngestMode.BACKLOG && count / eventsPerSecondOfEventTime > MAX_DELAY.toSeconds() * 10.0) {
            throw new IllegalArgumentException("the backlog would span " + (long) (count / eventsPerSecondOfEventTime)
                    + " s of event time (count / eventsPerSecondOfEventTime), more than 10 years; raise eventsPerSecondOfEventTime");
        }
    }

    /** A builder with every default set. */
    public static Builder builder() {
        return new Builder();
    }

    /** A builder starting from this spec's values. */
    public Builder toBuilder() {
        return new Builder(this);
    }

    /** The mode {@link IngestMode#AUTO} stands for with these settings; never AUTO. */
    public IngestMode resolvedIngestMode() {
        return resolve(ingestMode, ratePerSecond, eventClockStart);
    }

    /** Whether sending is rate-limited. */
    public boolean isPaced() {
        return ratePerSecond > 0;
    }

    /** Event time a BACKLOG run spans: {@code count / eventsPerSecondOfEventTime}, rounded up to a millisecond. */
    public Duration backlogSpan() {
        if (count == null) {
            throw new IllegalStateException("a run without a count has no backlog span");
        }
        return Duration.ofMillis(backlogSpanMillis(count, eventsPerSecondOfEventTime));
    }

    static long backlogSpanMillis(long count, double eventsPerSecondOfEventTime) {
        return (long) Math.ceil(count * (1000.0 / eventsPerSecondOfEventTime));
    }

    private static IngestMode resolve(IngestMode mode, double ratePerSecond, Instant eventClockStart) {
        if (mode != IngestMode.AUTO) {
            return mode;
        }
        return eventClockStart != null || ratePerSecond == 0 ? IngestMode.BACKLOG : IngestMode.LIVE;
    }

    private static void requireFraction(String name, double value) {
        if (!Double.isFinite(value) || value < 0 || value > 1) {
            throw new IllegalArgumentException(name + " must be between 0 and 1; got " + value);
        }
    }

    private static void requireDelay(String name, Duration value) {
        if (value == null || value.isNegative() || value.compareTo(MAX_DELAY) > 0) {
            throw new IllegalArgumentException(name + " must be between 0 and " + MAX_DELAY.toDays() + " days; got " + value);
        }
    }

    private static String quote(String s) {
        return s == null ? "null" : "'" + s + "'";
    }

    /** Mutable builder; {@link #build()} validates. Setters return this. */
    public static final class Builder {
        private String topic = DEFAULT_TOPIC;
        /** Whether {@link #topic} was set; if not, the profile's default topic applies. */
        private boolean topicSet;
        private Long count = DEFAULT_COUNT;
        private boolean countSet;
        private Duration duration;
        private double ratePerSecond;
        private int cells = DEFAULT_CELLS;
        private int subscribers = DEFAULT_SUBSCRIBERS;
        private Duration outOfOrderSpread = DEFAULT_OUT_OF_ORDER_SPREAD;
        private double lateFraction = DEFAULT_LATE_FRACTION;
        private Duration lateDelayMin = DEFAULT_LATE_DELAY_MIN;
        private Duration lateDelayMax = DEFAULT_LATE_DELAY_MAX;
        private double invalidFraction = DEFAULT_INVALID_FRACTION;
        private long seed = DEFAULT_SEED;
        private Instant eventClockStart;
        private IngestMode ingestMode = IngestMode.AUTO;
        private double eventsPerSecondOfEventTime = DEFAULT_EVENTS_PER_SECOND_OF_EVENT_TIME;
        private int oversizedBytes = DEFAULT_OVERSIZED_BYTES;
        private TrafficProfile profile = TrafficProfile.NETWORK;
        private int merchants = DEFAULT_MERCHANTS;
        private int users = DEFAULT_USERS;
        private EventFormat format = EventFormat.JSON;
        private Map<String, Integer> schemaIds = Map.of();

        private Builder() {
        }

        private Builder(TrafficSpec s) {
            topic = s.topic;
            topicSet = true;
            count = s.count;
            countSet = true;
            duration = s.duration;
            ratePerSecond = s.ratePerSecond;
            cells = s.cells;
            subscribers = s.subscribers;
            outOfOrderSpread = s.outOfOrderSpread;
            lateFraction = s.lateFraction;
            lateDelayMin = s.lateDelayMin;
            lateDelayMax = s.lateDelayMax;
            invalidFraction = s.invalidFraction;
            seed = s.seed;
            eventClockStart = s.eventClockStart;
            ingestMode = s.ingestMode;
            eventsPerSecondOfEventTime = s.eventsPerSecondOfEventTime;
            oversizedBytes = s.oversizedBytes;
            profile = s.profile;
            merchants = s.merchants;
            users = s.users;
            format = s.format;
            schemaIds = s.schemaIds;
        }

        /** The topic; by default the profile's ({@link TrafficProfile#defaultTopic()}). */
        public Builder topic(String topic) { this.topic = topic; this.topicSet = true; return this; }

        /** Total messages; null for a duration-bound (or, in LIVE mode, unbounded) run. */
        public Builder count(Long count) { this.count = count; this.countSet = true; return this; }

        public Builder count(long count) { return count(Long.valueOf(count)); }

        /** Wall-time bound; unless {@link #count} is also set, it replaces the default count. */
        public Builder duration(Duration duration) { this.duration = duration; return this; }

        public Builder ratePerSecond(double ratePerSecond) { this.ratePerSecond = ratePerSecond; return this; }

        public Builder cells(int cells) { this.cells = cells; return this; }

        public Builder subscribers(int subscribers) { this.subscribers = subscribers; return this; }

        public Builder outOfOrderSpread(Duration spread) { this.outOfOrderSpread = spread; return this; }

        public Builder lateFraction(double lateFraction) { this.lateFraction = lateFraction; return this; }

        public Builder lateDelay(Duration min, Duration max) { this.lateDelayMin = min; this.lateDelayMax = max; return this; }

        public Builder invalidFraction(double invalidFraction) { this.invalidFraction = invalidFraction; return this; }

        public Builder seed(long seed) { this.seed = seed; return this; }

        public Builder eventClockStart(Instant start) { this.eventClockStart = start; return this; }

        public Builder ingestMode(IngestMode mode) { this.ingestMode = mode; return this; }

        public Builder eventsPerSecondOfEventTime(double eps) { this.eventsPerSecondOfEventTime = eps; return this; }

        public Builder oversizedBytes(int bytes) { this.oversizedBytes = bytes; return this; }

        /** Which events; unless {@link #topic} is set, it also sets the topic to the profile's default. */
        public Builder profile(TrafficProfile profile) { this.profile = profile; return this; }

        public Builder merchants(int merchants) { this.merchants = merchants; return this; }

        public Builder users(int users) { this.users = users; return this; }

        /** JSON records (the default). */
        public Builder json() { this.format = EventFormat.JSON; this.schemaIds = Map.of(); return this; }

        /** Avro records in Confluent's wire format, under the writer schemas registered with these ids ({@link AvroTraffic#writerSchemas}). */
        public Builder avro(Map<String, Integer> schemaIds) { this.format = EventFormat.AVRO; this.schemaIds = schemaIds; return this; }

        /** @throws IllegalArgumentException naming the offending setting and value */
        public TrafficSpec build() {
            Long effectiveCount = !countSet && duration != null ? null : count;
            String effectiveTopic = topicSet || profile == null ? topic : profile.defaultTopic();
            return new TrafficSpec(effectiveTopic, effectiveCount, duration, ratePerSecond, cells, subscribers, outOfOrderSpread,
                    lateFraction, lateDelayMin, lateDelayMax, invalidFraction, seed, eventClockStart, ingestMode,
                    eventsPerSecondOfEventTime, oversizedBytes, profile, merchants, users, format, schemaIds);
        }
    }
}
