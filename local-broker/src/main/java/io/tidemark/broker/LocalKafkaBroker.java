package io.tidemark.broker;

import java.io.File;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.io.StringWriter;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.DescribeClusterOptions;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;

import io.tidemark.broker.BrokerException.Reason;

/**
 * A single-node KRaft Kafka broker (4.3.1) running in its own, detached JVM from the jars listed in
 * the kafka-runtime module's {@code broker.classpath}. Loopback only. The broker keeps running if
 * the JVM that started it exits; {@link #status(Path)} and {@link #stopRunning(Path)} find it again
 * through the pid file in its data directory.
 *
 * <p>Data directory layout: {@code server.properties}, {@code log4j2.properties}, {@code broker.log}
 * (stdout/stderr, WARN level, appended across restarts), {@code broker.pid}, {@code broker-ports.properties}
 * (ports and cluster id, reused on restart) and {@code kafka-logs/} (the Kafka log dir).
 */
public final class LocalKafkaBroker implements AutoCloseable {

  public static final String PID_FILE = "broker.pid";
  public static final String LOG_FILE = "broker.log";
  public static final String PORTS_FILE = "broker-ports.properties";
  public static final String SERVER_PROPERTIES = "server.properties";
  public static final String LOG4J_FILE = "log4j2.properties";
  public static final String KAFKA_LOG_DIR = "kafka-logs";

  static final Duration STOP_TIMEOUT = Duration.ofSeconds(15);
  private static final String HOST = "127.0.0.1";
  /** Put on the broker's command line so a pid can be matched to its data directory. */
  private static final String DATA_DIR_MARKER = "-Dtidemark.broker.dataDir=";
  private static final int LOG_TAIL_LINES = 20;

  private final Path dataDir;
  private final int port;
  private final int controllerPort;
  private final Process process;
  private Admin admin;
  private boolean stopped;

  private LocalKafkaBroker(Path dataDir, int port, int controllerPort, Process process) {
    this.dataDir = dataDir;
    this.port = port;
    this.controllerPort = controllerPort;
    this.process = process;
  }

  // ---------------------------------------------------------------- start

  /**
   * Starts the broker and returns once {@code Admin.describeCluster()} succeeds. Formats the storage
   * only when the log dir is fresh; on an existing data directory reuses its data and ports.
   *
   * @throws BrokerException with a one-line cause: classpath file missing, port in use, already
   *     running for this data directory, process died during startup, or readiness timeout
   */
  public static LocalKafkaBroker start(BrokerSettings settings) {
    String classpath = readClasspath(settings.classpathFile());
    Path dataDir = settings.dataDir();
    try {
      Files.createDirectories(dataDir);
    } catch (IOException e) {
      throw ioFailure("create data directory " + dataDir, e);
    }
    Optional<ProcessHandle> running = runningBroker(dataDir);
    if (running.isPresent()) {
      throw new BrokerException(Reason.ALREADY_RUNNING, "A broker for " + dataDir + " is already running (pid "
          + running.get().pid() + ", " + bootstrapFromPortsFile(dataDir).orElse("unknown port")
          + "): use it, or stop it first (LocalKafkaBroker.stopRunning / `broker stop`).");
    }
    deleteQuietly(dataDir.resolve(PID_FILE)); // stale: the process is gone (killed or crashed)

    Properties persisted = readProperties(dataDir.resolve(PORTS_FILE));
    int[] ports = choosePorts(settings, persisted);
    int port = ports[0];
    int controllerPort = ports[1];
    String clusterId = persisted.getProperty("cluster.id", Uuid.randomUuid().toString());

    Properties state = new Properties();
    state.setProperty("port", Integer.toString(port));
    state.setProperty("controller.port", Integer.toString(controllerPort));
    state.setProperty("cluster.id", clusterId);
    writeProperties(dataDir.resolve(PORTS_FILE), state, "Tidemark local broker: ports and cluster id, reused on restart");
    writeServerProperties(dataDir, port, controllerPort, settings.overrides());
    writeLog4jConfig(dataDir);
    noteInLog(dataDir, "starting broker on " + HOST + ":" + port);

    Path logDir = dataDir.resolve(KAFKA_LOG_DIR);
    if (!Files.exists(logDir.resolve("meta.properties"))) {
      formatStorage(dataDir, classpath, clusterId);
    }

    Process process = launch(dataDir, classpath, settings.heapMb());
    writePidFile(dataDir, process.pid());
    LocalKafkaBroker broker = new LocalKafkaBroker(dataDir, port, controllerPort, process);
    try {
      broker.awaitReady(settings.startupTimeout());
    } catch (RuntimeException e) {
      broker.closeAdmin();
      process.destroyForcibly();
      waitForExit(process.toHandle(), Duration.ofSeconds(10));
      deleteQuietly(dataDir.resolve(PID_FILE));
      throw e;
    }
    return broker;
  }

