-- Views analysts use, over the registered tidemark.* tables. Temporary views: the catalog is
-- in-memory, so Lakehouse.createAndRegister creates them (after the tables) in every session.
-- Statements are separated by a line holding only ';'.
-- Distinct subscribers of a roll-up come from the union of the windows' sketches: distinct
-- counts do not add up across windows. The union is hll_union(u, u) of u = hll_union_agg(...):
-- the same registers (or coupons) as u, marked out of order, so that its estimate comes from the
-- registers alone (DataSketches' composite estimator) and not from u's HIP accumulator, which
-- depends on the order the sketches were read in. Every reader (Java's KpiComputation
-- .orderFreeUnion, the Python recipe in docs/python.md) spells the union this way.

-- KPI rows the stream will not change again: the watermark has passed their window (or the day
-- was reconciled).
CREATE OR REPLACE TEMPORARY VIEW kpi_final AS
SELECT window_start, window_end, cell_site_id, record_count, total_gb, subscribers, subscriber_sketch,
       source, updated_at, event_date
FROM tidemark.kpi_5m
WHERE is_final
;
-- Hourly roll-up per cell. is_final: every window of the hour is final; reconciled: every one
-- comes from the batch layer.
CREATE OR REPLACE TEMPORARY VIEW kpi_hourly AS
SELECT hour_start, hour_start + INTERVAL 1 HOUR AS hour_end, cell_site_id, record_count, total_gb,
       hll_sketch_estimate(subscriber_sketch) AS subscribers, windows, is_final, reconciled,
       subscriber_sketch, event_date
FROM (
  SELECT date_trunc('HOUR', window_start) AS hour_start, cell_site_id, event_date,
         sum(record_count) AS record_count,
         sum(total_gb) AS total_gb,
         hll_union(hll_union_agg(subscriber_sketch), hll_union_agg(subscriber_sketch)) AS subscriber_sketch,
         count(*) AS windows,
         bool_and(is_final) AS is_final,
         bool_and(source = 'batch') AS reconciled
  FROM tidemark.kpi_5m
  GROUP BY date_trunc('HOUR', window_start), cell_site_id, event_date
)
;
-- Daily roll-up per cell (UTC days).
CREATE OR REPLACE TEMPORARY VIEW kpi_daily AS
SELECT event_date, cell_site_id, record_count, total_gb,
       hll_sketch_estimate(subscriber_sketch) AS subscribers, windows, is_final, reconciled,
       subscriber_sketch
FROM (
  SELECT event_date, cell_site_id,
         sum(record_count) AS record_count,
         sum(total_gb) AS total_gb,
         hll_union(hll_union_agg(subscriber_sketch), hll_union_agg(subscriber_sketch)) AS subscriber_sketch,
         count(*) AS windows,
         bool_and(is_final) AS is_final,
         bool_and(source = 'batch') AS reconciled
  FROM tidemark.kpi_5m
  GROUP BY event_date, cell_site_id
)
;
-- Late records per event day: how many, how much volume, how late (late_by_ms: how long before
-- their arrival their window had closed).
CREATE OR REPLACE TEMPORARY VIEW late_by_day AS
SELECT event_date,
       count(*) AS late_records,
       CAST(sum(CAST(volume_gb AS DECIMAL(38,9))) AS DECIMAL(38,9)) AS late_gb,
       max(late_by_ms) AS max_late_by_ms,
       avg(late_by_ms) AS avg_late_by_ms
FROM tidemark.late_events
GROUP BY event_date
;
-- Late records per cell and event day.
CREATE OR REPLACE TEMPORARY VIEW late_by_cell_day AS
SELECT event_date, cell_site_id,
       count(*) AS late_records,
       CAST(sum(CAST(volume_gb AS DECIMAL(38,9))) AS DECIMAL(38,9)) AS late_gb,
       max(late_by_ms) AS max_late_by_ms,
       avg(late_by_ms) AS avg_late_by_ms
FROM tidemark.late_events
GROUP BY event_date, cell_site_id
;
-- Drift between the stream and the truth per day, from the latest reconcile run of that day
-- (a day reconciled twice shows the second run, whose drift is what arrived in between).
CREATE OR REPLACE TEMPORARY VIEW drift_by_day AS
SELECT event_date, run_id, run_started_at, windows_changed,
       stream_count, batch_count, batch_count - stream_count AS count_drift,
       stream_gb, batch_gb, gb_drift, gb_drift_rel,
       stream_subscribers, batch_subscribers, subscribers_drift, subscribers_drift_rel,
       late_records
FROM (
  SELECT *, row_number() OVER (PARTITION BY event_date ORDER BY run_started_at DESC, run_id DESC) AS run_rank
  FROM tidemark.reconcile_report
  WHERE row_kind = 'summary'
)
WHERE run_rank = 1
;
