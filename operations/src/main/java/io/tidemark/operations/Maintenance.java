package io.tidemark.operations;

import static org.apache.spark.sql.functions.col;
import static org.apache.spark.sql.functions.count;
import static org.apache.spark.sql.functions.first;
import static org.apache.spark.sql.functions.lit;
import static org.apache.spark.sql.functions.sum;
import static org.apache.spark.sql.functions.when;

import java.io.PrintStream;
import java.time.Duration;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.NavigableMap;
import java.util.TreeMap;
import java.util.stream.Collectors;

import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;

import io.tidemark.lakehouse.ClosedDays;
import io.tidemark.lakehouse.DayBalance;
import io.tidemark.lakehouse.ExitCode;
import io.tidemark.lakehouse.ExpiredDays;
import io.tidemark.lakehouse.Lakehouse;
import io.tidemark.lakehouse.Lakehouse.Table;
import io.tidemark.lakehouse.StorageCheck;
import io.tidemark.lakehouse.TidemarkConfig;
import io.tidemark.lakehouse.CommitFailedException;
import io.tidemark.lakehouse.CommitRetry;
import io.tidemark.lakehouse.JobMain;
import io.tidemark.lakehouse.RequestRefusedException;

/**
 * Keeps a long-running lakehouse fast to read: compacts the closed days of the partitioned tables
 * and vacuums the files Delta no longer references.
 *
 * <p><b>Compaction</b> ({@code OPTIMIZE ... WHERE day IN (...)}) touches closed days only (and
 * {@code stream_progress}, which the stream only appends to, whole): the stream
 * never writes their KPI rows again, and its appends to the other tables never conflict with a
 * compaction (Delta's compaction changes no data). A conflict with a reconcile replacing the same
 * day is retried ({@link CommitRetry}) and, if it keeps losing, reported for that table while the
 * others go on. A day held in one file is left alone.
 *
 * <p><b>Data retention</b> ({@code retention.*-days}, off by default) deletes whole days that are at
 * least that many days before the last closed day, and only once they are safe to lose (see
 * {@code Retention}); each is recorded in {@code expired_days} before the delete.
 *
 * <p><b>Vacuum</b> deletes files no version within the retention needs. A retention below Delta's
 * safety minimum (the table's {@code delta.deletedFileRetentionDuration}, 7 days by default) could
 * delete files that a running stream's replay, a reconcile in progress or an analyst's query on an
 * older version still reads, so it is refused unless forced.
 */
public final class Maintenance {

    /** The partitioned tables and the column that names their day. */
    static final Map<Table, String> DAY_COLUMN = Map.of(Table.RAW_EVENTS, "event_date", Table.LATE_EVENTS, "event_date",
            Table.KPI_5M, "event_date", Table.DEAD_LETTER, "arrival_date");
    static final List<Table> ORDER = List.of(Table.RAW_EVENTS, Table.LATE_EVENTS, Table.DEAD_LETTER, Table.KPI_5M);
    /**
     * Unpartitioned tables the stream appends to on every batch: compacted whole (a compaction never
     * conflicts with blind appends), or they would keep one small file per micro-batch for ever.
     */
    static final List<Table> WHOLE = List.of(Table.STREAM_PROGRESS);
    /** Delta's default safety minimum for vacuum. */
    public static final Duration SAFE_RETENTION = Duration.ofDays(7);
    private static final int DAYS_PER_COMMIT = 31;
    /** What an operator does when a compaction or a retention delete gave up to concurrent writers. */
    private static final String RUN_AGAIN_COMPACTS = "run maintain again when the stream or reconcile writes less (it compacts what is left)";
    private static final String RUN_AGAIN_EXPIRES = "run maintain again (it deletes the expired days still there)";

    /**
     * @param vacuumRetention null: no vacuum
     * @param force           vacuum below the safety minimum
     */
    public record Options(boolean dryRun, Duration vacuumRetention, boolean force) {
    }

