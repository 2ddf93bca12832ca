package io.tidemark.pipeline;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;

import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.junit.jupiter.api.Test;


/**
 * The tables whose columns the pipeline decides: for the network pipeline they are the tables
 * sql/tables.sql declared before they were generated (kept verbatim below), column for column
 * (name, type, nullability, order; and the comments of raw_events and late_events), partitioned and
 * with the properties as before; for payments, from its own columns and dimensions.
 */
class PipelineTablesTest {

    /** raw_events, kpi_5m and late_events as sql/tables.sql declared them. */
    private static final String DECLARED = """
            CREATE TABLE IF NOT EXISTS tidemark.raw_events (
              subscriber_id    STRING    NOT NULL,
              cell_site_id     STRING    NOT NULL,
              event_ts         TIMESTAMP NOT NULL COMMENT 'event time',
              volume_gb        DOUBLE    NOT NULL,
              payload          STRING    NOT NULL COMMENT 'the message as received, extra fields included',
              kafka_topic      STRING    NOT NULL,
              kafka_partition  INT       NOT NULL,
              kafka_offset     BIGINT    NOT NULL,
              ingest_ts        TIMESTAMP NOT NULL COMMENT 'Kafka record timestamp: when the record entered the log',
              is_late          BOOLEAN   NOT NULL COMMENT 'true: its window had closed when it arrived; it is in late_events, not in streaming KPIs',
              batch_id         BIGINT    NOT NULL COMMENT 'micro-batch that ingested it',
              event_date       DATE      NOT NULL COMMENT 'UTC date of event_ts'
            ) USING delta
            PARTITIONED BY (event_date)
            LOCATION '${lakehouse}/raw_events'
            -- Statistics only where queries filter: collecting them for every column costs time on each append.
            TBLPROPERTIES ('delta.dataSkippingStatsColumns' = 'event_ts,cell_site_id,kafka_partition,kafka_offset,batch_id',
              'delta.checkpointInterval' = '10',
              'delta.logRetentionDuration' = 'interval 7 days',
              'delta.deletedFileRetentionDuration' = 'interval 7 days')
            ;
            CREATE TABLE IF NOT EXISTS tidemark.kpi_5m (
              window_start      TIMESTAMP     NOT NULL,
              window_end        TIMESTAMP     NOT NULL,
              cell_site_id      STRING        NOT NULL,
              record_count      BIGINT        NOT NULL,
              total_gb          DECIMAL(38,9) NOT NULL COMMENT 'exact sum; each volume rounded to 1e-9 GB (one byte)',
              subscribers       BIGINT        NOT NULL COMMENT 'distinct subscribers: HLL estimate while streaming, exact after reconcile',
              subscriber_sketch BINARY        NOT NULL COMMENT 'hll_sketch_agg(subscriber_id, 12): merge with hll_union / hll_union_agg',
              is_final          BOOLEAN       NOT NULL COMMENT 'the watermark has passed window_end: the stream will not change this row again',
              source            STRING        NOT NULL COMMENT 'stream or batch',
              updated_at        TIMESTAMP     NOT NULL COMMENT 'ingest time of the newest record counted',
              stream_batch_id   BIGINT                 COMMENT 'micro-batch that last wrote the row; null once reconciled',
              event_date        DATE          NOT NULL COMMENT 'UTC date of window_start'
            ) USING delta
            PARTITIONED BY (event_date)
            LOCATION '${lakehouse}/kpi_5m'
            TBLPROPERTIES (
              'delta.checkpointInterval' = '10',
              'delta.logRetentionDuration' = 'interval 7 days',
              'delta.deletedFileRetentionDuration' = 'interval 7 days')
            ;
            CREATE TABLE IF NOT EXISTS tidemark.late_events (
              subscriber_id    STRING    NOT NULL,
              cell_site_id     STRING    NOT NULL,
              event_ts         TIMESTAMP NOT NULL,
              volume_gb        DOUBLE    NOT NULL,
              window_start     TIMESTAMP NOT NULL,
              window_end       TIMESTAMP NOT NULL,
              watermark        TIMESTAMP NOT NULL COMMENT 'the watermark in force for the batch that caught it',
              late_by_ms       BIGINT    NOT NULL COMMENT 'watermark - window_end: how long ago its window closed',
              batch_id         BIGINT    NOT NULL,
              kafka_topic      STRING    NOT NULL,
              kafka_partition  INT       NOT NULL,
              kafka_offset     BIGINT    NOT NULL,
              arrival_ts       TIMESTAMP NOT NULL COMMENT 'Kafka record timestamp',
              event_date       DATE      NOT NULL
            ) USING delta
            PARTITIONED BY (event_date)
            LOCATION '${lakehouse}/late_events'
            TBLPROPERTIES (
              'delta.checkpointInterval' = '10',
              'delta.logRetentionDuration' = 'interval 7 days',
              'delta.deletedFileRetentionDuration' = 'interval 7 days')
            ;

            """;

