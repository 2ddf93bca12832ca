package io.tidemark.stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.math.BigDecimal;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Timestamp;
import java.time.Instant;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

import org.apache.spark.sql.Row;
import org.apache.spark.sql.catalyst.expressions.GenericRowWithSchema;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import io.tidemark.lakehouse.Lakehouse;
import io.tidemark.lakehouse.Lakehouse.Table;
import io.tidemark.lakehouse.PartitionClock;
import io.tidemark.lakehouse.TidemarkConfig;
import io.tidemark.pipeline.KpiAggregation;
import io.tidemark.pipeline.Pipeline;
import io.tidemark.pipeline.WorkingColumns;
import io.tidemark.late.WatermarkLedger;

/**
 * The micro-batch's decisions, without Spark: from a crafted state (the ledger, the tables that hold
 * the batch already, the open rows) and a crafted summary, the exact plan: the ledger entry, the
 * appends, and each KPI table's rows (final or open) and the predicate of the rows they replace. A
 * pipeline of an online shop: orders per store in tumbling 15-minute windows and in hopping 1-hour
 * windows every 30 minutes, lateness 10 minutes.
 */
class BatchPlanTest {
    private static final String PIPELINE = """
            CREATE TABLE orders (
              order_id STRING        NOT NULL,
              store    STRING        NOT NULL,
              amount   DECIMAL(10,2) NOT NULL,
              ts       TIMESTAMP     NOT NULL
            ) USING kafka OPTIONS (topic 'orders', format 'json', event_time 'ts', lateness '10 minutes');

            CREATE STREAMING TABLE store_15m AS
            SELECT window(ts, '15 minutes') AS w, store, count(*) AS orders, sum(amount) AS revenue, max(amount) AS top
            FROM STREAM orders GROUP BY window(ts, '15 minutes'), store;

            CREATE STREAMING TABLE store_1h AS
            SELECT window(ts, '1 hour', '30 minutes') AS w, store, count(*) AS orders
            FROM STREAM orders GROUP BY window(ts, '1 hour', '30 minutes'), store;
            """;
    private static final LocalDate DAY = LocalDate.parse("2026-12-01");
    private static final long MINUTE = 60_000L;

    private static Pipeline pipeline;
    private static Lakehouse lakehouse;

    @BeforeAll
    static void parse(@TempDir Path dir) throws Exception {
        Path file = Files.writeString(dir.resolve("shop.sql"), PIPELINE);
        TidemarkConfig config = TidemarkConfig.builder().set(TidemarkConfig.Key.PIPELINE, file.toString())
                .set(TidemarkConfig.Key.LAKEHOUSE, dir.resolve("lakehouse").toString()).build();
        pipeline = config.pipeline();
        lakehouse = Lakehouse.of(config);
    }

    /** The pipeline's KPI tables, in order, with the open rows given (null: not read). */
    private static List<OpenWindowKpis> kpis(Map<OpenWindowKpis.Key, OpenWindowKpis.Kpi> store15m, Map<OpenWindowKpis.Key, OpenWindowKpis.Kpi> store1h) {
        List<OpenWindowKpis> out = new ArrayList<>();
        List<Map<OpenWindowKpis.Key, OpenWindowKpis.Kpi>> open = new ArrayList<>();
        open.add(store15m);
        open.add(store1h);
        for (int i = 0; i < pipeline.tables().size(); i++) {
            var t = pipeline.tables().get(i);
            OpenWindowKpis k = new OpenWindowKpis(lakehouse, new KpiAggregation(t, "ts"), i);
            if (open.get(i) != null) {
                k.assume(open.get(i));
            }
            out.add(k);
        }
        return out;
    }

    private static long at(String time) {
        return Instant.parse(time).toEpochMilli();
    }

    private static OpenWindowKpis.Key key(String windowStart, String store) {
        return new OpenWindowKpis.Key(at(windowStart) * 1000, List.of(store));
    }

    /** A store_15m state: orders, revenue, top. */
    private static OpenWindowKpis.Kpi shop(long orders, String revenue, String top, String updatedAt) {
        return new OpenWindowKpis.Kpi(DAY, new Object[] {orders, new BigDecimal(revenue), new BigDecimal(top)}, Timestamp.from(Instant.parse(updatedAt)));
    }

    /** A store_1h state: orders. */
    private static OpenWindowKpis.Kpi hourly(LocalDate day, long orders, String updatedAt) {
        return new OpenWindowKpis.Kpi(day, new Object[] {orders}, Timestamp.from(Instant.parse(updatedAt)));
    }

