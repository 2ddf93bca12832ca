package io.tidemark.stream;

import java.io.IOException;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.function.DoubleSupplier;

import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.SourceProgress;
import org.apache.spark.sql.streaming.StreamingQueryListener;
import org.apache.spark.sql.streaming.StreamingQueryProgress;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import io.prometheus.metrics.core.metrics.Counter;
import io.prometheus.metrics.core.metrics.Gauge;
import io.prometheus.metrics.core.metrics.GaugeWithCallback;
import io.prometheus.metrics.core.metrics.Histogram;
import io.prometheus.metrics.exporter.httpserver.HTTPServer;
import io.prometheus.metrics.model.registry.PrometheusRegistry;

import io.tidemark.lakehouse.FigureSource;
import io.tidemark.lakehouse.Lakehouse;
import io.tidemark.lakehouse.Lakehouse.Table;
import io.tidemark.lakehouse.PartitionClock;
import io.tidemark.lakehouse.StreamProgress;
import io.tidemark.lakehouse.TidemarkConfig;
import io.tidemark.late.PartitionSkew;
import io.tidemark.output.OutputPublisher;

/**
 * The running stream's Prometheus endpoint ({@code GET /metrics} on {@code metrics.host:metrics.port}).
 *
 * <p>Two feeds: {@link MicroBatchWriter} reports each batch once its stream_progress row is
 * committed (record counts by outcome and invalid reason, watermark, freshness, Tidemark's own
 * stages), and a {@link StreamingQueryListener} reports what only Spark knows (input and processed
 * rates, its stages of the trigger, the Kafka offsets behind the latest per partition). Counters
 * start at zero with the process, as Prometheus expects of a restart; the tables stay the record
 * of what the stream did. Other modules add figures the stream does not make through
 * {@link FigureSource} (the operations module: the last reconcile's drift), read in the background
 * for as long as the endpoint follows the query. Every name is documented in docs/observability.md.
 */
