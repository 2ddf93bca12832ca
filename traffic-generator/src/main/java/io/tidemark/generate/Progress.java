package io.tidemark.generate;

import java.time.Duration;
import java.util.Locale;

/**
 * A progress tick of a running generation, reported about once a second.
 *
 * @param messagesSent             messages handed to the sink so far
 * @param bytesSent                their key plus value bytes
 * @param elapsed                  wall time since the run started
 * @param recentMessagesPerSecond  rate since the previous tick
 * @param averageMessagesPerSecond rate since the start
 */
public record Progress(long messagesSent, long bytesSent, Duration elapsed, double recentMessagesPerSecond,
                       double averageMessagesPerSecond) {

    /** One line for a terminal. */
    public String line() {
        return String.format(Locale.ROOT, "%,d messages, %,.1f MB in %.0f s: %,.0f msg/s now, %,.0f msg/s average",
                messagesSent, bytesSent / 1e6, elapsed.toMillis() / 1000.0, recentMessagesPerSecond,
                averageMessagesPerSecond);
    }
}
