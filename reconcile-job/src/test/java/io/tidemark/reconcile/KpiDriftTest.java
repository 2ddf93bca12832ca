package io.tidemark.reconcile;

import static org.assertj.core.api.Assertions.assertThat;

import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import io.tidemark.lakehouse.TidemarkConfig;
import io.tidemark.pipeline.DriftRule;
import io.tidemark.pipeline.Measure;
import io.tidemark.pipeline.Pipeline;
import io.tidemark.testing.LocalSpark;

/**
 * The drift of kpi_5m's rows from the truth, measure by measure, on crafted rows worked out by
 * hand: a window whose count, volume and subscribers changed, one unchanged, one only the stream
 * had and one only the truth has; each measure's day value on either side; and the drift rule.
 */
class KpiDriftTest {
    private static SparkSession spark;
    private static final Pipeline.KpiTable KPI_5M = TidemarkConfig.defaults().pipeline().table("kpi_5m").orElseThrow();

    @BeforeAll
    static void start() {
        spark = LocalSpark.builder("kpi-drift-test").getOrCreate();
    }

    @AfterAll
    static void stop() {
        spark.stop();
    }

    /** kpi_5m rows of 2026-12-01: (minute of 10:xx, cell, count, GB, subscribers, the subscribers the sketch holds[, late records]). */
    private static Dataset<Row> rows(String values, boolean truth) {
        return spark.sql("SELECT timestamp_micros(1796119200000000 + m * 60000000) AS window_start, "
                + "timestamp_micros(1796119200000000 + (m + 5) * 60000000) AS window_end, cell AS cell_site_id, n AS record_count, "
                + "CAST(gb AS DECIMAL(38,9)) AS total_gb, subs AS subscribers, sketch AS subscriber_sketch"
                + (truth ? ", late AS " + KpiDrift.LATE_RECORDS : "") + " FROM ("
                + "SELECT m, cell, first(n) AS n, first(gb) AS gb, first(subs) AS subs, first(late) AS late, hll_sketch_agg(x, 12) AS sketch "
                + "FROM (SELECT *, explode(xs) AS x FROM VALUES " + values + " AS v(m, cell, n, gb, subs, xs, late)) GROUP BY m, cell)");
    }

    private static final Dataset<Row> current() {
        return rows("(0, 'cell-1', 10L, 1.5, 3L, array('a', 'b', 'c'), 0L), (5, 'cell-1', 5L, 0.5, 2L, array('a', 'b'), 0L), "
                + "(0, 'cell-2', 4L, 2.0, 1L, array('d'), 0L)", false);
    }

    private static final Dataset<Row> truth() {
        return rows("(0, 'cell-1', 12L, 1.7, 4L, array('a', 'b', 'c', 'e'), 2L), (5, 'cell-1', 5L, 0.5, 2L, array('a', 'b'), 0L), "
                + "(10, 'cell-3', 1L, 0.25, 1L, array('f'), 1L)", true);
    }

    @Test
    void eachChangedMeasureOfAWindowIsOneRow() {
        KpiDrift drift = new KpiDrift(KPI_5M);
        Dataset<Row> comparison = drift.compare(current(), truth());
        assertThat(comparison.filter(KpiDrift.ANY_CHANGED).count()).isEqualTo(3);
        assertThat(comparison.filter(KpiDrift.IN_TRUTH).count()).isEqualTo(3);
        List<String> rows = new ArrayList<>();
        for (Row r : drift.windowRows(comparison).selectExpr("kpi", "measure", "date_format(window_start, 'HH:mm')", "dimensions",
                "CAST(stream_value AS STRING)", "CAST(batch_value AS STRING)", "CAST(drift AS STRING)", "round(drift_rel, 6)", "estimate",
                "late_records").orderBy("window_start", "dimensions", "measure").collectAsList()) {
            rows.add(r.mkString(" "));
        }
        assertThat(rows).containsExactly(
                "kpi_5m record_count 10:00 {\"cell_site_id\":\"cell-1\"} 10.000000000 12.000000000 2.000000000 0.166667 false 2",
                "kpi_5m subscribers 10:00 {\"cell_site_id\":\"cell-1\"} 3.000000000 4.000000000 1.000000000 0.25 true 2",
                "kpi_5m total_gb 10:00 {\"cell_site_id\":\"cell-1\"} 1.500000000 1.700000000 0.200000000 0.117647 false 2",
                // only the stream had it: the truth is zero, the relative drift undefined
                "kpi_5m record_count 10:00 {\"cell_site_id\":\"cell-2\"} 4.000000000 0.000000000 -4.000000000 null false 0",
                "kpi_5m subscribers 10:00 {\"cell_site_id\":\"cell-2\"} 1.000000000 0.000000000 -1.000000000 null true 0",
                "kpi_5m total_gb 10:00 {\"cell_site_id\":\"cell-2\"} 2.000000000 0.000000000 -2.000000000 null false 0",
                // only the truth has it
                "kpi_5m record_count 10:10 {\"cell_site_id\":\"cell-3\"} 0.000000000 1.000000000 1.000000000 1.0 false 1",
                "kpi_5m subscribers 10:10 {\"cell_site_id\":\"cell-3\"} 0.000000000 1.000000000 1.000000000 1.0 true 1",
                "kpi_5m total_gb 10:10 {\"cell_site_id\":\"cell-3\"} 0.000000000 0.250000000 0.250000000 1.0 false 1");
    }

    @Test
    void aDaysValueIsEachMeasureRolledUpAndTheRuleJudgesTheExactOnes() {
        KpiDrift drift = new KpiDrift(KPI_5M);
        Map<String, BigDecimal> stream = drift.dayValues(current());
        Map<String, BigDecimal> batch = drift.dayValues(truth());
        assertThat(stream).containsExactly(Map.entry("record_count", new BigDecimal("19.000000000")),
                Map.entry("total_gb", new BigDecimal("4.000000000")), Map.entry("subscribers", new BigDecimal("4.000000000")));
        assertThat(batch).containsExactly(Map.entry("record_count", new BigDecimal("18.000000000")),
                Map.entry("total_gb", new BigDecimal("2.450000000")), Map.entry("subscribers", new BigDecimal("5.000000000")));
        DriftRule rule = new DriftRule(0.06);
        Measure count = KPI_5M.measures().get(0);
        Measure gb = KPI_5M.measures().get(1);
        Measure subscribers = KPI_5M.measures().get(2);
        assertThat(rule.over(count, stream.get("record_count"), batch.get("record_count"))).as("1/18 = 5.6 %").isFalse();
        assertThat(new DriftRule(0.05).over(count, stream.get("record_count"), batch.get("record_count"))).isTrue();
        assertThat(rule.over(gb, stream.get("total_gb"), batch.get("total_gb"))).as("1.55/2.45").isTrue();
        assertThat(rule.over(subscribers, BigDecimal.ONE, BigDecimal.TEN)).as("an estimate is never over").isFalse();
        assertThat(rule.over(count, BigDecimal.ONE, BigDecimal.ZERO)).as("a truth of zero, a stream of one").isTrue();
        assertThat(rule.over(count, null, BigDecimal.ZERO)).isFalse();
        assertThat(DriftRule.relative(stream.get("record_count"), batch.get("record_count"))).isCloseTo(-1.0 / 18, org.assertj.core.data.Offset.offset(1e-12));
        assertThat(DriftRule.relative(BigDecimal.ONE, BigDecimal.ZERO)).isNull();
    }
}
