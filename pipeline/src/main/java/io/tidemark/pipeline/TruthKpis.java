package io.tidemark.pipeline;

import static org.apache.spark.sql.functions.col;
import static org.apache.spark.sql.functions.count;
import static org.apache.spark.sql.functions.expr;
import static org.apache.spark.sql.functions.lit;
import static org.apache.spark.sql.functions.max;
import static org.apache.spark.sql.functions.when;

import java.util.ArrayList;
import java.util.List;

import org.apache.spark.sql.Column;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;


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
     * A distinct count's sketch is the same byte for byte on every run ({@link DistinctCount#exactState}).
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
            aggregates.add(expr(m.exact()).as(m.name()));
            aggregates.addAll(m.function().exactState(m));
        }
        aggregates.add(max(col("ingest_ts")).as("updated_at"));
        aggregates.add(count(when(col("is_late"), 1)).as(WorkingColumns.LATE_RECORDS));
        Column[] k = keys.toArray(Column[]::new);
        Dataset<Row> exact = windowed.repartition(k).sortWithinPartitions(k).groupBy(k)
                .agg(aggregates.get(0), aggregates.subList(1, aggregates.size()).toArray(Column[]::new))
                .withColumn("is_final", lit(true))
                .withColumn("source", lit("batch"));
        List<Column> out = new ArrayList<>();
        for (String name : table.columnNames()) {
            if (!name.equals("stream_batch_id")) {
                out.add(col(name));
            }
        }
        out.add(col(WorkingColumns.LATE_RECORDS));
        return exact.select(out.toArray(Column[]::new));
    }
}
