package io.tidemark.pipeline;

import java.util.Locale;

/**
 * The namespace of the columns Tidemark adds while it works on records and KPI rows (a decoded
 * record's reason, the Kafka message, a summary row's kind, a drift comparison's two sides...): each
 * is named {@link #PREFIX} + a name, and no event column, dimension or measure may start with the
 * prefix ({@link PipelineParser} refuses it). Every other name a step sees is the user's (an event
 * column, a dimension, a measure) or a column Tidemark stores ({@code raw_events.kafka_offset},
 * {@code window_start}...), which the parser keeps out of the user's names in the same way
 * ({@link PipelineTables#ownEventColumns}, {@link Pipeline.KpiTable#OWN_COLUMNS}). So a producer's
 * field called {@code value}, {@code kind} or {@code reason} can never meet one of Tidemark's.
 *
 * <p>The Kafka source's own columns ({@code key, value, topic, partition, offset, timestamp, ...}) are
 * renamed into this namespace, or to the stored names, in the first step that reads them.
 */
public final class WorkingColumns {
    /** The prefix of every working column. */
    public static final String PREFIX = "__tm_";

    // A classified record (streaming-job's RecordClassifier, late-data-capture's LateRecordRouter).
    /** The Kafka message's bytes. */
    public static final String VALUE = of("value");
    /** The Kafka message's key. */
    public static final String KAFKA_KEY = of("kafka_key");
    /** The decoder's output: a struct of its verdict and the event's columns. */
    public static final String DECODED = of("decoded");
    /** The dead_letter reason of an invalid record; null for a valid one. */
    public static final String REASON = of("reason");
    public static final String DETAIL = of("detail");
    /** The decoder's reason and detail, and its deferred ones (see EventDecoder), before the CHECKs are applied. */
    public static final String DECODE_REASON = of("decode_reason");
    public static final String DECODE_DETAIL = of("decode_detail");
    public static final String DEFERRED_REASON = of("deferred_reason");
    public static final String DEFERRED_DETAIL = of("deferred_detail");
    /** The message as text (JSON), or the Avro record rendered as JSON. */
    public static final String DECODED_PAYLOAD = of("decoded_payload");
    public static final String MESSAGE_BYTES = of("message_bytes");
    public static final String RAW_BYTES = of("raw_bytes");
    public static final String RAW_TEXT = of("raw_text");
    /** A hopping window's index among a record's windows. */
    public static final String SLIDE = of("slide");

    // A batch's summary rows (RecordClassifier.summary).
    public static final String KIND = of("kind");
    public static final String KPI_INDEX = of("kpi");
    public static final String RECORDS = of("records");
    public static final String MAX_EVENT_MS = of("max_event_ms");

    /** The late records of a window among a truth row's columns (TruthKpis). */
    public static final String LATE_RECORDS = of("late_records");

    private WorkingColumns() {
    }

    /** The working column called {@code name}. */
    public static String of(String name) {
        return PREFIX + name;
    }

    /** Whether {@code column} is in the working namespace (as Spark resolves names: ignoring case). */
    public static boolean isWorking(String column) {
        return column.toLowerCase(Locale.ROOT).startsWith(PREFIX);
    }
}
