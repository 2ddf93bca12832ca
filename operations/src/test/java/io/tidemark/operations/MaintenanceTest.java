package io.tidemark.operations;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.sql.Date;
import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDate;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import io.delta.tables.DeltaTable;
import io.tidemark.lakehouse.ClosedDays;
import io.tidemark.lakehouse.Lakehouse;
import io.tidemark.lakehouse.Lakehouse.Table;
import io.tidemark.lakehouse.SparkSessions;
import io.tidemark.lakehouse.TidemarkConfig;
import io.tidemark.pipeline.Watermark;
import io.tidemark.lakehouse.CommitRetry;
import io.tidemark.lakehouse.RequestRefusedException;

/**
 * Maintenance on real Delta tables: a closed day written by many appends becomes one file with the
 * same rows, an open day is left alone, a dry run writes nothing, a vacuum below the safety minimum is
 * refused unless forced, and forced it deletes exactly the compacted-away files.
 */
class MaintenanceTest {
    private static final LocalDate CLOSED = LocalDate.parse("2026-11-28");
    private static final LocalDate OPEN = LocalDate.parse("2026-11-29");
    private static final int APPENDS = 3;

    @TempDir
    static Path dir;
    private static SparkSession spark;
    private static TidemarkConfig config;
    private static Lakehouse lakehouse;

    @BeforeAll
    static void start() {
        config = TidemarkConfig.load(null, Map.of()).set("spark.master", "local[1]").set("spark.shuffle-partitions", "1")
                .set("lakehouse", dir.resolve("lakehouse").toString()).build();
        spark = SparkSessions.create(config, "maintenance-test");
        lakehouse = Lakehouse.of(config);
        lakehouse.createAndRegister(spark);
        // Each append (a micro-batch) adds one file per day.
        for (int i = 0; i < APPENDS; i++) {
            spark.sql("SELECT concat('sub-', id) AS subscriber_id, 'cell-1' AS cell_site_id, "
                            + "timestamp_millis(" + CLOSED.atStartOfDay(java.time.ZoneOffset.UTC).toInstant().toEpochMilli() + "L + id * 1000000) AS event_ts, "
                            + "CAST(id AS DOUBLE) / 1000 AS volume_gb, '{}' AS payload, 't' AS kafka_topic, 0 AS kafka_partition, id + "
                            + (i * 1000) + "L AS kafka_offset, current_timestamp() AS ingest_ts, false AS is_late, " + i + "L AS batch_id, "
                            + "to_date(timestamp_millis(" + CLOSED.atStartOfDay(java.time.ZoneOffset.UTC).toInstant().toEpochMilli() + "L + id * 1000000)) AS event_date "
                            + "FROM range(0, 172, 1, 1)")
                    .write().format("delta").mode("append").save(lakehouse.path(Table.RAW_EVENTS));
        }
        Instant next = Instant.parse("2026-11-29T00:10:00Z");
        Map<String, Object> v = new HashMap<>();
        for (String c : Lakehouse.ownSchema(Table.STREAM_PROGRESS).fieldNames()) {
            v.put(c, 0L);
        }
        Timestamp t = Timestamp.from(next);
        v.putAll(Map.of("query_id", "q", "watermark", t, "next_watermark", t, "max_event_ts", t, "max_event_ts_seen", t, "started_at", t,
                "finished_at", t, ClosedDays.COLUMN, Date.valueOf(ClosedDays.decidedBy(Watermark.of(next)).lastClosed().orElseThrow())));
        v.put("batch_ts", t);
        v.put("partition_clocks", null);
        // Two micro-batches' progress rows: two files, as the stream appends them.
        for (long batch = 0; batch < 2; batch++) {
            v.put("batch_id", batch);
            Row progress = Lakehouse.row(Table.STREAM_PROGRESS, v);
            spark.createDataFrame(List.of(progress), progress.schema()).write().format("delta").mode("append").save(lakehouse.path(Table.STREAM_PROGRESS));
        }
    }

    @AfterAll
    static void stop() {
        spark.stop();
    }

