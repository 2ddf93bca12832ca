package io.tidemark.stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.kafka010.KafkaRecordToRowConverter$;
import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import io.tidemark.pipeline.Watermark;
import io.tidemark.pipeline.KpiAggregation;
import io.tidemark.pipeline.Pipeline;
import io.tidemark.pipeline.PipelineException;
import io.tidemark.pipeline.PipelineParser;
import io.tidemark.pipeline.PipelineTables;
import io.tidemark.pipeline.TruthKpis;
import io.tidemark.pipeline.WorkingColumns;

import scala.jdk.javaapi.CollectionConverters;
import io.tidemark.testing.LocalSpark;

/**
 * No column of Tidemark's can meet a producer's field. The names are derived from the code: every
 * column any step of a micro-batch (decode, classify, late split, summary, partial KPIs, raw_events,
 * late_events, dead_letter rows, the truth reconcile computes) has in its plan, and every column of
 * Spark's Kafka source. Each such name, and each working column without its prefix, is then declared as
 * an event column: the parser either refuses it for a column the tables store (and names the field
 * option that reads it under another name), or it goes into a pipeline whose records carry a field of
 * that name, and every step must give back exactly the value each record carried. A working column
 * added later without its namespace is found in the plans, declared, and breaks the values.
 */
class WorkingColumnsTest {
    /** The Kafka source's columns, headers included, as Spark's Kafka source declares them. */
    private static final StructType KAFKA = KafkaRecordToRowConverter$.MODULE$.kafkaSchema(true);
    private static final long WATERMARK_MS = Instant.parse("2026-11-29T14:00:00Z").toEpochMilli();
    /** The event columns of the base pipeline. */
    private static final List<String> BASE = List.of("id", "cell", "ts", "amount");

    private static SparkSession spark;

    @BeforeAll
    static void start() {
        spark = LocalSpark.start("working-columns-test");
    }

    @AfterAll
    static void stop() {
        spark.stop();
    }

    /**
     * A pipeline over the base columns plus {@code extra} (nullable strings), two KPI tables: tumbling 10 minutes by
     * cell and {@code dimensions}, hopping 20 minutes every 10 with a WHERE; {@code options} added to the event table's.
     */
    private static Pipeline pipeline(List<String> extra, String dimensions, String options) {
        StringBuilder columns = new StringBuilder();
        for (String c : extra) {
            columns.append("  `").append(c).append("` STRING,\n");
        }
        String dims = dimensions == null ? "cell" : "cell, " + dimensions;
        String text = "CREATE TABLE events (\n  id STRING NOT NULL,\n  cell STRING NOT NULL,\n  ts TIMESTAMP NOT NULL,\n"
                + "  amount DECIMAL(10,2) NOT NULL,\n" + columns
                + "  CONSTRAINT positive_amount CHECK (amount > 0)\n) USING kafka OPTIONS (topic 't', event_time 'ts', lateness '10 minutes'"
                + options + ");\n"
                + "CREATE STREAMING TABLE by_cell AS SELECT window(ts, '10 minutes') AS w, " + dims + ", count(*) AS n, sum(amount) AS total,\n"
                + "  approx_count_distinct(id) AS ids\n"
                + "FROM STREAM events GROUP BY window(ts, '10 minutes'), " + dims + ";\n"
                + "CREATE STREAMING TABLE hopping AS SELECT window(ts, '20 minutes', '10 minutes') AS w, count(*) AS n, max(amount) AS top\n"
                + "FROM STREAM events WHERE amount < 100 GROUP BY window(ts, '20 minutes', '10 minutes');\n";
        return PipelineParser.parse("events.sql", text);
    }

    private static RecordClassifier classifier(Pipeline p) {
        return new RecordClassifier(p, 4096, Duration.ofMinutes(5), Duration.ofDays(7));
    }

    /** One Kafka record of the source's full schema; {@code offset} 3 comes from partition 1. */
    private static Row kafka(String value, long offset, String timestamp) {
        return RowFactory.create(("k" + offset).getBytes(StandardCharsets.UTF_8), value.getBytes(StandardCharsets.UTF_8), "t", offset == 3 ? 1 : 0,
                offset, Instant.parse(timestamp), 0, null);
    }