    private static WatermarkLedger ledgerAfter(long batchId, String watermark, String nextWatermark, String maxSeen, long batchTimeMs) {
        return WatermarkLedger.resumeAfter(new WatermarkLedger.Entry(batchId, at(watermark), at(nextWatermark), at(maxSeen), at(maxSeen), batchTimeMs,
                Map.of(0, new PartitionClock(at(maxSeen), batchTimeMs))), TidemarkConfig.WatermarkPolicy.SPARK, 10 * MINUTE, 300_000L);
    }

    private static BatchPlan.Summary summary(long onTime, long late, Map<String, Long> invalid, Map<Integer, Long> maxEventMs,
                                             List<OpenWindowKpis.Partial> store15m, List<OpenWindowKpis.Partial> store1h) {
        return new BatchPlan.Summary(onTime, late, invalid.values().stream().mapToLong(Long::longValue).sum(), invalid, maxEventMs,
                List.of(store15m, store1h));
    }

    /** A row as text, times as UTC instants, so that no JVM time zone gets in the way. */
    private static String render(Row r) {
        List<String> values = new ArrayList<>();
        for (int i = 0; i < r.length(); i++) {
            Object v = r.get(i);
            values.add(v instanceof Timestamp t ? t.toInstant().toString() : v instanceof java.sql.Date d ? d.toLocalDate().toString() : String.valueOf(v));
        }
        return String.join(" ", values);
    }

    private static List<String> rows(List<Row> rows) {
        return rows.stream().map(BatchPlanTest::render).toList();
    }

    private static OpenWindowKpis.Replacement replacementOf(BatchPlan plan, String table) {
        return plan.kpis().stream().filter(r -> r.table().equals(Table.kpi(table))).findFirst().orElseThrow();
    }

    @Test
    void aBatchWithALateAndAnInvalidRecordAppendsToAllThreeTablesAndMergesIntoTheOpenWindows() {
        // Batch 5: the ledger after batch 4 (watermark 10:20 for batch 5, newest event seen 10:30).
        WatermarkLedger ledger = ledgerAfter(4, "2026-12-01T10:00:00Z", "2026-12-01T10:20:00Z", "2026-12-01T10:30:00Z", 4_000);
        TreeMap<OpenWindowKpis.Key, OpenWindowKpis.Kpi> open15 = new TreeMap<>(Map.of(
                key("2026-12-01T10:15:00Z", "A"), shop(2, "3.00", "2.00", "2026-12-01T10:29:00Z"),
                key("2026-12-01T10:30:00Z", "A"), shop(1, "1.00", "1.00", "2026-12-01T10:30:00Z")));
        // one on-time order at 10:31 (7.50 at store A); one late (its window closed); one that is not JSON
        BatchPlan.Summary s = summary(1, 1, Map.of("NOT_JSON", 1L), Map.of(0, at("2026-12-01T10:31:00Z")),
                List.of(new OpenWindowKpis.Partial(key("2026-12-01T10:30:00Z", "A"), shop(1, "7.50", "7.50", "2026-12-01T10:31:00Z"))),
                List.of(new OpenWindowKpis.Partial(key("2026-12-01T10:00:00Z", "A"), hourly(DAY, 1, "2026-12-01T10:31:00Z")),
                        new OpenWindowKpis.Partial(key("2026-12-01T10:30:00Z", "A"), hourly(DAY, 1, "2026-12-01T10:31:00Z"))));

        BatchPlan plan = BatchPlan.decide(ledger, Set.of(), kpis(open15, Map.of()), 5, 5_000, s, List.of());

        // the spark policy: the next watermark is the newest event seen before this batch less the lateness
        assertThat(plan.entry()).isEqualTo(new WatermarkLedger.Entry(5, at("2026-12-01T10:20:00Z"), at("2026-12-01T10:20:00Z"),
                at("2026-12-01T10:31:00Z"), at("2026-12-01T10:31:00Z"), 5_000, Map.of(0, new PartitionClock(at("2026-12-01T10:31:00Z"), 5_000))));
        assertThat(ledger.next().batchId()).as("deciding does not advance the ledger").isEqualTo(5);
        assertThat(plan.appends()).containsExactly(Table.RAW_EVENTS, Table.LATE_EVENTS, Table.DEAD_LETTER);
        assertThat(plan.kpiRows()).isEqualTo(3);

        OpenWindowKpis.Replacement t15 = replacementOf(plan, "store_15m");
        assertThat(rows(t15.finalRows())).isEmpty();
        assertThat(rows(t15.openRows())).containsExactly(
                "2026-12-01T10:15:00Z 2026-12-01T10:30:00Z A 2 3.00 2.00 false stream 2026-12-01T10:29:00Z 5 2026-12-01",
                "2026-12-01T10:30:00Z 2026-12-01T10:45:00Z A 2 8.50 7.50 false stream 2026-12-01T10:31:00Z 5 2026-12-01");
        assertThat(t15.predicate()).isEqualTo(
                "event_date IN (DATE'2026-12-01') AND window_start IN (TIMESTAMP'2026-12-01 10:15:00.000000', TIMESTAMP'2026-12-01 10:30:00.000000')");
        assertThat(t15.contributed()).isEqualTo(1);

        OpenWindowKpis.Replacement t1h = replacementOf(plan, "store_1h");
        assertThat(rows(t1h.finalRows())).isEmpty();
        assertThat(rows(t1h.openRows())).containsExactly(
                "2026-12-01T10:00:00Z 2026-12-01T11:00:00Z A 1 false stream 2026-12-01T10:31:00Z 5 2026-12-01",
                "2026-12-01T10:30:00Z 2026-12-01T11:30:00Z A 1 false stream 2026-12-01T10:31:00Z 5 2026-12-01");
        assertThat(t1h.stillOpen()).hasSize(2);
    }

