package io.tidemark.pipeline;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;

import org.junit.jupiter.api.Test;

import io.tidemark.pipeline.Pipeline.KpiTable;

/** The pipeline language: the shipped pipelines as they parse, and every refusal with its file:line:column. */
class PipelineParserTest {

    private static final Path PIPELINES = Path.of(System.getProperty("user.dir")).getParent().resolve("pipelines");

    /** An event table every refusal below starts from: lines 1-4. */
    private static final String EVENTS = """
            CREATE TABLE pay (id STRING NOT NULL, user_id STRING NOT NULL, country STRING NOT NULL, status STRING,
              amount DECIMAL(12,2) NOT NULL, score DOUBLE, ts TIMESTAMP NOT NULL,
              CONSTRAINT positive_amount CHECK (amount > 0)
            ) USING kafka OPTIONS (topic 'payments', event_time 'ts', lateness '10 minutes');
            """;

    private static String refusal(String text) {
        try {
            PipelineParser.parse("p.sql", text);
        } catch (PipelineException e) {
            assertThat(e.getMessage()).as("one line").doesNotContain("\n");
            return e.getMessage();
        }
        throw new AssertionError("accepted: " + text);
    }

    /** A refusal of a KPI table written on line 5 of a file that starts with {@link #EVENTS}. */
    private static String kpi(String select) {
        return refusal(EVENTS + select);
    }

    @Test
    void theNetworkPipelineDeclaresTodaysKpi() {
        Pipeline p = PipelineParser.parse(PIPELINES.resolve("network.sql"));
        assertThat(p.events().name()).isEqualTo("events");
        assertThat(p.events().columns()).extracting(Object::toString).containsExactly("subscriber_id STRING NOT NULL",
                "cell_site_id STRING NOT NULL", "event_ts TIMESTAMP NOT NULL", "volume_gb DOUBLE NOT NULL");
        assertThat(p.events().checks()).extracting(Pipeline.Check::reason).containsExactly("BLANK_ID", "NON_FINITE_VOLUME",
                "NEGATIVE_VOLUME", "VOLUME_TOO_LARGE");
        assertThat(p.events().checks().get(2).condition()).isEqualTo("volume_gb >= 0");
        assertThat(p.events().topic()).isEqualTo("network-events");
        assertThat(p.events().eventTime()).isEqualTo("event_ts");
        assertThat(p.events().lateness()).isEqualTo(Duration.ofMinutes(10));
        assertThat(p.driftThreshold()).isEqualTo(0.01);
        assertThat(p.tables()).hasSize(1);
        KpiTable k = p.tables().get(0);
        assertThat(k.name()).isEqualTo("kpi_5m");
        assertThat(k.window()).isEqualTo(new Pipeline.Window(Duration.ofMinutes(5), Duration.ofMinutes(5)));
        assertThat(k.dimensions()).extracting(Pipeline.Column::name).containsExactly("cell_site_id");
        assertThat(k.where()).isNull();
        assertThat(k.measures()).extracting(Measure::written).containsExactly("count(*)", "sum(CAST(volume_gb AS DECIMAL(38,9)))",
                "approx_count_distinct(subscriber_id)");
        assertThat(k.measures()).extracting(m -> m.resultType().sql()).containsExactly("BIGINT", "DECIMAL(38,9)", "BIGINT");
        assertThat(k.at()).hasToString(PIPELINES.resolve("network.sql") + ":23:1");
        // The table it declares is kpi_5m as sql/tables.sql created it (PipelineTablesTest holds the generated DDL equal to it).
        assertThat(k.measures().get(2).sketch()).isEqualTo("subscriber_sketch");
    }

    @Test
    void aKpiTableMayNameASketchsColumnAndNothingElseOfItsStorage() {
        String table = "CREATE STREAMING TABLE t TBLPROPERTIES (%s) AS SELECT window(ts, '1 minute') AS w, count(*) AS n, "
                + "approx_count_distinct(user_id) AS users FROM STREAM pay GROUP BY window(ts, '1 minute');";
        Measure users = PipelineParser.parse("p.sql", EVENTS + String.format(table, "'users.sketch_column' = 'user_sketch'"))
                .tables().get(0).measures().get(1);
        assertThat(users.stored().stream().map(PipelineTables::ddl).toList()).containsExactly("users BIGINT NOT NULL", "user_sketch BINARY NOT NULL");
        assertThat(users.partial().stream().map(Measure.Computed::aliased).toList()).containsExactly("hll_sketch_agg(user_id, 12) AS user_sketch");
        assertThat(refusal(EVENTS + String.format(table, "'n.sketch_column' = 'x'"))).isEqualTo("p.sql:5:1: table property 'n.sketch_column'; "
                + "a KPI table knows '<measure>.sketch_column', for a measure with a sketch (approx_count_distinct, "
                + "percentile_approx), and its Kafka output's 'output.kafka.*' and 'kafka.option.*'; write instead: TBLPROPERTIES ('users.sketch_column' = 'users_sketch'), or no TBLPROPERTIES");
        assertThat(refusal(EVENTS + String.format(table, "'users.sketch_column' = 'n'"))).isEqualTo("p.sql:5:1: the sketch column 'n' of "
                + "'users' is not a name of its own; write instead: a name of letters, digits and underscores that no other column has");
        assertThat(refusal(EVENTS + String.format(table, "'users.sketch_column' = 'is_final'"))).startsWith("p.sql:5:1: the sketch column "
                + "'is_final' of 'users' is not a name of its own");
        assertThat(refusal(EVENTS + "CREATE STREAMING TABLE t PARTITIONED BY (n) AS SELECT window(ts, '1 minute') AS w, count(*) AS n "
                + "FROM STREAM pay GROUP BY window(ts, '1 minute');")).isEqualTo("p.sql:5:1: PARTITIONED BY on KPI table 't'; Tidemark "
                + "partitions every KPI table by event_date; write instead: no PARTITIONED BY");
        assertThat(refusal(EVENTS + "CREATE STREAMING TABLE t USING parquet AS SELECT window(ts, '1 minute') AS w, count(*) AS n "
                + "FROM STREAM pay GROUP BY window(ts, '1 minute');")).isEqualTo("p.sql:5:1: LOCATION, USING or OPTIONS on KPI table 't'; "
                + "every KPI table is a Delta table in the lakehouse; write instead: no LOCATION, USING or OPTIONS clause");
    }

