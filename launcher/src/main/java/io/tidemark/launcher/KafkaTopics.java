package io.tidemark.launcher;

import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;

import io.tidemark.broker.Topics;
import io.tidemark.lakehouse.Errors;

/** The few Kafka admin questions the launcher asks: does the topic exist, where do its partitions end. */
final class KafkaTopics implements AutoCloseable {

    /** Kafka did not answer in time, or refused: the broker is down, unreachable or misconfigured. */
    static final class Unavailable extends RuntimeException {
        private static final long serialVersionUID = 1L;

        Unavailable(String message, Throwable cause) {
            super(message, cause);
        }
    }

    private final String bootstrap;
    private final Duration timeout;
    private final Admin admin;

    /**
     * @param clientOptions the {@code kafka.option.*} pass-through settings (security and the like)
     */
    KafkaTopics(String bootstrap, Map<String, String> clientOptions, Duration timeout) {
        this.bootstrap = bootstrap;
        this.timeout = timeout;
        Map<String, Object> config = new HashMap<>(clientOptions);
        config.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        config.put(AdminClientConfig.CLIENT_ID_CONFIG, "tidemark-launcher");
        config.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, (int) timeout.toMillis());
        config.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, (int) timeout.toMillis());
        config.put(AdminClientConfig.RECONNECT_BACKOFF_MAX_MS_CONFIG, 500);
        this.admin = Admin.create(config);
    }

    /** Number of partitions, or empty if the topic does not exist. */
    Optional<Integer> partitions(String topic) {
        try {
            TopicDescription d = admin.describeTopics(List.of(topic)).allTopicNames()
                    .get(timeout.toMillis() + 1000, TimeUnit.MILLISECONDS).get(topic);
            return Optional.of(d.partitions().size());
        } catch (ExecutionException e) {
            if (e.getCause() instanceof UnknownTopicOrPartitionException) {
                return Optional.empty();
            }
            throw unavailable("describe topic " + topic, e.getCause());
        } catch (TimeoutException | InterruptedException e) {
            throw unavailable("describe topic " + topic, e);
        }
    }

    /** Creates the topic (replication 1) unless it exists. @return true if created */
    boolean create(String topic, int partitions) {
        return Topics.createIfAbsent(admin, topic, partitions, timeout.plusSeconds(1), this::unavailable);
    }

    /** Offset of the next record to be written, per partition (sorted); empty if the topic does not exist. */
    Map<Integer, Long> endOffsets(String topic) {
        return offsets(topic, OffsetSpec.latest());
    }

    /** First offset still in the log, per partition. */
    Map<Integer, Long> startOffsets(String topic) {
        return offsets(topic, OffsetSpec.earliest());
    }

    /** Records in the topic now: end minus start offsets, summed. */
    long records(String topic) {
        Map<Integer, Long> end = endOffsets(topic);
        Map<Integer, Long> start = startOffsets(topic);
        long n = 0;
        for (Map.Entry<Integer, Long> e : end.entrySet()) {
            n += e.getValue() - start.getOrDefault(e.getKey(), 0L);
        }
        return n;
    }

    private Map<Integer, Long> offsets(String topic, OffsetSpec spec) {
        Optional<Integer> n = partitions(topic);
        if (n.isEmpty()) {
            return Map.of();
        }
        Map<TopicPartition, OffsetSpec> request = new HashMap<>();
        for (int p = 0; p < n.get(); p++) {
            request.put(new TopicPartition(topic, p), spec);
        }
        try {
            Map<Integer, Long> result = new TreeMap<>();
            admin.listOffsets(request).all().get(timeout.toMillis() + 1000, TimeUnit.MILLISECONDS)
                    .forEach((tp, info) -> result.put(tp.partition(), info.offset()));
            return result;
        } catch (ExecutionException e) {
            throw unavailable("list offsets of " + topic, e.getCause());
        } catch (TimeoutException | InterruptedException e) {
            throw unavailable("list offsets of " + topic, e);
        }
    }

    private Unavailable unavailable(String what, Throwable cause) {
        if (cause instanceof InterruptedException) {
            Thread.currentThread().interrupt();
        }
        String reason = cause == null ? "" : cause.getClass().getSimpleName()
                + (cause.getMessage() == null ? "" : ": " + Errors.firstLine(cause.getMessage()));
        return new Unavailable("Kafka at " + bootstrap + " did not " + what + " within " + timeout.toSeconds() + " s ("
                + reason + "); is the broker running? ('tidemark broker start', or set kafka.bootstrap-servers)", cause);
    }

    @Override
    public void close() {
        admin.close(Duration.ofSeconds(2));
    }
}
