package io.tidemark.reconcile;

import java.math.BigDecimal;
import java.time.LocalDate;
import java.util.List;

/**
 * What reconcile found and did for one day. "Stream" values are the day's KPI rows as they stood
 * before this run (written by the stream, or by an earlier reconcile); "batch" values are the truth
 * recomputed from the raw log.
 *
 * @param windows        (window, dimensions) rows of the truth
 * @param windowsChanged (window, dimensions) rows where the current KPIs and the truth differ in any measure
 * @param measures       each measure's value of the whole day on either side, and the drift rule's verdict
 * @param lateRecords    late records of the day, folded into the truth
 * @param attempts       overwrite attempts (1 unless a concurrent writer conflicted); 0 when nothing was written
 * @param note           anything the operator should know about the day, or null
 */
public record DayOutcome(LocalDate day, Status status, long windows, long windowsChanged, List<MeasureDrift> measures, long lateRecords,
                         int attempts, long durationMs, String note) {

    public DayOutcome {
        measures = List.copyOf(measures);
    }

    /** How a day ended. */
    public enum Status {
        /** The day's KPI partition was replaced by the truth and the drift reported. */
        RECONCILED,
        /** Computed and printed, nothing written ({@code --dry-run}). */
        DRY_RUN,
        /** raw_events holds no record of the day: nothing to recompute, nothing written. */
        NO_DATA
    }

    /**
     * One measure of a KPI table over the day.
     *
     * @param stream   the stream's value (the roll-up of its rows), null when none
     * @param batch    the truth's, null when none
     * @param driftRel (batch - stream) / batch, null when batch is zero or absent
     * @param estimate the stream's value is a sketch's estimate
     * @param over     the drift rule's verdict ({@link io.tidemark.pipeline.DriftRule})
     */
    public record MeasureDrift(String kpi, String measure, BigDecimal stream, BigDecimal batch, Double driftRel, boolean estimate,
                               boolean over, long windowsChanged) {
        /** batch - stream, a missing value counting as 0. */
        public BigDecimal drift() {
            return (batch == null ? BigDecimal.ZERO : batch).subtract(stream == null ? BigDecimal.ZERO : stream);
        }
    }

    static DayOutcome noData(LocalDate day, long kpiRecords, long durationMs) {
        String note = kpiRecords > 0
                ? "the KPI tables count " + kpiRecords + " records for this day but raw_events has none (retention?); its KPI rows were left as they are"
                : null;
        return new DayOutcome(day, Status.NO_DATA, 0, 0, List.of(), 0, 0, durationMs, note);
    }

    /** The measure named {@code name} (of any KPI table). */
    public MeasureDrift measure(String name) {
        return measures.stream().filter(m -> m.measure().equals(name)).findFirst()
                .orElseThrow(() -> new IllegalArgumentException("no measure " + name + " in " + measures));
    }

    /**
     * How a line names the measure: {@code users} when the day's measures are of one KPI table,
     * {@code country_1h.users} when they are of several (two tables may both have a users).
     */
    public String label(MeasureDrift m) {
        return measures.stream().map(MeasureDrift::kpi).distinct().count() > 1 ? m.kpi() + "." + m.measure() : m.measure();
    }

    /** Whether the drift rule found any measure of the day over the threshold. */
    public boolean overThreshold() {
        return measures.stream().anyMatch(MeasureDrift::over);
    }
}
