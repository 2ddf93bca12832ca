package io.tidemark.broker;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.Objects;

/**
 * How to run a {@link LocalKafkaBroker}. Immutable; start from {@link #of(Path)} and adjust with the
 * {@code with...} methods.
 *
 * @param dataDir broker home: server.properties, broker.log, broker.pid and the Kafka log dir live here
 * @param port PLAINTEXT port on 127.0.0.1; 0 = the port persisted in dataDir, else a free one
 * @param controllerPort KRaft controller port on 127.0.0.1; 0 = persisted, else a free one
 * @param classpathFile file holding the broker's classpath (written by the kafka-runtime module)
 * @param heapMb maximum heap of the broker JVM (-Xmx); -Xms is min(256, heapMb)
 * @param startupTimeout how long to wait for {@code Admin.describeCluster()} to succeed
 * @param overrides extra server.properties entries, applied last (wins over the defaults)
 */
public record BrokerSettings(
    Path dataDir,
    int port,
    int controllerPort,
    Path classpathFile,
    int heapMb,
    Duration startupTimeout,
    Map<String, String> overrides) {

  /** System property naming the classpath file; surefire sets it for this module's tests. */
  public static final String CLASSPATH_PROPERTY = "tidemark.broker.classpath";

  /** Where the kafka-runtime module writes the classpath, relative to the project root. */
  public static final Path CLASSPATH_RELATIVE = Path.of("local-broker", "kafka-runtime", "target", "broker.classpath");

  public static final int DEFAULT_HEAP_MB = 512;
  public static final Duration DEFAULT_STARTUP_TIMEOUT = Duration.ofSeconds(60);

  public BrokerSettings {
    Objects.requireNonNull(dataDir, "dataDir");
    Objects.requireNonNull(classpathFile, "classpathFile");
    Objects.requireNonNull(startupTimeout, "startupTimeout");
    dataDir = dataDir.toAbsolutePath().normalize();
    classpathFile = classpathFile.toAbsolutePath().normalize();
    checkPort(port, "port");
    checkPort(controllerPort, "controllerPort");
    if (port != 0 && port == controllerPort) {
      throw new IllegalArgumentException("port and controllerPort must differ: " + port);
    }
    if (heapMb < 128) {
      throw new IllegalArgumentException("heapMb must be at least 128: " + heapMb);
    }
    if (startupTimeout.isNegative() || startupTimeout.isZero()) {
      throw new IllegalArgumentException("startupTimeout must be positive: " + startupTimeout);
    }
    overrides = Map.copyOf(overrides == null ? Map.of() : overrides);
  }

  /** Free (or persisted) ports, default classpath file, 512 MB heap, 60 s startup timeout. */
  public static BrokerSettings of(Path dataDir) {
    return new BrokerSettings(dataDir, 0, 0, defaultClasspathFile(), DEFAULT_HEAP_MB, DEFAULT_STARTUP_TIMEOUT, Map.of());
  }

  public BrokerSettings withPort(int port) {
    return new BrokerSettings(dataDir, port, controllerPort, classpathFile, heapMb, startupTimeout, overrides);
  }

  public BrokerSettings withControllerPort(int controllerPort) {
    return new BrokerSettings(dataDir, port, controllerPort, classpathFile, heapMb, startupTimeout, overrides);
  }

  public BrokerSettings withClasspathFile(Path classpathFile) {
    return new BrokerSettings(dataDir, port, controllerPort, classpathFile, heapMb, startupTimeout, overrides);
  }

  public BrokerSettings withHeapMb(int heapMb) {
    return new BrokerSettings(dataDir, port, controllerPort, classpathFile, heapMb, startupTimeout, overrides);
  }

  public BrokerSettings withStartupTimeout(Duration startupTimeout) {
    return new BrokerSettings(dataDir, port, controllerPort, classpathFile, heapMb, startupTimeout, overrides);
  }

  public BrokerSettings withOverrides(Map<String, String> overrides) {
    return new BrokerSettings(dataDir, port, controllerPort, classpathFile, heapMb, startupTimeout, overrides);
  }

  /**
   * The system property {@value #CLASSPATH_PROPERTY} if set; else
   * {@code local-broker/kafka-runtime/target/broker.classpath} under the working directory or the
   * nearest ancestor that has it (also {@code kafka-runtime/target/broker.classpath} when run from
   * local-broker itself); else the working-directory-relative path, which {@code start} reports as missing.
   */
  public static Path defaultClasspathFile() {
    String property = System.getProperty(CLASSPATH_PROPERTY);
    if (property != null && !property.isBlank()) {
      return Path.of(property.trim());
    }
    Path cwd = Path.of("").toAbsolutePath();
    Path relativeToModule = CLASSPATH_RELATIVE.subpath(1, CLASSPATH_RELATIVE.getNameCount());
    for (Path dir = cwd; dir != null; dir = dir.getParent()) {
      if (Files.isRegularFile(dir.resolve(CLASSPATH_RELATIVE))) {
        return dir.resolve(CLASSPATH_RELATIVE);
      }
      if (Files.isRegularFile(dir.resolve(relativeToModule))) {
        return dir.resolve(relativeToModule);
      }
    }
    return cwd.resolve(CLASSPATH_RELATIVE);
  }

  private static void checkPort(int port, String name) {
    if (port < 0 || port > 65535) {
      throw new IllegalArgumentException(name + " out of range: " + port);
    }
  }
}
