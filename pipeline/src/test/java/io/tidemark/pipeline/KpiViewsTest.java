package io.tidemark.pipeline;

import static org.assertj.core.api.Assertions.assertThat;

import java.math.BigDecimal;
import java.sql.Timestamp;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;

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

import io.tidemark.testing.LocalSpark;

/**
 * The views generated from a pipeline's KPI tables: network's are the hand-written views they
 * replace, column for column and row for row; a table with every kind of measure rolls up to the
 * hour and the day as the same measures computed over the span's records directly; a hopping table
 * gets no roll-up.
 */
class KpiViewsTest {

    /** The stored rows of a table over {@code events}, as the stream writes them (a window starting before {@code finalBefore} final; 30 November reconciled). */
    private static Dataset<Row> storedRows(Pipeline.KpiTable table, String eventTime, Dataset<Row> events, String finalBefore) {
        KpiAggregation a = new KpiAggregation(table, eventTime);
        List<String> cols = new ArrayList<>(List.of("window_start", "window_end"));
        cols.addAll(a.dimensions());
        cols.addAll(a.state());
        cols.addAll(List.of("window_start < TIMESTAMP'" + finalBefore + "' AS is_final",
                "CASE WHEN event_date = DATE'2026-11-30' THEN 'batch' ELSE 'stream' END AS source", "updated_at", "3L AS stream_batch_id",
                "event_date"));
        Dataset<Row> state = a.partials(events, Watermark.ofMillis(0)).selectExpr(cols.toArray(String[]::new));
        return a.stored(spark.createDataFrame(state.collectAsList(), a.stateRowSchema()));
    }

    private static SparkSession spark;

    @BeforeAll
    static void start() {
        spark = LocalSpark.builder("kpi-views-test").getOrCreate();
    }

    @AfterAll
    static void stop() {
        spark.stop();
    }

    /** The statements with their tables read from this session's temporary views of the same names. */
    private static void createViews(List<String> statements) {
        statements.forEach(s -> spark.sql(s.replace("FROM tidemark.", "FROM ")));
    }

    private static String schema(String view) {
        StringBuilder sb = new StringBuilder();
        for (StructField f : spark.table(view).schema().fields()) {
            sb.append(f.name()).append(' ').append(f.dataType().sql()).append(", ");
        }
        return sb.toString();
    }

    /** The rows as text, sorted; a sketch by its bytes in hex. */
    private static List<String> rows(String query) {
        List<String> out = new ArrayList<>();
        for (Row r : spark.sql(query).collectAsList()) {
            List<String> values = new ArrayList<>();
            for (int i = 0; i < r.size(); i++) {
                Object v = r.get(i);
                values.add(v instanceof byte[] b ? java.util.HexFormat.of().formatHex(b) : String.valueOf(v));
            }
            out.add("[" + String.join(",", values) + "]");
        }
        return out.stream().sorted().toList();
    }

    /** The hand-written views of sql/views.sql before they were generated, verbatim but for the table they read. */
    private static final String HAND_WRITTEN = """
            CREATE OR REPLACE TEMPORARY VIEW old_final AS
            SELECT window_start, window_end, cell_site_id, record_count, total_gb, subscribers, subscriber_sketch,
                   source, updated_at, event_date
            FROM kpi_5m
            WHERE is_final
            ;
            CREATE OR REPLACE TEMPORARY VIEW old_hourly AS
            SELECT hour_start, hour_start + INTERVAL 1 HOUR AS hour_end, cell_site_id, record_count, total_gb,
                   hll_sketch_estimate(subscriber_sketch) AS subscribers, windows, is_final, reconciled,
                   subscriber_sketch, event_date
            FROM (
              SELECT date_trunc('HOUR', window_start) AS hour_start, cell_site_id, event_date,
                     sum(record_count) AS record_count,
                     sum(total_gb) AS total_gb,
                     hll_union(hll_union_agg(subscriber_sketch), hll_union_agg(subscriber_sketch)) AS subscriber_sketch,
                     count(*) AS windows,
                     bool_and(is_final) AS is_final,
                     bool_and(source = 'batch') AS reconciled
              FROM kpi_5m
              GROUP BY date_trunc('HOUR', window_start), cell_site_id, event_date
            )
            ;
            CREATE OR REPLACE TEMPORARY VIEW old_daily AS
            SELECT event_date, cell_site_id, record_count, total_gb,
                   hll_sketch_estimate(subscriber_sketch) AS subscribers, windows, is_final, reconciled,
                   subscriber_sketch
            FROM (
              SELECT event_date, cell_site_id,
                     sum(record_count) AS record_count,
                     sum(total_gb) AS total_gb,
                     hll_union(hll_union_agg(subscriber_sketch), hll_union_agg(subscriber_sketch)) AS subscriber_sketch,
                     count(*) AS windows,
                     bool_and(is_final) AS is_final,
                     bool_and(source = 'batch') AS reconciled
              FROM kpi_5m
              GROUP BY event_date, cell_site_id
            )
            """;