    @Test
    void aKpiTablesKafkaOutputIsDeclaredInItsTableProperties() {
        String table = "CREATE STREAMING TABLE t TBLPROPERTIES (%s) AS SELECT window(ts, '1 minute') AS w, count(*) AS n "
                + "FROM STREAM pay GROUP BY window(ts, '1 minute');";
        assertThat(PipelineParser.parse("p.sql", EVENTS + String.format(table, "'output.kafka.topic' = 'kpis.t'")).tables().get(0)
                .kafkaOutput()).contains(new Pipeline.KafkaOutput("kpis.t",
                Pipeline.KafkaOutput.Mode.FINAL, false, "tidemark-publish-progress", Map.of()));
        Pipeline.KafkaOutput full = PipelineParser.parse("p.sql", EVENTS + String.format(table, "'output.kafka.topic' = 'kpis', "
                + "'output.kafka.mode' = 'updates', 'output.kafka.exactly-once' = 'true', 'output.kafka.progress-topic' = 'kpis-progress', "
                + "'kafka.option.bootstrap.servers' = 'b:9092', 'kafka.option.linger.ms' = '50'")).tables().get(0).output();
        assertThat(full).isEqualTo(new Pipeline.KafkaOutput("kpis", Pipeline.KafkaOutput.Mode.UPDATES, true, "kpis-progress",
                Map.of("bootstrap.servers", "b:9092", "linger.ms", "50")));
        assertThat(PipelineParser.parse("p.sql", EVENTS + String.format(table,
                "'output.kafka.mode' = 'FINAL', 'output.kafka.topic' = 'o'")).tables().get(0).output().mode())
                .isEqualTo(Pipeline.KafkaOutput.Mode.FINAL);
        assertThat(PipelineParser.parse("p.sql", EVENTS + table.replace("TBLPROPERTIES (%s) ", "")).tables().get(0).kafkaOutput()).isEmpty();

        // Avro: registered in the property's registry, or the Avro event table's; JSON has none
        assertThat(PipelineParser.parse("p.sql", EVENTS + String.format(table, "'output.kafka.topic' = 'o', 'output.kafka.format' = 'Avro', "
                + "'output.kafka.schema-registry' = 'http://r:8081'")).tables().get(0).output()).isEqualTo(new Pipeline.KafkaOutput("o",
                Pipeline.KafkaOutput.Mode.FINAL, false, "tidemark-publish-progress", Map.of(), Pipeline.KafkaOutput.Format.AVRO, "http://r:8081"));
        String avroEvents = EVENTS.replace("lateness '10 minutes'", "lateness '10 minutes', format 'avro', schema_registry '/srv/schemas'");
        assertThat(PipelineParser.parse("p.sql", avroEvents + String.format(table, "'output.kafka.topic' = 'o', 'output.kafka.format' = 'avro'"))
                .tables().get(0).output().schemaRegistry()).isEqualTo("/srv/schemas");
        assertThat(PipelineParser.parse("p.sql", avroEvents + String.format(table, "'output.kafka.topic' = 'o'")).tables().get(0).output()
                .format()).as("the output's format is its own").isEqualTo(Pipeline.KafkaOutput.Format.JSON);
        assertThat(refusal(EVENTS + String.format(table, "'output.kafka.topic' = 'o', 'output.kafka.format' = 'avro'"))).isEqualTo("p.sql:5:1: "
                + "Avro output of KPI table 't' without a schema registry to register its schemas in; write instead: "
                + "'output.kafka.schema-registry' = 'http://registry:8081' (or the absolute path of a directory of <id>.avsc files)");
        assertThat(refusal(EVENTS + String.format(table, "'output.kafka.topic' = 'o', 'output.kafka.format' = 'avro', "
                + "'output.kafka.schema-registry' = 'schemas'"))).isEqualTo("p.sql:5:1: 'output.kafka.schema-registry' = 'schemas' is neither "
                + "a URL nor an absolute path (the stream records this file in the lakehouse, where a relative path would mean something "
                + "else); write instead: 'http://host:8081' or '/absolute/path/to/schemas'");
        assertThat(refusal(EVENTS + String.format(table, "'output.kafka.topic' = 'o', 'output.kafka.schema-registry' = 'http://r:8081'")))
                .isEqualTo("p.sql:5:1: 'output.kafka.schema-registry' on KPI table 't', whose output is JSON; write instead: "
                        + "'output.kafka.format' = 'avro', or no 'output.kafka.schema-registry'");
        assertThat(refusal(EVENTS + String.format(table, "'output.kafka.topic' = 'o', 'output.kafka.format' = 'protobuf'"))).isEqualTo(
                "p.sql:5:1: 'output.kafka.format' = 'protobuf'; write instead: 'json' or 'avro' (Confluent's wire format, with a schema "
                        + "registry)");

        assertThat(refusal(EVENTS + String.format(table, "'output.kafka.mode' = 'updates'"))).isEqualTo("p.sql:5:1: Kafka output settings "
                + "on KPI table 't' without a topic; write instead: TBLPROPERTIES ('output.kafka.topic' = 't', ...)");
        assertThat(refusal(EVENTS + String.format(table, "'output.kafka.topic' = 'o', 'output.kafka.mode' = 'all'"))).isEqualTo(
                "p.sql:5:1: 'output.kafka.mode' = 'all'; write instead: 'final' (a window once it is final, then each correction) or "
                + "'updates' (every change)");
        assertThat(refusal(EVENTS + String.format(table, "'output.kafka.topic' = 'o', 'output.kafka.exactly-once' = 'yes'"))).isEqualTo(
                "p.sql:5:1: 'output.kafka.exactly-once' = 'yes'; write instead: 'true' or 'false'");
        assertThat(refusal(EVENTS + String.format(table, "'output.kafka.topic' = 'o', 'output.kafka.partitions' = '3'"))).startsWith(
                "p.sql:5:1: table property 'output.kafka.partitions' on KPI table 't'; Kafka output knows 'output.kafka.topic', "
                + "'output.kafka.mode', 'output.kafka.exactly-once', 'output.kafka.progress-topic', 'output.kafka.format', "
                + "'output.kafka.schema-registry'; write instead: output.kafka.topic: ");
        assertThat(refusal(EVENTS + String.format(table, "'output.kafka.topic' = 'a b'"))).isEqualTo("p.sql:5:1: 'a b' is not a Kafka "
                + "topic name; write instead: letters, digits, '.', '_' and '-', at most 249 of them");
        assertThat(refusal(EVENTS + String.format(table, "'output.kafka.topic' = 'p', 'output.kafka.progress-topic' = 'p'"))).isEqualTo(
                "p.sql:5:1: the output topic of 't' is also its progress topic; consumers of the output would read the publisher's "
                + "bookkeeping; write instead: another 'output.kafka.progress-topic'");
        assertThat(refusal(EVENTS + String.format(table, "'output.kafka.topic' = 'o', 'kafka.option.value.serializer' = 'x'"))).isEqualTo(
                "p.sql:5:1: 'kafka.option.value.serializer'; Tidemark sets the producer's serializers, idempotence and acks itself "
                + "(every record written to all in-sync replicas, once); write instead: no 'kafka.option.value.serializer'");
    }

