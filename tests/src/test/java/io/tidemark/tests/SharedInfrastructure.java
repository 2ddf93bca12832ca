package io.tidemark.tests;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.UUID;

import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.extension.ExtensionContext;

import io.tidemark.broker.BrokerSettings;
import io.tidemark.broker.LocalKafkaBroker;
import io.tidemark.lakehouse.SparkSessions;
import io.tidemark.lakehouse.TidemarkConfig;

/**
 * One real Kafka broker and one Spark session for the whole test run (both take seconds to start),
 * closed when the run ends. Each test gets its own topic, lakehouse and checkpoint.
 */
final class SharedInfrastructure implements ExtensionContext.Store.CloseableResource, AutoCloseable {
    private static SharedInfrastructure instance;

    final LocalKafkaBroker broker;
    final SparkSession spark;
    final Path work;

    private SharedInfrastructure() throws Exception {
        work = Path.of(System.getProperty("tidemark.test.work", "target/work")).toAbsolutePath();
        Files.createDirectories(work);
        Path brokerDir = work.resolve("broker-" + UUID.randomUUID().toString().substring(0, 8));
        broker = LocalKafkaBroker.start(BrokerSettings.of(brokerDir));
        spark = SparkSessions.create(TidemarkConfig.defaults(), "tidemark-tests");
    }

    static synchronized SharedInfrastructure get(ExtensionContext context) throws Exception {
        if (instance == null) {
            instance = new SharedInfrastructure();
            context.getRoot().getStore(ExtensionContext.Namespace.GLOBAL).put("tidemark-infrastructure", instance);
        }
        return instance;
    }

    /** A fresh directory for one test. */
    Path newDir(String name) throws Exception {
        Path d = work.resolve(name + "-" + UUID.randomUUID().toString().substring(0, 8));
        Files.createDirectories(d);
        return d;
    }

    /** Configuration for one test: its own topic, lakehouse and checkpoint on the shared broker. */
    TidemarkConfig.Builder config(Path dir, String topic) {
        return TidemarkConfig.builder()
                .set(TidemarkConfig.Key.KAFKA_BOOTSTRAP, broker.bootstrapServers())
                .set(TidemarkConfig.Key.TOPIC, topic)
                .set(TidemarkConfig.Key.LAKEHOUSE, dir.resolve("lakehouse").toString())
                .set(TidemarkConfig.Key.CHECKPOINT, dir.resolve("checkpoint").toString())
                // Tests run streams side by side and one after another in this JVM: no endpoint unless a test asks for one.
                .set(TidemarkConfig.Key.METRICS_PORT, "0");
    }

    @Override
    public void close() {
        spark.stop();
        broker.stop();
    }
}
