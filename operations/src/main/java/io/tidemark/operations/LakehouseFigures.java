package io.tidemark.operations;

import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.time.LocalDate;
import java.util.List;
import java.util.NavigableMap;
import java.util.Optional;

import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;

import io.tidemark.lakehouse.ClosedDays;
import io.tidemark.lakehouse.DayBalance;
import io.tidemark.lakehouse.ExpiredDays;
import io.tidemark.lakehouse.Lakehouse;
import io.tidemark.lakehouse.Lakehouse.Table;
import io.tidemark.lakehouse.StreamProgress;

/**
 * The figures {@code status} and the demo's summary print, read from the tables: the last
 * progress rows, totals, the stream's closed-day decision and each day's balance.
 *
 * @param recent the newest stream_progress rows by finished_at, newest first (for display)
 * @param closed the stream's decision on closed days (from the row with the highest batch id)
 * @param days    raw and KPI record counts per event day
 * @param expired the days data retention deleted
 */
public record LakehouseFigures(List<StreamProgress> recent, ClosedDays closed, long rawEvents, long rawLate, long lateEvents, long deadLetters,
                        long kpiRows, long kpiFinalRows, NavigableMap<LocalDate, DayBalance> days, ExpiredDays expired) {

    /** Whether the stream has written anything here (checked without Spark when the lakehouse is local). */
    public static boolean progressTableExists(Lakehouse lakehouse) {
        String path = lakehouse.path(Table.STREAM_PROGRESS);
        if (path.contains("://") && !path.startsWith("file:")) {
            return true; // let Spark find out
        }
        Path p = path.startsWith("file:") ? Path.of(URI.create(path)) : Path.of(path);
        return Files.isDirectory(p.resolve("_delta_log"));
    }

    public static LakehouseFigures read(SparkSession spark, Lakehouse lakehouse, int lastBatches) {
        List<StreamProgress> recent = StreamProgress.newest(spark, lakehouse, lastBatches);
        long late = lakehouse.read(spark, Table.LATE_EVENTS).count();
        long dead = lakehouse.read(spark, Table.DEAD_LETTER).count();
        long kpiRows = 0;
        long kpiFinal = 0;
        for (Table t : lakehouse.kpiTables()) {
            Row kpi = lakehouse.read(spark, t).selectExpr("count(*)", "count_if(is_final)").first();
            kpiRows += kpi.getLong(0);
            kpiFinal += kpi.getLong(1);
        }
        NavigableMap<LocalDate, DayBalance> days = DayBalance.load(spark, lakehouse, null, null);
        long raw = days.values().stream().mapToLong(DayBalance::rawRecords).sum();
        long rawLate = days.values().stream().mapToLong(DayBalance::lateRecords).sum();
        return new LakehouseFigures(recent, ClosedDays.load(spark, lakehouse), raw, rawLate, late, dead, kpiRows, kpiFinal, days,
                ExpiredDays.load(spark, lakehouse));
    }

    public Optional<StreamProgress> last() {
        return recent.isEmpty() ? Optional.empty() : Optional.of(recent.get(0));
    }

    /** The watermark the stream decided its closed days with; empty before it recorded one. */
    public Optional<Instant> closingWatermark() {
        return closed.watermark().instant();
    }

    /** The days holding data that the stream has closed. */
    public List<LocalDate> closedDays() {
        return closed.among(days.keySet());
    }

    /** Closed days whose raw record count differs from the records their KPIs count. */
    public List<LocalDate> dirtyDays() {
        return DayBalance.dirtyDays(days, closed, expired);
    }
}
