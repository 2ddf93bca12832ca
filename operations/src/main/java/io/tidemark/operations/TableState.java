package io.tidemark.operations;

import static org.apache.spark.sql.functions.col;
import static org.apache.spark.sql.functions.count;
import static org.apache.spark.sql.functions.first;
import static org.apache.spark.sql.functions.lit;
import static org.apache.spark.sql.functions.sum;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.time.LocalDate;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;

import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;

import com.fasterxml.jackson.databind.ObjectMapper;

import io.tidemark.lakehouse.ClosedDays;
import io.tidemark.lakehouse.Lakehouse;
import io.tidemark.lakehouse.Lakehouse.Table;

/**
 * A table's size and upkeep, as {@code tidemark status} shows it: files and bytes of the current
 * version, commits since Delta's last checkpoint of the log (what a reader replays on top of it),
 * and the oldest closed day still held in more than one file (empty: compaction is up to date).
 */
public record TableState(Table table, long files, long bytes, long commitsSinceCheckpoint, Optional<LocalDate> oldestUncompacted) {

    public static TableState of(SparkSession spark, Lakehouse lakehouse, Table table, ClosedDays closed) {
        long[] size = lakehouse.size(spark, table);
        long version = lakehouse.version(spark, table);
        long checkpoint = lastCheckpointVersion(spark, lakehouse.path(table));
        Optional<LocalDate> oldest = Optional.empty();
        String day = Maintenance.dayColumn(table);
        if (day != null) {
            oldest = filesByDay(spark, lakehouse, table, day).entrySet().stream()
                    .filter(e -> closed.isClosed(e.getKey()) && e.getValue()[0] > 1).map(Map.Entry::getKey).findFirst();
        }
        return new TableState(table, size[0], size[1], version - checkpoint, oldest);
    }

    /** The version of Delta's last log checkpoint ({@code _delta_log/_last_checkpoint}), -1 when there is none yet. */
    private static long lastCheckpointVersion(SparkSession spark, String tablePath) {
        Path p = new Path(tablePath, "_delta_log/_last_checkpoint");
        try {
            FileSystem fs = p.getFileSystem(spark.sparkContext().hadoopConfiguration());
            if (!fs.exists(p)) {
                return -1;
            }
            try (InputStream in = fs.open(p)) {
                return new ObjectMapper().readTree(in).get("version").asLong();
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + p, e);
        }
    }

    /** Files and bytes per day of the table's current version, from the files' own metadata (no data read). */
    static Map<LocalDate, long[]> filesByDay(SparkSession spark, Lakehouse lakehouse, Table table, String day) {
        Map<LocalDate, long[]> out = new TreeMap<>();
        List<Row> rows = lakehouse.read(spark, table)
                .select(col(day), col("_metadata.file_path").as("file"), col("_metadata.file_size").as("size"))
                .groupBy(col(day), col("file")).agg(first(col("size")).as("size"))
                .groupBy(col(day)).agg(count(lit(1)), sum(col("size")))
                .collectAsList();
        for (Row r : rows) {
            out.put(r.getDate(0).toLocalDate(), new long[] {r.getLong(1), r.isNullAt(2) ? 0 : r.getLong(2)});
        }
        return out;
    }
}
