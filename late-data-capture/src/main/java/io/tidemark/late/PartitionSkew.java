package io.tidemark.late;

import java.util.Collections;
import java.util.Map;
import java.util.TreeMap;

import io.tidemark.lakehouse.PartitionClock;

/**
 * How far each Kafka partition's event clock (its max valid event time) trails the leading
 * partition's: the skew that makes Spark's watermark call a lagging partition's records late. Read
 * by the stream's warning and metrics and by {@code tidemark status}.
 *
 * @param leading the partition with the newest event time (the lowest number on a tie)
 * @param trailing the partition with the oldest (the lowest number on a tie)
 * @param behindMs how far {@code trailing} trails {@code leading}
 * @param behindByPartition every partition's lag behind the leading one (0 for the leader)
 */
public record PartitionSkew(int leading, int trailing, long behindMs, Map<Integer, Long> behindByPartition) {

    /** Null when no partition has had a valid record. */
    public static PartitionSkew of(Map<Integer, PartitionClock> clocks) {
        if (clocks.isEmpty()) {
            return null;
        }
        int leading = -1;
        int trailing = -1;
        long max = Long.MIN_VALUE;
        long min = Long.MAX_VALUE;
        for (Map.Entry<Integer, PartitionClock> e : new TreeMap<>(clocks).entrySet()) {
            long t = e.getValue().maxEventMs();
            if (t > max) {
                max = t;
                leading = e.getKey();
            }
            if (t < min) {
                min = t;
                trailing = e.getKey();
            }
        }
        Map<Integer, Long> behind = new TreeMap<>();
        for (Map.Entry<Integer, PartitionClock> e : clocks.entrySet()) {
            behind.put(e.getKey(), max - e.getValue().maxEventMs());
        }
        return new PartitionSkew(leading, trailing, max - min, Collections.unmodifiableMap(behind));
    }
}
