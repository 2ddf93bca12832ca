package io.tidemark.stream;

import static org.assertj.core.api.Assertions.assertThat;

import java.math.BigDecimal;
import java.sql.Timestamp;
import java.time.LocalDate;
import java.util.List;

import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import io.tidemark.pipeline.KpiAggregation;
import io.tidemark.pipeline.Pipeline;
import io.tidemark.testing.LocalSpark;

/**
 * The driver-side merge of open windows must leave in kpi_5m exactly what Spark's own functions
 * would: the sketch union of {@code hll_union_agg} byte for byte, the estimate of
 * {@code hll_sketch_estimate}, and exact sums.
 */
class OpenWindowKpisTest {
    private static SparkSession spark;

    @BeforeAll
    static void start() {
        spark = LocalSpark.builder("open-window-kpis-test").getOrCreate();
    }

    @AfterAll
    static void stop() {
        spark.stop();
    }

    private static byte[] sketchOf(int from, int to) {
        return (byte[]) spark.sql("SELECT hll_sketch_agg(concat('sub-', CAST(id AS STRING)), 12) FROM range(" + from + ", " + to + ")")
                .first().get(0);
    }

    /** The stream's aggregation of kpi_5m, as the network pipeline declares it. */
    private static final KpiAggregation KPI_5M = new KpiAggregation(
            io.tidemark.lakehouse.TidemarkConfig.defaults().pipeline().table("kpi_5m").orElseThrow(), "event_ts");

    /** A state of kpi_5m: record_count, total_gb, subscriber_sketch. */
    private static OpenWindowKpis.Kpi kpi(LocalDate day, long count, BigDecimal totalGb, byte[] sketch, Timestamp updatedAt) {
        return new OpenWindowKpis.Kpi(day, new Object[] {count, totalGb, sketch}, updatedAt);
    }

    /** The subscribers column kpi_5m stores for a merged state: the projection the stream writes with. */
    private static long subscribers(OpenWindowKpis.Kpi k) {
        Row row = RowFactory.create(Timestamp.valueOf("2026-11-28 10:00:00"), Timestamp.valueOf("2026-11-28 10:05:00"), "cell-1",
                k.state()[0], k.state()[1], k.state()[2], false, "stream", k.updatedAt(), 1L, java.sql.Date.valueOf(k.day()));
        return KPI_5M.stored(spark.createDataFrame(List.of(row), KPI_5M.stateRowSchema())).first().getLong(5);
    }

    @Test
    void mergeMatchesSparksUnionAndEstimate() {
        assertThat(KPI_5M.state()).containsExactly("record_count", "total_gb", "subscriber_sketch");
        // Small sketches (list/set mode) and large ones (HLL mode) both.
        for (int[] r : new int[][] {{0, 5, 3, 9}, {0, 400, 200, 900}, {0, 20_000, 10_000, 45_000}}) {
            byte[] a = sketchOf(r[0], r[1]);
            byte[] b = sketchOf(r[2], r[3]);
            spark.createDataFrame(List.of(org.apache.spark.sql.RowFactory.create((Object) a), org.apache.spark.sql.RowFactory.create((Object) b)),
                    new org.apache.spark.sql.types.StructType().add("s", org.apache.spark.sql.types.DataTypes.BinaryType)).coalesce(1)
                    .createOrReplaceTempView("sketches");
            Row expected = spark.sql("SELECT u, hll_sketch_estimate(u) FROM (SELECT hll_union_agg(s) AS u FROM sketches)").first();

            LocalDate day = LocalDate.of(2026, 11, 28);
            OpenWindowKpis.Kpi x = kpi(day, 2, new BigDecimal("1.250000000"), a, Timestamp.valueOf("2026-11-28 10:00:00"));
            OpenWindowKpis.Kpi y = kpi(day, 3, new BigDecimal("0.000000001"), b, Timestamp.valueOf("2026-11-28 10:00:05"));
            OpenWindowKpis.Kpi merged = x.plus(y, KPI_5M);

            assertThat((byte[]) merged.state()[2]).as("union of %s", java.util.Arrays.toString(r)).isEqualTo((byte[]) expected.get(0));
            assertThat(subscribers(merged)).isEqualTo(expected.getLong(1));
            assertThat(merged.state()[0]).isEqualTo(5L);
            assertThat(merged.state()[1]).isEqualTo(new BigDecimal("1.250000001"));
            assertThat(merged.updatedAt()).isEqualTo(Timestamp.valueOf("2026-11-28 10:00:05"));
        }
        // The estimates are the distinct counts within HLL's error (exact while small).
        assertThat(subscribers(kpi(LocalDate.of(2026, 11, 28), 1, BigDecimal.ONE, sketchOf(0, 5), Timestamp.valueOf("2026-11-28 10:00:00"))
                .plus(kpi(LocalDate.of(2026, 11, 28), 1, BigDecimal.ONE, sketchOf(3, 9), Timestamp.valueOf("2026-11-28 10:00:00")), KPI_5M)))
                .isEqualTo(9);
    }
}
