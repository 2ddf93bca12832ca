package io.tidemark.lakehouse;

import static org.apache.spark.sql.functions.coalesce;
import static org.apache.spark.sql.functions.col;
import static org.apache.spark.sql.functions.count;
import static org.apache.spark.sql.functions.lit;
import static org.apache.spark.sql.functions.sum;
import static org.apache.spark.sql.functions.when;

import java.time.LocalDate;
import java.util.Collections;
import java.util.List;
import java.util.NavigableMap;
import java.util.TreeMap;
import java.util.stream.Collectors;

import org.apache.spark.sql.Column;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;

import io.tidemark.lakehouse.Lakehouse.Table;

/**
 * One day's records in the raw log against the records its KPI rows count.
 *
 * <p>The stream counts only on-time records; reconcile counts them all. So a day balances exactly
 * when it has had no late records, or when it has been reconciled since its last late record: an
 * unbalanced closed day is <em>dirty</em>, and this single rule covers "received late records since
 * last reconciled" as well as any other disagreement between the raw log and the KPIs.
 *
 * @param rawRecords  rows of {@code raw_events} with this event_date (late ones included)
 * @param lateRecords of which flagged late
 * @param kpiRecords  sum of {@code kpi_5m.record_count} of the day
 * @param kpiRows     (window, cell) rows of the day in {@code kpi_5m}
 */
public record DayBalance(LocalDate day, long rawRecords, long lateRecords, long kpiRecords, long kpiRows) {

    public boolean isDirty() {
        return rawRecords != kpiRecords;
    }

    /**
     * Balances of every day holding raw or KPI rows, between {@code from} and {@code to} (both
     * included; null for no bound), by day.
     */
    public static NavigableMap<LocalDate, DayBalance> load(SparkSession spark, Lakehouse lakehouse, LocalDate from, LocalDate to) {
        Column inRange = lit(true);
        if (from != null) {
            inRange = inRange.and(col("event_date").geq(lit(java.sql.Date.valueOf(from))));
        }
        if (to != null) {
            inRange = inRange.and(col("event_date").leq(lit(java.sql.Date.valueOf(to))));
        }
        Dataset<Row> raw = lakehouse.read(spark, Table.RAW_EVENTS).filter(inRange)
                .groupBy(col("event_date"))
                .agg(count(lit(1)).as("raw_records"), sum(when(col("is_late"), 1L).otherwise(0L)).as("late_records"));
        Dataset<Row> kpi = lakehouse.read(spark, Table.KPI_5M).filter(inRange)
                .groupBy(col("event_date"))
                .agg(sum(col("record_count")).as("kpi_records"), count(lit(1)).as("kpi_rows"));
        List<Row> rows = raw.join(kpi, raw.col("event_date").equalTo(kpi.col("event_date")), "full_outer")
                .select(coalesce(raw.col("event_date"), kpi.col("event_date")),
                        coalesce(col("raw_records"), lit(0L)), coalesce(col("late_records"), lit(0L)),
                        coalesce(col("kpi_records"), lit(0L)), coalesce(col("kpi_rows"), lit(0L)))
                .collectAsList();
        NavigableMap<LocalDate, DayBalance> out = new TreeMap<>();
        for (Row r : rows) {
            LocalDate d = r.getDate(0).toLocalDate();
            out.put(d, new DayBalance(d, r.getLong(1), r.getLong(2), r.getLong(3), r.getLong(4)));
        }
        return Collections.unmodifiableNavigableMap(out);
    }

    /**
     * The closed days among {@code balances} that are dirty and can still be reconciled, oldest first:
     * the one rule for "dirty day". A day whose raw events retention deleted is left out: late records
     * that arrive for it unbalance it, but it can no longer be recomputed ({@link ExpiredDays}).
     */
    public static List<LocalDate> dirtyDays(NavigableMap<LocalDate, DayBalance> balances, ClosedDays closed, ExpiredDays expired) {
        return balances.values().stream()
                .filter(b -> closed.isClosed(b.day()) && b.isDirty() && !expired.isSealed(b.day()))
                .map(DayBalance::day)
                .collect(Collectors.toList());
    }
}
