package io.tidemark.stream;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Map;

import org.junit.jupiter.api.Test;

/** The gap rules per partition, without Spark or Kafka. */
class KafkaGapsTest {

    private static KafkaGaps.Gap gap(int p, long expected, Long resumed, Long lost, String kind) {
        return new KafkaGaps.Gap("t", p, expected, resumed, lost, kind);
    }

    @Test
    void aContiguousBatchHasNoGap() {
        assertThat(KafkaGaps.find("t", Map.of(0, 5L, 1, 7L), Map.of(0, 9L, 1, 7L), Map.of(0, new long[] {5, 4}))).isEmpty();
    }

    @Test
    void recordsRemovedBeforeTheyWereReadAreAGapUpToTheFirstOffsetRead() {
        assertThat(KafkaGaps.find("t", Map.of(0, 5L), Map.of(0, 15L), Map.of(0, new long[] {9, 6})))
                .containsExactly(gap(0, 5, 9L, 4L, KafkaGaps.OUT_OF_RANGE));
    }

    @Test
    void aRangeRemovedWholeIsAGapUpToItsEnd() {
        assertThat(KafkaGaps.find("t", Map.of(0, 5L), Map.of(0, 15L), Map.of()))
                .containsExactly(gap(0, 5, 15L, 10L, KafkaGaps.OUT_OF_RANGE));
    }

    @Test
    void offsetsGoingBackwardsAreARecreatedTopicOfUnknownLoss() {
        assertThat(KafkaGaps.find("t", Map.of(0, 15L, 1, 15L), Map.of(0, 3L, 1, 20L), Map.of(1, new long[] {15, 5})))
                .containsExactly(gap(0, 15, 3L, null, KafkaGaps.TOPIC_RECREATED));
    }

    @Test
    void deletedAndLateAddedPartitions() {
        assertThat(KafkaGaps.find("t", Map.of(0, 4L, 1, 6L), Map.of(0, 4L, 2, 9L), Map.of(2, new long[] {7, 2})))
                .containsExactly(gap(1, 6, null, null, KafkaGaps.PARTITION_DELETED), gap(2, 0, 7L, 7L, KafkaGaps.PARTITION_ADDED_LATE));
        assertThat(KafkaGaps.find("t", Map.of(0, 4L), Map.of(0, 4L, 1, 3L), Map.of(1, new long[] {0, 3}))).isEmpty();
    }
}
