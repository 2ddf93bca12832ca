package io.tidemark.broker;

/**
 * Why a local broker could not be started, probed or stopped. The first line of the message names
 * the cause and what to do; {@link Reason#PROCESS_DIED} and {@link Reason#STARTUP_TIMEOUT} append
 * the last lines of {@code broker.log}.
 */
public final class BrokerException extends RuntimeException {

  /** The distinct failure causes, so callers (CLI, tests) can react without parsing messages. */
  public enum Reason {
    CLASSPATH_MISSING,
    PORT_IN_USE,
    ALREADY_RUNNING,
    PROCESS_DIED,
    STARTUP_TIMEOUT,
    IO,
    ADMIN
  }

  private final Reason reason;

  public BrokerException(Reason reason, String message) {
    super(message);
    this.reason = reason;
  }

  public BrokerException(Reason reason, String message, Throwable cause) {
    super(message, cause);
    this.reason = reason;
  }

  public Reason reason() {
    return reason;
  }
}
