package io.tidemark.operations;

import java.math.BigDecimal;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;

import io.tidemark.lakehouse.KpiComputation;
import io.tidemark.lakehouse.Lakehouse;
import io.tidemark.lakehouse.Lakehouse.Table;

/**
 * The conservation law (README, guarantees of the speed layer), checked on the tables themselves: every consumed Kafka record is in
 * exactly one of raw_events or dead_letter; every raw_events record is counted in exactly one KPI
 * window or is in late_events, never both, never neither. KPI rows written by the stream must equal
 * a recomputation from the on-time raw records; rows of reconciled days ({@code source = 'batch'})
 * must equal a recomputation from all of that day's raw records.
 */
public final class ConservationCheck {

    /** The figures and every violation found; {@link #holds()} when there is none. */
    public record Report(long consumed, long rawEvents, long deadLetters, long rawLate, long lateEvents,
                         long kpiRecords, long expectedKpiRecords, BigDecimal kpiGb, BigDecimal expectedKpiGb,
                         long duplicates, long kpiRowsDiffering, List<String> violations) {
        public boolean holds() {
            return violations.isEmpty();
        }

        public String summary() {
            StringBuilder sb = new StringBuilder();
            sb.append(String.format("consumed %,d = raw_events %,d + dead_letter %,d%n", consumed, rawEvents, deadLetters));
            sb.append(String.format("raw_events %,d = counted in kpi_5m %,d + late %,d (late_events %,d)%n",
                    rawEvents, kpiRecords, rawLate, lateEvents));
            sb.append(String.format("kpi_5m total_gb %s, recomputed from raw_events %s; rows differing %,d; duplicates %,d%n",
                    kpiGb, expectedKpiGb, kpiRowsDiffering, duplicates));
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
    public static Report check(SparkSession spark, Lakehouse lakehouse, Duration window, Long consumedRecords) {
        Dataset<Row> raw = lakehouse.read(spark, Table.RAW_EVENTS);
        Dataset<Row> dead = lakehouse.read(spark, Table.DEAD_LETTER);
        Dataset<Row> lateEvents = lakehouse.read(spark, Table.LATE_EVENTS);
        Dataset<Row> kpi = lakehouse.read(spark, lakehouse.kpiTables().get(0));
        raw.createOrReplaceTempView("cc_raw");
        dead.createOrReplaceTempView("cc_dead");
        lateEvents.createOrReplaceTempView("cc_late");
        kpi.createOrReplaceTempView("cc_kpi");
        KpiComputation.exactKpis(raw.filter("NOT is_late"), window).createOrReplaceTempView("cc_expected_stream");
        KpiComputation.exactKpis(raw, window).createOrReplaceTempView("cc_expected_all");

        Row counts = spark.sql("""
                SELECT (SELECT count(*) FROM cc_raw),
                       (SELECT count(*) FROM cc_dead),
                       (SELECT count(*) FROM cc_raw WHERE is_late),
                       (SELECT count(*) FROM cc_late),
                       (SELECT count(*) - count(DISTINCT kafka_topic, kafka_partition, kafka_offset) FROM cc_raw),
                       (SELECT count(*) - count(DISTINCT kafka_topic, kafka_partition, kafka_offset) FROM cc_dead),
                       (SELECT count(*) - count(DISTINCT kafka_topic, kafka_partition, kafka_offset) FROM cc_late),
                       (SELECT count(*) - count(DISTINCT window_start, cell_site_id) FROM cc_kpi),
                       (SELECT count(*) FROM cc_raw r JOIN cc_dead d USING (kafka_topic, kafka_partition, kafka_offset)),
                       (SELECT count(*) FROM cc_late l LEFT ANTI JOIN (SELECT * FROM cc_raw WHERE is_late) r
                            USING (kafka_topic, kafka_partition, kafka_offset)),
                       (SELECT count(*) FROM (SELECT * FROM cc_raw WHERE is_late) r LEFT ANTI JOIN cc_late l
                            USING (kafka_topic, kafka_partition, kafka_offset))
                """).first();
        long rawCount = counts.getLong(0);
        long deadCount = counts.getLong(1);
        long rawLate = counts.getLong(2);
        long lateCount = counts.getLong(3);
        long duplicates = counts.getLong(4) + counts.getLong(5) + counts.getLong(6) + counts.getLong(7);
        List<String> violations = new ArrayList<>();
        if (counts.getLong(8) > 0) {
            violations.add(counts.getLong(8) + " records are in both raw_events and dead_letter");
        }
        if (counts.getLong(9) > 0 || counts.getLong(10) > 0) {
            violations.add("late_events and the late flag of raw_events disagree: " + counts.getLong(9)
                    + " late_events rows without a late raw record, " + counts.getLong(10) + " late raw records without a late_events row");
        }
        if (counts.getLong(4) > 0) violations.add(counts.getLong(4) + " duplicate rows in raw_events");
        if (counts.getLong(5) > 0) violations.add(counts.getLong(5) + " duplicate rows in dead_letter");
        if (counts.getLong(6) > 0) violations.add(counts.getLong(6) + " duplicate rows in late_events");
        if (counts.getLong(7) > 0) violations.add(counts.getLong(7) + " duplicate (window, cell) rows in kpi_5m");
        long consumed = consumedRecords == null ? rawCount + deadCount : consumedRecords;
        if (rawCount + deadCount != consumed) {
            violations.add("consumed " + consumed + " records but raw_events + dead_letter hold " + (rawCount + deadCount));
        }

        // Expected KPI rows: stream days from on-time records, reconciled days from all records.
        Row kpiFigures = spark.sql("""
                WITH batch_days AS (SELECT DISTINCT event_date FROM cc_kpi WHERE source = 'batch'),
                expected AS (
                  SELECT e.* FROM cc_expected_stream e LEFT ANTI JOIN batch_days b USING (event_date)
                  UNION ALL
                  SELECT e.* FROM cc_expected_all e LEFT SEMI JOIN batch_days b USING (event_date)),
                diff AS (
                  SELECT 1 FROM cc_kpi k FULL OUTER JOIN expected e USING (event_date, window_start, cell_site_id)
                  WHERE k.record_count IS NULL OR e.record_count IS NULL
                     OR k.record_count <> e.record_count OR k.total_gb <> e.total_gb
                     OR k.window_end <> e.window_end
                     -- sketches of the same set built in another order may estimate a hair apart: counts and
                     -- volumes must match exactly, the estimate within 1%
                     OR abs(hll_sketch_estimate(k.subscriber_sketch) - hll_sketch_estimate(e.subscriber_sketch))
                        > 0.01 * hll_sketch_estimate(e.subscriber_sketch)
                     OR (k.source = 'batch' AND k.subscribers <> e.subscribers))
                SELECT (SELECT coalesce(sum(record_count), 0) FROM cc_kpi),
                       (SELECT coalesce(sum(record_count), 0) FROM expected),
                       (SELECT coalesce(sum(total_gb), 0) FROM cc_kpi),
                       (SELECT coalesce(sum(total_gb), 0) FROM expected),
                       (SELECT count(*) FROM diff),
                       (SELECT count(*) FROM cc_raw r LEFT SEMI JOIN batch_days b USING (event_date) WHERE r.is_late)
                """).first();
        long kpiRecords = kpiFigures.getLong(0);
        long expectedRecords = kpiFigures.getLong(1);
        BigDecimal kpiGb = kpiFigures.getDecimal(2);
        BigDecimal expectedGb = kpiFigures.getDecimal(3);
        long differing = kpiFigures.getLong(4);
        long lateFoldedIn = kpiFigures.getLong(5);
        if (kpiRecords != expectedRecords) {
            violations.add("kpi_5m counts " + kpiRecords + " records, the raw log says " + expectedRecords);
        }
        if (kpiGb.compareTo(expectedGb) != 0) {
            violations.add("kpi_5m total_gb " + kpiGb + " differs from the raw log's " + expectedGb);
        }
        if (differing > 0) {
            violations.add(differing + " kpi_5m rows differ from a recomputation from raw_events");
        }
        // Every raw record: counted once in a streaming window, or late (or folded into a reconciled day).
        if (rawCount != kpiRecords + rawLate - lateFoldedIn) {
            violations.add("raw_events " + rawCount + " != counted " + kpiRecords + " + late " + rawLate
                    + (lateFoldedIn > 0 ? " - late already folded into reconciled days " + lateFoldedIn : ""));
        }
        return new Report(consumed, rawCount, deadCount, rawLate, lateCount, kpiRecords, expectedRecords, kpiGb, expectedGb,
                duplicates, differing, List.copyOf(violations));
    }
}
