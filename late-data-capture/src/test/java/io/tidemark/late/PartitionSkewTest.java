package io.tidemark.late;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Map;

import org.junit.jupiter.api.Test;

import io.tidemark.lakehouse.PartitionClock;

class PartitionSkewTest {

    @Test
    void eachPartitionsLagBehindTheLeadingOne() {
        PartitionSkew s = PartitionSkew.of(Map.of(0, new PartitionClock(9_000, 1), 1, new PartitionClock(3_000, 1),
                2, new PartitionClock(9_000, 1), 3, new PartitionClock(8_000, 1)));
        assertThat(s).isEqualTo(new PartitionSkew(0, 1, 6_000, Map.of(0, 0L, 1, 6_000L, 2, 0L, 3, 1_000L)));
        assertThat(PartitionSkew.of(Map.of())).isNull();
    }
}