    private static long files(LocalDate day) {
        return spark.read().format("delta").load(lakehouse.path(Table.RAW_EVENTS)).where("event_date = DATE'" + day + "'")
                .select("_metadata.file_path").distinct().count();
    }

    /** Per day: rows, volume and offsets, as one comparable string. */
    private static String figures() {
        return String.join(";", spark.sql("SELECT event_date, count(*), sum(volume_gb), sum(kafka_offset) FROM " + lakehouse.ref(Table.RAW_EVENTS)
                + " GROUP BY event_date ORDER BY event_date").collectAsList().stream().map(r -> r.mkString("|")).toList());
    }

    private static Maintenance maintenance(ByteArrayOutputStream out) {
        return new Maintenance(spark, config, new PrintStream(out, true, StandardCharsets.UTF_8), CommitRetry.defaults());
    }

    @Test
    void closedDaysAreCompactedOpenOnesLeftAloneAndVacuumIsSafeUnlessForced() {
        assertThat(files(CLOSED)).isEqualTo(APPENDS);
        assertThat(files(OPEN)).isEqualTo(APPENDS);
        String rowsBefore = figures();
        long versionBefore = DeltaTable.forPath(spark, lakehouse.path(Table.RAW_EVENTS)).history(1).first().getLong(0);

        ClosedDays closed = ClosedDays.load(spark, lakehouse);
        long versions = DeltaTable.forPath(spark, lakehouse.path(Table.RAW_EVENTS)).history().count();
        assertThat(TableState.of(spark, lakehouse, Table.RAW_EVENTS, closed))
                .isEqualTo(new TableState(Table.RAW_EVENTS, 2L * APPENDS, TableState.of(spark, lakehouse, Table.RAW_EVENTS, closed).bytes(),
                        versions, java.util.Optional.of(CLOSED)));

        ByteArrayOutputStream out = new ByteArrayOutputStream();
        List<Maintenance.TableReport> dry = maintenance(out).run(new Maintenance.Options(true, Duration.ofDays(7), false));
        assertThat(dry.get(0).table()).isEqualTo(Table.RAW_EVENTS);
        assertThat(dry.get(0).compactedDays()).containsExactly(CLOSED);
        assertThat(dry.get(0).filesBefore()).isEqualTo(2L * APPENDS);
        assertThat(dry.get(0).filesVacuumed()).isZero();
        assertThat(out.toString(StandardCharsets.UTF_8)).contains("maintain raw_events   would compact 1 closed day (2026-11-28); files 6 -> 6");
        assertThat(DeltaTable.forPath(spark, lakehouse.path(Table.RAW_EVENTS)).history(1).first().getLong(0)).isEqualTo(versionBefore);

        assertThatThrownBy(() -> maintenance(new ByteArrayOutputStream()).run(new Maintenance.Options(false, Duration.ofHours(1), false)))
                .isInstanceOf(RequestRefusedException.class)
                .hasMessageStartingWith("a vacuum retention of 1 hours is below Delta's safety minimum of 168 hours");
        assertThat(DeltaTable.forPath(spark, lakehouse.path(Table.RAW_EVENTS)).history(1).first().getLong(0)).isEqualTo(versionBefore);

        List<Maintenance.TableReport> done = maintenance(new ByteArrayOutputStream()).run(new Maintenance.Options(false, Duration.ofDays(7), false));
        assertThat(done.get(0).compactedDays()).containsExactly(CLOSED);
        assertThat(done.get(0).filesAfter()).isEqualTo(1L + APPENDS);
        assertThat(done.get(0).filesVacuumed()).as("nothing is older than 7 days").isZero();
        assertThat(done.get(0).problem()).isNull();
        assertThat(files(CLOSED)).isEqualTo(1);
        assertThat(files(OPEN)).isEqualTo(APPENDS);
        TableState compacted = TableState.of(spark, lakehouse, Table.RAW_EVENTS, closed);
        assertThat(compacted.files()).isEqualTo(1L + APPENDS);
        assertThat(compacted.oldestUncompacted()).isEmpty();
        assertThat(compacted.commitsSinceCheckpoint()).isEqualTo(DeltaTable.forPath(spark, lakehouse.path(Table.RAW_EVENTS)).history().count());
        assertThat(figures()).isEqualTo(rowsBefore);
        assertThat(done.stream().filter(r -> !r.table().equals(Table.RAW_EVENTS)).mapToLong(r -> r.compactedDays().size()).sum()).isZero();
        Maintenance.TableReport progress = done.stream().filter(r -> r.table().equals(Table.STREAM_PROGRESS)).findFirst().orElseThrow();
        assertThat(List.of(progress.filesBefore(), progress.filesAfter())).as("stream_progress compacted whole").containsExactly(2L, 1L);
        assertThat(spark.read().format("delta").load(lakehouse.path(Table.STREAM_PROGRESS)).selectExpr("sort_array(collect_list(batch_id))").first()
                .getList(0)).containsExactly(0L, 1L);
        assertThat(ClosedDays.load(spark, lakehouse).lastClosed()).isEqualTo(closed.lastClosed());

        List<Maintenance.TableReport> forced = maintenance(new ByteArrayOutputStream()).run(new Maintenance.Options(false, Duration.ZERO, true));
        assertThat(forced.get(0).compactedDays()).as("a compacted day is one file: nothing left to do").isEmpty();
        assertThat(forced.get(0).filesVacuumed()).as("the closed day's files replaced by the compaction").isEqualTo(APPENDS);
        assertThat(figures()).isEqualTo(rowsBefore);
        assertThat(spark.conf().get("spark.databricks.delta.retentionDurationCheck.enabled", "true")).isEqualTo("true");
    }

