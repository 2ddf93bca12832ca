package io.tidemark.stream;

import static org.apache.spark.sql.functions.col;
import static org.apache.spark.sql.functions.count;
import static org.apache.spark.sql.functions.expr;
import static org.apache.spark.sql.functions.lit;
import static org.apache.spark.sql.functions.max;
import static org.apache.spark.sql.functions.udf;
import static org.apache.spark.sql.functions.when;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import org.apache.spark.sql.Column;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.api.java.UDF2;
import org.apache.spark.sql.expressions.UserDefinedFunction;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;

import io.tidemark.pipeline.BatchConstant;
import io.tidemark.pipeline.Watermark;
import io.tidemark.pipeline.KpiAggregation;
import io.tidemark.pipeline.Pipeline;
import io.tidemark.pipeline.WorkingColumns;
import io.tidemark.late.LateRecordRouter;

/**
 * Turns a micro-batch of Kafka records into classified rows: each is either invalid (with a
 * reason), late, or on time. Pure: the same batch and watermark always give the same rows.
 *
 * <p>Output columns: the Kafka coordinates ({@code kafka_topic, kafka_partition, kafka_offset,
 * kafka_key, ingest_ts}), {@code reason, detail} (null when valid), the event fields and {@code is_late} (valid rows only), {@code payload} (valid rows) and
 * {@code raw_bytes, raw_text, message_bytes} (invalid rows).
 * ({@code is_late}: a contribution of the record to a KPI table's window is late, {@link LateRecordRouter}.)
 */
public final class RecordClassifier {

    private final Pipeline pipeline;
    private final Pipeline.EventTable events;
    /** A classified record's reason and detail, over the decoder's output and the event columns (built once: the CHECKs do not change). */
    private final Column reason;
    private final Column detail;
    private final int maxMessageBytes;
    private final UserDefinedFunction decode;
    /** {@code format 'avro'}: the payload comes from the decoder. */
    private final boolean avro;

    /**
     * @param pipeline its event table's columns are decoded, its CHECKs give the reasons; its KPI
     *                 tables' windows decide which records are late
     */
    public RecordClassifier(Pipeline pipeline, int maxMessageBytes, Duration clockSkew, Duration maxEventAge) {
        this.pipeline = pipeline;
        this.events = pipeline.events();
        EventDecoder decoder = new EventDecoder(events, maxMessageBytes, clockSkew.toNanos() / 1000, maxEventAge.toNanos() / 1000);
        this.maxMessageBytes = maxMessageBytes;
        StructType decoded = new StructType()
                .add(WorkingColumns.DECODE_REASON, DataTypes.StringType)
                .add(WorkingColumns.DECODE_DETAIL, DataTypes.StringType)
                .add(WorkingColumns.DEFERRED_REASON, DataTypes.StringType)
                .add(WorkingColumns.DEFERRED_DETAIL, DataTypes.StringType);
        for (int i = 0; i < decoder.columns().size(); i++) {
            decoded = decoded.add(decoder.columns().get(i), decoder.types().get(i));
        }
        // Avro: raw_events.payload is the record as its writer schema holds it, rendered as JSON by Avro (the bytes are not text).
        this.avro = decoder.avro();
        if (avro) {
            decoded = decoded.add(WorkingColumns.DECODED_PAYLOAD, DataTypes.StringType);
        }
        // The decoder's reason first, then the first CHECK the record breaks, then the decoder's deferred one.
        StringBuilder checkReason = new StringBuilder("CASE");
        StringBuilder checkDetail = new StringBuilder("CASE");
        for (Pipeline.Check c : events.checks()) {
            checkReason.append(" WHEN ").append(c.fails()).append(" THEN '").append(c.reason()).append("'");
            checkDetail.append(" WHEN ").append(c.fails()).append(" THEN ").append(c.detail());
        }
        String noCheck = events.checks().isEmpty() ? "CAST(NULL AS STRING)" : null;
        this.reason = expr("coalesce(" + WorkingColumns.DECODE_REASON + ", " + (noCheck != null ? noCheck : checkReason + " END") + ", "
                + WorkingColumns.DEFERRED_REASON + ")");
        this.detail = expr("CASE WHEN " + WorkingColumns.DECODE_REASON + " IS NOT NULL THEN " + WorkingColumns.DECODE_DETAIL + " ELSE coalesce("
                + (noCheck != null ? noCheck : checkDetail + " END") + ", " + WorkingColumns.DEFERRED_DETAIL + ") END");
        int width = decoded.size();
        this.decode = udf((UDF2<byte[], Long, Row>) (value, ingestMicros) -> {
            EventDecoder.Decoded r = decoder.decode(value, ingestMicros);
            Object[] out = new Object[width];
            out[0] = r.reason;
            out[1] = r.detail;
            out[2] = r.deferred;
            out[3] = r.deferredDetail;
            if (r.reason == null) {
                System.arraycopy(r.values, 0, out, 4, r.values.length);
                if (r.payload != null) {
                    out[width - 1] = r.payload;
                }
            }
            return RowFactory.create(out);
        }, decoded)
                // Not because it is: so the optimizer keeps one call per record instead of one per extracted field.
                .asNondeterministic();
    }

