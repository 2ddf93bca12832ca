package io.tidemark.output;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.LocalDate;

import org.junit.jupiter.api.Test;

import io.tidemark.output.KpiPublisher.Progress;

class KpiPublisherTest {
    /** The progress record's value: a version published whole, or a first publication's days so far. */
    @Test
    void progressIsAVersionOrAFirstPublicationsLastDay() {
        assertThat(new Progress(12, null).encode()).isEqualTo("12");
        assertThat(new Progress(12, LocalDate.parse("2026-12-01")).encode()).isEqualTo("12 2026-12-01");
        assertThat(Progress.decode("12")).isEqualTo(new Progress(12, null));
        assertThat(Progress.decode("12")).matches(Progress::complete);
        assertThat(Progress.decode("12 2026-12-01")).isEqualTo(new Progress(12, LocalDate.parse("2026-12-01")));
        assertThat(Progress.decode("12 2026-12-01").complete()).isFalse();
    }
}
