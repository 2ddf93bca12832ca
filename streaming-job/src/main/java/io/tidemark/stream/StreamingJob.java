package io.tidemark.stream;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeoutException;

import org.apache.hadoop.conf.Configuration;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.DataStreamReader;
import org.apache.spark.sql.streaming.StreamingQuery;
import org.apache.spark.sql.streaming.Trigger;
import org.slf4j.LoggerFactory;

import io.tidemark.lakehouse.JobMain;
import io.tidemark.lakehouse.Lakehouse;
import io.tidemark.lakehouse.ObjectStorage;
import io.tidemark.lakehouse.QueryDefinition;
import io.tidemark.lakehouse.RequestRefusedException;
import io.tidemark.lakehouse.SchemaRegistry;
import io.tidemark.lakehouse.SparkSessions;
import io.tidemark.lakehouse.StorageCheck;
import io.tidemark.lakehouse.StorageCheck.StorageUnavailableException;
import io.tidemark.lakehouse.TidemarkConfig;
import io.tidemark.output.OutputPublisher;
import io.tidemark.pipeline.Measure;
import io.tidemark.pipeline.Pipeline;

/**
 * The speed layer: one stateless streaming query, Kafka to {@link MicroBatchWriter}. No Spark
 * state store: the KPIs live in Delta, so a restart needs only the checkpoint's offsets.
 *
 * <p>Runs under {@code spark-submit --class io.tidemark.stream.StreamingJob} with settings as
 * {@code key=value} arguments (see {@link TidemarkConfig.Key}), or through {@code tidemark stream}.
 */
public final class StreamingJob {

    private final SparkSession spark;
    private final TidemarkConfig config;
    private final MicroBatchWriter writer;
    private final List<StreamLease> leases = new ArrayList<>();
    private StreamMetrics metrics;
    /** The Kafka output of the KPI tables that declare one; null when none does. */
    private OutputPublisher output;

    public StreamingJob(SparkSession spark, TidemarkConfig config, MicroBatchWriter.BatchListener listener) {
        this.spark = spark;
        this.config = config;
        this.writer = new MicroBatchWriter(config, listener);
    }

    /** Reads the topic as Spark's Kafka source does, with backpressure and the pass-through client options. */
    public Dataset<Row> source() {
        DataStreamReader r = spark.readStream().format("kafka")
                .option("kafka.bootstrap.servers", config.bootstrapServers())
                .option("subscribe", config.topic())
                .option("startingOffsets", config.startingOffsets())
                .option("failOnDataLoss", String.valueOf(config.failOnDataLoss()));
        if (config.maxOffsetsPerTrigger() > 0) {
            r = r.option("maxOffsetsPerTrigger", String.valueOf(config.maxOffsetsPerTrigger()));
        }
        for (Map.Entry<String, String> e : config.kafkaOptions().entrySet()) {
            r = r.option("kafka." + e.getKey(), e.getValue());
        }
        return r.load();
    }

    /** Starts the query: continuous at the trigger interval, or draining what is there and stopping. */
    public StreamingQuery start(boolean availableNow) throws TimeoutException {
        checkBeforeStart();
        takeLeases();
        startMetrics();
        prepareOutput();
        prepare(spark, config); // the lease is held: no other stream commits meanwhile
        startOutput();
        ObjectStorage.applyCheckpointManager(spark.conf(), config.checkpointUri());
        Trigger trigger = availableNow ? Trigger.AvailableNow() : Trigger.ProcessingTime(config.trigger().toMillis());
        StreamingQuery query = source().writeStream()
                .queryName("tidemark-stream")
                .option("checkpointLocation", config.checkpointUri())
                .trigger(trigger)
                .foreachBatch(writer)
                .start();
        if (metrics != null) {
            metrics.follow(spark, query.id(), Lakehouse.of(config));
        }
        return query;
    }

