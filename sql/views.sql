-- Views analysts use, over the registered tidemark.* tables. Temporary views: the catalog is
-- in-memory, so Lakehouse.createAndRegister creates them (after the tables) in every session.
-- Statements are separated by a line holding only ';'.
-- The views of the KPI tables (<table>_final, _hourly, _daily) are generated from the pipeline's
-- definition (io.tidemark.pipeline.KpiViews) and created before these, then the views the
-- pipeline file declares (CREATE VIEW).

-- Late contributions per event day and KPI table: how many (one per record and window that had
-- closed), how late (late_by_ms: how long before their arrival their window had closed). Views over the
-- events' own columns (late volume per cell, say) are declared in the pipeline file.
CREATE OR REPLACE TEMPORARY VIEW late_by_table_day AS
SELECT event_date,
       kpi,
       count(*) AS late_records,
       max(late_by_ms) AS max_late_by_ms,
       avg(late_by_ms) AS avg_late_by_ms
FROM tidemark.late_events
GROUP BY event_date, kpi
;
-- Drift between the stream and the truth per day, KPI table and measure, from the latest reconcile run
-- of that day (a day reconciled twice shows the second run, whose drift is what arrived in between).
-- over_threshold is the verdict of the drift rule, with the pipeline's drift_threshold it used.
CREATE OR REPLACE TEMPORARY VIEW drift_by_day AS
SELECT event_date, kpi, measure, run_id, run_started_at, stream_value, batch_value, drift, drift_rel, estimate,
       drift_threshold, over_threshold, windows_changed, late_records
FROM (
  SELECT *, rank() OVER (PARTITION BY event_date ORDER BY run_started_at DESC, run_id DESC) AS run_rank
  FROM tidemark.reconcile_report
  WHERE row_kind = 'summary' AND measure IS NOT NULL
)
WHERE run_rank = 1
;
