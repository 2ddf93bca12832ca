-- Card payments: per merchant every minute, per country over a sliding hour.

CREATE TABLE payments (
  txn_id      STRING        NOT NULL,
  user_id     STRING        NOT NULL,
  merchant_id STRING        NOT NULL,
  country     STRING        NOT NULL,
  amount      DECIMAL(12,2) NOT NULL,
  status      STRING        NOT NULL,
  ts          TIMESTAMP     NOT NULL,
  CONSTRAINT positive_amount CHECK (amount > 0),
  CONSTRAINT known_status    CHECK (status IN ('approved', 'declined', 'refunded')),
  CONSTRAINT country_code    CHECK (length(country) = 2 AND upper(country) = country)
) USING kafka OPTIONS (
  topic 'payments',
  format 'json',
  event_time 'ts',
  lateness '10 minutes',
  drift_threshold '0.005'
);

CREATE STREAMING TABLE merchant_1m AS
SELECT window(ts, '1 minute') AS w, merchant_id, country,
       count(*) AS txns,
       sum(amount) FILTER (WHERE status = 'approved') AS approved_amount,
       count(*) FILTER (WHERE status = 'declined') AS declined,
       approx_count_distinct(user_id) AS users,
       percentile_approx(amount, 0.95) AS p95_amount,
       max(amount) AS max_amount
FROM STREAM payments
GROUP BY window(ts, '1 minute'), merchant_id, country;

-- Hopping: each payment counts in the four one-hour windows that hold it.
CREATE STREAMING TABLE country_1h AS
SELECT window(ts, '1 hour', '15 minutes') AS w, country,
       count(*) AS txns,
       avg(amount) AS avg_amount,
       min(amount) AS min_amount,
       approx_count_distinct(user_id) AS users
FROM STREAM payments
WHERE status <> 'refunded'
GROUP BY window(ts, '1 hour', '15 minutes'), country;

-- Late payments per event day and country (merchant_1m's windows are tumbling: one late row per payment).
CREATE VIEW late_by_country_day AS
SELECT event_date, country,
       count(*) AS late_payments,
       sum(amount) AS late_amount,
       max(late_by_ms) AS max_late_by_ms
FROM tidemark.late_events
WHERE kpi = 'merchant_1m'
GROUP BY event_date, country;
