package io.tidemark.stream;

import java.io.IOException;
import java.nio.file.FileStore;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.apache.hadoop.fs.FSError;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.common.TopicPartition;
import org.apache.spark.SparkThrowable;

import io.tidemark.lakehouse.ExitCode;
import io.tidemark.lakehouse.IncompatibleQueryException;
import io.tidemark.lakehouse.RequestRefusedException;
import io.tidemark.lakehouse.StorageCheck;
import io.tidemark.lakehouse.StorageCheck.StorageUnavailableException;
import io.tidemark.lakehouse.TidemarkConfig;

/**
 * A failure of the stream that an operator can act on, as one line naming the cause and the way to
 * recover; the original exception is the cause, for the log (DEBUG) or {@code TIDEMARK_DEBUG}.
 *
 * <p>One static method per family of causes maps a Throwable (anywhere in its cause chain, or in
 * the text Spark quotes when a task failed) to a StreamFailure, or to empty when the failure is not
 * of that family: unrelated errors are never swallowed, the entry points rethrow them.
 *
 * <p>The one place both entry points ({@code tidemark stream} and {@link StreamingJob#main}) learn
 * why the stream stopped; each prints {@link #line()}, the launcher with the file holding Spark's
 * trace ({@link #withTrace(String)}).
 */
