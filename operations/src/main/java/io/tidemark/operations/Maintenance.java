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
import java.util.stream.Stream;

import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;

import io.tidemark.lakehouse.ClosedDays;
import io.tidemark.lakehouse.CommitFailedException;
import io.tidemark.lakehouse.CommitRetry;
import io.tidemark.lakehouse.DayBalance;
import io.tidemark.lakehouse.ExitCode;
import io.tidemark.lakehouse.ExpiredDays;
import io.tidemark.lakehouse.JobMain;
import io.tidemark.lakehouse.Lakehouse;
import io.tidemark.lakehouse.Lakehouse.Table;
import io.tidemark.lakehouse.RequestRefusedException;
import io.tidemark.lakehouse.StorageCheck;
import io.tidemark.lakehouse.TableUpdate;
import io.tidemark.lakehouse.TidemarkConfig;

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

    /** The column that names a partitioned table's day; null for an unpartitioned one. */
    static String dayColumn(Table table) {
        return table.equals(Table.DEAD_LETTER) ? "arrival_date"
                : table.isKpi() || table.equals(Table.RAW_EVENTS) || table.equals(Table.LATE_EVENTS) ? "event_date" : null;
    }

    /** The partitioned tables, raw_events first (a KPI table's days expire only once their raw events have), the KPI tables last. */
    private List<Table> order() {
        List<Table> out = new ArrayList<>(List.of(Table.RAW_EVENTS, Table.LATE_EVENTS, Table.DEAD_LETTER));
        out.addAll(lakehouse.kpiTables());
        return out;
    }
    /**
     * Unpartitioned tables the stream appends to on every batch: compacted whole (a compaction never
     * conflicts with blind appends), or they would keep one small file per micro-batch for ever.
     */
    static final List<Table> WHOLE = List.of(Table.STREAM_PROGRESS);
    /** Delta's default safety minimum for vacuum. */
    public static final Duration SAFE_RETENTION = Duration.ofDays(7);
    static final int DAYS_PER_COMMIT = 31;
    /** What an operator does when a compaction or a retention delete gave up to concurrent writers. */
    private static final String RUN_AGAIN_COMPACTS = "run maintain again when the stream or reconcile writes less (it compacts what is left)";

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
            String compacted = dayColumn(table) == null ? (filesBefore > 1 ? (dryRun ? "would compact" : "compacted") + " the whole table"
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
            StorageCheck.requireWritable(config.lakehouseUri(), TidemarkConfig.Key.LAKEHOUSE.name, spark.sparkContext().hadoopConfiguration());
        }
        ClosedDays closed = exists(Table.STREAM_PROGRESS) ? ClosedDays.load(spark, lakehouse) : ClosedDays.none();
        out.println("maintain: " + closed + (options.dryRun() ? "; dry run: nothing will be written" : "") + retentionSummary());
        Retention retention = order().stream().anyMatch(t -> config.retentionDays(t) > 0) && closed.lastClosed().isPresent()
                ? Retention.decide(spark, config, lakehouse, retry, closed.lastClosed().get(), options.dryRun()) : null;
        List<TableReport> reports = new ArrayList<>();
        for (Table t : Stream.concat(order().stream(), WHOLE.stream()).toList()) {
            if (!exists(t)) {
                continue; // nothing written to it yet
            }
            TableReport r = dayColumn(t) != null ? maintain(t, closed, retention, options) : maintainWhole(t, options);
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
            throw new RequestRefusedException("a vacuum retention of " + Vacuum.hours(options.vacuumRetention()) + " hours is below Delta's safety "
                    + "minimum of " + Vacuum.hours(SAFE_RETENTION) + " hours: it could delete files that a running stream replaying its last batch, a "
                    + "reconcile in progress or an analyst's query on an older table version still reads. Keep at least "
                    + Vacuum.hours(SAFE_RETENTION) + " hours, or add --force when nothing reads or writes these tables meanwhile");
        }
    }

    private TableReport maintain(Table table, ClosedDays closed, Retention retention, Options options) {
        long t0 = System.currentTimeMillis();
        String day = dayColumn(table);
        Map<LocalDate, long[]> before = filesByDay(table, day);
        List<LocalDate> toExpire = retention == null ? List.of() : retention.expiring(table, before.keySet());
        String problem = null;
        long rowsExpired = 0;
        if (!toExpire.isEmpty()) {
            try {
                rowsExpired = retention.expire(table, day, toExpire, options.dryRun());
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
                try {
                    lakehouse.commit(spark, new TableUpdate.Compact(table, day, chunk), retry, "compacting " + table.tableName(), RUN_AGAIN_COMPACTS);
                } catch (CommitFailedException e) {
                    problem = e.getMessage();
                }
            }
        }
        Map<LocalDate, long[]> after = options.dryRun() ? before : filesByDay(table, day);
        long filesVacuumed = options.vacuumRetention() == null ? -1 : Vacuum.run(spark, lakehouse, table, options);
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
                lakehouse.commit(spark, new TableUpdate.Compact(table, null, List.of()), retry, "compacting " + table.tableName(), RUN_AGAIN_COMPACTS);
            } catch (CommitFailedException e) {
                problem = e.getMessage();
            }
        }
        long[] after = options.dryRun() ? before : files(table);
        long filesVacuumed = options.vacuumRetention() == null ? -1 : Vacuum.run(spark, lakehouse, table, options);
        return new TableReport(table, List.of(), 0, List.of(), before[0], after[0], before[1], after[1], filesVacuumed,
                System.currentTimeMillis() - t0, problem);
    }

    /** Files and bytes of the table's current version. */
    private long[] files(Table table) {
        return lakehouse.size(spark, table);
    }

    private String retentionSummary() {
        List<String> kept = order().stream().filter(t -> config.retentionDays(t) > 0)
                .map(t -> t.tableName() + " " + config.retentionDays(t) + " days").toList();
        return kept.isEmpty() ? "; retention: every day kept" : "; retention: " + String.join(", ", kept) + " before the last closed day";
    }








    private Map<LocalDate, long[]> filesByDay(Table table, String day) {
        return TableState.filesByDay(spark, lakehouse, table, day);
    }



    private boolean exists(Table table) {
        return lakehouse.exists(spark, table);
    }



    private static long total(Map<LocalDate, long[]> byDay, int i) {
        return byDay.values().stream().mapToLong(v -> v[i]).sum();
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
