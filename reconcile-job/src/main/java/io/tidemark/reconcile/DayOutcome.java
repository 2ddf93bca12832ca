package io.tidemark.reconcile;

import java.math.BigDecimal;
import java.time.LocalDate;

/**
 * What reconcile found and did for one day. "Stream" figures are the day's KPI rows as they stood
 * before this run (written by the stream, or by an earlier reconcile); "batch" figures are the truth
 * recomputed from the raw log.
 *
 * @param windows        (window, cell) rows of the truth
 * @param windowsChanged (window, cell) rows where the current KPIs and the truth differ
 * @param gbDrift        batchGb - streamGb, exact
 * @param gbDriftRel     gbDrift / batchGb; null when batchGb is zero
 * @param lateRecords    late records of the day, folded into the truth
 * @param attempts       overwrite attempts (1 unless a concurrent writer conflicted); 0 when nothing was written
 * @param note           anything the operator should know about the day, or null
 */
public record DayOutcome(LocalDate day, Status status, long windows, long windowsChanged, long streamRecords, long batchRecords,
                         BigDecimal streamGb, BigDecimal batchGb, BigDecimal gbDrift, Double gbDriftRel, long lateRecords,
                         int attempts, long durationMs, String note) {

    /** How a day ended. */
    public enum Status {
        /** The day's KPI partition was replaced by the truth and the drift reported. */
        RECONCILED,
        /** Computed and printed, nothing written ({@code --dry-run}). */
        DRY_RUN,
        /** raw_events holds no record of the day: nothing to recompute, nothing written. */
        NO_DATA
    }

    static DayOutcome noData(LocalDate day, long kpiRecords, long durationMs) {
        String note = kpiRecords > 0
                ? "kpi_5m counts " + kpiRecords + " records for this day but raw_events has none (retention?); its KPI rows were left as they are"
                : null;
        return new DayOutcome(day, Status.NO_DATA, 0, 0, kpiRecords, 0, BigDecimal.ZERO, BigDecimal.ZERO, BigDecimal.ZERO, null, 0, 0,
                durationMs, note);
    }

    /** batchRecords - streamRecords. */
    public long recordDrift() {
        return batchRecords - streamRecords;
    }
}