    @Test
    void networksViewsAreTheHandWrittenOnes() {
        Pipeline network = PipelineParser.shipped(PipelineParser.DEFAULT);
        // 3,000 records over two days: 23:00-01:00 around midnight of 30 November, 3 cells, 400 subscribers (sketches past list mode)
        Dataset<Row> events = spark.range(3000).selectExpr(
                "concat('sub-', CAST(pmod(id * 7919, 400) AS STRING)) AS subscriber_id",
                "concat('cell-', CAST(pmod(id, 3) AS STRING)) AS cell_site_id",
                "timestamp_micros(1796079600000000 + pmod(id * 104729, 7200) * 1000000) AS event_ts",
                "CAST(pmod(id * 31, 1000) AS DOUBLE) / 1000.0 AS volume_gb",
                "timestamp_micros(1796079600000000 + id * 1000) AS ingest_ts");
        storedRows(network.table("kpi_5m").orElseThrow(), "event_ts", events, "2026-12-01 00:30:00").createOrReplaceTempView("kpi_5m");
        List<String> generated = KpiViews.statements(network);
        assertThat(generated).hasSize(3);
        createViews(generated);
        for (String s : HAND_WRITTEN.split("(?m)^;$")) {
            spark.sql(s);
        }
        for (String v : List.of("final", "hourly", "daily")) {
            assertThat(schema("kpi_" + v)).as(v).isEqualTo(schema("old_" + v));
            List<String> expected = rows("SELECT * FROM old_" + v);
            // 3 cells x 24 windows from 23:00 to 01:00, 18 of them final; x 2 hours; x 2 days
            assertThat(expected).as(v).hasSize(v.equals("final") ? 3 * 18 : 6);
            assertThat(rows("SELECT * FROM kpi_" + v)).as(v).containsExactlyElementsOf(expected);
        }
    }

    private static final String EVERY_MEASURE = """
            CREATE TABLE pay (
              id STRING NOT NULL, user_id STRING NOT NULL, country STRING NOT NULL, amount DECIMAL(12,2) NOT NULL, ts TIMESTAMP NOT NULL
            ) USING kafka OPTIONS (topic 'pay', event_time 'ts', lateness '0');

            CREATE STREAMING TABLE by_country_1m AS
            SELECT window(ts, '1 minute') AS w, country,
                   count(*) AS n, count(user_id) FILTER (WHERE amount > 10) AS big, sum(amount) AS total, min(amount) AS lo,
                   max(amount) AS hi, avg(amount) AS mean, approx_count_distinct(user_id) AS users, percentile_approx(amount, 0.5) AS median
            FROM STREAM pay
            GROUP BY window(ts, '1 minute'), country;

            CREATE STREAMING TABLE overall_1m AS
            SELECT window(ts, '1 minute') AS w, count(*) AS n
            FROM STREAM pay
            GROUP BY window(ts, '1 minute');

            CREATE STREAMING TABLE hop_1h AS
            SELECT window(ts, '1 hour', '30 minutes') AS w, count(*) AS n
            FROM STREAM pay
            GROUP BY window(ts, '1 hour', '30 minutes');
            """;

    private static Row pay(String id, String user, String country, String amount, String at) {
        Timestamp ts = Timestamp.from(Instant.parse(at));
        return RowFactory.create(id, user, country, new BigDecimal(amount), ts, new Timestamp(ts.getTime() + 1000));
    }