    @Test
    void thePaymentsPipelineHasATumblingAndAHoppingTable() {
        Pipeline p = PipelineParser.parse(PIPELINES.resolve("payments.sql"));
        assertThat(p.events().name()).isEqualTo("payments");
        assertThat(p.events().checks()).extracting(Pipeline.Check::reason).containsExactly("POSITIVE_AMOUNT", "KNOWN_STATUS", "COUNTRY_CODE");
        assertThat(p.driftThreshold()).isEqualTo(0.005);
        KpiTable m = p.table("merchant_1m").orElseThrow();
        assertThat(m.window().tumbling()).isTrue();
        assertThat(m.dimensions()).extracting(Pipeline.Column::name).containsExactly("merchant_id", "country");
        assertThat(m.measures()).extracting(Measure::name).containsExactly("txns", "approved_amount", "declined", "users", "p95_amount",
                "max_amount");
        Measure approved = m.measures().get(1);
        assertThat(approved.function()).isEqualTo(new Sum());
        assertThat(approved.filter()).isEqualTo("status = 'approved'");
        assertThat(approved.resultType().sql()).isEqualTo("DECIMAL(22,2)");
        // the FILTER folded into the argument: Spark's sorted aggregation drops FILTER clauses (Measure.partial)
        assertThat(approved.partial().stream().map(Measure.Computed::aliased).toList()).containsExactly("sum(CASE WHEN status = 'approved' THEN amount END) AS approved_amount");
        assertThat(approved.merge().stream().map(Measure.Computed::aliased).toList()).containsExactly("coalesce(s.approved_amount + b.approved_amount, s.approved_amount, b.approved_amount)"
                + " AS approved_amount");
        assertThat(m.measures().get(2).function()).isEqualTo(new Count(true));
        Measure p95 = m.measures().get(4);
        assertThat(p95.function()).isEqualTo(new Percentile(0.95));
        assertThat(p95.partial().stream().map(Measure.Computed::aliased).toList()).containsExactly("kll_sketch_agg_double(CAST(amount AS DOUBLE)) AS p95_amount_sketch");
        assertThat(p95.exact()).isEqualTo("try_element_at(sort_array(collect_list(amount)), CAST(greatest(ceil(0.95 * count(amount)), 1) AS INT))");
        assertThat(m.columns().stream().map(PipelineTables::ddl).toList()).containsSubsequence("window_start TIMESTAMP NOT NULL", "merchant_id STRING NOT NULL", "country STRING NOT NULL",
                "txns BIGINT NOT NULL", "approved_amount DECIMAL(22,2)", "users BIGINT NOT NULL", "users_sketch BINARY NOT NULL",
                "p95_amount DECIMAL(12,2) NOT NULL", "p95_amount_sketch BINARY NOT NULL", "max_amount DECIMAL(12,2) NOT NULL",
                "event_date DATE NOT NULL");

        KpiTable c = p.table("country_1h").orElseThrow();
        assertThat(c.window()).isEqualTo(new Pipeline.Window(Duration.ofHours(1), Duration.ofMinutes(15)));
        assertThat(c.window().windowsPerRecord()).isEqualTo(4);
        assertThat(c.where()).isEqualTo("status <> 'refunded'");
        Measure avg = c.measures().get(1);
        assertThat(avg.stored().stream().map(PipelineTables::ddl).toList()).containsExactly("avg_amount DECIMAL(16,6) NOT NULL", "avg_amount_sum DECIMAL(22,2) NOT NULL",
                "avg_amount_count BIGINT NOT NULL");
        assertThat(avg.value()).isEqualTo("CAST(avg_amount_sum / avg_amount_count AS DECIMAL(16,6))");
    }