    /**
     * The files vacuum counts are listed while a stream commits beside it: Delta's and Hadoop's hidden
     * temporary files appear and vanish in the log and the day directories, and a day directory can
     * vanish whole. The listing gives exactly the data files every time (a recursive listing that
     * stats each entry failed on a temporary file renamed away in between, in the long-haul run).
     */
    @Test
    void listsDataFilesWhileHiddenFilesComeAndGo() throws Exception {
        Path table = dir.resolve("listing");
        Path day = java.nio.file.Files.createDirectories(table.resolve("event_date=2026-11-28"));
        Path log = java.nio.file.Files.createDirectories(table.resolve("_delta_log"));
        java.nio.file.Files.writeString(day.resolve("part-00000-a.c000.snappy.parquet"), "x");
        java.nio.file.Files.writeString(day.resolve("part-00001-b.c000.snappy.parquet"), "x");
        java.nio.file.Files.writeString(log.resolve("00000000000000000010.checkpoint.parquet"), "x");
        java.util.concurrent.atomic.AtomicBoolean stop = new java.util.concurrent.atomic.AtomicBoolean();
        Thread churn = new Thread(() -> {
            for (long i = 0; !stop.get(); i++) {
                try {
                    for (Path d : List.of(log, day)) {
                        Path tmp = d.resolve("." + String.format("%020d", i) + ".crc." + i + ".tmp");
                        java.nio.file.Files.writeString(tmp, "x");
                        java.nio.file.Files.move(tmp, d.resolve("." + i + ".crc"));
                        java.nio.file.Files.delete(d.resolve("." + i + ".crc"));
                    }
                    Path gone = java.nio.file.Files.createDirectories(table.resolve("event_date=2026-01-01"));
                    java.nio.file.Files.delete(gone);
                } catch (java.io.IOException e) {
                    throw new java.io.UncheckedIOException(e);
                }
            }
        });
        churn.start();
        org.apache.hadoop.fs.Path root = new org.apache.hadoop.fs.Path(table.toUri());
        org.apache.hadoop.fs.FileSystem fs = root.getFileSystem(spark.sparkContext().hadoopConfiguration());
        try {
            for (int i = 0; i < 300; i++) {
                assertThat(Vacuum.dataFilesOnDisk(fs, root)).as("listing %d", i)
                        .containsExactlyInAnyOrder(day.resolve("part-00000-a.c000.snappy.parquet").toUri().toString().replace("file:///", "file:/"),
                                day.resolve("part-00001-b.c000.snappy.parquet").toUri().toString().replace("file:///", "file:/"));
            }
        } finally {
            stop.set(true);
            churn.join();
        }
    }
}
