package io.tidemark.reconcile;

import static org.apache.spark.sql.functions.col;
import static org.apache.spark.sql.functions.expr;

import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.apache.spark.sql.Column;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.types.NumericType;

import io.tidemark.pipeline.DriftRule;
import io.tidemark.pipeline.Measure;
import io.tidemark.pipeline.Pipeline;
import io.tidemark.pipeline.TruthKpis;
import io.tidemark.pipeline.WorkingColumns;

/**
 * How far a KPI table's current rows are from the truth, measure by measure, derived from the
 * table's definition: the comparison of the two sides window by window, the long rows of
 * {@code reconcile_report} for what changed, and a day's value of each measure on either side.
 * Pure {@code Dataset -> Dataset} functions; {@link ReconcileJob} reads and commits.
 *
 * <p>Values are compared as the table stores them; the report carries them as
 * {@code DECIMAL(38,9)} (exact for counts and for sums of up to 9 decimals), and a value that is
 * not a number (the min of a date, say) as null, though its change is still counted.
 */
final class KpiDrift {
    /** The report's type for every value: counts, sums, averages and estimates alike. */
    static final String VALUE_TYPE = "DECIMAL(38,9)";
    // The comparison's own columns are working columns (WorkingColumns): a dimension may be called changed, or m.
    private static final String STREAM = WorkingColumns.of("s_");
    private static final String BATCH = WorkingColumns.of("b_");
    /** Per measure: whether its value changed ({@link #changed}). */
    private static final String CHANGED = WorkingColumns.of("changed_");
    private static final String CURRENT = WorkingColumns.of("c_");
    private static final String TRUTH = WorkingColumns.of("t_");
    /** Whether the comparison's row is in the truth. */
    static final String IN_TRUTH = WorkingColumns.of("in_truth");
    /** Whether any measure of the comparison's row changed. */
    static final String ANY_CHANGED = WorkingColumns.of("changed");
    /** The comparison's late records of the window. */
    static final String LATE_RECORDS = WorkingColumns.LATE_RECORDS;
    private static final String MEASURE = WorkingColumns.of("m");

    /** The comparison's column: whether measure {@code m}'s value changed. */
    static String changed(Measure m) {
        return CHANGED + m.name();
    }

    private final Pipeline.KpiTable table;

    KpiDrift(Pipeline.KpiTable table) {
        this.table = table;
    }

    private List<String> dimensions() {
        return table.dimensions().stream().map(Pipeline.Column::name).toList();
    }

    /** The value of {@code m} over no record, for a row one side lacks: 0 for what counts or adds up, else null. */
    private static String empty(Measure m) {
        return m.function().empty();
    }

    private static boolean numeric(Measure m) {
        return m.resultType() instanceof NumericType;
    }

    /** {@code column} as the report's value: DECIMAL(38,9), or null for a measure whose value is not a number. */
    private static String asValue(Measure m, String column) {
        return numeric(m) ? "try_cast(" + column + " AS " + VALUE_TYPE + ")" : "CAST(NULL AS " + VALUE_TYPE + ")";
    }

    /**
     * Every (window, dimensions) of the day on either side: {@code window_start}, {@code window_end},
     * the dimensions, per measure the stream's value, the truth and whether they differ
     * ({@link #changed}); then {@link #IN_TRUTH}, {@link #LATE_RECORDS} and {@link #ANY_CHANGED}, all but the window and the
     * dimensions working columns. A row missing on one side holds each measure's value over no record.
     *
     * @param current the day's rows of the table
     * @param truth   {@link TruthKpis#of} for the same day (with {@code late_records})
     */
    Dataset<Row> compare(Dataset<Row> current, Dataset<Row> truth) {
        List<Column> c = new ArrayList<>(List.of(col("window_start").as(CURRENT + "window_start"), col("window_end").as(CURRENT + "window_end")));
        List<Column> t = new ArrayList<>(List.of(col("window_start").as(TRUTH + "window_start"), col("window_end").as(TRUTH + "window_end"),
                col(LATE_RECORDS).as(TRUTH + "late_records")));
        dimensions().forEach(d -> {
            c.add(col(d).as(CURRENT + d));
            t.add(col(d).as(TRUTH + d));
        });
        for (Measure m : table.measures()) {
            c.add(col(m.name()).as(STREAM + m.name()));
            t.add(col(m.name()).as(BATCH + m.name()));
        }
        Column on = col(CURRENT + "window_start").equalTo(col(TRUTH + "window_start"));
        for (String d : dimensions()) {
            on = on.and(col(CURRENT + d).eqNullSafe(col(TRUTH + d)));
        }
        String currentStart = CURRENT + "window_start";
        String truthStart = TRUTH + "window_start";
        List<String> out = new ArrayList<>(List.of("coalesce(" + truthStart + ", " + currentStart + ") AS window_start",
                "coalesce(" + TRUTH + "window_end, " + CURRENT + "window_end) AS window_end"));
        dimensions().forEach(d -> out.add("CASE WHEN " + truthStart + " IS NOT NULL THEN " + Pipeline.quote(TRUTH + d) + " ELSE "
                + Pipeline.quote(CURRENT + d) + " END AS " + Pipeline.quote(d)));
        List<String> changed = new ArrayList<>();
        for (Measure m : table.measures()) {
            String s = "CASE WHEN " + currentStart + " IS NULL THEN " + empty(m) + " ELSE " + STREAM + m.name() + " END";
            String b = "CASE WHEN " + truthStart + " IS NULL THEN " + empty(m) + " ELSE " + BATCH + m.name() + " END";
            out.add(s + " AS " + STREAM + m.name());
            out.add(b + " AS " + BATCH + m.name());
            out.add("NOT ((" + s + ") <=> (" + b + ")) AS " + changed(m));
            changed.add(changed(m));
        }
        out.add(truthStart + " IS NOT NULL AS " + IN_TRUTH);
        out.add("coalesce(" + TRUTH + "late_records, 0L) AS " + LATE_RECORDS);
        Dataset<Row> joined = current.select(c.toArray(Column[]::new)).join(truth.select(t.toArray(Column[]::new)), on, "full_outer")
                .selectExpr(out.toArray(String[]::new));
        return joined.withColumn(ANY_CHANGED, expr(changed.isEmpty() ? "false" : String.join(" OR ", changed)));
    }

