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

import io.tidemark.lakehouse.BatchConstant;
import io.tidemark.lakehouse.Watermark;
import io.tidemark.lakehouse.pipeline.KpiAggregation;
import io.tidemark.lakehouse.pipeline.Pipeline;
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
                .add("_reason", DataTypes.StringType)
                .add("_detail", DataTypes.StringType)
                .add("_deferred", DataTypes.StringType)
                .add("_deferred_detail", DataTypes.StringType);
        for (int i = 0; i < decoder.columns().size(); i++) {
            decoded = decoded.add(decoder.columns().get(i), decoder.types().get(i));
        }
        // Avro: raw_events.payload is the record as its writer schema holds it, rendered as JSON by Avro (the bytes are not text).
        this.avro = decoder.avro();
        if (avro) {
            decoded = decoded.add("_payload", DataTypes.StringType);
        }
        // The decoder's reason first, then the first CHECK the record breaks, then the decoder's deferred one.
        StringBuilder checkReason = new StringBuilder("CASE");
        StringBuilder checkDetail = new StringBuilder("CASE");
        for (Pipeline.Check c : events.checks()) {
            checkReason.append(" WHEN ").append(c.fails()).append(" THEN '").append(c.reason()).append("'");
            checkDetail.append(" WHEN ").append(c.fails()).append(" THEN ").append(c.detail());
        }
        String noCheck = events.checks().isEmpty() ? "CAST(NULL AS STRING)" : null;
        this.reason = expr("coalesce(decode_reason, " + (noCheck != null ? noCheck : checkReason + " END") + ", deferred_reason)");
        this.detail = expr("CASE WHEN decode_reason IS NOT NULL THEN decode_detail ELSE coalesce("
                + (noCheck != null ? noCheck : checkDetail + " END") + ", deferred_detail) END");
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
     * @param kafka rows of Spark's Kafka source (key, value, topic, partition, offset, timestamp)
     * @param watermarkMs the watermark in force for this batch
     */
    public Dataset<Row> classify(Dataset<Row> kafka, long watermarkMs) {
        Dataset<Row> decoded = kafka.select(
                col("topic").as("kafka_topic"),
                col("partition").as("kafka_partition"),
                col("offset").as("kafka_offset"),
                col("key").as("kafka_key"),
                col("timestamp").as("ingest_ts"),
                col("value"),
                decode.apply(col("value"), expr("unix_micros(timestamp)")).as("d"));
        List<Column> flat = new ArrayList<>(List.of(col("kafka_topic"), col("kafka_partition"), col("kafka_offset"), col("kafka_key"),
                col("ingest_ts"), col("value"), col("d._reason").as("decode_reason"), col("d._detail").as("decode_detail"),
                col("d._deferred").as("deferred_reason"), col("d._deferred_detail").as("deferred_detail")));
        for (Pipeline.Column c : events.columns()) {
            flat.add(col("d").getField(c.name()).as(c.name()));
        }
        flat.add((avro ? col("d._payload") : col("value").cast("string")).as("decoded_payload"));
        Dataset<Row> checked = decoded.select(flat.toArray(Column[]::new))
                .withColumn("reason", reason)
                .withColumn("detail", detail)
                .drop("decode_reason", "decode_detail", "deferred_reason", "deferred_detail");
        List<String> order = new ArrayList<>(List.of("kafka_topic", "kafka_partition", "kafka_offset", "kafka_key", "ingest_ts", "value", "reason",
                "detail", "decoded_payload"));
        order.addAll(eventColumns());
        checked = checked.selectExpr(order.stream().map(c -> "`" + c + "`").toArray(String[]::new));
        Column valid = col("reason").isNull();
        Dataset<Row> marked = LateRecordRouter.markLate(checked, pipeline, watermarkMs);
        return marked
                .withColumn("is_late", when(valid, col("is_late")))
                .withColumn("payload", when(valid, col("decoded_payload")))
                .withColumn("message_bytes", expr("coalesce(length(value), 0)"))
                .withColumn("raw_bytes", when(col("reason").isNotNull(),
                        expr("CASE WHEN length(value) > " + maxMessageBytes + " THEN substring(value, 1, " + maxMessageBytes + ") ELSE value END")))
                .withColumn("raw_text", when(col("reason").isNotNull(), expr("try_validate_utf8(CAST(raw_bytes AS STRING))")))
                .drop("value", "decoded_payload");
    }

    /** Rows for {@code raw_events}: the event's columns, the message, where it came from and when. */
    public Dataset<Row> rawEvents(Dataset<Row> classified, long batchId) {
        List<Column> columns = new ArrayList<>();
        events.columns().forEach(c -> columns.add(col(c.name())));
        columns.addAll(List.of(col("payload"), col("kafka_topic"), col("kafka_partition"), col("kafka_offset"), col("ingest_ts"),
                col("is_late"), BatchConstant.of(batchId).as("batch_id"), expr("to_date(" + events.eventTime() + ")").as("event_date")));
        return classified.filter(col("reason").isNull()).select(columns.toArray(Column[]::new));
    }

    /** Rows for {@code dead_letter}. */
    public static Dataset<Row> deadLetters(Dataset<Row> classified, long batchId) {
        return classified.filter(col("reason").isNotNull()).select(
                col("reason"), col("detail"), col("raw_bytes"), col("raw_text"), col("message_bytes"), col("kafka_key"),
                col("kafka_topic"), col("kafka_partition"), col("kafka_offset"), BatchConstant.of(batchId).as("batch_id"),
                col("ingest_ts").as("arrival_ts"), expr("to_date(ingest_ts)").as("arrival_date"));
    }

    /** The event table's column names, in order. */
    public List<String> eventColumns() {
        return events.columns().stream().map(Pipeline.Column::name).toList();
    }

    /** The {@code kind} of a classified row in {@link #summary}. */
    public static final String ON_TIME = "on_time";
    public static final String LATE = "late";
    public static final String INVALID = "invalid";
    /** A summary row of a KPI table's partial aggregate: {@code kpi} is the table's index in the pipeline. */
    public static final String KPI = "kpi";

    /**
     * One action over the classified batch, two kinds of rows:
     * <ul>
     * <li>per {@code kind} ({@link #ON_TIME}, {@link #LATE}, {@link #INVALID}), {@code reason} (null for
     *   valid records) and {@code kafka_partition}: {@code records} and {@code max_event_ms}, the newest
     *   valid event time (null for invalid records): the batch's counts and its watermark input;</li>
     * <li>{@code kind = }{@link #KPI}, per KPI table ({@code kpi}, its index) and window and dimensions:
     *   the table's partial aggregate of the records its windows still take
     *   ({@link KpiAggregation#partials}), each state column and {@code updated_at} named
     *   {@link #partialColumn} so that two tables' columns never meet.</li>
     * </ul>
     */
    public Dataset<Row> summary(Dataset<Row> classified, List<KpiAggregation> tables, Watermark watermark) {
        Column kind = when(col("reason").isNotNull(), lit(INVALID)).when(col("is_late"), lit(LATE)).otherwise(lit(ON_TIME)).as("kind");
        Dataset<Row> out = classified.groupBy(kind, col("reason"), col("kafka_partition"))
                .agg(count(lit(1)).as("records"), max(expr("CASE WHEN reason IS NULL THEN unix_millis(" + events.eventTime() + ") END"))
                        .as("max_event_ms"));
        Dataset<Row> valid = classified.filter(col("reason").isNull());
        for (int i = 0; i < tables.size(); i++) {
            KpiAggregation t = tables.get(i);
            List<Column> columns = new ArrayList<>(List.of(lit(KPI).as("kind"), lit(i).as("kpi")));
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

    /** The name in {@link #summary} of KPI table {@code kpi}'s partial column {@code column}. */
    public static String partialColumn(int kpi, String column) {
        return "kpi" + kpi + "_" + column;
    }

    /** Rows for {@code late_events}: one per late contribution of a valid record ({@link LateRecordRouter#lateEvents}). */
    public Dataset<Row> lateEvents(Dataset<Row> classified, long watermarkMs, long batchId) {
        return LateRecordRouter.lateEvents(classified.filter(col("reason").isNull()), pipeline, watermarkMs, batchId);
    }
}