public final class StreamFailure extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /** Exit status: 2 = the settings are wrong for this checkpoint/lakehouse, 1 = the run failed. */
    private final ExitCode exitCode;
    /** Where Spark's trace of the failure was saved, or null. */
    private final String traceFile;

    private StreamFailure(String message, ExitCode exitCode, Throwable cause) {
        this(message, exitCode, cause, null);
    }

    private StreamFailure(String message, ExitCode exitCode, Throwable cause, String traceFile) {
        super(message, cause);
        this.exitCode = exitCode;
        this.traceFile = traceFile;
    }

    public ExitCode exit() {
        return exitCode;
    }

    /** {@link #exit()}'s number. */
    public int exitCode() {
        return exitCode.code();
    }

    /** The same failure, its line naming the file that holds Spark's trace. */
    public StreamFailure withTrace(String file) {
        return new StreamFailure(getMessage(), exitCode, getCause(), file);
    }

    /**
     * What the operator sees after "tidemark stream: ", whole on one line: a failed run (exit 1) says
     * "failed: ", settings to fix (exit 2) do not; then the cause and the way to recover.
     */
    public String line() {
        return (exitCode == ExitCode.FAILED ? "failed: " : "") + getMessage() + (traceFile == null ? "" : " (Spark's trace: " + traceFile + ")");
    }

    /** Every family in turn; empty when none applies. */
    public static Optional<StreamFailure> explain(Throwable t, TidemarkConfig config) {
        if (t instanceof StreamFailure f) {
            return Optional.of(f);
        }
        return incompatibleDefinition(t).or(() -> heldElsewhere(t)).or(() -> metricsEndpoint(t)).or(() -> refused(t))
                .or(() -> kafkaDataLoss(t, config)).or(() -> storage(t, config));
    }

    /**
     * A start refused before anything was written, for input to correct (a schema registry that is not
     * there, a Kafka output topic without compaction): exit 2, its one line.
     */
    public static Optional<StreamFailure> refused(Throwable t) {
        for (Throwable c = t; c != null; c = next(c)) {
            if (c instanceof RequestRefusedException e) {
                return Optional.of(new StreamFailure(e.getMessage(), ExitCode.BAD_INPUT, t));
            }
        }
        return Optional.empty();
    }

    /** The metrics endpoint cannot listen ({@link StreamMetrics}): exit 2, nothing was read or written. */
    public static Optional<StreamFailure> metricsEndpoint(Throwable t) {
        for (Throwable c = t; c != null; c = next(c)) {
            if (c instanceof StreamMetrics.EndpointUnavailableException e) {
                return Optional.of(new StreamFailure(e.getMessage(), ExitCode.BAD_INPUT, t));
            }
        }
        return Optional.empty();
    }

    /** Another stream holds the lakehouse or the checkpoint ({@link StreamLease}): exit 2, nothing was written. */
    public static Optional<StreamFailure> heldElsewhere(Throwable t) {
        for (Throwable c = t; c != null; c = next(c)) {
            if (c instanceof StreamLease.HeldElsewhereException e) {
                return Optional.of(new StreamFailure(e.getMessage(), ExitCode.BAD_INPUT, t));
            }
        }
        return Optional.empty();
    }

    /** The query definition changed incompatibly ({@link io.tidemark.lakehouse.QueryDefinition}). */
    public static Optional<StreamFailure> incompatibleDefinition(Throwable t) {
        for (Throwable c = t; c != null; c = next(c)) {
            if (c instanceof IncompatibleQueryException e) {
                return Optional.of(new StreamFailure(e.getMessage(), ExitCode.BAD_INPUT, t));
            }
        }
        return Optional.empty();
    }

    /**
     * The lakehouse or checkpoint cannot be written: disk full, read-only, access denied, a path
     * through a regular file. At start-up the {@link StorageCheck} says which path; in a batch the
     * cause is an I/O error inside a Spark task (Hadoop's local file system wraps it in an FSError).
     */
    public static Optional<StreamFailure> storage(Throwable t, TidemarkConfig config) {
        for (Throwable c = t; c != null; c = next(c)) {
            if (c instanceof StorageUnavailableException e) {
                return Optional.of(new StreamFailure(e.getMessage(), ExitCode.FAILED, t));
            }
        }
        StorageCheck.Cause cause = null;
        String file = null;
        for (Throwable c = t; c != null; c = next(c)) {
            if (!(c instanceof IOException || c instanceof FSError)) {
                continue;
            }
            StorageCheck.Cause k = StorageCheck.Cause.of(c);
            if (k != StorageCheck.Cause.OTHER) {
                cause = k;
                if (c instanceof FileSystemException f) {
                    file = f.getFile();
                }
                break;
            }
        }
        if (cause == null) {
            // A failed task reaches the driver as a SparkException quoting the executor's error.
            for (Throwable c = t; c != null && cause == null; c = next(c)) {
                String m = String.valueOf(c.getMessage());
                if (m.contains("IOException") || m.contains("FSError") || m.contains("FileSystemException")) {
                    StorageCheck.Cause k = StorageCheck.Cause.of(new IOException(m));
                    cause = k == StorageCheck.Cause.OTHER ? null : k;
                }
            }
        }
        if (cause == null) {
            return Optional.empty();
        }
        // Only a failure of our own paths: an unreadable keystore or a full Spark scratch disk is someone else's story.
        String text = chainText(t);
        boolean checkpoint = (file != null && file.startsWith(config.checkpointUri())) || text.contains(config.checkpointUri());
        boolean lakehouse = (file != null && file.startsWith(config.lakehouseUri())) || text.contains(config.lakehouseUri());
        if (!checkpoint && !lakehouse && !(cause == StorageCheck.Cause.NO_SPACE && nearlyFull(config))) {
            return Optional.empty();
        }
        // A full disk is told by the free space when the two paths live on different file systems: the
        // paths quoted in the error text are not reliable (a failed Delta log commit names neither, and
        // the query's own message can quote the checkpoint), as the fresh-clone CI run showed.
        String byFreeSpace = cause == StorageCheck.Cause.NO_SPACE ? culprit(config, cause) : "";
        String where = byFreeSpace.contains(" free now") ? byFreeSpace
                : checkpoint && !lakehouse ? "the checkpoint " + config.checkpointUri()
                : lakehouse && !checkpoint ? "the lakehouse " + config.lakehouseUri()
                : culprit(config, cause);
        if (cause == StorageCheck.Cause.NO_SPACE && !where.contains(" free now") && !where.contains(" or ")) {
            long free = usable(where.startsWith("the checkpoint") ? config.checkpointUri() : config.lakehouseUri());
            where = free >= 0 ? where + " (" + mb(free) + " free now)" : where;
        }
        if (file != null) {
            where = where + ", file " + file;
        }
        String message = cause.what + " writing " + where + "; " + cause.hint + ", then start the stream again: nothing is lost, "
                + "the checkpoint did not advance past the failed batch and the restart replays it exactly once";
        return Optional.of(new StreamFailure(message, ExitCode.FAILED, t));
    }

    private static String chainText(Throwable t) {
        StringBuilder sb = new StringBuilder();
        for (Throwable c = t; c != null; c = next(c)) {
            sb.append(c.getMessage()).append('\n');
        }
        return sb.toString();
    }

    /** The lakehouse's or the checkpoint's file system has less than 16 MB left. */
    private static boolean nearlyFull(TidemarkConfig config) {
        long lh = usable(config.lakehouseUri());
        long cp = usable(config.checkpointUri());
        return (lh >= 0 && lh < 16_000_000) || (cp >= 0 && cp < 16_000_000);
    }

    /** Which of the two paths it was: for a full disk the one with (almost) no space left. */
    private static String culprit(TidemarkConfig config, StorageCheck.Cause cause) {
        String lakehouse = "the lakehouse " + config.lakehouseUri();
        String checkpoint = "the checkpoint " + config.checkpointUri();
        if (cause == StorageCheck.Cause.NO_SPACE) {
            long lh = usable(config.lakehouseUri());
            long cp = usable(config.checkpointUri());
            if (lh >= 0 && cp >= 0 && lh != cp) {
                return lh < cp ? lakehouse + " (" + mb(lh) + " free now)" : checkpoint + " (" + mb(cp) + " free now)";
            }
        }
        return lakehouse + " or " + checkpoint;
    }

    private static String mb(long bytes) {
        return String.format("%.1f MB", bytes / 1e6);
    }

    /** Usable bytes on the local file system holding {@code uri}, -1 when unknown or not local. */
    private static long usable(String uri) {
        if (uri.contains("://")) {
            return -1;
        }
        try {
            Path p = Path.of(uri);
            while (p != null && !Files.exists(p)) {
                p = p.getParent();
            }
            if (p == null) {
                return -1;
            }
            FileStore store = Files.getFileStore(p);
            return store.getUsableSpace();
        } catch (Exception e) {
            return -1;
        }
    }

    private static Throwable next(Throwable c) {
        return c.getCause() == c ? null : c.getCause();
    }

    // ---------------------------------------------------------------- Kafka data loss

    private static final Pattern CONDITION = Pattern.compile("\\[(KAFKA_DATA_LOSS\\.[A-Z_]+)\\]");

    /**
     * Kafka removed or replaced records the checkpoint had not read (stream.fail-on-data-loss=true, the
     * default). Spark 4.2's Kafka source raises {@code KafkaIllegalStateException} with condition
     * {@code KAFKA_DATA_LOSS.<reason>}:
     * <ul>
     *   <li>{@code PARTITION_OFFSET_CHANGED} (topicPartition, prevOffset, newOffset), on the driver while
     *       planning a batch: the partition now ends before the checkpoint's offset, the topic was deleted
     *       and recreated (or truncated);</li>
     *   <li>{@code PARTITIONS_DELETED} (partitions): partitions of the checkpoint are gone;</li>
     *   <li>{@code COULD_NOT_READ_OFFSET_RANGE} (startOffset, endOffset, topicPartition) and
     *       {@code START_OFFSET_RESET} (topicPartition, offset, fetchedOffset), in a task reading the
     *       batch: retention or deleteRecords removed records the checkpoint had not read yet. The task
     *       failure reaches the driver wrapped in a SparkException whose cause chain still holds it.</li>
     * </ul>
     * In every case the failure comes before any table commits (the planning step, or the first read of
     * the batch, which caches it before any write), so nothing of that batch is written. For offsets out
     * of range the line also says (asking Kafka, 5 s at most) which offsets the partition holds now, so
     * it tells how many records are gone.
     */
    public static Optional<StreamFailure> kafkaDataLoss(Throwable failure, TidemarkConfig config) {
        return describe(failure, config).map(line -> new StreamFailure(line, ExitCode.FAILED, failure));
    }

    /** The data-loss line, with the offsets Kafka holds now when records were removed. */
    private static Optional<String> describe(Throwable failure, TidemarkConfig config) {
        Optional<String> line = condition(failure);
        if (line.isEmpty()) {
            return line;
        }
        for (Throwable t = failure; t != null; t = t.getCause() == t ? null : t.getCause()) {
            if (t instanceof SparkThrowable st && "KAFKA_DATA_LOSS.COULD_NOT_READ_OFFSET_RANGE".equals(st.getCondition())) {
                String available = available(config, st.getMessageParameters().get("topicPartition"), st.getMessageParameters().get("startOffset"));
                if (available != null) {
                    return Optional.of(line.get().replace(READ_BEFORE, READ_BEFORE + available));
                }
            }
        }
        return line;
    }

    private static final String READ_BEFORE = "before the stream read them)";

    /** "; Kafka now holds offsets [e, l) of it: n records are lost", or null when Kafka does not say. */
    private static String available(TidemarkConfig config, String topicPartition, String startOffset) {
        if (config == null || topicPartition == null || startOffset == null || topicPartition.lastIndexOf('-') < 0) {
            return null;
        }
        try {
            int dash = topicPartition.lastIndexOf('-');
            TopicPartition tp = new TopicPartition(topicPartition.substring(0, dash), Integer.parseInt(topicPartition.substring(dash + 1)));
            Map<String, Object> props = new HashMap<>(config.kafkaOptions());
            props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, config.bootstrapServers());
            props.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 5000);
            props.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, 5000);
            try (Admin admin = Admin.create(props)) {
                long earliest = admin.listOffsets(Map.of(tp, OffsetSpec.earliest())).partitionResult(tp).get(5, TimeUnit.SECONDS).offset();
                long latest = admin.listOffsets(Map.of(tp, OffsetSpec.latest())).partitionResult(tp).get(5, TimeUnit.SECONDS).offset();
                long lost = earliest - Long.parseLong(startOffset);
                return "; Kafka now holds offsets [" + earliest + ", " + latest + ") of it" + (lost > 0 ? ": " + lost + " records are lost" : "");
            }
        } catch (Exception e) {
            return null;
        }
    }

    /** The line for the KAFKA_DATA_LOSS condition in the cause chain (or quoted in its text), empty when there is none. */
    private static Optional<String> condition(Throwable failure) {
        for (Throwable t = failure; t != null; t = t.getCause() == t ? null : t.getCause()) {
            if (t instanceof SparkThrowable st && st.getCondition() != null && st.getCondition().startsWith("KAFKA_DATA_LOSS")) {
                return Optional.of(dataLoss(st.getCondition(), st.getMessageParameters()));
            }
        }
        // The task's exception did not survive the trip to the driver: its condition is still in the message.
        for (Throwable t = failure; t != null; t = t.getCause() == t ? null : t.getCause()) {
            Matcher m = CONDITION.matcher(String.valueOf(t.getMessage()));
            if (m.find()) {
                return Optional.of(dataLoss(m.group(1), Map.of()));
            }
        }
        return Optional.empty();
    }

    static final String RECOVER = "Nothing was written for that batch. To recover: restore the data to the topic and restart; "
            + "or restart with stream.fail-on-data-loss=false to continue past the gap and record it in the stream_gaps table; "
            + "or start over with a new checkpoint and a new lakehouse.";

    private static String dataLoss(String condition, Map<String, String> p) {
        String reason = condition.substring(condition.indexOf('.') + 1);
        String what = switch (reason) {
            case "PARTITION_OFFSET_CHANGED" -> "partition " + p.getOrDefault("topicPartition", "?") + " now ends at offset "
                    + p.getOrDefault("newOffset", "?") + " but the checkpoint expected to continue at offset " + p.getOrDefault("prevOffset", "?")
                    + ": the topic was deleted and recreated (or truncated), and the records from there on are not the ones the checkpoint refers to";
            case "PARTITIONS_DELETED", "PARTITIONS_DELETED_AND_GROUP_ID_CONFIG_PRESENT" -> "partitions " + p.getOrDefault("partitions", "?")
                    + " of the checkpoint no longer exist: the topic was deleted (and maybe recreated with fewer partitions)";
            case "COULD_NOT_READ_OFFSET_RANGE" -> "partition " + p.getOrDefault("topicPartition", "?") + ": offsets ["
                    + p.getOrDefault("startOffset", "?") + ", " + p.getOrDefault("endOffset", "?")
                    + ") expected by the checkpoint are no longer in Kafka (removed by retention or deleteRecords " + READ_BEFORE;
            case "START_OFFSET_RESET" -> "partition " + p.getOrDefault("topicPartition", "?") + ": the checkpoint expected offset "
                    + p.getOrDefault("offset", "?") + " but the earliest offset still in Kafka is " + p.getOrDefault("fetchedOffset", "?")
                    + " (records removed by retention or deleteRecords before the stream read them)";
            case "INITIAL_OFFSET_NOT_FOUND_FOR_PARTITIONS" -> "the initial offsets of partitions " + p.getOrDefault("partitions", "?")
                    + " cannot be found: they may have been deleted";
            case "ADDED_PARTITION_DOES_NOT_START_FROM_OFFSET_ZERO" -> "the new partition " + p.getOrDefault("topicPartition", "?")
                    + " starts at offset " + p.getOrDefault("startOffset", "?") + " instead of 0: its first records are gone";
            default -> "Spark reports " + condition;
        };
        return "Kafka data loss: " + what + ". " + RECOVER;
    }
}
