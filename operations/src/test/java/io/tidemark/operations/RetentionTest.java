package io.tidemark.operations;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.sql.Date;
import java.sql.Timestamp;
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

import io.tidemark.lakehouse.ClosedDays;
import io.tidemark.lakehouse.ExpiredDays;
import io.tidemark.lakehouse.Lakehouse;
import io.tidemark.lakehouse.Lakehouse.Table;
import io.tidemark.lakehouse.SparkSessions;
import io.tidemark.lakehouse.TidemarkConfig;
import io.tidemark.pipeline.Watermark;
import io.tidemark.lakehouse.CommitRetry;
import io.tidemark.lakehouse.RequestRefusedException;
import io.tidemark.reconcile.DaySelection;
import io.tidemark.reconcile.ReconcileJob;

/**
 * Data retention on real Delta tables. Six days, the last one open (the stream closed up to D4):
 * D0 never reconciled, D1 reconciled and balanced, D2 reconciled but dirty (a late record since), D3
 * never reconciled, D4 reconciled, D5 open. With two days kept only D1 may go from raw_events,
 * late_events and kpi_5m (D0 is past retention too, but unreconciled); with one day kept dead_letter
 * loses its arrival days up to D3, and keeps D4 and the open D5. Reconcile then refuses D1, and a late
 * record that arrives for D1 afterwards does not make it a dirty day to reconcile.
 */
class RetentionTest {
    private static final LocalDate D0 = LocalDate.parse("2026-11-20");
    private static final LocalDate D1 = D0.plusDays(1);
    private static final LocalDate D2 = D1.plusDays(1);
    private static final LocalDate D3 = D1.plusDays(2);
    private static final LocalDate D4 = D1.plusDays(3);
    private static final LocalDate D5 = D1.plusDays(4);

    @TempDir
    static Path dir;
    private static SparkSession spark;
    private static TidemarkConfig config;
    private static Lakehouse lakehouse;

    @BeforeAll
    static void start() {
        config = TidemarkConfig.load(null, Map.of()).set("spark.master", "local[1]").set("spark.shuffle-partitions", "1")
                .set("lakehouse", dir.resolve("lakehouse").toString())
                .set("retention.raw-days", "2").set("retention.late-days", "2").set("retention.kpi-days", "2")
                .set("retention.dead-letter-days", "1").build();
        spark = SparkSessions.create(config, "retention-test");
        lakehouse = Lakehouse.of(config);
        lakehouse.createAndRegister(spark);
        // One append per table and kind of row (each append is a Delta commit, the setup's cost), one file per day.
        raw(List.of(D0, D1, D2, D3, D4, D5), 10, false);
        raw(List.of(D2), 1, true); // late since D2 was reconciled: dirty
        late(List.of(D1, D2));
        kpi(Map.of(D0, "stream", D1, "batch", D2, "batch", D3, "stream", D4, "batch", D5, "stream"), 10);
        spark.sql("SELECT 'NOT_JSON' AS reason, 'x' AS detail, CAST(NULL AS BINARY) AS raw_bytes, 'x' AS raw_text, 1 AS message_bytes, "
                        + "CAST(NULL AS BINARY) AS kafka_key, 't' AS kafka_topic, 0 AS kafka_partition, 7L AS kafka_offset, 0L AS batch_id, "
                        + "CAST(day AS TIMESTAMP) + INTERVAL 12 HOURS AS arrival_ts, day AS arrival_date FROM " + days(List.of(D3, D4, D5)))
                .write().format("delta").mode("append").save(lakehouse.path(Table.DEAD_LETTER));
        Timestamp t = Timestamp.from(Instant.parse(D5 + "T00:10:00Z"));
        Map<String, Object> v = new HashMap<>();
        for (String c : Lakehouse.ownSchema(Table.STREAM_PROGRESS).fieldNames()) {
            v.put(c, 0L);
        }
        v.putAll(Map.of("query_id", "q", "watermark", t, "next_watermark", t, "max_event_ts", t, "max_event_ts_seen", t, "started_at", t,
                "finished_at", t, ClosedDays.COLUMN, Date.valueOf(ClosedDays.decidedBy(Watermark.of(t.toInstant())).lastClosed().orElseThrow())));
        v.put("batch_ts", t);
        v.put("partition_clocks", null);
        Row progress = Lakehouse.row(Table.STREAM_PROGRESS, v);
        spark.createDataFrame(List.of(progress), progress.schema()).write().format("delta").mode("append").save(lakehouse.path(Table.STREAM_PROGRESS));
    }