    @Test
    void theWatermarkPassingMidnightClosesTheDaysLastWindowsWithoutANewRecordInThem() {
        // Batch 9: newest event seen before it 00:12 on the next day, so the next watermark is 00:02.
        WatermarkLedger ledger = ledgerAfter(8, "2026-12-01T23:40:00Z", "2026-12-01T23:50:00Z", "2026-12-02T00:12:00Z", 8_000);
        LocalDate next = DAY.plusDays(1);
        TreeMap<OpenWindowKpis.Key, OpenWindowKpis.Kpi> open15 = new TreeMap<>(Map.of(
                key("2026-12-01T23:45:00Z", "A"), shop(4, "40.00", "12.00", "2026-12-01T23:59:00Z"),
                key("2026-12-01T23:45:00Z", "B"), shop(1, "1.00", "1.00", "2026-12-01T23:50:00Z")));
        TreeMap<OpenWindowKpis.Key, OpenWindowKpis.Kpi> open1h = new TreeMap<>(Map.of(
                key("2026-12-01T23:00:00Z", "A"), hourly(DAY, 6, "2026-12-01T23:59:00Z"),
                key("2026-12-01T23:30:00Z", "A"), hourly(DAY, 5, "2026-12-01T23:59:00Z")));
        // one on-time order at 00:20, in neither table's open windows of the day before
        BatchPlan.Summary s = summary(1, 0, Map.of(), Map.of(1, at("2026-12-02T00:20:00Z")),
                List.of(new OpenWindowKpis.Partial(key("2026-12-02T00:15:00Z", "B"),
                        new OpenWindowKpis.Kpi(next, new Object[] {1L, new BigDecimal("9.99"), new BigDecimal("9.99")}, Timestamp.from(Instant.parse("2026-12-02T00:20:00Z"))))),
                List.of());

        BatchPlan plan = BatchPlan.decide(ledger, Set.of(), kpis(open15, open1h), 9, 9_000, s, List.of());

        assertThat(plan.entry().watermarkMs()).isEqualTo(at("2026-12-01T23:50:00Z"));
        assertThat(plan.entry().nextWatermarkMs()).isEqualTo(at("2026-12-02T00:02:00Z"));
        assertThat(plan.entry().partitions()).isEqualTo(Map.of(0, new PartitionClock(at("2026-12-02T00:12:00Z"), 8_000),
                1, new PartitionClock(at("2026-12-02T00:20:00Z"), 9_000)));
        assertThat(plan.appends()).containsExactly(Table.RAW_EVENTS);

        OpenWindowKpis.Replacement t15 = replacementOf(plan, "store_15m");
        // 23:45-00:00 ends before the next watermark (00:02): final; the new window stays open
        assertThat(rows(t15.finalRows())).containsExactly(
                "2026-12-01T23:45:00Z 2026-12-02T00:00:00Z A 4 40.00 12.00 true stream 2026-12-01T23:59:00Z 9 2026-12-01",
                "2026-12-01T23:45:00Z 2026-12-02T00:00:00Z B 1 1.00 1.00 true stream 2026-12-01T23:50:00Z 9 2026-12-01");
        assertThat(rows(t15.openRows())).containsExactly(
                "2026-12-02T00:15:00Z 2026-12-02T00:30:00Z B 1 9.99 9.99 false stream 2026-12-02T00:20:00Z 9 2026-12-02");
        assertThat(t15.predicate()).isEqualTo("event_date IN (DATE'2026-12-01', DATE'2026-12-02') AND window_start IN "
                + "(TIMESTAMP'2026-12-01 23:45:00.000000', TIMESTAMP'2026-12-02 00:15:00.000000')");
        assertThat(t15.stillOpen().keySet()).containsExactly(key("2026-12-02T00:15:00Z", "B"));

        // store_1h had no partial row, but the watermark moved: 23:00-00:00 closes, 23:30-00:30 (the day's spill) stays open
        OpenWindowKpis.Replacement t1h = replacementOf(plan, "store_1h");
        assertThat(rows(t1h.finalRows())).containsExactly("2026-12-01T23:00:00Z 2026-12-02T00:00:00Z A 6 true stream 2026-12-01T23:59:00Z 9 2026-12-01");
        assertThat(rows(t1h.openRows())).containsExactly("2026-12-01T23:30:00Z 2026-12-02T00:30:00Z A 5 false stream 2026-12-01T23:59:00Z 9 2026-12-01");
        assertThat(t1h.contributed()).isZero();
        assertThat(plan.kpiRows()).isEqualTo(1);
    }

