package io.tidemark.pipeline;

import static org.apache.spark.sql.functions.lit;
import static org.assertj.core.api.Assertions.assertThat;

import java.math.BigDecimal;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.stream.IntStream;

import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import io.tidemark.lakehouse.Lakehouse;
import io.tidemark.lakehouse.TidemarkConfig;
import io.tidemark.testing.LocalSpark;

/**
 * The network KPI as both layers compute it from its definition (kpi_5m of pipelines/network.sql,
 * with 10-minute windows), on a few hand-made events: window bounds to the microsecond, exact
 * DECIMAL(38,9) volumes, the newest ingest time, the sketch's estimate and the exact distinct count.
 */
class NetworkKpiTest {
    private static final Duration TEN_MINUTES = Duration.ofMinutes(10);
    private static final Pipeline.KpiTable KPI_10M = TidemarkConfig.builder().set("window", "10 minutes").build().pipeline()
            .table("kpi_5m").orElseThrow();
    /** The stream's partial aggregate of a micro-batch. */
    private static final KpiAggregation STREAM = new KpiAggregation(KPI_10M, "event_ts");

    private static Dataset<Row> withWindow(Dataset<Row> events, Duration window) {
        return KpiAggregation.windowed(events, "event_ts", new Pipeline.Window(window, window));
    }

    /** The partial rows of records none of whose windows has closed. */
    private static Dataset<Row> partialKpis(Dataset<Row> events) {
        return STREAM.partials(events, Watermark.NONE);
    }

    /** Reconcile's exact rows. */
    private static Dataset<Row> exactKpis(Dataset<Row> events) {
        return TruthKpis.of(events.withColumn("is_late", lit(false)), KPI_10M, "event_ts");
    }
    private static final StructType EVENTS = StructType.fromDDL(
            "subscriber_id STRING, cell_site_id STRING, event_ts TIMESTAMP, volume_gb DOUBLE, ingest_ts TIMESTAMP");
    private static final List<String> KPI_COLUMNS = List.of("event_date", "window_start", "window_end", "cell_site_id",
            "record_count", "total_gb", "subscriber_sketch", "updated_at");

    private static SparkSession spark;

    @BeforeAll
    static void start() {
        spark = LocalSpark.start("kpi-computation-test");
    }

    @AfterAll
    static void stop() {
        spark.stop();
    }

    private static Instant t(String iso) {
        return Instant.parse(iso);
    }

    private static Row event(String subscriber, String cell, String eventTs, double gb, String ingestTs) {
        return RowFactory.create(subscriber, cell, t(eventTs), gb, t(ingestTs));
    }

    private static Dataset<Row> events(Row... rows) {
        return spark.createDataFrame(Arrays.asList(rows), EVENTS);
    }

    private static List<List<Object>> values(Dataset<Row> ds) {
        List<List<Object>> out = new ArrayList<>();
        for (Row r : ds.collectAsList()) {
            out.add(IntStream.range(0, r.size()).mapToObj(r::get).toList());
        }
        return out;
    }

    private static List<Object> row(Object... values) {
        return Arrays.asList(values); // allows nulls, unlike List.of
    }

    private static List<String> names(Dataset<Row> ds) {
        return Arrays.stream(ds.schema().fields()).map(StructField::name).toList();
    }

    // ------------------------------------------------------------------ withWindow