    /** The days as a one-column relation {@code day}, for a single append that writes every one of them. */
    private static String days(List<LocalDate> days) {
        return "VALUES " + days.stream().map(d -> "(DATE'" + d + "')").collect(java.util.stream.Collectors.joining(", ")) + " AS d(day)";
    }

    /** {@code n} raw events at 10:00 of each day, in one append. */
    private static void raw(List<LocalDate> days, int n, boolean late) {
        spark.sql("SELECT concat('sub-', id) AS subscriber_id, 'cell-1' AS cell_site_id, CAST(day AS TIMESTAMP) + INTERVAL 10 HOURS AS event_ts, "
                        + "1.0D AS volume_gb, '{}' AS payload, 't' AS kafka_topic, 0 AS kafka_partition, id AS kafka_offset, "
                        + "CAST(day AS TIMESTAMP) + INTERVAL 10 HOURS AS ingest_ts, " + late + " AS is_late, 0L AS batch_id, day AS event_date "
                        + "FROM range(0, " + n + ", 1, 1) CROSS JOIN " + days(days))
                .write().format("delta").mode("append").save(lakehouse.path(Table.RAW_EVENTS));
    }

    private static void late(List<LocalDate> days) {
        spark.sql("SELECT 'sub-1' AS subscriber_id, 'cell-1' AS cell_site_id, CAST(day AS TIMESTAMP) + INTERVAL 10 HOURS AS event_ts, "
                        + "1.0D AS volume_gb, CAST(day AS TIMESTAMP) + INTERVAL 10 HOURS AS window_start, "
                        + "CAST(day AS TIMESTAMP) + INTERVAL 10 HOURS 5 MINUTES AS window_end, CAST(day AS TIMESTAMP) + INTERVAL 11 HOURS AS watermark, "
                        + "3300000L AS late_by_ms, 0L AS batch_id, 't' AS kafka_topic, 0 AS kafka_partition, 99L AS kafka_offset, "
                        + "CAST(day AS TIMESTAMP) + INTERVAL 11 HOURS AS arrival_ts, day AS event_date FROM " + days(days))
                .write().format("delta").mode("append").save(lakehouse.path(Table.LATE_EVENTS));
    }

    /** One final KPI row of {@code records} records per day, written by the source given for the day, in one append. */
    private static void kpi(Map<LocalDate, String> sourceByDay, long records) {
        String values = "VALUES " + sourceByDay.entrySet().stream().map(e -> "(DATE'" + e.getKey() + "', '" + e.getValue() + "')")
                .collect(java.util.stream.Collectors.joining(", ")) + " AS d(day, source)";
        spark.sql("SELECT CAST(day AS TIMESTAMP) + INTERVAL 10 HOURS AS window_start, CAST(day AS TIMESTAMP) + INTERVAL 10 HOURS 5 MINUTES AS window_end, "
                        + "'cell-1' AS cell_site_id, " + records + "L AS record_count, CAST(" + records + " AS DECIMAL(38,9)) AS total_gb, "
                        + records + "L AS subscribers, hll_sketch_agg('sub-1', 12) AS subscriber_sketch, true AS is_final, source, "
                        + "CAST(day AS TIMESTAMP) + INTERVAL 10 HOURS AS updated_at, "
                        + "CASE WHEN source = 'batch' THEN CAST(NULL AS BIGINT) ELSE 0L END AS stream_batch_id, day AS event_date "
                        + "FROM " + values + " GROUP BY day, source")
                .write().format("delta").mode("append").save(lakehouse.path(Table.kpi("kpi_5m")));
    }

    @AfterAll
    static void stop() {
        spark.stop();
    }

    private static List<LocalDate> days(Table table) {
        String column = Maintenance.dayColumn(table);
        return spark.read().format("delta").load(lakehouse.path(table)).select(column).distinct().orderBy(column).collectAsList().stream()
                .map(r -> r.getDate(0).toLocalDate()).toList();
    }

    private static List<Maintenance.TableReport> maintain(boolean dryRun, ByteArrayOutputStream out) {
        return new Maintenance(spark, config, new PrintStream(out, true, StandardCharsets.UTF_8), CommitRetry.defaults())
                .run(new Maintenance.Options(dryRun, null, false));
    }

