package io.tidemark.bench;

import static org.apache.spark.sql.functions.col;
import static org.apache.spark.sql.functions.expr;
import static org.apache.spark.sql.functions.from_json;
import static org.apache.spark.sql.functions.to_date;

import java.io.IOException;
import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryPoolMXBean;
import java.lang.management.MemoryType;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import javax.management.NotificationEmitter;
import javax.management.openmbean.CompositeData;

import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.statistics.IOStatisticsSource;
import org.apache.spark.sql.Column;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.StreamingQuery;
import org.apache.spark.sql.streaming.StreamingQueryListener;
import org.apache.spark.sql.streaming.Trigger;
import org.apache.spark.sql.types.StructType;

import com.sun.management.GarbageCollectionNotificationInfo;
import com.sun.management.OperatingSystemMXBean;

import io.tidemark.lakehouse.SparkSessions;
import io.tidemark.lakehouse.TidemarkConfig;
import io.tidemark.pipeline.Pipeline;
import io.tidemark.pipeline.PipelineParser;
import io.tidemark.stream.StreamingJob;

/**
 * One benchmarked job in its own JVM:
 * <ul>
 * <li>{@code tidemark}: the speed layer;
 * <li>{@code plain}: the plain Spark job a user would write first for the pipeline's KPIs: one streaming query per KPI
 * table (from_json with the events' schema, withWatermark of the lateness, the table's window and dimensions, its
 * measures as written, Spark's own approx_count_distinct and percentile_approx among them), append mode into a Delta
 * table;
 * <li>{@code diy}: the do-it-yourself Lambda a user would build from the plain job: one session
 * running two streaming queries on the topic at the same time, a {@code bronze} append of every
 * record (parsed fields, message text, Kafka coordinates) to a Delta table partitioned by event
 * date, and the plain job itself (query {@code kpi}), each with its own checkpoint.
 * </ul>
 * All drain the topic with Trigger.AvailableNow at the same max records per batch, in the same
 * Spark configuration. Prints {@code START}, one {@code BATCH id records ms epochMs query} line per
 * micro-batch of each query, {@code END} once every query has terminated, and a final {@code PEAK}
 * line for the orchestrator.
 *
 * <p>Arguments: {@code plain|tidemark|diy bootstrap topic maxRecordsPerBatch workDir [pipeline]} (the pipeline: a
 * shipped name or a file; network by default).
 */
public final class BenchJob {

