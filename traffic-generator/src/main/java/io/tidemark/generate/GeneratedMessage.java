package io.tidemark.generate;

import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;

/**
 * One Kafka record to send, with what the generator meant it to be.
 *
 * @param key             Kafka key: the subscriber's (network) or user's (payments) id as UTF-8 bytes for valid
 *                        messages, null for invalid ones
 * @param value           Kafka value; null only for a tombstone ({@link Kind#NULL_VALUE}, {@link PaymentKind#NULL_VALUE})
 * @param messageKind     what this message is, in its profile's terms: a {@link Kind} or a {@link PaymentKind}
 * @param eventTimeMillis event time of a valid message (epoch millis), {@link #NO_EVENT_TIME} for invalid ones
 */
public record GeneratedMessage(byte[] key, byte[] value, MessageKind messageKind, long eventTimeMillis) {

    public static final long NO_EVENT_TIME = Long.MIN_VALUE;

    public GeneratedMessage {
        if (messageKind == null) {
            throw new IllegalArgumentException("kind must not be null");
        }
        if (messageKind.isValid() == (eventTimeMillis == NO_EVENT_TIME)) {
            throw new IllegalArgumentException("a " + messageKind + " message must " + (messageKind.isValid() ? "" : "not ")
                    + "carry an event time");
        }
    }

    /** An invalid message: no event time. */
    public GeneratedMessage(byte[] key, byte[] value, MessageKind messageKind) {
        this(key, value, messageKind, NO_EVENT_TIME);
    }

    /**
     * The kind of a {@link TrafficProfile#NETWORK network} message.
     *
     * @throws IllegalStateException for a message of another profile: see {@link #messageKind()}
     */
    public Kind kind() {
        if (messageKind instanceof Kind k) {
            return k;
        }
        throw new IllegalStateException("a " + messageKind.profile().cliName() + " message has no network kind; its kind is "
                + messageKind + " (messageKind())");
    }

    /**
     * The kind of a {@link TrafficProfile#PAYMENTS payments} message, which names the reason the
     * stream is expected to give it ({@link PaymentKind#expectedReason()}).
     *
     * @throws IllegalStateException for a message of another profile: see {@link #messageKind()}
     */
    public PaymentKind paymentKind() {
        if (messageKind instanceof PaymentKind k) {
            return k;
        }
        throw new IllegalStateException("a " + messageKind.profile().cliName() + " message has no payments kind; its kind is "
                + messageKind + " (messageKind())");
    }

    /** Whether a correct pipeline must accept this message into raw_events. */
    public boolean isValid() {
        return messageKind.isValid();
    }

    /** Event time of a valid message. */
    public Optional<Instant> eventTime() {
        return eventTimeMillis == NO_EVENT_TIME ? Optional.empty() : Optional.of(Instant.ofEpochMilli(eventTimeMillis));
    }

    /** Size of the value in bytes (0 for a null value). */
    public int valueSize() {
        return value == null ? 0 : value.length;
    }

    /** Size of key plus value in bytes. */
    public int size() {
        return valueSize() + (key == null ? 0 : key.length);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof GeneratedMessage m && messageKind == m.messageKind && eventTimeMillis == m.eventTimeMillis
                && Arrays.equals(key, m.key) && Arrays.equals(value, m.value);
    }

    @Override
    public int hashCode() {
        return 31 * (31 * (31 * messageKind.hashCode() + Long.hashCode(eventTimeMillis)) + Arrays.hashCode(key))
                + Arrays.hashCode(value);
    }

    @Override
    public String toString() {
        String text;
        if (value == null) {
            text = "null";
        } else {
            String s = new String(value, 0, Math.min(value.length, 200), StandardCharsets.UTF_8);
            text = s + (value.length > 200 ? "...(" + value.length + " bytes)" : "");
        }
        return "GeneratedMessage[" + messageKind + ", key=" + (key == null ? "null" : new String(key, StandardCharsets.UTF_8))
                + ", value=" + text + "]";
    }