    @Test
    void windowBoundsAreExactAtBoundariesAndAtMidnight() {
        Dataset<Row> in = events(
                event("s", "c", "2026-11-29T14:10:00Z", 1, "2026-11-29T14:10:01Z"),        // exactly on a boundary
                event("s", "c", "2026-11-29T14:09:59.999999Z", 1, "2026-11-29T14:10:01Z"), // one microsecond before it
                event("s", "c", "2026-11-29T14:10:00.000001Z", 1, "2026-11-29T14:10:01Z"), // one microsecond after it
                event("s", "c", "2026-11-29T23:59:59.999999Z", 1, "2026-11-30T00:00:01Z"), // last window of the day
                event("s", "c", "2026-11-30T00:00:00Z", 1, "2026-11-30T00:00:01Z"),        // midnight UTC
                event("s", "c", "1969-12-31T23:55:00Z", 1, "1970-01-01T00:00:01Z"));       // before the epoch: pmod, not %

        Dataset<Row> windowed = withWindow(in, TEN_MINUTES);

        assertThat(names(windowed)).containsExactly("subscriber_id", "cell_site_id", "event_ts", "volume_gb", "ingest_ts",
                "window_start", "window_end", "event_date");
        assertThat(windowed.schema().apply("window_start").dataType()).isEqualTo(DataTypes.TimestampType);
        assertThat(windowed.schema().apply("window_end").dataType()).isEqualTo(DataTypes.TimestampType);
        assertThat(windowed.schema().apply("event_date").dataType()).isEqualTo(DataTypes.DateType);
        assertThat(values(windowed.select("event_ts", "window_start", "window_end", "event_date"))).containsExactly(
                row(t("2026-11-29T14:10:00Z"), t("2026-11-29T14:10:00Z"), t("2026-11-29T14:20:00Z"), LocalDate.of(2026, 11, 29)),
                row(t("2026-11-29T14:09:59.999999Z"), t("2026-11-29T14:00:00Z"), t("2026-11-29T14:10:00Z"), LocalDate.of(2026, 11, 29)),
                row(t("2026-11-29T14:10:00.000001Z"), t("2026-11-29T14:10:00Z"), t("2026-11-29T14:20:00Z"), LocalDate.of(2026, 11, 29)),
                // the window ending at midnight belongs to the day it starts in
                row(t("2026-11-29T23:59:59.999999Z"), t("2026-11-29T23:50:00Z"), t("2026-11-30T00:00:00Z"), LocalDate.of(2026, 11, 29)),
                row(t("2026-11-30T00:00:00Z"), t("2026-11-30T00:00:00Z"), t("2026-11-30T00:10:00Z"), LocalDate.of(2026, 11, 30)),
                row(t("1969-12-31T23:55:00Z"), t("1969-12-31T23:50:00Z"), t("1970-01-01T00:00:00Z"), LocalDate.of(1969, 12, 31)));
    }

    @Test
    void windowLengthComesFromTheDuration() {
        Dataset<Row> in = events(event("s", "c", "2026-11-29T14:07:30Z", 1, "2026-11-29T14:08:00Z"));
        assertThat(values(withWindow(in, Duration.ofMinutes(5)).select("window_start", "window_end")))
                .containsExactly(row(t("2026-11-29T14:05:00Z"), t("2026-11-29T14:10:00Z")));
        assertThat(values(withWindow(in, Duration.ofHours(1)).select("window_start", "window_end")))
                .containsExactly(row(t("2026-11-29T14:00:00Z"), t("2026-11-29T15:00:00Z")));
    }

    // ------------------------------------------------------------------ partialKpis

    private static Dataset<Row> sample() {
        return events(
                event("sub-1", "cell-A", "2026-11-29T14:01:00Z", 0.1, "2026-11-29T14:05:01Z"),
                event("sub-2", "cell-A", "2026-11-29T14:09:59.999999Z", 0.2, "2026-11-29T14:05:03.250Z"), // newest ingest
                event("sub-1", "cell-A", "2026-11-29T14:00:00Z", 0.0, "2026-11-29T14:05:02Z"),
                event("sub-3", "cell-B", "2026-11-29T14:02:00Z", 100_000_000.0, "2026-11-29T14:06:00Z"),
                event("sub-4", "cell-B", "2026-11-29T14:03:00Z", 0.000000001, "2026-11-29T14:06:00Z"), // one byte
                event("sub-1", "cell-A", "2026-11-29T14:10:00Z", 2.25, "2026-11-29T14:10:02Z"));       // the next window
    }

