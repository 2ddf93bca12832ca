package io.tidemark.lakehouse;

import java.time.Duration;
import java.time.Instant;
import java.time.LocalDate;
import java.util.Collection;
import java.util.List;
import java.util.Optional;

import org.apache.spark.sql.SparkSession;

import io.tidemark.pipeline.Watermark;

/**
 * Which UTC days are closed, as the stream decided it: every day up to and including
 * {@link #lastClosed()}. The stream makes the decision with {@link Watermark#lastClosedDay()} from
 * the watermark in force for its next batch and records it in each {@code stream_progress} row
 * ({@code last_closed_day}); everyone else (reconcile, {@code tidemark status}, the demo, the
 * Airflow DAG) reads it from the row with the highest batch id. The stream never writes KPI rows of
 * a closed day, which is what lets reconcile overwrite it while the stream runs.
 */
public final class ClosedDays {

    /** The column of stream_progress that holds the decision. */
    public static final String COLUMN = "last_closed_day";

    private final Watermark watermark;
    private final LocalDate lastClosed;
    /** False when the newest progress row holds no decision (written by an earlier version of Tidemark). */
    private final boolean recorded;

    private ClosedDays(Watermark watermark, LocalDate lastClosed, boolean recorded) {
        this.watermark = watermark;
        this.lastClosed = lastClosed;
        this.recorded = recorded;
    }

    /** The decision for the watermark in force for the next batch (what the stream records). */
    public static ClosedDays decidedBy(Watermark next) {
        return new ClosedDays(next, next.lastClosedDay().orElse(null), true);
    }

    /**
     * The decision for the watermark in force for the next batch when a day's last windows end
     * {@code spill} after its midnight (a hopping window that starts before midnight ends after it:
     * {@link io.tidemark.pipeline.Pipeline#daySpill}): a day closes when every window starting
     * on it has.
     */
    public static ClosedDays decidedBy(Watermark next, Duration spill) {
        if (spill.isZero() || !next.isRecorded()) {
            return decidedBy(next);
        }
        Watermark shifted = Watermark.ofMillis(Math.max(1L, next.millis() - spill.toMillis()));
        return new ClosedDays(next, shifted.lastClosedDay().orElse(null), true);
    }

    /** Nothing closed: the stream has recorded no batch. */
    public static ClosedDays none() {
        return decidedBy(Watermark.NONE);
    }

    /**
     * Reads the decision from {@code stream_progress}: the row with the highest batch id (the newest
     * finished_at on a tie). Readers never decide again: a row without a decision (written by an
     * earlier version of Tidemark, before the column existed) closes nothing until the stream's next
     * micro-batch records one.
     */
    public static ClosedDays load(SparkSession spark, Lakehouse lakehouse) {
        return StreamProgress.last(spark, lakehouse).map(StreamProgress::closedDays).orElseGet(ClosedDays::none);
    }

    /** The decision a stream_progress row records ({@link StreamProgress#closedDays()}). */
    static ClosedDays recorded(Instant nextWatermark, LocalDate lastClosedDay) {
        Watermark next = Watermark.of(nextWatermark);
        if (lastClosedDay == null) {
            // Null is also the stream's own "nothing closed yet"; an undecided row tells only if its watermark closes a day.
            return new ClosedDays(next, null, next.lastClosedDay().isEmpty());
        }
        return new ClosedDays(next, lastClosedDay, true);
    }

    /** The watermark the decision was made with ({@link Watermark#NONE} when the stream has recorded none). */
    public Watermark watermark() {
        return watermark;
    }

    /** The most recent closed day, if any. */
    public Optional<LocalDate> lastClosed() {
        return Optional.ofNullable(lastClosed);
    }

    public boolean isClosed(LocalDate day) {
        return lastClosed != null && !day.isAfter(lastClosed);
    }

    /** The {@code n} most recent closed days, oldest first; empty when nothing is closed. */
    public List<LocalDate> mostRecent(int n) {
        return lastClosed == null ? List.of() : Watermark.daysUpTo(lastClosed, n);
    }

    /** The closed days among {@code days}, sorted. */
    public List<LocalDate> among(Collection<LocalDate> days) {
        return days.stream().filter(this::isClosed).sorted().toList();
    }

    /** Why {@code day} is not closed, in one sentence; empty when it is closed. */
    public Optional<String> whyOpen(LocalDate day) {
        if (isClosed(day)) {
            return Optional.empty();
        }
        if (!watermark.isRecorded()) {
            return Optional.of("day " + day + " is not closed: the stream has not recorded a watermark yet, so no day is closed");
        }
        if (!recorded) {
            return Optional.of("day " + day + " is not closed: the stream has not recorded which days are closed yet (its last "
                    + "stream_progress row comes from an earlier version of Tidemark); the stream records it from its next micro-batch on");
        }
        return Optional.of("day " + day + " is not closed: the stream's watermark is " + watermark + " and the day closes only when it reaches "
                + Watermark.endOf(day) + (lastClosed == null ? "; no day is closed yet" : "; the last closed day is " + lastClosed));
    }

    @Override
    public String toString() {
        return !watermark.isRecorded() ? "no watermark (nothing closed)"
                : "watermark " + watermark + (lastClosed == null ? ", no day closed" : ", last closed day " + lastClosed);
    }
}
