package io.tidemark.pipeline;

import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;

/**
 * The DDL of the tables whose columns a pipeline decides, written as {@code sql/tables.sql} writes
 * the others (one {@code CREATE TABLE IF NOT EXISTS tidemark.<name> (...)} statement each, columns
 * one a line, {@code ${lakehouse}} for the root): {@code raw_events} (the event columns and the
 * stream's bookkeeping), each KPI table ({@link Pipeline.KpiTable#columns}) and {@code late_events}.
 * All are partitioned by {@code event_date} and set the Delta properties of the tables the stream
 * writes on every micro-batch (sql/tables.sql says why).
 */
public final class PipelineTables {
    private static final DataType STRING = DataTypes.StringType;
    private static final DataType INT = DataTypes.IntegerType;
    private static final DataType BIGINT = DataTypes.LongType;
    private static final DataType BOOLEAN = DataTypes.BooleanType;
    private static final DataType TIMESTAMP = DataTypes.TimestampType;
    private static final DataType DATE = DataTypes.DateType;

    /** The Delta properties of the tables written on every micro-batch; sql/tables.sql explains each. */
    public static final String BATCH_TABLE_PROPERTIES = "'delta.checkpointInterval' = '10',\n"
            + "  'delta.logRetentionDuration' = 'interval 7 days',\n"
            + "  'delta.deletedFileRetentionDuration' = 'interval 7 days'";

    /**
     * The names of Tidemark's own tables, in the order the lakehouse lists them (a pipeline's KPI tables go
     * after raw_events): no KPI table or view of a pipeline may take one. The lakehouse's table constants
     * ({@code Lakehouse.Table}) are these.
     */
    public static final List<String> OWN_TABLES = List.of("raw_events", "late_events", "dead_letter", "stream_progress", "stream_gaps",
            "reconcile_report", "expired_days");

    private PipelineTables() {
    }

    /** raw_events, the KPI tables, late_events: in the order the stream writes them. */
    public static List<String> statements(Pipeline p) {
        List<String> out = new ArrayList<>();
        out.add(rawEvents(p));
        p.tables().forEach(t -> out.add(kpiTable(t)));
        out.add(lateEvents(p));
        return out;
    }

    private static List<StructField> eventColumns(Pipeline p, boolean describeTime) {
        List<StructField> out = new ArrayList<>();
        for (Pipeline.Column c : p.events().columns()) {
            StructField f = Measure.field(c.name(), c.type(), !c.notNull());
            out.add(describeTime && c.name().equals(p.events().eventTime()) ? f.withComment("event time") : f);
        }
        return out;
    }

    static String rawEvents(Pipeline p) {
        List<StructField> cols = eventColumns(p, true);
        cols.addAll(rawEventsOwn(p.tables().size() == 1 && p.tables().get(0).window().tumbling()
                ? "true: its window had closed when it arrived; it is in late_events, not in streaming KPIs"
                : "true: a window of it had closed when it arrived; that contribution is in late_events, not in streaming KPIs",
                p.events().eventTime()));
        // Statistics only where queries filter (the event time, the KPI tables' dimensions, the Kafka position and the batch):
        // collecting them for every column costs time on each append.
        Set<String> stats = new LinkedHashSet<>(List.of(p.events().eventTime()));
        p.tables().forEach(t -> t.dimensions().forEach(d -> stats.add(d.name())));
        stats.addAll(List.of("kafka_partition", "kafka_offset", "batch_id"));
        return create("raw_events", cols, "TBLPROPERTIES ('delta.dataSkippingStatsColumns' = '" + String.join(",", stats) + "',\n  "
                + BATCH_TABLE_PROPERTIES + ")");
    }

    static String kpiTable(Pipeline.KpiTable t) {
        Map<String, String> comments = new HashMap<>(Map.of(
                "is_final", "the watermark has passed window_end: the stream will not change this row again",
                "source", "stream or batch",
                "updated_at", "ingest time of the newest record counted",
                "stream_batch_id", "micro-batch that last wrote the row; null once reconciled",
                "event_date", "UTC date of window_start"));
        for (Measure m : t.measures()) {
            comments.put(m.name(), m.written() + m.function().describe());
            if (m.sketched()) {
                comments.put(m.sketch(), m.partial().get(0).sql() + ": merge with " + m.function().sketchMerge());
            }
        }
        List<StructField> cols = new ArrayList<>();
        for (StructField c : t.columns()) {
            String comment = comments.get(c.name());
            cols.add(comment == null ? c : c.withComment(comment));
        }
        // A table with Kafka output keeps Delta's change data feed: the publisher's outbox (kafka-output's KpiPublisher).
        return create(t.name(), cols, "TBLPROPERTIES (\n  " + BATCH_TABLE_PROPERTIES
                + (t.kafkaOutput().isPresent() ? ",\n  " + CHANGE_DATA_FEED : "") + ")");
    }

