package io.tidemark.late;

import java.util.Collections;
import java.util.Map;
import java.util.TreeMap;

import io.tidemark.lakehouse.TidemarkConfig.WatermarkPolicy;
import io.tidemark.lakehouse.PartitionClock;

/**
 * The watermark rule, made explicit and replayable.
 *
 * <p>Spark records a watermark per micro-batch, {@code wm(N) = max(wm(N-1), maxEventTime(batches
 * < N) - lateness)}, and its windowed aggregation drops a row of batch N when its
 * {@code window_end <= wm(N-1)}: the watermark recorded for the previous batch (verified
 * against native aggregation; re-checked side by side in LateSplitVsSparkTest).
 * Tidemark calls that threshold "the watermark in force for batch N".
 *
 * <p>Writing the threshold of batch N+1 out: {@code T(N+1) = max(T(N), E(N-1))} where {@code E(k)}
 * is the policy's event clock over batches 0..k:
 * <ul>
 *   <li>{@link WatermarkPolicy#SPARK}: the max valid event time over every partition, minus the lateness
 *       (Spark's own rule, unchanged);</li>
 *   <li>{@link WatermarkPolicy#MIN_PARTITION}: the minimum, over the Kafka partitions that are not idle, of
 *       each partition's max valid event time, minus the lateness. A partition is idle for
 *       {@code T(N+1)} when batch N started (Spark's batch timestamp) at least the idle timeout after
 *       the start of the last batch that gave it a valid record. When every partition is idle the
 *       clock is Spark's (the max over all), so a quiet topic still closes its windows.</li>
 * </ul>
 * So the threshold of a batch depends only on earlier batches and on batch timestamps Spark keeps in
 * its offset log: the ledger needs just one persisted row (the previous batch's
 * {@code stream_progress} row, with its partition clocks) to resume, and a replayed batch decides
 * exactly as the first attempt did. Far-future events never reach it: they are invalid before this
 * point. The threshold never decreases.
 */
public final class WatermarkLedger {

    /**
     * What the ledger knows before a batch runs.
     *
     * @param partitionsBefore each partition's clock over the batches before this one
     */
    public record Position(long batchId, long watermarkMs, Long maxEventSeenBeforeMs, Map<Integer, PartitionClock> partitionsBefore) {
        public Position {
            partitionsBefore = Collections.unmodifiableMap(new TreeMap<>(partitionsBefore));
        }
    }

    /**
     * What a batch contributes, as persisted in its {@code stream_progress} row.
     *
     * @param batchTimeMs Spark's timestamp of the batch (from its offset log)
     * @param partitions each partition's clock over this and every earlier batch
     */
    public record Entry(long batchId, long watermarkMs, long nextWatermarkMs, Long maxEventMs, Long maxEventSeenMs, long batchTimeMs,
                        Map<Integer, PartitionClock> partitions) {
        public Entry {
            partitions = Collections.unmodifiableMap(new TreeMap<>(partitions));
        }
    }

    private final WatermarkPolicy policy;
    private final long latenessMs;
    private final long idleTimeoutMs;
    private Position next;

    private WatermarkLedger(WatermarkPolicy policy, long latenessMs, long idleTimeoutMs, Position next) {
        if (latenessMs < 0) {
            throw new IllegalArgumentException("lateness must be >= 0 ms, got " + latenessMs);
        }
        if (idleTimeoutMs <= 0) {
            throw new IllegalArgumentException("idle timeout must be > 0 ms, got " + idleTimeoutMs);
        }
        this.policy = policy;
        this.latenessMs = latenessMs;
        this.idleTimeoutMs = idleTimeoutMs;
        this.next = next;
    }

    /** A new query: batch 0, watermark 0 (the epoch), as in Spark. */
    public static WatermarkLedger fresh(WatermarkPolicy policy, long latenessMs, long idleTimeoutMs) {
        return new WatermarkLedger(policy, latenessMs, idleTimeoutMs, new Position(0, 0L, null, Map.of()));
    }