  private void awaitReady(Duration timeout) {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (true) {
      if (!process.isAlive()) {
        throw new BrokerException(Reason.PROCESS_DIED, "The broker process died during startup (exit code "
            + process.exitValue() + "); see " + dataDir.resolve(LOG_FILE) + ". Last lines:\n" + logTail(dataDir));
      }
      if (System.nanoTime() > deadline) {
        throw new BrokerException(Reason.STARTUP_TIMEOUT, "The broker at " + bootstrapServers()
            + " did not answer describeCluster within " + timeout.toSeconds()
            + " s: it was killed; see " + dataDir.resolve(LOG_FILE)
            + " or raise BrokerSettings.startupTimeout. Last lines:\n" + logTail(dataDir));
      }
      // Probe the TCP port first: an Admin client against a closed port logs a warning per retry.
      if (portAcceptsConnections(port)) {
        try {
          admin().describeCluster(new DescribeClusterOptions().timeoutMs(2_000)).clusterId().get(3, TimeUnit.SECONDS);
          return;
        } catch (ExecutionException | TimeoutException e) {
          // not ready yet
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          throw new BrokerException(Reason.STARTUP_TIMEOUT, "Interrupted while waiting for the broker to start");
        }
      }
      sleep(100);
    }
  }

  // ---------------------------------------------------------------- accessors

  /** {@code 127.0.0.1:<port>}. */
  public String bootstrapServers() {
    return HOST + ":" + port;
  }

  public long pid() {
    return process.pid();
  }

  public int port() {
    return port;
  }

  public int controllerPort() {
    return controllerPort;
  }

  public Path dataDir() {
    return dataDir;
  }

  public boolean isAlive() {
    return process.isAlive();
  }

  // ---------------------------------------------------------------- topics

  /**
   * Creates a topic (replication factor 1) and waits until every partition has a leader.
   *
   * @return true if created, false if it already existed (its partition count is left as is)
   */
  public boolean createTopic(String name, int partitions) {
    boolean created =
        Topics.createIfAbsent(admin(), name, partitions, Duration.ofSeconds(30), this::adminFailure);
    awaitLeaders(name);
    return created;
  }

