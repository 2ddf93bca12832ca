package io.tidemark.lakehouse;

import static org.apache.spark.sql.functions.coalesce;
import static org.apache.spark.sql.functions.col;
import static org.apache.spark.sql.functions.count;
import static org.apache.spark.sql.functions.lit;
import static org.apache.spark.sql.functions.sum;
import static org.apache.spark.sql.functions.when;

import java.sql.Date;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.NavigableMap;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.stream.Collectors;

import org.apache.spark.sql.Column;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;

import io.tidemark.lakehouse.Lakehouse.Table;
import io.tidemark.pipeline.KpiAggregation;
import io.tidemark.pipeline.Measure;
import io.tidemark.pipeline.Pipeline;

/**
 * One day's records in the raw log against the records its KPI rows count, per KPI table.
 *
 * <p>The stream counts only the contributions whose window is still open; reconcile counts them all.
 * So a KPI table's day balances exactly when none of its contributions came late, or when it has been
 * reconciled since the last one: an unbalanced closed day is <em>dirty</em>, and this single rule covers
 * "received late records since last reconciled", "a KPI table added since" (it counts nothing for the
 * days before it) and any other disagreement between the raw log and the KPIs. What a table counts is
 * its {@code count(*)} measure without FILTER ({@link io.tidemark.pipeline.Pipeline.KpiTable#recordCount});
 * what it should count is the raw records its WHERE keeps, once for each of their windows that start on the day.
 *
 * @param rawRecords  rows of {@code raw_events} with this event_date (late ones included)
 * @param lateRecords of which flagged late
 * @param kpiRecords  what the first KPI table counts for the day (its record count measure summed)
 * @param kpiRows     (window, dimensions) rows of the day in the first KPI table
 * <p>A day is also dirty in a KPI table that still holds the stream's rows of it while another table holds
 * reconciled rows of it: reconcile replaces a day one table after the other, and a run killed (or failed)
 * between two tables leaves it so, even where the unreplaced table's counts agree with the raw log.
 *
 * @param unbalanced  the KPI tables whose count for the day differs from the raw log's, or that still hold the
 *                    stream's rows of a day another table holds reconciled rows of
 * @param reconciled  the KPI tables holding reconciled rows ({@code source = 'batch'}) of the day
 */
