package io.tidemark.tests;

import static org.apache.spark.sql.functions.col;
import static org.apache.spark.sql.functions.expr;
import static org.apache.spark.sql.functions.window;
import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import org.apache.spark.api.java.function.VoidFunction2;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.Trigger;
import org.junit.jupiter.api.Test;

import io.tidemark.generate.GenerationReport;
import io.tidemark.generate.KafkaTrafficProducer;
import io.tidemark.generate.TrafficSpec;
import io.tidemark.lakehouse.Lakehouse;
import io.tidemark.lakehouse.TidemarkConfig;
import io.tidemark.stream.StreamingJob;

/**
 * The late/on-time split equals what Spark's own windowed aggregation keeps and drops: the same
 * topic, the same micro-batches (fixed max offsets per trigger), read by Tidemark's stream and by
 * the plain native job side by side. Per (window, cell), the count native Spark ends up with must
 * equal the count in kpi_5m, and what native Spark dropped must be exactly what late_events holds.
 */
class LateSplitVsSparkTest extends OnSharedInfrastructure {
    /** Latest count per "window_start|cell" emitted by the native query (update mode). */
    static final Map<String, Long> NATIVE = new ConcurrentHashMap<>();

    @Test
    void tidemarkKeepsAndCapturesExactlyWhatSparkKeepsAndDrops() throws Exception {
        Path dir = infra.newDir("vs-spark");
        String topic = "vs-spark-" + dir.getFileName();
        infra.broker.createTopic(topic, 2);
        TrafficSpec spec = TrafficSpec.builder().topic(topic).count(2000L).cells(6).subscribers(200)
                .outOfOrderSpread(Duration.ofMinutes(3)).lateFraction(0.15).lateDelay(Duration.ofMinutes(8), Duration.ofMinutes(25))
                .invalidFraction(0).seed(7).eventsPerSecondOfEventTime(1.0)
                .eventClockStart(Instant.now().minus(2, ChronoUnit.HOURS).truncatedTo(ChronoUnit.HOURS)).build();
        GenerationReport produced = new KafkaTrafficProducer(infra.broker.bootstrapServers(), Map.of()).produce(spec, p -> { });
        assertThat(produced.messages()).isEqualTo(2000);

        TidemarkConfig config = infra.config(dir, topic).set(TidemarkConfig.Key.MAX_OFFSETS_PER_TRIGGER, "250").build();
        StreamingJob job = new StreamingJob(infra.spark, config, null);
        job.start(true).awaitTermination();
        job.close();

        runNativeJob(config, dir.resolve("native-checkpoint"));

        Lakehouse lh = Lakehouse.of(config);
        Map<String, Long> ours = new HashMap<>();
        for (Row r : infra.spark.sql("SELECT date_format(window_start, 'yyyy-MM-dd HH:mm:ss'), cell_site_id, record_count FROM "
                + lh.ref(Lakehouse.Table.kpi("kpi_5m"))).collectAsList()) {
            ours.put(r.getString(0) + "|" + r.getString(1), r.getLong(2));
        }
        long late = infra.spark.sql("SELECT count(*) FROM " + lh.ref(Lakehouse.Table.LATE_EVENTS)).first().getLong(0);
        long nativeCounted = NATIVE.values().stream().mapToLong(Long::longValue).sum();

        assertThat(ours).isEqualTo(NATIVE);
        assertThat(nativeCounted + late).isEqualTo(2000);
        assertThat(late).as("the input must make Spark drop rows, or this test shows nothing").isGreaterThan(50);
    }

    private static void runNativeJob(TidemarkConfig config, Path checkpoint) throws Exception {
        SparkSession s = infra.spark.newSession();
        s.conf().set("spark.sql.shuffle.partitions", "2");
        s.conf().set("spark.sql.session.timeZone", "UTC");
        // One data batch per trigger, as in Tidemark's stateless query, so the two see the same batches.
        s.conf().set("spark.sql.streaming.noDataMicroBatches.enabled", "false");
        Dataset<Row> events = s.readStream().format("kafka")
                .option("kafka.bootstrap.servers", config.bootstrapServers())
                .option("subscribe", config.topic())
                .option("startingOffsets", "earliest")
                .option("maxOffsetsPerTrigger", "250")
                .load()
                .select(expr("from_json(CAST(value AS STRING), 'subscriber_id STRING, cell_site_id STRING, event_ts STRING, volume_gb DOUBLE')").as("e"))
                .select(col("e.cell_site_id").as("cell_site_id"), expr("CAST(e.event_ts AS TIMESTAMP)").as("event_ts"));
        Dataset<Row> counts = events.withWatermark("event_ts", "10 minutes")
                .groupBy(window(col("event_ts"), "5 minutes"), col("cell_site_id")).count()
                .select(expr("date_format(window.start, 'yyyy-MM-dd HH:mm:ss')").as("w"), col("cell_site_id"), col("count"));
        NATIVE.clear();
        counts.writeStream().outputMode("update")
                .option("checkpointLocation", checkpoint.toString())
                .trigger(Trigger.AvailableNow())
                .foreachBatch((VoidFunction2<Dataset<Row>, Long>) (df, id) -> {
                    for (Row r : df.collectAsList()) {
                        NATIVE.put(r.getString(0) + "|" + r.getString(1), r.getLong(2));
                    }
                })
                .start().awaitTermination();
    }
}
