package io.tidemark.pipeline;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;

/**
 * A pipeline: the events Tidemark reads and the KPI tables it keeps over them, as one pipeline file
 * declares them ({@link PipelineParser}). A value: the stream, reconcile and the commands all read
 * the same one.
 *
 * @param file           the file it was read from, as the user named it
 * @param events         the event table: schema, checks, topic, format, event time, lateness
 * @param tables         the KPI tables, in the order of the file
 * @param driftThreshold the relative drift (|truth - stream| / truth) above which a reconciled window is reported
 * @param views          the analyst views the file declares over Tidemark's tables, in its order
 * @param source         the file's text as it was read (what the stream records in the lakehouse); null for a pipeline built in code
 */
public record Pipeline(String file, EventTable events, List<KpiTable> tables, double driftThreshold, List<View> views, String source) {

    public Pipeline {
        tables = List.copyOf(tables);
        views = List.copyOf(views);
    }

    public Pipeline(String file, EventTable events, List<KpiTable> tables, double driftThreshold) {
        this(file, events, tables, driftThreshold, List.of(), null);
    }

    /**
     * An analyst view the pipeline declares ({@code CREATE VIEW name AS SELECT ...} over
     * {@code tidemark.<table>}): registered with the tables, as Tidemark's own views are. Views over the
     * domain's columns (late volume per cell, say) belong to the pipeline, not to Tidemark.
     *
     * @param query the SELECT as written
     */
    public record View(String name, String query, Position at) {
        /** The statement that registers it in a session. */
        public String statement() {
            return "CREATE OR REPLACE TEMPORARY VIEW " + name + " AS\n" + query;
        }
    }

    /** The shipped network pipeline's table whose window the {@code window} setting gives (the settings predate pipeline files). */
    public static final String WINDOW_SETTING_TABLE = "kpi_5m";

    /**
     * This pipeline with the settings {@code topic}, {@code lateness} and {@code window} applied, as they apply to
     * the shipped network pipeline, which predates pipeline files: its topic, its lateness, and the window of
     * every KPI table (tumbling).
     */
    public Pipeline withSettings(String topic, Duration lateness, Duration windowSize) {
        EventTable e = events;
        EventTable withTopic = new EventTable(e.name(), e.columns(), e.checks(), topic, e.format(), e.schemaRegistry(), e.eventTime(), lateness,
                e.at());
        Window w = new Window(windowSize, windowSize);
        List<KpiTable> withWindow = tables.stream()
                .map(t -> new KpiTable(t.name(), w, t.dimensions(), t.where(), t.measures(), t.output(), t.at())).toList();
        return new Pipeline(file, withTopic, withWindow, driftThreshold, views, null);
    }

    /**
     * How far past its midnight a day's last window ends: 0 for tumbling windows (they divide the day);
     * size - slide for a hopping table (its last window of the day starts one slide before midnight). A
     * day is closed when the watermark has passed that too.
     */
    public Duration daySpill() {
        return tables.stream().map(t -> t.window().size().minus(t.window().slide())).max(Duration::compareTo).orElse(Duration.ZERO);
    }

    /** The KPI table named {@code name}, if the pipeline declares it. */
    public Optional<KpiTable> table(String name) {
        return tables.stream().filter(t -> t.name().equals(name)).findFirst();
    }

    /** A place in a pipeline file: 1-based line and column. */
    public record Position(String file, int line, int column) {
        @Override
        public String toString() {
            return file + ":" + line + ":" + column;
        }
    }

    /**
     * A column of the event schema. {@code notNull}: a record without it goes to dead_letter as NULL_FIELD or MISSING_FIELD.
     *
     * @param field the record's field it reads: its own name, unless the event table's option {@code 'field.<column>'} names another
     */
    public record Column(String name, DataType type, boolean notNull, Position at, String field) {
        /** A column that reads the field of its own name. */
        public Column(String name, DataType type, boolean notNull, Position at) {
            this(name, type, notNull, at, name);
        }

        /** The type as SQL writes it: STRING, DECIMAL(12,2), TIMESTAMP... */
        public String sqlType() {
            return type.sql();
        }

        @Override
        public String toString() {
            return name + " " + sqlType() + (notNull ? " NOT NULL" : "");
        }
    }

    /**
     * A CHECK constraint: a valid record satisfies it; one that does not goes to dead_letter with the
     * constraint's name, upper-cased, as its reason.
     *
     * @param columns the event columns the condition reads, for the detail of a record that fails it
     */
    public record Check(String name, String condition, List<String> columns, Position at) {
        public Check {
            columns = List.copyOf(columns);
        }

