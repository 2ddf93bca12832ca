package io.tidemark.reconcile;

import static org.apache.spark.sql.functions.col;

import java.time.Instant;
import java.time.LocalDate;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;

import io.tidemark.lakehouse.Lakehouse;
import io.tidemark.lakehouse.Lakehouse.Table;

/**
 * Which UTC days are closed: day D is closed once the stream's watermark has reached the next
 * midnight, {@code D+1 00:00 <= watermark}. The watermark is the {@code next_watermark} of the
 * {@code stream_progress} row with the highest batch id (the threshold the next micro-batch will
 * use); with no row nothing is closed. The stream never writes KPI rows of a closed day, which is
 * what lets reconcile overwrite it while the stream runs.
 */
public final class ClosedDays {

    private final Instant watermark;

    private ClosedDays(Instant watermark) {
        this.watermark = watermark;
    }

    /**
     * Closed days for a given watermark; null means the stream has not recorded one. The epoch is
     * Spark's "no watermark yet" (the first batches run with it), so it closes no day either: found
     * by the hostile-conditions suite, where an early reconcile picked 1969-12-30 and 1969-12-31.
     */
    public static ClosedDays at(Instant watermark) {
        return new ClosedDays(Instant.EPOCH.equals(watermark) ? null : watermark);
    }

    /** Reads the stream's current watermark from {@code stream_progress}. */
    public static ClosedDays load(SparkSession spark, Lakehouse lakehouse) {
        List<Row> rows = spark.read().format("delta").load(lakehouse.path(Table.STREAM_PROGRESS))
                .orderBy(col("batch_id").desc(), col("finished_at").desc())
                .select(col("next_watermark"))
                .limit(1)
                .collectAsList();
        return at(rows.isEmpty() ? null : rows.get(0).getTimestamp(0).toInstant());
    }

    /** The watermark the decision is based on; empty when the stream has not recorded one. */
    public Optional<Instant> watermark() {
        return Optional.ofNullable(watermark);
    }

    public boolean isClosed(LocalDate day) {
        return watermark != null && !endOf(day).isAfter(watermark);
    }

    /** The most recent closed day, if any. */
    public Optional<LocalDate> lastClosed() {
        if (watermark == null) {
            return Optional.empty();
        }
        return Optional.of(watermark.atZone(ZoneOffset.UTC).toLocalDate().minusDays(1));
    }

    /** The {@code n} most recent closed days, oldest first; empty when nothing is closed. */
    public List<LocalDate> mostRecent(int n) {
        List<LocalDate> days = new ArrayList<>();
        lastClosed().ifPresent(last -> {
            for (int i = n - 1; i >= 0; i--) {
                days.add(last.minusDays(i));
            }
        });
        return days;
    }

    /** Refuses an open (or future) day with a one-line message naming it and the watermark. */
    public void requireClosed(LocalDate day) {
        if (isClosed(day)) {
            return;
        }
        String why = watermark == null
                ? "the stream has not recorded a watermark yet (stream_progress is empty), so no day is closed"
                : "the stream's watermark is " + watermark + " and the day closes only when it reaches " + endOf(day)
                        + "; the last closed day is " + lastClosed().orElseThrow();
        throw new ReconcileRefusedException("day " + day + " is not closed: " + why + ". Reconcile closed days only.");
    }

    /** Midnight UTC after {@code day}: the instant the watermark must reach to close it. */
    public static Instant endOf(LocalDate day) {
        return day.plusDays(1).atStartOfDay(ZoneOffset.UTC).toInstant();
    }

    @Override
    public String toString() {
        return watermark == null ? "no watermark (nothing closed)"
                : "watermark " + watermark + ", last closed day " + lastClosed().orElseThrow();
    }
}
