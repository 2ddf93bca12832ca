package io.tidemark.pipeline;

import static org.apache.spark.sql.functions.expr;

import java.time.Instant;
import java.time.LocalDate;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

import org.apache.spark.sql.Column;

/**
 * A watermark, and the one rule of Tidemark that everything about "closed" derives from:
 * <b>what ends at or before the watermark is closed</b>.
 *
 * <ul>
 *   <li>A record is <em>late</em> when its window ends at or before the watermark in force for its
 *       micro-batch (Spark's rule: the watermark recorded for the previous batch).</li>
 *   <li>A window is <em>final</em> when it ends at or before the watermark in force for the next
 *       batch: no later record can be counted in it by the stream.</li>
 *   <li>A UTC day is <em>closed</em> when it ends (the next midnight) at or before that watermark:
 *       the stream will never write its KPI rows again, so reconcile may replace them.</li>
 * </ul>
 *
 * <p>The value is Spark's: epoch milliseconds, where the epoch itself is Spark's "no watermark
 * yet" (the first batches of a query run with it). Late and final follow Spark to the millisecond,
 * epoch included; a day is closed only by a watermark that was actually recorded, so the epoch
 * closes no day (not even 1969-12-31).
 */
public final class Watermark {

    /** Spark's "no watermark yet". */
    public static final Watermark NONE = new Watermark(0L);

    private final long millis;

    private Watermark(long millis) {
        this.millis = millis;
    }

    public static Watermark ofMillis(long millis) {
        return millis == 0L ? NONE : new Watermark(millis);
    }

    /** Null means no watermark recorded: {@link #NONE}. */
    public static Watermark of(Instant instant) {
        return instant == null ? NONE : ofMillis(instant.toEpochMilli());
    }

    public long millis() {
        return millis;
    }

    /** Whether a watermark was recorded at all: false for {@link #NONE}. */
    public boolean isRecorded() {
        return millis != 0L;
    }

    /** The watermark as an instant; empty for {@link #NONE}. */
    public Optional<Instant> instant() {
        return isRecorded() ? Optional.of(Instant.ofEpochMilli(millis)) : Optional.empty();
    }

    /** Something ending at {@code endMillis} is closed: a window final, a record of that window late. */
    public boolean closes(long endMillis) {
        return endMillis <= millis;
    }

    /** {@link #closes(long)} as a Spark column over a TIMESTAMP column of window ends. */
    public Column closes(Column end) {
        return end.leq(column());
    }

    /** The watermark as a TIMESTAMP column, kept out of Spark's generated code ({@link BatchConstant}). */
    public Column column() {
        return org.apache.spark.sql.functions.timestamp_millis(BatchConstant.of(millis));
    }

    /** Whether the UTC day is closed: its end is at or before a recorded watermark. */
    public boolean closes(LocalDate day) {
        return isRecorded() && closes(endOf(day).toEpochMilli());
    }

    /**
     * {@link #closes(LocalDate)} as a Spark column: whether the watermark in column {@code watermark}
     * (TIMESTAMP) closes the UTC day in column {@code day} (DATE). Needs a UTC session, as every
     * Tidemark session is.
     */
    public static Column closesDay(Column watermark, Column day) {
        return watermark.gt(expr("timestamp_millis(0L)")).and(watermark.geq(org.apache.spark.sql.functions.date_add(day, 1).cast("timestamp")));
    }

    /** The most recent closed day; empty when none is. */
    public Optional<LocalDate> lastClosedDay() {
        if (!isRecorded()) {
            return Optional.empty();
        }
        // The day before the one the watermark is in: that day ends at or before the watermark.
        return Optional.of(Instant.ofEpochMilli(millis).atZone(ZoneOffset.UTC).toLocalDate().minusDays(1));
    }

    /** Midnight UTC after {@code day}: the instant the watermark must reach to close it. */
    public static Instant endOf(LocalDate day) {
        return day.plusDays(1).atStartOfDay(ZoneOffset.UTC).toInstant();
    }

    /** The {@code n} days up to and including {@code last}, oldest first. */
    public static List<LocalDate> daysUpTo(LocalDate last, int n) {
        List<LocalDate> days = new ArrayList<>();
        for (int i = n - 1; i >= 0; i--) {
            days.add(last.minusDays(i));
        }
        return days;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Watermark w && w.millis == millis;
    }

    @Override
    public int hashCode() {
        return Long.hashCode(millis);
    }

    @Override
    public String toString() {
        return isRecorded() ? Instant.ofEpochMilli(millis).toString() : "none (epoch)";
    }
}
