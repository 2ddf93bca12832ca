package io.tidemark.late;

/**
 * Spark's late-record rule, made explicit and replayable.
 *
 * <p>Spark records a watermark per micro-batch, {@code wm(N) = max(wm(N-1), maxEventTime(batches
 * < N) - lateness)}, and its windowed aggregation drops a row of batch N when its
 * {@code window_end <= wm(N-1)}: the watermark recorded for the previous batch (verified
 * against native aggregation; re-checked side by side in LateSplitVsSparkTest).
 * Tidemark calls that threshold "the watermark in force for batch N".
 *
 * <p>Writing the threshold of batch N+1 out: {@code T(N+1) = wm(N) = max(T(N), seen(N-1) - lateness)}
 * where {@code seen(k)} is the max valid event time over batches 0..k. So the threshold of a batch
 * depends only on earlier batches, and the ledger needs just one persisted row (the previous
 * batch's {@code stream_progress} row) to resume, which makes a replayed batch decide exactly as
 * the first attempt did. Far-future events never reach it: they are invalid before this point.
 */
public final class WatermarkLedger {

    /** What the ledger knows before a batch runs. */
    public record Position(long batchId, long watermarkMs, Long maxEventSeenBeforeMs) {
    }

    /** What a batch contributes, as persisted in its {@code stream_progress} row. */
    public record Entry(long batchId, long watermarkMs, long nextWatermarkMs, Long maxEventMs, Long maxEventSeenMs) {
    }

    private final long latenessMs;
    private Position next;

    private WatermarkLedger(long latenessMs, Position next) {
        if (latenessMs < 0) {
            throw new IllegalArgumentException("lateness must be >= 0 ms, got " + latenessMs);
        }
        this.latenessMs = latenessMs;
        this.next = next;
    }

    /** A new query: batch 0, watermark 0 (the epoch), as in Spark. */
    public static WatermarkLedger fresh(long latenessMs) {
        return new WatermarkLedger(latenessMs, new Position(0, 0L, null));
    }

    /** Resumes after a persisted batch: the next batch is {@code previous.batchId + 1}. */
    public static WatermarkLedger resumeAfter(Entry previous, long latenessMs) {
        return new WatermarkLedger(latenessMs,
                new Position(previous.batchId() + 1, previous.nextWatermarkMs(), previous.maxEventSeenMs()));
    }

    /** The position for the next batch. */
    public Position next() {
        return next;
    }

    /**
     * Records batch {@code batchId} (which must be the next one) with the max valid event time it
     * held (null if none) and advances.
     */
    public Entry record(long batchId, Long batchMaxEventMs) {
        if (batchId != next.batchId()) {
            throw new IllegalStateException("watermark ledger expects batch " + next.batchId() + ", got " + batchId);
        }
        Long seenBefore = next.maxEventSeenBeforeMs();
        Long seen = max(seenBefore, batchMaxEventMs);
        long nextWatermark = seenBefore == null ? next.watermarkMs() : Math.max(next.watermarkMs(), seenBefore - latenessMs);
        Entry e = new Entry(batchId, next.watermarkMs(), nextWatermark, batchMaxEventMs, seen);
        next = new Position(batchId + 1, nextWatermark, seen);
        return e;
    }

    private static Long max(Long a, Long b) {
        if (a == null) return b;
        if (b == null) return a;
        return Math.max(a, b);
    }
}