    /**
     * The window rows of the report, one per (window, dimensions, measure) whose value changed:
     * {@code kpi}, {@code measure}, {@code window_start}, {@code window_end}, {@code dimensions}
     * (a JSON object of the dimensions' values), {@code stream_value}, {@code batch_value},
     * {@code drift} (batch - stream), {@code drift_rel} ((batch - stream) / batch, null when batch is
     * 0), {@code estimate} (the stream's value is a sketch's) and {@code late_records} (the window's).
     */
    Dataset<Row> windowRows(Dataset<Row> comparison) {
        String dims = dimensions().isEmpty() ? "'{}'" : "to_json(named_struct(" + String.join(", ", dimensions().stream()
                .map(d -> "'" + d + "', " + Pipeline.quote(d)).toList()) + "))";
        List<String> structs = new ArrayList<>();
        for (Measure m : table.measures()) {
            structs.add("named_struct('measure', '" + m.name() + "', 'changed', " + changed(m) + ", 'stream_value', "
                    + asValue(m, STREAM + m.name()) + ", 'batch_value', " + asValue(m, BATCH + m.name()) + ", 'estimate', " + m.sketched() + ")");
        }
        String m = MEASURE;
        return comparison.selectExpr("window_start", "window_end", dims + " AS dimensions", LATE_RECORDS + " AS late_records",
                        "explode(array(" + String.join(", ", structs) + ")) AS " + m)
                .filter(col(m + ".changed"))
                .selectExpr("'" + table.name() + "' AS kpi", m + ".measure AS measure", "window_start", "window_end", "dimensions",
                        m + ".stream_value AS stream_value", m + ".batch_value AS batch_value",
                        // (37,9) - (37,9) fits in (38,9); (38,9) - (38,9) would be rounded to 8 decimals
                        "CAST(CAST(" + m + ".batch_value AS DECIMAL(37,9)) - CAST(coalesce(" + m + ".stream_value, 0) AS DECIMAL(37,9)) AS " + VALUE_TYPE
                                + ") AS drift",
                        DriftRule.relativeSql(m + ".stream_value", m + ".batch_value") + " AS drift_rel",
                        m + ".estimate AS estimate", "late_records");
    }

    /**
     * Each measure's value over a day's rows of the table (its roll-up face, then its value face), as
     * the report carries it; null where the day has no value or the value is not a number. One
     * aggregation.
     */
    Map<String, BigDecimal> dayValues(Dataset<Row> rows) {
        List<String> rollups = new ArrayList<>();
        table.measures().forEach(m -> m.rollup().forEach(r -> rollups.add(r.aliased())));
        Dataset<Row> rolled = rows.selectExpr(rollups.toArray(String[]::new));
        // selectExpr of aggregates over the whole input: one row
        List<String> values = new ArrayList<>();
        for (Measure m : table.measures()) {
            values.add(asValue(m, "(" + m.value() + ")") + " AS `" + m.name() + "`");
        }
        Row r = rolled.selectExpr(values.toArray(String[]::new)).first();
        Map<String, BigDecimal> out = new LinkedHashMap<>();
        for (int i = 0; i < table.measures().size(); i++) {
            out.put(table.measures().get(i).name(), r.isNullAt(i) ? null : r.getDecimal(i));
        }
        return out;
    }
}
