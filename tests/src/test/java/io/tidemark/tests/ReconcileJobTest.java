package io.tidemark.tests;

import static io.tidemark.tests.KafkaFixtures.event;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.tuple;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Instant;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;
import org.junit.jupiter.api.TestInstance;

import io.tidemark.operations.ConservationCheck;
import io.tidemark.lakehouse.Lakehouse;
import io.tidemark.lakehouse.Lakehouse.Table;
import io.tidemark.lakehouse.TidemarkConfig;
import io.tidemark.reconcile.DayOutcome;
import io.tidemark.reconcile.DaySelection;
import io.tidemark.reconcile.ReconcileJob;
import io.tidemark.lakehouse.RequestRefusedException;
import io.tidemark.reconcile.ReconcileResult;
import io.tidemark.stream.StreamingJob;
import io.tidemark.tests.KafkaFixtures.Message;

/**
 * The batch layer over crafted out-of-order input that went through the real broker and the real
 * stream, eight records per micro-batch (window 5 min, lateness 10 min). The tests build on one
 * another in order: refusals, a dry run, the first reconcile (exact truth, exact drift), the views,
 * a second reconcile (same content), then a late record that makes one day dirty.
 *
 * <p>The watermark in force per batch: B0 and B1 epoch, B2 11-27 23:48, B3 11-28 22:51; after B3 the
 * stream's next watermark is 11-29 00:50, so 11-26, 11-27 and 11-28 are closed and 11-29 is open.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class ReconcileJobTest extends OnSharedInfrastructure {
    private static final Instant INGEST = Instant.parse("2026-11-29T06:00:00Z");
    private static final LocalDate D26 = LocalDate.parse("2026-11-26");
    private static final LocalDate D27 = LocalDate.parse("2026-11-27");
    private static final LocalDate D28 = LocalDate.parse("2026-11-28");
    private static final LocalDate D29 = LocalDate.parse("2026-11-29");

    private SparkSession spark;
    private Lakehouse lakehouse;
    private TidemarkConfig config;
    private String topic;
    private final List<Message> sent = new ArrayList<>();
    private final ByteArrayOutputStream printed = new ByteArrayOutputStream();
    private ReconcileJob job;

    /** Drift measured before the first reconcile, independently of the job: day -> {count drift, gb drift, late}. */
    private final Map<LocalDate, Object[]> measuredDrift = new TreeMap<>();
    private List<String> measuredWindowDrift;
    private List<String> afterFirstReconcile;

    @BeforeAll
    void streamCraftedBatches() throws Exception {
        Path dir = infra.newDir("reconcile");
        topic = "reconcile-" + dir.getFileName();
        infra.broker.createTopic(topic, 1);
        send(List.of(
                // B0, watermark epoch
                event("s1", "c1", "2026-11-26T10:00:00Z", 1.5),
                event("s2", "c1", "2026-11-26T10:01:00Z", 2.25),
                event("s1", "c2", "2026-11-26T23:59:59Z", 0.125),
                event("s1", "c1", "2026-11-27T08:00:00Z", 1.0),
                event("s2", "c1", "2026-11-27T08:03:00Z", 0.5),
                event("s3", "c2", "2026-11-27T12:00:00Z", 3.0),
                event("s1", "c2", "2026-11-27T12:02:00Z", 0.75),
                event("s4", "c1", "2026-11-27T23:58:00Z", 2.0),
                // B1, watermark epoch
                event("s5", "c1", "2026-11-27T08:04:00Z", 0.2),
                event("s1", "c1", "2026-11-28T00:00:00Z", 1.25),
                event("s2", "c3", "2026-11-28T09:00:00Z", 4.0),
                event("s1", "c3", "2026-11-28T09:01:00Z", 1.0),
                event("s2", "c3", "2026-11-28T10:00:00Z", 2.0),
                event("s4", "c1", "2026-11-28T09:02:00Z", 0.4),
                event("s3", "c1", "2026-11-28T23:00:00Z", 5.0),
                event("s5", "c1", "2026-11-28T23:01:00Z", 0.1),
                // B2, watermark 11-27 23:48
                event("s6", "c1", "2026-11-27T07:40:00Z", 0.3),     // late by 16 h 03 min
                event("s7", "c2", "2026-11-27T20:00:00Z", 1.0),     // late by 3 h 43 min
                event("s1", "c1", "2026-11-29T00:30:00Z", 1.0),
                event("s2", "c2", "2026-11-29T00:31:00Z", 1.0),
                event("s1", "c1", "2026-11-29T00:35:00Z", 2.0),
                event("s6", "c3", "2026-11-29T00:40:00Z", 0.5),
                event("s2", "c1", "2026-11-29T00:45:00Z", 0.3),
                event("s4", "c2", "2026-11-29T01:00:00Z", 1.1),
                // B3, watermark 11-28 22:51
                event("s2", "c3", "2026-11-28T08:40:00Z", 0.6),     // late
                event("s8", "c3", "2026-11-28T09:04:00Z", 0.9),     // late, into a window the stream has (c3 09:00)
                event("s3", "c2", "2026-11-29T01:02:00Z", 0.7)));
        config = infra.config(dir, topic).set(TidemarkConfig.Key.MAX_OFFSETS_PER_TRIGGER, "8").build();
        spark = infra.spark;
        lakehouse = Lakehouse.of(config);
        stream();
        job = new ReconcileJob(spark, config, new PrintStream(new TeeOutput(printed, System.out), true, StandardCharsets.UTF_8));
    }

    private void send(List<String> values) throws Exception {
        List<Message> batch = new ArrayList<>();
        for (String v : values) {
            batch.add(new Message(v, INGEST.plusSeconds(sent.size() + batch.size())));
        }
        KafkaFixtures.send(infra.broker.bootstrapServers(), topic, batch);
        sent.addAll(batch);
    }

    private void stream() throws Exception {
        StreamingJob stream = new StreamingJob(spark, config, null);
        stream.start(true).awaitTermination();
        stream.close();
    }

    private List<Row> rows(String sql) {
        return spark.sql(sql.replace("{kpi}", lakehouse.ref(Table.kpi("kpi_5m")))
                .replace("{raw}", lakehouse.ref(Table.RAW_EVENTS))
                .replace("{report}", lakehouse.ref(Table.RECONCILE_REPORT))).collectAsList();
    }

    /** Every column of the KPI rows of the given days, one string per row, sorted. */
    private List<String> kpiSnapshot(String days) {
        return rows("SELECT " + allColumns(spark, lakehouse, Table.kpi("kpi_5m")) + " AS r FROM {kpi} WHERE event_date IN (" + days + ") ORDER BY r")
                .stream().map(r -> r.getString(0)).toList();
    }

    /** An expression joining every column of {@code table} (binary as hex, null as ∅) into one string. */
    static String allColumns(SparkSession spark, Lakehouse lakehouse, Table table) {
        StringBuilder sb = new StringBuilder("concat_ws(' | '");
        for (org.apache.spark.sql.types.StructField f : spark.read().format("delta").load(lakehouse.path(table)).schema().fields()) {
            String c = "`" + f.name() + "`";
            sb.append(", coalesce(").append(f.dataType() instanceof org.apache.spark.sql.types.BinaryType ? "hex(" + c + ")" : "CAST(" + c + " AS STRING)")
                    .append(", '∅')");
        }
        return sb.append(")").toString();
    }

    private long version(Table t) {
        return rows("DESCRIBE HISTORY " + lakehouse.ref(t) + " LIMIT 1").get(0).getLong(0);
    }

    /** The story of one lakehouse, step after step: each step starts from where the one before left the tables. */
    @TestFactory
    java.util.stream.Stream<DynamicTest> reconcileStory() {
        return java.util.stream.Stream.of(
                DynamicTest.dynamicTest("openDaysAndBadRangesAreRefused", this::openDaysAndBadRangesAreRefused),
                DynamicTest.dynamicTest("dirtyDaysAreTheClosedDaysWithLateRecordsAndADryRunWritesNothing", this::dirtyDaysAreTheClosedDaysWithLateRecordsAndADryRunWritesNothing),
                DynamicTest.dynamicTest("reconcileReplacesClosedDaysWithTheExactTruthAndReportsTheDriftMeasuredBefore", this::reconcileReplacesClosedDaysWithTheExactTruthAndReportsTheDriftMeasuredBefore),
                DynamicTest.dynamicTest("analystViewsGiveExactNumbers", this::analystViewsGiveExactNumbers),
                DynamicTest.dynamicTest("reconcilingAgainGivesTheSameTableContent", this::reconcilingAgainGivesTheSameTableContent),
                DynamicTest.dynamicTest("aLateRecordForAReconciledDayMakesItDirtyAndOnlyIt", this::aLateRecordForAReconciledDayMakesItDirtyAndOnlyIt));
    }

    private void openDaysAndBadRangesAreRefused() {
        long kpiVersion = version(Table.kpi("kpi_5m"));
        assertThatThrownBy(() -> job.run(DaySelection.range(D28, D29), false))
                .isInstanceOf(RequestRefusedException.class)
                .hasMessage("day 2026-11-29 is not closed: the stream's watermark is 2026-11-29T00:50:00Z and the day closes only when it "
                        + "reaches 2026-11-30T00:00:00Z; the last closed day is 2026-11-28. Reconcile closed days only.");
        assertThatThrownBy(() -> job.run(DaySelection.day(LocalDate.parse("2027-01-01")), false))
                .isInstanceOf(RequestRefusedException.class)
                .hasMessageStartingWith("day 2027-01-01 is not closed: the stream's watermark is 2026-11-29T00:50:00Z");
        assertThatThrownBy(() -> DaySelection.range(D28, D27)).isInstanceOf(RequestRefusedException.class)
                .hasMessage("--from 2026-11-28 is after --to 2026-11-27; give the earlier day first");
        assertThatThrownBy(() -> DaySelection.recent(0)).isInstanceOf(RequestRefusedException.class)
                .hasMessage("--recent 0: the number of days must be at least 1");
        assertThat(version(Table.kpi("kpi_5m"))).as("a refused run writes nothing").isEqualTo(kpiVersion);
        assertThat(rows("SELECT count(*) FROM {report}").get(0).getLong(0)).isZero();
    }

    private void dirtyDaysAreTheClosedDaysWithLateRecordsAndADryRunWritesNothing() {
        assertThat(job.closedDays().lastClosed()).contains(D28);
        assertThat(job.dirtyDays()).containsExactly(D27, D28);
        long kpiVersion = version(Table.kpi("kpi_5m"));
        long reportVersion = version(Table.RECONCILE_REPORT);

        ReconcileResult dry = job.run(DaySelection.range(LocalDate.parse("2026-11-25"), D27), true);

        assertThat(dry.days()).extracting(DayOutcome::day, DayOutcome::status, DayOutcome::windowsChanged, ReconcileJobTest::gbDrift,
                        DayOutcome::lateRecords)
                .containsExactly(
                        tuple(LocalDate.parse("2026-11-25"), DayOutcome.Status.NO_DATA, 0L, BigDecimal.ZERO, 0L),
                        tuple(D26, DayOutcome.Status.DRY_RUN, 0L, new BigDecimal("0.000000000"), 0L),
                        tuple(D27, DayOutcome.Status.DRY_RUN, 2L, new BigDecimal("1.300000000"), 2L));
        assertThat(version(Table.kpi("kpi_5m"))).isEqualTo(kpiVersion);
        assertThat(version(Table.RECONCILE_REPORT)).isEqualTo(reportVersion);
        assertThat(printed.toString(StandardCharsets.UTF_8)).contains("reconcile 2026-11-25 [1/3]: no data");
    }

    private void reconcileReplacesClosedDaysWithTheExactTruthAndReportsTheDriftMeasuredBefore() {
        // Measured before, from the tables alone: raw log against the stream's KPI rows.
        for (Row r : rows("""
                WITH raw AS (SELECT event_date, count(*) AS n, sum(CAST(volume_gb AS DECIMAL(38,9))) AS gb,
                                    count_if(is_late) AS late FROM {raw} GROUP BY event_date),
                     kpi AS (SELECT event_date, sum(record_count) AS n, sum(total_gb) AS gb FROM {kpi} GROUP BY event_date)
                SELECT raw.event_date, raw.n - coalesce(kpi.n, 0), CAST(raw.gb - coalesce(kpi.gb, 0) AS DECIMAL(38,9)), raw.late
                FROM raw LEFT JOIN kpi USING (event_date)""")) {
            measuredDrift.put(r.getDate(0).toLocalDate(), new Object[] {r.getLong(1), r.getDecimal(2), r.getLong(3)});
        }
        measuredWindowDrift = windowDifferences();
        List<String> untouched = kpiSnapshot("DATE'2026-11-26', DATE'2026-11-29'");

        ReconcileResult result = job.run(DaySelection.range(D27, D28), false);

        // (a) the closed days now hold exactly a recomputation from the raw log, in plain SQL
        List<Row> expected = rows("""
                SELECT CAST(ws AS STRING), CAST(ws + INTERVAL 5 MINUTES AS STRING), cell_site_id, count(*),
                       CAST(sum(CAST(volume_gb AS DECIMAL(38,9))) AS STRING), count(DISTINCT subscriber_id), CAST(max(ingest_ts) AS STRING)
                FROM (SELECT *, timestamp_seconds(unix_seconds(event_ts) DIV 300 * 300) AS ws FROM {raw})
                WHERE event_date BETWEEN DATE'2026-11-27' AND DATE'2026-11-28'
                GROUP BY ws, cell_site_id ORDER BY 1, 3""");
        List<Row> actual = rows("""
                SELECT CAST(window_start AS STRING), CAST(window_end AS STRING), cell_site_id, record_count, CAST(total_gb AS STRING),
                       subscribers, CAST(updated_at AS STRING), hll_sketch_estimate(subscriber_sketch), is_final, source,
                       stream_batch_id IS NULL
                FROM {kpi} WHERE event_date BETWEEN DATE'2026-11-27' AND DATE'2026-11-28' ORDER BY 1, 3""");
        assertThat(actual).extracting(r -> tuple(r.get(0), r.get(1), r.get(2), r.get(3), r.get(4), r.get(5), r.get(6)))
                .containsExactlyElementsOf(expected.stream().map(r -> tuple(r.get(0), r.get(1), r.get(2), r.get(3), r.get(4), r.get(5),
                        r.get(6))).toList());
        assertThat(actual).allSatisfy(r -> {
            assertThat(r.getLong(7)).as("sketch estimate = exact distinct count").isEqualTo(r.getLong(5));
            assertThat(r.getBoolean(8)).isTrue();
            assertThat(r.getString(9)).isEqualTo("batch");
            assertThat(r.getBoolean(10)).as("no stream batch id once reconciled").isTrue();
        });
        assertThat(actual).extracting(r -> tuple(r.getString(0), r.getString(2), r.getLong(3), r.getString(4), r.getLong(5)))
                .contains(tuple("2026-11-28 09:00:00", "c3", 3L, "5.900000000", 3L),   // s2, s1 on time; s8 late
                        tuple("2026-11-27 07:40:00", "c1", 1L, "0.300000000", 1L));  // only a late record: no stream row
        assertThat(kpiSnapshot("DATE'2026-11-26', DATE'2026-11-29'")).as("days not selected, open or not, are left as they were")
                .isEqualTo(untouched);

        // (b) the report's drift is the one measured before
        assertThat(result.days()).extracting(DayOutcome::day).containsExactly(D27, D28);
        for (DayOutcome d : result.days()) {
            Object[] m = measuredDrift.get(d.day());
            assertThat(d.status()).isEqualTo(DayOutcome.Status.RECONCILED);
            assertThat(recordDrift(d)).isEqualTo(m[0]);
            assertThat(gbDrift(d)).isEqualByComparingTo((BigDecimal) m[1]);
            assertThat(d.lateRecords()).isEqualTo(m[2]);
            assertThat(d.attempts()).isEqualTo(1);
        }
        // One summary row per day and measure; here the day's measures side by side.
        List<Row> summary = rows("SELECT event_date, " + of("record_count", "stream_value", "BIGINT") + ", " + of("record_count", "batch_value", "BIGINT")
                + ", " + of("total_gb", "stream_value", "STRING") + ", " + of("total_gb", "batch_value", "STRING") + ", " + of("total_gb", "drift", "STRING")
                + ", max(CASE WHEN measure = 'total_gb' THEN drift_rel END), max(late_records), " + of("total_gb", "windows_changed", "BIGINT")
                + ", " + of("subscribers", "stream_value", "BIGINT") + ", " + of("subscribers", "batch_value", "BIGINT")
                + " FROM {report} WHERE row_kind = 'summary' AND run_id = '" + result.runId() + "' GROUP BY event_date ORDER BY event_date");
        assertThat(summary).extracting(r -> tuple(r.getDate(0).toLocalDate(), r.getLong(1), r.getLong(2), r.getString(3), r.getString(4),
                        r.getString(5), r.isNullAt(6) ? null : r.getDouble(6), r.getLong(7), r.getLong(8), r.getLong(9), r.getLong(10)))
                .containsExactly(
                        tuple(D27, 6L, 8L, "7.450000000", "8.750000000", "1.300000000", 1.3 / 8.75, 2L, 2L, 5L, 7L),
                        tuple(D28, 7L, 9L, "13.750000000", "15.250000000", "1.500000000", 1.5 / 15.25, 2L, 2L, 5L, 6L));
        for (Row r : summary) {
            Object[] m = measuredDrift.get(r.getDate(0).toLocalDate());
            assertThat(new BigDecimal(r.getString(5))).isEqualByComparingTo((BigDecimal) m[1]);
        }
        // The drift rule's verdict: the count and the volume are exact while streaming and 15 % off; the subscribers an estimate.
        assertThat(rows("SELECT kpi, measure, estimate, drift_threshold, over_threshold FROM {report} WHERE row_kind = 'summary' AND run_id = '"
                + result.runId() + "' AND event_date = DATE'2026-11-27' ORDER BY measure"))
                .extracting(r -> tuple(r.get(0), r.get(1), r.get(2), r.get(3), r.get(4)))
                .containsExactly(tuple("kpi_5m", "record_count", false, 0.01, true), tuple("kpi_5m", "subscribers", true, 0.01, false),
                        tuple("kpi_5m", "total_gb", false, 0.01, true));
        // One window row per (window, cell, measure) that changed; here each window's count and volume side by side.
        assertThat(rows("SELECT concat_ws(' | ', CAST(event_date AS STRING), CAST(window_start AS STRING), get_json_object(dimensions, "
                + "'$.cell_site_id'), CAST(" + of("record_count", "stream_value", "BIGINT") + " AS STRING), CAST(" + of("record_count", "batch_value",
                "BIGINT") + " AS STRING), " + of("total_gb", "drift", "STRING") + ", CAST(max(late_records) AS STRING)) AS r "
                + "FROM {report} WHERE row_kind = 'window' AND run_id = '" + result.runId() + "' GROUP BY event_date, window_start, dimensions "
                + "ORDER BY r")
                .stream().map(r -> r.getString(0)).toList())
                .isEqualTo(measuredWindowDrift)
                .containsExactly(
                        "2026-11-27 | 2026-11-27 07:40:00 | c1 | 0 | 1 | 0.300000000 | 1",
                        "2026-11-27 | 2026-11-27 20:00:00 | c2 | 0 | 1 | 1.000000000 | 1",
                        "2026-11-28 | 2026-11-28 08:40:00 | c3 | 0 | 1 | 0.600000000 | 1",
                        "2026-11-28 | 2026-11-28 09:00:00 | c3 | 2 | 3 | 0.900000000 | 1");
        assertThat(job.dirtyDays()).isEmpty();
        String out = printed.toString(StandardCharsets.UTF_8);
        assertThat(out).contains("reconcile 2026-11-27 [1/2]: 5 windows, 2 changed; record_count 6 -> 8 (+25.00%, OVER the drift threshold), "
                + "total_gb 7.45 -> 8.75 (+14.86%, OVER the drift threshold), subscribers 5 -> 7 (estimate, +28.57%); 2 late folded in; replaced");
        assertThat(out).containsPattern("2026-11-28 +6 +2 +record_count \\+22\\.22% \\(7 -> 9\\) +2 +record_count, total_gb +reconciled");
        afterFirstReconcile = kpiSnapshot("DATE'2026-11-26', DATE'2026-11-27', DATE'2026-11-28', DATE'2026-11-29'");

        ConservationCheck.Report check = ConservationCheck.check(spark, lakehouse, (long) sent.size());
        assertThat(check.violations()).isEmpty();
    }

    /** (window, cell) rows where the raw log and kpi_5m disagree, measured with plain SQL. */
    private List<String> windowDifferences() {
        return rows("""
                WITH truth AS (SELECT event_date, timestamp_seconds(unix_seconds(event_ts) DIV 300 * 300) AS window_start, cell_site_id,
                                      count(*) AS n, sum(CAST(volume_gb AS DECIMAL(38,9))) AS gb, count_if(is_late) AS late
                               FROM {raw} GROUP BY 1, 2, 3),
                     diff AS (SELECT coalesce(t.event_date, k.event_date) AS d, coalesce(t.window_start, k.window_start) AS ws,
                                     coalesce(t.cell_site_id, k.cell_site_id) AS cell, coalesce(k.record_count, 0) AS sn,
                                     coalesce(t.n, 0) AS bn, CAST(coalesce(t.gb, 0) - coalesce(k.total_gb, 0) AS DECIMAL(38,9)) AS drift,
                                     coalesce(t.late, 0) AS late
                              FROM truth t FULL OUTER JOIN {kpi} k
                                ON t.window_start = k.window_start AND t.cell_site_id = k.cell_site_id)
                SELECT concat_ws(' | ', CAST(d AS STRING), CAST(ws AS STRING), cell, CAST(sn AS STRING), CAST(bn AS STRING),
                                 CAST(drift AS STRING), CAST(late AS STRING)) AS r
                FROM diff WHERE sn <> bn AND d < DATE'2026-11-29' ORDER BY r""").stream().map(r -> r.getString(0)).toList();
    }

    private void analystViewsGiveExactNumbers() {
        lakehouse.createAndRegister(spark);
        assertThat(rows("SELECT count(*), count_if(source = 'batch') FROM kpi_final"))
                .extracting(r -> tuple(r.getLong(0), r.getLong(1))).containsExactly(tuple(18L, 11L));
        assertThat(rows("SELECT CAST(hour_start AS STRING), CAST(hour_end AS STRING), cell_site_id, record_count, CAST(total_gb AS STRING), "
                + "subscribers, windows, is_final, reconciled FROM kpi_hourly WHERE hour_start IN "
                + "(TIMESTAMP'2026-11-27 08:00:00', TIMESTAMP'2026-11-28 09:00:00', TIMESTAMP'2026-11-29 00:00:00') ORDER BY 1, 3"))
                .extracting(r -> tuple(r.get(0), r.get(1), r.get(2), r.get(3), r.get(4), r.get(5), r.get(6), r.get(7), r.get(8)))
                .containsExactly(
                        tuple("2026-11-27 08:00:00", "2026-11-27 09:00:00", "c1", 3L, "1.700000000", 3L, 1L, true, true),
                        tuple("2026-11-28 09:00:00", "2026-11-28 10:00:00", "c1", 1L, "0.400000000", 1L, 1L, true, true),
                        tuple("2026-11-28 09:00:00", "2026-11-28 10:00:00", "c3", 3L, "5.900000000", 3L, 1L, true, true),
                        // the open day, from the stream: s1 twice (00:30, 00:35), s2 (00:45); 3 records, 2 subscribers, not a sum of 3
                        tuple("2026-11-29 00:00:00", "2026-11-29 01:00:00", "c1", 3L, "3.300000000", 2L, 3L, true, false),
                        tuple("2026-11-29 00:00:00", "2026-11-29 01:00:00", "c2", 1L, "1.000000000", 1L, 1L, true, false),
                        tuple("2026-11-29 00:00:00", "2026-11-29 01:00:00", "c3", 1L, "0.500000000", 1L, 1L, true, false));
        assertThat(rows("SELECT CAST(event_date AS STRING), cell_site_id, record_count, CAST(total_gb AS STRING), subscribers, windows, "
                + "is_final, reconciled FROM kpi_daily ORDER BY 1, 2"))
                .extracting(r -> tuple(r.get(0), r.get(1), r.get(2), r.get(3), r.get(4), r.get(5), r.get(6), r.get(7)))
                .containsExactly(
                        tuple("2026-11-26", "c1", 2L, "3.750000000", 2L, 1L, true, false),
                        tuple("2026-11-26", "c2", 1L, "0.125000000", 1L, 1L, true, false),
                        // s1, s2, s5 at 08:00, s6 at 07:40, s4 at 23:55: 5 distinct though windows hold 3 + 1 + 1
                        tuple("2026-11-27", "c1", 5L, "4.000000000", 5L, 3L, true, true),
                        tuple("2026-11-27", "c2", 3L, "4.750000000", 3L, 2L, true, true),
                        tuple("2026-11-28", "c1", 4L, "6.750000000", 4L, 3L, true, true),
                        tuple("2026-11-28", "c3", 5L, "8.500000000", 3L, 3L, true, true),
                        tuple("2026-11-29", "c1", 3L, "3.300000000", 2L, 3L, true, false),
                        tuple("2026-11-29", "c2", 3L, "2.800000000", 3L, 2L, false, false),
                        tuple("2026-11-29", "c3", 1L, "0.500000000", 1L, 1L, true, false));
        assertThat(rows("SELECT CAST(event_date AS STRING), late_records, CAST(late_gb AS STRING), max_late_by_ms, avg_late_by_ms "
                + "FROM late_by_day ORDER BY 1"))
                .extracting(r -> tuple(r.get(0), r.get(1), r.get(2), r.get(3), r.get(4)))
                .containsExactly(
                        tuple("2026-11-27", 2L, "1.300000000", 57_780_000L, (57_780_000 + 13_380_000) / 2.0),
                        tuple("2026-11-28", 2L, "1.500000000", 50_760_000L, (50_760_000 + 49_560_000) / 2.0));
        assertThat(rows("SELECT CAST(event_date AS STRING), cell_site_id, late_records, CAST(late_gb AS STRING), max_late_by_ms, "
                + "avg_late_by_ms FROM late_by_cell_day ORDER BY 1, 2"))
                .extracting(r -> tuple(r.get(0), r.get(1), r.get(2), r.get(3), r.get(4), r.get(5)))
                .containsExactly(
                        tuple("2026-11-27", "c1", 1L, "0.300000000", 57_780_000L, 57_780_000.0),
                        tuple("2026-11-27", "c2", 1L, "1.000000000", 13_380_000L, 13_380_000.0),
                        tuple("2026-11-28", "c3", 2L, "1.500000000", 50_760_000L, (50_760_000 + 49_560_000) / 2.0));
        assertThat(rows("SELECT CAST(event_date AS STRING), " + of("total_gb", "windows_changed", "BIGINT") + ", "
                + of("record_count", "drift", "BIGINT") + ", " + of("total_gb", "drift", "STRING") + ", max(late_records) "
                + "FROM drift_by_day GROUP BY event_date ORDER BY 1"))
                .extracting(r -> tuple(r.get(0), r.get(1), r.get(2), r.get(3), r.get(4)))
                .containsExactly(
                        tuple("2026-11-27", 2L, 2L, "1.300000000", 2L),
                        tuple("2026-11-28", 2L, 2L, "1.500000000", 2L));
    }

    private void reconcilingAgainGivesTheSameTableContent() {
        ReconcileResult again = job.run(DaySelection.range(D27, D28), false);

        assertThat(kpiSnapshot("DATE'2026-11-26', DATE'2026-11-27', DATE'2026-11-28', DATE'2026-11-29'")).isEqualTo(afterFirstReconcile);
        assertThat(again.days()).extracting(DayOutcome::windowsChanged, ReconcileJobTest::gbDrift, ReconcileJobTest::recordDrift)
                .containsOnly(tuple(0L, new BigDecimal("0E-9"), 0L));
        assertThat(rows("SELECT count(*) FROM {report} WHERE row_kind = 'window' AND run_id = '" + again.runId() + "'").get(0).getLong(0))
                .isZero();
        lakehouse.createAndRegister(spark);
        assertThat(rows("SELECT run_id, windows_changed FROM drift_by_day")).extracting(r -> tuple(r.get(0), r.get(1)))
                .hasSize(6).containsOnly(tuple(again.runId(), 0L));
    }

    private void aLateRecordForAReconciledDayMakesItDirtyAndOnlyIt() throws Exception {
        send(List.of(event("s9", "c1", "2026-11-27T15:00:00Z", 0.05),      // B4, watermark 11-29 00:50: late, for 11-27
                event("s1", "c1", "2026-11-29T02:00:00Z", 0.5)));
        stream();
        assertThat(rows("SELECT count(*) FROM {raw} WHERE event_date = DATE'2026-11-27' AND is_late").get(0).getLong(0)).isEqualTo(3);

        assertThat(job.dirtyDays()).containsExactly(D27);
        ReconcileResult dirty = job.run(DaySelection.dirty(), false);

        assertThat(dirty.days()).extracting(DayOutcome::day, DayOutcome::windowsChanged, ReconcileJobTest::recordDrift, ReconcileJobTest::gbDrift,
                        DayOutcome::lateRecords)
                .containsExactly(tuple(D27, 1L, 1L, new BigDecimal("0.050000000"), 3L));
        assertThat(job.dirtyDays()).isEmpty();
        assertThat(job.run(DaySelection.dirty(), false).days()).isEmpty();
        assertThat(ConservationCheck.check(spark, lakehouse, (long) sent.size()).violations()).isEmpty();
    }

    /** total_gb's drift of the day (batch - stream); zero for a day without data. */
    static BigDecimal gbDrift(DayOutcome d) {
        return d.measures().isEmpty() ? BigDecimal.ZERO : d.measure("total_gb").drift();
    }

    /** record_count's drift of the day; zero for a day without data. */
    static long recordDrift(DayOutcome d) {
        return d.measures().isEmpty() ? 0 : d.measure("record_count").drift().longValueExact();
    }

    /** SQL: the {@code column} of measure {@code m}'s row of a group, as {@code type}. */
    private static String of(String m, String column, String type) {
        return "CAST(max(CASE WHEN measure = '" + m + "' THEN " + column + " END) AS " + type + ")";
    }

    /** Copies what the job prints to the test's output too. */
    private static final class TeeOutput extends java.io.OutputStream {
        private final java.io.OutputStream a;
        private final java.io.OutputStream b;

        TeeOutput(java.io.OutputStream a, java.io.OutputStream b) {
            this.a = a;
            this.b = b;
        }

        @Override
        public synchronized void write(int c) throws java.io.IOException {
            a.write(c);
            b.write(c);
        }

        @Override
        public synchronized void write(byte[] buf, int off, int len) throws java.io.IOException {
            a.write(buf, off, len);
            b.write(buf, off, len);
        }
    }
}