    /** What maintenance did to one table (or, in a dry run, would do). */
    public record TableReport(Table table, List<LocalDate> expiredDays, long rowsExpired, List<LocalDate> compactedDays, long filesBefore,
                              long filesAfter, long bytesBefore, long bytesAfter, long filesVacuumed, long millis, String problem) {
        public String line(boolean dryRun) {
            String expired = expiredDays.isEmpty() ? "" : (dryRun ? "would delete " : "deleted ") + days(expiredDays, "day") + " past retention ("
                    + String.format("%,d", rowsExpired) + " rows); ";
            String compacted = !DAY_COLUMN.containsKey(table) ? (filesBefore > 1 ? (dryRun ? "would compact" : "compacted") + " the whole table"
                    : "nothing to compact")
                    : compactedDays.isEmpty() ? "no closed day to compact"
                    : (dryRun ? "would compact " : "compacted ") + days(compactedDays, "closed day");
            return String.format("maintain %-12s %s%s; files %,d -> %,d, bytes %,d -> %,d; vacuum: %s%s (%.1f s)", table.tableName(), expired, compacted,
                    filesBefore, filesAfter, bytesBefore, bytesAfter,
                    filesVacuumed < 0 ? "skipped" : (dryRun ? "would delete " : "deleted ") + String.format("%,d", filesVacuumed) + " files",
                    problem == null ? "" : "; PROBLEM: " + problem, millis / 1000.0);
        }

        private static String days(List<LocalDate> days, String noun) {
            return days.size() + " " + noun + (days.size() == 1 ? "" : "s") + " (" + days.get(0)
                    + (days.size() > 1 ? " .. " + days.get(days.size() - 1) : "") + ")";
        }
    }

    private final SparkSession spark;
    private final TidemarkConfig config;
    private final Lakehouse lakehouse;
    private final PrintStream out;
    private final CommitRetry retry;

    public Maintenance(SparkSession spark, TidemarkConfig config, PrintStream out, CommitRetry retry) {
        this.spark = spark;
        this.config = config;
        this.lakehouse = Lakehouse.of(config);
        this.out = out;
        this.retry = retry;
    }

    /**
     * Maintains every partitioned table, one after the other, printing a line per table.
     *
     * @throws RequestRefusedException the vacuum retention is below the safety minimum and not forced; nothing was done
     */
    public List<TableReport> run(Options options) {
        refuseUnsafeVacuum(options);
        if (!options.dryRun()) {
            StorageCheck.requireWritable(config.lakehouseUri(), TidemarkConfig.Key.LAKEHOUSE.name);
        }
        ClosedDays closed = exists(Table.STREAM_PROGRESS) ? ClosedDays.load(spark, lakehouse) : ClosedDays.none();
        out.println("maintain: " + closed + (options.dryRun() ? "; dry run: nothing will be written" : "") + retentionSummary());
        Retention retention = ORDER.stream().anyMatch(t -> config.retentionDays(t) > 0) && closed.lastClosed().isPresent()
                ? retention(closed.lastClosed().get(), options.dryRun()) : null;
        List<TableReport> reports = new ArrayList<>();
        for (Table t : java.util.stream.Stream.concat(ORDER.stream(), WHOLE.stream()).toList()) {
            if (!exists(t)) {
                continue; // nothing written to it yet
            }
            TableReport r = DAY_COLUMN.containsKey(t) ? maintain(t, closed, retention, options) : maintainWhole(t, options);
            reports.add(r);
            out.println(r.line(options.dryRun()));
            out.flush();
        }
        return reports;
    }

    /**
     * Refuses a vacuum retention below the safety minimum unless forced; needs no Spark session, so
     * the spark-submit entry point refuses before it starts one.
     *
     * @throws RequestRefusedException with the reason and what to do instead
     */
    static void refuseUnsafeVacuum(Options options) {
        if (options.vacuumRetention() != null && options.vacuumRetention().compareTo(SAFE_RETENTION) < 0 && !options.force()) {
            throw new RequestRefusedException("a vacuum retention of " + hours(options.vacuumRetention()) + " hours is below Delta's safety "
                    + "minimum of " + hours(SAFE_RETENTION) + " hours: it could delete files that a running stream replaying its last batch, a "
                    + "reconcile in progress or an analyst's query on an older table version still reads. Keep at least "
                    + hours(SAFE_RETENTION) + " hours, or add --force when nothing reads or writes these tables meanwhile");
        }
    }

