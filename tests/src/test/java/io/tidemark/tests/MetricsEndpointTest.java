package io.tidemark.tests;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.TreeMap;

import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.StreamingQuery;
import org.junit.jupiter.api.Test;

import com.fasterxml.jackson.databind.JsonNode;

import io.tidemark.lakehouse.Lakehouse;
import io.tidemark.lakehouse.TidemarkConfig;
import io.tidemark.lakehouse.TidemarkConfig.Key;
import io.tidemark.reconcile.DaySelection;
import io.tidemark.reconcile.ReconcileJob;
import io.tidemark.stream.StreamMetrics;
import io.tidemark.stream.StreamingJob;

/**
 * The stream's metrics endpoint scraped by a real Prometheus server: after the crafted input of
 * {@link CraftedBatchesTest} (known fates) and a reconcile of its closed day, the counters and
 * gauges Prometheus holds equal the tables, and the alert rules load and evaluate.
 */
class MetricsEndpointTest extends OnSharedInfrastructure {
    private static final Path OPS = Path.of(System.getProperty("user.dir")).getParent().resolve("ops");
    private static final Duration PATIENCE = Duration.ofSeconds(90);

    @Test
    void prometheusScrapesCountersThatEqualTheTables() throws Exception {
        Path dir = infra.newDir("metrics");
        String topic = "metrics-" + dir.getFileName();
        infra.broker.createTopic(topic, 1);
        KafkaFixtures.send(infra.broker.bootstrapServers(), topic, CraftedBatchesTest.messages());
        int port = PrometheusServer.freePort();
        TidemarkConfig config = infra.config(dir, topic)
                .set(Key.MAX_OFFSETS_PER_TRIGGER, "4")
                .set(Key.TRIGGER, "1 second")
                .set(Key.METRICS_PORT, String.valueOf(port))
                .build();
        SparkSession spark = infra.spark;
        Lakehouse lakehouse = Lakehouse.of(config);
        StreamingJob job = new StreamingJob(spark, config, null);
        try (PrometheusServer prometheus = PrometheusServer.start(dir.resolve("prometheus"), "127.0.0.1:" + port,
                OPS.resolve("prometheus-rules.yml"))) {
            StreamingQuery query = job.start(false);
            assertThat(job.metricsPort()).contains(port);
            query.processAllAvailable();
            new ReconcileJob(spark, config, new PrintStream(OutputStream.nullOutputStream())).run(DaySelection.recent(3), false);

            // Six batches of four records (CraftedBatchesTest has the fate of each).
            prometheus.await("tidemark_stream_batches_total", 6, PATIENCE);
            Map<String, Long> outcomes = counts(spark, "SELECT 'on_time', count_if(NOT is_late) FROM " + lakehouse.ref(Lakehouse.Table.RAW_EVENTS)
                    + " UNION ALL SELECT 'late', count(*) FROM " + lakehouse.ref(Lakehouse.Table.LATE_EVENTS)
                    + " UNION ALL SELECT 'invalid', count(*) FROM " + lakehouse.ref(Lakehouse.Table.DEAD_LETTER));
            assertThat(outcomes).isEqualTo(Map.of("on_time", 14L, "late", 6L, "invalid", 4L));
            assertThat(prometheus.byLabel("tidemark_stream_records_total", "outcome")).isEqualTo(asDoubles(outcomes));
            Map<String, Long> reasons = counts(spark, "SELECT reason, count(*) FROM " + lakehouse.ref(Lakehouse.Table.DEAD_LETTER) + " GROUP BY reason");
            assertThat(reasons).isEqualTo(Map.of("EMPTY", 1L, "FUTURE_EVENT_TIME", 1L, "NOT_JSON", 1L, "NULL_FIELD", 1L));
            assertThat(prometheus.byLabel("tidemark_stream_invalid_records_total", "reason")).isEqualTo(asDoubles(reasons));

            Row last = spark.sql("SELECT batch_id, unix_millis(next_watermark), unix_millis(max_event_ts_seen), freshness_ms, "
                    + "(SELECT sum(kpi_rows) FROM " + lakehouse.ref(Lakehouse.Table.STREAM_PROGRESS) + ") FROM "
                    + lakehouse.ref(Lakehouse.Table.STREAM_PROGRESS) + " ORDER BY batch_id DESC LIMIT 1").first();
            assertThat(last.getLong(0)).isEqualTo(5);
            assertThat(prometheus.value("tidemark_stream_last_batch_id")).isEqualTo(5.0);
            assertThat(prometheus.value("tidemark_stream_kpi_rows_written_total")).isEqualTo((double) last.getLong(4));
            assertThat(last.getLong(1)).isEqualTo(Instant.parse("2026-11-28T10:50:00Z").toEpochMilli());
            assertThat(prometheus.value("tidemark_stream_watermark_timestamp_seconds")).isEqualTo(last.getLong(1) / 1000.0);
            assertThat(prometheus.value("tidemark_stream_max_event_timestamp_seconds")).isEqualTo(last.getLong(2) / 1000.0);
            assertThat(prometheus.value("tidemark_stream_freshness_seconds")).isEqualTo(last.getLong(3) / 1000.0);
            assertThat(prometheus.value("tidemark_stream_watermark_lag_seconds"))
                    .isCloseTo(Instant.now().getEpochSecond() - last.getLong(1) / 1000.0, within(120.0));
            assertThat(prometheus.value("tidemark_stream_batch_duration_seconds_count")).isEqualTo(6.0);
            assertThat(prometheus.value("tidemark_stream_replayed_batches_total")).isEqualTo(0.0);
            // Everything read: no record behind the last batch on the topic's one partition.
            prometheus.await("count(tidemark_stream_kafka_lag_records{topic=\"" + topic + "\"})", 1, PATIENCE);
            assertThat(prometheus.byLabel("tidemark_stream_kafka_lag_records", "partition")).isEqualTo(Map.of("0", 0.0));
            // Skew: the topic's one partition leads itself.
            assertThat(prometheus.byLabel("tidemark_stream_partition_event_time_seconds", "partition")).isEqualTo(Map.of("0", last.getLong(2) / 1000.0));
            assertThat(prometheus.byLabel("tidemark_stream_partition_behind_seconds", "partition")).isEqualTo(Map.of("0", 0.0));
            assertThat(prometheus.query("tidemark_stream_last_batch_stage_seconds{stage=\"triggerExecution\"}")).hasSize(1);
            assertThat(prometheus.value("tidemark_stream_up")).isEqualTo(1.0);

            // The reconcile of 2026-11-27: its one on-time record (0.25 GB) plus the late one (9 GB) that
            // the stream could not fold in; read back from reconcile_report by the stream.
            prometheus.await("tidemark_reconcile_last_run_days", summaryDays(spark, lakehouse), PATIENCE);
            Row drift = spark.sql("SELECT max(CASE WHEN measure = 'total_gb' THEN abs(drift_rel) END), "
                    + "max(CASE WHEN measure = 'subscribers' THEN abs(drift_rel) END), "
                    + "sum(CASE WHEN measure = 'total_gb' THEN windows_changed END), max(late_records), "
                    + "max(CASE WHEN measure = 'total_gb' AND over_threshold THEN 1.0 ELSE 0.0 END), "
                    + "max(CASE WHEN measure = 'subscribers' AND over_threshold THEN 1.0 ELSE 0.0 END), max(drift_threshold) FROM "
                    + lakehouse.ref(Lakehouse.Table.RECONCILE_REPORT) + " WHERE row_kind = 'summary'").first();
            assertThat(drift.getDouble(0)).isCloseTo(9.0 / 9.25, within(1e-12));
            assertThat(prometheus.value("tidemark_reconcile_drift_ratio{kpi=\"kpi_5m\", measure=\"total_gb\"}")).isEqualTo(drift.getDouble(0));
            assertThat(prometheus.value("tidemark_reconcile_drift_ratio{kpi=\"kpi_5m\", measure=\"subscribers\"}")).isEqualTo(drift.getDouble(1));
            assertThat(prometheus.value("tidemark_reconcile_windows_changed{kpi=\"kpi_5m\", measure=\"total_gb\"}"))
                    .isEqualTo((double) drift.getLong(2));
            assertThat(prometheus.value("tidemark_reconcile_late_records")).isEqualTo((double) drift.getLong(3));
            // the drift rule's verdict, as reconcile wrote it: the volume over the threshold, the estimate never
            assertThat(drift.getDecimal(4).doubleValue()).isEqualTo(1.0);
            assertThat(prometheus.value("tidemark_reconcile_over_threshold{kpi=\"kpi_5m\", measure=\"total_gb\"}")).isEqualTo(1.0);
            assertThat(prometheus.value("tidemark_reconcile_over_threshold{kpi=\"kpi_5m\", measure=\"subscribers\"}")).isEqualTo(0.0);
            assertThat(prometheus.value("tidemark_reconcile_drift_threshold{kpi=\"kpi_5m\"}")).isEqualTo(drift.getDouble(6)).isEqualTo(0.01);
            assertThat(prometheus.query("tidemark_reconcile_drift_ratio")).hasSize(3);

            // The rules file loads and every rule evaluates against the live series without error; the
            // drift above 1 % fires (no hold time), nothing else has reason to.
            JsonNode groups = prometheus.ruleGroups();
            Map<String, String> health = new TreeMap<>();
            for (JsonNode g : groups) {
                for (JsonNode r : g.path("rules")) {
                    health.put(r.path("name").asText(), r.path("health").asText());
                }
            }
            assertThat(health).containsOnlyKeys("TidemarkStreamDown", "TidemarkStreamStalled", "TidemarkKafkaLagGrowing",
                    "TidemarkKafkaOutputBehind", "TidemarkFreshnessHigh", "TidemarkLateFractionSpike", "TidemarkInvalidFractionSpike",
                    "TidemarkReconcileDriftHigh", "TidemarkReconcileMissing");
            assertThat(health.values()).containsOnly("ok");
            awaitState(prometheus, "TidemarkReconcileDriftHigh", "firing");
            assertThat(prometheus.activeTargets().get(0).path("health").asText()).isEqualTo("up");

            // Every panel of the Grafana dashboard is a query this Prometheus answers with data.
            JsonNode dashboard = new com.fasterxml.jackson.databind.ObjectMapper().readTree(OPS.resolve("grafana-dashboard.json").toFile());
            Map<String, Integer> seriesPerPanel = new TreeMap<>();
            for (JsonNode panel : dashboard.path("panels")) {
                for (JsonNode target : panel.path("targets")) {
                    String expr = target.path("expr").asText().replace("$job", "tidemark-stream").replace("$instance", ".*")
                            .replace("$__rate_interval", "5m").replace("$__range", "5m");
                    seriesPerPanel.merge(panel.path("title").asText(), prometheus.query(expr).size(), Math::min);
                }
            }
            assertThat(seriesPerPanel).hasSize(16);
            assertThat(seriesPerPanel).allSatisfy((title, series) -> assertThat(series).as(title).isPositive());

            // A stopped query reports itself down while the process (and its endpoint) lives on.
            query.stop();
            prometheus.await("tidemark_stream_up", 0, PATIENCE);
        } finally {
            // A failed assertion above leaves the query running in the shared session, where the next test's could not start.
            for (StreamingQuery active : spark.streams().active()) {
                active.stop();
            }
            job.close();
        }
    }

