package io.tidemark.broker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Startup failures that are detected before any broker JVM is launched. */
// Launches a broker JVM and reads kafka-runtime's broker.classpath (written by the full build only):
// not a ./run-tests --fast test (it excludes the tag "slow").
@Tag("slow")
class BrokerStartupErrorsTest {

  @TempDir Path dataDir;

  @Test
  void missingClasspathFileGivesAClearError() {
    Path missing = dataDir.resolve("nowhere/broker.classpath");
    assertThatThrownBy(() -> LocalKafkaBroker.start(BrokerSettings.of(dataDir).withClasspathFile(missing)))
        .isInstanceOf(BrokerException.class)
        .hasMessageContaining(missing.toString())
        .hasMessageContaining("not found")
        .hasMessageContaining("mvn -q install -DskipTests")
        .satisfies(e -> assertThat(((BrokerException) e).reason()).isEqualTo(BrokerException.Reason.CLASSPATH_MISSING));
  }

  @Test
  void portInUseGivesAClearError() throws Exception {
    try (ServerSocket taken = new ServerSocket(0, 1, InetAddress.getByName("127.0.0.1"))) {
      assertThatThrownBy(() -> LocalKafkaBroker.start(BrokerSettings.of(dataDir).withPort(taken.getLocalPort())))
          .isInstanceOf(BrokerException.class)
          .hasMessageContaining("127.0.0.1:" + taken.getLocalPort() + " is already in use")
          .satisfies(e -> assertThat(((BrokerException) e).reason()).isEqualTo(BrokerException.Reason.PORT_IN_USE));
    }
    assertThat(dataDir.resolve(LocalKafkaBroker.PID_FILE)).doesNotExist();
  }

  @Test
  void brokerThatCannotStartReportsTheLogTail() {
    BrokerSettings invalid = BrokerSettings.of(dataDir).withOverrides(Map.of("log.retention.hours", "not-a-number"));
    assertThatThrownBy(() -> LocalKafkaBroker.start(invalid))
        .isInstanceOf(BrokerException.class)
        .hasMessageContaining("Last lines")
        .hasMessageContaining("log.retention.hours")
        .satisfies(e -> assertThat(((BrokerException) e).reason()).isEqualTo(BrokerException.Reason.PROCESS_DIED));
    assertThat(dataDir.resolve(LocalKafkaBroker.PID_FILE)).doesNotExist();
  }

  @Test
  void statusOfAnUnusedDirectoryIsNotRunning() {
    BrokerStatus status = LocalKafkaBroker.status(dataDir);
    assertThat(status.running()).isFalse();
    assertThat(status.pid()).isEqualTo(-1);
    assertThat(status.bootstrapServers()).isNull();
    assertThat(LocalKafkaBroker.stopRunning(dataDir)).isFalse();
  }

  @Test
  void defaultClasspathFileComesFromTheSystemProperty() {
    // Surefire sets tidemark.broker.classpath for this module (see local-broker/pom.xml).
    assertThat(BrokerSettings.defaultClasspathFile()).isRegularFile();
    assertThat(Files.exists(BrokerSettings.defaultClasspathFile())).isTrue();
  }
}
