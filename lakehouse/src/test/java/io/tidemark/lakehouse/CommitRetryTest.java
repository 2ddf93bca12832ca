package io.tidemark.lakehouse;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.Test;

import io.delta.exceptions.ConcurrentAppendException;
import io.delta.exceptions.ConcurrentWriteException;

class CommitRetryTest {
    private static final LocalDate DAY = LocalDate.parse("2026-11-27");
    private final List<Duration> slept = new ArrayList<>();
    private final CommitRetry retry = new CommitRetry(5, Duration.ofMillis(100), slept::add);

    @Test
    void aConflictIsRetriedWithGrowingJitteredBackoff() {
        AtomicInteger calls = new AtomicInteger();
        int attempts = retry.run(DAY, "replacing the KPI rows", "re-run reconcile for it", () -> {
            if (calls.incrementAndGet() < 4) {
                // as Spark may hand it over: wrapped
                throw new RuntimeException("write failed", new ConcurrentAppendException("Files were added to partition [event_date=2026-11-27]"));
            }
        });
        assertThat(attempts).isEqualTo(4);
        assertThat(slept).hasSize(3);
        assertThat(slept.get(0).toMillis()).isBetween(50L, 100L);
        assertThat(slept.get(1).toMillis()).isBetween(100L, 200L);
        assertThat(slept.get(2).toMillis()).isBetween(200L, 400L);
    }

    @Test
    void afterFiveConflictsTheDayFailsLoudly() {
        AtomicInteger calls = new AtomicInteger();
        assertThatThrownBy(() -> retry.run(DAY, "replacing the KPI rows", "re-run reconcile for it", () -> {
            calls.incrementAndGet();
            throw new ConcurrentWriteException("A concurrent transaction has written new data");
        })).isInstanceOf(CommitFailedException.class)
                .hasMessageStartingWith("replacing the KPI rows of 2026-11-27 gave up after 5 attempts: concurrent writers kept conflicting")
                .satisfies(e -> assertThat(((CommitFailedException) e).day()).isEqualTo(DAY));
        assertThat(calls.get()).isEqualTo(5);
        assertThat(slept).hasSize(4);
    }

    @Test
    void otherFailuresAreNotRetried() {
        AtomicInteger calls = new AtomicInteger();
        assertThatThrownBy(() -> retry.run(DAY, "replacing the KPI rows", "re-run reconcile for it", () -> {
            calls.incrementAndGet();
            throw new IllegalStateException("disk full\nmore detail");
        })).isInstanceOf(CommitFailedException.class).hasMessage("replacing the KPI rows of 2026-11-27 failed: disk full");
        assertThat(calls.get()).isEqualTo(1);
        assertThat(slept).isEmpty();
    }
}