  /** Deletes a topic and waits until it is gone. @return false if it did not exist. */
  public boolean deleteTopic(String name) {
    try {
      admin().deleteTopics(List.of(name)).all().get(30, TimeUnit.SECONDS);
    } catch (ExecutionException e) {
      if (e.getCause() instanceof UnknownTopicOrPartitionException) {
        return false;
      }
      throw adminFailure("delete topic " + name, e.getCause());
    } catch (TimeoutException | InterruptedException e) {
      throw adminFailure("delete topic " + name, e);
    }
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);
    while (System.nanoTime() < deadline) {
      try {
        if (!admin().listTopics().names().get(5, TimeUnit.SECONDS).contains(name)) {
          return true;
        }
      } catch (ExecutionException | TimeoutException | InterruptedException e) {
        throw adminFailure("list topics", e);
      }
      sleep(100);
    }
    throw new BrokerException(Reason.ADMIN, "Topic " + name + " still listed 15 s after deletion on " + bootstrapServers());
  }

  private void awaitLeaders(String name) {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);
    while (true) {
      try {
        TopicDescription description =
            admin().describeTopics(List.of(name)).allTopicNames().get(5, TimeUnit.SECONDS).get(name);
        if (description.partitions().stream().allMatch(p -> p.leader() != null && !p.leader().isEmpty())) {
          return;
        }
      } catch (ExecutionException e) {
        if (!(e.getCause() instanceof UnknownTopicOrPartitionException)) {
          throw adminFailure("describe topic " + name, e.getCause());
        }
      } catch (TimeoutException | InterruptedException e) {
        throw adminFailure("describe topic " + name, e);
      }
      if (System.nanoTime() > deadline) {
        throw new BrokerException(Reason.ADMIN, "Topic " + name + " has partitions without a leader after 15 s on "
            + bootstrapServers() + "; see " + dataDir.resolve(LOG_FILE));
      }
      sleep(100);
    }
  }

  private synchronized Admin admin() {
    if (admin == null) {
      Map<String, Object> config = new LinkedHashMap<>();
      config.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers());
      config.put(AdminClientConfig.CLIENT_ID_CONFIG, "tidemark-local-broker");
      config.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, 5_000);
      config.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 30_000);
      config.put(AdminClientConfig.RECONNECT_BACKOFF_MAX_MS_CONFIG, 500);
      config.put(AdminClientConfig.RETRY_BACKOFF_MS_CONFIG, 100);
      admin = Admin.create(config);
    }
    return admin;
  }

  private synchronized void closeAdmin() {
    if (admin != null) {
      admin.close(Duration.ofSeconds(2));
      admin = null;
    }
  }

  // ---------------------------------------------------------------- stop

  /**
   * SIGTERM, wait up to 15 s for a clean shutdown, then SIGKILL; removes the pid file. Idempotent.
   */
  public synchronized void stop() {
    if (stopped) {
      return;
    }
    closeAdmin();
    terminate(process.toHandle(), STOP_TIMEOUT);
    deleteQuietly(dataDir.resolve(PID_FILE));
    noteInLog(dataDir, "stopped broker pid " + process.pid());
    stopped = true;
  }

  /**
   * SIGKILL now, as in a crash (for fault tests). Leaves the pid file behind, as a crash would;
   * the next {@link #start} on this data directory sees it is stale and recovers the data.
   */
  public synchronized void kill() {
    closeAdmin();
    process.destroyForcibly();
    waitForExit(process.toHandle(), Duration.ofSeconds(10));
    noteInLog(dataDir, "killed broker pid " + process.pid() + " (SIGKILL)");
    stopped = true;
  }

  /** Same as {@link #stop()}. */
  @Override
  public void close() {
    stop();
  }

  // ---------------------------------------------------------------- other processes

  /**
   * Status of the broker for a data directory, possibly started by another process: the pid file,
   * whether that process is alive (and is a Kafka broker for this directory), and whether it answers
   * {@code describeCluster} within a few seconds.
   */
  public static BrokerStatus status(Path dataDir) {
    Path dir = dataDir.toAbsolutePath().normalize();
    long pid = readPid(dir).orElse(-1L);
    String bootstrap = bootstrapFromPortsFile(dir).orElse(null);
    boolean alive = pid > 0 && ProcessHandle.of(pid).filter(handle -> isBrokerFor(handle, dir)).isPresent();
    boolean answering = alive && bootstrap != null && answersDescribeCluster(bootstrap);
    return new BrokerStatus(answering, alive, pid, bootstrap);
  }

  /**
   * Stops the broker for a data directory that another process started (SIGTERM, up to 15 s, then
   * SIGKILL) and removes the pid file.
   *
   * @return true if a running broker was stopped, false if none was running
   */
  public static boolean stopRunning(Path dataDir) {
    Path dir = dataDir.toAbsolutePath().normalize();
    Optional<ProcessHandle> running = runningBroker(dir);
    running.ifPresent(handle -> {
      terminate(handle, STOP_TIMEOUT);
      noteInLog(dir, "stopped broker pid " + handle.pid());
    });
    deleteQuietly(dir.resolve(PID_FILE));
    return running.isPresent();
  }

  private static Optional<ProcessHandle> runningBroker(Path dataDir) {
    return readPid(dataDir).flatMap(ProcessHandle::of).filter(handle -> isBrokerFor(handle, dataDir));
  }

  /** Alive, and (when the command line is readable) a kafka.Kafka started for this data directory. */
  private static boolean isBrokerFor(ProcessHandle handle, Path dataDir) {
    if (!handle.isAlive()) {
      return false;
    }
    return commandLine(handle)
        .map(line -> line.contains("kafka.Kafka") && line.contains(DATA_DIR_MARKER + dataDir))
        .orElse(true);
  }

  /**
   * The full command line. ProcessHandle.Info truncates it to 4096 bytes on Linux, which cuts off
   * everything after the long -cp, so read /proc directly where it exists.
   */
  private static Optional<String> commandLine(ProcessHandle handle) {
    Path proc = Path.of("/proc", Long.toString(handle.pid()), "cmdline");
    if (Files.isReadable(proc)) {
      try {
        return Optional.of(new String(Files.readAllBytes(proc), StandardCharsets.UTF_8).replace('\0', ' '));
      } catch (IOException e) {
        // process gone or not ours: fall through
      }
    }
    return handle.info().commandLine();
  }

  private static boolean answersDescribeCluster(String bootstrap) {
    int port = Integer.parseInt(bootstrap.substring(bootstrap.lastIndexOf(':') + 1));
    if (!portAcceptsConnections(port)) {
      return false;
    }
    Map<String, Object> config = Map.of(
        AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap,
        AdminClientConfig.CLIENT_ID_CONFIG, "tidemark-local-broker-status",
        AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, 3_000,
        AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 3_000);
    try (Admin probe = Admin.create(config)) {
      probe.describeCluster(new DescribeClusterOptions().timeoutMs(3_000)).clusterId().get(4, TimeUnit.SECONDS);
      return true;
    } catch (ExecutionException | TimeoutException e) {
      return false;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
  }

  private static void terminate(ProcessHandle handle, Duration timeout) {
    if (!handle.isAlive()) {
      return;
    }
    handle.destroy();
    if (!waitForExit(handle, timeout)) {
      handle.destroyForcibly();
      waitForExit(handle, Duration.ofSeconds(10));
    }
  }

  /** Polls every 50 ms (onExit() of a non-child process polls with coarse, growing intervals). */
  private static boolean waitForExit(ProcessHandle handle, Duration timeout) {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (handle.isAlive()) {
      if (System.nanoTime() > deadline) {
        return false;
      }
      try {
        Thread.sleep(50);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return !handle.isAlive();
      }
    }
    return true;
  }

  // ---------------------------------------------------------------- process launch

  private static String readClasspath(Path classpathFile) {
    String hint = "run `mvn -q install -DskipTests` in the project root first (it writes this file), or set -D"
        + BrokerSettings.CLASSPATH_PROPERTY + "=<file>";
    if (!Files.isRegularFile(classpathFile)) {
      throw new BrokerException(Reason.CLASSPATH_MISSING, "Kafka broker classpath file " + classpathFile + " not found: " + hint + ".");
    }
    String classpath;
    try {
      classpath = Files.readString(classpathFile, StandardCharsets.UTF_8).trim();
    } catch (IOException e) {
      throw ioFailure("read " + classpathFile, e);
    }
    if (classpath.isEmpty()) {
      throw new BrokerException(Reason.CLASSPATH_MISSING, "Kafka broker classpath file " + classpathFile + " is empty: " + hint + ".");
    }
    for (String entry : classpath.split(File.pathSeparator)) {
      if (!Files.exists(Path.of(entry))) {
        throw new BrokerException(Reason.CLASSPATH_MISSING, "Kafka broker classpath file " + classpathFile
            + " lists a missing jar " + entry + ": " + hint + ".");
      }
    }
    return classpath;
  }

  private static void formatStorage(Path dataDir, String classpath, String clusterId) {
    List<String> command = new ArrayList<>(List.of(javaExecutable(), "-Xmx256m", "-XX:TieredStopAtLevel=1",
        "-Dlog4j2.configurationFile=" + dataDir.resolve(LOG4J_FILE), "-Dlog4j2.shutdownHookEnabled=false",
        "-cp", classpath, "kafka.tools.StorageTool", "format", "-t", clusterId,
        "-c", dataDir.resolve(SERVER_PROPERTIES).toString()));
    Process format;
    try {
      format = processBuilder(dataDir, command).start();
    } catch (IOException e) {
      throw ioFailure("run kafka.tools.StorageTool", e);
    }
    try {
      if (!format.waitFor(60, TimeUnit.SECONDS)) {
        format.destroyForcibly();
        throw new BrokerException(Reason.STARTUP_TIMEOUT, "Formatting the broker storage in " + dataDir
            + " took over 60 s and was killed; see " + dataDir.resolve(LOG_FILE));
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      format.destroyForcibly();
      throw new BrokerException(Reason.STARTUP_TIMEOUT, "Interrupted while formatting the broker storage");
    }
    if (format.exitValue() != 0) {
      throw new BrokerException(Reason.PROCESS_DIED, "Formatting the broker storage in " + dataDir.resolve(KAFKA_LOG_DIR)
          + " failed (exit code " + format.exitValue() + "): fix the cause below (often an invalid BrokerSettings override). Last lines of "
          + dataDir.resolve(LOG_FILE) + ":\n" + logTail(dataDir));
    }
  }

  private static Process launch(Path dataDir, String classpath, int heapMb) {
    List<String> command = new ArrayList<>();
    Path setsid = Path.of("/usr/bin/setsid");
    if (Files.isExecutable(setsid)) {
      // New session: Ctrl-C / SIGHUP aimed at the starting shell's process group does not reach the broker.
      command.add(setsid.toString());
    }
    command.addAll(List.of(javaExecutable(),
        "-Xms" + Math.min(256, heapMb) + "m", "-Xmx" + heapMb + "m",
        "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20", "-XX:+ExitOnOutOfMemoryError", "-Djava.awt.headless=true",
        "-Dlog4j2.configurationFile=" + dataDir.resolve(LOG4J_FILE),
        // Without this, log4j stops itself in its own shutdown hook and Kafka's shutdown logging
        // prints "Unable to register Log4j shutdown hook because JVM is shutting down".
        "-Dlog4j2.shutdownHookEnabled=false",
        "-Dkafka.logs.dir=" + dataDir,
        DATA_DIR_MARKER + dataDir,
        "-cp", classpath, "kafka.Kafka", dataDir.resolve(SERVER_PROPERTIES).toString()));
    try {
      return processBuilder(dataDir, command).start();
    } catch (IOException e) {
      throw ioFailure("start the broker JVM (" + javaExecutable() + ")", e);
    }
  }

  private static ProcessBuilder processBuilder(Path dataDir, List<String> command) {
    return new ProcessBuilder(command)
        .directory(dataDir.toFile())
        .redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")))
        .redirectErrorStream(true)
        .redirectOutput(ProcessBuilder.Redirect.appendTo(dataDir.resolve(LOG_FILE).toFile()));
  }

  private static String javaExecutable() {
    return Path.of(System.getProperty("java.home"), "bin", "java").toString();
  }

  // ---------------------------------------------------------------- ports

  private static int[] choosePorts(BrokerSettings settings, Properties persisted) {
    int port = settings.port() != 0 ? settings.port() : intProperty(persisted, "port");
    int controllerPort = settings.controllerPort() != 0 ? settings.controllerPort() : intProperty(persisted, "controller.port");
    boolean fromFile = settings.port() == 0 && port != 0 || settings.controllerPort() == 0 && controllerPort != 0;
    if (port != 0 && port == controllerPort) {
      throw new BrokerException(Reason.PORT_IN_USE, "Broker port and controller port are both " + port
          + ": choose different ports (0 = any free port).");
    }
    checkFree(port, "broker", fromFile, settings.dataDir());
    checkFree(controllerPort, "controller", fromFile, settings.dataDir());
    try (ServerSocket a = port == 0 ? freeSocket() : null; ServerSocket b = controllerPort == 0 ? freeSocket() : null) {
      // Hold both sockets open while picking so the two free ports differ.
      return new int[] {a != null ? a.getLocalPort() : port, b != null ? b.getLocalPort() : controllerPort};
    } catch (IOException e) {
      throw ioFailure("pick free loopback ports", e);
    }
  }

  private static void checkFree(int port, String role, boolean fromFile, Path dataDir) {
    if (port == 0) {
      return;
    }
    try (ServerSocket socket = new ServerSocket()) {
      socket.setReuseAddress(true);
      socket.bind(new InetSocketAddress(InetAddress.getByName(HOST), port));
    } catch (IOException e) {
      throw new BrokerException(Reason.PORT_IN_USE, "The " + role + " port " + HOST + ":" + port
          + (fromFile ? " (kept from the last run in " + dataDir.resolve(PORTS_FILE) + ")" : "")
          + " is already in use: stop whatever listens there or choose another port (0 = any free port).");
    }
  }

  private static ServerSocket freeSocket() throws IOException {
    return new ServerSocket(0, 1, InetAddress.getByName(HOST));
  }

  private static boolean portAcceptsConnections(int port) {
    try (Socket socket = new Socket()) {
      socket.connect(new InetSocketAddress(HOST, port), 200);
      return true;
    } catch (IOException e) {
      return false;
    }
  }

  // ---------------------------------------------------------------- files

  private static void writeServerProperties(Path dataDir, int port, int controllerPort, Map<String, String> overrides) {
    Map<String, String> p = new LinkedHashMap<>();
    p.put("process.roles", "broker,controller");
    p.put("node.id", "1");
    p.put("controller.quorum.voters", "1@" + HOST + ":" + controllerPort);
    p.put("listeners", "PLAINTEXT://" + HOST + ":" + port + ",CONTROLLER://" + HOST + ":" + controllerPort);
    p.put("advertised.listeners", "PLAINTEXT://" + HOST + ":" + port);
    p.put("controller.listener.names", "CONTROLLER");
    p.put("inter.broker.listener.name", "PLAINTEXT");
    p.put("listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT");
    p.put("log.dirs", dataDir.resolve(KAFKA_LOG_DIR).toString());
    p.put("num.partitions", "1");
    p.put("auto.create.topics.enable", "false");
    p.put("offsets.topic.replication.factor", "1");
    p.put("offsets.topic.num.partitions", "4");
    p.put("transaction.state.log.replication.factor", "1");
    p.put("transaction.state.log.min.isr", "1");
    p.put("transaction.state.log.num.partitions", "4");
    p.put("share.coordinator.state.topic.replication.factor", "1");
    p.put("share.coordinator.state.topic.min.isr", "1");
    p.put("share.coordinator.state.topic.num.partitions", "4");
    p.put("group.initial.rebalance.delay.ms", "0");
    // After a kill -9 the controller keeps the dead incarnation registered until its session
    // times out; the restarted broker cannot register before that. Default 9 s; 4.5 s halves the
    // restart-after-kill time (14 s -> ~9 s) while still tolerating 4 missed 1 s heartbeats.
    p.put("broker.heartbeat.interval.ms", "1000");
    p.put("broker.session.timeout.ms", "4500");
    // 2 MiB, so oversized test messages reach consumers instead of being rejected by the broker.
    p.put("message.max.bytes", "2097152");
    p.put("replica.fetch.max.bytes", "2097152");
    // Retention by size, not by age: Kafka's time retention compares a record's own timestamp with
    // the clock, so history replayed or crafted with past timestamps (a backfill, a test's fixed
    // dates) would be deleted minutes after it was written once it is older than 7 days, and a
    // stream reading it would find its offsets gone. 1 GiB per partition bounds the disk instead.
    p.put("log.retention.ms", "-1");
    p.put("log.retention.bytes", "1073741824");
    // The cleaner's dedupe buffer is allocated on the heap up front (default 128 MiB of a 512 MiB heap).
    p.put("log.cleaner.dedupe.buffer.size", "33554432");
    p.putAll(overrides);
    StringBuilder text = new StringBuilder("# Written by Tidemark LocalKafkaBroker on every start; edits are overwritten.\n");
    p.forEach((key, value) -> text.append(key).append('=').append(value.replace("\\", "\\\\")).append('\n'));
    writeAtomically(dataDir.resolve(SERVER_PROPERTIES), text.toString());
  }

  /** Kafka 4.x logs through log4j2 (log4j-core); log4j2's own properties format needs no extra jars. */
  private static void writeLog4jConfig(Path dataDir) {
    String config = String.join("\n",
        "# Written by Tidemark LocalKafkaBroker: WARN and above, plus the start/stop lines.",
        "status = warn",
        "appender.out.type = Console",
        "appender.out.name = OUT",
        "appender.out.layout.type = PatternLayout",
        "appender.out.layout.pattern = [%d] %p %m (%c)%n",
        "rootLogger.level = WARN",
        "rootLogger.appenderRef.out.ref = OUT",
        "logger.server.name = kafka.server.KafkaRaftServer",
        "logger.server.level = INFO",
        "");
    writeAtomically(dataDir.resolve(LOG4J_FILE), config);
  }

  private static void writePidFile(Path dataDir, long pid) {
    writeAtomically(dataDir.resolve(PID_FILE), pid + "\n");
  }

  private static Optional<Long> readPid(Path dataDir) {
    Path file = dataDir.resolve(PID_FILE);
    try {
      return Optional.of(Long.parseLong(Files.readString(file).trim()));
    } catch (IOException | NumberFormatException e) {
      return Optional.empty();
    }
  }

  private static Optional<String> bootstrapFromPortsFile(Path dataDir) {
    int port = intProperty(readProperties(dataDir.resolve(PORTS_FILE)), "port");
    return port == 0 ? Optional.empty() : Optional.of(HOST + ":" + port);
  }

  private static int intProperty(Properties properties, String key) {
    try {
      return Integer.parseInt(properties.getProperty(key, "0").trim());
    } catch (NumberFormatException e) {
      return 0;
    }
  }

  private static Properties readProperties(Path file) {
    Properties properties = new Properties();
    if (Files.isRegularFile(file)) {
      try (var reader = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
        properties.load(reader);
      } catch (IOException e) {
        throw ioFailure("read " + file, e);
      }
    }
    return properties;
  }

  private static void writeProperties(Path file, Properties properties, String comment) {
    var out = new StringWriter();
    try {
      properties.store(out, comment);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    writeAtomically(file, out.toString());
  }

  private static void writeAtomically(Path file, String content) {
    Path tmp = file.resolveSibling(file.getFileName() + ".tmp");
    try {
      Files.writeString(tmp, content, StandardCharsets.UTF_8);
      Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
    } catch (IOException e) {
      throw ioFailure("write " + file, e);
    }
  }

  private static void appendToLog(Path dataDir, String line) {
    try {
      Files.writeString(dataDir.resolve(LOG_FILE), line + "\n", StandardCharsets.UTF_8,
          StandardOpenOption.CREATE, StandardOpenOption.APPEND);
    } catch (IOException e) {
      throw ioFailure("write " + dataDir.resolve(LOG_FILE), e);
    }
  }

  private static void noteInLog(Path dataDir, String what) {
    try {
      appendToLog(dataDir, "=== tidemark: " + what + " at " + Instant.now() + " ===");
    } catch (BrokerException e) {
      // best effort
    }
  }

  /** The last lines of broker.log (reads at most its last 64 KiB). */
  static String logTail(Path dataDir) {
    Path file = dataDir.resolve(LOG_FILE);
    try (RandomAccessFile raf = new RandomAccessFile(file.toFile(), "r")) {
      long length = raf.length();
      int size = (int) Math.min(length, 64 * 1024);
      byte[] bytes = new byte[size];
      raf.seek(length - size);
      raf.readFully(bytes);
      List<String> lines = Arrays.asList(new String(bytes, StandardCharsets.UTF_8).split("\r?\n"));
      return String.join("\n", lines.subList(Math.max(0, lines.size() - LOG_TAIL_LINES), lines.size()));
    } catch (IOException e) {
      return "(no " + file + ": " + e.getMessage() + ")";
    }
  }

  private static void deleteQuietly(Path file) {
    try {
      Files.deleteIfExists(file);
    } catch (IOException e) {
      // best effort
    }
  }

  private static void sleep(long millis) {
    try {
      Thread.sleep(millis);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new BrokerException(Reason.STARTUP_TIMEOUT, "Interrupted");
    }
  }

  private static BrokerException ioFailure(String what, IOException e) {
    return new BrokerException(Reason.IO, "Could not " + what + ": " + e, e);
  }

  private BrokerException adminFailure(String what, Throwable cause) {
    return new BrokerException(Reason.ADMIN, "Could not " + what + " on " + bootstrapServers() + ": " + cause, cause);
  }

  @Override
  public String toString() {
    return "LocalKafkaBroker[" + bootstrapServers() + ", pid " + pid() + ", " + dataDir + "]";
  }
}
