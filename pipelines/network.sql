-- The network KPI, Tidemark's default pipeline: data volume and distinct subscribers per cell site,
-- in 5-minute windows, from the events of a mobile network.

CREATE TABLE events (
  subscriber_id STRING    NOT NULL,
  cell_site_id  STRING    NOT NULL,
  event_ts      TIMESTAMP NOT NULL,
  volume_gb     DOUBLE    NOT NULL,
  -- A record that fails a check goes to dead_letter with the check's name, upper-cased, as its reason.
  -- blank: nothing but whitespace (tabs and Unicode spaces too, which trim() would keep)
  CONSTRAINT blank_id          CHECK (NOT subscriber_id RLIKE '^\\p{javaWhitespace}*$' AND NOT cell_site_id RLIKE '^\\p{javaWhitespace}*$'),
  CONSTRAINT non_finite_volume CHECK (NOT isnan(volume_gb) AND abs(volume_gb) < double('infinity')),
  CONSTRAINT negative_volume   CHECK (volume_gb >= 0),
  CONSTRAINT volume_too_large  CHECK (volume_gb <= 1e12)
) USING kafka OPTIONS (
  topic 'network-events',
  format 'json',
  event_time 'event_ts',
  lateness '10 minutes'
);

-- The sketch behind the subscriber estimate keeps the column name kpi_5m has always had.
CREATE STREAMING TABLE kpi_5m
TBLPROPERTIES ('subscribers.sketch_column' = 'subscriber_sketch')
AS
SELECT window(event_ts, '5 minutes') AS w,
       cell_site_id,
       count(*) AS record_count,
       -- exact: each volume rounded to 1e-9 GB (one byte), summed as a decimal
       sum(CAST(volume_gb AS DECIMAL(38, 9))) AS total_gb,
       approx_count_distinct(subscriber_id) AS subscribers
FROM STREAM events
GROUP BY window(event_ts, '5 minutes'), cell_site_id;

-- Late records per event day: how many, how much volume, how late (late_by_ms: how long before
-- their arrival their window had closed).
CREATE VIEW late_by_day AS
SELECT event_date,
       count(*) AS late_records,
       CAST(sum(CAST(volume_gb AS DECIMAL(38,9))) AS DECIMAL(38,9)) AS late_gb,
       max(late_by_ms) AS max_late_by_ms,
       avg(late_by_ms) AS avg_late_by_ms
FROM tidemark.late_events
GROUP BY event_date;

-- Late records per cell and event day.
CREATE VIEW late_by_cell_day AS
SELECT event_date, cell_site_id,
       count(*) AS late_records,
       CAST(sum(CAST(volume_gb AS DECIMAL(38,9))) AS DECIMAL(38,9)) AS late_gb,
       max(late_by_ms) AS max_late_by_ms,
       avg(late_by_ms) AS avg_late_by_ms
FROM tidemark.late_events
GROUP BY event_date, cell_site_id;
