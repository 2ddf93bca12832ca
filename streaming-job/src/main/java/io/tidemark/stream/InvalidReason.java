package io.tidemark.stream;

/**
 * Why a message went to {@code dead_letter}, when the decoder decides it: the message's shape, a
 * field's type, the event time's range. A record that breaks one of the event table's CHECKs has the
 * CHECK's name, upper-cased, as its reason instead (the network pipeline's BLANK_ID,
 * NON_FINITE_VOLUME, NEGATIVE_VOLUME, VOLUME_TOO_LARGE). The codes are part of the contract: analysts
 * filter on them.
 */
public enum InvalidReason {
    /** No bytes at all, only whitespace, or a tombstone. */
    EMPTY,
    /** Larger than {@code max-message-bytes}. */
    OVERSIZED,
    /** Not valid UTF-8. */
    NOT_UTF8,
    /** Not parseable JSON (truncated, plain text, binary, trailing garbage). */
    NOT_JSON,
    /** {@code format 'avro'}: no Confluent wire-format header (a 0 byte, then a 4-byte schema id). */
    NOT_AVRO,
    /** {@code format 'avro'}: the header's schema id is not in the schema registry. */
    UNKNOWN_SCHEMA,
    /** {@code format 'avro'}: the writer schema cannot be read as the declared columns (a field of another type). */
    SCHEMA_MISMATCH,
    /** {@code format 'avro'}: the bytes after the header do not decode with their writer schema (truncated, corrupt, trailing bytes). */
    BAD_AVRO,
    /** Valid JSON, but not an object (array, number, string). */
    NOT_AN_OBJECT,
    /** A declared field appears twice: which one counts would be a guess. */
    DUPLICATE_FIELD,
    /** A NOT NULL field is absent (from the JSON object, or from the Avro writer schema). */
    MISSING_FIELD,
    /** A NOT NULL field is null. */
    NULL_FIELD,
    /** A field has the wrong JSON type (e.g. a DOUBLE field as a string), or a number its column cannot hold. */
    WRONG_TYPE,
    /** A TIMESTAMP field is not an ISO-8601 timestamp with a zone. */
    BAD_TIMESTAMP,
    /** A DATE field is not an ISO-8601 date. */
    BAD_DATE,
    /** The event time further ahead of the record's Kafka timestamp than the allowed clock skew. */
    FUTURE_EVENT_TIME,
    /**
     * The event time further behind the record's Kafka timestamp than {@code max-event-age} (default 365
     * days): an epoch-zero or year-1 clock, not a late record. Such dates would also make raw_events
     * partitions that readers outside Spark (Python's deltalake) cannot open.
     */
    PAST_EVENT_TIME
}
