package io.tidemark.bench;

import static org.apache.spark.sql.functions.approx_count_distinct;
import static org.apache.spark.sql.functions.col;
import static org.apache.spark.sql.functions.from_json;
import static org.apache.spark.sql.functions.sum;
import static org.apache.spark.sql.functions.window;

import java.lang.management.ManagementFactory;
import java.lang.management.MemoryPoolMXBean;
import java.lang.management.MemoryType;
import java.nio.file.Files;
import java.nio.file.Path;

import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.StreamingQuery;
import org.apache.spark.sql.streaming.StreamingQueryListener;
import org.apache.spark.sql.streaming.Trigger;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;

import io.tidemark.lakehouse.SparkSessions;
import io.tidemark.lakehouse.TidemarkConfig;
import io.tidemark.stream.StreamingJob;

/**
 * One benchmarked job in its own JVM: {@code tidemark} (the speed layer) or {@code plain} (the job
 * of the seed article: from_json, withWatermark 10 min, 5-minute window per cell with sum and
 * approx_count_distinct, append mode into a Delta table). Both drain the topic with
 * Trigger.AvailableNow at the same max records per batch, in the same Spark configuration. Prints
 * one {@code BATCH} line per micro-batch and a final {@code PEAK} line for the orchestrator.
 *
 * <p>Arguments: {@code plain|tidemark bootstrap topic maxRecordsPerBatch workDir}.
 */
public final class BenchJob {
    public static void main(String[] args) throws Exception {
        String mode = args[0];
        String bootstrap = args[1];
        String topic = args[2];
        String maxPerBatch = args[3];
        Path work = Path.of(args[4]);
        Files.createDirectories(work);
        TidemarkConfig config = TidemarkConfig.builder()
                .set(TidemarkConfig.Key.KAFKA_BOOTSTRAP, bootstrap)
                .set(TidemarkConfig.Key.TOPIC, topic)
                .set(TidemarkConfig.Key.MAX_OFFSETS_PER_TRIGGER, maxPerBatch)
                .set(TidemarkConfig.Key.LAKEHOUSE, work.resolve("lakehouse").toString())
                .set(TidemarkConfig.Key.CHECKPOINT, work.resolve("checkpoint").toString())
                .build();
        SparkSession spark = SparkSessions.create(config, "bench-" + mode);
        spark.streams().addListener(new StreamingQueryListener() {
            @Override
            public void onQueryStarted(QueryStartedEvent event) {
            }

            @Override
            public void onQueryProgress(QueryProgressEvent event) {
                var p = event.progress();
                if (p.numInputRows() > 0) {
                    System.out.println("BATCH " + p.batchId() + " " + p.numInputRows() + " " + p.durationMs().get("triggerExecution")
                            + " " + System.currentTimeMillis());
                }
            }

            @Override
            public void onQueryTerminated(QueryTerminatedEvent event) {
            }
        });
        long start = System.currentTimeMillis();
        StreamingQuery q;
        StreamingJob job = null;
        if (mode.equals("tidemark")) {
            job = new StreamingJob(spark, config, null);
            q = job.start(true);
        } else {
            q = plainJob(spark, config, work);
        }
        System.out.println("START " + start);
        q.awaitTermination();
        if (job != null) {
            job.close();
        }
        System.out.println("END " + System.currentTimeMillis());
        long heapPeak = 0;
        for (MemoryPoolMXBean pool : ManagementFactory.getMemoryPoolMXBeans()) {
            if (pool.getType() == MemoryType.HEAP) {
                heapPeak += pool.getPeakUsage().getUsed();
            }
        }
        String hwm = Files.readAllLines(Path.of("/proc/self/status")).stream()
                .filter(l -> l.startsWith("VmHWM")).findFirst().orElse("VmHWM: 0 kB").replaceAll("\\D+", " ").trim();
        System.out.println("PEAK " + heapPeak + " " + Long.parseLong(hwm.split(" ")[0]) * 1024);
        spark.stop();
    }

    /** The seed article's job, as a user would write it. */
    static StreamingQuery plainJob(SparkSession spark, TidemarkConfig config, Path work) throws Exception {
        StructType schema = new StructType()
                .add("subscriber_id", DataTypes.StringType)
                .add("cell_site_id", DataTypes.StringType)
                .add("event_ts", DataTypes.TimestampType)
                .add("volume_gb", DataTypes.DoubleType);
        Dataset<Row> events = spark.readStream().format("kafka")
                .option("kafka.bootstrap.servers", config.bootstrapServers())
                .option("subscribe", config.topic())
                .option("startingOffsets", "earliest")
                .option("maxOffsetsPerTrigger", String.valueOf(config.maxOffsetsPerTrigger()))
                .load()
                .select(from_json(col("value").cast("string"), schema).as("e"))
                .select("e.*");
        return events.withWatermark("event_ts", "10 minutes")
                .groupBy(window(col("event_ts"), "5 minutes"), col("cell_site_id"))
                .agg(sum("volume_gb").as("total_gb"), approx_count_distinct("subscriber_id").as("subscribers"))
                .writeStream().format("delta").outputMode("append")
                .option("checkpointLocation", work.resolve("checkpoint").toString())
                .trigger(Trigger.AvailableNow())
                .start(work.resolve("kpi").toString());
    }
}