    @Test
    void positionsCountFromTheFileNotTheStatement() {
        String text = "-- a comment\n" + EVENTS + "\n\n  CREATE STREAMING TABLE t AS SELECT window(ts, '1 minute') AS w, collect_list(id) AS ids\n"
                + "FROM STREAM pay GROUP BY window(ts, '1 minute');";
        assertThat(refusal(text)).startsWith("p.sql:8:67: collect_list(id) cannot be merged across micro-batches; write instead: ");
    }

    @Test
    void nonMergeableAggregatesAreRefusedWithWhatToWriteInstead() {
        assertThat(kpi("CREATE STREAMING TABLE t AS SELECT window(ts, '1 minute') AS w, collect_list(id) AS ids FROM STREAM pay "
                + "GROUP BY window(ts, '1 minute');")).isEqualTo("p.sql:5:65: collect_list(id) cannot be merged across micro-batches; "
                + "write instead: one of " + PipelineParser.MEASURES_WRITTEN);
        assertThat(kpi("CREATE STREAMING TABLE t AS SELECT window(ts, '1 minute') AS w, count(DISTINCT user_id) AS u FROM STREAM pay "
                + "GROUP BY window(ts, '1 minute');")).isEqualTo("p.sql:5:65: count(DISTINCT user_id): a DISTINCT aggregate cannot be merged "
                + "across micro-batches; write instead: approx_count_distinct(col) (an HLL sketch while streaming, the exact distinct count "
                + "after reconcile)");
        assertThat(kpi("CREATE STREAMING TABLE t AS SELECT window(ts, '1 minute') AS w, median(amount) AS m FROM STREAM pay "
                + "GROUP BY window(ts, '1 minute');")).isEqualTo("p.sql:5:65: median(amount) cannot be merged across micro-batches; "
                + "write instead: percentile_approx(col, 0.5)");
        assertThat(kpi("CREATE STREAMING TABLE t AS SELECT window(ts, '1 minute') AS w, stddev_pop(amount) AS m FROM STREAM pay "
                + "GROUP BY window(ts, '1 minute');")).isEqualTo("p.sql:5:65: stddev_pop(amount) is not an aggregate Tidemark can keep "
                + "mergeable; write instead: one of " + PipelineParser.MEASURES_WRITTEN);
    }

    @Test
    void udfsJoinsAndSessionWindowsAreRefused() {
        assertThat(kpi("CREATE STREAMING TABLE t AS SELECT window(ts, '1 minute') AS w, my_udf(id) AS n FROM STREAM pay "
                + "GROUP BY window(ts, '1 minute');")).isEqualTo("p.sql:5:65: unknown function 'my_udf' (a pipeline uses Spark's built-in "
                + "functions, no UDFs); write instead: one of " + PipelineParser.MEASURES_WRITTEN);
        assertThat(kpi("CREATE STREAMING TABLE t AS SELECT window(ts, '1 minute') AS w, count(*) AS n FROM STREAM pay p JOIN users u "
                + "ON p.user_id = u.id GROUP BY window(ts, '1 minute');")).startsWith("p.sql:5:");
        assertThat(kpi("CREATE STREAMING TABLE t AS SELECT window(ts, '1 minute') AS w, count(*) AS n FROM STREAM pay p JOIN users u "
                + "ON p.user_id = u.id GROUP BY window(ts, '1 minute');")).contains("a join; a KPI table reads one event stream");
        assertThat(kpi("CREATE STREAMING TABLE t AS SELECT session_window(ts, '5 minutes') AS w, count(*) AS n FROM STREAM pay "
                + "GROUP BY session_window(ts, '5 minutes');")).isEqualTo("p.sql:5:113: a session window; its end depends on records still "
                + "to come, so it never closes at a time the watermark can tell; write instead: window(ts, '5 minutes') (tumbling) or "
                + "window(ts, '1 hour', '15 minutes') (hopping)");
    }

    @Test
    void windowsMustDivideADay() {
        assertThat(kpi("CREATE STREAMING TABLE t AS SELECT window(ts, '7 minutes') AS w, count(*) AS n FROM STREAM pay "
                + "GROUP BY window(ts, '7 minutes');")).isEqualTo("p.sql:5:116: a window of 7 minutes does not divide a day, so windows would "
                + "not start at midnight and a day's KPIs could not be recomputed on their own; write instead: a size that divides 24 hours: "
                + "'1 minute', '5 minutes', '15 minutes', '1 hour', '6 hours', '1 day'...");
        assertThat(kpi("CREATE STREAMING TABLE t AS SELECT window(ts, '1 hour', '25 minutes') AS w, count(*) AS n FROM STREAM pay "
                + "GROUP BY window(ts, '1 hour', '25 minutes');")).startsWith("p.sql:5:").contains("a slide of 25 minutes does not divide the "
                + "window of 1 hour");
    }

    @Test
    void columnsAndTypesAreCheckedAgainstTheSchema() {
        assertThat(kpi("CREATE STREAMING TABLE t AS SELECT window(ts, '1 minute') AS w, merchant, count(*) AS n FROM STREAM pay "
                + "GROUP BY window(ts, '1 minute'), merchant;")).isEqualTo("p.sql:5:138: GROUP BY merchant: no such column in 'pay'; "
                + "write instead: one of id, user_id, country, status, amount, score, ts");
        assertThat(kpi("CREATE STREAMING TABLE t AS SELECT window(ts, '1 minute') AS w, sum(status) AS s FROM STREAM pay "
                + "GROUP BY window(ts, '1 minute');")).isEqualTo("p.sql:5:69: sum over status, a STRING column; write instead: sum over a "
                + "numeric column");
        assertThat(kpi("CREATE STREAMING TABLE t AS SELECT window(ts, '1 minute') AS w, sum(score) AS s FROM STREAM pay "
                + "GROUP BY window(ts, '1 minute');")).isEqualTo("p.sql:5:69: sum over score, a DOUBLE column: a floating-point sum depends on "
                + "the order of its terms, so the stream's and reconcile's answers could differ; write instead: sum(CAST(score AS DECIMAL(38, 9)))"
                + " (declare the scale the values need)");
        Measure cast = PipelineParser.parse("p.sql", EVENTS + "CREATE STREAMING TABLE t AS SELECT window(ts, '1 minute') AS w, "
                + "count(*) AS n, sum(CAST(score AS DECIMAL(20, 4))) AS s FROM STREAM pay GROUP BY window(ts, '1 minute');").tables().get(0)
                .measures().get(1);
        assertThat(cast.argument()).isEqualTo("CAST(score AS DECIMAL(20,4))");
        assertThat(cast.resultType().sql()).isEqualTo("DECIMAL(30,4)");
    }