    /**
     * What a message of the {@link TrafficProfile#NETWORK network} profile is. Valid kinds satisfy
     * every validity rule of the README; each invalid kind breaks exactly the rule its name says (the
     * rest of the message looks normal). The payments profile's kinds are {@link PaymentKind}.
     */
    public enum Kind implements MessageKind {
        /** Valid; event time within {@code outOfOrderSpread} before the event clock. */
        ON_TIME(0),
        /** Valid, but {@code lateDelayMin..lateDelayMax} behind the event clock: meant to miss the watermark. */
        LATE(0),
        /** A valid message cut short: a strict prefix of a JSON object. */
        TRUNCATED_JSON(1),
        /** Plain text: CSV, key=value, XML, an HTTP request line. */
        NOT_JSON(1),
        /** A valid-looking JSON object containing bytes that are not UTF-8 (Latin-1, overlong, surrogate...). */
        INVALID_UTF8(1),
        /** Binary payloads: Confluent/Avro wire format, gzip, random bytes starting with a control byte. */
        BINARY_GARBAGE(1),
        /** Zero bytes, or only whitespace. */
        EMPTY(1),
        /** A Kafka tombstone: the value is null. */
        NULL_VALUE(0.5),
        /** JSON that is not an object: an array (even one wrapping a valid object), a number, a string, null, true. */
        NOT_AN_OBJECT(1),
        /** One required field absent or misspelled, each of the four in turn. */
        MISSING_FIELD(1),
        /** One required field set to JSON null, each of the four in turn. */
        NULL_FIELD(1),
        /** One required field of the wrong JSON type: volume_gb "abc", event_ts a number, subscriber_id a number... */
        WRONG_TYPE(1),
        /** volume_gb below zero. */
        NEGATIVE_VOLUME(1),
        /** volume_gb not finite: {@code 1e999}, {@code -1e999} (overflow to infinity), bare {@code NaN}, {@code Infinity}. */
        NON_FINITE_VOLUME(1),
        /** event_ts a string that is no ISO-8601 instant: "yesterday", "2026-13-45T99:00:00Z", "2026-02-30T...". */
        BAD_TIMESTAMP(1),
        /** event_ts 2 to 24 hours ahead of the event clock (beyond any sensible clock skew). */
        FUTURE_EVENT_TIME(1),
        /** A required field written twice with different values, as a buggy serializer does: which one counts would be a guess. */
        DUPLICATE_FIELD(1),
        /** subscriber_id or cell_site_id an empty or whitespace-only string. */
        BLANK_ID(1),
        /** A required field holding nested objects and arrays (3 to 40 levels deep) instead of its value. */
        NESTED_JUNK(1),
        /** event_ts years behind the event clock: the epoch (1970-01-01), year 1, or 2 to 30 years back. */
        PAST_EVENT_TIME(1),
        /** A valid-looking message padded by an extra field to {@code oversizedBytes} (default 128 KiB). */
        OVERSIZED(0.25),
        /** (Avro) No Confluent wire-format header: the event as JSON, its Avro body alone, a first byte other than 0, under 5 bytes. */
        NOT_AVRO(1),
        /** (Avro) An event under a schema id the registry does not know. */
        UNKNOWN_SCHEMA(1),
        /** (Avro) An event's wire bytes cut short after the header, or followed by bytes that are no part of it. */
        BAD_AVRO(1),
        /** (Avro) An event whose writer schema carries one field, each in turn, as a type its column cannot be read as. */
        SCHEMA_MISMATCH(1);

        private final double invalidWeight;

        Kind(double invalidWeight) {
            this.invalidWeight = invalidWeight;
        }

        @Override
        public TrafficProfile profile() {
            return TrafficProfile.NETWORK;
        }

        /** Relative frequency among invalid messages (0 for valid kinds). */
        @Override
        public double invalidWeight() {
            return invalidWeight;
        }

        /** The invalid kinds written in {@code format}, in declaration order. */
        public static List<Kind> invalidKinds(EventFormat format) {
            return MessageKind.invalid(values(), format);
        }
    }
}