    @Test
    void partialKpisCountSumExactlyAndKeepTheNewestIngestTime() {
        Dataset<Row> kpis = partialKpis(sample());

        assertThat(names(kpis)).containsExactlyElementsOf(KPI_COLUMNS);
        assertThat(kpis.schema().apply("record_count").dataType()).isEqualTo(DataTypes.LongType);
        assertThat(kpis.schema().apply("total_gb").dataType()).isEqualTo(DataTypes.createDecimalType(38, 9));
        assertThat(kpis.schema().apply("subscriber_sketch").dataType()).isEqualTo(DataTypes.BinaryType);
        assertThat(kpis.schema().apply("updated_at").dataType()).isEqualTo(DataTypes.TimestampType);

        LocalDate day = LocalDate.of(2026, 11, 29);
        assertThat(values(kpis.selectExpr("event_date", "window_start", "window_end", "cell_site_id", "record_count", "total_gb",
                "hll_sketch_estimate(subscriber_sketch)", "updated_at").orderBy("window_start", "cell_site_id"))).containsExactly(
                // 0.1 + 0.2 + 0.0 as doubles is 0.30000000000000004; as DECIMAL(38,9) it is exactly 0.3
                row(day, t("2026-11-29T14:00:00Z"), t("2026-11-29T14:10:00Z"), "cell-A", 3L, new BigDecimal("0.300000000"), 2L,
                        t("2026-11-29T14:05:03.250Z")),
                // 1e8 + 1e-9 is 1e8 in a double; the decimal keeps the byte
                row(day, t("2026-11-29T14:00:00Z"), t("2026-11-29T14:10:00Z"), "cell-B", 2L, new BigDecimal("100000000.000000001"), 2L,
                        t("2026-11-29T14:06:00Z")),
                row(day, t("2026-11-29T14:10:00Z"), t("2026-11-29T14:20:00Z"), "cell-A", 1L, new BigDecimal("2.250000000"), 1L,
                        t("2026-11-29T14:10:02Z")));
    }

    @Test
    void sketchEstimateIsTheExactDistinctCountForSmallSets() {
        List<Row> rows = new ArrayList<>();
        for (int i = 0; i < 300; i++) { // 100 distinct subscribers, each three times
            rows.add(event("sub-" + (i % 100), "cell-A", "2026-11-29T14:00:00Z", 1, "2026-11-29T14:05:00Z"));
        }
        Dataset<Row> kpis = partialKpis(spark.createDataFrame(rows, EVENTS));
        assertThat(values(kpis.selectExpr("record_count", "hll_sketch_estimate(subscriber_sketch)", "total_gb")))
                .containsExactly(row(300L, 100L, new BigDecimal("300.000000000")));
    }

    // ------------------------------------------------------------------ exactKpis

    @Test
    void exactKpisCountDistinctSubscribersExactly() {
        Dataset<Row> raw = events(
                event("sub-1", "cell-A", "2026-11-29T14:00:00Z", 0.5, "2026-11-29T14:00:01Z"),
                event("sub-2", "cell-A", "2026-11-29T14:01:00Z", 0.5, "2026-11-29T14:01:01Z"),
                event("sub-1", "cell-A", "2026-11-29T14:02:00Z", 0.5, "2026-11-29T14:02:01Z"),
                event("sub-3", "cell-A", "2026-11-29T14:03:00Z", 0.5, "2026-11-29T14:03:01Z"),
                event("sub-2", "cell-A", "2026-11-29T14:04:00Z", 0.5, "2026-11-29T14:04:01Z"),
                event("sub-1", "cell-A", "2026-11-29T14:10:00Z", 1.0, "2026-11-29T14:10:01Z"),
                event("sub-9", "cell-B", "2026-11-29T23:59:00Z", 0.25, "2026-11-30T00:00:30Z"),
                event("sub-9", "cell-B", "2026-11-29T23:58:00Z", 0.25, "2026-11-30T00:00:20Z"));

        Dataset<Row> exact = exactKpis(raw);

        assertThat(names(exact)).containsExactly("window_start", "window_end", "cell_site_id", "record_count", "total_gb", "subscribers",
                "subscriber_sketch", "is_final", "source", "updated_at", "event_date", WorkingColumns.LATE_RECORDS);
        assertThat(exact.schema().apply("subscribers").dataType()).isEqualTo(DataTypes.LongType);
        LocalDate day = LocalDate.of(2026, 11, 29);
        assertThat(values(exact.selectExpr("event_date", "window_start", "window_end", "cell_site_id", "record_count", "total_gb",
                "subscribers", "hll_sketch_estimate(subscriber_sketch)", "updated_at").orderBy("window_start", "cell_site_id")))
                .containsExactly(
                        row(day, t("2026-11-29T14:00:00Z"), t("2026-11-29T14:10:00Z"), "cell-A", 5L, new BigDecimal("2.500000000"), 3L, 3L,
                                t("2026-11-29T14:04:01Z")),
                        row(day, t("2026-11-29T14:10:00Z"), t("2026-11-29T14:20:00Z"), "cell-A", 1L, new BigDecimal("1.000000000"), 1L, 1L,
                                t("2026-11-29T14:10:01Z")),
                        row(day, t("2026-11-29T23:50:00Z"), t("2026-11-30T00:00:00Z"), "cell-B", 2L, new BigDecimal("0.500000000"), 1L, 1L,
                                t("2026-11-30T00:00:30Z")));
    }

