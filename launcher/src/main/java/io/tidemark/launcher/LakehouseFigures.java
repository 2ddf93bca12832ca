package io.tidemark.launcher;

import static org.apache.spark.sql.functions.col;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.time.LocalDate;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;

import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;

import io.tidemark.lakehouse.Lakehouse;
import io.tidemark.lakehouse.Lakehouse.Table;

/**
 * The figures {@code status} and the demo's summary print, read from the tables: the last
 * progress rows, totals, and per-day counts to tell closed and dirty days.
 *
 * @param recent the newest stream_progress rows, newest first
 * @param days raw and KPI record counts per event day, sorted
 */
record LakehouseFigures(List<ProgressRow> recent, long rawEvents, long rawLate, long lateEvents, long deadLetters,
                        long kpiRows, long kpiFinalRows, Map<LocalDate, DayCounts> days) {

    /** One event day: records in raw_events (late ones included) and records counted in kpi_5m. */
    record DayCounts(long raw, long late, long kpi) {
        boolean agree() {
            return raw == kpi;
        }
    }

    /** Whether the stream has written anything here (checked without Spark when the lakehouse is local). */
    static boolean progressTableExists(Lakehouse lakehouse) {
        String path = lakehouse.path(Table.STREAM_PROGRESS);
        if (path.contains("://") && !path.startsWith("file:")) {
            return true; // let Spark find out
        }
        Path p = path.startsWith("file:") ? Path.of(java.net.URI.create(path)) : Path.of(path);
        return Files.isDirectory(p.resolve("_delta_log"));
    }

    static LakehouseFigures read(SparkSession spark, Lakehouse lakehouse, int lastBatches) {
        List<ProgressRow> recent = spark.read().format("delta").load(lakehouse.path(Table.STREAM_PROGRESS))
                .orderBy(col("finished_at").desc(), col("batch_id").desc())
                .limit(lastBatches)
                .select(ProgressRow.COLUMNS.stream().map(org.apache.spark.sql.functions::col).toArray(org.apache.spark.sql.Column[]::new))
                .collectAsList().stream().map(ProgressRow::new).toList();
        Row raw = spark.sql("SELECT count(*), count_if(is_late) FROM " + lakehouse.ref(Table.RAW_EVENTS)).first();
        long late = spark.sql("SELECT count(*) FROM " + lakehouse.ref(Table.LATE_EVENTS)).first().getLong(0);
        long dead = spark.sql("SELECT count(*) FROM " + lakehouse.ref(Table.DEAD_LETTER)).first().getLong(0);
        Row kpi = spark.sql("SELECT count(*), count_if(is_final) FROM " + lakehouse.ref(Table.KPI_5M)).first();
        Map<LocalDate, long[]> perDay = new TreeMap<>();
        for (Row r : spark.sql("SELECT event_date, count(*), count_if(is_late) FROM " + lakehouse.ref(Table.RAW_EVENTS)
                + " GROUP BY event_date").collectAsList()) {
            long[] c = perDay.computeIfAbsent(r.getDate(0).toLocalDate(), d -> new long[3]);
            c[0] = r.getLong(1);
            c[1] = r.getLong(2);
        }
        for (Row r : spark.sql("SELECT event_date, sum(record_count) FROM " + lakehouse.ref(Table.KPI_5M)
                + " GROUP BY event_date").collectAsList()) {
            perDay.computeIfAbsent(r.getDate(0).toLocalDate(), d -> new long[3])[2] = r.isNullAt(1) ? 0 : r.getLong(1);
        }
        Map<LocalDate, DayCounts> days = new TreeMap<>();
        perDay.forEach((d, c) -> days.put(d, new DayCounts(c[0], c[1], c[2])));
        return new LakehouseFigures(recent, raw.getLong(0), raw.getLong(1), late, dead, kpi.getLong(0), kpi.getLong(1), days);
    }

    Optional<ProgressRow> last() {
        return recent.isEmpty() ? Optional.empty() : Optional.of(recent.get(0));
    }

    /** The next watermark of the newest batch: days ending at or before it are closed. */
    Optional<Instant> closingWatermark() {
        return last().map(r -> r.nextWatermark().toInstant());
    }

    /** Days with data whose end (midnight UTC after) is at or before the next watermark. */
    List<LocalDate> closedDays() {
        List<LocalDate> out = new ArrayList<>();
        Optional<Instant> wm = closingWatermark();
        if (wm.isEmpty()) {
            return out;
        }
        for (LocalDate d : days.keySet()) {
            if (!d.plusDays(1).atStartOfDay(ZoneOffset.UTC).toInstant().isAfter(wm.get())) {
                out.add(d);
            }
        }
        return out;
    }

    /** Closed days whose raw record count differs from the records their KPIs count. */
    List<LocalDate> dirtyDays() {
        return closedDays().stream().filter(d -> !days.get(d).agree()).toList();
    }

    /** "2026-05-01, 2026-05-02" or, for many, the first, a count and the last few. */
    static String list(List<LocalDate> days) {
        if (days.isEmpty()) {
            return "none";
        }
        if (days.size() <= 8) {
            return String.join(", ", days.stream().map(LocalDate::toString).toList());
        }
        return days.size() + " days, " + days.get(0) + " .. " + String.join(", ",
                days.subList(days.size() - 5, days.size()).stream().map(LocalDate::toString).toList());
    }
}