    /** A KPI table on line 5 that views on line 7 can build on. */
    private static final String TABLE = EVENTS + "CREATE STREAMING TABLE t AS SELECT window(ts, '1 minute') AS w, country, count(*) AS n "
            + "FROM STREAM pay GROUP BY window(ts, '1 minute'), country;\n\n";

    @Test
    void viewsOverTidemarksTablesAreTheFilesOwn() {
        Pipeline p = PipelineParser.parse("p.sql", TABLE + "CREATE VIEW late_by_country AS\nSELECT country, count(*) AS late FROM "
                + "tidemark.late_events GROUP BY country;\nCREATE VIEW busy AS SELECT * FROM tidemark.t WHERE n > 10;");
        assertThat(p.views()).extracting(Pipeline.View::name, Pipeline.View::query, v -> v.at().toString()).containsExactly(
                org.assertj.core.api.Assertions.tuple("late_by_country", "SELECT country, count(*) AS late FROM tidemark.late_events GROUP BY country",
                        "p.sql:7:1"),
                org.assertj.core.api.Assertions.tuple("busy", "SELECT * FROM tidemark.t WHERE n > 10", "p.sql:9:1"));
        assertThat(p.views().get(1).statement()).isEqualTo("CREATE OR REPLACE TEMPORARY VIEW busy AS\nSELECT * FROM tidemark.t WHERE n > 10");
        assertThat(refusal(TABLE + "CREATE VIEW v AS SELECT * FROM late_events;")).isEqualTo("p.sql:7:32: 'late_events' in view 'v': a view "
                + "reads Tidemark's tables, by their registered names; write instead: one of tidemark.dead_letter, tidemark.expired_days, "
                + "tidemark.late_events, tidemark.raw_events, tidemark.reconcile_report, tidemark.stream_gaps, tidemark.stream_progress, tidemark.t");
        assertThat(refusal(TABLE + "CREATE VIEW v AS SELECT * FROM other.thing;")).startsWith("p.sql:7:32: 'other.thing' in view 'v'");
        assertThat(refusal(TABLE + "CREATE VIEW t_final AS SELECT 1 AS one;")).isEqualTo("p.sql:7:1: view 't_final' is named like one of "
                + "Tidemark's tables or views; write instead: another name");
        assertThat(refusal(TABLE + "CREATE VIEW drift_by_day AS SELECT 1 AS one;")).startsWith("p.sql:7:1: view 'drift_by_day' is named like");
        assertThat(refusal(TABLE + "CREATE VIEW t AS SELECT 1 AS one;")).startsWith("p.sql:7:1: view 't' is named like");
        assertThat(refusal(TABLE + "CREATE VIEW v (a) AS SELECT 1 AS one;")).isEqualTo("p.sql:7:1: a column list on view 'v'; its columns "
                + "are its query's; write instead: CREATE VIEW v AS SELECT ...");
        assertThat(refusal(TABLE + "CREATE VIEW v AS SELECT 1 AS one;\nCREATE VIEW v AS SELECT 2 AS two;"))
                .isEqualTo("p.sql:8:1: a second table or view named 'v'; write instead: a name of its own");
    }

    @Test
    void aTableMustCountItsRecords() {
        // the day balance that finds the days reconcile must recompute counts each table's records
        assertThat(kpi("CREATE STREAMING TABLE t AS SELECT window(ts, '1 minute') AS w, max(amount) AS m, "
                + "count(*) FILTER (WHERE status = 'ok') AS ok FROM STREAM pay GROUP BY window(ts, '1 minute');"))
                .isEqualTo("p.sql:5:1: KPI table 't' has no count(*) without FILTER: Tidemark balances each day of the raw log against it to "
                        + "find the days reconcile must recompute; write instead: count(*) AS records among its measures");
    }

