package io.tidemark.tests;

import java.nio.charset.StandardCharsets;
import java.sql.Timestamp;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.UUID;

import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;

import io.tidemark.lakehouse.TidemarkConfig;
import io.tidemark.stream.BatchInput;
import io.tidemark.stream.MicroBatchWriter;
import io.tidemark.stream.StreamingJob;
import io.tidemark.tests.KafkaFixtures.Message;

/**
 * Pipes crafted micro-batches through the stream's whole writer ({@link MicroBatchWriter#write}),
 * as Kafka Streams' TopologyTestDriver does for a topology: no broker and no streaming query, and
 * every batch with the Spark batch timestamp the test gives. Records get the next offsets of their
 * partition, in order; each batch's planned offsets are the partitions' offsets before and after it
 * (every partition seen so far), as Spark's offset log would hold them.
 *
 * <p>Each batch runs with the session settings Spark's micro-batch execution gives a foreachBatch
 * function (adaptive execution and cost-based optimisation off), as in production.
 *
 * <p>What Spark's engine decides itself (which records make a batch, when a batch runs, the
 * checkpoint) is not here: the tests that need it run the real query over the real broker.
 */
final class BatchDriver implements AutoCloseable {
    /** The columns of Spark's Kafka source that the writer reads. */
    static final StructType KAFKA_SCHEMA = new StructType()
            .add("key", DataTypes.BinaryType)
            .add("value", DataTypes.BinaryType)
            .add("topic", DataTypes.StringType)
            .add("partition", DataTypes.IntegerType)
            .add("offset", DataTypes.LongType)
            .add("timestamp", DataTypes.TimestampType)
            .add("timestampType", DataTypes.IntegerType);

    /** One record of a batch: its partition and its message. */
    record In(int partition, Message message) {
    }

    private final SparkSession spark;
    private TidemarkConfig config;
    private final String queryId = UUID.randomUUID().toString();
    private final Map<Integer, Long> nextOffset = new TreeMap<>();
    private MicroBatchWriter writer;
    private long nextBatch;

    BatchDriver(SparkSession spark, TidemarkConfig config) {
        this.spark = spark;
        this.config = config;
        StreamingJob.prepare(spark, config);
        this.writer = new MicroBatchWriter(config, null);
    }

    /** The id the next batch gets. */
    long nextBatchId() {
        return nextBatch;
    }

    /** Writes the next batch, {@code records} in their order, with Spark's batch timestamp {@code batchTime}. */
    void pipe(Instant batchTime, List<In> records) throws Exception {
        pipeBytes(batchTime, records.stream().map(r -> new Bytes(r.partition(), r.message().value() == null ? null
                : r.message().value().getBytes(StandardCharsets.UTF_8), r.message().kafkaTimestamp())).toList());
    }

    /** One record of a batch as Kafka holds it: its partition, its value's bytes (any bytes, UTF-8 or not) and its timestamp. */
    record Bytes(int partition, byte[] value, Instant kafkaTimestamp) {
    }

    /** {@link #pipe(Instant, List)} for records given as bytes. */
    void pipeBytes(Instant batchTime, List<Bytes> records) throws Exception {
        Map<Integer, Long> start = new TreeMap<>(nextOffset);
        List<Row> rows = new ArrayList<>();
        for (Bytes r : records) {
            start.putIfAbsent(r.partition(), 0L);
            long offset = nextOffset.merge(r.partition(), 1L, Long::sum) - 1;
            rows.add(RowFactory.create(null, r.value(), config.topic(), r.partition(), offset, Timestamp.from(r.kafkaTimestamp()), 0));
        }
        BatchInput in = new BatchInput(nextBatch, queryId, batchTime.toEpochMilli(), start, new TreeMap<>(nextOffset));
        Map<String, String> before = new TreeMap<>();
        STREAM_SESSION.forEach((k, v) -> {
            before.put(k, spark.conf().get(k));
            spark.conf().set(k, v);
        });
        try {
            writer.write(spark.createDataFrame(rows, KAFKA_SCHEMA), in);
        } finally {
            before.forEach((k, v) -> spark.conf().set(k, v));
        }
        nextBatch++;
    }

    /**
     * What Spark's micro-batch execution sets in the session a foreachBatch function runs in (a
     * clone of the query's session): the writer is driven with the same, and the session given
     * back as it was afterwards.
     */
    private static final Map<String, String> STREAM_SESSION = Map.of(
            "spark.sql.adaptive.enabled", "false",
            "spark.sql.cbo.enabled", "false",
            "spark.sql.requireAllClusterKeysForDistribution", "false");

    /** As {@link #pipe(Instant, List)}, every record on partition 0. */
    void pipe(Instant batchTime, Message... messages) throws Exception {
        pipe(batchTime, java.util.Arrays.stream(messages).map(m -> new In(0, m)).toList());
    }

    /**
     * A restart of the same query (the same checkpoint) with another configuration, as after a stop and
     * a start with a changed pipeline: the tables it adds are created, and the new writer reads where the
     * stream stands from the tables.
     */
    void restartWith(TidemarkConfig changed) {
        writer.close();
        config = changed;
        StreamingJob.prepare(spark, config);
        writer = new MicroBatchWriter(config, null);
    }

    /** A restart: a new writer, which reads where the stream stands from the tables, as after a crash. */
    void restart() {
        writer.close();
        writer = new MicroBatchWriter(config, null);
    }

    @Override
    public void close() {
        writer.close();
    }
}