public final class StreamMetrics implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(StreamMetrics.class);

    /** The stream's metrics endpoint cannot start (port in use, unknown host): the stream does not start either. */
    public static final class EndpointUnavailableException extends IllegalStateException {
        private static final long serialVersionUID = 1L;

        EndpointUnavailableException(String message, Throwable cause) {
            super(message, cause);
        }
    }

    private final PrometheusRegistry registry = new PrometheusRegistry();
    private final Gauge up;
    private final Counter batches;
    private final Counter records;
    private final Counter invalidRecords;
    private final Counter kpiRows;
    private final Counter replayedBatches;
    private final Gauge watermark;
    private final Histogram batchDuration;
    private final Gauge stageSeconds;
    private final Gauge inputRate;
    private final Gauge processedRate;
    private final Gauge kafkaLag;
    private final Gauge partitionEventTime;
    private final Gauge partitionBehind;
    /** Figures known only once a batch reported them; NaN = not yet, and the sample is left out. */
    private volatile double maxEventSeconds = Double.NaN;
    private volatile double lastBatchIdValue = Double.NaN;
    private volatile double lastBatchEndSeconds = Double.NaN;
    private volatile double freshnessSeconds = Double.NaN;
    private final String topic;
    /** The figures other modules contribute ({@link FigureSource#load()}). */
    private final List<FigureSource> sources = FigureSource.load();
    /** The watermark in force for the next batch, epoch seconds; NaN until a batch has set one. */
    private volatile double watermarkSeconds = Double.NaN;
    private volatile UUID queryId;
    private HTTPServer server;
    private SparkSession listening;
    private final StreamingQueryListener listener = new Listener();

    StreamMetrics(String topic) {
        this.topic = topic;
        up = Gauge.builder().name("tidemark_stream_up")
                .help("1 while the streaming query runs, 0 once it stopped or failed (the endpoint lives as long as the process).")
                .register(registry);
        batches = Counter.builder().name("tidemark_stream_batches_total")
                .help("Micro-batches committed to every table by this process.").register(registry);
        records = Counter.builder().name("tidemark_stream_records_total")
                .help("Kafka records of the committed micro-batches, by outcome: on_time (in the KPI tables), late (a window of it had closed: late_events), invalid (dead_letter).")
                .labelNames("outcome").register(registry);
        invalidRecords = Counter.builder().name("tidemark_stream_invalid_records_total")
                .help("Invalid records written to dead_letter, by reason code.").labelNames("reason").register(registry);
        kpiRows = Counter.builder().name("tidemark_stream_kpi_rows_written_total")
                .help("Open-window KPI rows the stream wrote (each batch rewrites the windows it touched).").register(registry);
        replayedBatches = Counter.builder().name("tidemark_stream_replayed_batches_total")
                .help("Batches Spark replayed after a restart in which some tables already held the batch: their commits were skipped, the rest committed.")
                .register(registry);
        known("tidemark_stream_last_batch_id", "Id of the last micro-batch this process committed; absent before its first.",
                () -> lastBatchIdValue);
        known("tidemark_stream_last_batch_end_timestamp_seconds",
                "When the last micro-batch committed its stream_progress row (Unix time); absent before this process's first batch.",
                () -> lastBatchEndSeconds);
        watermark = Gauge.builder().name("tidemark_stream_watermark_timestamp_seconds")
                .help("The watermark in force for the next batch (Unix time): windows ending at or before it are final, days before its date are closed.")
                .register(registry);
        known("tidemark_stream_watermark_lag_seconds",
                "Wall clock minus the watermark in force, at scrape time: grows while the stream stalls or event time stops advancing.",
                () -> System.currentTimeMillis() / 1000.0 - watermarkSeconds);
        known("tidemark_stream_max_event_timestamp_seconds", "Newest valid event time the stream has seen (Unix time).", () -> maxEventSeconds);
        known("tidemark_stream_freshness_seconds", "The last batch's freshness, as in stream_progress: batch end minus the newest event time seen.",
                () -> freshnessSeconds);
        batchDuration = Histogram.builder().name("tidemark_stream_batch_duration_seconds")
                .help("Time of a micro-batch in Tidemark's writer, from the first read to the stream_progress commit.")
                .classicOnly().classicUpperBounds(0.25, 0.5, 1, 2, 5, 10, 30, 60, 120, 300).register(registry);
        stageSeconds = Gauge.builder().name("tidemark_stream_last_batch_stage_seconds")
                .help("The last batch's time per stage: Spark's (triggerExecution, latestOffset, getBatch, queryPlanning, addBatch, walCommit, "
                        + "commitOffsets) and the writer's share of addBatch (classify, write).")
                .labelNames("stage").register(registry);
        inputRate = Gauge.builder().name("tidemark_stream_input_records_per_second")
                .help("Spark's input rate of the last trigger: records arriving per second.").register(registry);
        processedRate = Gauge.builder().name("tidemark_stream_processed_records_per_second")
                .help("Spark's processing rate of the last trigger: records processed per second of batch time.").register(registry);
        kafkaLag = Gauge.builder().name("tidemark_stream_kafka_lag_records")
                .help("Records in the topic's partition behind the last batch's end offset, as of that batch's planning.")
                .labelNames("topic", "partition").register(registry);
        partitionEventTime = Gauge.builder().name("tidemark_stream_partition_event_time_seconds")
                .help("Per Kafka partition: its newest valid event time so far (Unix time), as recorded in stream_progress.partition_clocks.")
                .labelNames("partition").register(registry);
        partitionBehind = Gauge.builder().name("tidemark_stream_partition_behind_seconds")
                .help("Per Kafka partition: how far its newest valid event time trails the leading partition's. More than the lateness "
                        + "means its records are late for lagging under watermark.policy=spark, or hold windows open under min-partition.")
                .labelNames("partition").register(registry);
        for (FigureSource source : sources) {
            for (FigureSource.Figure f : source.figures()) {
                GaugeWithCallback.builder().name(f.name()).help(f.help()).labelNames(f.labelNames().toArray(String[]::new)).callback(cb ->
                        f.samples().get().forEach((labels, v) -> {
                            if (v != null && !Double.isNaN(v)) {
                                cb.call(v, labels.toArray(String[]::new));
                            }
                        })).register(registry);
            }
        }
    }

    /** A gauge whose sample is left out while {@code value} is NaN (not known yet), rather than a misleading 0. */
    private void known(String name, String help, DoubleSupplier value) {
        GaugeWithCallback.builder().name(name).help(help).callback(cb -> {
            double v = value.getAsDouble();
            if (!Double.isNaN(v)) {
                cb.call(v);
            }
        }).register(registry);
    }

    /**
     * Starts the endpoint of {@code config}, or returns null when {@code metrics.port} is 0.
     *
     * @throws EndpointUnavailableException when the port cannot be bound
     */
    public static StreamMetrics start(TidemarkConfig config) {
        int port = config.metricsPort();
        if (port == 0) {
            return null;
        }
        StreamMetrics m = new StreamMetrics(config.topic());
        String host = config.metricsHost();
        try {
            m.server = HTTPServer.builder().hostname(host).port(port).registry(m.registry).buildAndStart();
        } catch (IOException | RuntimeException e) {
            throw new EndpointUnavailableException("the metrics endpoint cannot listen on " + host + ":" + port + " (" + e.getMessage()
                    + "): another stream or program has the port. Set " + TidemarkConfig.Key.METRICS_PORT.name
                    + " to a free port, or to 0 for no endpoint.", e);
        }
        LOG.info("metrics at http://{}:{}/metrics", host, m.port());
        return m;
    }

    /** The port the endpoint listens on. */
    public int port() {
        return server.getPort();
    }

    /**
     * The KPI tables' Kafka output: per table, the Delta versions committed but not yet published as of
     * its last round, and whether that round failed. Read from what the rounds recorded, no I/O at scrape.
     */
    void publishing(OutputPublisher output) {
        GaugeWithCallback.builder().name("tidemark_kafka_output_lag_versions")
                .help("Per KPI table with Kafka output: Delta versions committed but not yet published to its topic, as of the last "
                        + "publishing round; absent until a round has read the progress.")
                .labelNames("table").callback(cb -> output.lastLag().forEach((t, lag) -> cb.call(lag, t))).register(registry);
        GaugeWithCallback.builder().name("tidemark_kafka_output_failing")
                .help("Per KPI table with Kafka output: 1 when its last publishing round failed (broker unreachable, topic refused), else 0; "
                        + "the commits wait in Delta and are published once a round succeeds.")
                .labelNames("table").callback(cb -> output.failing().forEach((t, f) -> cb.call(f ? 1 : 0, t))).register(registry);
    }

    /** Listens to Spark's progress of the query {@code id} (and of no other query of the session). */
    void follow(SparkSession spark, UUID id, Lakehouse lakehouse) {
        queryId = id;
        listening = spark;
        spark.streams().addListener(listener);
        up.set(1);
        sources.forEach(source -> source.watch(spark, lakehouse));
    }

    /** A micro-batch committed to every table; {@code progress} is its stream_progress row. */
    void batchCommitted(StreamProgress progress, Map<String, Long> invalidByReason, Set<Table> alreadyCommitted) {
        batches.inc();
        if (!alreadyCommitted.isEmpty()) {
            replayedBatches.inc();
        }
        records.labelValues("on_time").inc(progress.onTime());
        records.labelValues("late").inc(progress.late());
        records.labelValues("invalid").inc(progress.invalid());
        invalidByReason.forEach((reason, n) -> invalidRecords.labelValues(reason).inc(n));
        kpiRows.inc(progress.kpiRows());
        lastBatchIdValue = progress.batchId();
        lastBatchEndSeconds = seconds(progress.finishedAt());
        double w = seconds(progress.nextWatermark());
        watermark.set(w);
        watermarkSeconds = w > 0 ? w : Double.NaN; // 0: no event seen yet, no lag to speak of
        if (progress.maxEventTsSeen() != null) {
            maxEventSeconds = seconds(progress.maxEventTsSeen());
        }
        if (progress.freshnessMs() != null) {
            freshnessSeconds = progress.freshnessMs() / 1000.0;
        }
        Map<Integer, PartitionClock> clocks = progress.partitionClocks();
        PartitionSkew skew = PartitionSkew.of(clocks);
        if (skew != null) {
            clocks.forEach((partition, c) -> {
                partitionEventTime.labelValues(String.valueOf(partition)).set(c.maxEventMs() / 1000.0);
                partitionBehind.labelValues(String.valueOf(partition)).set(skew.behindByPartition().get(partition) / 1000.0);
            });
        }
        batchDuration.observe(progress.durationMs() / 1000.0);
        stageSeconds.labelValues("classify").set(progress.classifyMs() / 1000.0);
        stageSeconds.labelValues("write").set(progress.writeMs() / 1000.0);
    }

    private static double seconds(Instant t) {
        return t.toEpochMilli() / 1000.0;
    }

    private void progressed(StreamingQueryProgress p) {
        inputRate.set(finite(p.inputRowsPerSecond()));
        processedRate.set(finite(p.processedRowsPerSecond()));
        p.durationMs().forEach((stage, ms) -> stageSeconds.labelValues(stage).set(ms / 1000.0));
        for (SourceProgress s : p.sources()) {
            if (s.latestOffset() == null || s.endOffset() == null || !s.latestOffset().startsWith("{")) {
                continue;
            }
            Map<String, Map<Integer, Long>> latest = StreamCheckpoint.parseSourceOffsets(s.latestOffset(), "the source's latest offsets");
            Map<String, Map<Integer, Long>> end = StreamCheckpoint.parseSourceOffsets(s.endOffset(), "the batch's end offsets");
            latest.getOrDefault(topic, Map.of()).forEach((partition, offset) -> {
                long consumed = end.getOrDefault(topic, Map.of()).getOrDefault(partition, 0L);
                kafkaLag.labelValues(topic, String.valueOf(partition)).set(Math.max(0, offset - consumed));
            });
        }
    }

    private static double finite(double v) {
        return Double.isFinite(v) ? v : 0;
    }

    /** Stops listening and closes the endpoint. */
    @Override
    public void close() {
        up.set(0);
        sources.forEach(FigureSource::close);
        if (listening != null) {
            listening.streams().removeListener(listener);
            listening = null;
        }
        if (server != null) {
            server.close();
            server = null;
        }
    }

    private final class Listener extends StreamingQueryListener {
        @Override
        public void onQueryStarted(QueryStartedEvent event) {
        }

        @Override
        public void onQueryProgress(QueryProgressEvent event) {
            if (event.progress().id().equals(queryId)) {
                try {
                    progressed(event.progress());
                } catch (RuntimeException e) {
                    LOG.warn("metrics: cannot read the progress of batch {}: {}", event.progress().batchId(), e.toString());
                }
            }
        }

        @Override
        public void onQueryTerminated(QueryTerminatedEvent event) {
            if (event.id().equals(queryId)) {
                up.set(0);
            }
        }
    }
}