    @Test
    void theEventTableIsCheckedBeforeAnyKpi() {
        assertThat(refusal("CREATE TABLE e (id STRING, ts STRING NOT NULL) USING kafka OPTIONS (topic 't', event_time 'ts', lateness '1m');"
                + "\nCREATE STREAMING TABLE t AS SELECT window(ts, '1 minute') AS w, count(*) AS n FROM STREAM e GROUP BY window(ts, '1 minute');"))
                .isEqualTo("p.sql:1:91: the event time 'ts' is ts STRING NOT NULL; it must be TIMESTAMP NOT NULL; write instead: ts TIMESTAMP NOT NULL");
        assertThat(refusal("CREATE TABLE e (id STRING, ts TIMESTAMP NOT NULL) USING kafka OPTIONS (topic 't', event_time 'ts', lateness '1m', "
                + "partitions '3');")).startsWith("p.sql:1:").contains("unknown option 'partitions' of the event table; write instead: one of "
                + "topic, format, schema_registry, event_time, lateness, drift_threshold");
        assertThat(refusal("CREATE TABLE e (id STRING, ts TIMESTAMP NOT NULL) USING parquet;")).isEqualTo("p.sql:1:1: the event table 'e' is "
                + "USING parquet; a pipeline's events come from a Kafka topic; write instead: CREATE TABLE e (...) USING kafka OPTIONS (topic "
                + "'...', event_time '...', lateness '...')");
        assertThat(refusal("CREATE TABLE e (id STRING, ts TIMESTAMP NOT NULL) USING kafka OPTIONS (topic 't', event_time 'ts', lateness '1m', "
                + "format 'protobuf');")).isEqualTo("p.sql:1:122: format 'protobuf' is not one Tidemark reads; write instead: format 'json' "
                + "(JSON objects) or format 'avro' (Confluent's wire format, with schema_registry '...')");
        // Avro needs its registry; JSON has none; a relative directory would mean another place once the lakehouse records the file.
        assertThat(refusal("CREATE TABLE e (id STRING, ts TIMESTAMP NOT NULL) USING kafka OPTIONS (topic 't', event_time 'ts', lateness '1m', "
                + "format 'avro');")).isEqualTo("p.sql:1:1: the event table has no option 'schema_registry' (for format 'avro': a "
                + "Confluent-compatible schema registry's URL (http://host:8081), or the absolute path of a directory of <id>.avsc files); "
                + "write instead: OPTIONS (..., schema_registry 'http://localhost:8081')");
        assertThat(refusal("CREATE TABLE e (id STRING, ts TIMESTAMP NOT NULL) USING kafka OPTIONS (topic 't', event_time 'ts', lateness '1m', "
                + "schema_registry 'http://r:8081');")).isEqualTo("p.sql:1:131: schema_registry is for Avro events, and this table's format "
                + "is json; write instead: format 'avro' with it, or no schema_registry");
        assertThat(refusal("CREATE TABLE e (id STRING, ts TIMESTAMP NOT NULL) USING kafka OPTIONS (topic 't', event_time 'ts', lateness '1m', "
                + "format 'avro', schema_registry 'schemas');")).isEqualTo("p.sql:1:146: schema_registry 'schemas' is neither a URL nor an "
                + "absolute path (the stream records this file in the lakehouse, where a relative path would mean something else); write "
                + "instead: schema_registry 'http://host:8081' or schema_registry '/absolute/path/to/schemas'");
        assertThat(refusal("CREATE TABLE e (id STRING, ts TIMESTAMP NOT NULL, CONSTRAINT c CHECK (size > 0)) USING kafka OPTIONS (topic 't', "
                + "event_time 'ts', lateness '1m');")).isEqualTo("p.sql:1:71: a CHECK names 'size', which is not an event column; write "
                + "instead: one of id, ts");
    }

    @Test
    void otherStatementsAndSyntaxErrorsAreRefused() {
        assertThat(refusal(EVENTS + "INSERT INTO x SELECT 1;")).startsWith("p.sql:5:1: a ").contains("statement; a pipeline file holds one");
        assertThat(refusal(EVENTS + "CREATE STREAMING TABLE t AS SELEC 1;")).startsWith("p.sql:5:29: Spark SQL cannot parse this: Syntax "
                + "error at or near 'SELEC'");
        assertThat(kpi("CREATE STREAMING TABLE t AS SELECT window(ts, '1 minute') AS w, count(*) FROM STREAM pay "
                + "GROUP BY window(ts, '1 minute');")).isEqualTo("p.sql:5:65: the measure count(*) has no name; write instead: count(*) AS a_name");
        assertThat(kpi("CREATE STREAMING TABLE t AS SELECT window(ts, '1 minute') AS w, country, count(*) AS n FROM STREAM pay "
                + "GROUP BY window(ts, '1 minute');")).isEqualTo("p.sql:5:65: 'country' is selected but not grouped by, and is not an "
                + "aggregate; write instead: add it to GROUP BY, or aggregate it: one of " + PipelineParser.MEASURES_WRITTEN);
        assertThat(kpi("CREATE STREAMING TABLE t AS SELECT window(ts, '1 minute') AS w, count(*) AS n FROM pay "
                + "GROUP BY window(ts, '1 minute');")).contains("reads a table once; a KPI table reads the events as a stream; write instead: "
                + "FROM STREAM pay");
        assertThat(kpi("CREATE STREAMING TABLE raw_events AS SELECT window(ts, '1 minute') AS w, count(*) AS n FROM STREAM pay "
                + "GROUP BY window(ts, '1 minute');")).isEqualTo("p.sql:5:1: 'raw_events' is one of Tidemark's own tables; write instead: "
                + "another name");
    }