    public static void main(String[] args) throws Exception {
        String mode = args[0];
        String bootstrap = args[1];
        String topic = args[2];
        String maxPerBatch = args[3];
        Path work = Path.of(args[4]);
        String pipeline = args.length > 5 ? args[5] : "network";
        if (!List.of("plain", "tidemark", "published", "diy", "s3").contains(mode)) {
            throw new IllegalArgumentException("unknown job " + mode + " (known: plain, tidemark, published, diy, s3)");
        }
        // s3: the speed layer with its lakehouse and checkpoint under this s3a:// base (the orchestrator's S3 server, whose
        // spark.hadoop.fs.s3a.* settings come as system properties)
        String s3Base = mode.equals("s3") ? System.getProperty("tidemark.bench.s3-base") + "/" + work.getFileName() : null;
        Files.createDirectories(work);
        if (mode.equals("published")) {
            pipeline = publishing(pipeline, topic, work).toString();
        }
        TidemarkConfig config = TidemarkConfig.builder()
                .set(TidemarkConfig.Key.KAFKA_BOOTSTRAP, bootstrap)
                .set(TidemarkConfig.Key.PIPELINE, pipeline)
                .set(TidemarkConfig.Key.TOPIC, topic)
                .set(TidemarkConfig.Key.MAX_OFFSETS_PER_TRIGGER, maxPerBatch)
                .set(TidemarkConfig.Key.LAKEHOUSE, s3Base != null ? s3Base + "/lakehouse" : work.resolve("lakehouse").toString())
                .set(TidemarkConfig.Key.CHECKPOINT, s3Base != null ? s3Base + "/checkpoint" : work.resolve("checkpoint").toString())
                .build();
        SparkSession spark = SparkSessions.create(config, "bench-" + mode);
        S3Requests s3 = s3Base == null ? null : new S3Requests(FileSystem.get(URI.create(s3Base),
                spark.sparkContext().hadoopConfiguration()));
        // Which query a progress event belongs to; the listener waits until every query is registered.
        Map<UUID, String> names = new ConcurrentHashMap<>();
        CountDownLatch registered = new CountDownLatch(1);
        spark.streams().addListener(new StreamingQueryListener() {
            @Override
            public void onQueryStarted(QueryStartedEvent event) {
            }

            @Override
            public void onQueryProgress(QueryProgressEvent event) {
                var p = event.progress();
                if (p.numInputRows() > 0) {
                    try {
                        registered.await(5, TimeUnit.MINUTES);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                    System.out.println("BATCH " + p.batchId() + " " + p.numInputRows() + " " + p.durationMs().get("triggerExecution")
                            + " " + System.currentTimeMillis() + " " + names.getOrDefault(p.id(), "unknown"));
                    if (s3 != null) {
                        System.out.println("S3 " + p.batchId() + " " + s3.line());
                    }
                }
            }

            @Override
            public void onQueryTerminated(QueryTerminatedEvent event) {
            }
        });
        LiveHeap liveHeap = LiveHeap.watch();
        long start = System.currentTimeMillis();
        long cpuStart = processCpuNanos();
        List<StreamingQuery> queries = new ArrayList<>();
        StreamingJob job = null;
        try {
            switch (mode) {
                case "tidemark", "published", "s3" -> {
                    job = new StreamingJob(spark, config, null);
                    StreamingQuery q = job.start(true);
                    names.put(q.id(), mode);
                    queries.add(q);
                }
                case "plain" -> plainJobs(spark, config, work).forEach((suffix, q) -> {
                    names.put(q.id(), "plain" + suffix);
                    queries.add(q);
                });
                default -> {
                    StreamingQuery bronze = bronzeJob(spark, config, work);
                    names.put(bronze.id(), "bronze");
                    queries.add(bronze);
                    plainJobs(spark, config, work).forEach((suffix, kpi) -> {
                        names.put(kpi.id(), "kpi" + suffix);
                        queries.add(kpi);
                    });
                }
            }
        } finally {
            registered.countDown();
        }
        System.out.println("START " + start);
        try {
            for (StreamingQuery q : queries) {
                q.awaitTermination();
            }
        } catch (Exception e) {
            // One query failed: stop the others so the JVM can end, and fail the run.
            for (StreamingQuery q : queries) {
                try {
                    q.stop();
                } catch (Exception ignored) {
                    // already failing
                }
            }
            throw e;
        }
        if (job != null) {
            job.close();
        }
        System.out.println("END " + System.currentTimeMillis());
        System.out.println("CPU " + (processCpuNanos() - cpuStart));
        long heapPeak = 0;
        for (MemoryPoolMXBean pool : ManagementFactory.getMemoryPoolMXBeans()) {
            if (pool.getType() == MemoryType.HEAP) {
                heapPeak += pool.getPeakUsage().getUsed();
            }
        }
        String hwm = Files.readAllLines(Path.of("/proc/self/status")).stream()
                .filter(l -> l.startsWith("VmHWM")).findFirst().orElse("VmHWM: 0 kB").replaceAll("\\D+", " ").trim();
        System.out.println("PEAK " + heapPeak + " " + Long.parseLong(hwm.split(" ")[0]) * 1024 + " " + liveHeap.peak());
        spark.stop();
    }

    /**
     * The pipeline {@code named} on the benchmark's topic with every KPI table published to Kafka, in the costlier
     * way (every change, exactly-once: a transaction per round), to a topic of this run: the file written in {@code work}.
     */
    static Path publishing(String named, String topic, Path work) throws IOException {
        Pipeline p = named.matches("[a-z][a-z0-9_-]*")
                ? PipelineParser.shipped(named) : PipelineParser.parse(Path.of(named));
        String text = p.source().replace("topic '" + p.events().topic() + "'", "topic '" + topic + "'");
        for (Pipeline.KpiTable t : p.tables()) {
            String props = "'output.kafka.topic' = 'bench-out-" + t.name() + "-" + work.getFileName() + "', 'output.kafka.mode' = 'updates', "
                    + "'output.kafka.exactly-once' = 'true'";
            Matcher m = Pattern.compile("(?i)(CREATE\\s+STREAMING\\s+TABLE\\s+" + t.name()
                    + ")(\\s+TBLPROPERTIES\\s*\\()?").matcher(text);
            if (!m.find()) {
                throw new IllegalStateException("no CREATE STREAMING TABLE " + t.name() + " in " + p.file());
            }
            text = text.substring(0, m.start()) + m.group(1) + (m.group(2) != null ? m.group(2) + props + ", " : " TBLPROPERTIES (" + props + ")")
                    + text.substring(m.end());
        }
        return Files.writeString(work.resolve("published.sql"), text);
    }

    /**
     * The requests S3A has sent so far from this JVM (Spark's local executors, Delta's log store and the checkpoint share one
     * file system per bucket), by kind, from its IOStatistics: {@code PUT=n GET=n HEAD=n LIST=n DELETE=n COPY=n}.
     */
    static final class S3Requests {
        /** Each kind of request and the S3A counters that count it. */
        static final Map<String, List<String>> KINDS = new LinkedHashMap<>();
        static {
            KINDS.put("PUT", List.of("object_put_request", "multipart_upload_part_put"));
            KINDS.put("GET", List.of("action_http_get_request"));
            KINDS.put("HEAD", List.of("object_metadata_request"));
            KINDS.put("LIST", List.of("object_list_request", "object_continue_list_request"));
            KINDS.put("DELETE", List.of("object_delete_request", "object_bulk_delete_request"));
            KINDS.put("COPY", List.of("object_copy_requests"));
        }

        private final IOStatisticsSource fs;

        S3Requests(FileSystem fs) {
            this.fs = (IOStatisticsSource) fs;
        }

        String line() {
            Map<String, Long> counters = fs.getIOStatistics().counters();
            StringBuilder sb = new StringBuilder();
            KINDS.forEach((kind, keys) -> sb.append(sb.isEmpty() ? "" : " ").append(kind).append('=')
                    .append(keys.stream().mapToLong(k -> counters.getOrDefault(k, 0L)).sum()));
            return sb.toString();
        }
    }

    /** CPU time of this JVM, every thread (Spark's tasks and driver, GC, JIT): the cores a job costs, steadier than wall time on a shared machine. */
    static long processCpuNanos() {
        return ((OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean()).getProcessCpuTime();
    }

    /**
     * The largest heap left in use after a garbage collection: what the job needs to keep, where the
     * peak of the heap pools mostly says how much garbage the collector let pile up before it ran.
     */
    static final class LiveHeap {
        private final AtomicLong peak = new AtomicLong();

        static LiveHeap watch() {
            LiveHeap h = new LiveHeap();
            for (GarbageCollectorMXBean gc : ManagementFactory.getGarbageCollectorMXBeans()) {
                ((NotificationEmitter) gc).addNotificationListener((n, hb) -> {
                    if (!GarbageCollectionNotificationInfo.GARBAGE_COLLECTION_NOTIFICATION.equals(n.getType())) {
                        return;
                    }
                    var info = GarbageCollectionNotificationInfo.from((CompositeData) n.getUserData());
                    long used = 0;
                    for (var e : info.getGcInfo().getMemoryUsageAfterGc().entrySet()) {
                        if (isHeap(e.getKey())) {
                            used += e.getValue().getUsed();
                        }
                    }
                    long u = used;
                    h.peak.accumulateAndGet(u, Math::max);
                }, null, null);
            }
            return h;
        }

        private static boolean isHeap(String pool) {
            return ManagementFactory.getMemoryPoolMXBeans().stream().anyMatch(p -> p.getName().equals(pool) && p.getType() == MemoryType.HEAP);
        }

        long peak() {
            return peak.get();
        }
    }

    /** The topic as the plain job reads it: from the earliest offset, at most maxOffsetsPerTrigger records per batch. */
    static Dataset<Row> kafka(SparkSession spark, TidemarkConfig config) {
        return spark.readStream().format("kafka")
                .option("kafka.bootstrap.servers", config.bootstrapServers())
                .option("subscribe", config.topic())
                .option("startingOffsets", "earliest")
                .option("maxOffsetsPerTrigger", String.valueOf(config.maxOffsetsPerTrigger()))
                .load();
    }

    /** What a plain query's name (and its table's and checkpoint's) adds for KPI table {@code t}: nothing for a pipeline of one table. */
    static String querySuffix(Pipeline p, Pipeline.KpiTable t) {
        return p.tables().size() == 1 ? "" : "-" + t.name();
    }

    /** The pipeline's events as JSON, in its columns' names and types. */
    static StructType eventSchema(TidemarkConfig config) {
        StructType schema = new StructType();
        for (Pipeline.Column c : config.pipeline().events().columns()) {
            schema = schema.add(c.name(), c.type());
        }
        return schema;
    }

    /**
     * The plain job, as a user would write it: per KPI table, a streaming aggregation of Spark's own
     * (its window, dimensions and WHERE; each measure as the pipeline file writes it). Checkpoints
     * {@code work/checkpoint[-table]}, tables {@code work/kpi[-table]} (no suffix for a pipeline of one table).
     */
    static Map<String, StreamingQuery> plainJobs(SparkSession spark, TidemarkConfig config, Path work) throws Exception {
        Pipeline p = config.pipeline();
        Map<String, StreamingQuery> out = new LinkedHashMap<>();
        for (Pipeline.KpiTable t : p.tables()) {
            Dataset<Row> events = kafka(spark, config)
                    .select(from_json(col("value").cast("string"), eventSchema(config)).as("e"))
                    .select("e.*")
                    .withWatermark(p.events().eventTime(), p.events().lateness().toSeconds() + " seconds");
            if (t.where() != null) {
                events = events.where(t.where());
            }
            List<Column> keys = new ArrayList<>(List.of(org.apache.spark.sql.functions.window(col(p.events().eventTime()),
                    t.window().size().toSeconds() + " seconds", t.window().slide().toSeconds() + " seconds")));
            t.dimensions().forEach(d -> keys.add(col(d.name())));
            List<Column> measures = t.measures().stream().map(m -> expr(m.written()).as(m.name())).toList();
            String suffix = querySuffix(p, t);
            out.put(suffix, events.groupBy(keys.toArray(Column[]::new))
                    .agg(measures.get(0), measures.subList(1, measures.size()).toArray(Column[]::new))
                    .writeStream().format("delta").outputMode("append")
                    .option("checkpointLocation", work.resolve("checkpoint" + suffix).toString())
                    .trigger(Trigger.AvailableNow())
                    .start(work.resolve("kpi" + suffix).toString()));
        }
        return out;
    }

    /**
     * The do-it-yourself bronze layer: every record appended as it arrives, parsed fields, message
     * text and Kafka coordinates, partitioned by event date. Checkpoint {@code work/bronze-checkpoint},
     * table {@code work/bronze}.
     */
    static StreamingQuery bronzeJob(SparkSession spark, TidemarkConfig config, Path work) throws Exception {
        Pipeline p = config.pipeline();
        List<Column> fields = new ArrayList<>();
        p.events().columns().forEach(c -> fields.add(col("e." + c.name())));
        fields.addAll(List.of(col("payload"), col("kafka_topic"), col("kafka_partition"), col("kafka_offset"), col("kafka_timestamp"),
                to_date(col("e." + p.events().eventTime())).as("event_date")));
        return kafka(spark, config)
                .select(from_json(col("value").cast("string"), eventSchema(config)).as("e"),
                        col("value").cast("string").as("payload"),
                        col("topic").as("kafka_topic"),
                        col("partition").as("kafka_partition"),
                        col("offset").as("kafka_offset"),
                        col("timestamp").as("kafka_timestamp"))
                .select(fields.toArray(Column[]::new))
                .writeStream().format("delta").outputMode("append")
                .partitionBy("event_date")
                .option("checkpointLocation", work.resolve("bronze-checkpoint").toString())
                .trigger(Trigger.AvailableNow())
                .start(work.resolve("bronze").toString());
    }
}
