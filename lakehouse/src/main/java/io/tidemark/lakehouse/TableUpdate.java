package io.tidemark.lakehouse;

import java.time.Instant;
import java.time.LocalDate;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.List;
import java.util.stream.Collectors;

import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;

import io.tidemark.lakehouse.Lakehouse.Table;

/**
 * One change to one lakehouse table, made in one Delta commit, in the manner of Iceberg's
 * {@code PendingUpdate}: what is changed is typed (the rows, the days, the window starts), and
 * {@link Lakehouse#commit} is the one place any of them is written, so every write of the project
 * reads the same way and none builds its SQL by hand.
 *
 * <p>Isolation is Delta's (optimistic, serializable for the rows a commit reads and replaces): an
 * append never conflicts with another writer's; a replacement or a delete of days conflicts with a
 * concurrent commit that touched the same days, and loses with a {@code DeltaConcurrentModificationException}
 * that {@link CommitRetry} re-runs it after, rebuilt from scratch (every update here is idempotent:
 * the same rows replace the same bounds). The note, when given, is the commit's Delta
 * {@code userMetadata}.
 */
public sealed interface TableUpdate {

    /** The table it changes. */
    Table table();

    /** The first day it touches, for a failure's message; null when it is not about days. */
    LocalDate firstDay();

    /** Adds {@code rows} (appends never conflict with another writer's). */
    record Append(Table table, Dataset<Row> rows, String note) implements TableUpdate {
        @Override
        public LocalDate firstDay() {
            return null;
        }
    }

    /**
     * Replaces every row of {@code days} (and, when {@code windowStarts} is not empty, of those windows only) with
     * {@code rows}; Delta refuses a row outside the bounds. Reconcile replaces whole days; the stream, the open windows it
     * merged a batch into.
     */
    record Replace(Table table, Dataset<Row> rows, List<LocalDate> days, List<Instant> windowStarts, String note) implements TableUpdate {
        public Replace {
            if (days.isEmpty()) {
                throw new IllegalArgumentException("a replacement of no day");
            }
            days = List.copyOf(days);
            windowStarts = List.copyOf(windowStarts);
        }

        @Override
        public LocalDate firstDay() {
            return days.get(0);
        }

        public String predicate() {
            return predicate(days, windowStarts);
        }

        /** {@code event_date IN (...) [AND window_start IN (...)]}, literals only, so that Delta prunes partitions and files. */
        public static String predicate(List<LocalDate> days, List<Instant> windowStarts) {
            return daysIn("event_date", days) + (windowStarts.isEmpty() ? "" : " AND window_start IN ("
                    + windowStarts.stream().map(s -> "TIMESTAMP'" + TIMESTAMP.format(s) + "'").collect(Collectors.joining(", ")) + ")");
        }
    }

    /** Deletes every row of {@code days} (by the table's day column {@code dayColumn}): retention's expiry. */
    record DeleteDays(Table table, String dayColumn, List<LocalDate> days) implements TableUpdate {
        public DeleteDays {
            days = List.copyOf(days);
        }

        @Override
        public LocalDate firstDay() {
            return days.isEmpty() ? null : days.get(0);
        }

        public String predicate() {
            return daysIn(dayColumn, days);
        }
    }

    /**
     * Rewrites the small files of {@code days} (by the table's day column) into large ones, or of the
     * whole table when {@code days} is empty (an unpartitioned table): Delta's {@code OPTIMIZE}; the
     * rows are unchanged.
     */
    record Compact(Table table, String dayColumn, List<LocalDate> days) implements TableUpdate {
        public Compact {
            days = List.copyOf(days);
        }

        @Override
        public LocalDate firstDay() {
            return days.isEmpty() ? null : days.get(0);
        }

        /** The partition filter, or null for the whole table. */
        public String predicate() {
            return days.isEmpty() ? null : daysIn(dayColumn, days);
        }
    }

    /** {@code column IN (DATE'...', ...)}. */
    private static String daysIn(String column, List<LocalDate> days) {
        return column + " IN (" + days.stream().map(d -> "DATE'" + d + "'").collect(Collectors.joining(", ")) + ")";
    }

    /** A timestamp literal to the microsecond, in the UTC the sessions run in. */
    DateTimeFormatter TIMESTAMP = DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm:ss.SSSSSS").withZone(ZoneOffset.UTC);
}