    @Test
    void aTableWithNothingNewWhileTheWatermarkStandsIsNotRewritten() {
        WatermarkLedger ledger = ledgerAfter(4, "2026-12-01T10:00:00Z", "2026-12-01T10:20:00Z", "2026-12-01T10:30:00Z", 4_000);
        TreeMap<OpenWindowKpis.Key, OpenWindowKpis.Kpi> open1h = new TreeMap<>(Map.of(key("2026-12-01T10:00:00Z", "A"), hourly(DAY, 3, "2026-12-01T10:29:00Z")));
        // only invalid records: no valid event time, so the watermark does not move; no table has a partial row
        BatchPlan.Summary s = summary(0, 0, Map.of("MISSING_FIELD", 2L, "NOT_JSON", 1L), Map.of(), List.of(), List.of());

        BatchPlan plan = BatchPlan.decide(ledger, Set.of(), kpis(Map.of(), open1h), 5, 5_000, s, List.of());

        assertThat(plan.appends()).containsExactly(Table.DEAD_LETTER);
        assertThat(plan.kpis()).isEmpty();
        assertThat(plan.summary().recordsIn()).isEqualTo(3);
        assertThat(plan.entry().nextWatermarkMs()).isEqualTo(plan.entry().watermarkMs());
    }

    @Test
    void aReplayAfterAPartialCommitPlansOnlyTheTablesThatDoNotHoldTheBatch() {
        // The stream died after batch 5 reached raw_events and store_15m: the restart replays batch 5. store_15m's
        // open rows are not read (it holds the batch); planning it would be an error.
        WatermarkLedger ledger = ledgerAfter(4, "2026-12-01T10:00:00Z", "2026-12-01T10:20:00Z", "2026-12-01T10:30:00Z", 4_000);
        List<OpenWindowKpis> kpis = kpis(null, Map.of());
        BatchPlan.Summary s = summary(2, 1, Map.of(), Map.of(0, at("2026-12-01T10:33:00Z")),
                List.of(new OpenWindowKpis.Partial(key("2026-12-01T10:30:00Z", "A"), shop(2, "4.00", "3.00", "2026-12-01T10:33:00Z"))),
                List.of(new OpenWindowKpis.Partial(key("2026-12-01T10:30:00Z", "A"), hourly(DAY, 2, "2026-12-01T10:33:00Z"))));

        BatchPlan plan = BatchPlan.decide(ledger, Set.of(Table.RAW_EVENTS, Table.kpi("store_15m")), kpis, 5, 5_000, s, List.of());

        assertThat(plan.appends()).containsExactly(Table.LATE_EVENTS);
        assertThat(plan.kpis()).extracting(OpenWindowKpis.Replacement::table).containsExactly(Table.kpi("store_1h"));
        assertThat(rows(replacementOf(plan, "store_1h").openRows()))
                .containsExactly("2026-12-01T10:30:00Z 2026-12-01T11:30:00Z A 2 false stream 2026-12-01T10:33:00Z 5 2026-12-01");
        // the progress row still counts the whole batch; kpi_rows only what this run writes
        assertThat(plan.summary().recordsIn()).isEqualTo(3);
        assertThat(plan.kpiRows()).isEqualTo(1);
        // a table whose open rows were never read cannot be planned
        assertThatThrownBy(() -> kpis.get(0).plan(List.of(), 5, io.tidemark.pipeline.Watermark.ofMillis(0)))
                .isInstanceOf(IllegalStateException.class).hasMessage("store_15m: the open rows must be read before a batch is planned");
    }