    private TableReport maintain(Table table, ClosedDays closed, Retention retention, Options options) {
        long t0 = System.currentTimeMillis();
        String day = DAY_COLUMN.get(table);
        Map<LocalDate, long[]> before = filesByDay(table, day);
        List<LocalDate> toExpire = retention == null ? List.of() : retention.expiring(table, before.keySet());
        String problem = null;
        long rowsExpired = 0;
        if (!toExpire.isEmpty()) {
            try {
                rowsExpired = expire(table, day, toExpire, retention.lastClosed, options.dryRun());
            } catch (CommitFailedException e) {
                problem = e.getMessage();
            }
        }
        List<LocalDate> toCompact = before.entrySet().stream()
                .filter(e -> closed.isClosed(e.getKey()) && e.getValue()[0] > 1 && !toExpire.contains(e.getKey()))
                .map(Map.Entry::getKey).sorted().collect(Collectors.toList());
        if (!options.dryRun()) {
            for (int i = 0; i < toCompact.size() && problem == null; i += DAYS_PER_COMMIT) {
                List<LocalDate> chunk = toCompact.subList(i, Math.min(toCompact.size(), i + DAYS_PER_COMMIT));
                String where = day + " IN (" + chunk.stream().map(d -> "DATE'" + d + "'").collect(Collectors.joining(", ")) + ")";
                try {
                    retry.run(chunk.get(0), "compacting " + table.tableName(), RUN_AGAIN_COMPACTS, () -> spark.sql("OPTIMIZE " + lakehouse.ref(table) + " WHERE " + where));
                } catch (CommitFailedException e) {
                    problem = e.getMessage();
                }
            }
        }
        Map<LocalDate, long[]> after = options.dryRun() ? before : filesByDay(table, day);
        long filesVacuumed = options.vacuumRetention() == null ? -1 : vacuum(table, options);
        return new TableReport(table, toExpire, rowsExpired, toCompact, total(before, 0), total(after, 0), total(before, 1), total(after, 1),
                filesVacuumed, System.currentTimeMillis() - t0, problem);
    }

    /** Compacts an unpartitioned table whole when it holds more than one file, then vacuums it. */
    private TableReport maintainWhole(Table table, Options options) {
        long t0 = System.currentTimeMillis();
        long[] before = files(table);
        String problem = null;
        if (!options.dryRun() && before[0] > 1) {
            try {
                retry.run(null, "compacting " + table.tableName(), RUN_AGAIN_COMPACTS, () -> spark.sql("OPTIMIZE " + lakehouse.ref(table)));
            } catch (CommitFailedException e) {
                problem = e.getMessage();
            }
        }
        long[] after = options.dryRun() ? before : files(table);
        long filesVacuumed = options.vacuumRetention() == null ? -1 : vacuum(table, options);
        return new TableReport(table, List.of(), 0, List.of(), before[0], after[0], before[1], after[1], filesVacuumed,
                System.currentTimeMillis() - t0, problem);
    }

    /** Files and bytes of the table's current version. */
    private long[] files(Table table) {
        Row d = spark.sql("DESCRIBE DETAIL " + lakehouse.ref(table)).select("numFiles", "sizeInBytes").first();
        return new long[] {d.getLong(0), d.getLong(1)};
    }

    private String retentionSummary() {
        List<String> kept = ORDER.stream().filter(t -> config.retentionDays(t) > 0)
                .map(t -> t.tableName() + " " + config.retentionDays(t) + " days").toList();
        return kept.isEmpty() ? "; retention: every day kept" : "; retention: " + String.join(", ", kept) + " before the last closed day";
    }

    /**
     * Which days data retention may delete, decided once per run. A day goes only when it is at least
     * {@code retention.*-days} before the last closed day (so never an open day) and, for the tables
     * reconcile reads or writes, when it has been reconciled (all its KPI rows come from the batch
     * layer) and is not dirty; kpi_5m's days only after their raw events are gone (else reconcile would
     * rebuild them). A day already listed in {@code expired_days} for the table goes again: late records
     * that arrived for it since are past retention too.
     */
    private final class Retention {
        final LocalDate lastClosed;
        final ExpiredDays expired;
        final NavigableMap<LocalDate, DayBalance> balances;
        final java.util.Set<LocalDate> reconciled;
        final java.util.Set<LocalDate> rawExpiredNow = new java.util.HashSet<>();

        private Retention(LocalDate lastClosed, ExpiredDays expired, NavigableMap<LocalDate, DayBalance> balances, java.util.Set<LocalDate> reconciled) {
            this.lastClosed = lastClosed;
            this.expired = expired;
            this.balances = balances;
            this.reconciled = reconciled;
        }