    @Test
    void everyMeasureRollsUpToTheHourAndTheDayAsItsValueOverTheSpansRecords() {
        Pipeline p = PipelineParser.parse("every.sql", EVERY_MEASURE);
        StructType schema = new StructType().add("id", DataTypes.StringType, false).add("user_id", DataTypes.StringType, false)
                .add("country", DataTypes.StringType, false).add("amount", DataTypes.createDecimalType(12, 2), false)
                .add("ts", DataTypes.TimestampType, false).add("ingest_ts", DataTypes.TimestampType, false);
        Dataset<Row> events = spark.createDataFrame(List.of(
                pay("a", "u1", "DE", "5.00", "2026-11-30T23:59:10Z"),
                pay("b", "u2", "DE", "12.50", "2026-12-01T00:00:05Z"),
                pay("c", "u1", "DE", "40.00", "2026-12-01T00:00:50Z"),
                pay("d", "u3", "DE", "7.25", "2026-12-01T00:31:00Z"),
                pay("e", "u1", "FR", "100.00", "2026-12-01T00:10:00Z"),
                pay("f", "u4", "FR", "3.10", "2026-12-01T01:05:00Z"),
                pay("g", "u4", "DE", "11.00", "2026-12-01T00:59:59Z")), schema);
        events.createOrReplaceTempView("pay");
        for (Pipeline.KpiTable t : p.tables()) {
            storedRows(t, "ts", events, "2026-12-01 01:00:00").createOrReplaceTempView(t.name());
        }
        List<String> generated = KpiViews.statements(p);
        assertThat(generated).extracting(s -> s.substring("CREATE OR REPLACE TEMPORARY VIEW ".length(), s.indexOf(" AS\n")))
                .containsExactly("by_country_final", "by_country_hourly", "by_country_daily", "overall_final", "overall_hourly", "overall_daily",
                        "hop_final");
        createViews(generated);

        assertThat(schema("by_country_hourly")).isEqualTo("hour_start TIMESTAMP, hour_end TIMESTAMP, country STRING, n BIGINT, big BIGINT, "
                + "total DECIMAL(32,2), lo DECIMAL(12,2), hi DECIMAL(12,2), mean DECIMAL(16,6), users BIGINT, median DECIMAL(12,2), windows BIGINT, "
                + "is_final BOOLEAN, reconciled BOOLEAN, mean_sum DECIMAL(32,2), mean_count BIGINT, users_sketch BINARY, median_sketch BINARY, "
                + "event_date DATE, ");
        // The same measures over the span's records directly (a KLL sketch of so few values holds them all: its median is exact).
        String direct = "count(*), count(user_id) FILTER (WHERE amount > 10), sum(amount), min(amount), max(amount), "
                + "CAST(sum(amount) / count(amount) AS DECIMAL(16,6)), CAST(count(DISTINCT user_id) AS BIGINT), "
                + "CAST(kll_sketch_get_quantile_double(kll_sketch_agg_double(CAST(amount AS DOUBLE)), 0.5) AS DECIMAL(12,2)), "
                + "count(DISTINCT date_trunc('MINUTE', ts))";
        List<String> hourly = rows("SELECT date_trunc('HOUR', ts), country, " + direct + " FROM pay GROUP BY 1, 2");
        assertThat(hourly).containsExactly(
                "[2026-11-30 23:00:00.0,DE,1,0,5.00,5.00,5.00,5.000000,1,5.00,1]",
                "[2026-12-01 00:00:00.0,DE,4,3,70.75,7.25,40.00,17.687500,4,11.00,3]",
                "[2026-12-01 00:00:00.0,FR,1,1,100.00,100.00,100.00,100.000000,1,100.00,1]",
                "[2026-12-01 01:00:00.0,FR,1,0,3.10,3.10,3.10,3.100000,1,3.10,1]");
        assertThat(rows("SELECT hour_start, country, n, big, total, lo, hi, mean, users, median, windows FROM by_country_hourly"))
                .containsExactlyElementsOf(hourly);
        List<String> daily = rows("SELECT CAST(ts AS DATE), country, " + direct + " FROM pay GROUP BY 1, 2");
        assertThat(daily).hasSize(3);
        assertThat(rows("SELECT event_date, country, n, big, total, lo, hi, mean, users, median, windows FROM by_country_daily"))
                .containsExactlyElementsOf(daily);
        // is_final: every window of the span final (those before 01:00); reconciled: every one from the batch layer (30 November's)
        assertThat(rows("SELECT hour_start, country, is_final, reconciled FROM by_country_hourly")).containsExactly(
                "[2026-11-30 23:00:00.0,DE,true,true]", "[2026-12-01 00:00:00.0,DE,true,false]", "[2026-12-01 00:00:00.0,FR,true,false]",
                "[2026-12-01 01:00:00.0,FR,false,false]");
        // No dimensions: one row per span.
        assertThat(rows("SELECT event_date, n, windows FROM overall_daily")).containsExactly("[2026-11-30,1,1]", "[2026-12-01,6,5]");
        // A hopping table's final rows are its rows, and there is nothing to add up.
        assertThat(rows("SELECT count(*), sum(n) FROM hop_final")).containsExactly("[4,13]");
    }

    @Test
    void twoTablesOfOneBaseKeepTheirWholeNames() {
        Pipeline p = PipelineParser.parse("two.sql", """
                CREATE TABLE e (id STRING NOT NULL, ts TIMESTAMP NOT NULL) USING kafka OPTIONS (topic 'e', event_time 'ts', lateness '0');
                CREATE STREAMING TABLE a_1m AS SELECT window(ts, '1 minute') AS w, count(*) AS n FROM STREAM e GROUP BY window(ts, '1 minute');
                CREATE STREAMING TABLE a_2h AS SELECT window(ts, '2 hours') AS w, count(*) AS n FROM STREAM e GROUP BY window(ts, '2 hours');
                CREATE STREAMING TABLE b_7m AS SELECT window(ts, '16 minutes') AS w, count(*) AS n FROM STREAM e GROUP BY window(ts, '16 minutes');
                """);
        // a_2h: no hourly (longer than an hour); b_7m: 16-minute windows do not tile an hour, but a day.
        assertThat(KpiViews.statements(p)).extracting(s -> s.substring("CREATE OR REPLACE TEMPORARY VIEW ".length(), s.indexOf(" AS\n")))
                .containsExactly("a_1m_final", "a_1m_hourly", "a_1m_daily", "a_2h_final", "a_2h_daily", "b_final", "b_daily");
    }
}