        /** The dead_letter reason of a record that fails this check. */
        public String reason() {
            return name.toUpperCase(Locale.ROOT);
        }

        /** Spark SQL, true when a record fails the check: its condition is false (unknown passes, as in SQL's CHECK). */
        public String fails() {
            return "NOT coalesce(" + condition + ", true)";
        }

        /** Spark SQL, the dead_letter detail of a record that fails it: the check and the values it read. */
        public String detail() {
            List<String> values = new ArrayList<>();
            for (String c : columns) {
                values.add("concat('" + literal(c) + " = ', coalesce(CAST(" + quote(c) + " AS STRING), 'null'))");
            }
            return "concat('" + literal("CHECK " + name + " (" + condition + ") is false" + (columns.isEmpty() ? "" : " for ")) + "'"
                    + (columns.isEmpty() ? "" : ", concat_ws(', ', " + String.join(", ", values) + ")") + ")";
        }
    }

    /** {@code identifier} quoted for Spark SQL: a column of any name (a producer's {@code timestamp}, {@code order}) inside an expression. */
    public static String quote(String identifier) {
        return "`" + identifier.replace("`", "``") + "`";
    }

    /** {@code text} inside a single-quoted Spark SQL string literal. */
    static String literal(String text) {
        return text.replace("\\", "\\\\").replace("'", "\\'");
    }

    /**
     * The events: {@code CREATE TABLE name (...) USING kafka OPTIONS (...)}.
     *
     * @param format         {@code json} or {@code avro} (Confluent's wire format)
     * @param schemaRegistry for {@code avro}: where the writer schemas are found by id, a Confluent-compatible registry's URL or
     *                       a directory of {@code <id>.avsc} files; null for {@code json}
     * @param eventTime      the TIMESTAMP column whose value places a record in its windows
     * @param lateness       how far the watermark trails the newest event time
     */
    public record EventTable(String name, List<Column> columns, List<Check> checks, String topic, String format, String schemaRegistry,
                             String eventTime, Duration lateness, Position at) {
        public EventTable {
            columns = List.copyOf(columns);
            checks = List.copyOf(checks);
        }

        public Optional<Column> column(String name) {
            return columns.stream().filter(c -> c.name().equalsIgnoreCase(name)).findFirst();
        }
    }

    /**
     * The windows of a KPI table: {@code window(ts, size)} (tumbling) or {@code window(ts, size, slide)}
     * (hopping: each record counts in size / slide windows). Both divide a day, so a day's windows
     * start at its midnight.
     */
    public record Window(Duration size, Duration slide) {
        public boolean tumbling() {
            return size.equals(slide);
        }

        /** How many windows each record counts in. */
        public long windowsPerRecord() {
            return size.toMillis() / slide.toMillis();
        }

        @Override
        public String toString() {
            return tumbling() ? Durations.human(size) + " (tumbling)" : Durations.human(size) + " every " + Durations.human(slide) + " (hopping)";
        }
    }