        List<LocalDate> expiring(Table table, java.util.Collection<LocalDate> present) {
            int keep = config.retentionDays(table);
            if (keep <= 0) {
                return List.of();
            }
            LocalDate cutoff = lastClosed.minusDays(keep);
            List<LocalDate> out = new ArrayList<>();
            for (LocalDate d : new java.util.TreeSet<>(present)) {
                if (d.isAfter(cutoff)) {
                    break;
                }
                boolean again = expired.of(table).contains(d);
                boolean eligible = switch (table) {
                    case DEAD_LETTER -> true;
                    case KPI_5M -> expired.isSealed(d) || rawExpiredNow.contains(d);
                    default -> again || expired.isSealed(d) || (reconciled.contains(d) && !(balances.containsKey(d) && balances.get(d).isDirty()));
                };
                if (eligible) {
                    out.add(d);
                }
            }
            if (table == Table.RAW_EVENTS) {
                rawExpiredNow.addAll(out);
            }
            return out;
        }
    }


    private Retention retention(LocalDate lastClosed, boolean dryRun) {
        if (!dryRun) {
            lakehouse.createAndRegister(spark); // expired_days, on a lakehouse created before it existed
        }
        java.util.Set<LocalDate> reconciled = new java.util.HashSet<>();
        if (exists(Table.KPI_5M)) {
            // reconciled: every KPI row of the day comes from the batch layer
            spark.read().format("delta").load(lakehouse.path(Table.KPI_5M)).where(col("event_date").leq(lit(java.sql.Date.valueOf(lastClosed))))
                    .groupBy(col("event_date")).agg(count(when(col("source").notEqual(lit("batch")), 1)).as("stream_rows"))
                    .where(col("stream_rows").equalTo(0)).collectAsList()
                    .forEach(r -> reconciled.add(r.getDate(0).toLocalDate()));
        }
        NavigableMap<LocalDate, DayBalance> balances = exists(Table.RAW_EVENTS) && exists(Table.KPI_5M)
                ? DayBalance.load(spark, lakehouse, null, lastClosed) : new java.util.TreeMap<>();
        return new Retention(lastClosed, ExpiredDays.load(spark, lakehouse), balances, reconciled);
    }

    /**
     * Deletes whole days of a table, recording each in {@code expired_days} first: a delete that fails
     * or is killed after the record leaves the day sealed (reconcile will not rebuild it from what is
     * left) and the next run deletes it. Returns the rows the days held.
     */
    private long expire(Table table, String dayColumn, List<LocalDate> days, LocalDate lastClosed, boolean dryRun) {
        Map<LocalDate, long[]> counts = new TreeMap<>();
        spark.read().format("delta").load(lakehouse.path(table)).where(col(dayColumn).isin(days.stream().map(java.sql.Date::valueOf).toArray()))
                .groupBy(col(dayColumn)).agg(count(lit(1)), org.apache.spark.sql.functions.countDistinct(col("_metadata.file_path")))
                .collectAsList().forEach(r -> counts.put(r.getDate(0).toLocalDate(), new long[] {r.getLong(1), r.getLong(2)}));
        long rows = counts.values().stream().mapToLong(c -> c[0]).sum();
        if (dryRun) {
            return rows;
        }
        java.sql.Timestamp now = new java.sql.Timestamp(System.currentTimeMillis());
        for (int i = 0; i < days.size(); i += DAYS_PER_COMMIT) {
            List<LocalDate> chunk = days.subList(i, Math.min(days.size(), i + DAYS_PER_COMMIT));
            List<Row> records = new ArrayList<>();
            for (LocalDate d : chunk) {
                long[] c = counts.getOrDefault(d, new long[2]);
                records.add(Lakehouse.row(Table.EXPIRED_DAYS, Map.of("table_name", table.tableName(), "day", java.sql.Date.valueOf(d),
                        "rows_removed", c[0], "files_removed", c[1], "retention_days", config.retentionDays(table),
                        "last_closed_day", java.sql.Date.valueOf(lastClosed), "removed_at", now)));
            }
            retry.run(chunk.get(0), "recording expired days of " + table.tableName(), RUN_AGAIN_EXPIRES, () -> spark.createDataFrame(records,
                    Lakehouse.schema(Table.EXPIRED_DAYS)).write().format("delta").mode("append").save(lakehouse.path(Table.EXPIRED_DAYS)));
            String where = dayColumn + " IN (" + chunk.stream().map(d -> "DATE'" + d + "'").collect(Collectors.joining(", ")) + ")";
            retry.run(chunk.get(0), "deleting expired days of " + table.tableName(), RUN_AGAIN_EXPIRES, () -> spark.sql("DELETE FROM " + lakehouse.ref(table) + " WHERE " + where));
        }
        return rows;
    }