public record DayBalance(LocalDate day, long rawRecords, long lateRecords, long kpiRecords, long kpiRows, Set<String> unbalanced,
                         Set<String> reconciled) {

    public DayBalance {
        unbalanced = Collections.unmodifiableSet(new TreeSet<>(unbalanced));
        reconciled = Collections.unmodifiableSet(new TreeSet<>(reconciled));
    }

    /** The balance of a pipeline with one KPI table that counts every raw record once (the shipped network pipeline's). */
    public DayBalance(LocalDate day, long rawRecords, long lateRecords, long kpiRecords, long kpiRows) {
        this(day, rawRecords, lateRecords, kpiRecords, kpiRows, rawRecords == kpiRecords ? Set.of() : Set.of("kpi"),
                Set.of());
    }

    /** One KPI table's day: the records it counts and should count, and its rows by source. */
    public record TableDay(String table, long counted, long expected, long reconciledRows, long streamRows) {
    }

    /**
     * The KPI tables a day must be reconciled in (the rule above, in one place): those whose count differs
     * from what the raw log says they should count, and, when any table holds reconciled rows of the day,
     * those still holding the stream's rows of it.
     */
    public static Set<String> unbalanced(List<TableDay> tables) {
        boolean reconciledSomewhere = tables.stream().anyMatch(t -> t.reconciledRows() > 0);
        Set<String> out = new TreeSet<>();
        for (TableDay t : tables) {
            if (t.counted() != t.expected() || (reconciledSomewhere && t.streamRows() > 0)) {
                out.add(t.table());
            }
        }
        return out;
    }

    public boolean isDirty() {
        return !unbalanced.isEmpty();
    }

    /**
     * Balances of every day holding raw or KPI rows, between {@code from} and {@code to} (both
     * included; null for no bound), by day.
     */
    public static NavigableMap<LocalDate, DayBalance> load(SparkSession spark, Lakehouse lakehouse, LocalDate from, LocalDate to) {
        Column inRange = range("event_date", from, to);
        TreeMap<LocalDate, long[]> raw = new TreeMap<>();
        lakehouse.read(spark, Table.RAW_EVENTS).filter(inRange)
                .groupBy(col("event_date"))
                .agg(count(lit(1)).as("raw_records"), sum(when(col("is_late"), 1L).otherwise(0L)).as("late_records"))
                .collectAsList().forEach(r -> raw.put(r.getDate(0).toLocalDate(), new long[] {r.getLong(1), r.getLong(2)}));
        Pipeline pipeline = lakehouse.pipeline();
        Set<LocalDate> days = new TreeSet<>(raw.keySet());
        List<Map<LocalDate, long[]>> counted = new ArrayList<>();
        List<Map<LocalDate, Long>> expected = new ArrayList<>();
        for (Pipeline.KpiTable t : pipeline.tables()) {
            Map<LocalDate, long[]> c = new TreeMap<>();
            String records = t.recordCount().map(Measure::name).orElseThrow();
            lakehouse.read(spark, Table.kpi(t.name())).filter(inRange)
                    .groupBy(col("event_date"))
                    .agg(coalesce(sum(col(records)), lit(0L)).as("kpi_records"), count(lit(1)).as("kpi_rows"),
                            sum(when(col("source").equalTo("batch"), 1L).otherwise(0L)).as("reconciled_rows"))
                    .collectAsList().forEach(r -> c.put(r.getDate(0).toLocalDate(), new long[] {r.getLong(1), r.getLong(2), r.getLong(3)}));
            counted.add(c);
            days.addAll(c.keySet());
            expected.add(expected(spark, lakehouse, pipeline, t, raw, from, to));
            days.addAll(expected.get(expected.size() - 1).keySet());
        }
        NavigableMap<LocalDate, DayBalance> out = new TreeMap<>();
        for (LocalDate d : days) {
            long[] r = raw.getOrDefault(d, new long[2]);
            List<TableDay> tables = new ArrayList<>();
            Set<String> reconciled = new TreeSet<>();
            for (int i = 0; i < counted.size(); i++) {
                long[] c = counted.get(i).getOrDefault(d, new long[3]);
                String name = pipeline.tables().get(i).name();
                tables.add(new TableDay(name, c[0], expected.get(i).getOrDefault(d, 0L), c[2], c[1] - c[2]));
                if (c[2] > 0) {
                    reconciled.add(name);
                }
            }
            long[] first = counted.isEmpty() ? new long[3] : counted.get(0).getOrDefault(d, new long[3]);
            out.put(d, new DayBalance(d, r[0], r[1], first[0], first[1], unbalanced(tables), reconciled));
        }
        return Collections.unmodifiableNavigableMap(out);
    }

    /**
     * What KPI table {@code t} should count per day: its raw records once per window, by the window's day.
     * A tumbling table without WHERE counts each raw record once on its own day (no second read).
     */
    private static Map<LocalDate, Long> expected(SparkSession spark, Lakehouse lakehouse, Pipeline pipeline,
                                                 Pipeline.KpiTable t, Map<LocalDate, long[]> raw,
                                                 LocalDate from, LocalDate to) {
        Map<LocalDate, Long> out = new TreeMap<>();
        if (t.window().tumbling() && t.where() == null) {
            raw.forEach((d, r) -> out.put(d, r[0]));
            return out;
        }
        // A hopping window that starts on a day can hold records of the next one.
        Dataset<Row> records = lakehouse.read(spark, Table.RAW_EVENTS).filter(range("event_date", from, to == null ? null : to.plusDays(1)));
        if (t.where() != null) {
            records = records.filter(org.apache.spark.sql.functions.expr(t.where()));
        }
        KpiAggregation.windowed(records, pipeline.events().eventTime(), t.window())
                .filter(range("event_date", from, to)).groupBy(col("event_date")).agg(count(lit(1)))
                .collectAsList().forEach(r -> out.put(r.getDate(0).toLocalDate(), r.getLong(1)));
        return out;
    }

    private static Column range(String column, LocalDate from, LocalDate to) {
        Column inRange = lit(true);
        if (from != null) {
            inRange = inRange.and(col(column).geq(lit(Date.valueOf(from))));
        }
        if (to != null) {
            inRange = inRange.and(col(column).leq(lit(Date.valueOf(to))));
        }
        return inRange;
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