    @Test
    void exactKpisAgreeWithThePartialKpisOfTheSameRows() {
        String[] shared = {"event_date", "window_start", "window_end", "cell_site_id", "record_count", "total_gb",
                "hll_sketch_estimate(subscriber_sketch)", "updated_at"};
        List<List<Object>> partial = values(partialKpis(sample())
                .selectExpr(shared).orderBy("window_start", "cell_site_id"));
        List<List<Object>> exact = values(exactKpis(sample())
                .selectExpr(shared).orderBy("window_start", "cell_site_id"));
        assertThat(partial).hasSize(3);
        assertThat(exact).containsExactlyElementsOf(partial);
    }

    /**
     * A roll-up's distinct count is a function of the set of window sketches: the same in any read
     * order. The windows are in list or set mode (10 subscribers each) and their union crosses into
     * HLL mode (~450 distinct), the case where hll_union_agg's own estimate follows the order.
     */
    @Test
    void distinctOfUnionDoesNotDependOnTheOrderOfTheSketches() {
        List<Row> rows = new ArrayList<>();
        for (int w = 0; w < 90; w++) {
            for (int i = 0; i < 10; i++) {
                rows.add(RowFactory.create(w, "sub-" + ((w * 37 + i * 11) % 450)));
            }
        }
        spark.createDataFrame(rows, StructType.fromDDL("w INT, subscriber_id STRING"))
                .groupBy("w").agg(org.apache.spark.sql.functions.expr("hll_sketch_agg(subscriber_id, 12)").as("s"))
                .coalesce(1).createOrReplaceTempView("window_sketches");
        List<String> orders = List.of("w", "w DESC", "hash(w)", "hash(w) DESC", "w % 7, w");
        List<Double> hip = new ArrayList<>();
        List<Long> orderFree = new ArrayList<>();
        List<String> registers = new ArrayList<>();
        for (String order : orders) {
            // One partition, sorted: the union sees the sketches in exactly this order.
            Row r = spark.sql("SELECT hll_sketch_estimate(hll_union_agg(s)), " + "hll_sketch_estimate(" + DistinctCount.orderFreeUnion("s") + ")"
                    + ", hex(substring(" + DistinctCount.orderFreeUnion("s") + ", 41)), count(*) FROM (SELECT s FROM window_sketches "
                    + "ORDER BY " + order + ")").first();
            assertThat(r.getLong(3)).isEqualTo(90);
            hip.add((double) r.getLong(0));
            orderFree.add(r.getLong(1));
            registers.add(r.getString(2));
        }
        // The scenario is the one that matters: the plain union's figure follows the order ...
        assertThat(hip.stream().distinct().count()).as("hll_union_agg's HIP estimates over %s: %s", orders, hip).isGreaterThan(1);
        // ... the order-free one does not, and the registers are the same in every order.
        assertThat(orderFree).as("order-free estimates over %s", orders).containsOnly(orderFree.get(0));
        assertThat(registers).containsOnly(registers.get(0));
        assertThat(registers.get(0)).hasSize(2 * 4096);
        long exact = rows.stream().map(row -> row.getString(1)).distinct().count();
        assertThat((double) orderFree.get(0)).isCloseTo(exact, org.assertj.core.data.Percentage.withPercentage(3));
    }

    /** The roll-up views spell each union of sketches the order-free way, and nothing else unions sketches. */
    @Test
    void theViewsRollUpWithTheOrderFreeUnion() {
        String union = DistinctCount.orderFreeUnion("subscriber_sketch") + " AS subscriber_sketch";
        List<String> views = new Lakehouse("").viewStatements();
        List<String> rollUps = views.stream().filter(v -> v.contains("hll_union_agg")).toList();
        assertThat(rollUps).hasSize(2).allSatisfy(v -> assertThat(v).contains(union));
        assertThat(String.join("\n", views).replace(DistinctCount.orderFreeUnion("subscriber_sketch"), ""))
                .doesNotContain("hll_union_agg");
    }
}
