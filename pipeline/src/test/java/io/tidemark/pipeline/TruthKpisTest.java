package io.tidemark.pipeline;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;

import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import io.tidemark.testing.LocalSpark;

/**
 * The one-pass truth against the same KPI written as plain SQL: exact count, volume and distinct
 * subscribers, late records per window, and the sketch {@code hll_sketch_agg} builds from each
 * window's distinct subscribers in sorted order, byte for byte, over several tasks.
 */
class TruthKpisTest {
    private static SparkSession spark;

    @BeforeAll
    static void start() {
        // two cores and three shuffle partitions, and as every Tidemark session (SparkSessions): the truth's aggregate runs sorted
        spark = LocalSpark.builder("truth-kpis-test").master("local[2]").config("spark.sql.shuffle.partitions", "3").config("spark.sql.execution.replaceHashWithSortAgg", "true").getOrCreate();
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

        Pipeline network = PipelineParser.shipped(PipelineParser.DEFAULT);
        TruthKpis.of(raw, network.tables().get(0), network.events().eventTime()).createOrReplaceTempView("truth");
        List<Row> actual = spark.sql("""
                SELECT CAST(window_start AS STRING), cell_site_id, record_count, CAST(total_gb AS STRING), subscribers,
                       hex(subscriber_sketch), CAST(updated_at AS STRING), __tm_late_records
                FROM truth WHERE is_final AND source = 'batch' ORDER BY 1, 2""").collectAsList();

        assertThat(expected).hasSize(12);
        assertThat(actual).containsExactlyElementsOf(expected);
    }

    /** FILTER clauses, a WHERE, every kind of measure and a hopping window: the truth is Spark's own aggregate over Spark's window(). */
    @Test
    void everyMeasureWithItsFilterIsSparksAggregate() {
        io.tidemark.pipeline.Pipeline p = io.tidemark.pipeline.PipelineParser.parse("f.sql", """
                CREATE TABLE pay (id STRING NOT NULL, user_id STRING NOT NULL, status STRING NOT NULL, amount DECIMAL(12,2) NOT NULL,
                  ts TIMESTAMP NOT NULL) USING kafka OPTIONS (topic 'p', event_time 'ts', lateness '1 minute');
                CREATE STREAMING TABLE t AS SELECT window(ts, '30 minutes', '10 minutes') AS w, status,
                  count(*) AS n, count(*) FILTER (WHERE amount > 5) AS big, sum(amount) FILTER (WHERE status = 'ok') AS ok_amount,
                  min(amount) AS lo, max(amount) FILTER (WHERE amount < 9) AS hi, avg(amount) FILTER (WHERE amount > 2) AS mean,
                  approx_count_distinct(user_id) FILTER (WHERE amount > 3) AS users, percentile_approx(amount, 0.5) AS mid
                FROM STREAM pay WHERE status <> 'test' GROUP BY window(ts, '30 minutes', '10 minutes'), status;
                """);
        Dataset<Row> raw = spark.range(0, 3_000, 1, 4).selectExpr(
                "concat('p-', CAST(id AS STRING)) AS id",
                "concat('u-', CAST(pmod(id * 7919, 97) AS STRING)) AS user_id",
                "element_at(array('ok', 'ko', 'test'), CAST(pmod(id, 3) + 1 AS INT)) AS status",
                "CAST(pmod(id * 31, 1000) / 100.0 AS DECIMAL(12,2)) AS amount",
                "timestamp_micros(1795910400000000 + pmod(id * 104729, 7200) * 1000000) AS ts",
                "timestamp_micros(1795910400000000 + id * 1000) AS ingest_ts",
                "false AS is_late");
        raw.createOrReplaceTempView("pay");
        List<Row> expected = spark.sql("""
                SELECT CAST(w.start AS STRING), status, count(*), count(*) FILTER (WHERE amount > 5),
                       CAST(sum(amount) FILTER (WHERE status = 'ok') AS STRING), CAST(min(amount) AS STRING),
                       CAST(max(amount) FILTER (WHERE amount < 9) AS STRING), CAST(avg(amount) FILTER (WHERE amount > 2) AS STRING),
                       count(DISTINCT user_id) FILTER (WHERE amount > 3),
                       CAST(CAST(percentile_disc(0.5) WITHIN GROUP (ORDER BY amount) AS DECIMAL(12,2)) AS STRING)
                FROM (SELECT *, window(ts, '30 minutes', '10 minutes') AS w FROM pay WHERE status <> 'test')
                GROUP BY w, status ORDER BY 1, 2""").collectAsList();
        TruthKpis.of(raw, p.tables().get(0), "ts").createOrReplaceTempView("truth");
        List<Row> actual = spark.sql("""
                SELECT CAST(window_start AS STRING), status, n, big, CAST(ok_amount AS STRING), CAST(lo AS STRING), CAST(hi AS STRING),
                       CAST(mean AS STRING), users, CAST(mid AS STRING)
                FROM truth ORDER BY 1, 2""").collectAsList();
        assertThat(expected).hasSize(28);
        assertThat(actual).containsExactlyElementsOf(expected);
    }
}
