package io.tidemark.generate;

import java.time.Duration;
import java.time.Instant;
import java.util.Collections;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

import io.tidemark.generate.GeneratedMessage.Kind;

/**
 * What a run produced: the ground truth an end-to-end check compares the tables with.
 *
 * @param topic             where the messages went
 * @param profile           which events they were
 * @param messages          messages sent (all acknowledged when the run returned normally)
 * @param counts            messages per kind of the profile; every kind present, zeros included, in declaration order
 * @param totalBytes        key plus value bytes
 * @param elapsed           wall time of the run
 * @param minValidEventTime earliest event time of a valid message, or null if there was none
 * @param maxValidEventTime latest event time of a valid message, or null if there was none
 * @param stoppedEarly      true when the run was stopped before its count or duration was reached
 */
public record GenerationReport(
        String topic,
        TrafficProfile profile,
        long messages,
        Map<MessageKind, Long> counts,
        long totalBytes,
        Duration elapsed,
        Instant minValidEventTime,
        Instant maxValidEventTime,
        boolean stoppedEarly) {

    public GenerationReport {
        Map<MessageKind, Long> all = new LinkedHashMap<>();
        for (MessageKind k : profile.kinds()) {
            all.put(k, counts.getOrDefault(k, 0L));
        }
        for (MessageKind k : counts.keySet()) {
            if (k.profile() != profile) {
                throw new IllegalArgumentException("a " + profile.cliName() + " report cannot count " + k.profile().cliName()
                        + " kind " + k);
            }
        }
        counts = Collections.unmodifiableMap(all);
    }

    /**
     * Messages per network kind; every kind present, zeros included.
     *
     * @throws IllegalStateException for a report of another profile: see {@link #counts()}
     */
    public Map<Kind, Long> countsByKind() {
        if (profile != TrafficProfile.NETWORK) {
            throw new IllegalStateException("a " + profile.cliName() + " report counts its own kinds: see counts()");
        }
        EnumMap<Kind, Long> byKind = new EnumMap<>(Kind.class);
        counts.forEach((k, n) -> byKind.put((Kind) k, n));
        return Collections.unmodifiableMap(byKind);
    }

    /** Messages of this kind (0 for a kind of another profile). */
    public long count(MessageKind kind) {
        return counts.getOrDefault(kind, 0L);
    }

    /** Messages of this network kind (0 in a report of another profile). */
    public long count(Kind kind) {
        return count((MessageKind) kind);
    }

    public long onTime() {
        return count(profile.onTime());
    }

    public long late() {
        return count(profile.late());
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
        sb.append(String.format(Locale.ROOT, "%,d messages (%,d bytes) to %s in %.1f s, %,.0f msg/s%s%n",
                messages, totalBytes, topic, elapsed.toMillis() / 1000.0, messagesPerSecond(),
                stoppedEarly ? " (stopped early)" : ""));
        sb.append(String.format(Locale.ROOT, "valid %,d (on time %,d, late %,d), invalid %,d%n",
                valid(), onTime(), late(), invalid()));
        if (minValidEventTime != null) {
            sb.append("valid event time ").append(minValidEventTime).append(" .. ").append(maxValidEventTime)
                    .append(System.lineSeparator());
        }
        counts.forEach((k, n) -> {
            if (!k.isValid() && n > 0) {
                sb.append(String.format(Locale.ROOT, "  %-18s %,d%n", k, n));
            }
        });
        return sb.toString();
    }

    /** Counts messages as they are sent. Not thread-safe. */
    public static final class Tally {
        private final TrafficProfile profile;
        private final long[] counts;
        private long messages;
        private long bytes;
        private long minEventMillis = Long.MAX_VALUE;
        private long maxEventMillis = Long.MIN_VALUE;

        /** A tally of network messages. */
        public Tally() {
            this(TrafficProfile.NETWORK);
        }

        public Tally(TrafficProfile profile) {
            this.profile = profile;
            this.counts = new long[profile.kinds().size()];
        }

        /** @throws IllegalArgumentException for a message of another profile */
        public void add(GeneratedMessage m) {
            MessageKind kind = m.messageKind();
            if (kind.profile() != profile) {
                throw new IllegalArgumentException("a " + profile.cliName() + " tally cannot count a " + kind.profile().cliName()
                        + " message");
            }
            counts[kind.ordinal()]++;
            messages++;
            bytes += m.size();
            if (kind.isValid()) {
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
            Map<MessageKind, Long> byKind = new LinkedHashMap<>();
            for (MessageKind k : profile.kinds()) {
                byKind.put(k, counts[k.ordinal()]);
            }
            boolean anyValid = minEventMillis != Long.MAX_VALUE;
            return new GenerationReport(topic, profile, messages, byKind, bytes, elapsed,
                    anyValid ? Instant.ofEpochMilli(minEventMillis) : null,
                    anyValid ? Instant.ofEpochMilli(maxEventMillis) : null, stoppedEarly);
        }
    }
}