    /**
     * What the writer's batches need before the first one: the tables, the query definition recorded
     * in the checkpoint and lakehouse, and the session's write settings. {@link #start} calls it with
     * the leases held; a test that drives the writer directly ({@code BatchDriver}) calls it first.
     */
    public static void prepare(SparkSession spark, TidemarkConfig config) {
        Lakehouse lakehouse = Lakehouse.of(config);
        lakehouse.createAndRegister(spark);
        lakehouse.applyDeclaredProperties(spark);
        QueryDefinition.record(spark, config);
        // The batch is cached once and read by four writers; compressing the cache costs more than it saves here.
        spark.conf().set("spark.sql.inMemoryColumnarStorage.compressed", "false");
        // raw_events.payload holds the message text, unique per record: a Parquet dictionary for it is
        // built and then abandoned on every file, and its min/max statistics compare every value. Both
        // cost CPU on each append and serve no query (bench/RESULTS.md).
        spark.conf().set("parquet.enable.dictionary#payload", "false");
        spark.conf().set("parquet.column.statistics.enabled#payload", "false");
        // Nearly unique per record as well (the offset, the event time): a dictionary is attempted, then abandoned, on every file.
        spark.conf().set("parquet.enable.dictionary#kafka_offset", "false");
        spark.conf().set("parquet.enable.dictionary#" + lakehouse.pipeline().events().eventTime(), "false");
        // A KPI row's sketch (HLL, KLL) is bytes of its own: no dictionary to build, no min/max to compare; nobody filters on them.
        for (Pipeline.KpiTable t : lakehouse.pipeline().tables()) {
            t.measures().stream().filter(Measure::sketched).forEach(m -> {
                spark.conf().set("parquet.enable.dictionary#" + m.sketch(), "false");
                spark.conf().set("parquet.column.statistics.enabled#" + m.sketch(), "false");
            });
        }
        // The KPI rewrite replaces the open windows with rows built from the same windows it names in
        // its replaceWhere predicate: Delta's check that every new row matches the predicate is a Spark
        // job per batch that cannot fail here.
        spark.conf().set("spark.databricks.delta.replaceWhere.constraintCheck.enabled", "false");
        // A micro-batch touches a few event dates: write each task's rows to one open file per date
        // instead of sorting the whole batch by date first (Spark falls back to the sort past 8 dates).
        spark.conf().set("spark.sql.maxConcurrentOutputFileWriters", "8");
    }

    /** The metrics endpoint ({@code metrics.port}, 0 = none), once the leases are held: a refused start never binds the port. */
    private void startMetrics() {
        try {
            metrics = StreamMetrics.start(config);
        } catch (RuntimeException e) {
            close();
            throw e;
        }
        writer.reportingTo(metrics);
    }

    /**
     * The KPI tables' Kafka output topics, created or checked before any table is: a topic that cannot
     * serve (not compacted, broker unreachable) refuses the start with nothing written.
     */
    private void prepareOutput() {
        Pipeline pipeline = config.pipeline();
        output = OutputPublisher.of(Lakehouse.of(config), pipeline, config.bootstrapServers()).orElse(null);
        if (output == null) {
            return;
        }
        try {
            output.prepareTopics();
        } catch (RuntimeException e) {
            output = null;
            close();
            throw e;
        }
    }

    /**
     * The Kafka output, publishing in the background from now on: first what committed before this
     * start and was not published (a crash's leftovers), then each batch.
     */
    private void startOutput() {
        if (output == null) {
            return;
        }
        output.start(spark);
        writer.publishingTo(output);
        if (metrics != null) {
            metrics.publishing(output);
        }
    }

    /** The port of this stream's metrics endpoint, if it has one. */
    public Optional<Integer> metricsPort() {
        return Optional.ofNullable(metrics).map(StreamMetrics::port);
    }

