package io.tidemark.reconcile;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;

import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The one-pass truth against the same KPI written as plain SQL: exact count, volume and distinct
 * subscribers, late records per window, and the sketch {@code hll_sketch_agg} builds from each
 * window's distinct subscribers in sorted order, byte for byte, over several tasks.
 */
class TruthKpisTest {
    private static SparkSession spark;

    @BeforeAll
    static void start() {
        spark = SparkSession.builder().master("local[2]").appName("truth-kpis-test")
                .config("spark.ui.enabled", "false").config("spark.driver.host", "127.0.0.1")
                .config("spark.driver.bindAddress", "127.0.0.1").config("spark.sql.shuffle.partitions", "3")
                .config("spark.sql.session.timeZone", "UTC").getOrCreate();
    }

    @AfterAll
    static void stop() {
        spark.stop();
    }

    @Test
    void oneSortedPassEqualsPlainSql() {
        // 20,000 records over 4 windows x 3 cells, subscribers repeating, volumes with 9 decimals, some late;
        // spread over 4 input partitions so the shuffle and the sort decide the order, not the input.
        Dataset<Row> raw = spark.range(0, 20_000, 1, 4).selectExpr(
                "concat('sub-', CAST(pmod(id * 7919, 1500) AS STRING)) AS subscriber_id",
                "concat('cell-', CAST(pmod(id, 3) AS STRING)) AS cell_site_id",
                "timestamp_micros(1795910400000000 + pmod(id * 104729, 1200) * 1000000) AS event_ts",
                "CAST(pmod(id * 31, 1000) AS DOUBLE) / 1000003.0 AS volume_gb",
                "timestamp_micros(1795910400000000 + id * 1000) AS ingest_ts",
                "pmod(id, 17) = 0 AS is_late");
        raw.createOrReplaceTempView("raw");
        List<Row> expected = spark.sql("""
                WITH w AS (
                  SELECT *, timestamp_micros(unix_micros(event_ts) - pmod(unix_micros(event_ts), 300000000)) AS window_start FROM raw),
                d AS (
                  SELECT window_start, cell_site_id, subscriber_id,
                         hll_sketch_agg(subscriber_id, 12) OVER (PARTITION BY window_start, cell_site_id ORDER BY subscriber_id
                             ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING) AS sketch,
                         row_number() OVER (PARTITION BY window_start, cell_site_id ORDER BY subscriber_id) AS rn
                  FROM (SELECT DISTINCT window_start, cell_site_id, subscriber_id FROM w)),
                a AS (
                  SELECT window_start, cell_site_id, count(1) AS n, CAST(sum(CAST(volume_gb AS DECIMAL(38,9))) AS DECIMAL(38,9)) AS gb,
                         count(DISTINCT subscriber_id) AS subs, max(ingest_ts) AS upd, sum(CASE WHEN is_late THEN 1 ELSE 0 END) AS late
                  FROM w GROUP BY window_start, cell_site_id)
                SELECT CAST(a.window_start AS STRING), a.cell_site_id, a.n, CAST(a.gb AS STRING), a.subs, hex(d.sketch),
                       CAST(a.upd AS STRING), a.late
                FROM a JOIN d ON a.window_start = d.window_start AND a.cell_site_id = d.cell_site_id AND d.rn = 1
                ORDER BY 1, 2""").collectAsList();

        TruthKpis.of(raw, io.tidemark.lakehouse.TidemarkConfig.defaults()).createOrReplaceTempView("truth");
        List<Row> actual = spark.sql("""
                SELECT CAST(window_start AS STRING), cell_site_id, record_count, CAST(total_gb AS STRING), subscribers,
                       hex(subscriber_sketch), CAST(updated_at AS STRING), late_records
                FROM truth WHERE is_final AND source = 'batch' ORDER BY 1, 2""").collectAsList();

        assertThat(expected).hasSize(12);
        assertThat(actual).containsExactlyElementsOf(expected);
    }
}
