package io.tidemark.generate;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.serialization.ByteArraySerializer;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;

/**
 * Sends a {@link TrafficSpec}'s messages to Kafka: a thin {@link MessageSink} over a
 * {@link KafkaProducer} (idempotent, acks=all, lz4, 256 KiB batches), driven by a {@link TrafficRunner}.
 * Records carry no explicit timestamp, so the broker sees CreateTime = send time (the ingest time
 * the stream compares event_ts with).
 */
public final class KafkaTrafficProducer {

    /** Room for {@link GeneratedMessage.Kind#OVERSIZED} messages (at most {@link TrafficSpec#MAX_OVERSIZED_BYTES}). */
    public static final int MAX_REQUEST_SIZE_BYTES = 2 * 1024 * 1024;
    private static final Duration CLOSE_TIMEOUT = Duration.ofSeconds(30);

    private final String bootstrapServers;
    private final Map<String, Object> extraProperties;
    private final TrafficRunner runner = new TrafficRunner();

    /**
     * @param bootstrapServers e.g. {@code 127.0.0.1:9092}
     * @param extraProperties  producer properties applied over the defaults (security settings, client.id...)
     */
    public KafkaTrafficProducer(String bootstrapServers, Map<String, ?> extraProperties) {
        if (bootstrapServers == null || bootstrapServers.isBlank()) {
            throw new IllegalArgumentException("bootstrap servers must be given, e.g. 127.0.0.1:9092; got "
                    + (bootstrapServers == null ? "null" : "'" + bootstrapServers + "'"));
        }
        this.bootstrapServers = bootstrapServers;
        this.extraProperties = new LinkedHashMap<>(extraProperties == null ? Map.of() : extraProperties);
        for (String fixed : new String[] {ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG}) {
            if (this.extraProperties.containsKey(fixed)) {
                throw new IllegalArgumentException(fixed + " cannot be overridden: the generator sends raw bytes");
            }
        }
    }

    /** The producer configuration used: defaults, then {@code extraProperties} over them. */
    public static Properties producerProperties(String bootstrapServers, Map<String, ?> extraProperties) {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers);
        p.put(ProducerConfig.CLIENT_ID_CONFIG, "tidemark-generator");
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
        p.put(ProducerConfig.LINGER_MS_CONFIG, "10");
        p.put(ProducerConfig.BATCH_SIZE_CONFIG, Integer.toString(256 * 1024));
        p.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, "lz4");
        p.put(ProducerConfig.MAX_REQUEST_SIZE_CONFIG, Integer.toString(MAX_REQUEST_SIZE_BYTES));
        p.put(ProducerConfig.BUFFER_MEMORY_CONFIG, Long.toString(64L * 1024 * 1024));
        // Fail within 30 s, not the default 60, when the broker or topic is missing.
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "30000");
        if (extraProperties != null) {
            extraProperties.forEach((k, v) -> p.put(k, Objects.toString(v)));
        }
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        return p;
    }

    /**
     * Generates and sends the spec's messages, paced if {@code ratePerSecond > 0}, then flushes and closes.
     *
     * @param progress called about once a second on this thread; may be null
     * @return counts per kind, bytes, elapsed time, valid event-time range; every message acknowledged
     * @throws TrafficProductionException when the producer cannot be created or a send fails
     */
    public GenerationReport produce(TrafficSpec spec, Consumer<Progress> progress) {
        KafkaProducer<byte[], byte[]> producer;
        try {
            producer = new KafkaProducer<>(producerProperties(bootstrapServers, extraProperties));
        } catch (KafkaException e) {
            throw new TrafficProductionException("cannot create a Kafka producer for bootstrap servers '"
                    + bootstrapServers + "': " + rootMessage(e) + ". Check the address and the extra producer properties", e);
        }
        KafkaSink sink = new KafkaSink(producer);
        boolean failed = true;
        try {
            GenerationReport report = runner.run(spec, sink, progress);
            failed = false;
            return report;
        } catch (RuntimeException e) {
            throw new TrafficProductionException("producing to topic '" + spec.topic() + "' at '" + bootstrapServers
                    + "' failed after " + sink.sent.get() + " messages sent (" + sink.acknowledged.get() + " acknowledged): "
                    + rootMessage(e) + ". Check that the broker is running and reachable, and that the topic exists"
                    + " (or the broker auto-creates topics)", e);
        } finally {
            producer.close(failed ? Duration.ZERO : CLOSE_TIMEOUT);
        }
    }

    /** Makes a running {@link #produce} stop after the current message, flush and return. Thread-safe. */
    public void requestStop() {
        runner.requestStop();
    }

    private static String rootMessage(Throwable e) {
        Throwable root = e;
        while (root.getCause() != null && root.getCause() != root) {
            root = root.getCause();
        }
        String first = e.getClass().getSimpleName() + ": " + e.getMessage();
        return root == e ? first : first + " (cause: " + root.getClass().getSimpleName() + ": " + root.getMessage() + ")";
    }

    private static final class KafkaSink implements MessageSink {
        private final KafkaProducer<byte[], byte[]> producer;
        private final AtomicReference<Exception> firstError = new AtomicReference<>();
        private final AtomicLong sent = new AtomicLong();
        private final AtomicLong acknowledged = new AtomicLong();

        KafkaSink(KafkaProducer<byte[], byte[]> producer) {
            this.producer = producer;
        }

        @Override
        public void send(String topic, GeneratedMessage message) {
            throwIfFailed();
            producer.send(new ProducerRecord<>(topic, message.key(), message.value()), (metadata, error) -> {
                if (error == null) {
                    acknowledged.incrementAndGet();
                } else {
                    firstError.compareAndSet(null, error);
                }
            });
            sent.incrementAndGet();
        }

        @Override
        public void flush() {
            producer.flush();
            throwIfFailed();
        }

        private void throwIfFailed() {
            Exception e = firstError.get();
            if (e != null) {
                throw new KafkaException("an asynchronous send failed", e);
            }
        }
    }
}