    /** Every other row of docs/pipelines.md's table of refusals: the statement, then what the one line says. */
    @org.junit.jupiter.params.ParameterizedTest(name = "{0}")
    @org.junit.jupiter.params.provider.CsvSource(delimiter = '|', quoteCharacter = '"', textBlock = """
            no event table          | CREATE STREAMING TABLE t AS SELECT window(ts, '1 minute') AS w, count(*) AS n FROM STREAM pay GROUP BY window(ts, '1 minute'); | p.sql:1:1: a KPI table before the event table it reads
            a second event table    | #; CREATE TABLE b (ts TIMESTAMP NOT NULL) USING kafka OPTIONS (topic 't', event_time 'ts', lateness '1m'); | a second event table; a pipeline reads one event stream
            no KPI table            | # | p.sql:1:1: no KPI table over 'pay'
            no topic                | CREATE TABLE e (ts TIMESTAMP NOT NULL) USING kafka OPTIONS (event_time 'ts', lateness '1m'); | the event table has no option 'topic'
            no lateness             | CREATE TABLE e (ts TIMESTAMP NOT NULL) USING kafka OPTIONS (topic 't', event_time 'ts'); | the event table has no option 'lateness'
            bad lateness            | CREATE TABLE e (ts TIMESTAMP NOT NULL) USING kafka OPTIONS (topic 't', event_time 'ts', lateness 'soon'); | lateness 'soon' is not a duration
            no such event time      | CREATE TABLE e (ts TIMESTAMP NOT NULL) USING kafka OPTIONS (topic 't', event_time 'at', lateness '1m'); | event_time 'at' is not a column of 'e'
            drift threshold         | CREATE TABLE e (ts TIMESTAMP NOT NULL) USING kafka OPTIONS (topic 't', event_time 'ts', lateness '1m', drift_threshold '5'); | drift_threshold '5' is not a fraction between 0 and 1
            array column            | CREATE TABLE e (tags ARRAY<STRING>, ts TIMESTAMP NOT NULL) USING kafka OPTIONS (topic 't', event_time 'ts', lateness '1m'); | p.sql:1:17: column 'tags' has type ARRAY<STRING>, which an event cannot carry
            stored column name      | CREATE TABLE e (payload STRING, ts TIMESTAMP NOT NULL) USING kafka OPTIONS (topic 't', event_time 'ts', lateness '1m'); | p.sql:1:17: an event column called 'payload': 'payload' is a column raw_events or late_events stores beside the event's; write instead: another name for the column; a field the records carry under this name is read into it with the event table's option 'field.<column>' = 'payload' (OPTIONS (..., 'field.event_payload' = 'payload'))
            working column prefix   | CREATE TABLE e (__tm_kind STRING, ts TIMESTAMP NOT NULL) USING kafka OPTIONS (topic 't', event_time 'ts', lateness '1m'); | p.sql:1:17: an event column called '__tm_kind': names beginning with __tm_ are Tidemark's working columns
            field of no column      | CREATE TABLE e (a STRING, ts TIMESTAMP NOT NULL) USING kafka OPTIONS (topic 't', event_time 'ts', lateness '1m', 'field.b' = 'payload'); | option 'field.b' names no column of 'e'; write instead: 'field.<column>' = '<field>' for one of a, ts
            two columns one field   | CREATE TABLE e (a STRING, b STRING, ts TIMESTAMP NOT NULL) USING kafka OPTIONS (topic 't', event_time 'ts', lateness '1m', 'field.b' = 'a'); | p.sql:1:27: columns 'a' and 'b' both read the field 'a'
            empty field             | CREATE TABLE e (a STRING, ts TIMESTAMP NOT NULL) USING kafka OPTIONS (topic 't', event_time 'ts', lateness '1m', 'field.a' = ''); | option 'field.a' does not name a field
            dimension named source  | CREATE TABLE e (source STRING, ts TIMESTAMP NOT NULL) USING kafka OPTIONS (topic 't', event_time 'ts', lateness '1m'); CREATE STREAMING TABLE t AS SELECT window(ts, '1 minute') AS w, source, count(*) AS n FROM STREAM e GROUP BY window(ts, '1 minute'), source; | GROUP BY source: a KPI table keeps its dimensions under the event column's name, and 'source' is a column every KPI table stores
            roll-up view column     | #CREATE STREAMING TABLE t AS SELECT window(ts, '1 minute') AS w, count(*) AS windows FROM STREAM pay GROUP BY window(ts, '1 minute'); | 'windows' in KPI table 't': its hourly or daily view has a column of that name
            output message field    | #CREATE STREAMING TABLE t TBLPROPERTIES ('output.kafka.topic' = 'o') AS SELECT window(ts, '1 minute') AS w, count(*) AS version FROM STREAM pay GROUP BY window(ts, '1 minute'); | 'version' in KPI table 't': its Kafka output's messages have a field of that name
            measure named source    | #CREATE STREAMING TABLE t AS SELECT window(ts, '1 minute') AS w, count(*) AS source FROM STREAM pay GROUP BY window(ts, '1 minute'); | would store a column 'source' that Tidemark keeps for itself
            duplicate column        | CREATE TABLE e (a STRING, A INT, ts TIMESTAMP NOT NULL) USING kafka OPTIONS (topic 't', event_time 'ts', lateness '1m'); | p.sql:1:27: a second column named 'A'
            unnamed check           | CREATE TABLE e (a INT, ts TIMESTAMP NOT NULL, CHECK (a > 0)) USING kafka OPTIONS (topic 't', event_time 'ts', lateness '1m'); | a CHECK without a name
            aggregate in check      | CREATE TABLE e (a INT, ts TIMESTAMP NOT NULL, CONSTRAINT c CHECK (sum(a) > 0)) USING kafka OPTIONS (topic 't', event_time 'ts', lateness '1m'); | a CHECK calls sum; a condition is about one record
            udf in where            | #CREATE STREAMING TABLE t AS SELECT window(ts, '1 minute') AS w, count(*) AS n FROM STREAM pay WHERE is_fraud(id) GROUP BY window(ts, '1 minute'); | WHERE calls unknown function 'is_fraud'
            unknown column in filter| #CREATE STREAMING TABLE t AS SELECT window(ts, '1 minute') AS w, count(*) FILTER (WHERE kind = 'x') AS n FROM STREAM pay GROUP BY window(ts, '1 minute'); | FILTER names 'kind', which is not an event column
            duplicate kpi table     | #CREATE STREAMING TABLE t AS SELECT window(ts, '1 minute') AS w, count(*) AS n FROM STREAM pay GROUP BY window(ts, '1 minute'); CREATE STREAMING TABLE t AS SELECT window(ts, '1 minute') AS w, count(*) AS n FROM STREAM pay GROUP BY window(ts, '1 minute'); | a second KPI table named 't'
            database in name        | #CREATE STREAMING TABLE db.t AS SELECT window(ts, '1 minute') AS w, count(*) AS n FROM STREAM pay GROUP BY window(ts, '1 minute'); | KPI table name 'db.t'
            other stream            | #CREATE STREAMING TABLE t AS SELECT window(ts, '1 minute') AS w, count(*) AS n FROM STREAM clicks GROUP BY window(ts, '1 minute'); | no event table 'clicks'; this pipeline's events are 'pay'
            watermark clause        | #CREATE STREAMING TABLE t AS SELECT window(ts, '1 minute') AS w, count(*) AS n FROM STREAM pay WATERMARK ts DELAY OF INTERVAL 5 MINUTES GROUP BY window(ts, '1 minute'); | a WATERMARK clause; the lateness is declared once
            having                  | #CREATE STREAMING TABLE t AS SELECT window(ts, '1 minute') AS w, count(*) AS n FROM STREAM pay GROUP BY window(ts, '1 minute') HAVING count(*) > 1; | a KPI table aggregates the events by window
            union                   | #CREATE STREAMING TABLE t AS SELECT window(ts, '1 minute') AS w, count(*) AS n FROM STREAM pay GROUP BY window(ts, '1 minute') UNION ALL SELECT window(ts, '1 minute') AS w, count(*) AS n FROM STREAM pay GROUP BY window(ts, '1 minute'); | a KPI table aggregates the events by window
            window function         | #CREATE STREAMING TABLE t AS SELECT window(ts, '1 minute') AS w, rank() OVER (ORDER BY ts) AS r, count(*) AS n FROM STREAM pay GROUP BY window(ts, '1 minute'); | is neither the window, a grouped column nor a measure
            no window               | #CREATE STREAMING TABLE t AS SELECT country, count(*) AS n FROM STREAM pay GROUP BY country; | no window in GROUP BY
            two windows             | #CREATE STREAMING TABLE t AS SELECT window(ts, '1 minute') AS w, count(*) AS n FROM STREAM pay GROUP BY window(ts, '1 minute'), window(ts, '5 minutes'); | a second window in GROUP BY
            window not selected     | #CREATE STREAMING TABLE t AS SELECT count(*) AS n FROM STREAM pay GROUP BY window(ts, '1 minute'); | the window is grouped by but not selected
            window over other column| #CREATE STREAMING TABLE t AS SELECT window(id, '1 minute') AS w, count(*) AS n FROM STREAM pay GROUP BY window(id, '1 minute'); | windows are over the event time 'ts', not id
            window start offset     | #CREATE STREAMING TABLE t AS SELECT window(ts, '1 hour', '1 hour', '5 minutes') AS w, count(*) AS n FROM STREAM pay GROUP BY window(ts, '1 hour', '1 hour', '5 minutes'); | a start offset would move windows off midnight
            group by position       | #CREATE STREAMING TABLE t AS SELECT window(ts, '1 minute') AS w, country, count(*) AS n FROM STREAM pay GROUP BY window(ts, '1 minute'), 2; | GROUP BY 2; a KPI table groups by its window and event columns
            group by double         | #CREATE STREAMING TABLE t AS SELECT window(ts, '1 minute') AS w, score, count(*) AS n FROM STREAM pay GROUP BY window(ts, '1 minute'), score; | GROUP BY score, a DOUBLE column
            dimension not selected  | #CREATE STREAMING TABLE t AS SELECT window(ts, '1 minute') AS w, count(*) AS n FROM STREAM pay GROUP BY window(ts, '1 minute'), country; | 'country' is grouped by but not selected
            dimension renamed       | #CREATE STREAMING TABLE t AS SELECT window(ts, '1 minute') AS w, country AS c, count(*) AS n FROM STREAM pay GROUP BY window(ts, '1 minute'), country; | a dimension renamed (country AS c)
            no measure              | #CREATE STREAMING TABLE t AS SELECT window(ts, '1 minute') AS w, country FROM STREAM pay GROUP BY window(ts, '1 minute'), country; | no measure
            expression argument     | #CREATE STREAMING TABLE t AS SELECT window(ts, '1 minute') AS w, sum(amount * 2) AS s FROM STREAM pay GROUP BY window(ts, '1 minute'); | the argument amount * 2; a measure reads one event column
            max over boolean        | CREATE TABLE e (ok BOOLEAN, ts TIMESTAMP NOT NULL) USING kafka OPTIONS (topic 't', event_time 'ts', lateness '1m'); CREATE STREAMING TABLE t AS SELECT window(ts, '1 minute') AS w, max(ok) AS m FROM STREAM e GROUP BY window(ts, '1 minute'); | max over ok, a BOOLEAN column
            percentile range        | #CREATE STREAMING TABLE t AS SELECT window(ts, '1 minute') AS w, percentile_approx(amount, 95) AS p FROM STREAM pay GROUP BY window(ts, '1 minute'); | the percentile 95 is not one number between 0 and 1
            percentile accuracy     | #CREATE STREAMING TABLE t AS SELECT window(ts, '1 minute') AS w, percentile_approx(amount, 0.5, 100) AS p FROM STREAM pay GROUP BY window(ts, '1 minute'); | (the sketch's accuracy is Tidemark's)
            hll precision           | #CREATE STREAMING TABLE t AS SELECT window(ts, '1 minute') AS w, approx_count_distinct(id, 0.01) AS d FROM STREAM pay GROUP BY window(ts, '1 minute'); | (the sketch's precision is Tidemark's: lgK 12)
            percentile of string    | #CREATE STREAMING TABLE t AS SELECT window(ts, '1 minute') AS w, percentile_approx(id, 0.5) AS p FROM STREAM pay GROUP BY window(ts, '1 minute'); | percentile_approx over id, a STRING column
            stored column clash     | #CREATE STREAMING TABLE t AS SELECT window(ts, '1 minute') AS w, avg(amount) AS a, count(*) AS a_count FROM STREAM pay GROUP BY window(ts, '1 minute'); | would store a column 'a_count' that the table has already
            """)
    void everyRefusalSaysWhereWhatAndWhatToWriteInstead(String name, String statements, String says) {
        String text = statements.startsWith("#") ? EVENTS + statements.substring(1) : statements;
        assertThat(refusal(text)).contains(says).contains("; write instead: ");
    }
}
