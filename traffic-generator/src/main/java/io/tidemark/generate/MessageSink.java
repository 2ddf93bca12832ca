package io.tidemark.generate;

/** Where generated messages go: Kafka in production ({@link KafkaTrafficProducer}), a list in tests. */
public interface MessageSink {

    /**
     * Sends one message (may be asynchronous).
     *
     * @throws RuntimeException when the message cannot be sent, or an earlier asynchronous send failed
     */
    void send(String topic, GeneratedMessage message);

    /** Blocks until everything sent so far is delivered; throws if any of it failed. */
    default void flush() {
    }
}