    /**
     * The batch: offsets 0-2 on time (two windows), 3 late (its window ended at the watermark), 4 breaks the CHECK, 5 is not JSON.
     * Every record carries each of {@code fields} with the value {@code <field>#<offset>}.
     */
    private static Dataset<Row> batch(List<String> fields) {
        String[][] events = {
            {"a", "cell-1", "2026-11-29T14:12:30Z", "1.50"},
            {"b", "cell-1", "2026-11-29T14:14:00Z", "2.25"},
            {"c", "cell-2", "2026-11-29T14:21:00Z", "300.00"},
            {"d", "cell-1", "2026-11-29T13:55:00Z", "4.00"},
            {"e", "cell-2", "2026-11-29T14:13:00Z", "-1.00"},
        };
        List<Row> rows = new ArrayList<>();
        for (int o = 0; o < events.length; o++) {
            StringBuilder json = new StringBuilder("{\"id\":\"" + events[o][0] + "\",\"cell\":\"" + events[o][1] + "\",\"ts\":\"" + events[o][2]
                    + "\",\"amount\":" + events[o][3]);
            for (String f : fields) {
                json.append(",\"").append(f).append("\":\"").append(f).append('#').append(o).append('"');
            }
            rows.add(kafka(json.append('}').toString(), o, "2026-11-29T14:22:0" + o + "Z"));
        }
        rows.add(kafka("not json", 5, "2026-11-29T14:22:05Z"));
        return spark.createDataFrame(rows, KAFKA);
    }

    /** Every step of a batch over {@code p}, as the stream and reconcile run them. */
    private static Map<String, Dataset<Row>> steps(Pipeline p, Dataset<Row> kafka) {
        RecordClassifier classifier = classifier(p);
        Dataset<Row> classified = classifier.classify(kafka, WATERMARK_MS);
        List<KpiAggregation> tables = p.tables().stream().map(t -> new KpiAggregation(t, p.events().eventTime())).toList();
        Map<String, Dataset<Row>> out = new LinkedHashMap<>();
        out.put("classified", classified);
        out.put("summary", classifier.summary(classified, tables, Watermark.ofMillis(WATERMARK_MS)));
        out.put("raw_events", classifier.rawEvents(classified, 7L));
        out.put("late_events", classifier.lateEvents(classified, WATERMARK_MS, 7L));
        out.put("dead_letter", RecordClassifier.deadLetters(classified, 7L));
        for (Pipeline.KpiTable t : p.tables()) {
            out.put("truth " + t.name(), TruthKpis.of(out.get("raw_events"), t, p.events().eventTime()));
        }
        return out;
    }

    /** Every column name in an analyzed plan, nested struct fields included. */
    private static void names(LogicalPlan plan, Set<String> out) {
        for (Attribute a : CollectionConverters.asJava(plan.output())) {
            out.add(a.name());
            fields(a.dataType(), out);
        }
        for (LogicalPlan child : CollectionConverters.asJava(plan.children())) {
            names(child, out);
        }
    }

    private static void fields(DataType type, Set<String> out) {
        if (type instanceof StructType s) {
            for (StructField f : s.fields()) {
                out.add(f.name());
                fields(f.dataType(), out);
            }
        } else if (type instanceof ArrayType a) {
            fields(a.elementType(), out);
        }
    }

    /**
     * The names a producer's field could clash with: each name in the steps' plans and in the Kafka source's schema that is
     * not one of the base event columns, and each working column without its prefix.
     */
    private static Set<String> derivedNames() {
        Pipeline base = pipeline(List.of(), null, "");
        Set<String> used = new TreeSet<>();
        for (Dataset<Row> step : steps(base, batch(List.of())).values()) {
            names(step.queryExecution().analyzed(), used);
        }
        fields(KAFKA, used);
        Set<String> out = new TreeSet<>();
        for (String n : used) {
            String plain = WorkingColumns.isWorking(n) ? n.substring(WorkingColumns.PREFIX.length()) : n;
            if (!plain.isEmpty() && BASE.stream().noneMatch(b -> b.equalsIgnoreCase(plain))) {
                out.add(plain);
            }
        }
        return out;
    }