    /**
     * What must hold before Kafka is read: both paths writable (else {@link StorageUnavailableException}),
     * and the checkpoint and lakehouse written with this query definition (else
     * {@link io.tidemark.lakehouse.IncompatibleQueryException}, checked first: a refused start creates nothing).
     * Writes nothing but the two directories and a deleted probe file.
     */
    public void checkBeforeStart() {
        QueryDefinition.verify(spark, config, StreamCheckpoint.pendingBatch(config.checkpointUri(), spark.sparkContext().hadoopConfiguration()));
        StorageCheck.requireWritable(config.lakehouseUri(), TidemarkConfig.Key.LAKEHOUSE.name, spark.sparkContext().hadoopConfiguration());
        StorageCheck.requireWritable(config.checkpointUri(), TidemarkConfig.Key.CHECKPOINT.name, spark.sparkContext().hadoopConfiguration());
        Pipeline pipeline = config.pipeline();
        if (pipeline.events().format().equals("avro")) {
            // Down or mistyped at start is an error; down later makes the batches wait for it (SchemaRegistry).
            new SchemaRegistry(pipeline.events().schemaRegistry(), EventDecoder.REGISTRY_WAIT).unreachable().ifPresent(why -> {
                throw new RequestRefusedException(why + ": start the registry, or correct schema_registry in "
                        + pipeline.file());
            });
        }
    }

    /**
     * One stream per lakehouse and per checkpoint ({@link StreamLease}): refused at once, before
     * anything is written, while another live stream holds either.
     */
    private void takeLeases() {
        String app = spark.sparkContext().applicationId();
        Configuration hadoop = spark.sparkContext().hadoopConfiguration();
        try {
            leases.add(StreamLease.acquire(config.lakehouseUri(), "the lakehouse " + config.lakehouseUri(), app, config.leaseTimeout(), hadoop));
            leases.add(StreamLease.acquire(config.checkpointUri(), "the checkpoint " + config.checkpointUri(), app, config.leaseTimeout(), hadoop));
        } catch (RuntimeException e) {
            close();
            throw e;
        }
        writer.holding(leases);
    }

    /** Stops the writer, closes the metrics endpoint and gives the leases back. */
    public void close() {
        writer.close();
        if (output != null) {
            // What the last batches committed goes out before the leases are given back.
            output.stop(spark);
            output = null;
        }
        if (metrics != null) {
            metrics.close();
            metrics = null;
        }
        leases.forEach(StreamLease::close);
        leases.clear();
    }

    static final JobMain.Spec COMMAND_LINE = JobMain.Spec.of("stream", """
            Usage: spark-submit --class io.tidemark.stream.StreamingJob tidemark-spark-jobs.jar [--available-now] [key=value ...]
            The speed layer: read the topic, write raw_events, late_events, dead_letter, the KPI tables and stream_progress each
            micro-batch, until stopped.
              --available-now   read what the topic holds now, then stop
              key=value         a setting, e.g. lakehouse=/data/lakehouse; settings:
            """).flags("--available-now");

    /** Entry point for spark-submit ({@link JobMain}): exit 2 on bad input or settings that do not fit the checkpoint, 1 on a failure. */
    public static void main(String[] args) throws Exception {
        // Bad settings (arguments, Spark's conf, environment, file): one line, exit 2, nothing started.
        JobMain.Arguments a = JobMain.parseOrExit(COMMAND_LINE, args);
        TidemarkConfig config = a.config();
        try {
            run(config, a.has("--available-now"));
        } catch (Throwable t) {
            Optional<StreamFailure> clear = StreamFailure.explain(t, config);
            if (clear.isEmpty()) {
                throw t;
            }
            LoggerFactory.getLogger(StreamingJob.class).debug("the stream failed", t);
            if (System.getenv("TIDEMARK_DEBUG") != null) {
                t.printStackTrace();
            }
            // Last, after Spark's own output: the line an operator (or a scheduler's log tail) sees.
            throw JobMain.exit(COMMAND_LINE.command(), clear.get().exit(), clear.get().line());
        }
    }

    private static void run(TidemarkConfig config, boolean availableNow) throws Exception {
        SparkSession spark = SparkSessions.create(config, "tidemark-stream");
        StreamingJob job = new StreamingJob(spark, config, null);
        StreamingQuery q = job.start(availableNow);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            try {
                q.stop();
            } catch (TimeoutException e) {
                // stopping anyway
            }
        }));
        try {
            // A failed query: Spark has logged the trace already (MicroBatchExecution, ERROR); main says what to do.
            q.awaitTermination();
        } finally {
            job.close();
        }
    }
}
