package io.tidemark.generate;

import java.util.List;

/**
 * What a message of the {@link TrafficProfile#PAYMENTS payments} profile is, and the reason the
 * stream gives it in {@code dead_letter} when run with {@code pipelines/payments.sql}
 * ({@link #expectedReason()}; docs/guarantees.md has the reason table). Each invalid kind breaks
 * exactly the rule its name says; the rest of the message is a normal payment, so no earlier rule
 * names it first.
 */
public enum PaymentKind implements MessageKind {
    /** Valid; ts within {@code outOfOrderSpread} before the event clock. */
    ON_TIME(0, null),
    /** Valid, but {@code lateDelayMin..lateDelayMax} behind the event clock: meant to miss the watermark. */
    LATE(0, null),
    /** A valid payment cut short: a strict prefix of its JSON object. */
    TRUNCATED_JSON(1, "NOT_JSON"),
    /** Plain text: CSV, key=value, XML, an HTTP request line; never starting like a JSON value. */
    NOT_JSON(1, "NOT_JSON"),
    /** A payment holding bytes that are not UTF-8: a Latin-1 merchant name, or a bad sequence in user_id. */
    INVALID_UTF8(1, "NOT_UTF8"),
    /** Binary payloads (Confluent/Avro wire format, gzip, a control byte first), always with a byte no UTF-8 text has. */
    BINARY_GARBAGE(1, "NOT_UTF8"),
    /** Zero bytes, or only whitespace. */
    EMPTY(1, "EMPTY"),
    /** A Kafka tombstone: the value is null (the stream counts it as EMPTY). */
    NULL_VALUE(0.5, "EMPTY"),
    /** JSON that is not an object: an array (even one wrapping a payment), a number, a string, null, true. */
    NOT_AN_OBJECT(1, "NOT_AN_OBJECT"),
    /**
     * One of the seven fields absent or misspelled, each in turn; in Avro, absent from the writer
     * schema.
     */
    MISSING_FIELD(1, "MISSING_FIELD"),
    /** One of the seven fields set to JSON null, each in turn; in Avro, null under a writer schema that lets it be. */
    NULL_FIELD(1, "NULL_FIELD"),
    /**
     * A field of the wrong JSON type (amount as a string or a boolean, ts as a number, user_id as a
     * number...) or an amount DECIMAL(12,2) cannot hold (three decimals, 1e13, NaN, Infinity).
     */
    WRONG_TYPE(1, "WRONG_TYPE"),
    /** A field holding nested objects and arrays (3 to 40 levels deep) instead of its value. */
    NESTED_JUNK(1, "WRONG_TYPE"),
    /** ts a string that is no ISO-8601 instant with a zone: "yesterday", "2026-02-30T10:00:00Z", no zone... */
    BAD_TIMESTAMP(1, "BAD_TIMESTAMP"),
    /** ts 2 to 24 hours ahead of the event clock (beyond any sensible clock skew). */
    FUTURE_EVENT_TIME(1, "FUTURE_EVENT_TIME"),
    /** ts years behind the event clock: the epoch, year 1, or 2 to 30 years back. */
    PAST_EVENT_TIME(1, "PAST_EVENT_TIME"),
    /** A field written twice with different values, as a buggy serializer does. */
    DUPLICATE_FIELD(1, "DUPLICATE_FIELD"),
    /** A payment padded by an extra field to {@code oversizedBytes} (default 128 KiB). */
    OVERSIZED(0.25, "OVERSIZED"),
    /** amount 0, 0.00 or negative: breaks {@code CONSTRAINT positive_amount CHECK (amount > 0)}. */
    NON_POSITIVE_AMOUNT(1, "POSITIVE_AMOUNT"),
    /** status outside approved/declined/refunded ("pending", "APPROVED", ""...): breaks {@code known_status}. */
    UNKNOWN_STATUS(1, "KNOWN_STATUS"),
    /** country lower-case, mixed-case, three letters or empty ("de", "Fr", "DEU"): breaks {@code country_code}. */
    BAD_COUNTRY_CODE(1, "COUNTRY_CODE"),
    /**
     * (Avro) No Confluent wire-format header: the payment as JSON (a producer not configured for Avro),
     * its Avro body without the header, a header whose first byte is not 0, fewer than 5 bytes.
     */
    NOT_AVRO(1, "NOT_AVRO"),
    /** (Avro) A payment under a schema id the registry does not know. */
    UNKNOWN_SCHEMA(1, "UNKNOWN_SCHEMA"),
    /** (Avro) A payment's wire bytes cut short after the header, or followed by bytes that are no part of it. */
    BAD_AVRO(1, "BAD_AVRO"),
    /** (Avro) A payment whose writer schema carries one field, each in turn, as a type its column cannot be read as. */
    SCHEMA_MISMATCH(1, "SCHEMA_MISMATCH");

    private final double invalidWeight;
    private final String expectedReason;

    PaymentKind(double invalidWeight, String expectedReason) {
        this.invalidWeight = invalidWeight;
        this.expectedReason = expectedReason;
    }

    @Override
    public TrafficProfile profile() {
        return TrafficProfile.PAYMENTS;
    }

    @Override
    public double invalidWeight() {
        return invalidWeight;
    }

    /**
     * The {@code reason} of this message's {@code dead_letter} row when the stream runs
     * {@code pipelines/payments.sql} with its default settings ({@code max-message-bytes} below
     * {@code oversizedBytes}, {@code clock-skew} 5 minutes, {@code max-event-age} 365 days, the Kafka
     * timestamp at the event clock the message was generated at); null for a valid kind.
     */
    public String expectedReason() {
        return expectedReason;
    }

    /** The invalid kinds written in {@code format}, in declaration order. */
    public static List<PaymentKind> invalidKinds(EventFormat format) {
        return MessageKind.invalid(values(), format);
    }
}
