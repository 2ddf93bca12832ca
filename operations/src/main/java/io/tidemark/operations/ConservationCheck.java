package io.tidemark.operations;

import static org.apache.spark.sql.functions.col;
import static org.apache.spark.sql.functions.expr;
import static org.apache.spark.sql.functions.lit;

import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.List;

import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;

import scala.collection.immutable.Seq;
import scala.jdk.javaapi.CollectionConverters;

import io.tidemark.lakehouse.Lakehouse;
import io.tidemark.lakehouse.Lakehouse.Table;
import io.tidemark.pipeline.KpiAggregation;
import io.tidemark.pipeline.Measure;
import io.tidemark.pipeline.Pipeline;
import io.tidemark.pipeline.TruthKpis;

/**
 * The conservation law (README, guarantees of the speed layer), checked on the tables themselves: every consumed Kafka record is in
 * exactly one of raw_events or dead_letter; every contribution of a raw record to a KPI table's window (the records its WHERE
 * keeps, once per window) is counted in that window or is in late_events, never both, never neither. Each KPI table's rows
 * written by the stream must equal a recomputation from its definition over the contributions the late rule let in; rows of
 * reconciled days ({@code source = 'batch'}) a recomputation over all of that day's contributions.
 */
public final class ConservationCheck {

    /**
     * One KPI table's figures: what it counts (its record count measure) against the recomputation, and the sum it is
     * compared on ({@code measure}: its first sum, else its record count) against the recomputation's.
     */
    public record TableFigures(String table, boolean onePerRecord, long contributions, long counted, long expectedCounted, long late,
                               long foldedIn, String measure, BigDecimal value, BigDecimal expectedValue, long rowsDiffering) {
        /** " - folded into reconciled days N" when reconcile has counted late ones (they are in both counted and late). */
        String folded() {
            return foldedIn == 0 ? "" : String.format(" - late folded into reconciled days %,d", foldedIn);
        }
    }

    /** The figures and every violation found; {@link #holds()} when there is none. */
    public record Report(long consumed, long rawEvents, long deadLetters, long rawLate, long lateEvents, List<TableFigures> tables,
                         long duplicates, List<String> violations) {
        public boolean holds() {
            return violations.isEmpty();
        }

        /** What the first KPI table counts. */
        public long kpiRecords() {
            return tables.get(0).counted();
        }

        /** KPI rows, over every table, that differ from the recomputation. */
        public long kpiRowsDiffering() {
            return tables.stream().mapToLong(TableFigures::rowsDiffering).sum();
        }

        public String summary() {
            StringBuilder sb = new StringBuilder();
            sb.append(String.format("consumed %,d = raw_events %,d + dead_letter %,d%n", consumed, rawEvents, deadLetters));
            for (TableFigures t : tables) {
                if (t.onePerRecord()) {
                    sb.append(String.format("raw_events %,d = counted in %s %,d + late %,d%s (late_events %,d)%n", rawEvents, t.table(), t.counted(),
                            t.late(), t.folded(), lateEvents));
                } else {
                    sb.append(String.format("%s: contributions of raw_events %,d = counted %,d + late %,d%s%n", t.table(), t.contributions(), t.counted(),
                            t.late(), t.folded()));
                }
            }
            for (TableFigures t : tables) {
                sb.append(String.format("%s %s %s, recomputed from raw_events %s; rows differing %,d; duplicates %,d%n", t.table(), t.measure(),
                        t.value(), t.expectedValue(), t.rowsDiffering(), duplicates));
            }
            sb.append(holds() ? "conservation: HOLDS" : "conservation: VIOLATED\n  " + String.join("\n  ", violations));
            return sb.toString();
        }
    }

    private ConservationCheck() {
    }