    @Test
    void aSecondStreamOnTheSamePortIsRefusedBeforeItReadsAnything() throws Exception {
        Path dir = infra.newDir("metrics-port");
        String topic = "metrics-port-" + dir.getFileName();
        infra.broker.createTopic(topic, 1);
        int port = PrometheusServer.freePort();
        TidemarkConfig first = infra.config(dir.resolve("a"), topic).set(Key.METRICS_PORT, String.valueOf(port)).build();
        TidemarkConfig second = infra.config(dir.resolve("b"), topic).set(Key.METRICS_PORT, String.valueOf(port)).build();
        StreamingJob running = new StreamingJob(infra.spark, first, null);
        StreamingQuery q = running.start(false);
        try {
            StreamingJob other = new StreamingJob(infra.spark, second, null);
            assertThatThrownBy(() -> other.start(false))
                    .isInstanceOf(StreamMetrics.EndpointUnavailableException.class)
                    .hasMessageContaining("127.0.0.1:" + port)
                    .hasMessageContaining("Set metrics.port to a free port, or to 0 for no endpoint");
        } finally {
            q.stop();
            running.close();
        }
        // The refused start gave its leases back and wrote nothing: the same lakehouse and checkpoint start now.
        assertThat(dir.resolve("b").resolve("lakehouse").resolve("raw_events")).doesNotExist();
        StreamingJob again = new StreamingJob(infra.spark, second, null);
        StreamingQuery q2 = again.start(false);
        assertThat(again.metricsPort()).contains(port);
        q2.stop();
        again.close();
    }

