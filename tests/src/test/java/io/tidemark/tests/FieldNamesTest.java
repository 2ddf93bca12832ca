package io.tidemark.tests;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.time.LocalDate;
import java.time.ZoneOffset;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import org.apache.avro.Conversions;
import org.apache.avro.LogicalTypes;
import org.apache.avro.Schema;
import org.apache.avro.generic.GenericData;
import org.apache.avro.generic.GenericRecord;
import org.apache.spark.sql.Row;
import org.junit.jupiter.api.Test;

import io.tidemark.lakehouse.Lakehouse;
import io.tidemark.lakehouse.Lakehouse.Table;
import io.tidemark.lakehouse.SchemaRegistry;
import io.tidemark.lakehouse.TidemarkConfig;
import io.tidemark.operations.ConservationCheck;
import io.tidemark.reconcile.DayOutcome;
import io.tidemark.reconcile.DaySelection;
import io.tidemark.reconcile.ReconcileJob;
import io.tidemark.reconcile.ReconcileResult;

/**
 * A producer's field names, whatever they are, on the real broker: an event table whose columns are
 * named like every column of Spark's Kafka source ({@code key, value, topic, partition, offset,
 * timestamp, timestampType, headers}), like the working columns the stream has used ({@code kind,
 * reason, detail, records, raw_bytes...}) and like common words ({@code status, type, source}), with
 * {@code timestamp} as the event time, {@code value} summed and {@code topic}, {@code kind} as
 * dimensions; and fields named like columns Tidemark stores ({@code payload, kafka_offset, kpi,
 * window_start, is_late, batch_id}) read through {@code 'field.<column>'}, one of them a dimension.
 * JSON and Avro: the stream (late records included), a reconcile of the closed day, every table exact
 * against what was sent, conservation.
 */
class FieldNamesTest extends OnSharedInfrastructure {
    /** A column: its name, the field it reads, its SQL type and NOT NULL. */
    record Col(String name, String field, String type, boolean notNull) {
    }

    static final List<Col> COLUMNS = new ArrayList<>();

    static {
        COLUMNS.add(new Col("key", "key", "STRING", true));
        COLUMNS.add(new Col("value", "value", "DECIMAL(10,2)", true));
        COLUMNS.add(new Col("timestamp", "timestamp", "TIMESTAMP", true));
        COLUMNS.add(new Col("topic", "topic", "STRING", true));
        COLUMNS.add(new Col("kind", "kind", "STRING", true));
        COLUMNS.add(new Col("partition", "partition", "INT", false));
        COLUMNS.add(new Col("offset", "offset", "BIGINT", false));
        COLUMNS.add(new Col("is_final", "is_final", "BOOLEAN", false));
        for (String s : List.of("timestampType", "headers", "reason", "detail", "status", "type", "source", "records", "decoded", "raw_bytes",
                "raw_text", "message_bytes", "decoded_payload", "kafka_key", "max_event_ms", "late_records", "updated_at", "d")) {
            COLUMNS.add(new Col(s, s, "STRING", false));
        }
        // fields named like columns Tidemark stores, each read into a column of another name
        COLUMNS.add(new Col("event_payload", "payload", "STRING", false));
        COLUMNS.add(new Col("event_kafka_offset", "kafka_offset", "BIGINT", false));
        COLUMNS.add(new Col("event_kpi", "kpi", "STRING", true));
        COLUMNS.add(new Col("event_window_start", "window_start", "STRING", false));
        COLUMNS.add(new Col("event_is_late", "is_late", "BOOLEAN", false));
        COLUMNS.add(new Col("event_batch_id", "batch_id", "BIGINT", false));
    }

    static final int RECORDS = 240;
    /** Every 30th record 50 minutes behind (late once the watermark has moved on), every 40th breaks the CHECK. */
    static boolean behind(int i) {
        return i % 30 == 29;
    }

    static boolean negative(int i) {
        return i % 40 == 39;
    }

    /** Record {@code i}'s value of column {@code c}. */
    static Object valueOf(Col c, int i, Instant begin) {
        return switch (c.name()) {
            case "key" -> "k" + i;
            case "value" -> negative(i) ? new BigDecimal("-1.00") : new BigDecimal(i % 17 + 1).add(new BigDecimal("0.25"));
            case "timestamp" -> begin.plus(i, ChronoUnit.MINUTES).minus(behind(i) ? 120 : 0, ChronoUnit.MINUTES);
            case "topic" -> "t" + (i % 3);
            case "kind" -> i % 2 == 0 ? "click" : "view";
            case "partition" -> i % 4;
            case "offset", "event_kafka_offset" -> 1000L + i;
            case "is_final", "event_is_late" -> i % 2 == 0;
            case "status" -> i % 5 == 0 ? "fail" : "ok";
            case "type" -> i % 7 == 0 ? "test" : "live";
            case "event_kpi" -> "kpi-" + (i % 2);
            case "event_batch_id" -> 7000L + i;
            default -> c.field() + "-" + i;
        };
    }

