package io.tidemark.lakehouse.pipeline;

import static org.apache.spark.sql.functions.col;
import static org.apache.spark.sql.functions.count;
import static org.apache.spark.sql.functions.expr;
import static org.apache.spark.sql.functions.lit;
import static org.apache.spark.sql.functions.max;
import static org.apache.spark.sql.functions.udf;
import static org.apache.spark.sql.functions.when;

import java.util.ArrayList;
import java.util.List;

import org.apache.datasketches.hll.HllSketch;
import org.apache.datasketches.hll.TgtHllType;
import org.apache.spark.sql.Column;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.api.java.UDF1;
import org.apache.spark.sql.expressions.UserDefinedFunction;
import org.apache.spark.sql.types.DataTypes;


/**
 * The exact rows of a KPI table over complete raw data, from its definition (each measure's exact face): the batch layer's
 * answer for a day, which reconcile compares with the current rows and writes, and what the conservation check holds the
 * tables to. Pure {@code Dataset -> Dataset} functions: reading and committing are the jobs'.
 */
public final class TruthKpis {

    private TruthKpis() {
    }

    /**
     * The exact rows of a KPI table over complete raw data (late records included), from its
     * definition: each measure's exact face ({@link Measure#exact}), the state the stream would keep
     * beside it (an avg's sum and count, a sketch), the table's columns in its order but the stream's
     * batch, then the window's late records ({@link WorkingColumns#LATE_RECORDS}); final, {@code source = 'batch'}, {@code updated_at} the ingest
     * time of the newest record counted.
     *
     * <p>A distinct count's sketch is built from the window's distinct values fed once each in sorted
     * order ({@link #SORTED_HLL}): a sketch's bytes (and, past a few hundred values, even its estimate)
     * depend on the order it saw its input, and a grouped aggregation's order on how tasks and shuffle
     * blocks happened to line up; fed in sorted order it is the same byte for byte on every run, and it
     * is the sketch {@code hll_sketch_agg} builds from that sorted input (TruthKpisTest).
     */
    public static Dataset<Row> of(Dataset<Row> rawEvents, Pipeline.KpiTable table, String eventTime) {
        Dataset<Row> in = table.where() == null ? rawEvents : rawEvents.filter(expr(table.where()));
        return ofContributions(KpiAggregation.windowed(in, eventTime, table.window()), table);
    }

    /**
     * {@link #of} over contributions: records the table's WHERE keeps, each with one of its windows
     * ({@link KpiAggregation#windowed}), such as those the late rule let into the stream.
     */
    public static Dataset<Row> ofContributions(Dataset<Row> windowed, Pipeline.KpiTable table) {
        List<Column> keys = new ArrayList<>();
        KpiAggregation.WINDOW_COLUMNS.forEach(c -> keys.add(col(c)));
        table.dimensions().forEach(d -> keys.add(col(d.name())));
        List<Column> aggregates = new ArrayList<>();
        for (Measure m : table.measures()) {
            for (String stored : m.storedColumns()) {
                String name = stored.substring(0, stored.indexOf(' '));
                if (name.equals(m.name())) {
                    aggregates.add(expr(m.exact()).as(name));
                } else if (m.kind() == Measure.Kind.APPROX_COUNT_DISTINCT) {
                    aggregates.add(SORTED_HLL.apply(expr(m.distinctValues())).as(name));
                } else {
                    String partial = m.partial().stream().filter(p -> p.endsWith(" AS " + name)).findFirst().orElseThrow();
                    aggregates.add(expr(partial.substring(0, partial.length() - (" AS " + name).length())).as(name));
                }
            }
        }
        aggregates.add(max(col("ingest_ts")).as("updated_at"));
        aggregates.add(count(when(col("is_late"), 1)).as(WorkingColumns.LATE_RECORDS));
        Column[] k = keys.toArray(Column[]::new);
        Dataset<Row> exact = windowed.repartition(k).sortWithinPartitions(k).groupBy(k)
                .agg(aggregates.get(0), aggregates.subList(1, aggregates.size()).toArray(Column[]::new))
                .withColumn("is_final", lit(true))
                .withColumn("source", lit("batch"));
        List<Column> out = new ArrayList<>();
        for (String c : table.columns()) {
            String name = c.substring(0, c.indexOf(' '));
            if (!name.equals("stream_batch_id")) {
                out.add(col(name));
            }
        }
        out.add(col(WorkingColumns.LATE_RECORDS));
        return exact.select(out.toArray(Column[]::new));
    }

    /**
     * A distinct count's sketch from the window's distinct values, sorted: an HLL_8 sketch of lgK
     * {@link Measure#HLL_LG_K} updated with each once, in order, as {@code hll_sketch_agg} updates it
     * (a string by its UTF-8 bytes, a whole number as a long, binary as its bytes).
     */
    static final UserDefinedFunction SORTED_HLL = udf((UDF1<scala.collection.Seq<Object>, byte[]>) values -> {
        HllSketch sketch = new HllSketch(Measure.HLL_LG_K, TgtHllType.HLL_8);
        scala.collection.Iterator<Object> it = values.iterator();
        while (it.hasNext()) {
            Object v = it.next();
            if (v instanceof String s) {
                sketch.update(s);
            } else if (v instanceof byte[] b) {
                sketch.update(b);
            } else if (v instanceof Number n) {
                sketch.update(n.longValue());
            } else if (v != null) {
                throw new IllegalArgumentException("no sketch of a " + v.getClass().getSimpleName());
            }
        }
        return sketch.toUpdatableByteArray();
    }, DataTypes.BinaryType);
}
