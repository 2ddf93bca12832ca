package io.tidemark.operations;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.SparkSession;

import io.tidemark.lakehouse.Lakehouse;
import io.tidemark.lakehouse.Lakehouse.Table;

/**
 * Vacuum: deletes the files of a table that no version within the retention needs. It counts what it
 * deleted by name from listings of the table's directory before and after, since a stream may add
 * files meanwhile.
 */
final class Vacuum {
    private Vacuum() {
    }

    /**
     * Vacuums {@code table} with the retention of {@code options}, below the safety minimum only when
     * the caller has checked it was forced; returns the data files it deleted (in a dry run, would delete).
     */
    static long run(SparkSession spark, Lakehouse lakehouse, Table table, Maintenance.Options options) {
        Set<String> before = dataFilesOnDisk(spark, lakehouse, table);
        if (before.isEmpty()) {
            return 0; // an empty table: nothing to vacuum
        }
        boolean belowSafety = options.vacuumRetention().compareTo(Maintenance.SAFE_RETENTION) < 0;
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
            Set<String> after = dataFilesOnDisk(spark, lakehouse, table);
            return before.stream().filter(f -> !after.contains(f)).count();
        } finally {
            spark.conf().set(key, previous);
            spark.conf().set(listing, previousListing);
        }
    }

    /** Parquet files under the table's directory, referenced or not (what vacuum deletes from). */
    private static Set<String> dataFilesOnDisk(SparkSession spark, Lakehouse lakehouse, Table table) {
        Path root = new Path(lakehouse.path(table));
        try {
            return dataFilesOnDisk(root.getFileSystem(spark.sparkContext().hadoopConfiguration()), root);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot list " + root, e);
        }
    }

    /**
     * Parquet files under {@code root}, skipping hidden entries as vacuum does ({@code _delta_log},
     * checksum and temporary files): a running stream creates and renames those while this lists, and
     * a recursive listing that stats every entry fails on one that vanished in between. A directory
     * removed meanwhile (an expired day) holds nothing.
     */
    static Set<String> dataFilesOnDisk(FileSystem fs, Path root) throws IOException {
        Set<String> files = new HashSet<>();
        ArrayDeque<Path> dirs = new ArrayDeque<>(List.of(root));
        while (!dirs.isEmpty()) {
            Path dir = dirs.pop();
            FileStatus[] entries;
            try {
                entries = fs.listStatus(dir);
            } catch (FileNotFoundException gone) {
                continue;
            } catch (IOException e) {
                // Hadoop's local listing reports a directory that vanished after its existence check as
                // "Permission denied" (File.canRead is false) or as "Invalid directory or I/O error"
                // (File.list returned null), depending on the moment; only a directory still there is refused.
                if (!fs.exists(dir)) {
                    continue;
                }
                throw e;
            }
            for (FileStatus e : entries) {
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

    /** Whole hours, rounded up: a retention is never shortened by rounding. */
    static long hours(Duration d) {
        return (d.toMinutes() + 59) / 60;
    }
}
