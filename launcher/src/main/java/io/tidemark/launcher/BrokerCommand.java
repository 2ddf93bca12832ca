package io.tidemark.launcher;

import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;

import io.tidemark.broker.BrokerSettings;
import io.tidemark.broker.BrokerStatus;
import io.tidemark.broker.LocalKafkaBroker;
import io.tidemark.lakehouse.TidemarkConfig;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code tidemark broker start|stop|status}: a local single-node Kafka broker for development and tests. */
@Command(name = "broker", mixinStandardHelpOptions = true,
        description = "A local single-node Kafka broker (KRaft, loopback only) for development and tests.",
        subcommands = {BrokerCommand.Start.class, BrokerCommand.Stop.class, BrokerCommand.Status.class})
final class BrokerCommand extends TidemarkCommand {

    static final String DEFAULT_DIR = "./data/broker";

    @Override
    public Integer call() {
        throw new UserError("say start, stop or status (see 'tidemark broker --help')");
    }

    /** The port of kafka.bootstrap-servers when it names this machine's loopback, else empty. */
    static Optional<Integer> loopbackPort(String bootstrap) {
        String b = bootstrap.trim();
        if (b.contains(",")) {
            return Optional.empty();
        }
        int colon = b.lastIndexOf(':');
        if (colon < 0) {
            return Optional.empty();
        }
        String host = b.substring(0, colon);
        if (!host.equals("127.0.0.1") && !host.equals("localhost")) {
            return Optional.empty();
        }
        try {
            int port = Integer.parseInt(b.substring(colon + 1));
            return port > 0 && port <= 65535 ? Optional.of(port) : Optional.empty();
        } catch (NumberFormatException e) {
            return Optional.empty();
        }
    }

    abstract static class DirCommand extends TidemarkCommand {
        @Option(names = "--dir", paramLabel = "DIR", defaultValue = DEFAULT_DIR,
                description = "Broker data directory (default: ${DEFAULT-VALUE}).")
        Path dir;
    }

    @Command(name = "start", mixinStandardHelpOptions = true,
            description = "Start the broker in the background and create the topic; returns once the broker answers.")
    static final class Start extends DirCommand {
        @Option(names = "--port", paramLabel = "PORT",
                description = "PLAINTEXT port on 127.0.0.1 (default: the port of kafka.bootstrap-servers when it is 127.0.0.1:<port>, else 9092).")
        Integer port;

        @Option(names = "--partitions", paramLabel = "N", defaultValue = "2",
                description = "Partitions of the topic if it is created now (default: ${DEFAULT-VALUE}).")
        int partitions;

        @Option(names = "--topic", paramLabel = "NAME", description = "Topic to create (default: the topic setting).")
        String topic;

        @Override
        public Integer call() {
            TidemarkConfig config = config(Map.of());
            int p = port != null ? port : loopbackPort(config.bootstrapServers()).orElse(9092);
            if (p < 1 || p > 65535) {
                throw new UserError("--port must be between 1 and 65535, got " + p);
            }
            if (partitions < 1) {
                throw new UserError("--partitions must be at least 1, got " + partitions);
            }
            String t = topic != null ? topic : config.topic();
            BrokerSettings settings = UserError.check(() -> BrokerSettings.of(dir).withPort(p));
            say("starting Kafka broker in %s on 127.0.0.1:%d ...", settings.dataDir(), p);
            LocalKafkaBroker broker = LocalKafkaBroker.start(settings);
            boolean created = broker.createTopic(t, partitions);
            say("broker running (pid %d) at %s; topic %s %s", broker.pid(), broker.bootstrapServers(), t,
                    created ? "created with " + partitions + " partitions" : "already existed");
            if (!broker.bootstrapServers().equals(config.bootstrapServers())) {
                say("note: kafka.bootstrap-servers is %s; point the other commands here with --set kafka.bootstrap-servers=%s",
                        config.bootstrapServers(), broker.bootstrapServers());
            }
            say("stop it with: tidemark broker stop%s", dir.equals(Path.of(DEFAULT_DIR)) ? "" : " --dir " + dir);
            // The broker is its own detached process: leaving this JVM leaves it running.
            return Tidemark.OK;
        }
    }

    @Command(name = "stop", mixinStandardHelpOptions = true, description = "Stop the broker of the data directory (SIGTERM, then SIGKILL after 15 s).")
    static final class Stop extends DirCommand {
        @Override
        public Integer call() {
            boolean stopped = LocalKafkaBroker.stopRunning(dir);
            say(stopped ? "broker stopped (%s)" : "no broker was running for %s", dir.toAbsolutePath().normalize());
            return Tidemark.OK;
        }
    }

    @Command(name = "status", mixinStandardHelpOptions = true, description = "Whether the broker of the data directory runs and answers.")
    static final class Status extends DirCommand {
        @Override
        public Integer call() {
            BrokerStatus status = LocalKafkaBroker.status(dir);
            say("broker %s: %s", dir.toAbsolutePath().normalize(), status.describe());
            return Tidemark.OK;
        }
    }
}
