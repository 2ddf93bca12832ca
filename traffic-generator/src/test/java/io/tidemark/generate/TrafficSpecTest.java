package io.tidemark.generate;

import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.time.Instant;
import java.util.function.UnaryOperator;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class TrafficSpecTest {

    @Test
    void defaults() {
        TrafficSpec s = TrafficSpec.builder().build();
        assertThat(s.topic()).isEqualTo("network-events");
        assertThat(s.count()).isEqualTo(1_000_000L);
        assertThat(s.duration()).isNull();
        assertThat(s.ratePerSecond()).isZero();
        assertThat(s.cells()).isEqualTo(200);
        assertThat(s.subscribers()).isEqualTo(10_000);
        assertThat(s.outOfOrderSpread()).isEqualTo(Duration.ofMinutes(2));
        assertThat(s.lateFraction()).isEqualTo(0.01);
        assertThat(s.lateDelayMin()).isEqualTo(Duration.ofMinutes(20));
        assertThat(s.lateDelayMax()).isEqualTo(Duration.ofMinutes(60));
        assertThat(s.invalidFraction()).isEqualTo(0.005);
        assertThat(s.eventClockStart()).isNull();
        assertThat(s.ingestMode()).isEqualTo(IngestMode.AUTO);
        assertThat(s.resolvedIngestMode()).isEqualTo(IngestMode.BACKLOG);
        assertThat(s.eventsPerSecondOfEventTime()).isEqualTo(1000.0);
        assertThat(s.backlogSpan()).isEqualTo(Duration.ofSeconds(1000));
        assertThat(s.oversizedBytes()).isEqualTo(128 * 1024);
        assertThat(s.toBuilder().build()).isEqualTo(s);
    }

    @Test
    void modeFollowsPacingUnlessAClockStartIsGiven() {
        assertThat(TrafficSpec.builder().ratePerSecond(500).build().resolvedIngestMode()).isEqualTo(IngestMode.LIVE);
        assertThat(TrafficSpec.builder().ratePerSecond(500).eventClockStart(Instant.EPOCH).build().resolvedIngestMode())
                .isEqualTo(IngestMode.BACKLOG);
        assertThat(TrafficSpec.builder().ingestMode(IngestMode.LIVE).build().resolvedIngestMode()).isEqualTo(IngestMode.LIVE);
    }

    @Test
    void aDurationReplacesTheDefaultCountButNotAnExplicitOne() {
        TrafficSpec byDuration = TrafficSpec.builder().ratePerSecond(100).duration(Duration.ofMinutes(5)).build();
        assertThat(byDuration.count()).isNull();
        assertThat(byDuration.duration()).isEqualTo(Duration.ofMinutes(5));
        TrafficSpec both = TrafficSpec.builder().count(10).duration(Duration.ofMinutes(5)).build();
        assertThat(both.count()).isEqualTo(10L);
        assertThat(TrafficSpec.builder().ratePerSecond(5).count(null).build().count()).isNull();
    }

    private static void rejects(UnaryOperator<TrafficSpec.Builder> change, String... messageParts) {
        assertThatThrownBy(() -> change.apply(TrafficSpec.builder()).build())
                .isInstanceOf(IllegalArgumentException.class)
                .message().contains(messageParts);
    }

    @Test
    void rejectsBadValuesWithClearMessages() {
        rejects(b -> b.lateFraction(-0.1), "lateFraction must be between 0 and 1; got -0.1");
        rejects(b -> b.invalidFraction(1.5), "invalidFraction must be between 0 and 1; got 1.5");
        rejects(b -> b.invalidFraction(Double.NaN), "invalidFraction", "NaN");
        rejects(b -> b.lateFraction(0.6).invalidFraction(0.5), "lateFraction + invalidFraction must not exceed 1",
                "0.6 + 0.5");
        rejects(b -> b.cells(0), "cells must be between 1 and", "got 0");
        rejects(b -> b.subscribers(-3), "subscribers must be between 1 and", "got -3");
        rejects(b -> b.count(0), "count must be at least 1", "got 0");
        rejects(b -> b.ratePerSecond(-1), "ratePerSecond must be a finite number >= 0", "got -1.0");
        rejects(b -> b.ratePerSecond(Double.POSITIVE_INFINITY), "ratePerSecond", "Infinity");
        rejects(b -> b.topic("bad topic"), "topic must be a legal Kafka topic name", "'bad topic'");
        rejects(b -> b.topic(""), "topic must be a legal Kafka topic name", "''");
        rejects(b -> b.topic(null), "topic must be a legal Kafka topic name", "null");
        rejects(b -> b.duration(Duration.ZERO), "duration must be positive", "PT0S");
        rejects(b -> b.outOfOrderSpread(Duration.ofSeconds(-1)), "outOfOrderSpread must be between 0 and 365 days");
        rejects(b -> b.outOfOrderSpread(null), "outOfOrderSpread must be between 0 and 365 days; got null");
        rejects(b -> b.lateDelay(Duration.ofMinutes(60), Duration.ofMinutes(20)),
                "lateDelayMin must not exceed lateDelayMax; got PT1H > PT20M");
        rejects(b -> b.lateDelay(Duration.ofMinutes(1), Duration.ofMinutes(5)),
                "lateDelayMin (PT1M) must be greater than outOfOrderSpread (PT2M)");
        rejects(b -> b.eventsPerSecondOfEventTime(0), "eventsPerSecondOfEventTime must be a finite number > 0; got 0.0");
        rejects(b -> b.oversizedBytes(100), "oversizedBytes must be between 1024 and 1000000", "got 100");
        rejects(b -> b.ingestMode(IngestMode.LIVE).eventClockStart(Instant.EPOCH), "eventClockStart",
                "only applies to BACKLOG mode");
        rejects(b -> b.duration(Duration.ofMinutes(5)), "BACKLOG mode needs a count");
        rejects(b -> b.count(null), "BACKLOG mode needs a count");
        rejects(b -> b.count(Long.MAX_VALUE).eventsPerSecondOfEventTime(0.001), "more than 10 years");
    }

    @Test
    void lateDelayMayOverlapTheSpreadWhenThereAreNoLateEvents() {
        TrafficSpec s = TrafficSpec.builder().lateFraction(0).lateDelay(Duration.ZERO, Duration.ZERO).build();
        assertThat(s.lateFraction()).isZero();
    }
}
