package io.tidemark.tests;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
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

import io.tidemark.generate.GeneratedMessage;
import io.tidemark.generate.PaymentKind;
import io.tidemark.generate.TrafficGenerator;
import io.tidemark.generate.TrafficProfile;
import io.tidemark.generate.TrafficSpec;
import io.tidemark.lakehouse.ClosedDays;
import io.tidemark.lakehouse.Lakehouse;
import io.tidemark.lakehouse.Lakehouse.Table;
import io.tidemark.lakehouse.TidemarkConfig;
import io.tidemark.reconcile.DayOutcome;
import io.tidemark.reconcile.DaySelection;
import io.tidemark.reconcile.ReconcileJob;
import io.tidemark.reconcile.ReconcileResult;

/**
 * The shipped payments pipeline through the stream's whole writer ({@link BatchDriver}: no broker) and
 * reconcile: 4,000 generated payments over two hours and a midnight, 10 % of them malformed and 10 %
 * late, in batches of 400. Its two KPI tables (merchant_1m, tumbling, every kind of measure;
 * country_1h, an hour sliding every 15 minutes, with a WHERE) are checked row by row against Spark
 * running the same KPIs itself, with its own {@code window()} function and aggregates, over
 * {@code raw_events}: before reconcile, over the contributions the late rule let in (every one not
 * in {@code late_events}); after, over every record, with the distinct counts and percentiles exact.
 * The late split itself is recomputed from each batch's watermark.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class PaymentsPipelineTest extends OnSharedInfrastructure {
    private static final Instant START = Instant.parse("2026-11-28T23:00:00Z");
    private static final int COUNT = 4_000;
    private static final int PER_BATCH = 400;
    private static final LocalDate D28 = LocalDate.parse("2026-11-28");

    private SparkSession spark;
    private TidemarkConfig config;
    private Lakehouse lakehouse;
    private final Map<String, Long> generated = new TreeMap<>();
    private final Map<String, Long> expectedReasons = new TreeMap<>();

    /**
     * Spark's own computation of each KPI table, from the pipeline file's query: {@code {in}} is the
     * contributions (a record with one of its windows {@code w}, Spark's {@code window()} struct) it is over.
     * The distinct count and the percentile are exact (what reconcile must give; the stream's sketches give
     * the same for sets this small).
     */
    private static final Map<String, String> SPARK_KPIS = Map.of(
            "merchant_1m", """
                    SELECT w.start AS window_start, w.end AS window_end, merchant_id, country,
                           count(*) AS txns,
                           sum(amount) FILTER (WHERE status = 'approved') AS approved_amount,
                           count(*) FILTER (WHERE status = 'declined') AS declined,
                           count(DISTINCT user_id) AS users,
                           CAST(percentile_disc(0.95) WITHIN GROUP (ORDER BY amount) AS DECIMAL(12,2)) AS p95_amount,
                           max(amount) AS max_amount
                    FROM {in} GROUP BY w, merchant_id, country""",
            "country_1h", """
                    SELECT w.start AS window_start, w.end AS window_end, country,
                           count(*) AS txns,
                           avg(amount) AS avg_amount,
                           min(amount) AS min_amount,
                           count(DISTINCT user_id) AS users
                    FROM {in} GROUP BY w, country""");

    /** Each table's windows as Spark's {@code window()} gives them, and its WHERE. */
    private static final Map<String, String> SPARK_WINDOWS = Map.of(
            "merchant_1m", "SELECT *, window(ts, '1 minute') AS w FROM {raw}",
            "country_1h", "SELECT *, window(ts, '1 hour', '15 minutes') AS w FROM {raw} WHERE status <> 'refunded'");

    @BeforeAll
    void streamThePayments() throws Exception {
        Path dir = infra.newDir("payments");
        config = infra.config(dir, "payments").set(TidemarkConfig.Key.PIPELINE, "payments").build();
        spark = infra.spark;
        lakehouse = Lakehouse.of(config);
        TrafficSpec spec = TrafficSpec.builder().profile(TrafficProfile.PAYMENTS).count(COUNT).invalidFraction(0.1).lateFraction(0.1)
                .eventClockStart(START).eventsPerSecondOfEventTime(0.5).merchants(40).users(300).seed(5).build();
        TrafficGenerator generator = new TrafficGenerator(spec);
        List<BatchDriver.Bytes> batch = new ArrayList<>();
        try (BatchDriver driver = new BatchDriver(spark, config)) {
            while (generator.hasNext()) {
                // The Kafka timestamp is the event clock the message was generated at, as if sent at once.
                Instant ingest = Instant.ofEpochMilli(generator.eventClockMillis());
                GeneratedMessage m = generator.next();
                PaymentKind kind = m.paymentKind();
                generated.merge(kind.isValid() ? "valid" : "invalid", 1L, Long::sum);
                if (!kind.isValid()) {
                    expectedReasons.merge(kind.expectedReason(), 1L, Long::sum);
                }
                batch.add(new BatchDriver.Bytes(0, m.value(), ingest));
                if (batch.size() == PER_BATCH || !generator.hasNext()) {
                    driver.pipeBytes(ingest, batch);
                    batch = new ArrayList<>();
                }
            }
        }
    }

    private String sql(String text) {
        return text.replace("{raw}", lakehouse.ref(Table.RAW_EVENTS)).replace("{late}", lakehouse.ref(Table.LATE_EVENTS))
                .replace("{dead}", lakehouse.ref(Table.DEAD_LETTER)).replace("{progress}", lakehouse.ref(Table.STREAM_PROGRESS));
    }

    private List<String> rows(String query) {
        return spark.sql(sql(query)).collectAsList().stream().map(Row::toString).toList();
    }

    /** Every contribution (record, window) of {@code table}, with whether it was late: its window had closed at its batch's watermark. */
    private String contributions(String table) {
        return "(SELECT c.*, unix_millis(c.w.end) <= unix_millis(p.watermark) AS late_here FROM (" + SPARK_WINDOWS.get(table) + ") c "
                + "JOIN {progress} p ON c.batch_id = p.batch_id)";
    }

    /** The table's rows as Spark computes them over {@code in}, ordered, with the day reconcile gives them. */
    private List<String> sparkKpis(String table, String in, String where) {
        return rows("SELECT * FROM (SELECT *, to_date(window_start) AS event_date FROM (" + SPARK_KPIS.get(table).replace("{in}", in)
                + ")) " + where + " ORDER BY ALL");
    }

    /** The table's measures as it stores them (values, not sketches), in {@link #SPARK_KPIS}' order. */
    private List<String> tidemarkKpis(String table, String where) {
        String columns = table.equals("merchant_1m")
                ? "window_start, window_end, merchant_id, country, txns, approved_amount, declined, users, p95_amount, max_amount"
                : "window_start, window_end, country, txns, avg_amount, min_amount, users";
        return rows("SELECT " + columns + ", event_date FROM " + lakehouse.ref(Table.kpi(table)) + " " + where + " ORDER BY ALL");
    }

    /** The steps over the streamed payments, in order: the last reconciles the closed day, so it comes after the steps that read the stream's rows. */
    @TestFactory
    java.util.stream.Stream<DynamicTest> paymentsStory() {
        return java.util.stream.Stream.of(
                DynamicTest.dynamicTest("everyMessageIsInRawEventsOrDeadLetterOnceWithItsReason", this::everyMessageIsInRawEventsOrDeadLetterOnceWithItsReason),
                DynamicTest.dynamicTest("theLateSplitIsPerTableAndWindowAtEachBatchsWatermark", this::theLateSplitIsPerTableAndWindowAtEachBatchsWatermark),
                DynamicTest.dynamicTest("theStreamsRowsAreSparksOverTheContributionsTheLateRuleLetIn", this::theStreamsRowsAreSparksOverTheContributionsTheLateRuleLetIn),
                DynamicTest.dynamicTest("reconcileGivesEveryTableTheExactRowsOfItsClosedDays", this::reconcileGivesEveryTableTheExactRowsOfItsClosedDays));
    }

    private void everyMessageIsInRawEventsOrDeadLetterOnceWithItsReason() {
        assertThat(generated.get("valid") + generated.get("invalid")).isEqualTo(COUNT);
        assertThat(rows("SELECT count(*), count(DISTINCT kafka_offset) FROM {raw}"))
                .containsExactly("[" + generated.get("valid") + "," + generated.get("valid") + "]");
        Map<String, Long> reasons = new TreeMap<>();
        spark.sql(sql("SELECT reason, count(*) FROM {dead} GROUP BY reason")).collectAsList().forEach(r -> reasons.put(r.getString(0), r.getLong(1)));
        assertThat(reasons).isEqualTo(expectedReasons);
    }

    private void theLateSplitIsPerTableAndWindowAtEachBatchsWatermark() {
        long lateRows = 0;
        for (String table : SPARK_KPIS.keySet()) {
            List<String> expected = rows("SELECT kafka_offset, w.start, w.end FROM " + contributions(table) + " WHERE late_here ORDER BY ALL");
            assertThat(rows("SELECT kafka_offset, window_start, window_end FROM {late} WHERE kpi = '" + table + "' ORDER BY ALL")).as(table)
                    .isNotEmpty().containsExactlyElementsOf(expected);
            lateRows += expected.size();
        }
        assertThat(rows("SELECT count(*) FROM {late}")).containsExactly("[" + lateRows + "]");
        // raw_events' flag: a record with any late contribution
        assertThat(rows("SELECT kafka_offset FROM {raw} WHERE is_late ORDER BY 1"))
                .containsExactlyElementsOf(rows("SELECT DISTINCT kafka_offset FROM {late} ORDER BY 1"));
    }

    private void theStreamsRowsAreSparksOverTheContributionsTheLateRuleLetIn() {
        for (String table : SPARK_KPIS.keySet()) {
            List<String> expected = sparkKpis(table, contributions(table) + " WHERE NOT late_here", "");
            assertThat(expected).hasSizeGreaterThan(100);
            assertThat(tidemarkKpis(table, "")).as(table).containsExactlyElementsOf(expected);
        }
        assertThat(rows("SELECT DISTINCT source FROM " + lakehouse.ref(Table.kpi("merchant_1m")))).containsExactly("[stream]");
    }

    private void reconcileGivesEveryTableTheExactRowsOfItsClosedDays() {
        ClosedDays closed = ClosedDays.load(spark, lakehouse);
        // The newest event is at about 01:13; the hopping table's last windows of the 28th end at 00:45 on the 29th.
        assertThat(closed.lastClosed()).contains(D28);
        ByteArrayOutputStream printed = new ByteArrayOutputStream();
        ReconcileJob job = new ReconcileJob(spark, config, new PrintStream(printed, true, StandardCharsets.UTF_8));
        assertThat(job.dirtyDays()).containsExactly(D28);
        ReconcileResult result = job.run(DaySelection.dirty(), false);
        assertThat(result.days()).extracting(DayOutcome::day).containsExactly(D28);
        DayOutcome d28 = result.days().get(0);
        assertThat(d28.measures()).extracting(m -> m.kpi() + "." + m.measure()).containsExactly("merchant_1m.txns",
                "merchant_1m.approved_amount", "merchant_1m.declined", "merchant_1m.users", "merchant_1m.p95_amount", "merchant_1m.max_amount",
                "country_1h.txns", "country_1h.avg_amount", "country_1h.min_amount", "country_1h.users");
        assertThat(job.dirtyDays()).isEmpty();
        for (String table : SPARK_KPIS.keySet()) {
            String ofDay = "WHERE event_date = DATE'" + D28 + "'";
            List<String> exact = sparkKpis(table, contributions(table), ofDay);
            assertThat(tidemarkKpis(table, ofDay)).as(table).containsExactlyElementsOf(exact);
            assertThat(rows("SELECT DISTINCT source, is_final FROM " + lakehouse.ref(Table.kpi(table)) + " " + ofDay)).containsExactly("[batch,true]");
            // the open day keeps the stream's rows
            String after = "WHERE event_date > DATE'" + D28 + "'";
            assertThat(tidemarkKpis(table, after)).as(table).containsExactlyElementsOf(sparkKpis(table, contributions(table) + " WHERE NOT late_here",
                    after));
            // the drift of the count: the late contributions of the day folded in
            long late = spark.sql(sql("SELECT count(*) FROM {late} WHERE kpi = '" + table + "' AND event_date = DATE'" + D28 + "'")).first().getLong(0);
            DayOutcome.MeasureDrift txns = d28.measures().stream().filter(m -> m.kpi().equals(table) && m.measure().equals("txns")).findFirst()
                    .orElseThrow();
            assertThat(txns.drift().longValueExact()).as(table).isEqualTo(late).isPositive();
        }
        // the report's summary rows: one per (table, measure) of the day
        assertThat(rows("SELECT kpi, count(*) FROM " + lakehouse.ref(Table.RECONCILE_REPORT) + " WHERE row_kind = 'summary' GROUP BY kpi ORDER BY kpi"))
                .containsExactly("[country_1h,4]", "[merchant_1m,6]");

        // A reconcile that stopped after merchant_1m, where country_1h's stream rows already held the truth: the day's rows of
        // country_1h marked as the stream's again (its counts agree). The day is dirty in country_1h alone, and a --dirty run
        // finishes it.
        spark.sql("UPDATE " + lakehouse.ref(Table.kpi("country_1h")) + " SET source = 'stream' WHERE event_date = DATE'" + D28 + "'");
        assertThat(job.dirtyDays()).containsExactly(D28);
        assertThat(io.tidemark.lakehouse.DayBalance.load(spark, lakehouse, D28, D28).get(D28).unbalanced()).containsExactly("country_1h");
        assertThat(job.run(DaySelection.dirty(), false).days()).extracting(DayOutcome::day, DayOutcome::status)
                .containsExactly(org.assertj.core.api.Assertions.tuple(D28, DayOutcome.Status.RECONCILED));
        assertThat(job.dirtyDays()).isEmpty();
        for (String table : SPARK_KPIS.keySet()) {
            assertThat(rows("SELECT DISTINCT source FROM " + lakehouse.ref(Table.kpi(table)) + " WHERE event_date = DATE'" + D28 + "'"))
                    .as(table).containsExactly("[batch]");
        }
    }
}
