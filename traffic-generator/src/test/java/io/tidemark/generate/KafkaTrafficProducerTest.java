package io.tidemark.generate;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.net.ServerSocket;
import java.util.Map;
import java.util.Properties;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class KafkaTrafficProducerTest {

    @Test
    void producerDefaultsAreDurableAndFitOversizedMessages() {
        Properties p = KafkaTrafficProducer.producerProperties("127.0.0.1:9092", Map.of());
        assertThat(p).containsEntry("bootstrap.servers", "127.0.0.1:9092")
                .containsEntry("acks", "all")
                .containsEntry("enable.idempotence", "true")
                .containsEntry("linger.ms", "10")
                .containsEntry("batch.size", "262144")
                .containsEntry("compression.type", "lz4")
                .containsEntry("max.request.size", "2097152");
        assertThat(Integer.parseInt(p.getProperty("max.request.size"))).isGreaterThan(TrafficSpec.MAX_OVERSIZED_BYTES + 1024);
    }

    @Test
    void extraPropertiesOverrideDefaultsButNotTheSerializers() {
        Properties p = KafkaTrafficProducer.producerProperties("b:1",
                Map.of("security.protocol", "SASL_SSL", "compression.type", "none", "linger.ms", 20));
        assertThat(p).containsEntry("security.protocol", "SASL_SSL").containsEntry("compression.type", "none")
                .containsEntry("linger.ms", "20");
        assertThatThrownBy(() -> new KafkaTrafficProducer("b:1", Map.of("value.serializer", "x")))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("value.serializer cannot be overridden");
        assertThatThrownBy(() -> new KafkaTrafficProducer(" ", Map.of()))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("bootstrap servers must be given");
    }

    @Test
    void noBrokerFailsWithAClearMessage() throws IOException {
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        }
        KafkaTrafficProducer producer = new KafkaTrafficProducer("127.0.0.1:" + port, Map.of("max.block.ms", 1000));
        TrafficSpec spec = TrafficSpec.builder().count(10).build();
        assertThatThrownBy(() -> producer.produce(spec, null))
                .isInstanceOf(TrafficProductionException.class)
                .hasMessageContaining("producing to topic 'network-events' at '127.0.0.1:" + port + "' failed after")
                .hasMessageContaining("(0 acknowledged)")
                .hasMessageContaining("TimeoutException: Topic network-events not present in metadata")
                .hasMessageContaining("Check that the broker is running");
    }

    @Test
    void unresolvableBootstrapFailsAtCreation() {
        KafkaTrafficProducer producer = new KafkaTrafficProducer("no-such-host.invalid:9092", Map.of());
        assertThatThrownBy(() -> producer.produce(TrafficSpec.builder().count(1).build(), null))
                .isInstanceOf(TrafficProductionException.class)
                .hasMessageContaining("cannot create a Kafka producer for bootstrap servers 'no-such-host.invalid:9092'");
    }
}
