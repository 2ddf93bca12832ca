package io.tidemark.broker;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.BiFunction;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.common.errors.TopicExistsException;

/** Topic creation as Tidemark does it, for the local broker and for the launcher against any broker. */
public final class Topics {

  private Topics() {}

  /**
   * Creates {@code topic} with {@code partitions} partitions and replication 1 unless it exists.
   *
   * @param failure turns what went wrong (what was attempted, its cause) into the caller's exception
   * @return true if this call created it, false if it existed
   */
  public static boolean createIfAbsent(
      Admin admin,
      String topic,
      int partitions,
      Duration timeout,
      BiFunction<String, Throwable, ? extends RuntimeException> failure) {
    try {
      admin
          .createTopics(List.of(new NewTopic(topic, partitions, (short) 1)))
          .all()
          .get(timeout.toMillis(), TimeUnit.MILLISECONDS);
      return true;
    } catch (ExecutionException e) {
      if (e.getCause() instanceof TopicExistsException) {
        return false;
      }
      throw failure.apply("create topic " + topic, e.getCause());
    } catch (TimeoutException | InterruptedException e) {
      throw failure.apply("create topic " + topic, e);
    }
  }
}