    /** The Delta property that keeps a table's change data feed. */
    public static final String CHANGE_DATA_FEED = "'delta.enableChangeDataFeed' = 'true'";

    /** raw_events' own columns, after the event's: where the record came from, its batch and its day. */
    private static List<StructField> rawEventsOwn(String isLate, String eventTime) {
        return List.of(
                own("payload", STRING, "the message as received, extra fields included"),
                own("kafka_topic", STRING, null),
                own("kafka_partition", INT, null),
                own("kafka_offset", BIGINT, null),
                own("ingest_ts", TIMESTAMP, "Kafka record timestamp: when the record entered the log"),
                own("is_late", BOOLEAN, isLate),
                own("batch_id", BIGINT, "micro-batch that ingested it"),
                own("event_date", DATE, "UTC date of " + eventTime));
    }

    /**
     * The columns raw_events and late_events store beside the event's, by name: no event column may
     * take one (the parser refuses it and names {@code 'field.<column>'}, which reads a field of that
     * name into a column of another). Every step of a batch may use these names for what the tables
     * store under them, and gives any other column of its own a working name ({@link WorkingColumns}).
     */
    public static Set<String> ownEventColumns() {
        Set<String> out = new TreeSet<>();
        rawEventsOwn("", "").forEach(c -> out.add(c.name()));
        LATE_EVENTS_OWN.forEach(c -> out.add(c.name()));
        return Collections.unmodifiableSet(out);
    }

    /** late_events' own columns, after the event's: the window it missed, by how much, where it came from, for which KPI table. */
    private static final List<StructField> LATE_EVENTS_OWN = List.of(
            own("window_start", TIMESTAMP, null),
            own("window_end", TIMESTAMP, null),
            own("watermark", TIMESTAMP, "the watermark in force for the batch that caught it"),
            own("late_by_ms", BIGINT, "watermark - window_end: how long ago its window closed"),
            own("batch_id", BIGINT, null),
            own("kafka_topic", STRING, null),
            own("kafka_partition", INT, null),
            own("kafka_offset", BIGINT, null),
            own("arrival_ts", TIMESTAMP, "Kafka record timestamp"),
            own("event_date", DATE, null),
            Measure.field("kpi", STRING, true).withComment("the KPI table whose window it was late for (null in rows written before "
                    + "late_events named it: the first KPI table)"));

    /** A NOT NULL column of Tidemark's own, with its comment (or none). */
    private static StructField own(String name, DataType type, String comment) {
        StructField f = Measure.field(name, type, false);
        return comment == null ? f : f.withComment(comment);
    }

    static String lateEvents(Pipeline p) {
        List<StructField> cols = eventColumns(p, false);
        cols.addAll(LATE_EVENTS_OWN);
        return create("late_events", cols, "TBLPROPERTIES (\n  " + BATCH_TABLE_PROPERTIES + ")");
    }

    /** {@code name TYPE}, {@code NOT NULL} when the column is, and its comment: a column as a CREATE TABLE declares it. */
    public static String ddl(StructField f) {
        return f.name() + typeAndComment(f);
    }

    private static String typeAndComment(StructField f) {
        return " " + f.dataType().sql() + (f.nullable() ? "" : " NOT NULL")
                + (f.getComment().isDefined() ? " COMMENT '" + Pipeline.literal(f.getComment().get()) + "'" : "");
    }

    private static String create(String table, List<StructField> columns, String properties) {
        // Each column's name quoted: a producer's field may be called timestamp, order or key.
        List<String> quoted = columns.stream().map(c -> Pipeline.quote(c.name()) + typeAndComment(c)).toList();
        return "CREATE TABLE IF NOT EXISTS tidemark." + table + " (\n  " + String.join(",\n  ", quoted) + "\n) USING delta\n"
                + "PARTITIONED BY (event_date)\n"
                + "LOCATION '${lakehouse}/" + table + "'\n"
                + properties;
    }
}