    private static List<String> declared() {
        List<String> out = new ArrayList<>();
        for (String s : DECLARED.split("(?m)^;$")) {
            if (!s.isBlank()) {
                out.add(s.lines().filter(l -> !l.startsWith("--")).reduce((a, b) -> a + "\n" + b).orElseThrow().strip());
            }
        }
        return out;
    }

    private static StructType columns(String statement) {
        return StructType.fromDDL(statement.substring(statement.indexOf('(') + 1, statement.indexOf("\n) USING")).strip());
    }

    private static List<String> withoutComments(StructType t) {
        List<String> out = new ArrayList<>();
        for (StructField f : t.fields()) {
            out.add(f.name() + " " + f.dataType().sql() + (f.nullable() ? "" : " NOT NULL"));
        }
        return out;
    }

    private static String after(String statement, String from) {
        return statement.substring(statement.indexOf(from)).replaceAll("\\s+", " ");
    }

    @Test
    void networksTablesAreThoseSqlTablesSqlDeclared() {
        List<String> generated = PipelineTables.statements(PipelineParser.shipped(PipelineParser.DEFAULT));
        List<String> declared = declared();
        assertThat(generated).hasSize(3);
        assertThat(declared).hasSize(3);
        for (int i = 0; i < 3; i++) {
            String g = generated.get(i);
            String d = declared.get(i);
            assertThat(g.substring(0, g.indexOf('('))).isEqualTo(d.substring(0, d.indexOf('(')));
            List<String> generatedColumns = withoutComments(columns(g));
            if (i == 2) {
                assertThat(generatedColumns.remove(generatedColumns.size() - 1)).isEqualTo("kpi STRING");
            }
            assertThat(generatedColumns).as(g).containsExactlyElementsOf(withoutComments(columns(d)));
            assertThat(after(g, ") USING")).isEqualTo(after(d, ") USING"));
        }
        // raw_events and late_events keep their comments too (kpi_5m's now say each measure's definition)
        assertThat(columns(generated.get(0))).isEqualTo(columns(declared.get(0)));
        // late_events has gained, last, the KPI table a late row was late for (nullable: older rows have none)
        StructType late = columns(generated.get(2));
        assertThat(new StructType(java.util.Arrays.copyOf(late.fields(), late.size() - 1))).isEqualTo(columns(declared.get(2)));
        assertThat(late.fields()[late.size() - 1].name()).isEqualTo("kpi");
        assertThat(late.fields()[late.size() - 1].dataType().sql()).isEqualTo("STRING");
        assertThat(late.fields()[late.size() - 1].nullable()).isTrue();
        assertThat(columns(generated.get(1)).apply("subscriber_sketch").getComment().get())
                .isEqualTo("hll_sketch_agg(subscriber_id, 12): merge with hll_union / hll_union_agg");
    }

    @Test
    void paymentsTablesHaveItsColumnsAndDimensions() {
        Pipeline payments = PipelineParser.shipped("payments");
        List<String> generated = PipelineTables.statements(payments);
        assertThat(generated).extracting(s -> s.substring("CREATE TABLE IF NOT EXISTS tidemark.".length(), s.indexOf(" (")))
                .containsExactly("raw_events", "merchant_1m", "country_1h", "late_events");
        assertThat(withoutComments(columns(generated.get(0)))).startsWith("txn_id STRING NOT NULL", "user_id STRING NOT NULL",
                "merchant_id STRING NOT NULL", "country STRING NOT NULL", "amount DECIMAL(12,2) NOT NULL", "status STRING NOT NULL",
                "ts TIMESTAMP NOT NULL", "payload STRING NOT NULL");
        assertThat(generated.get(0)).contains("'delta.dataSkippingStatsColumns' = 'ts,merchant_id,country,kafka_partition,kafka_offset,batch_id'");
        assertThat(withoutComments(columns(generated.get(1)))).containsExactlyElementsOf(payments.table("merchant_1m").orElseThrow().columns()
                .stream().map(PipelineTables::ddl).toList());
        assertThat(columns(generated.get(1)).apply("approved_amount").getComment().get())
                .isEqualTo("sum(amount) FILTER (WHERE status = 'approved'): exact");
        assertThat(withoutComments(columns(generated.get(3)))).startsWith("txn_id STRING NOT NULL").contains("window_start TIMESTAMP NOT NULL",
                "late_by_ms BIGINT NOT NULL");
    }
}
