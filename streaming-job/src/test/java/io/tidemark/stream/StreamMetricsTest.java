package io.tidemark.stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import java.io.IOException;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.sql.Date;
import java.sql.Timestamp;
import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.junit.jupiter.api.Test;

import io.tidemark.lakehouse.Lakehouse;
import io.tidemark.lakehouse.StreamProgress;
import io.tidemark.lakehouse.Lakehouse.Table;
import io.tidemark.lakehouse.TidemarkConfig;

/** The metrics endpoint over HTTP, fed the writer's committed batches: exact samples in Prometheus' text format. */
class StreamMetricsTest {

    @Test
    void committedBatchesAddUpInTheCountersAndTheLastOneSetsTheGauges() throws Exception {
        try (StreamMetrics m = StreamMetrics.start(config(freePort()))) {
            m.batchCommitted(progress(7, 10, 6, 1, 3, "2026-11-28T10:20:00Z", "2026-11-28T10:30:00Z", 1_250),
                    Map.of("NOT_JSON", 2L, "EMPTY", 1L), Set.of());
            m.batchCommitted(progress(8, 5, 4, 0, 1, "2026-11-28T10:40:00Z", "2026-11-28T10:50:00Z", 750),
                    Map.of("NOT_JSON", 1L), Set.of(Table.RAW_EVENTS));

            List<String> lines = scrape(m.port());
            assertThat(lines).contains(
                    "tidemark_stream_up 0.0", // no query followed: the writer alone does not make a stream up
                    "tidemark_stream_batches_total 2.0",
                    "tidemark_stream_replayed_batches_total 1.0",
                    "tidemark_stream_records_total{outcome=\"on_time\"} 15.0",
                    "tidemark_stream_records_total{outcome=\"late\"} 1.0",
                    "tidemark_stream_records_total{outcome=\"invalid\"} 4.0",
                    "tidemark_stream_invalid_records_total{reason=\"EMPTY\"} 1.0",
                    "tidemark_stream_invalid_records_total{reason=\"NOT_JSON\"} 3.0",
                    "tidemark_stream_kpi_rows_written_total 10.0",
                    "tidemark_stream_last_batch_id 8.0",
                    "tidemark_stream_watermark_timestamp_seconds " + seconds("2026-11-28T10:40:00Z"),
                    "tidemark_stream_max_event_timestamp_seconds " + seconds("2026-11-28T10:50:00Z"),
                    "tidemark_stream_freshness_seconds 2.5",
                    "tidemark_stream_batch_duration_seconds_bucket{le=\"0.5\"} 0",
                    "tidemark_stream_batch_duration_seconds_bucket{le=\"1.0\"} 1",
                    "tidemark_stream_batch_duration_seconds_bucket{le=\"2.0\"} 2",
                    "tidemark_stream_batch_duration_seconds_count 2",
                    "tidemark_stream_batch_duration_seconds_sum 2.0",
                    "tidemark_stream_last_batch_stage_seconds{stage=\"classify\"} 0.25",
                    "tidemark_stream_last_batch_stage_seconds{stage=\"write\"} 0.5",
                    "tidemark_stream_partition_event_time_seconds{partition=\"0\"} " + seconds("2026-11-28T10:50:00Z"),
                    "tidemark_stream_partition_event_time_seconds{partition=\"1\"} " + seconds("2026-11-28T10:38:00Z"),
                    "tidemark_stream_partition_behind_seconds{partition=\"0\"} 0.0",
                    "tidemark_stream_partition_behind_seconds{partition=\"1\"} 720.0");
            double lag = sample(lines, "tidemark_stream_watermark_lag_seconds");
            assertThat(lag).isCloseTo(Instant.now().getEpochSecond() - seconds("2026-11-28T10:40:00Z"), within(60.0));
        }
    }

    @Test
    void beforeTheFirstBatchThereIsNoLastBatchToAlertOn() throws Exception {
        try (StreamMetrics m = StreamMetrics.start(config(freePort()))) {
            List<String> lines = scrape(m.port());
            assertThat(lines).noneMatch(l -> l.startsWith("tidemark_stream_last_batch_"));
            assertThat(lines).contains("tidemark_stream_batches_total 0.0");
        }
    }

