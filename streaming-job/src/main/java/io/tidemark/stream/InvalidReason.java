package io.tidemark.stream;

/** Why a message went to {@code dead_letter}. The codes are part of the contract: analysts filter on them. */
public enum InvalidReason {
    /** No bytes at all, only whitespace, or a tombstone. */
    EMPTY,
    /** Larger than {@code max-message-bytes}. */
    OVERSIZED,
    /** Not valid UTF-8. */
    NOT_UTF8,
    /** Not parseable JSON (truncated, plain text, binary, trailing garbage). */
    NOT_JSON,
    /** Valid JSON, but not an object (array, number, string). */
    NOT_AN_OBJECT,
    /** A required field appears twice: which one counts would be a guess. */
    DUPLICATE_FIELD,
    /** A required field is absent. */
    MISSING_FIELD,
    /** A required field is JSON null. */
    NULL_FIELD,
    /** A required field has the wrong JSON type (e.g. volume_gb as a string). */
    WRONG_TYPE,
    /** subscriber_id or cell_site_id is an empty or blank string. */
    BLANK_ID,
    /** event_ts is not an ISO-8601 timestamp with a zone. */
    BAD_TIMESTAMP,
    /** volume_gb below zero. */
    NEGATIVE_VOLUME,
    /** volume_gb NaN or infinite (including numbers too large for a double). */
    NON_FINITE_VOLUME,
    /**
     * volume_gb above {@link EventDecoder#MAX_VOLUME_GB} (a zettabyte): no real record carries that
     * much, and exact sums in DECIMAL(38,9) could not hold it: a value like 1e308 would fail the
     * batch's aggregation on every replay.
     */
    VOLUME_TOO_LARGE,
    /** event_ts further ahead of the record's Kafka timestamp than the allowed clock skew. */
    FUTURE_EVENT_TIME,
    /**
     * event_ts further behind the record's Kafka timestamp than {@code max-event-age} (default 365
     * days): an epoch-zero or year-1 clock, not a late record. Such dates would also make raw_events
     * partitions that readers outside Spark (Python's deltalake) cannot open.
     */
    PAST_EVENT_TIME
}