    /** Resumes after a persisted batch: the next batch is {@code previous.batchId + 1}. */
    public static WatermarkLedger resumeAfter(Entry previous, WatermarkPolicy policy, long latenessMs, long idleTimeoutMs) {
        return new WatermarkLedger(policy, latenessMs, idleTimeoutMs,
                new Position(previous.batchId() + 1, previous.nextWatermarkMs(), previous.maxEventSeenMs(), previous.partitions()));
    }

    /** The position for the next batch. */
    public Position next() {
        return next;
    }

    public WatermarkPolicy policy() {
        return policy;
    }

    /**
     * Records batch {@code batchId} (which must be the next one) with each partition's max valid
     * event time in it (partitions without a valid record absent) and Spark's timestamp of the batch,
     * and advances: {@link #entryFor} then {@link #advancePast}.
     */
    public Entry record(long batchId, Map<Integer, Long> batchMaxEventMsByPartition, long batchTimeMs) {
        Entry e = entryFor(batchId, batchMaxEventMsByPartition, batchTimeMs);
        advancePast(e);
        return e;
    }

    /** What batch {@code batchId} (which must be the next one) contributes, without advancing: the ledger is unchanged. */
    public Entry entryFor(long batchId, Map<Integer, Long> batchMaxEventMsByPartition, long batchTimeMs) {
        if (batchId != next.batchId()) {
            throw new IllegalStateException("watermark ledger expects batch " + next.batchId() + ", got " + batchId);
        }
        Long seenBefore = next.maxEventSeenBeforeMs();
        Long batchMax = batchMaxEventMsByPartition.values().stream().max(Long::compare).orElse(null);
        Long seen = max(seenBefore, batchMax);
        Long clock = policy == WatermarkPolicy.SPARK ? seenBefore : minOverActive(next.partitionsBefore(), batchTimeMs, seenBefore);
        long nextWatermark = clock == null ? next.watermarkMs() : Math.max(next.watermarkMs(), clock - latenessMs);
        Map<Integer, PartitionClock> partitions = new TreeMap<>(next.partitionsBefore());
        batchMaxEventMsByPartition.forEach((p, ms) -> partitions.merge(p, new PartitionClock(ms, batchTimeMs),
                (old, now) -> new PartitionClock(Math.max(old.maxEventMs(), now.maxEventMs()), batchTimeMs)));
        return new Entry(batchId, next.watermarkMs(), nextWatermark, batchMax, seen, batchTimeMs, partitions);
    }

    /** Moves past {@code e}, the {@link #entryFor} of the next batch: the batch after it is next. */
    public void advancePast(Entry e) {
        if (e.batchId() != next.batchId()) {
            throw new IllegalStateException("watermark ledger expects batch " + next.batchId() + ", got " + e.batchId());
        }
        next = new Position(e.batchId() + 1, e.nextWatermarkMs(), e.maxEventSeenMs(), e.partitions());
    }

    /** Whether a partition's clock no longer holds the watermark back at a batch starting at {@code batchTimeMs}. */
    public boolean isIdle(PartitionClock clock, long batchTimeMs) {
        return batchTimeMs - clock.lastRecordBatchTimeMs() >= idleTimeoutMs;
    }

    private Long minOverActive(Map<Integer, PartitionClock> clocks, long batchTimeMs, Long seenBefore) {
        Long min = null;
        for (PartitionClock c : clocks.values()) {
            if (!isIdle(c, batchTimeMs)) {
                min = min == null ? c.maxEventMs() : Math.min(min, c.maxEventMs());
            }
        }
        // Every partition idle (or none seen yet): the topic is quiet, so the leading clock closes windows, as Spark would.
        return min == null ? seenBefore : min;
    }

    private static Long max(Long a, Long b) {
        if (a == null) return b;
        if (b == null) return a;
        return Math.max(a, b);
    }
}