    /**
     * A table's size and upkeep, as {@code tidemark status} shows it: files and bytes of the current
     * version, commits since Delta's last checkpoint of the log (what a reader replays on top of it),
     * and the oldest closed day still held in more than one file (empty: compaction is up to date).
     */
    public record TableState(Table table, long files, long bytes, long commitsSinceCheckpoint, java.util.Optional<LocalDate> oldestUncompacted) {
    }

    public static TableState state(SparkSession spark, Lakehouse lakehouse, Table table, ClosedDays closed) {
        String path = lakehouse.path(table);
        Row detail = spark.sql("DESCRIBE DETAIL " + lakehouse.ref(table)).select("numFiles", "sizeInBytes").first();
        long version = io.delta.tables.DeltaTable.forPath(spark, path).history(1).select("version").first().getLong(0);
        long checkpoint = lastCheckpointVersion(spark, path);
        java.util.Optional<LocalDate> oldest = java.util.Optional.empty();
        String day = DAY_COLUMN.get(table);
        if (day != null) {
            oldest = filesByDay(spark, path, day).entrySet().stream()
                    .filter(e -> closed.isClosed(e.getKey()) && e.getValue()[0] > 1).map(Map.Entry::getKey).findFirst();
        }
        return new TableState(table, detail.getLong(0), detail.getLong(1), version - checkpoint, oldest);
    }

    /** The version of Delta's last log checkpoint ({@code _delta_log/_last_checkpoint}), -1 when there is none yet. */
    private static long lastCheckpointVersion(SparkSession spark, String tablePath) {
        org.apache.hadoop.fs.Path p = new org.apache.hadoop.fs.Path(tablePath, "_delta_log/_last_checkpoint");
        try {
            org.apache.hadoop.fs.FileSystem fs = p.getFileSystem(spark.sparkContext().hadoopConfiguration());
            if (!fs.exists(p)) {
                return -1;
            }
            try (java.io.InputStream in = fs.open(p)) {
                return new com.fasterxml.jackson.databind.ObjectMapper().readTree(in).get("version").asLong();
            }
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException("cannot read " + p, e);
        }
    }

    private Map<LocalDate, long[]> filesByDay(Table table, String day) {
        return filesByDay(spark, lakehouse.path(table), day);
    }

    /** Files and bytes per day of the table's current version, from the files' own metadata (no data read). */
    private static Map<LocalDate, long[]> filesByDay(SparkSession spark, String path, String day) {
        Map<LocalDate, long[]> out = new TreeMap<>();
        List<Row> rows = spark.read().format("delta").load(path)
                .select(col(day), col("_metadata.file_path").as("file"), col("_metadata.file_size").as("size"))
                .groupBy(col(day), col("file")).agg(first(col("size")).as("size"))
                .groupBy(col(day)).agg(count(lit(1)), sum(col("size")))
                .collectAsList();
        for (Row r : rows) {
            out.put(r.getDate(0).toLocalDate(), new long[] {r.getLong(1), r.isNullAt(2) ? 0 : r.getLong(2)});
        }
        return out;
    }

    private long vacuum(Table table, Options options) {
        java.util.Set<String> before = dataFilesOnDisk(table);
        if (before.isEmpty()) {
            return 0; // an empty table: nothing to vacuum
        }
        boolean belowSafety = options.vacuumRetention().compareTo(SAFE_RETENTION) < 0;
        String key = "spark.databricks.delta.retentionDurationCheck.enabled";
        String previous = spark.conf().get(key, "true");
        // Vacuum lists the table's files in this many tasks (Spark's default, 10,000, is for clusters:
        // on a small one the task overhead is most of the vacuum's time).
        String listing = "spark.sql.sources.parallelPartitionDiscovery.parallelism";
        String previousListing = spark.conf().get(listing, "10000");
        try {
            spark.conf().set(listing, String.valueOf(Math.max(8, 4 * spark.sparkContext().defaultParallelism())));
            if (belowSafety) {
                spark.conf().set(key, "false"); // forced: the caller was told why this is unsafe
            }
            String sql = "VACUUM " + lakehouse.ref(table) + " RETAIN " + hours(options.vacuumRetention()) + " HOURS";
            if (options.dryRun()) {
                return spark.sql(sql + " DRY RUN").count();
            }
            spark.sql(sql).collect();
            // Counted by name: a stream writing meanwhile adds files, which a difference of counts would subtract.
            java.util.Set<String> after = dataFilesOnDisk(table);
            return before.stream().filter(f -> !after.contains(f)).count();
        } finally {
            spark.conf().set(key, previous);
            spark.conf().set(listing, previousListing);
        }
    }