    @Test
    void everyNameTheStepsUseIsEitherRefusedWithTheFieldOptionOrReadAsAnyOther() {
        Set<String> derived = derivedNames();
        // not vacuous: the source's columns and the working columns the batch has always used are among them
        assertThat(derived).contains("key", "value", "topic", "partition", "offset", "timestamp", "timestampType", "headers", "reason",
                "detail", "kind", "records", "max_event_ms", "decoded_payload", "message_bytes", "raw_bytes", "raw_text", "kafka_key",
                "late_records", "payload", "is_late", "kafka_offset", "window_start");

        List<String> readable = new ArrayList<>();
        for (String name : derived) {
            if (PipelineTables.ownEventColumns().contains(name.toLowerCase(Locale.ROOT))) {
                assertThatThrownBy(() -> pipeline(List.of(name), null, "")).isInstanceOf(PipelineException.class)
                        .hasMessageContaining("an event column called '" + name + "'")
                        .hasMessageContaining("'field.event_" + name + "' = '" + name + "'");
                // and read through the option, under another name
                Pipeline mapped = pipeline(List.of("event_" + name), null, ", 'field.event_" + name + "' = '" + name + "'");
                assertThat(mapped.events().column("event_" + name).orElseThrow().field()).isEqualTo(name);
            } else {
                readable.add(name);
            }
        }
        assertThat(readable).contains("key", "value", "timestamp", "headers", "kind", "reason", "detail", "records", "raw_bytes");
        // Two of them as dimensions: the summary and the partial rows carry dimensions beside the working columns.
        assertExact(pipeline(readable, "kind, `value`", ""), readable, readable, List.of("kind", "value"));
    }

    @Test
    void aFieldNamedLikeAStoredColumnIsReadThroughTheFieldOption() {
        List<String> stored = List.of("payload", "kafka_offset", "is_late", "event_date", "window_start", "kpi");
        StringBuilder options = new StringBuilder();
        List<String> columns = new ArrayList<>();
        for (String s : stored) {
            columns.add("f_" + s);
            options.append(", 'field.f_").append(s).append("' = '").append(s).append('\'');
        }
        assertExact(pipeline(columns, "f_payload", options.toString()), columns, stored, List.of("f_payload"));
        // the option names a column that is not there; two columns read one field
        assertThatThrownBy(() -> pipeline(List.of("x"), null, ", 'field.y' = 'payload'")).isInstanceOf(PipelineException.class)
                .hasMessageContaining("option 'field.y' names no column of 'events'");
        assertThatThrownBy(() -> pipeline(List.of("x", "z"), null, ", 'field.x' = 'payload', 'field.z' = 'payload'"))
                .isInstanceOf(PipelineException.class).hasMessageContaining("columns 'x' and 'z' both read the field 'payload'");
        // a column beside a working column's prefix is refused, and a stored name as a dimension
        assertThatThrownBy(() -> pipeline(List.of("__tm_x"), null, "")).isInstanceOf(PipelineException.class)
                .hasMessageContaining("names beginning with __tm_ are Tidemark's working columns");
        assertThatThrownBy(() -> pipeline(List.of("source"), "source", "")).isInstanceOf(PipelineException.class)
                .hasMessageContaining("GROUP BY source: a KPI table keeps its dimensions under the event column's name, and 'source' is a "
                        + "column every KPI table stores");
    }