    static String pipeline(String topic, String format) {
        StringBuilder columns = new StringBuilder();
        StringBuilder fields = new StringBuilder();
        for (Col c : COLUMNS) {
            columns.append("  `").append(c.name()).append("` ").append(c.type()).append(c.notNull() ? " NOT NULL" : "").append(",\n");
            if (!c.field().equals(c.name())) {
                fields.append(",\n  'field.").append(c.name()).append("' = '").append(c.field()).append('\'');
            }
        }
        return "-- a producer's field names\n"
                + "CREATE TABLE events (\n" + columns + "  CONSTRAINT positive_value CHECK (value > 0)\n"
                + ") USING kafka OPTIONS (\n  topic '" + topic + "',\n  " + format + ",\n  event_time 'timestamp',\n  lateness '10 minutes'"
                + fields + "\n);\n"
                + "CREATE STREAMING TABLE by_topic AS\n"
                + "SELECT window(timestamp, '10 minutes') AS w, topic, kind, count(*) AS n, sum(value) AS total,\n"
                + "       count(*) FILTER (WHERE status = 'ok') AS ok, max(offset) AS top_offset\n"
                + "FROM STREAM events GROUP BY window(timestamp, '10 minutes'), topic, kind;\n"
                + "CREATE STREAMING TABLE hourly AS\n"
                + "SELECT window(timestamp, '1 hour', '30 minutes') AS w, event_kpi, count(*) AS n, sum(value) AS total\n"
                + "FROM STREAM events WHERE type <> 'test'\n"
                + "GROUP BY window(timestamp, '1 hour', '30 minutes'), event_kpi;\n";
    }

    @Test
    void jsonFieldsOfAnyNameThroughTheStreamAndReconcile() throws Exception {
        run("json", "format 'json'", null);
    }

    @Test
    void avroFieldsOfAnyNameThroughTheStreamAndReconcile() throws Exception {
        run("avro", "format 'avro', schema_registry '%s'", avroSchema());
    }

    /** The writer schema of the Avro run: every field, by the field's name. */
    static Schema avroSchema() {
        StringBuilder f = new StringBuilder();
        for (Col c : COLUMNS) {
            String type = switch (c.type()) {
                case "DECIMAL(10,2)" -> "{\"type\": \"bytes\", \"logicalType\": \"decimal\", \"precision\": 10, \"scale\": 2}";
                case "TIMESTAMP" -> "{\"type\": \"long\", \"logicalType\": \"timestamp-micros\"}";
                case "INT" -> "\"int\"";
                case "BIGINT" -> "\"long\"";
                case "BOOLEAN" -> "\"boolean\"";
                default -> "\"string\"";
            };
            f.append(f.length() == 0 ? "" : ",\n").append("{\"name\": \"").append(c.field()).append("\", \"type\": ").append(type).append('}');
        }
        return new Schema.Parser().parse("{\"type\": \"record\", \"name\": \"Event\", \"namespace\": \"names\", \"fields\": [\n" + f + "]}");
    }