    /**
     * A KPI table: {@code CREATE STREAMING TABLE name AS SELECT window(...), dims..., measures... FROM
     * STREAM events [WHERE ...] GROUP BY window(...), dims...}.
     *
     * @param where the WHERE condition as written, or null: records that fail it count in no window of this table
     */
    public record KpiTable(String name, Window window, List<Column> dimensions, String where, List<Measure> measures, KafkaOutput output,
                           Position at) {
        public KpiTable {
            dimensions = List.copyOf(dimensions);
            measures = List.copyOf(measures);
        }

        /** A table without Kafka output. */
        public KpiTable(String name, Window window, List<Column> dimensions, String where, List<Measure> measures, Position at) {
            this(name, window, dimensions, where, measures, null, at);
        }

        /** Where its changes are published, if the pipeline asks for it ({@code TBLPROPERTIES ('output.kafka.topic' = ...)}). */
        public Optional<KafkaOutput> kafkaOutput() {
            return Optional.ofNullable(output);
        }

        /**
         * What the table's rows mean, in one line: its dimensions, WHERE, measures as written and
         * window. Recorded with the lakehouse: a restart or a reconcile whose definition of the table
         * differs is refused, since the rows would mix two meanings. (kpi_5m's window is the
         * {@code window} setting, recorded and guarded as such, so its line has none.)
         */
        public String definition() {
            List<String> m = new ArrayList<>();
            measures.forEach(x -> m.add(x.name() + " = " + x.written()));
            return "dimensions " + (dimensions.isEmpty() ? "(none)" : String.join(", ",
                    dimensions.stream().map(Column::name).toList())) + "; where " + (where == null ? "(none)" : where) + "; measures "
                    + String.join(", ", m) + (name.equals(WINDOW_SETTING_TABLE) ? "" : "; window " + window);
        }

        /**
         * The measure that counts the table's records: its first {@code count(*)} without FILTER. Every
         * KPI table has one (the parser refuses a table without): it is how a day's rows are balanced
         * against the raw log (the lakehouse's DayBalance).
         */
        public Optional<Measure> recordCount() {
            return measures.stream().filter(Measure::countsRecords).findFirst();
        }

        /**
         * The one additive measure a single-figure check compares (conservation's sum, the report's
         * "drift now", the reconcile benchmark's drift): the first sum (network: total_gb), else the
         * record count. Additive, so a day's value is the sum of its rows' and recomputes from raw_events.
         */
        public Measure headline() {
            return measures.stream().filter(m -> m.function() instanceof Sum).findFirst().orElseGet(() -> recordCount().orElseThrow());
        }

        /**
         * The table's columns: window bounds, dimensions, each measure's stored columns, then
         * Tidemark's own (is_final, source, updated_at, the stream's batch, event_date).
         */
        public List<StructField> columns() {
            List<StructField> out = new ArrayList<>(OWN_COLUMNS.subList(0, 2));
            dimensions.forEach(d -> out.add(Measure.field(d.name(), d.type(), !d.notNull())));
            measures.forEach(m -> out.addAll(m.stored()));
            out.addAll(OWN_COLUMNS.subList(2, OWN_COLUMNS.size()));
            return out;
        }

        /** The names of {@link #columns}, in order. */
        public List<String> columnNames() {
            return columns().stream().map(StructField::name).toList();
        }

        /**
         * The columns every KPI table stores beside its dimensions and measures: the window bounds first, the rest last
         * ({@link #columns}). No dimension, measure or sketch column may take one of their names.
         */
        public static final List<StructField> OWN_COLUMNS = List.of(Measure.field("window_start", DataTypes.TimestampType, false),
                Measure.field("window_end", DataTypes.TimestampType, false), Measure.field("is_final", DataTypes.BooleanType, false),
                Measure.field("source", DataTypes.StringType, false), Measure.field("updated_at", DataTypes.TimestampType, false),
                Measure.field("stream_batch_id", DataTypes.LongType, true), Measure.field("event_date", DataTypes.DateType, false));

        /** The names of {@link #OWN_COLUMNS}. */
        public static Set<String> ownColumnNames() {
            Set<String> out = new TreeSet<>();
            OWN_COLUMNS.forEach(c -> out.add(c.name()));
            return out;
        }
    }

    /**
     * A KPI table's Kafka output: every change of a row (mode {@code updates}), or each window once it is
     * final and each later correction (mode {@code final}), published to a compacted topic keyed by
     * (table, window, dimensions) with a version that only grows per key: the Delta commit that made it.
     *
     * @param topic           the output topic (created compacted when missing)
     * @param mode            which changes are published
     * @param exactlyOnce     a transactional producer: a read_committed consumer sees each (key, version) once
     * @param progressTopic   the compacted topic where the publisher records how far it has published
     * @param producerOptions Kafka producer settings ({@code kafka.option.<name>}), bootstrap.servers among them when given
     */
    /**
     * A KPI table's Kafka output, declared in its TBLPROPERTIES.
     *
     * @param format         how keys and values are written: JSON, or Avro in Confluent's wire format
     * @param schemaRegistry for AVRO: where the key and value schemas are registered (a Confluent-compatible registry's URL,
     *                       or a directory of schema files named by id); null for JSON
     */
    public record KafkaOutput(String topic, Mode mode, boolean exactlyOnce, String progressTopic, Map<String, String> producerOptions,
                              Format format, String schemaRegistry) {
        public enum Mode { FINAL, UPDATES }

        public enum Format { JSON, AVRO }

        /** A JSON output. */
        public KafkaOutput(String topic, Mode mode, boolean exactlyOnce, String progressTopic, Map<String, String> producerOptions) {
            this(topic, mode, exactlyOnce, progressTopic, producerOptions, Format.JSON, null);
        }

        /** The progress topic when the pipeline names none. */
        public static final String DEFAULT_PROGRESS_TOPIC = "tidemark-publish-progress";

        public KafkaOutput {
            producerOptions = Collections.unmodifiableMap(new TreeMap<>(producerOptions));
        }
    }

}
