package io.tidemark.launcher;

import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.logging.log4j.Level;
import org.apache.logging.log4j.core.config.Configurator;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.StreamingQuery;
import org.apache.spark.sql.streaming.StreamingQueryException;

import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import io.tidemark.lakehouse.Errors;
import io.tidemark.lakehouse.StreamProgress;
import io.tidemark.lakehouse.TidemarkConfig;
import io.tidemark.lakehouse.TidemarkConfig.Key;
import io.tidemark.stream.MicroBatchWriter;
import io.tidemark.stream.StreamFailure;
import io.tidemark.stream.StreamingJob;

/** {@code tidemark stream}: the speed layer, in this JVM, until stopped or drained. */
@Command(name = "stream", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"Run the speed layer: Kafka to the Delta tables, one line per committed micro-batch.",
                "Stops gracefully on SIGTERM or Ctrl-C: the running batch finishes first (a second Ctrl-C cuts it short; "
                        + "it is then replayed from the checkpoint on the next start: exactly once either way)."})
final class StreamCommand extends TidemarkCommand {

    /** How long a stop request waits for the running batch to finish before cutting it short. */
    static final Duration STOP_PATIENCE = Duration.ofMinutes(3);

    @Option(names = "--available-now", description = "Drain what the topic holds now, then stop.")
    boolean availableNow;

    @Option(names = "--trigger", paramLabel = "DURATION", description = "Micro-batch interval, e.g. 10s (setting stream.trigger).")
    String trigger;

    @Option(names = "--starting-offsets", paramLabel = "WHERE",
            description = "Where a new checkpoint starts: earliest, latest or Spark's JSON offsets (setting stream.starting-offsets).")
    String startingOffsets;

    @Option(names = "--max-records-per-batch", paramLabel = "N",
            description = "At most N Kafka records per micro-batch; 0 = unlimited (setting stream.max-offsets-per-trigger).")
    Long maxRecordsPerBatch;

    @Override
    public Integer call() throws Exception {
        Map<String, String> flags = new HashMap<>();
        flags.put(Key.TRIGGER.name, trigger);
        flags.put(Key.STARTING_OFFSETS.name, startingOffsets);
        flags.put(Key.MAX_OFFSETS_PER_TRIGGER.name, maxRecordsPerBatch == null ? null : String.valueOf(maxRecordsPerBatch));
        TidemarkConfig config = config(flags);
        say("stream: %s topic %s -> %s (checkpoint %s)", config.bootstrapServers(), config.topic(), config.lakehouseUri(), config.checkpointUri());
        say("%s, %s, lateness %s, window %s; starting Spark %s ...",
                availableNow ? "draining what is there (available now)" : "trigger every " + Formats.duration(config.trigger()),
                config.maxOffsetsPerTrigger() == 0 ? "no batch limit" : "at most " + Formats.count(config.maxOffsetsPerTrigger()) + " records per batch",
                Formats.duration(config.lateness()), Formats.duration(config.window()), config.sparkMaster());
        SparkSession spark = spark(config, "tidemark-stream");
        AtomicLong batches = new AtomicLong();
        AtomicLong records = new AtomicLong();
        StreamingJob job = new StreamingJob(spark, config, new MicroBatchWriter.BatchListener() {
            @Override
            public void batchCommitted(StreamProgress progress) {
                batches.incrementAndGet();
                records.addAndGet(progress.recordsIn());
                say(BatchLine.of(progress));
            }

            @Override
            public void gapsRecorded(long batchId, List<String> gaps) {
                for (String g : gaps) {
                    say("batch %d: Kafka data loss, continuing (stream.fail-on-data-loss=false): %s; recorded in stream_gaps", batchId, g);
                }
            }
        });
        // Spark logs a failed query's trace at ERROR; it goes to a file instead (saveTrace), the terminal gets one line.
        quietQueryErrors();
        AtomicReference<StreamingQuery> running = new AtomicReference<>();
        GracefulStop stop = GracefulStop.install(() -> {
            StreamingQuery q = running.get();
            if (q == null) {
                System.exit(130); // still starting: nothing to finish
            }
            say("stopping after the current batch (Ctrl-C again stops at once; that batch is then replayed from the checkpoint) ...");
            GracefulStop.stopBetweenBatches(q, STOP_PATIENCE);
        });
        StreamingQuery query;
        try {
            query = job.start(availableNow);
        } catch (RuntimeException e) {
            throw StreamFailure.explain(e, config).<RuntimeException>map(f -> f).orElse(e);
        }
        running.set(query);
        // Any other way the JVM goes down: stop the query before Spark stops its context.
        Object hook = SparkShutdown.register(() -> {
            if (query.isActive()) {
                try {
                    query.stop();
                } catch (Exception e) {
                    // stopping anyway
                }
            }
        });
        say("stream running (query %s)%s%s", query.id(),
                job.metricsPort().map(p -> "; metrics at http://" + config.metricsHost() + ":" + p + "/metrics").orElse(""),
                availableNow ? "" : "; Ctrl-C or SIGTERM stops it");
        try {
            query.awaitTermination();
        } catch (StreamingQueryException e) {
            if (!stop.requested()) {
                Optional<StreamFailure> clear = StreamFailure.explain(e, config);
                if (clear.isPresent()) {
                    // One line on the terminal (Tidemark's handler prints it whole); Spark's trace in a file it names.
                    String trace = saveTrace(e);
                    SparkShutdown.unregister(hook);
                    job.close();
                    release(spark);
                    throw clear.get().withTrace(trace);
                }
                throw new IllegalStateException("the streaming query failed: " + Errors.firstLine(e.getMessage()),
                        e.getCause() != null ? e.getCause() : e);
            }
        }
        SparkShutdown.unregister(hook);
        job.close();
        say("stream %s: %s batches, %s records", stop.requested() ? "stopped" : "done", Formats.count(batches.get()),
                Formats.count(records.get()));
        release(spark);
        return Tidemark.OK;
    }

    private static void quietQueryErrors() {
        try {
            // A task's failure (e.g. Kafka offsets out of range) is also the query's: the file has it.
            for (String logger : List.of("org.apache.spark.executor.Executor", "org.apache.spark.scheduler.TaskSetManager",
                    "org.apache.spark.sql.execution.streaming.runtime.MicroBatchExecution",
                    "org.apache.spark.sql.execution.streaming.runtime.StreamExecution")) {
                Configurator.setLevel(logger, Level.OFF);
            }
        } catch (Throwable e) {
            // logging as configured
        }
    }

    /** Spark's trace of a failed query, in a file: the terminal gets the one-line reason. */
    static String saveTrace(Throwable e) {
        try {
            Path file = Files.createTempFile("tidemark-stream-failure-", ".log");
            try (PrintWriter w = new PrintWriter(Files.newBufferedWriter(file))) {
                e.printStackTrace(w);
            }
            return file.toString();
        } catch (IOException | RuntimeException io) {
            return "not saved: " + io.getMessage();
        }
    }
}
