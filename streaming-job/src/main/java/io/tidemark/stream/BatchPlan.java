package io.tidemark.stream;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

import org.apache.spark.sql.Row;

import io.tidemark.lakehouse.Lakehouse.Table;
import io.tidemark.pipeline.Watermark;
import io.tidemark.pipeline.WorkingColumns;
import io.tidemark.late.WatermarkLedger;

/**
 * What one micro-batch writes, decided without I/O from where the stream stands (its watermark
 * ledger, the tables that already hold the batch after a restart, each KPI table's open rows) and
 * what the batch holds (its {@link Summary}). {@link MicroBatchWriter} reads that state at the edge
 * of the batch, asks for the plan ({@link #decide}), then commits it; a test drives {@link #decide}
 * with crafted states and summaries.
 *
 * @param entry the batch's ledger entry: the watermark it ran with, the next one, the partition clocks
 * @param appends the tables the batch appends its rows to, in commit order, without those that hold the batch already
 * @param kpis each KPI table's replacement of the windows it touched or held open, without the tables that hold
 *     the batch already and those with no window open or touched
 * @param gaps the Kafka offsets the batch should have read and did not, for stream_gaps (none with
 *     {@code stream.fail-on-data-loss=true}: the query fails instead)
 */
record BatchPlan(WatermarkLedger.Entry entry, Summary summary, List<Table> appends, List<OpenWindowKpis.Replacement> kpis,
                 List<KafkaGaps.Gap> gaps) {

    /**
     * A batch's one pass ({@link RecordClassifier#summary}), typed: its records per fate, the reasons of
     * the invalid ones, each Kafka partition's newest valid event time, and each KPI table's partial rows
     * (by the table's index in the pipeline).
     */
    record Summary(long onTime, long late, long invalid, Map<String, Long> invalidByReason, Map<Integer, Long> maxEventMsByPartition,
                   List<List<OpenWindowKpis.Partial>> partials) {
        long recordsIn() {
            return onTime + late + invalid;
        }

        /** The summary's rows read once: a row is a count of a fate (and reason) on a partition, or a KPI table's partial row. */
        static Summary of(List<Row> rows, List<OpenWindowKpis> kpis) {
            long onTime = 0;
            long late = 0;
            long invalid = 0;
            Map<String, Long> invalidByReason = new TreeMap<>();
            Map<Integer, Long> maxEventMs = new TreeMap<>();
            List<List<OpenWindowKpis.Partial>> partials = new ArrayList<>();
            kpis.forEach(k -> partials.add(new ArrayList<>()));
            for (Row r : rows) {
                String kind = r.getString(r.fieldIndex(WorkingColumns.KIND));
                if (kind.equals(RecordClassifier.KPI)) {
                    int kpi = r.getInt(r.fieldIndex(WorkingColumns.KPI_INDEX));
                    partials.get(kpi).add(kpis.get(kpi).partial(r));
                    continue;
                }
                long n = r.getLong(r.fieldIndex(WorkingColumns.RECORDS));
                if (!r.isNullAt(r.fieldIndex(WorkingColumns.MAX_EVENT_MS))) {
                    maxEventMs.merge(r.getInt(r.fieldIndex("kafka_partition")), r.getLong(r.fieldIndex(WorkingColumns.MAX_EVENT_MS)), Math::max);
                }
                switch (kind) {
                    case RecordClassifier.ON_TIME -> onTime += n;
                    case RecordClassifier.LATE -> late += n;
                    default -> {
                        invalid += n;
                        invalidByReason.merge(r.getString(r.fieldIndex(WorkingColumns.REASON)), n, Long::sum);
                    }
                }
            }
            return new Summary(onTime, late, invalid, invalidByReason, maxEventMs, partials);
        }
    }

    /**
     * The plan of batch {@code batchId}, which Spark timed at {@code batchTimeMs}. {@code ledger} must be at
     * the batch (it is not advanced here), {@code kpis} the pipeline's KPI tables in order with their open
     * rows read (except those in {@code alreadyCommitted}, which are not planned).
     */
    static BatchPlan decide(WatermarkLedger ledger, Set<Table> alreadyCommitted, List<OpenWindowKpis> kpis, long batchId, long batchTimeMs,
                            Summary summary, List<KafkaGaps.Gap> gaps) {
        WatermarkLedger.Entry entry = ledger.entryFor(batchId, summary.maxEventMsByPartition(), batchTimeMs);
        List<Table> appends = new ArrayList<>();
        if (!gaps.isEmpty()) {
            appends.add(Table.STREAM_GAPS);
        }
        if (summary.onTime() + summary.late() > 0) {
            appends.add(Table.RAW_EVENTS);
        }
        if (summary.late() > 0) {
            appends.add(Table.LATE_EVENTS);
        }
        if (summary.invalid() > 0) {
            appends.add(Table.DEAD_LETTER);
        }
        appends.removeAll(alreadyCommitted);
        boolean watermarkMoved = entry.nextWatermarkMs() > entry.watermarkMs();
        List<OpenWindowKpis.Replacement> replacements = new ArrayList<>();
        for (int i = 0; i < kpis.size(); i++) {
            OpenWindowKpis table = kpis.get(i);
            List<OpenWindowKpis.Partial> partials = summary.partials().get(i);
            if (alreadyCommitted.contains(table.table()) || (partials.isEmpty() && !watermarkMoved)) {
                continue;
            }
            table.plan(partials, batchId, Watermark.ofMillis(entry.nextWatermarkMs())).ifPresent(replacements::add);
        }
        return new BatchPlan(entry, summary, List.copyOf(appends), List.copyOf(replacements), List.copyOf(gaps));
    }

    /** The partial rows the batch gave the KPI tables it replaces windows of (stream_progress's kpi_rows). */
    long kpiRows() {
        return kpis.stream().mapToLong(OpenWindowKpis.Replacement::contributed).sum();
    }
}