    private void run(String name, String format, Schema avro) throws Exception {
        Path dir = infra.newDir("field-names-" + name);
        String topic = "field-names-" + dir.getFileName();
        if (avro != null) {
            Path schemas = Files.createDirectories(dir.resolve("schemas"));
            Files.writeString(schemas.resolve("1.avsc"), avro.toString());
            format = String.format(format, schemas);
        }
        Path file = Files.writeString(dir.resolve("names.sql"), pipeline(topic, format));
        infra.broker.createTopic(topic, 1);
        TidemarkConfig config = infra.config(dir, topic).set(TidemarkConfig.Key.PIPELINE, file.toString())
                .set(TidemarkConfig.Key.MAX_OFFSETS_PER_TRIGGER, "60").set(TidemarkConfig.Key.TRIGGER, "0").build();

        LocalDate day = LocalDate.now(ZoneOffset.UTC).minusDays(2);
        Instant begin = day.atTime(22, 0).toInstant(ZoneOffset.UTC);
        List<KafkaFixtures.Raw> messages = new ArrayList<>();
        Map<Long, String> invalid = new TreeMap<>();
        for (int i = 0; i < RECORDS; i++) {
            Map<String, Object> values = new LinkedHashMap<>();
            for (Col c : COLUMNS) {
                values.put(c.field(), valueOf(c, i, begin));
            }
            if (negative(i)) {
                invalid.put((long) i, "POSITIVE_VALUE");
            }
            if (avro == null && i == 100) {
                values.remove("kpi"); // a NOT NULL column's field missing: the detail names the field as the record has it
                invalid.put((long) i, "MISSING_FIELD");
            }
            messages.add(new KafkaFixtures.Raw(avro == null ? json(values) : wire(avro, values), Instant.now()));
        }
        messages.add(new KafkaFixtures.Raw("not an event".getBytes(StandardCharsets.UTF_8), Instant.now()));
        invalid.put((long) RECORDS, avro == null ? "NOT_JSON" : "NOT_AVRO");
        KafkaFixtures.sendRaw(infra.broker.bootstrapServers(), topic, 0, messages);

        LiveStream stream = new LiveStream(infra.spark, config);
        stream.drainAndStop();
        assertThat(stream.failures).isEmpty();
        Lakehouse lakehouse = Lakehouse.of(config);

        // raw_events: every valid record, each column with what its field carried
        List<String> select = new ArrayList<>(List.of("kafka_offset"));
        COLUMNS.forEach(c -> select.add("`" + c.name() + "`"));
        List<Row> raw = infra.spark.sql("SELECT " + String.join(", ", select) + " FROM " + lakehouse.ref(Table.RAW_EVENTS) + " ORDER BY kafka_offset")
                .collectAsList();
        List<Integer> valid = new ArrayList<>();
        for (int i = 0; i < RECORDS; i++) {
            if (!invalid.containsKey((long) i)) {
                valid.add(i);
            }
        }
        assertThat(raw).extracting(r -> (int) r.getLong(0)).containsExactlyElementsOf(valid);
        for (Row r : raw) {
            int i = (int) r.getLong(0);
            for (int c = 0; c < COLUMNS.size(); c++) {
                Object got = r.get(c + 1);
                Object want = valueOf(COLUMNS.get(c), i, begin);
                if (got instanceof java.sql.Timestamp t) {
                    got = t.toInstant();
                }
                assertThat(got).as("%s of record %d", COLUMNS.get(c).name(), i).isEqualTo(want);
            }
        }
        // dead_letter: each invalid record with its reason
        Map<Long, String> dead = new TreeMap<>();
        infra.spark.sql("SELECT kafka_offset, reason, detail FROM " + lakehouse.ref(Table.DEAD_LETTER)).collectAsList().forEach(r -> {
            dead.put(r.getLong(0), r.getString(1));
            if (r.getString(1).equals("MISSING_FIELD")) {
                assertThat(r.getString(2)).isEqualTo("kpi is missing");
            }
        });
        assertThat(dead).isEqualTo(invalid);

        // the late records: late_events names them (conservation, below, holds them to raw_events' flag)
        long late = infra.spark.sql("SELECT count(DISTINCT kafka_offset) FROM " + lakehouse.ref(Table.LATE_EVENTS)).first().getLong(0);
        assertThat(late).isPositive();
        assertThat(infra.spark.sql("SELECT count(*) FROM " + lakehouse.ref(Table.LATE_EVENTS) + " WHERE event_kpi IS NULL OR `key` IS NULL")
                .first().getLong(0)).isZero();

        // reconcile the closed day: both tables' rows of it exactly what the records sent say
        ReconcileJob job = new ReconcileJob(infra.spark, config, new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8));
        ReconcileResult result = job.run(DaySelection.day(day), false);
        assertThat(result.days()).extracting(DayOutcome::day).containsExactly(day);
        assertThat(result.days().get(0).status()).isEqualTo(DayOutcome.Status.RECONCILED);
        assertThat(rows(lakehouse, "SELECT window_start, topic, kind, n, total, ok, top_offset FROM " + lakehouse.ref(Table.kpi("by_topic"))
                + " WHERE event_date = DATE'" + day + "'")).isEqualTo(expectedByTopic(valid, begin, day));
        assertThat(rows(lakehouse, "SELECT window_start, event_kpi, n, total FROM " + lakehouse.ref(Table.kpi("hourly"))
                + " WHERE event_date = DATE'" + day + "'")).isEqualTo(expectedHourly(valid, begin, day));
        ConservationCheck.Report after = ConservationCheck.check(infra.spark, lakehouse, (long) RECORDS + 1);
        assertThat(after.violations()).as(after.summary()).isEmpty();
        assertThat(after.duplicates()).isZero();
        assertThat(after.rawEvents()).isEqualTo(valid.size());
        assertThat(after.lateEvents()).isEqualTo(infra.spark.sql("SELECT count(*) FROM " + lakehouse.ref(Table.LATE_EVENTS)).first().getLong(0))
                .isPositive();
    }

    /** The rows of a query, each as text, sorted. */
    private static List<String> rows(Lakehouse lakehouse, String sql) {
        List<String> out = new ArrayList<>();
        for (Row r : infra.spark.sql(sql).collectAsList()) {
            List<String> cells = new ArrayList<>();
            for (int c = 0; c < r.size(); c++) {
                Object v = r.get(c);
                cells.add(v instanceof java.sql.Timestamp t ? t.toInstant().toString() : v instanceof BigDecimal d ? d.toPlainString()
                        : String.valueOf(v));
            }
            out.add(String.join(" ", cells));
        }
        out.sort(null);
        return out;
    }

    /** by_topic's exact rows of {@code day}: per 10-minute window, topic and kind, from the records sent. */
    private static List<String> expectedByTopic(List<Integer> valid, Instant begin, LocalDate day) {
        Map<String, Object[]> groups = new TreeMap<>();
        for (int i : valid) {
            Instant ts = (Instant) valueOf(col("timestamp"), i, begin);
            Instant start = Instant.ofEpochSecond(ts.getEpochSecond() - Math.floorMod(ts.getEpochSecond(), 600));
            if (!start.atZone(ZoneOffset.UTC).toLocalDate().equals(day)) {
                continue;
            }
            Object[] g = groups.computeIfAbsent(start + " " + valueOf(col("topic"), i, begin) + " " + valueOf(col("kind"), i, begin),
                    k -> new Object[] {0L, BigDecimal.ZERO.setScale(2), 0L, Long.MIN_VALUE});
            g[0] = (Long) g[0] + 1;
            g[1] = ((BigDecimal) g[1]).add((BigDecimal) valueOf(col("value"), i, begin));
            g[2] = (Long) g[2] + (valueOf(col("status"), i, begin).equals("ok") ? 1 : 0);
            g[3] = Math.max((Long) g[3], (Long) valueOf(col("offset"), i, begin));
        }
        List<String> out = new ArrayList<>();
        groups.forEach((k, g) -> out.add(k + " " + g[0] + " " + ((BigDecimal) g[1]).toPlainString() + " " + g[2] + " " + g[3]));
        out.sort(null);
        return out;
    }

    /** hourly's exact rows of {@code day}: each record of type other than test in its two hopping windows, per event_kpi. */
    private static List<String> expectedHourly(List<Integer> valid, Instant begin, LocalDate day) {
        Map<String, Object[]> groups = new TreeMap<>();
        for (int i : valid) {
            if (valueOf(col("type"), i, begin).equals("test")) {
                continue;
            }
            Instant ts = (Instant) valueOf(col("timestamp"), i, begin);
            long slide = ts.getEpochSecond() - Math.floorMod(ts.getEpochSecond(), 1800);
            for (long start : new long[] {slide, slide - 1800}) {
                Instant s = Instant.ofEpochSecond(start);
                if (!s.atZone(ZoneOffset.UTC).toLocalDate().equals(day)) {
                    continue;
                }
                Object[] g = groups.computeIfAbsent(s + " " + valueOf(col("event_kpi"), i, begin), k -> new Object[] {0L, BigDecimal.ZERO.setScale(2)});
                g[0] = (Long) g[0] + 1;
                g[1] = ((BigDecimal) g[1]).add((BigDecimal) valueOf(col("value"), i, begin));
            }
        }
        List<String> out = new ArrayList<>();
        groups.forEach((k, g) -> out.add(k + " " + g[0] + " " + ((BigDecimal) g[1]).toPlainString()));
        out.sort(null);
        return out;
    }

    private static Col col(String name) {
        return COLUMNS.stream().filter(c -> c.name().equals(name)).findFirst().orElseThrow();
    }

    /** The record as a JSON object, its fields by the producer's names. */
    private static byte[] json(Map<String, Object> values) {
        StringBuilder out = new StringBuilder("{");
        values.forEach((k, v) -> {
            out.append(out.length() == 1 ? "" : ",").append('"').append(k).append("\":");
            out.append(v instanceof String || v instanceof Instant ? "\"" + v + "\"" : v instanceof BigDecimal d ? d.toPlainString() : String.valueOf(v));
        });
        return out.append('}').toString().getBytes(StandardCharsets.UTF_8);
    }

    /** The record in Confluent's wire format under writer schema 1. */
    private static byte[] wire(Schema schema, Map<String, Object> values) throws Exception {
        GenericRecord r = new GenericData.Record(schema);
        for (Schema.Field f : schema.getFields()) {
            Object v = values.get(f.name());
            if (v instanceof BigDecimal d) {
                v = new Conversions.DecimalConversion().toBytes(d, f.schema(), LogicalTypes.fromSchema(f.schema()));
            } else if (v instanceof Instant t) {
                v = ChronoUnit.MICROS.between(Instant.EPOCH, t);
            }
            r.put(f.name(), v);
        }
        return SchemaRegistry.wire(1, r);
    }
}