    @Test
    void onlyClosedReconciledCleanDaysPastRetentionGoAndReconcileNeverRebuildsThem() {
        ByteArrayOutputStream dryOut = new ByteArrayOutputStream();
        List<Maintenance.TableReport> dry = maintain(true, dryOut);
        assertThat(dry).extracting(Maintenance.TableReport::table, Maintenance.TableReport::expiredDays, Maintenance.TableReport::rowsExpired)
                .containsExactly(
                        org.assertj.core.groups.Tuple.tuple(Table.RAW_EVENTS, List.of(D1), 10L),
                        org.assertj.core.groups.Tuple.tuple(Table.LATE_EVENTS, List.of(D1), 1L),
                        org.assertj.core.groups.Tuple.tuple(Table.DEAD_LETTER, List.of(D3), 1L),
                        org.assertj.core.groups.Tuple.tuple(Table.kpi("kpi_5m"), List.of(D1), 1L),
                        org.assertj.core.groups.Tuple.tuple(Table.STREAM_PROGRESS, List.of(), 0L));
        assertThat(dryOut.toString(StandardCharsets.UTF_8))
                .contains("retention: raw_events 2 days, late_events 2 days, dead_letter 1 days, kpi_5m 2 days before the last closed day")
                .contains("maintain raw_events   would delete 1 day (2026-11-21) past retention (10 rows); ");
        assertThat(days(Table.RAW_EVENTS)).as("a dry run deletes nothing").containsExactly(D0, D1, D2, D3, D4, D5);
        assertThat(ExpiredDays.load(spark, lakehouse).of(Table.RAW_EVENTS)).isEmpty();

        List<Maintenance.TableReport> done = maintain(false, new ByteArrayOutputStream());
        assertThat(done).allSatisfy(r -> assertThat(r.problem()).isNull());
        assertThat(days(Table.RAW_EVENTS)).as("D0 unreconciled, D2 dirty, D3 unreconciled, D4 within retention, D5 open")
                .containsExactly(D0, D2, D3, D4, D5);
        assertThat(days(Table.LATE_EVENTS)).containsExactly(D2);
        assertThat(days(Table.kpi("kpi_5m"))).containsExactly(D0, D2, D3, D4, D5);
        assertThat(days(Table.DEAD_LETTER)).as("D4 within retention, D5 open").containsExactly(D4, D5);
        assertThat(spark.read().format("delta").load(lakehouse.path(Table.EXPIRED_DAYS))
                .selectExpr("concat_ws('|', table_name, day, rows_removed, files_removed, retention_days, last_closed_day)").orderBy("table_name")
                .collectAsList().stream().map(r -> r.getString(0)).toList())
                .containsExactly("dead_letter|" + D3 + "|1|1|1|" + D4, "kpi_5m|" + D1 + "|1|1|2|" + D4, "late_events|" + D1 + "|1|1|2|" + D4,
                        "raw_events|" + D1 + "|10|1|2|" + D4);

        ReconcileJob reconcile = new ReconcileJob(spark, config, new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8));
        assertThatThrownBy(() -> reconcile.run(DaySelection.range(D1, D2), false))
                .isInstanceOf(RequestRefusedException.class)
                .hasMessage("the raw events of 2026-11-21 were deleted by data retention (retention.raw-days; see expired_days), so the day "
                        + "can no longer be recomputed; its KPI rows stay as last reconciled. Choose a range after 2026-11-21.");
        assertThat(reconcile.dirtyDays()).containsExactly(D2);

        raw(List.of(D1), 1, true); // a late record for an expired day: kept until the next maintain, never reconciled
        assertThat(reconcile.dirtyDays()).as("D1 is unbalanced now but can no longer be recomputed").containsExactly(D2);
        List<Maintenance.TableReport> again = maintain(false, new ByteArrayOutputStream());
        assertThat(again.get(0).expiredDays()).containsExactly(D1);
        assertThat(again.get(0).rowsExpired()).isEqualTo(1);
        assertThat(days(Table.RAW_EVENTS)).containsExactly(D0, D2, D3, D4, D5);
        assertThat(again.stream().skip(1).mapToLong(r -> r.expiredDays().size()).sum()).as("nothing else is past retention").isZero();
    }

    @Test
    void kpiRetentionNeedsRawRetentionAtLeastAsShort() {
        assertThatThrownBy(() -> TidemarkConfig.load(null, Map.of()).set("retention.kpi-days", "30").build())
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("retention.kpi-days (30) needs retention.raw-days set and at most as large (it is 0): KPI rows are only deleted "
                        + "for days whose raw events are gone, or reconcile would rebuild them");
        assertThatThrownBy(() -> TidemarkConfig.load(null, Map.of()).set("retention.raw-days", "30").set("retention.kpi-days", "7").build())
                .isInstanceOf(IllegalArgumentException.class).hasMessageStartingWith("retention.kpi-days (7) needs");
        assertThat(TidemarkConfig.load(null, Map.of()).set("retention.raw-days", "30").set("retention.kpi-days", "400").build()
                .retentionDays(Table.kpi("kpi_5m"))).isEqualTo(400);
    }
}