    @Test
    void theRulesFilePassesPromtoolsCheckAndItsUnitTests() throws Exception {
        Map.Entry<Integer, String> check = PrometheusServer.promtool(OPS, "check", "rules", "prometheus-rules.yml");
        assertThat(check.getValue()).contains("SUCCESS: 9 rules found");
        assertThat(check.getKey()).isZero();
        Map.Entry<Integer, String> test = PrometheusServer.promtool(OPS, "test", "rules", "prometheus-rules-test.yml");
        assertThat(test.getValue()).contains("SUCCESS");
        assertThat(test.getKey()).isZero();
    }

    private static void awaitState(PrometheusServer prometheus, String alert, String expected) throws Exception {
        Instant deadline = Instant.now().plus(PATIENCE);
        String now = "";
        while (Instant.now().isBefore(deadline)) {
            for (JsonNode g : prometheus.ruleGroups()) {
                for (JsonNode r : g.path("rules")) {
                    if (r.path("name").asText().equals(alert)) {
                        now = r.path("state").asText();
                    }
                }
            }
            if (now.equals(expected)) {
                return;
            }
            Thread.sleep(500);
        }
        throw new AssertionError(alert + " is " + now + ", not " + expected + ", after " + PATIENCE.toSeconds() + " s");
    }

    private static long summaryDays(SparkSession spark, Lakehouse lakehouse) {
        return spark.sql("SELECT count(DISTINCT event_date) FROM " + lakehouse.ref(Lakehouse.Table.RECONCILE_REPORT) + " WHERE row_kind = 'summary'")
                .first().getLong(0);
    }

    private static Map<String, Long> counts(SparkSession spark, String sql) {
        Map<String, Long> out = new TreeMap<>();
        for (Row r : spark.sql(sql).collectAsList()) {
            out.put(r.getString(0), r.getLong(1));
        }
        return out;
    }

    private static Map<String, Double> asDoubles(Map<String, Long> m) {
        Map<String, Double> out = new TreeMap<>();
        m.forEach((k, v) -> out.put(k, v.doubleValue()));
        return out;
    }
}