    /**
     * The classified batch: the Kafka coordinates as raw_events stores them ({@code kafka_topic,
     * kafka_partition, kafka_offset, ingest_ts}), the event's columns, {@code is_late} and
     * {@code payload} (valid rows), and in the working namespace ({@link WorkingColumns}) the message's key, the
     * reason and detail (null when valid), and the message's size, bytes and text (invalid rows). Every
     * name is an event column, a column raw_events stores (which no event column may take) or a working
     * one: a field of any other name passes through untouched.
     *
     * @param kafka rows of Spark's Kafka source (key, value, topic, partition, offset, timestamp)
     * @param watermarkMs the watermark in force for this batch
     */
    public Dataset<Row> classify(Dataset<Row> kafka, long watermarkMs) {
        // The edge: the Kafka source's columns leave its namespace here, before any event column exists beside them.
        Dataset<Row> decoded = kafka.select(
                col("topic").as("kafka_topic"),
                col("partition").as("kafka_partition"),
                col("offset").as("kafka_offset"),
                col("key").as(WorkingColumns.KAFKA_KEY),
                col("timestamp").as("ingest_ts"),
                col("value").as(WorkingColumns.VALUE),
                decode.apply(col("value"), expr("unix_micros(timestamp)")).as(WorkingColumns.DECODED));
        Column d = col(WorkingColumns.DECODED);
        List<Column> flat = new ArrayList<>(List.of(col("kafka_topic"), col("kafka_partition"), col("kafka_offset"), col(WorkingColumns.KAFKA_KEY),
                col("ingest_ts"), col(WorkingColumns.VALUE), d.getField(WorkingColumns.DECODE_REASON).as(WorkingColumns.DECODE_REASON), d.getField(WorkingColumns.DECODE_DETAIL).as(WorkingColumns.DECODE_DETAIL),
                d.getField(WorkingColumns.DEFERRED_REASON).as(WorkingColumns.DEFERRED_REASON), d.getField(WorkingColumns.DEFERRED_DETAIL).as(WorkingColumns.DEFERRED_DETAIL)));
        for (Pipeline.Column c : events.columns()) {
            flat.add(d.getField(c.name()).as(c.name()));
        }
        flat.add((avro ? d.getField(WorkingColumns.DECODED_PAYLOAD) : col(WorkingColumns.VALUE).cast("string")).as(WorkingColumns.DECODED_PAYLOAD));
        Dataset<Row> flattened = decoded.select(flat.toArray(Column[]::new));
        List<Column> checked = new ArrayList<>(List.of(col("kafka_topic"), col("kafka_partition"), col("kafka_offset"), col(WorkingColumns.KAFKA_KEY),
                col("ingest_ts"), col(WorkingColumns.VALUE), reason.as(WorkingColumns.REASON), detail.as(WorkingColumns.DETAIL), col(WorkingColumns.DECODED_PAYLOAD)));
        eventColumns().forEach(c -> checked.add(col(c)));
        Column valid = col(WorkingColumns.REASON).isNull();
        Dataset<Row> marked = LateRecordRouter.markLate(flattened.select(checked.toArray(Column[]::new)), pipeline, watermarkMs);
        return marked
                .withColumn("is_late", when(valid, col("is_late")))
                .withColumn("payload", when(valid, col(WorkingColumns.DECODED_PAYLOAD)))
                .withColumn(WorkingColumns.MESSAGE_BYTES, expr("coalesce(length(" + WorkingColumns.VALUE + "), 0)"))
                .withColumn(WorkingColumns.RAW_BYTES, when(col(WorkingColumns.REASON).isNotNull(), expr("CASE WHEN length(" + WorkingColumns.VALUE + ") > " + maxMessageBytes
                        + " THEN substring(" + WorkingColumns.VALUE + ", 1, " + maxMessageBytes + ") ELSE " + WorkingColumns.VALUE + " END")))
                .withColumn(WorkingColumns.RAW_TEXT, when(col(WorkingColumns.REASON).isNotNull(), expr("try_validate_utf8(CAST(" + WorkingColumns.RAW_BYTES + " AS STRING))")))
                .drop(WorkingColumns.VALUE, WorkingColumns.DECODED_PAYLOAD);
    }

    /** Rows for {@code raw_events}: the event's columns, the message, where it came from and when. */
    public Dataset<Row> rawEvents(Dataset<Row> classified, long batchId) {
        List<Column> columns = new ArrayList<>();
        events.columns().forEach(c -> columns.add(col(c.name())));
        columns.addAll(List.of(col("payload"), col("kafka_topic"), col("kafka_partition"), col("kafka_offset"), col("ingest_ts"),
                col("is_late"), BatchConstant.of(batchId).as("batch_id"), expr("to_date(`" + events.eventTime() + "`)").as("event_date")));
        return classified.filter(col(WorkingColumns.REASON).isNull()).select(columns.toArray(Column[]::new));
    }

