package io.tidemark.generate;

import io.tidemark.generate.GeneratedMessage.Kind;

import java.time.Duration;
import java.time.Instant;
import java.util.Collections;
import java.util.EnumMap;
import java.util.Map;
import java.util.Optional;

/**
 * What a run produced: the ground truth an end-to-end check compares the tables with.
 *
 * @param topic             where the messages went
 * @param messages          messages sent (all acknowledged when the run returned normally)
 * @param countsByKind      messages per kind; every kind present, zeros included
 * @param totalBytes        key plus value bytes
 * @param elapsed           wall time of the run
 * @param minValidEventTime earliest event time of a valid message, or null if there was none
 * @param maxValidEventTime latest event time of a valid message, or null if there was none
 * @param stoppedEarly      true when the run was stopped before its count or duration was reached
 */
public record GenerationReport(
        String topic,
        long messages,
        Map<Kind, Long> countsByKind,
        long totalBytes,
        Duration elapsed,
        Instant minValidEventTime,
        Instant maxValidEventTime,
        boolean stoppedEarly) {

    public GenerationReport {
        EnumMap<Kind, Long> all = new EnumMap<>(Kind.class);
        for (Kind k : Kind.values()) {
            all.put(k, countsByKind.getOrDefault(k, 0L));
        }
        countsByKind = Collections.unmodifiableMap(all);
    }

    public long count(Kind kind) {
        return countsByKind.get(kind);
    }

    public long onTime() {
        return count(Kind.ON_TIME);
    }

    public long late() {
        return count(Kind.LATE);
    }

    /** ON_TIME + LATE: what should land in raw_events. */
    public long valid() {
        return onTime() + late();
    }

    /** What should land in dead_letter. */
    public long invalid() {
        return messages - valid();
    }

    public double messagesPerSecond() {
        double seconds = elapsed.toNanos() / 1e9;
        return seconds > 0 ? messages / seconds : 0;
    }

    public Optional<Instant> validEventTimeMin() {
        return Optional.ofNullable(minValidEventTime);
    }

    public Optional<Instant> validEventTimeMax() {
        return Optional.ofNullable(maxValidEventTime);
    }

    /** A multi-line human summary. */
    public String summary() {
        StringBuilder sb = new StringBuilder();
        sb.append(String.format(java.util.Locale.ROOT, "%,d messages (%,d bytes) to %s in %.1f s, %,.0f msg/s%s%n",
                messages, totalBytes, topic, elapsed.toMillis() / 1000.0, messagesPerSecond(),
                stoppedEarly ? " (stopped early)" : ""));
        sb.append(String.format(java.util.Locale.ROOT, "valid %,d (on time %,d, late %,d), invalid %,d%n",
                valid(), onTime(), late(), invalid()));
        if (minValidEventTime != null) {
            sb.append("valid event time ").append(minValidEventTime).append(" .. ").append(maxValidEventTime)
                    .append(System.lineSeparator());
        }
        countsByKind.forEach((k, n) -> {
            if (!k.isValid() && n > 0) {
                sb.append(String.format(java.util.Locale.ROOT, "  %-18s %,d%n", k, n));
            }
        });
        return sb.toString();
    }

    /** Counts messages as they are sent. Not thread-safe. */
    public static final class Tally {
        private final long[] counts = new long[Kind.values().length];
        private long messages;
        private long bytes;
        private long minEventMillis = Long.MAX_VALUE;
        private long maxEventMillis = Long.MIN_VALUE;

        public void add(GeneratedMessage m) {
            counts[m.kind().ordinal()]++;
            messages++;
            bytes += m.size();
            if (m.kind().isValid()) {
                minEventMillis = Math.min(minEventMillis, m.eventTimeMillis());
                maxEventMillis = Math.max(maxEventMillis, m.eventTimeMillis());
            }
        }

        public long messages() {
            return messages;
        }

        public long bytes() {
            return bytes;
        }

        public GenerationReport report(String topic, Duration elapsed, boolean stoppedEarly) {
            EnumMap<Kind, Long> byKind = new EnumMap<>(Kind.class);
            for (Kind k : Kind.values()) {
                byKind.put(k, counts[k.ordinal()]);
            }
            boolean anyValid = minEventMillis != Long.MAX_VALUE;
            return new GenerationReport(topic, messages, byKind, bytes, elapsed,
                    anyValid ? Instant.ofEpochMilli(minEventMillis) : null,
                    anyValid ? Instant.ofEpochMilli(maxEventMillis) : null, stoppedEarly);
        }
    }
}
