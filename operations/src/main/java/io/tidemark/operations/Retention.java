package io.tidemark.operations;

import static org.apache.spark.sql.functions.col;
import static org.apache.spark.sql.functions.count;
import static org.apache.spark.sql.functions.lit;
import static org.apache.spark.sql.functions.when;

import java.sql.Date;
import java.sql.Timestamp;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.NavigableMap;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;

import io.tidemark.lakehouse.CommitRetry;
import io.tidemark.lakehouse.DayBalance;
import io.tidemark.lakehouse.ExpiredDays;
import io.tidemark.lakehouse.Lakehouse;
import io.tidemark.lakehouse.Lakehouse.Table;
import io.tidemark.lakehouse.TableUpdate;
import io.tidemark.lakehouse.TidemarkConfig;

/**
 * Which days data retention may delete, decided once per run. A day goes only when it is at least
 * {@code retention.*-days} before the last closed day (so never an open day) and, for the tables
 * reconcile reads or writes, when it has been reconciled (all its KPI rows come from the batch
 * layer) and is not dirty; kpi_5m's days only after their raw events are gone (else reconcile would
 * rebuild them). A day already listed in {@code expired_days} for the table goes again: late records
 * that arrived for it since are past retention too.
 */
final class Retention {
    /** What an operator does when a retention delete gave up to concurrent writers. */
    private static final String RUN_AGAIN = "run maintain again (it deletes the expired days still there)";

    private final SparkSession spark;
    private final TidemarkConfig config;
    private final Lakehouse lakehouse;
    private final CommitRetry retry;
    final LocalDate lastClosed;
    final ExpiredDays expired;
    final NavigableMap<LocalDate, DayBalance> balances;
    final Set<LocalDate> reconciled;
    final Set<LocalDate> rawExpiredNow = new HashSet<>();

    private Retention(SparkSession spark, TidemarkConfig config, Lakehouse lakehouse, CommitRetry retry, LocalDate lastClosed,
                      ExpiredDays expired, NavigableMap<LocalDate, DayBalance> balances, Set<LocalDate> reconciled) {
        this.spark = spark;
        this.config = config;
        this.lakehouse = lakehouse;
        this.retry = retry;
        this.lastClosed = lastClosed;
        this.expired = expired;
        this.balances = balances;
        this.reconciled = reconciled;
    }

    List<LocalDate> expiring(Table table, Collection<LocalDate> present) {
        int keep = config.retentionDays(table);
        if (keep <= 0) {
            return List.of();
        }
        LocalDate cutoff = lastClosed.minusDays(keep);
        List<LocalDate> out = new ArrayList<>();
        for (LocalDate d : new TreeSet<>(present)) {
            if (d.isAfter(cutoff)) {
                break;
            }
            boolean again = expired.of(table).contains(d);
            boolean eligible = table.equals(Table.DEAD_LETTER) ? true
                    : table.isKpi() ? expired.isSealed(d) || rawExpiredNow.contains(d)
                    : again || expired.isSealed(d) || (reconciled.contains(d) && !(balances.containsKey(d) && balances.get(d).isDirty()));
            if (eligible) {
                out.add(d);
            }
        }
        if (table.equals(Table.RAW_EVENTS)) {
            rawExpiredNow.addAll(out);
        }
        return out;
    }

    /** Decides, once per run, from the tables as they are: which days are reconciled, their balances, what expired before. */
    static Retention decide(SparkSession spark, TidemarkConfig config, Lakehouse lakehouse, CommitRetry retry, LocalDate lastClosed, boolean dryRun) {
        if (!dryRun) {
            lakehouse.createAndRegister(spark); // expired_days, on a lakehouse created before it existed
        }
        Set<LocalDate> reconciled = new HashSet<>();
        boolean kpiTables = lakehouse.kpiTables().stream().allMatch(t -> exists(spark, lakehouse, t));
        if (kpiTables) {
            // reconciled: every row of the day in every KPI table comes from the batch layer
            Set<LocalDate> streamed = new HashSet<>();
            for (Table t : lakehouse.kpiTables()) {
                lakehouse.read(spark, t).where(col("event_date").leq(lit(Date.valueOf(lastClosed))))
                        .groupBy(col("event_date")).agg(count(when(col("source").notEqual(lit("batch")), 1)).as("stream_rows"))
                        .collectAsList().forEach(r -> (r.getLong(1) == 0 ? reconciled : streamed).add(r.getDate(0).toLocalDate()));
            }
            reconciled.removeAll(streamed);
        }
        NavigableMap<LocalDate, DayBalance> balances = exists(spark, lakehouse, Table.RAW_EVENTS) && kpiTables
                ? DayBalance.load(spark, lakehouse, null, lastClosed) : new TreeMap<>();
        return new Retention(spark, config, lakehouse, retry, lastClosed, ExpiredDays.load(spark, lakehouse), balances, reconciled);
    }

    /**
     * Deletes whole days of a table, recording each in {@code expired_days} first: a delete that fails
     * or is killed after the record leaves the day sealed (reconcile will not rebuild it from what is
     * left) and the next run deletes it. Returns the rows the days held.
     */
    long expire(Table table, String dayColumn, List<LocalDate> days, boolean dryRun) {
        Map<LocalDate, long[]> counts = new TreeMap<>();
        lakehouse.read(spark, table).where(col(dayColumn).isin(days.stream().map(Date::valueOf).toArray()))
                .groupBy(col(dayColumn)).agg(count(lit(1)), org.apache.spark.sql.functions.countDistinct(col("_metadata.file_path")))
                .collectAsList().forEach(r -> counts.put(r.getDate(0).toLocalDate(), new long[] {r.getLong(1), r.getLong(2)}));
        long rows = counts.values().stream().mapToLong(c -> c[0]).sum();
        if (dryRun) {
            return rows;
        }
        Timestamp now = new Timestamp(System.currentTimeMillis());
        for (int i = 0; i < days.size(); i += Maintenance.DAYS_PER_COMMIT) {
            List<LocalDate> chunk = days.subList(i, Math.min(days.size(), i + Maintenance.DAYS_PER_COMMIT));
            List<Row> records = new ArrayList<>();
            for (LocalDate d : chunk) {
                long[] c = counts.getOrDefault(d, new long[2]);
                records.add(Lakehouse.row(Table.EXPIRED_DAYS, Map.of("table_name", table.tableName(), "day", Date.valueOf(d),
                        "rows_removed", c[0], "files_removed", c[1], "retention_days", config.retentionDays(table),
                        "last_closed_day", Date.valueOf(lastClosed), "removed_at", now)));
            }
            lakehouse.commit(spark, new TableUpdate.Append(Table.EXPIRED_DAYS, spark.createDataFrame(records, Lakehouse.ownSchema(Table.EXPIRED_DAYS)),
                    null), retry, "recording expired days of " + table.tableName(), RUN_AGAIN);
            lakehouse.commit(spark, new TableUpdate.DeleteDays(table, dayColumn, chunk), retry, "deleting expired days of " + table.tableName(),
                    RUN_AGAIN);
        }
        return rows;
    }

    private static boolean exists(SparkSession spark, Lakehouse lakehouse, Table table) {
        return lakehouse.exists(spark, table);
    }
}
