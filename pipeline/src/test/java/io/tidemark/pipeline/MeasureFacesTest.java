package io.tidemark.pipeline;

import static org.assertj.core.api.Assertions.assertThat;

import java.math.BigDecimal;
import java.nio.file.Path;
import java.sql.Timestamp;
import java.util.ArrayList;
import java.util.List;

import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.types.StructType;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import io.tidemark.testing.LocalSpark;

/**
 * The four faces of every measure of pipelines/payments.sql run by Spark on crafted payments: two
 * batches' partials merged give the row one batch of all the records gives (mergeable), and for
 * every measure the stream keeps exactly, that row's value is reconcile's exact recompute.
 */
class MeasureFacesTest {

    private static final Pipeline PAYMENTS = PipelineParser.parse(
            Path.of(System.getProperty("user.dir")).getParent().resolve("pipelines/payments.sql"));

    private static SparkSession spark;

    @BeforeAll
    static void start() {
        spark = LocalSpark.builder("measure-faces-test").getOrCreate();
        StructType schema = new StructType();
        for (Pipeline.Column c : PAYMENTS.events().columns()) {
            schema = schema.add(c.name(), c.type(), !c.notNull());
        }
        List<Row> first = new ArrayList<>();
        List<Row> second = new ArrayList<>();
        String[] statuses = {"approved", "approved", "declined", "refunded", "approved"};
        for (int i = 0; i < 60; i++) {
            // Two merchants in two countries, each pair in both batches (every fifth record in the first); amounts from 0.01 to 599.99, some repeated.
            Row r = RowFactory.create("t" + i, "u" + (i % 17), "m" + (i % 2), i % 3 == 0 ? "FR" : "DE",
                    new BigDecimal(i * 10 + (i % 7)).add(new BigDecimal("0.01").multiply(BigDecimal.valueOf(i % 5 + 1))).setScale(2),
                    statuses[i % statuses.length], Timestamp.valueOf("2026-12-01 10:00:00"));
            (i % 5 == 0 ? first : second).add(r);
        }
        spark.createDataFrame(first, schema).createOrReplaceTempView("batch1");
        spark.createDataFrame(second, schema).createOrReplaceTempView("batch2");
        spark.createDataFrame(first, schema).union(spark.createDataFrame(second, schema)).createOrReplaceTempView("all_rows");
    }

    @AfterAll
    static void stop() {
        spark.stop();
    }

    private static String dims(Pipeline.KpiTable t) {
        return String.join(", ", t.dimensions().stream().map(Pipeline.Column::name).toList());
    }

    /** The stored columns of one batch's records: the partials, grouped by the dimensions. */
    private static String partials(Pipeline.KpiTable t, String view) {
        List<String> aggs = new ArrayList<>();
        t.measures().forEach(m -> m.partial().forEach(p -> aggs.add(p.aliased())));
        return "SELECT " + dims(t) + ", " + String.join(", ", aggs) + " FROM " + view + (t.where() == null ? "" : " WHERE " + t.where())
                + " GROUP BY " + dims(t);
    }

    /** What analysts read, from stored columns. */
    private static List<String> values(Pipeline.KpiTable t, String from) {
        List<String> v = new ArrayList<>();
        t.measures().forEach(m -> v.add(m.value() + " AS " + m.name()));
        return spark.sql("SELECT " + dims(t) + ", " + String.join(", ", v) + " FROM (" + from + ") ORDER BY " + dims(t)).collectAsList()
                .stream().map(Row::toString).toList();
    }

    @Test
    void twoBatchesMergedGiveTheRowOfOneBatchAndTheExactMeasuresTheTruth() {
        for (Pipeline.KpiTable t : PAYMENTS.tables()) {
            List<String> merges = new ArrayList<>();
            t.measures().forEach(m -> m.merge().forEach(p -> merges.add(p.aliased())));
            String on = String.join(" AND ", t.dimensions().stream().map(d -> "s." + d.name() + " = b." + d.name()).toList());
            String merged = "SELECT " + String.join(", ", t.dimensions().stream().map(d -> "s." + d.name()).toList()) + ", "
                    + String.join(", ", merges) + " FROM (" + partials(t, "batch1") + ") s JOIN (" + partials(t, "batch2") + ") b ON " + on;
            List<String> oneBatch = values(t, partials(t, "all_rows"));
            assertThat(oneBatch).as("%s: one row per group", t.name()).hasSize(t.name().equals("merchant_1m") ? 4 : 2);
            assertThat(values(t, merged)).as("%s: two batches merged", t.name()).isEqualTo(oneBatch);

            List<String> exact = new ArrayList<>();
            t.measures().forEach(m -> exact.add((m.exactWhileStreaming() || m.function() instanceof DistinctCount
                    ? m.exact() : m.value().replace(m.name() + "_sketch", "NULL")) + " AS " + m.name()));
            List<String> truth = spark.sql("SELECT " + dims(t) + ", " + String.join(", ", exact) + " FROM all_rows"
                    + (t.where() == null ? "" : " WHERE " + t.where()) + " GROUP BY " + dims(t) + " ORDER BY " + dims(t))
                    .collectAsList().stream().map(Row::toString).toList();
            // The percentile is the one measure whose stream value may differ from the truth: compare the others.
            int p95 = t.measures().stream().map(m -> m.function() instanceof Percentile).toList().indexOf(true);
            int skip = p95 < 0 ? -1 : t.dimensions().size() + p95;
            assertThat(withoutColumn(truth, skip)).as("%s: the exact recompute", t.name()).isEqualTo(withoutColumn(oneBatch, skip));
        }
    }

