package io.tidemark.tests;

import java.time.LocalDate;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import org.apache.spark.sql.SparkSession;

import io.tidemark.lakehouse.Lakehouse;
import io.tidemark.lakehouse.Lakehouse.Table;

/** Exact checks on a lakehouse's tables, shared by the end-to-end tests. */
final class TableChecks {
    private TableChecks() {
    }

    /** Every column of every KPI row, one string per row, sorted, by day. */
    static Map<LocalDate, List<String>> kpiRowsByDay(SparkSession spark, Lakehouse lakehouse) {
        Map<LocalDate, List<String>> out = new TreeMap<>();
        spark.sql("SELECT event_date, " + ReconcileJobTest.allColumns(spark, lakehouse, Table.kpi("kpi_5m")) + " AS r FROM "
                        + lakehouse.ref(Table.kpi("kpi_5m")) + " ORDER BY r")
                .collectAsList()
                .forEach(row -> out.computeIfAbsent(row.getDate(0).toLocalDate(), d -> new ArrayList<>()).add(row.getString(1)));
        return out;
    }

    /**
     * Every KPI row of the given (reconciled) days against plain SQL over the raw log: counts, exact
     * volume, exact distinct subscribers, source 'batch'. Empty when they agree; else up to 20 rows that differ.
     */
    static List<String> closedDaysAgainstPlainSql(SparkSession spark, Lakehouse lakehouse, List<LocalDate> days) {
        String in = String.join(",", days.stream().map(d -> "DATE'" + d + "'").toList());
        return spark.sql("""
                WITH truth AS (
                  SELECT event_date,
                         timestamp_seconds(floor(unix_seconds(event_ts) / 300) * 300) AS window_start,
                         cell_site_id, count(*) AS n, sum(CAST(volume_gb AS DECIMAL(38,9))) AS gb,
                         count(DISTINCT subscriber_id) AS subs
                  FROM %s WHERE event_date IN (%s) GROUP BY ALL),
                kpi AS (SELECT * FROM %s WHERE event_date IN (%s))
                SELECT concat_ws(' ', event_date, window_start, cell_site_id, 'truth', t.n, t.gb, t.subs,
                                 'kpi', k.record_count, k.total_gb, k.subscribers, k.source)
                FROM truth t FULL OUTER JOIN kpi k USING (event_date, window_start, cell_site_id)
                WHERE t.n IS NULL OR k.record_count IS NULL OR t.n <> k.record_count OR t.gb <> k.total_gb
                   OR t.subs <> k.subscribers OR k.source <> 'batch'
                LIMIT 20
                """.formatted(lakehouse.ref(Table.RAW_EVENTS), in, lakehouse.ref(Table.kpi("kpi_5m")), in))
                .collectAsList().stream().map(r -> r.getString(0)).toList();
    }

    /** The data files of each day of a partitioned table's current version ({@code dayColumn} names its day). */
    static Map<LocalDate, Long> filesByDay(SparkSession spark, Lakehouse lakehouse, Table table, String dayColumn) {
        Map<LocalDate, Long> out = new TreeMap<>();
        spark.sql("SELECT " + dayColumn + ", count(DISTINCT _metadata.file_path) FROM " + lakehouse.ref(table) + " GROUP BY 1")
                .collectAsList().forEach(r -> out.put(r.getDate(0).toLocalDate(), r.getLong(1)));
        return out;
    }

    /** Rows of each table, by name. */
    static Map<String, Long> rowCounts(SparkSession spark, Lakehouse lakehouse, List<Table> tables) {
        Map<String, Long> out = new TreeMap<>();
        for (Table t : tables) {
            out.put(t.tableName(), spark.read().format("delta").load(lakehouse.path(t)).count());
        }
        return out;
    }

    /**
     * The commits in a Delta log so far (its {@code NNN.json} files), read from the directory rather than by
     * Spark, so a test can poll it cheaply while a job in another JVM writes the table.
     */
    /** The commits in a Delta log on any Hadoop file system (an S3 bucket's with its settings in {@code hadoop}). */
    static long commits(String deltaLog, org.apache.hadoop.conf.Configuration hadoop) {
        org.apache.hadoop.fs.Path log = new org.apache.hadoop.fs.Path(deltaLog);
        try {
            return java.util.Arrays.stream(log.getFileSystem(hadoop).listStatus(log))
                    .filter(s -> s.getPath().getName().matches("\\d{20}\\.json")).count();
        } catch (java.io.FileNotFoundException e) {
            return 0;
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    static long commits(java.nio.file.Path deltaLog) {
        if (!java.nio.file.Files.isDirectory(deltaLog)) {
            return 0;
        }
        try (var s = java.nio.file.Files.list(deltaLog)) {
            return s.filter(p -> p.getFileName().toString().matches("\\d{20}\\.json")).count();
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }
}
