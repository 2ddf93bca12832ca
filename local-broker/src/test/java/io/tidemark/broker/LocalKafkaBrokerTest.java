package io.tidemark.broker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;

/**
 * One data directory through a broker's life: start, produce/consume, status, double start, stop,
 * restart (data kept), kill -9, restart (recovered). Three broker starts in total; the steps depend
 * on each other and run in order.
 */
// Starts broker JVMs: not a ./run-tests --fast test (it excludes the tag "slow").
@Tag("slow")
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class LocalKafkaBrokerTest {

  private static final String TOPIC = "events";

  @TempDir static Path dataDir;
  private LocalKafkaBroker broker;
  private String firstBootstrap;

  @BeforeAll
  void startBroker() {
    broker = LocalKafkaBroker.start(BrokerSettings.of(dataDir));
    firstBootstrap = broker.bootstrapServers();
  }

  @AfterAll
  void stopBroker() {
    if (broker != null) {
      broker.close();
    }
    LocalKafkaBroker.stopRunning(dataDir); // belt and braces: never leak a broker JVM
  }

  /** The broker's life, step after step: each step starts from the broker as the one before left it. */
  @TestFactory
  java.util.stream.Stream<DynamicTest> brokerLifecycle() {
    return java.util.stream.Stream.of(
        DynamicTest.dynamicTest("producesAndConsumesOnATwoPartitionTopic", this::producesAndConsumesOnATwoPartitionTopic),
        DynamicTest.dynamicTest("statusReportsRunning", this::statusReportsRunning),
        DynamicTest.dynamicTest("secondStartOnSameDataDirIsRejected", this::secondStartOnSameDataDirIsRejected),
        DynamicTest.dynamicTest("stopThenRestartKeepsPortsTopicAndRecords", this::stopThenRestartKeepsPortsTopicAndRecords),
        DynamicTest.dynamicTest("killThenRestartRecovers", this::killThenRestartRecovers),
        DynamicTest.dynamicTest("stopRunningStopsABrokerFromItsDataDir", this::stopRunningStopsABrokerFromItsDataDir));
  }

  private void producesAndConsumesOnATwoPartitionTopic() throws Exception {
    assertThat(broker.createTopic(TOPIC, 2)).isTrue();
    assertThat(broker.createTopic(TOPIC, 2)).as("idempotent").isFalse();

    produce(Map.of("k1", "v1", "k2", "v2", "k3", "v3"));

    assertThat(consumeAll(3)).containsExactlyInAnyOrderEntriesOf(Map.of("k1", "v1", "k2", "v2", "k3", "v3"));
  }

  private void statusReportsRunning() throws Exception {
    BrokerStatus status = LocalKafkaBroker.status(dataDir);
    assertThat(status.running()).isTrue();
    assertThat(status.pid()).isEqualTo(broker.pid());
    assertThat(status.bootstrapServers()).isEqualTo(broker.bootstrapServers()).startsWith("127.0.0.1:");
    assertThat(Files.readString(dataDir.resolve(LocalKafkaBroker.PID_FILE)).trim()).isEqualTo(Long.toString(broker.pid()));
  }

  private void secondStartOnSameDataDirIsRejected() {
    assertThatThrownBy(() -> LocalKafkaBroker.start(BrokerSettings.of(dataDir)))
        .isInstanceOf(BrokerException.class)
        .hasMessageContaining("already running")
        .hasMessageContaining("pid " + broker.pid())
        .satisfies(e -> assertThat(((BrokerException) e).reason()).isEqualTo(BrokerException.Reason.ALREADY_RUNNING));
    assertThat(broker.isAlive()).isTrue();
  }

  private void stopThenRestartKeepsPortsTopicAndRecords() throws Exception {
    long pid = broker.pid();
    broker.stop();
    assertThat(ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false)).isFalse();
    BrokerStatus stopped = LocalKafkaBroker.status(dataDir);
    assertThat(stopped.running()).isFalse();
    assertThat(stopped.processAlive()).isFalse();
    assertThat(dataDir.resolve(LocalKafkaBroker.PID_FILE)).doesNotExist();

    broker = LocalKafkaBroker.start(BrokerSettings.of(dataDir));
    assertThat(broker.bootstrapServers()).isEqualTo(firstBootstrap);
    assertThat(broker.createTopic(TOPIC, 2)).as("topic kept").isFalse();
    assertThat(consumeAll(3)).containsExactlyInAnyOrderEntriesOf(Map.of("k1", "v1", "k2", "v2", "k3", "v3"));
  }

  private void killThenRestartRecovers() throws Exception {
    long pid = broker.pid();
    broker.kill();
    assertThat(ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false)).isFalse();
    assertThat(LocalKafkaBroker.status(dataDir).running()).isFalse();

    broker = LocalKafkaBroker.start(BrokerSettings.of(dataDir)); // stale pid file from the kill
    assertThat(broker.bootstrapServers()).isEqualTo(firstBootstrap);
    produce(Map.of("k4", "v4"));
    assertThat(consumeAll(4))
        .containsExactlyInAnyOrderEntriesOf(Map.of("k1", "v1", "k2", "v2", "k3", "v3", "k4", "v4"));

    assertThat(broker.deleteTopic(TOPIC)).isTrue();
    assertThat(broker.deleteTopic(TOPIC)).isFalse();
  }

  private void stopRunningStopsABrokerFromItsDataDir() {
    assertThat(LocalKafkaBroker.stopRunning(dataDir)).isTrue();
    assertThat(broker.isAlive()).isFalse();
    assertThat(LocalKafkaBroker.status(dataDir).running()).isFalse();
    assertThat(dataDir.resolve(LocalKafkaBroker.PID_FILE)).doesNotExist();
    assertThat(LocalKafkaBroker.stopRunning(dataDir)).isFalse();
  }

  private void produce(Map<String, String> records) throws Exception {
    Properties config = new Properties();
    config.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers());
    config.put(ProducerConfig.ACKS_CONFIG, "all");
    try (var producer = new KafkaProducer<>(config, new StringSerializer(), new StringSerializer())) {
      for (var record : records.entrySet()) {
        producer.send(new ProducerRecord<>(TOPIC, record.getKey(), record.getValue())).get();
      }
    }
  }

  /** Reads both partitions from the beginning until {@code expected} records arrived (or 30 s). */
  private Map<String, String> consumeAll(int expected) {
    Properties config = new Properties();
    config.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers());
    config.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
    Map<String, String> seen = new LinkedHashMap<>();
    List<ConsumerRecord<String, String>> all = new ArrayList<>();
    try (var consumer = new KafkaConsumer<>(config, new StringDeserializer(), new StringDeserializer())) {
      List<TopicPartition> partitions = List.of(new TopicPartition(TOPIC, 0), new TopicPartition(TOPIC, 1));
      consumer.assign(partitions);
      consumer.seekToBeginning(partitions);
      long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
      while (all.size() < expected && System.nanoTime() < deadline) {
        consumer.poll(Duration.ofMillis(200)).forEach(all::add);
      }
      consumer.poll(Duration.ofMillis(200)).forEach(all::add); // nothing extra may follow
    }
    all.forEach(r -> seen.put(r.key(), r.value()));
    assertThat(all).hasSize(expected);
    return seen;
  }
}
