package io.tidemark.stream;

import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.common.TopicPartition;
import org.apache.spark.SparkThrowable;

import io.tidemark.lakehouse.TidemarkConfig;

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

    /**
     * As {@link #describe(Throwable)}; for offsets out of range it also asks Kafka (5 s at most) which
     * offsets the partition holds now, so the line says how many records are gone.
     */
    public static Optional<String> describe(Throwable failure, TidemarkConfig config) {
        Optional<String> line = describe(failure);
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
