package io.tidemark.tests;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

import org.apache.spark.api.java.function.VoidFunction2;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.streaming.StreamingQuery;
import org.apache.spark.sql.streaming.StreamingQueryException;
import org.apache.spark.sql.streaming.Trigger;
import org.junit.jupiter.api.Test;

/**
 * What Spark's Kafka source does alone when a query restarts on its checkpoint subscribed to
 * another topic (no Tidemark guard involved): the reason {@code topic} is part of the query
 * definition Tidemark checks ({@link io.tidemark.lakehouse.QueryDefinition}).
 */
class SparkTopicChangeTest extends OnSharedInfrastructure {
    static final List<String> SEEN = new CopyOnWriteArrayList<>();

    @Test
    void sparkAloneOnAChangedTopic() throws Exception {
        Path dir = infra.newDir("spark-topic");
        String a = "spark-a-" + dir.getFileName();
        String b = "spark-b-" + dir.getFileName();
        infra.broker.createTopic(a, 1);
        infra.broker.createTopic(b, 1);
        QueryDefinitionGuardTest.produce(infra, a, 30, 1);
        QueryDefinitionGuardTest.produce(infra, b, 20, 2);
        String checkpoint = dir.resolve("checkpoint").toString();

        // failOnDataLoss=true: it fails, but blames data loss: the old topic's partitions "have been deleted" (they were not).
        run(a, checkpoint, "true");
        assertThat(SEEN).containsExactly(a + ":30");
        SEEN.clear();
        assertThatThrownBy(() -> run(b, checkpoint, "true")).isInstanceOf(StreamingQueryException.class)
                .hasMessageContaining("Some data may have been lost because they are not available in Kafka any more")
                .hasMessageContaining("Reason: Partitions Set(" + a + "-0) have been deleted");
        assertThat(SEEN).isEmpty();

        // failOnDataLoss=false: it silently switches topics and reads the new one from its start, into the same sink.
        String lenient = checkpoint + "-lenient";
        run(a, lenient, "false");
        assertThat(SEEN).containsExactly(a + ":30");
        SEEN.clear();
        run(b, lenient, "false");
        assertThat(SEEN).containsExactly(b + ":20");
    }

    private static void run(String topic, String checkpoint, String failOnDataLoss) throws Exception {
        Dataset<Row> source = infra.spark.readStream().format("kafka")
                .option("kafka.bootstrap.servers", infra.broker.bootstrapServers())
                .option("subscribe", topic).option("startingOffsets", "earliest").option("failOnDataLoss", failOnDataLoss).load();
        VoidFunction2<Dataset<Row>, Long> sink = (batch, id) -> {
            for (Row r : batch.groupBy("topic").count().collectAsList()) {
                SEEN.add(r.getString(0) + ":" + r.getLong(1));
            }
        };
        StreamingQuery q = source.writeStream().option("checkpointLocation", checkpoint).trigger(Trigger.AvailableNow())
                .foreachBatch(sink).start();
        q.awaitTermination();
    }
}
