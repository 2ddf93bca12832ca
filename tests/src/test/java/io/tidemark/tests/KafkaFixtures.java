package io.tidemark.tests;

import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.List;
import java.util.Properties;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/** Sends crafted records with explicit Kafka timestamps, in order, to one partition (0 unless given). */
final class KafkaFixtures {
    private KafkaFixtures() {
    }

    record Message(String value, Instant kafkaTimestamp) {
    }

    static void send(String bootstrap, String topic, List<Message> messages) throws Exception {
        send(bootstrap, topic, 0, messages);
    }

    /** A message as bytes (Avro), or null for a tombstone. */
    record Raw(byte[] value, Instant kafkaTimestamp) {
    }

    static void send(String bootstrap, String topic, int partition, List<Message> messages) throws Exception {
        sendRaw(bootstrap, topic, partition, messages.stream()
                .map(m -> new Raw(m.value() == null ? null : m.value().getBytes(StandardCharsets.UTF_8), m.kafkaTimestamp())).toList());
    }

    static void sendRaw(String bootstrap, String topic, int partition, List<Raw> messages) throws Exception {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
        p.put(ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, "1");
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer())) {
            // In order: idempotent, one request in flight; every send is awaited before returning.
            List<java.util.concurrent.Future<?>> sent = new java.util.ArrayList<>();
            for (Raw m : messages) {
                sent.add(producer.send(new ProducerRecord<>(topic, partition, m.kafkaTimestamp().toEpochMilli(), null, m.value())));
            }
            for (java.util.concurrent.Future<?> f : sent) {
                f.get();
            }
        }
    }

    static String event(String subscriber, String cell, String eventTs, double volume) {
        return "{\"subscriber_id\":\"" + subscriber + "\",\"cell_site_id\":\"" + cell + "\",\"event_ts\":\"" + eventTs
                + "\",\"volume_gb\":" + volume + "}";
    }
}