    /**
     * @param consumedRecords Kafka records the stream consumed (end offsets minus start offsets), or
     *     null to take raw_events + dead_letter as given and check the rest
     */
    public static Report check(SparkSession spark, Lakehouse lakehouse, Long consumedRecords) {
        Pipeline pipeline = lakehouse.pipeline();
        Dataset<Row> raw = lakehouse.read(spark, Table.RAW_EVENTS);
        Dataset<Row> dead = lakehouse.read(spark, Table.DEAD_LETTER);
        Dataset<Row> lateEvents = lakehouse.read(spark, Table.LATE_EVENTS);
        raw.createOrReplaceTempView("cc_raw");
        dead.createOrReplaceTempView("cc_dead");
        lateEvents.createOrReplaceTempView("cc_late");

        Row counts = spark.sql("""
                SELECT (SELECT count(*) FROM cc_raw),
                       (SELECT count(*) FROM cc_dead),
                       (SELECT count(*) FROM cc_raw WHERE is_late),
                       (SELECT count(*) FROM cc_late),
                       (SELECT count(*) - count(DISTINCT kafka_topic, kafka_partition, kafka_offset) FROM cc_raw),
                       (SELECT count(*) - count(DISTINCT kafka_topic, kafka_partition, kafka_offset) FROM cc_dead),
                       (SELECT count(*) - count(DISTINCT kafka_topic, kafka_partition, kafka_offset, kpi, window_start) FROM cc_late),
                       (SELECT count(*) FROM cc_raw r JOIN cc_dead d USING (kafka_topic, kafka_partition, kafka_offset)),
                       (SELECT count(*) FROM (SELECT DISTINCT kafka_topic, kafka_partition, kafka_offset FROM cc_late) l
                            LEFT ANTI JOIN (SELECT * FROM cc_raw WHERE is_late) r USING (kafka_topic, kafka_partition, kafka_offset)),
                       (SELECT count(*) FROM (SELECT * FROM cc_raw WHERE is_late) r LEFT ANTI JOIN cc_late l
                            USING (kafka_topic, kafka_partition, kafka_offset))
                """).first();
        long rawCount = counts.getLong(0);
        long deadCount = counts.getLong(1);
        long rawLate = counts.getLong(2);
        long lateCount = counts.getLong(3);
        long duplicates = counts.getLong(4) + counts.getLong(5) + counts.getLong(6);
        List<String> violations = new ArrayList<>();
        if (counts.getLong(7) > 0) {
            violations.add(counts.getLong(7) + " records are in both raw_events and dead_letter");
        }
        if (counts.getLong(8) > 0 || counts.getLong(9) > 0) {
            violations.add("late_events and the late flag of raw_events disagree: " + counts.getLong(8)
                    + " records in late_events without the late flag in raw_events, " + counts.getLong(9)
                    + " late raw records without a late_events row");
        }
        if (counts.getLong(4) > 0) violations.add(counts.getLong(4) + " duplicate rows in raw_events");
        if (counts.getLong(5) > 0) violations.add(counts.getLong(5) + " duplicate rows in dead_letter");
        if (counts.getLong(6) > 0) violations.add(counts.getLong(6) + " duplicate (record, KPI table, window) rows in late_events");
        long consumed = consumedRecords == null ? rawCount + deadCount : consumedRecords;
        if (rawCount + deadCount != consumed) {
            violations.add("consumed " + consumed + " records but raw_events + dead_letter hold " + (rawCount + deadCount));
        }

        List<TableFigures> tables = new ArrayList<>();
        String first = pipeline.tables().get(0).name();
        for (Pipeline.KpiTable t : pipeline.tables()) {
            TableFigures f = checkTable(spark, lakehouse, pipeline, t, raw, lateEvents.where("coalesce(kpi, '" + first + "') = '" + t.name() + "'"),
                    violations);
            duplicates += lakehouse.read(spark, Table.kpi(t.name())).selectExpr("count(*) - count(DISTINCT window_start" + t.dimensions().stream()
                    .map(d -> ", " + Pipeline.quote(d.name())).reduce("", String::concat) + ")").first().getLong(0);
            tables.add(f);
        }
        return new Report(consumed, rawCount, deadCount, rawLate, lateCount, List.copyOf(tables), duplicates, List.copyOf(violations));
    }

