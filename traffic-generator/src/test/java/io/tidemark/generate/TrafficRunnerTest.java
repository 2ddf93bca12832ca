package io.tidemark.generate;

import io.tidemark.generate.GeneratedMessage.Kind;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class TrafficRunnerTest {

    /** Fake monotonic time: each read costs 200 ns of "work"; sleeping advances it. */
    private static final class FakeTime {
        long nanos = 1_000_000_000_000L;
        long slept;
        int sleeps;

        long read() {
            return nanos += 200;
        }

        void sleep(long n) {
            nanos += n;
            slept += n;
            sleeps++;
        }

        InstantSource wallClock() {
            return InstantSource.fixed(Instant.parse("2026-11-29T12:00:00Z"));
        }

        TrafficRunner runner() {
            return new TrafficRunner(this::read, this::sleep, wallClock());
        }
    }

    private static class ListSink implements MessageSink {
        final List<GeneratedMessage> messages = new ArrayList<>();
        int flushes;

        @Override
        public void send(String topic, GeneratedMessage message) {
            assertThat(topic).isEqualTo("network-events");
            messages.add(message);
        }

        @Override
        public void flush() {
            flushes++;
        }
    }

    @Test
    void reportMatchesWhatWasSent() {
        TrafficSpec spec = TrafficSpec.builder().count(50_000).invalidFraction(0.05).lateFraction(0.05).build();
        ListSink sink = new ListSink();
        GenerationReport report = new TrafficRunner().run(spec, sink, null);
        assertThat(sink.flushes).isEqualTo(1);
        assertThat(report.messages()).isEqualTo(50_000).isEqualTo(sink.messages.size());
        assertThat(report.stoppedEarly()).isFalse();
        for (Kind k : Kind.values()) {
            assertThat(report.count(k)).as("%s", k).isEqualTo(sink.messages.stream().filter(m -> m.kind() == k).count());
        }
        assertThat(report.valid() + report.invalid()).isEqualTo(50_000);
        assertThat(report.totalBytes()).isEqualTo(sink.messages.stream().mapToLong(GeneratedMessage::size).sum());
        long min = sink.messages.stream().filter(m -> m.kind().isValid()).mapToLong(GeneratedMessage::eventTimeMillis).min().orElseThrow();
        long max = sink.messages.stream().filter(m -> m.kind().isValid()).mapToLong(GeneratedMessage::eventTimeMillis).max().orElseThrow();
        assertThat(report.minValidEventTime()).isEqualTo(Instant.ofEpochMilli(min));
        assertThat(report.maxValidEventTime()).isEqualTo(Instant.ofEpochMilli(max));
        assertThat(report.summary()).contains("50,000 messages", "late", "OVERSIZED");
    }

    @Test
    void pacesToTheRateBySleepingNotSpinning() {
        FakeTime time = new FakeTime();
        List<Progress> ticks = new ArrayList<>();
        TrafficSpec spec = TrafficSpec.builder().ratePerSecond(100_000).count(500_000).eventClockStart(Instant.EPOCH).build();
        GenerationReport report = time.runner().run(spec, new ListSink(), ticks::add);
        assertThat(report.messages()).isEqualTo(500_000);
        assertThat(report.elapsed()).isBetween(Duration.ofMillis(4_990), Duration.ofMillis(5_010));
        assertThat(time.sleeps).as("sleeps of >= 1 ms, not one per message").isBetween(4_000, 5_000);
        assertThat(ticks).hasSizeBetween(4, 5);
        assertThat(ticks.get(ticks.size() - 1).recentMessagesPerSecond()).isBetween(99_000.0, 101_000.0);
        assertThat(ticks.get(0).line()).contains("msg/s now");
    }

    @Test
    void slowRatesSleepBetweenEveryMessage() {
        FakeTime time = new FakeTime();
        TrafficSpec spec = TrafficSpec.builder().ratePerSecond(10).count(50).build();
        GenerationReport report = time.runner().run(spec, new ListSink(), null);
        assertThat(report.messages()).isEqualTo(50);
        assertThat(time.sleeps).isEqualTo(49);
        assertThat(report.elapsed()).isBetween(Duration.ofMillis(4_899), Duration.ofMillis(4_901));
    }

    @Test
    void durationBoundsALiveRun() {
        FakeTime time = new FakeTime();
        TrafficSpec spec = TrafficSpec.builder().ratePerSecond(1000).duration(Duration.ofSeconds(2)).build();
        assertThat(spec.count()).isNull();
        GenerationReport report = time.runner().run(spec, new ListSink(), null);
        assertThat(report.messages()).isBetween(1_999L, 2_001L);
        assertThat(report.stoppedEarly()).isFalse();
    }

    @Test
    void pacingIsRealOnTheRealClock() {
        TrafficSpec spec = TrafficSpec.builder().ratePerSecond(2000).count(1000).build();
        GenerationReport report = new TrafficRunner().run(spec, new ListSink(), null);
        assertThat(report.elapsed()).isBetween(Duration.ofMillis(450), Duration.ofMillis(2_000));
    }

    @Test
    void stopRequestEndsTheRunCleanly() {
        TrafficRunner runner = new TrafficRunner();
        ListSink sink = new ListSink() {
            @Override
            public void send(String topic, GeneratedMessage message) {
                super.send(topic, message);
                if (messages.size() == 100) {
                    runner.requestStop();
                }
            }
        };
        GenerationReport report = runner.run(TrafficSpec.builder().build(), sink, null);
        assertThat(report.messages()).isEqualTo(100);
        assertThat(report.stoppedEarly()).isTrue();
        assertThat(sink.flushes).isEqualTo(1);
        GenerationReport again = runner.run(TrafficSpec.builder().count(10).build(), new ListSink(), null);
        assertThat(again.messages()).isEqualTo(10);
        assertThat(again.stoppedEarly()).isFalse();
    }

    @Test
    void interruptionStopsAfterFlushingAndKeepsTheInterruptFlag() {
        FakeTime time = new FakeTime();
        TrafficRunner runner = new TrafficRunner(time::read, n -> {
            if (time.sleeps++ == 10) {
                throw new InterruptedException();
            }
            time.nanos += n;
        }, time.wallClock());
        ListSink sink = new ListSink();
        GenerationReport report = runner.run(TrafficSpec.builder().ratePerSecond(10).count(1000).build(), sink, null);
        assertThat(Thread.interrupted()).isTrue();
        assertThat(report.stoppedEarly()).isTrue();
        assertThat(report.messages()).isEqualTo(11);
        assertThat(sink.flushes).isEqualTo(1);
    }

    @Test
    void sinkFailurePropagates() {
        MessageSink failing = (topic, m) -> {
            throw new IllegalStateException("disk full");
        };
        assertThatThrownBy(() -> new TrafficRunner().run(TrafficSpec.builder().count(5).build(), failing, null))
                .hasMessage("disk full");
    }
}
