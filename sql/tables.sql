-- Tidemark's Delta tables. ${lakehouse} is replaced by the lakehouse root at start-up;
-- the launcher, both jobs and the tests create and register the tables from this file, and those
-- whose columns the pipeline decides (raw_events, the KPI tables, late_events) from the pipeline
-- (io.tidemark.pipeline.PipelineTables), with the properties below.
-- All times are UTC. Statements are separated by a line holding only ';'.
--
-- The tables the stream writes on every micro-batch (raw_events, kpi_5m, late_events, dead_letter,
-- stream_progress) take about 8,640 commits a day at the default 10 s trigger, so they set three Delta
-- properties explicitly (LakehouseTablesTest checks that the five agree; the stream applies them to
-- tables created before they were declared):
--   delta.checkpointInterval = 10: a writer that lists files (the stream's replacement of kpi_5m's open
--     windows, reconcile, maintain) rebuilds the table state from the last checkpoint plus the commits
--     after it; 10 bounds that replay at 10 small JSON files. Delta's default, kept until bench/run
--     long-haul has measured the alternatives on a quiet machine.
--   delta.logRetentionDuration = 7 days: the log keeps commits this long (Delta deletes older ones when
--     it writes a checkpoint). Delta's default of 30 days would keep ~260,000 commit files per table,
--     and every log listing walks them; 7 days matches the files' retention below, so time travel
--     reaches back the same 7 days for log and data.
--   delta.deletedFileRetentionDuration = 7 days: files a commit removed (the stream's replaced open
--     windows, compaction's inputs) stay on disk, and as tombstones in each checkpoint, this long:
--     what tidemark maintain's vacuum keeps (maintain.vacuum-retention) so a stream replaying a
--     batch, a reconcile in progress or a query on an older version never loses a file it reads.

CREATE DATABASE IF NOT EXISTS tidemark
;
-- Invalid records with the reason they were refused. Partitioned by arrival date.
CREATE TABLE IF NOT EXISTS tidemark.dead_letter (
  reason           STRING    NOT NULL COMMENT 'reason code, see README',
  detail           STRING    NOT NULL,
  raw_bytes        BINARY             COMMENT 'the message bytes (at most max-message-bytes of them)',
  raw_text         STRING             COMMENT 'the message as text when it is valid UTF-8',
  message_bytes    INT       NOT NULL COMMENT 'size of the original message',
  kafka_key        BINARY,
  kafka_topic      STRING    NOT NULL,
  kafka_partition  INT       NOT NULL,
  kafka_offset     BIGINT    NOT NULL,
  batch_id         BIGINT    NOT NULL,
  arrival_ts       TIMESTAMP NOT NULL COMMENT 'Kafka record timestamp',
  arrival_date     DATE      NOT NULL
) USING delta
PARTITIONED BY (arrival_date)
LOCATION '${lakehouse}/dead_letter'
TBLPROPERTIES (
  'delta.checkpointInterval' = '10',
  'delta.logRetentionDuration' = 'interval 7 days',
  'delta.deletedFileRetentionDuration' = 'interval 7 days')
;
-- One row per micro-batch, written after every other table of the batch has committed.
-- Small, so not partitioned.
CREATE TABLE IF NOT EXISTS tidemark.stream_progress (
  batch_id          BIGINT    NOT NULL,
  query_id          STRING    NOT NULL,
  watermark         TIMESTAMP NOT NULL COMMENT 'in force for this batch: a record is late when its window_end <= watermark',
  next_watermark    TIMESTAMP NOT NULL COMMENT 'in force for the next batch; days ending at or before it are closed',
  max_event_ts      TIMESTAMP          COMMENT 'max valid event time in this batch',
  max_event_ts_seen TIMESTAMP          COMMENT 'max valid event time in this and every earlier batch',
  records_in        BIGINT    NOT NULL,
  on_time           BIGINT    NOT NULL,
  late              BIGINT    NOT NULL,
  invalid           BIGINT    NOT NULL,
  kpi_rows          BIGINT    NOT NULL COMMENT '(window, cell) rows the batch wrote',
  started_at        TIMESTAMP NOT NULL,
  finished_at       TIMESTAMP NOT NULL,
  duration_ms       BIGINT    NOT NULL,
  classify_ms       BIGINT    NOT NULL,
  write_ms          BIGINT    NOT NULL,
  freshness_ms      BIGINT             COMMENT 'finished_at - max_event_ts_seen',
  last_closed_day   DATE               COMMENT 'decided by the stream: every UTC day up to this one is closed (its end <= next_watermark); null while none is',
  batch_ts          TIMESTAMP          COMMENT 'the Spark timestamp of the batch (from its offset log): the processing time watermark.idle-timeout is measured in',
  partition_clocks  ARRAY<STRUCT<kafka_partition: INT, max_event_ts: TIMESTAMP, last_record_batch_ts: TIMESTAMP>> COMMENT 'per Kafka partition that has had a valid record: its max valid event time over this and every earlier batch, and the batch_ts of the last batch that gave it one'
) USING delta
LOCATION '${lakehouse}/stream_progress'
TBLPROPERTIES (
  'delta.checkpointInterval' = '10',
  'delta.logRetentionDuration' = 'interval 7 days',
  'delta.deletedFileRetentionDuration' = 'interval 7 days')
;
-- Kafka offsets the stream should have read but could not, one row per gap and partition. Written
-- only with stream.fail-on-data-loss=false (the default stops the stream instead), in the same
-- micro-batch as the data read after the gap. Empty means no record was skipped. Small, not partitioned.
CREATE TABLE IF NOT EXISTS tidemark.stream_gaps (
  batch_id         BIGINT    NOT NULL COMMENT 'micro-batch that should have read the lost offsets',
  topic            STRING    NOT NULL,
  partition        INT       NOT NULL,
  expected_offset  BIGINT    NOT NULL COMMENT 'first offset not seen: where the checkpoint expected to continue',
  resumed_offset   BIGINT             COMMENT 'first offset read after the gap; null when the partition is gone',
  lost_records     BIGINT             COMMENT 'resumed_offset - expected_offset; null when it cannot be known (topic recreated, partition deleted)',
  kind             STRING    NOT NULL COMMENT 'offsets_out_of_range (retention or deleteRecords), topic_recreated (offsets went backwards), partition_deleted, partition_added_late',
  detected_at      TIMESTAMP NOT NULL
) USING delta
LOCATION '${lakehouse}/stream_gaps'
;
-- Drift between the stream's KPIs and the truth, per reconcile run, in long form: one row per
-- measure. Summary rows: one per run, day, KPI table and measure, with the verdict of the one drift
-- rule (DriftRule). Window rows: one per window, dimensions and measure whose value changed.
-- A lakehouse written before the long form keeps its older columns (null in new rows).
CREATE TABLE IF NOT EXISTS tidemark.reconcile_report (
  run_id          STRING    NOT NULL,
  run_started_at  TIMESTAMP NOT NULL,
  row_kind        STRING    NOT NULL COMMENT 'summary or window',
  kpi             STRING             COMMENT 'the KPI table',
  measure         STRING             COMMENT 'the measure, its column in the KPI table',
  window_start    TIMESTAMP,
  window_end      TIMESTAMP,
  dimensions      STRING             COMMENT 'window rows: the values of the dimensions, as a JSON object',
  stream_value    DECIMAL(38,9)      COMMENT 'the value the stream had written (summary rows: of the whole day)',
  batch_value     DECIMAL(38,9)      COMMENT 'the exact value',
  drift           DECIMAL(38,9)      COMMENT 'batch - stream',
  drift_rel       DOUBLE             COMMENT '(batch - stream) / batch; null when batch is 0',
  estimate        BOOLEAN            COMMENT 'the stream value is a sketch estimate: reported, never over the threshold',
  drift_threshold DOUBLE             COMMENT 'summary rows: the drift_threshold of the pipeline',
  over_threshold  BOOLEAN            COMMENT 'summary rows: the verdict of the drift rule',
  late_records    BIGINT             COMMENT 'late records folded in (of the window; summary rows: of the day)',
  windows_changed BIGINT             COMMENT 'summary rows: windows whose value of this measure changed',
  event_date      DATE      NOT NULL COMMENT 'the reconciled day'
) USING delta
PARTITIONED BY (event_date)
LOCATION '${lakehouse}/reconcile_report'
;
-- Days that tidemark maintain deleted from a table under data retention (retention.*-days), one row per
-- table, day and removal, written before the delete commits. A day whose raw_events are listed here can
-- no longer be recomputed: reconcile refuses it and leaves it out of --dirty. Small, not partitioned.
CREATE TABLE IF NOT EXISTS tidemark.expired_days (
  table_name       STRING    NOT NULL,
  day              DATE      NOT NULL COMMENT 'event_date (arrival_date for dead_letter) of the deleted partition',
  rows_removed     BIGINT    NOT NULL COMMENT 'rows of the day when the removal was decided',
  files_removed    BIGINT    NOT NULL,
  retention_days   INT       NOT NULL COMMENT 'the retention.*-days setting that expired it',
  last_closed_day  DATE      NOT NULL COMMENT 'the last closed day it was counted back from',
  removed_at       TIMESTAMP NOT NULL
) USING delta
LOCATION '${lakehouse}/expired_days'
;