    private boolean exists(Table table) {
        return io.delta.tables.DeltaTable.isDeltaTable(spark, lakehouse.path(table));
    }

    /** Parquet files under the table's directory, referenced or not (what vacuum deletes from). */
    private java.util.Set<String> dataFilesOnDisk(Table table) {
        org.apache.hadoop.fs.Path root = new org.apache.hadoop.fs.Path(lakehouse.path(table));
        try {
            return dataFilesOnDisk(root.getFileSystem(spark.sparkContext().hadoopConfiguration()), root);
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException("cannot list " + root, e);
        }
    }

    /**
     * Parquet files under {@code root}, skipping hidden entries as vacuum does ({@code _delta_log},
     * checksum and temporary files): a running stream creates and renames those while this lists, and
     * a recursive listing that stats every entry fails on one that vanished in between. A directory
     * removed meanwhile (an expired day) holds nothing.
     */
    static java.util.Set<String> dataFilesOnDisk(org.apache.hadoop.fs.FileSystem fs, org.apache.hadoop.fs.Path root) throws java.io.IOException {
        java.util.Set<String> files = new java.util.HashSet<>();
        java.util.ArrayDeque<org.apache.hadoop.fs.Path> dirs = new java.util.ArrayDeque<>(List.of(root));
        while (!dirs.isEmpty()) {
            org.apache.hadoop.fs.Path dir = dirs.pop();
            org.apache.hadoop.fs.FileStatus[] entries;
            try {
                entries = fs.listStatus(dir);
            } catch (java.io.FileNotFoundException gone) {
                continue;
            } catch (java.nio.file.AccessDeniedException e) {
                // Hadoop's local listing reports a directory that vanished after its existence check as
                // "Permission denied" (it asks File.canRead); only a directory still there is refused.
                if (!fs.exists(dir)) {
                    continue;
                }
                throw e;
            }
            for (org.apache.hadoop.fs.FileStatus e : entries) {
                String name = e.getPath().getName();
                if (name.startsWith("_") || name.startsWith(".")) {
                    continue;
                }
                if (e.isDirectory()) {
                    dirs.push(e.getPath());
                } else if (name.endsWith(".parquet")) {
                    files.add(e.getPath().toString());
                }
            }
        }
        return files;
    }

    private static long total(Map<LocalDate, long[]> byDay, int i) {
        return byDay.values().stream().mapToLong(v -> v[i]).sum();
    }

    /** Whole hours, rounded up: a retention is never shortened by rounding. */
    private static long hours(Duration d) {
        return (d.toMinutes() + 59) / 60;
    }

    static final String USAGE = """
            Usage: spark-submit --class io.tidemark.operations.Maintenance tidemark-spark-jobs.jar [--dry-run] [--no-vacuum] [--force] [key=value ...]
            Delete the days past data retention (retention.*-days; default: keep every day), compact the closed days of
            raw_events, late_events, dead_letter and kpi_5m, then vacuum files older than maintain.vacuum-retention
            (default 7 days, Delta's safety minimum; below it only with --force).
              --dry-run     print what would be done, write nothing
              --no-vacuum   compact only
              --force       allow a vacuum retention below 7 days (only when nothing reads or writes the tables)
              key=value     a setting, e.g. lakehouse=/data/lakehouse; settings:
            """;

    static final JobMain.Spec COMMAND_LINE = JobMain.Spec.of("maintain", USAGE).flags("--dry-run", "--no-vacuum", "--force");

    /** Entry point for spark-submit ({@link JobMain}): exit 2 on bad input, 1 when a table could not be maintained. */
    public static void main(String[] args) {
        JobMain.Arguments a = JobMain.parseOrExit(COMMAND_LINE, args);
        TidemarkConfig config = a.config();
        Options options = new Options(a.has("--dry-run"), a.has("--no-vacuum") ? null : config.vacuumRetention(), a.has("--force"));
        try {
            refuseUnsafeVacuum(options); // before a Spark session is started for nothing
        } catch (RequestRefusedException e) {
            throw JobMain.exit(COMMAND_LINE.command(), ExitCode.BAD_INPUT, e.getMessage());
        }
        JobMain.run(COMMAND_LINE.command(), config, spark -> {
            List<TableReport> reports = new Maintenance(spark, config, System.out, CommitRetry.defaults()).run(options);
            return reports.stream().anyMatch(r -> r.problem() != null)
                    ? "some tables could not be compacted; see the PROBLEM lines above and run maintain again" : null;
        });
    }
}