    @Test
    void noWatermarkYetMeansNoLagSample() throws Exception {
        try (StreamMetrics m = StreamMetrics.start(config(freePort()))) {
            m.batchCommitted(progress(0, 2, 0, 0, 2, "1970-01-01T00:00:00Z", null, 100), Map.of("EMPTY", 2L), Set.of());
            List<String> lines = scrape(m.port());
            assertThat(lines).contains("tidemark_stream_watermark_timestamp_seconds 0.0");
            assertThat(lines).noneMatch(l -> l.startsWith("tidemark_stream_watermark_lag_seconds "));
            assertThat(lines).noneMatch(l -> l.startsWith("tidemark_stream_max_event_timestamp_seconds "));
            assertThat(lines).noneMatch(l -> l.startsWith("tidemark_stream_freshness_seconds "));
            assertThat(lines).noneMatch(l -> l.startsWith("tidemark_reconcile_")); // no reconcile read yet: no 0 that looks like a result
            assertThat(lines).contains("tidemark_stream_last_batch_id 0.0");
        }
    }

    @Test
    void aPortInUseIsRefusedWithTheSettingToChange() throws Exception {
        try (ServerSocket taken = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            assertThatThrownBy(() -> StreamMetrics.start(config(taken.getLocalPort())))
                    .isInstanceOf(StreamMetrics.EndpointUnavailableException.class)
                    .hasMessageContaining("cannot listen on 127.0.0.1:" + taken.getLocalPort())
                    .hasMessageContaining("Set metrics.port to a free port, or to 0 for no endpoint");
            assertThat(StreamFailure.explain(new RuntimeException("start failed",
                    new StreamMetrics.EndpointUnavailableException("port taken", null)), config(0))).get()
                    .satisfies(f -> assertThat(f.exitCode()).isEqualTo(2));
        }
    }

    @Test
    void portZeroMeansNoEndpoint() {
        assertThat(StreamMetrics.start(config(0))).isNull();
        assertThatThrownBy(() -> config(70_000)).hasMessageContaining("metrics.port = 70000 is not a port");
    }

    private static TidemarkConfig config(int port) {
        return TidemarkConfig.builder().set(TidemarkConfig.Key.METRICS_PORT, String.valueOf(port)).build();
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        }
    }

    private static double seconds(String instant) {
        return Instant.parse(instant).getEpochSecond();
    }

    private static double sample(List<String> lines, String name) {
        return lines.stream().filter(l -> l.startsWith(name + " ")).map(l -> Double.parseDouble(l.substring(name.length() + 1)))
                .findFirst().orElseThrow(() -> new AssertionError("no sample " + name + " in " + lines));
    }

    private static List<String> scrape(int port) throws Exception {
        HttpResponse<String> r = HttpClient.newHttpClient().send(
                HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/metrics")).build(), HttpResponse.BodyHandlers.ofString());
        assertThat(r.statusCode()).isEqualTo(200);
        return r.body().lines().toList();
    }

    /** A stream_progress row: the writer's record of a committed batch (freshness 2.5 s, classify a third of the batch). */
    private static StreamProgress progress(long batchId, long onTime, long kpiRows, long late, long invalid, String nextWatermark, String maxSeen,
                                long durationMs) {
        Instant end = Instant.parse("2026-11-28T11:00:00Z");
        Map<String, Object> v = new HashMap<>();
        v.put("batch_id", batchId);
        v.put("query_id", "q");
        v.put("watermark", Timestamp.from(Instant.parse(nextWatermark).minusSeconds(600)));
        v.put("next_watermark", Timestamp.from(Instant.parse(nextWatermark)));
        v.put("max_event_ts", maxSeen == null ? null : Timestamp.from(Instant.parse(maxSeen)));
        v.put("max_event_ts_seen", maxSeen == null ? null : Timestamp.from(Instant.parse(maxSeen)));
        v.put("records_in", onTime + late + invalid);
        v.put("on_time", onTime);
        v.put("late", late);
        v.put("invalid", invalid);
        v.put("kpi_rows", kpiRows);
        v.put("started_at", Timestamp.from(end.minusMillis(durationMs)));
        v.put("finished_at", Timestamp.from(end));
        v.put("duration_ms", durationMs);
        v.put("classify_ms", 250L);
        v.put("write_ms", 500L);
        v.put("freshness_ms", maxSeen == null ? null : 2_500L);
        v.put("last_closed_day", (Date) null);
        v.put("batch_ts", Timestamp.from(end.minusMillis(durationMs)));
        // Partition 0 leads with the newest event time seen; partition 1 trails it by 12 minutes.
        List<Row> clocks = maxSeen == null ? List.of() : List.of(
                RowFactory.create(0, Timestamp.from(Instant.parse(maxSeen)), Timestamp.from(end)),
                RowFactory.create(1, Timestamp.from(Instant.parse(maxSeen).minusSeconds(720)), Timestamp.from(end)));
        v.put("partition_clocks", scala.jdk.javaapi.CollectionConverters.asScala(clocks).toSeq());
        return StreamProgress.of(Lakehouse.row(Table.STREAM_PROGRESS, v));
    }
}