    @Test
    void theStreamsDriverMergeIsTheSqlMerge() {
        for (Pipeline.KpiTable t : PAYMENTS.tables()) {
            KpiAggregation aggregation = new KpiAggregation(t, PAYMENTS.events().eventTime());
            String on = String.join(" AND ", t.dimensions().stream().map(d -> "s." + d.name() + " = b." + d.name()).toList());
            List<String> merges = new ArrayList<>();
            t.measures().forEach(m -> m.merge().forEach(p -> merges.add(p.aliased())));
            String state = String.join(", ", aggregation.state());
            List<Row> sql = spark.sql("SELECT " + state + " FROM (SELECT " + String.join(", ", t.dimensions().stream().map(d -> "s." + d.name())
                    .toList()) + ", " + String.join(", ", merges) + " FROM (" + partials(t, "batch1") + ") s JOIN (" + partials(t, "batch2")
                    + ") b ON " + on + ") ORDER BY " + dims(t)).collectAsList();
            List<Row> s = spark.sql("SELECT " + state + " FROM (" + partials(t, "batch1") + ") ORDER BY " + dims(t)).collectAsList();
            List<Row> b = spark.sql("SELECT " + state + " FROM (" + partials(t, "batch2") + ") ORDER BY " + dims(t)).collectAsList();
            assertThat(s).as("%s: both batches hold every group", t.name()).hasSameSizeAs(sql).hasSameSizeAs(b);
            for (int i = 0; i < sql.size(); i++) {
                Object[] merged = aggregation.merge(values(s.get(i)), values(b.get(i)));
                Object[] expected = values(sql.get(i));
                for (int c = 0; c < expected.length; c++) {
                    assertThat(merged[c]).as("%s row %d: %s", t.name(), i, aggregation.state().get(c)).isEqualTo(expected[c]);
                }
            }
        }
    }

    @Test
    void whatAPlainBatchJobWritesIsTheExactRecompute() {
        for (Pipeline.KpiTable t : PAYMENTS.tables()) {
            List<String> plain = new ArrayList<>();
            List<String> exact = new ArrayList<>();
            for (Measure m : t.measures()) {
                plain.add("CAST(" + m.writtenExact() + " AS " + m.resultType().sql() + ") AS " + m.name());
                exact.add("CAST(" + m.exact() + " AS " + m.resultType().sql() + ") AS " + m.name());
            }
            String where = t.where() == null ? "" : " WHERE " + t.where();
            String order = " GROUP BY " + dims(t) + " ORDER BY " + dims(t);
            List<String> byPlain = spark.sql("SELECT " + dims(t) + ", " + String.join(", ", plain) + " FROM all_rows" + where + order)
                    .collectAsList().stream().map(Row::toString).toList();
            assertThat(byPlain).as("%s", t.name()).hasSize(t.name().equals("merchant_1m") ? 4 : 2).isEqualTo(
                    spark.sql("SELECT " + dims(t) + ", " + String.join(", ", exact) + " FROM all_rows" + where + order)
                            .collectAsList().stream().map(Row::toString).toList());
        }
        Measure declined = PAYMENTS.table("merchant_1m").orElseThrow().measures().stream().filter(m -> m.name().equals("declined"))
                .findFirst().orElseThrow();
        assertThat(declined.writtenExact()).isEqualTo("count(CASE WHEN status = 'declined' THEN 1 END)");
    }

    private static Object[] values(Row r) {
        Object[] out = new Object[r.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = r.get(i);
        }
        return out;
    }

    @Test
    void theExactPercentileIsAValueOfTheWindowAndTheSketchsQuantileIsNear() {
        Pipeline.KpiTable t = PAYMENTS.table("merchant_1m").orElseThrow();
        Measure p95 = t.measures().stream().filter(m -> m.function() instanceof Percentile).findFirst().orElseThrow();
        Row exact = spark.sql("SELECT " + p95.exact() + " FROM all_rows WHERE merchant_id = 'm0' AND country = 'DE'").first();
        Row sketch = spark.sql("SELECT " + p95.value().replace(p95.name() + "_sketch", "(SELECT " + p95.partial().get(0).sql() + " FROM all_rows WHERE merchant_id = 'm0' AND country = 'DE')")).first();
        List<BigDecimal> amounts = spark.sql("SELECT amount FROM all_rows WHERE merchant_id = 'm0' AND country = 'DE' ORDER BY amount")
                .collectAsList().stream().map(r -> r.getDecimal(0)).toList();
        // The smallest amount with at least 95 % of the window's amounts at or below it, in the column's type.
        assertThat(exact.getDecimal(0)).isEqualByComparingTo(amounts.get((int) Math.ceil(0.95 * amounts.size()) - 1));
        // Below its k of 200 items a KLL sketch holds every value: its quantile is one of them, within one rank of the truth.
        int rank = amounts.indexOf(sketch.getDecimal(0).setScale(2));
        assertThat(rank).as("the sketch's p95 %s among %s", sketch.get(0), amounts).isBetween((int) Math.ceil(0.95 * amounts.size()) - 2,
                (int) Math.ceil(0.95 * amounts.size()));
    }

    private static List<String> withoutColumn(List<String> rows, int column) {
        if (column < 0) {
            return rows;
        }
        return rows.stream().map(r -> {
            List<String> cells = new ArrayList<>(List.of(r.substring(1, r.length() - 1).split(",")));
            cells.remove(column);
            return String.join(",", cells);
        }).toList();
    }
}