    /**
     * One KPI table against its recomputation: the stream's days from the contributions the late rule let in (those not in
     * late_events), reconciled days ({@code source = 'batch'}) from all of them.
     */
    private static TableFigures checkTable(SparkSession spark, Lakehouse lakehouse, Pipeline pipeline, Pipeline.KpiTable t, Dataset<Row> raw,
                                           Dataset<Row> late, List<String> violations) {
        String name = t.name();
        Dataset<Row> kept = t.where() == null ? raw : raw.where(expr(t.where()));
        Dataset<Row> contributions = KpiAggregation.windowed(kept, pipeline.events().eventTime(), t.window());
        Dataset<Row> lateKeys = late.select("kafka_topic", "kafka_partition", "kafka_offset", "window_start");
        Dataset<Row> onTime = contributions.join(lateKeys, columns("kafka_topic", "kafka_partition", "kafka_offset", "window_start"), "left_anti");
        Dataset<Row> kpi = lakehouse.read(spark, Table.kpi(name));
        Dataset<Row> batchDays = kpi.where(col("source").equalTo(lit("batch"))).select("event_date").distinct();
        Dataset<Row> expected = TruthKpis.ofContributions(onTime, t).join(batchDays, columns("event_date"), "left_anti")
                .unionByName(TruthKpis.ofContributions(contributions, t).join(batchDays, columns("event_date"), "left_semi"));
        kpi.createOrReplaceTempView("cc_kpi");
        expected.createOrReplaceTempView("cc_expected");
        contributions.createOrReplaceTempView("cc_contributions");
        late.createOrReplaceTempView("cc_late_t");
        batchDays.createOrReplaceTempView("cc_batch_days");

        String records = t.recordCount().orElseThrow().name();
        Measure compared = t.headline();
        List<String> keys = new ArrayList<>(List.of("event_date", "window_start"));
        t.dimensions().forEach(d -> keys.add(Pipeline.quote(d.name())));
        List<String> differs = new ArrayList<>(List.of("k.window_end IS DISTINCT FROM e.window_end"));
        for (Measure m : t.measures()) {
            String c = m.name();
            if (m.sketched()) {
                // The stream's sketch is a union of batch sketches, the recomputation's one sketch of the same values: where
                // the sketch has an identity that does not depend on the order it saw them (HLL's registers), the two hold the
                // same; the value is an estimate until reconcile, exact after.
                m.function().orderFreeIdentity("k." + m.sketch()).ifPresent(k -> differs.add(k + " IS DISTINCT FROM "
                        + m.function().orderFreeIdentity("e." + m.sketch()).orElseThrow()));
                differs.add("(k.source = 'batch' AND k." + c + " IS DISTINCT FROM e." + c + ")");
            } else {
                differs.add("k." + c + " IS DISTINCT FROM e." + c);
            }
        }
        String keyNulls = "k." + records + " IS NULL OR e." + records + " IS NULL";
        Row figures = spark.sql("SELECT (SELECT coalesce(sum(" + records + "), 0) FROM cc_kpi),"
                + " (SELECT coalesce(sum(" + records + "), 0) FROM cc_expected),"
                + " (SELECT CAST(coalesce(sum(" + compared.name() + "), 0) AS DECIMAL(38,9)) FROM cc_kpi),"
                + " (SELECT CAST(coalesce(sum(" + compared.name() + "), 0) AS DECIMAL(38,9)) FROM cc_expected),"
                + " (SELECT count(*) FROM cc_kpi k FULL OUTER JOIN cc_expected e USING (" + String.join(", ", keys) + ")"
                + "   WHERE " + keyNulls + " OR " + String.join(" OR ", differs) + "),"
                + " (SELECT count(*) FROM cc_contributions),"
                + " (SELECT count(*) FROM cc_late_t),"
                + " (SELECT count(*) FROM cc_late_t l LEFT SEMI JOIN cc_batch_days b USING (event_date))").first();
        long counted = figures.getLong(0);
        long expectedCounted = figures.getLong(1);
        BigDecimal value = figures.getDecimal(2);
        BigDecimal expectedValue = figures.getDecimal(3);
        long differing = figures.getLong(4);
        long all = figures.getLong(5);
        long lateHere = figures.getLong(6);
        long foldedIn = figures.getLong(7);
        if (counted != expectedCounted) {
            violations.add(name + " counts " + counted + " records, the raw log says " + expectedCounted);
        }
        if (value.compareTo(expectedValue) != 0) {
            violations.add(name + " " + compared.name() + " " + value + " differs from the raw log's " + expectedValue);
        }
        if (differing > 0) {
            violations.add(differing + " " + name + " rows differ from a recomputation from raw_events");
        }
        // Every contribution: counted once in a streaming window, or late (or folded into a reconciled day).
        if (all != counted + lateHere - foldedIn) {
            violations.add((t.window().tumbling() && t.where() == null ? "raw_events " : name + ": contributions of raw_events ") + all
                    + " != counted " + counted + " + late " + lateHere
                    + (foldedIn > 0 ? " - late already folded into reconciled days " + foldedIn : ""));
        }
        return new TableFigures(name, t.window().tumbling() && t.where() == null, all, counted, expectedCounted, lateHere, foldedIn, compared.name(),
                value, expectedValue, differing);
    }

    /** Join columns, as Spark's Java API takes them. */
    private static Seq<String> columns(String... names) {
        return CollectionConverters.asScala(List.of(names)).toSeq();
    }
}
