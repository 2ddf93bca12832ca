package io.tidemark.stream;

import java.util.Map;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.apache.spark.SparkThrowable;

/**
 * Why the stream stopped, in one line a user can act on: the failures Tidemark knows are mapped
 * here, once, for both entry points ({@code tidemark stream} and {@link StreamingJob#main}). Spark's
 * own trace belongs in the log, not on the terminal.
 *
 * <p>Kafka data loss (stream.fail-on-data-loss=true, the default). Spark 4.2's Kafka source raises
 * {@code KafkaIllegalStateException} with condition {@code KAFKA_DATA_LOSS.<reason>}:
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
 * the batch, which caches it before any write), so nothing of that batch is written.
 */
public final class StreamFailure {
    private static final Pattern CONDITION = Pattern.compile("\\[(KAFKA_DATA_LOSS\\.[A-Z_]+)\\]");

    private StreamFailure() {
    }

    /** The one-line explanation of a stream failure, or empty when it is none Tidemark knows. */
    public static Optional<String> describe(Throwable failure) {
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
                    + ") expected by the checkpoint are no longer in Kafka (removed by retention or deleteRecords before the stream read them)";
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
