package io.tidemark.lakehouse;

import java.time.LocalDate;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.NavigableSet;
import java.util.Optional;
import java.util.TreeMap;
import java.util.TreeSet;

import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;

import io.tidemark.lakehouse.Lakehouse.Table;

/**
 * The days data retention deleted, from {@code expired_days}: the one answer to "can this day still
 * be recomputed?". A day whose raw events are gone cannot: reconcile refuses it and a dirty day among
 * them is not offered for reconcile (its KPI rows stay as last reconciled).
 */
public final class ExpiredDays {
    private final Map<String, NavigableSet<LocalDate>> byTable;

    private ExpiredDays(Map<String, NavigableSet<LocalDate>> byTable) {
        this.byTable = byTable;
    }

    public static ExpiredDays none() {
        return new ExpiredDays(Map.of());
    }

    /** Reads {@code expired_days}; none when the table does not exist yet. */
    public static ExpiredDays load(SparkSession spark, Lakehouse lakehouse) {
        if (!lakehouse.exists(spark, Table.EXPIRED_DAYS)) {
            return none();
        }
        Map<String, NavigableSet<LocalDate>> out = new TreeMap<>();
        List<Row> rows = lakehouse.read(spark, Table.EXPIRED_DAYS).select("table_name", "day").distinct().collectAsList();
        for (Row r : rows) {
            out.computeIfAbsent(r.getString(0), t -> new TreeSet<>()).add(r.getDate(1).toLocalDate());
        }
        return new ExpiredDays(out);
    }

    /** Days deleted from {@code table}, oldest first. */
    public NavigableSet<LocalDate> of(Table table) {
        return Collections.unmodifiableNavigableSet(byTable.getOrDefault(table.tableName(), new TreeSet<>()));
    }

    /** True when the day's raw events were deleted: it can no longer be reconciled. */
    public boolean isSealed(LocalDate day) {
        return of(Table.RAW_EVENTS).contains(day);
    }

    /** Why a day cannot be reconciled, or empty when it can (as far as retention is concerned). */
    public Optional<String> whySealed(LocalDate day) {
        return isSealed(day) ? Optional.of("the raw events of " + day + " were deleted by data retention (retention.raw-days; see "
                + "expired_days), so the day can no longer be recomputed; its KPI rows stay as last reconciled") : Optional.empty();
    }
}
