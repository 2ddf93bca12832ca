package io.tidemark.generate;

import java.util.List;
import java.util.Locale;
import java.util.Optional;

import io.tidemark.generate.GeneratedMessage.Kind;

/**
 * Which events the generator writes. Both profiles share the event clock, the on-time, late and
 * out-of-order machinery ({@link TrafficGenerator}) and the generic malformed messages
 * ({@code ProfileTraffic}); they differ in the record and in the CHECK violations.
 */
public enum TrafficProfile {
    /**
     * Network events of {@code pipelines/network.sql}: subscriber_id, cell_site_id, event_ts,
     * volume_gb. The kinds are {@link Kind}.
     */
    NETWORK("network-events", List.<MessageKind>of(Kind.values())),
    /**
     * Card payments of {@code pipelines/payments.sql}: txn_id, user_id, merchant_id, country, amount,
     * status, ts. The kinds are {@link PaymentKind}, each with the dead-letter reason the stream gives it.
     */
    PAYMENTS("payments", List.<MessageKind>of(PaymentKind.values()));

    private final String defaultTopic;
    private final List<MessageKind> kinds;

    TrafficProfile(String defaultTopic, List<MessageKind> kinds) {
        this.defaultTopic = defaultTopic;
        this.kinds = kinds;
    }

    /** The topic a spec of this profile goes to unless it names one: the topic of the profile's pipeline. */
    public String defaultTopic() {
        return defaultTopic;
    }

    /** Every kind of this profile, in declaration order: index {@code i} holds the kind of ordinal {@code i}. */
    public List<MessageKind> kinds() {
        return kinds;
    }

    /** The record's fields, in the order they are written; a valid message has exactly these. */
    public List<String> fields() {
        return this == NETWORK ? NetworkTraffic.FIELDS : PaymentsTraffic.FIELDS;
    }

    /**
     * Valid records of this profile at a scale the generator's messages do not reach, for benchmarks
     * that build a lakehouse with Spark: Spark SQL expressions, one per field ({@code expr AS field},
     * in {@link #fields()} order), over a range's {@code id} column (0 to {@code n - 1}) for the UTC day
     * {@code epochDay}. Event time spreads evenly over the day in id order; every other field is a
     * deterministic hash of (id, day), skewed roughly as the profile's generator skews it.
     */
    public List<String> sparkColumns(long epochDay, long n) {
        String eventTime = "timestamp_micros(" + epochDay * 86_400_000_000L + "L + CAST(floor(id * (86400000000D / " + n + "D)) AS BIGINT))";
        return this == NETWORK ? NetworkTraffic.sparkColumns(epochDay, eventTime) : PaymentsTraffic.sparkColumns(epochDay, eventTime);
    }

    /** The invalid kinds of this profile written in {@code format}, in declaration order. */
    public List<MessageKind> invalidKinds(EventFormat format) {
        return MessageKind.invalid(kinds.toArray(new MessageKind[0]), format);
    }

    /** The kind of a valid message stamped within the out-of-order spread. */
    public MessageKind onTime() {
        return this == NETWORK ? Kind.ON_TIME : PaymentKind.ON_TIME;
    }

    /** The kind of a valid message stamped behind the event clock by the late delay. */
    public MessageKind late() {
        return this == NETWORK ? Kind.LATE : PaymentKind.LATE;
    }

    /**
     * The profile whose records have exactly {@code columns} (a pipeline's event columns, in order), if any.
     */
    public static Optional<TrafficProfile> forEvents(List<String> columns) {
        for (TrafficProfile p : values()) {
            if (p.fields().equals(columns)) {
                return Optional.of(p);
            }
        }
        return Optional.empty();
    }

    /** The name on the command line: {@code network} or {@code payments}. */
    public String cliName() {
        return name().toLowerCase(Locale.ROOT);
    }

    /**
     * The profile named {@code name}, case-insensitively.
     *
     * @throws IllegalArgumentException naming the profiles there are
     */
    public static TrafficProfile of(String name) {
        for (TrafficProfile p : values()) {
            if (p.cliName().equalsIgnoreCase(name == null ? "" : name.trim())) {
                return p;
            }
        }
        throw new IllegalArgumentException("profile must be network or payments; got "
                + (name == null ? "null" : "'" + name + "'"));
    }
}