    /** Rows for {@code dead_letter}. */
    public static Dataset<Row> deadLetters(Dataset<Row> classified, long batchId) {
        return classified.filter(col(WorkingColumns.REASON).isNotNull()).select(
                col(WorkingColumns.REASON).as("reason"), col(WorkingColumns.DETAIL).as("detail"), col(WorkingColumns.RAW_BYTES).as("raw_bytes"), col(WorkingColumns.RAW_TEXT).as("raw_text"),
                col(WorkingColumns.MESSAGE_BYTES).as("message_bytes"), col(WorkingColumns.KAFKA_KEY).as("kafka_key"), col("kafka_topic"), col("kafka_partition"),
                col("kafka_offset"), BatchConstant.of(batchId).as("batch_id"), col("ingest_ts").as("arrival_ts"),
                expr("to_date(ingest_ts)").as("arrival_date"));
    }

    /** The event table's column names, in order. */
    public List<String> eventColumns() {
        return events.columns().stream().map(Pipeline.Column::name).toList();
    }

    /** The {@code kind} ({@link WorkingColumns#KIND}) of a row in {@link #summary}. */
    public static final String ON_TIME = "on_time";
    public static final String LATE = "late";
    public static final String INVALID = "invalid";
    /** A summary row of a KPI table's partial aggregate: {@link WorkingColumns#KPI_INDEX} is the table's index in the pipeline. */
    public static final String KPI = "kpi";

    /**
     * One action over the classified batch, two kinds of rows:
     * <ul>
     * <li>per kind ({@link #ON_TIME}, {@link #LATE}, {@link #INVALID}), reason (null for valid records)
     *   and {@code kafka_partition}: {@link WorkingColumns#RECORDS} and {@link WorkingColumns#MAX_EVENT_MS}, the newest valid
     *   event time (null for invalid records): the batch's counts and its watermark input;</li>
     * <li>kind {@link #KPI}, per KPI table ({@link WorkingColumns#KPI_INDEX}, its index) and window and dimensions:
     *   the table's partial aggregate of the records its windows still take
     *   ({@link KpiAggregation#partials}), each state column and {@code updated_at} named
     *   {@link #partialColumn} so that two tables' columns never meet.</li>
     * </ul>
     * The kind, reason, counts and table index are working columns ({@link WorkingColumns}): a dimension may be called {@code kind}.
     */
    public Dataset<Row> summary(Dataset<Row> classified, List<KpiAggregation> tables, Watermark watermark) {
        Column kind = when(col(WorkingColumns.REASON).isNotNull(), lit(INVALID)).when(col("is_late"), lit(LATE)).otherwise(lit(ON_TIME)).as(WorkingColumns.KIND);
        Dataset<Row> out = classified.groupBy(kind, col(WorkingColumns.REASON), col("kafka_partition"))
                .agg(count(lit(1)).as(WorkingColumns.RECORDS), max(when(col(WorkingColumns.REASON).isNull(), expr("unix_millis(`" + events.eventTime() + "`)")))
                        .as(WorkingColumns.MAX_EVENT_MS));
        Dataset<Row> valid = classified.filter(col(WorkingColumns.REASON).isNull());
        for (int i = 0; i < tables.size(); i++) {
            KpiAggregation t = tables.get(i);
            List<Column> columns = new ArrayList<>(List.of(lit(KPI).as(WorkingColumns.KIND), lit(i).as(WorkingColumns.KPI_INDEX)));
            KpiAggregation.WINDOW_COLUMNS.forEach(c -> columns.add(col(c)));
            t.dimensions().forEach(d -> columns.add(col(d)));
            for (String s : t.state()) {
                columns.add(col(s).as(partialColumn(i, s)));
            }
            columns.add(col("updated_at").as(partialColumn(i, "updated_at")));
            out = out.unionByName(t.partials(valid, watermark).select(columns.toArray(Column[]::new)), true);
        }
        return out;
    }

    /** The name in {@link #summary} of KPI table {@code kpi}'s partial column {@code column}: a working column. */
    public static String partialColumn(int kpi, String column) {
        return WorkingColumns.of("kpi" + kpi + "_" + column);
    }

    /** Rows for {@code late_events}: one per late contribution of a valid record ({@link LateRecordRouter#lateEvents}). */
    public Dataset<Row> lateEvents(Dataset<Row> classified, long watermarkMs, long batchId) {
        return LateRecordRouter.lateEvents(classified.filter(col(WorkingColumns.REASON).isNull()), pipeline, watermarkMs, batchId);
    }
}
