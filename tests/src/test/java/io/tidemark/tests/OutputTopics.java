package io.tidemark.tests;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;

import io.tidemark.lakehouse.Lakehouse;
import io.tidemark.lakehouse.Lakehouse.Table;

/**
 * The KPI tables' output topics read back by Spark's own Kafka source, and held to the tables: the
 * checks {@link KafkaOutputTest} makes.
 */
final class OutputTopics {
    private final SparkSession spark;
    private final String bootstrapServers;

    OutputTopics(SparkSession spark, String bootstrapServers) {
        this.spark = spark;
        this.bootstrapServers = bootstrapServers;
    }

    /**
     * The shipped payments pipeline on {@code topic}, with merchant_1m published to {@code merchants} (every change,
     * exactly-once) and country_1h to {@code countries} (final windows, at-least-once); null for none.
     */
    static String pipeline(String topic, String merchants, String countries) throws IOException {
        String text = Files.readString(Path.of(System.getProperty("user.dir")).getParent().resolve("pipelines/payments.sql"))
                .replace("topic 'payments'", "topic '" + topic + "'");
        if (merchants != null) {
            text = text.replace("CREATE STREAMING TABLE merchant_1m AS", "CREATE STREAMING TABLE merchant_1m TBLPROPERTIES ("
                    + "'output.kafka.topic' = '" + merchants + "', 'output.kafka.mode' = 'updates', 'output.kafka.exactly-once' = 'true') AS");
        }
        if (countries != null) {
            text = text.replace("CREATE STREAMING TABLE country_1h AS", "CREATE STREAMING TABLE country_1h TBLPROPERTIES ("
                    + "'output.kafka.topic' = '" + countries + "') AS");
        }
        return text;
    }

    /** Every record of an output topic, oldest first, with its key, version (header) and value fields as columns. */
    Dataset<Row> records(String topic, boolean readCommitted) {
        Dataset<Row> raw = spark.read().format("kafka").option("kafka.bootstrap.servers", bootstrapServers)
                .option("subscribe", topic).option("startingOffsets", "earliest").option("endingOffsets", "latest")
                .option("includeHeaders", "true").option("kafka.isolation.level", readCommitted ? "read_committed" : "read_uncommitted").load();
        return raw.selectExpr("CAST(key AS STRING) AS k", "CAST(value AS STRING) AS v", "partition", "offset",
                "CAST(CAST(filter(headers, h -> h.key = 'tidemark-version')[0].value AS STRING) AS BIGINT) AS header_version");
    }

    /** Per key, its record with the highest version, the value's fields parsed (null fields: a tombstone). */
    Dataset<Row> latest(String topic, boolean readCommitted) {
        records(topic, readCommitted).createOrReplaceTempView("out_records");
        return spark.sql("SELECT k, header_version AS version, v, get_json_object(v, '$.source') AS source, "
                + "CAST(get_json_object(v, '$.version') AS BIGINT) AS value_version FROM (SELECT *, row_number() OVER (PARTITION BY k "
                + "ORDER BY header_version DESC) AS n FROM out_records) WHERE n = 1");
    }

    /**
     * The topic against the table: at each key's highest version, the row (every row, or the final ones),
     * compared field by field with what Spark reads from Delta; with {@code exactlyOnce}, read_committed,
     * each (key, version) once and versions growing along each key's records.
     */
    void assertOutputIsTheTable(Lakehouse lakehouse, String table, String topic, boolean exactlyOnce, boolean finalOnly) {
        Dataset<Row> records = records(topic, exactlyOnce);
        records.createOrReplaceTempView("out_all");
        if (exactlyOnce) {
            assertThat(spark.sql("SELECT k, header_version FROM out_all GROUP BY k, header_version HAVING count(*) > 1").count())
                    .as("(key, version) read twice").isZero();
            assertThat(spark.sql("SELECT * FROM (SELECT header_version, lag(header_version) OVER (PARTITION BY k ORDER BY partition, offset) "
                    + "AS before FROM out_all) WHERE before >= header_version").count()).as("a key whose version went backwards").isZero();
        }
        Dataset<Row> latest = latest(topic, exactlyOnce);
        assertThat(latest.where("v IS NOT NULL AND value_version <> version").count()).as("the value's version is the header's").isZero();
        String dims = table.equals("merchant_1m") ? "merchant_id, country" : "country";
        String measures = table.equals("merchant_1m") ? "txns, approved_amount, declined, users, p95_amount, max_amount"
                : "txns, avg_amount, min_amount, users";
        Dataset<Row> tableRows = lakehouse.read(spark, Table.kpi(table)).where(finalOnly ? "is_final" : "true");
        tableRows.createOrReplaceTempView("kpi_rows");
        // The value parsed with the table's own column types, compared as text with the table's columns.
        String fields = "window_start, window_end, " + dims + ", " + measures + ", is_final, source";
        StringBuilder schema = new StringBuilder();
        StringBuilder fromTable = new StringBuilder();
        for (String f : fields.split(", ")) {
            schema.append(schema.length() == 0 ? "" : ", ").append(f).append(" ").append(tableRows.schema().apply(f).dataType().sql());
            fromTable.append(fromTable.length() == 0 ? "" : ", ").append("CAST(").append(f).append(" AS STRING) AS ").append(f);
        }
        latest.where("v IS NOT NULL").createOrReplaceTempView("out_latest");
        String fromTopic = "SELECT " + fromTable + " FROM (SELECT j.* FROM (SELECT from_json(v, '" + schema + "', map('timestampFormat', "
                + "\"yyyy-MM-dd'T'HH:mm:ss.SSSXXX\")) AS j FROM out_latest))";
        List<String> expected = spark.sql("SELECT " + fromTable + " FROM kpi_rows ORDER BY ALL").collectAsList().stream()
                .map(Row::toString).toList();
        assertThat(expected).as(table).hasSizeGreaterThan(50);
        List<String> actual = spark.sql(fromTopic + " ORDER BY ALL").collectAsList().stream().map(Row::toString).toList();
        assertThat(actual).as("%s: the highest version per key in %s", table, topic).containsExactlyElementsOf(expected);
    }
}