    @Test
    void kafkaGapsGoToStreamGapsFirst() {
        WatermarkLedger ledger = ledgerAfter(4, "2026-12-01T10:00:00Z", "2026-12-01T10:20:00Z", "2026-12-01T10:30:00Z", 4_000);
        BatchPlan.Summary s = summary(0, 0, Map.of(), Map.of(), List.of(), List.of());
        KafkaGaps.Gap gap = new KafkaGaps.Gap("orders", 0, 10, 20L, 10L, KafkaGaps.OUT_OF_RANGE);

        BatchPlan plan = BatchPlan.decide(ledger, Set.of(), kpis(Map.of(), Map.of()), 5, 5_000, s, List.of(gap));

        assertThat(plan.appends()).containsExactly(Table.STREAM_GAPS);
        assertThat(plan.gaps()).containsExactly(gap);
        assertThat(plan.kpis()).isEmpty();
    }

    @Test
    void theSummaryRowsAreReadByKindPartitionAndTable() {
        List<OpenWindowKpis> kpis = kpis(Map.of(), Map.of());
        StructType schema = new StructType().add(WorkingColumns.KIND, DataTypes.StringType).add(WorkingColumns.REASON, DataTypes.StringType)
                .add("kafka_partition", DataTypes.IntegerType).add(WorkingColumns.RECORDS, DataTypes.LongType)
                .add(WorkingColumns.MAX_EVENT_MS, DataTypes.LongType).add(WorkingColumns.KPI_INDEX, DataTypes.IntegerType)
                .add("event_date", DataTypes.DateType).add("window_start", DataTypes.TimestampType).add("window_end", DataTypes.TimestampType)
                .add("store", DataTypes.StringType).add(RecordClassifier.partialColumn(1, "orders"), DataTypes.LongType)
                .add(RecordClassifier.partialColumn(1, "updated_at"), DataTypes.TimestampType);
        Timestamp ten = Timestamp.from(Instant.parse("2026-12-01T10:00:00Z"));
        Timestamp updated = Timestamp.from(Instant.parse("2026-12-01T10:07:00Z"));
        List<Row> rows = List.of(
                new GenericRowWithSchema(new Object[] {RecordClassifier.ON_TIME, null, 0, 5L, at("2026-12-01T10:07:00Z"), null, null, null, null, null, null, null}, schema),
                new GenericRowWithSchema(new Object[] {RecordClassifier.ON_TIME, null, 1, 2L, at("2026-12-01T10:09:00Z"), null, null, null, null, null, null, null}, schema),
                new GenericRowWithSchema(new Object[] {RecordClassifier.LATE, null, 1, 1L, at("2026-12-01T09:01:00Z"), null, null, null, null, null, null, null}, schema),
                new GenericRowWithSchema(new Object[] {RecordClassifier.INVALID, "NOT_JSON", 0, 3L, null, null, null, null, null, null, null, null}, schema),
                new GenericRowWithSchema(new Object[] {RecordClassifier.INVALID, "NOT_JSON", 1, 1L, null, null, null, null, null, null, null, null}, schema),
                new GenericRowWithSchema(new Object[] {RecordClassifier.INVALID, "NEGATIVE_AMOUNT", 1, 2L, null, null, null, null, null, null, null, null}, schema),
                new GenericRowWithSchema(new Object[] {RecordClassifier.KPI, null, null, null, null, 1, java.sql.Date.valueOf(DAY), ten,
                        Timestamp.from(Instant.parse("2026-12-01T11:00:00Z")), "A", 7L, updated}, schema));

        BatchPlan.Summary s = BatchPlan.Summary.of(rows, kpis);

        assertThat(s.onTime()).isEqualTo(7);
        assertThat(s.late()).isEqualTo(1);
        assertThat(s.invalid()).isEqualTo(6);
        assertThat(s.invalidByReason()).isEqualTo(Map.of("NOT_JSON", 4L, "NEGATIVE_AMOUNT", 2L));
        // a partition's newest valid event time, late records included
        assertThat(s.maxEventMsByPartition()).isEqualTo(Map.of(0, at("2026-12-01T10:07:00Z"), 1, at("2026-12-01T10:09:00Z")));
        assertThat(s.partials().get(0)).isEmpty();
        assertThat(s.partials().get(1)).hasSize(1);
        OpenWindowKpis.Partial p = s.partials().get(1).get(0);
        assertThat(p.key()).isEqualTo(key("2026-12-01T10:00:00Z", "A"));
        assertThat(p.kpi().day()).isEqualTo(DAY);
        assertThat(p.kpi().state()).containsExactly(7L);
        assertThat(p.kpi().updatedAt()).isEqualTo(updated);
    }
}
