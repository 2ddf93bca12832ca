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
    /** Topics written in Avro, with the registry their schemas are in: their records are decoded to the JSON output's form. */
    private final java.util.Map<String, String> avroTopics = new java.util.HashMap<>();

    OutputTopics(SparkSession spark, String bootstrapServers) {
        this.spark = spark;
        this.bootstrapServers = bootstrapServers;
    }

    /** {@code topic} is written in Avro, its schemas in {@code registry}. */
    OutputTopics avro(String topic, String registry) {
        avroTopics.put(topic, registry);
        return this;
    }

    /**
     * The shipped payments pipeline on {@code topic}, with merchant_1m published to {@code merchants} (every change,
     * exactly-once) and country_1h to {@code countries} (final windows, at-least-once); null for none.
     */
    static String pipeline(String topic, String merchants, String countries) throws IOException {
        return pipeline(topic, merchants, countries, null);
    }

    /** As {@link #pipeline(String, String, String)}, country_1h's output in Avro with its schemas registered in {@code countriesRegistry}. */
    static String pipeline(String topic, String merchants, String countries, String countriesRegistry) throws IOException {
        String text = Files.readString(Path.of(System.getProperty("user.dir")).getParent().resolve("pipelines/payments.sql"))
                .replace("topic 'payments'", "topic '" + topic + "'");
        if (merchants != null) {
            text = text.replace("CREATE STREAMING TABLE merchant_1m AS", "CREATE STREAMING TABLE merchant_1m TBLPROPERTIES ("
                    + "'output.kafka.topic' = '" + merchants + "', 'output.kafka.mode' = 'updates', 'output.kafka.exactly-once' = 'true') AS");
        }
        if (countries != null) {
            text = text.replace("CREATE STREAMING TABLE country_1h AS", "CREATE STREAMING TABLE country_1h TBLPROPERTIES ("
                    + "'output.kafka.topic' = '" + countries + "'" + (countriesRegistry == null ? "" : ", 'output.kafka.format' = 'avro', "
                    + "'output.kafka.schema-registry' = '" + countriesRegistry + "'") + ") AS");
        }
        return text;
    }

    /** Every record of an output topic, oldest first, with its key, version (header) and value fields as columns. */
    Dataset<Row> records(String topic, boolean readCommitted) {
        Dataset<Row> raw = spark.read().format("kafka").option("kafka.bootstrap.servers", bootstrapServers)
                .option("subscribe", topic).option("startingOffsets", "earliest").option("endingOffsets", "latest")
                .option("includeHeaders", "true").option("kafka.isolation.level", readCommitted ? "read_committed" : "read_uncommitted").load();
        Dataset<Row> records = raw.selectExpr("CAST(key AS STRING) AS k", "CAST(value AS STRING) AS v", "partition", "offset",
                "CAST(CAST(filter(headers, h -> h.key = 'tidemark-version')[0].value AS STRING) AS BIGINT) AS header_version");
        String registry = avroTopics.get(topic);
        if (registry == null) {
            return records;
        }
        // Avro: each key and value decoded by Avro's own reader with the writer schema its header names, as JSON in the JSON output's form
        io.tidemark.lakehouse.SchemaRegistry schemas = new io.tidemark.lakehouse.SchemaRegistry(registry, java.time.Duration.ofSeconds(10));
        List<Row> decoded = new java.util.ArrayList<>();
        for (Row r : raw.selectExpr("key", "value", "partition", "offset",
                "CAST(CAST(filter(headers, h -> h.key = 'tidemark-version')[0].value AS STRING) AS BIGINT) AS header_version").collectAsList()) {
            decoded.add(org.apache.spark.sql.RowFactory.create(json(schemas, (byte[]) r.get(0)), json(schemas, (byte[]) r.get(1)), r.get(2), r.get(3),
                    r.get(4)));
        }
        return spark.createDataFrame(decoded, records.schema());
    }

    /** The ids of the schemas an Avro topic's keys and values name in their headers, each once. */
    List<Integer> schemaIds(String topic) {
        return spark.read().format("kafka").option("kafka.bootstrap.servers", bootstrapServers).option("subscribe", topic)
                .option("startingOffsets", "earliest").option("endingOffsets", "latest").load()
                .selectExpr("explode(array(key, value)) AS b").where("b IS NOT NULL")
                .selectExpr("conv(hex(substring(b, 2, 4)), 16, 10) AS id").distinct().orderBy("id").collectAsList().stream()
                .map(r -> Integer.parseInt(r.getString(0))).toList();
    }

    /** A record in Confluent's wire format, decoded and written as the JSON output writes it (UTC times in milliseconds, decimals as numbers). */
    private static String json(io.tidemark.lakehouse.SchemaRegistry schemas, byte[] wire) {
        if (wire == null) {
            return null;
        }
        assertThat(wire[0]).as("the wire format's magic byte").isZero();
        int id = java.nio.ByteBuffer.wrap(wire, 1, 4).getInt();
        org.apache.avro.Schema schema = schemas.writerSchema(id).orElseThrow(() -> new AssertionError("schema id " + id + " is not registered"));
        try {
            org.apache.avro.generic.GenericRecord record = new org.apache.avro.generic.GenericDatumReader<org.apache.avro.generic.GenericRecord>(schema)
                    .read(null, org.apache.avro.io.DecoderFactory.get().binaryDecoder(wire, 5, wire.length - 5, null));
            com.fasterxml.jackson.databind.node.ObjectNode out = com.fasterxml.jackson.databind.node.JsonNodeFactory.instance.objectNode();
            for (org.apache.avro.Schema.Field f : schema.getFields()) {
                Object v = record.get(f.name());
                org.apache.avro.Schema type = f.schema().getType() == org.apache.avro.Schema.Type.UNION ? f.schema().getTypes().get(1) : f.schema();
                if (v == null) {
                    out.putNull(f.name());
                } else if (type.getLogicalType() instanceof org.apache.avro.LogicalTypes.TimestampMillis) {
                    out.put(f.name(), java.time.format.DateTimeFormatter.ofPattern("yyyy-MM-dd'T'HH:mm:ss.SSSX").withZone(java.time.ZoneOffset.UTC)
                            .format(java.time.Instant.ofEpochMilli((Long) v)));
                } else if (type.getLogicalType() instanceof org.apache.avro.LogicalTypes.Decimal d) {
                    out.put(f.name(), new org.apache.avro.Conversions.DecimalConversion().fromBytes((java.nio.ByteBuffer) v, type, d));
                } else if (v instanceof Long l) {
                    out.put(f.name(), l);
                } else if (v instanceof Integer i) {
                    out.put(f.name(), i);
                } else if (v instanceof Double x) {
                    out.put(f.name(), x);
                } else if (v instanceof Boolean b) {
                    out.put(f.name(), b);
                } else {
                    out.put(f.name(), v.toString());
                }
            }
            return out.toString();
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
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
