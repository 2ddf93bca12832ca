package io.tidemark.broker;

import java.nio.file.Path;

/**
 * What {@link LocalKafkaBroker#status(Path)} found for a data directory.
 *
 * @param running the broker process is alive and answers {@code Admin.describeCluster()}
 * @param processAlive the process named by the pid file is alive (it may still be starting)
 * @param pid pid from the pid file, or -1 if there is none
 * @param bootstrapServers {@code 127.0.0.1:<port>} from the persisted ports, or null if never started
 */
public record BrokerStatus(boolean running, boolean processAlive, long pid, String bootstrapServers) {

  /** One line for a CLI. */
  public String describe() {
    if (running) {
      return "running (pid " + pid + ") at " + bootstrapServers;
    }
    if (processAlive) {
      return "process " + pid + " alive but not answering at " + bootstrapServers + " (starting or stuck)";
    }
    return "not running" + (bootstrapServers == null ? "" : " (last at " + bootstrapServers + ")");
  }
}