    /**
     * Runs every step over the pipeline's batch, whose records carry each of {@code fields} (read into {@code columns}, in
     * order) with the value {@code <field>#<offset>}: every table's rows must be exactly what the records say.
     */
    private static void assertExact(Pipeline p, List<String> columns, List<String> fields, List<String> dimensions) {
        Map<String, Dataset<Row>> steps = steps(p, batch(fields));

        // raw_events: the valid records 0-3, each column with its field's value
        List<Row> raw = steps.get("raw_events").orderBy("kafka_offset").collectAsList();
        assertThat(raw).extracting(r -> r.getAs("kafka_offset")).containsExactly(0L, 1L, 2L, 3L);
        for (Row r : raw) {
            long o = r.getAs("kafka_offset");
            for (int i = 0; i < columns.size(); i++) {
                assertThat((String) r.getAs(columns.get(i))).as("raw_events %s of offset %d", columns.get(i), o).isEqualTo(fields.get(i) + "#" + o);
            }
            assertThat((Boolean) r.getAs("is_late")).isEqualTo(o == 3);
            assertThat((String) r.getAs("id")).isEqualTo(String.valueOf((char) ('a' + o)));
            assertThat((Long) r.getAs("batch_id")).isEqualTo(7L);
        }

        // dead_letter: the CHECK and the message that is not JSON, with their reasons and bytes
        List<Row> dead = steps.get("dead_letter").orderBy("kafka_offset").collectAsList();
        assertThat(dead).extracting(r -> r.getAs("kafka_offset"), r -> r.getAs("reason"))
                .containsExactly(org.assertj.core.groups.Tuple.tuple(4L, "POSITIVE_AMOUNT"), org.assertj.core.groups.Tuple.tuple(5L, "NOT_JSON"));
        assertThat((String) dead.get(0).getAs("detail")).isEqualTo("CHECK positive_amount (amount > 0) is false for amount = -1.00");
        assertThat((String) dead.get(1).getAs("raw_text")).isEqualTo("not json");
        assertThat(new String((byte[]) dead.get(1).getAs("kafka_key"), StandardCharsets.UTF_8)).isEqualTo("k5");
        assertThat((Integer) dead.get(1).getAs("message_bytes")).isEqualTo(8);

        // late_events: the late record, once per table whose window it missed, with its columns
        List<Row> late = steps.get("late_events").orderBy("kpi", "window_start").collectAsList();
        assertThat(late).extracting(r -> r.getAs("kpi"), r -> r.getAs("window_start").toString()).containsExactly(
                org.assertj.core.groups.Tuple.tuple("by_cell", "2026-11-29T13:50:00Z"),
                org.assertj.core.groups.Tuple.tuple("hopping", "2026-11-29T13:40:00Z"));
        for (Row r : late) {
            for (int i = 0; i < columns.size(); i++) {
                assertThat((String) r.getAs(columns.get(i))).isEqualTo(fields.get(i) + "#3");
            }
            assertThat((Long) r.getAs("kafka_offset")).isEqualTo(3L);
        }

        // the summary: the batch's counts per kind and reason, and by_cell's partial rows per (window, cell, dimension)
        Map<String, Long> counts = new TreeMap<>();
        Map<String, Long> partials = new TreeMap<>();
        for (Row r : steps.get("summary").collectAsList()) {
            String kind = r.getAs(WorkingColumns.KIND);
            if (kind.equals(RecordClassifier.KPI)) {
                int table = r.getAs(WorkingColumns.KPI_INDEX);
                StringBuilder key = new StringBuilder(table + " " + r.getAs("window_start"));
                if (table == 0) {
                    key.append(' ').append((String) r.getAs("cell"));
                    dimensions.forEach(d -> key.append(' ').append((String) r.getAs(d)));
                }
                partials.put(key.toString(), r.getAs(RecordClassifier.partialColumn(table, "n")));
            } else {
                counts.merge(kind + " " + r.getAs(WorkingColumns.REASON), (Long) r.getAs(WorkingColumns.RECORDS), Long::sum);
            }
        }
        assertThat(counts).containsExactlyEntriesOf(new TreeMap<>(Map.of("invalid NOT_JSON", 1L, "invalid POSITIVE_AMOUNT", 1L,
                "late null", 1L, "on_time null", 3L)));
        Map<String, Long> expected = new TreeMap<>();
        expected.put("0 2026-11-29T14:10:00Z cell-1" + dims(columns, fields, dimensions, 0), 1L);
        expected.put("0 2026-11-29T14:10:00Z cell-1" + dims(columns, fields, dimensions, 1), 1L);
        expected.put("0 2026-11-29T14:20:00Z cell-2" + dims(columns, fields, dimensions, 2), 1L);
        // hopping: offsets 0 and 1 (2 is over its WHERE), each in two windows; the late 3 in the one of its two still open
        expected.put("1 2026-11-29T13:50:00Z", 1L);
        expected.put("1 2026-11-29T14:00:00Z", 2L);
        expected.put("1 2026-11-29T14:10:00Z", 2L);
        assertThat(partials).containsExactlyEntriesOf(expected);

        // the truth reconcile computes from raw_events: every valid record, the late one included, in its windows
        Map<String, Long> truth = new TreeMap<>();
        for (Row r : steps.get("truth by_cell").collectAsList()) {
            StringBuilder key = new StringBuilder(String.valueOf((Object) r.getAs("window_start")));
            dimensions.forEach(d -> key.append(' ').append((String) r.getAs(d)));
            truth.put(key.toString(), r.getAs("n"));
        }
        assertThat(truth).containsExactlyEntriesOf(new TreeMap<>(Map.of("2026-11-29T13:50:00Z" + dims(columns, fields, dimensions, 3), 1L,
                "2026-11-29T14:10:00Z" + dims(columns, fields, dimensions, 0), 1L, "2026-11-29T14:10:00Z" + dims(columns, fields, dimensions, 1), 1L,
                "2026-11-29T14:20:00Z" + dims(columns, fields, dimensions, 2), 1L)));
    }

    /** The values record {@code offset} carries for the dimensions, each after a space. */
    private static String dims(List<String> columns, List<String> fields, List<String> dimensions, int offset) {
        StringBuilder out = new StringBuilder();
        dimensions.forEach(d -> out.append(' ').append(fields.get(columns.indexOf(d))).append('#').append(offset));
        return out.toString();
    }
}
