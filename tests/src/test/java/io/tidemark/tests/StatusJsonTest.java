package io.tidemark.tests;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;

import org.junit.jupiter.api.Test;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.networknt.schema.JsonSchema;
import com.networknt.schema.JsonSchemaFactory;
import com.networknt.schema.SpecVersion;
import com.networknt.schema.ValidationMessage;

import io.tidemark.lakehouse.TidemarkConfig;
import io.tidemark.lakehouse.TidemarkConfig.Key;
import io.tidemark.launcher.Tidemark;
import io.tidemark.stream.StreamingJob;

/**
 * {@code tidemark status --json} after the crafted input of {@link CraftedBatchesTest} (known
 * fates): every document validates against docs/status.schema.json, holds the tables' figures, and
 * its exit code tells healthy, lagging, stalled and not started apart.
 */
class StatusJsonTest extends OnSharedInfrastructure {
    private static final Path DOCS = Path.of(System.getProperty("user.dir")).getParent().resolve("docs");
    private static final ObjectMapper JSON = new ObjectMapper();

    record Status(int code, JsonNode doc, String err) {
    }

    private Path workDir;

    @Test
    void statusJsonHoldsTheTablesFiguresAndItsExitCodeTellsHealth() throws Exception {
        Path dir = infra.newDir("status-json");
        workDir = dir;
        String topic = "status-json-" + dir.getFileName();
        infra.broker.createTopic(topic, 1);

        // Nothing has run yet: not started (5), with the topic's records waiting.
        KafkaFixtures.send(infra.broker.bootstrapServers(), topic, CraftedBatchesTest.messages());
        TidemarkConfig config = infra.config(dir, topic).set(Key.MAX_OFFSETS_PER_TRIGGER, "4").set(Key.TRIGGER, "1 second").build();
        Status before = status(config);
        assertThat(before.code()).as(before.err()).isEqualTo(5);
        assertThat(before.doc().at("/health/state").asText()).isEqualTo("not_started");
        assertThat(before.doc().at("/lag/total").asLong()).isEqualTo(24);
        assertThat(before.doc().get("last_batch").isNull()).isTrue();
        assertThat(before.doc().get("totals").isNull()).isTrue();

        StreamingJob job = new StreamingJob(infra.spark, config, null);
        var query = job.start(false);
        query.processAllAvailable();

        // Drained and just written: healthy (0), every figure as the crafted input decides.
        Status healthy = statusInItsOwnJvm(config, "--stalled-after", "1000");
        assertThat(healthy.code()).as(healthy.err()).isZero();
        JsonNode d = healthy.doc();
        assertThat(d.at("/health/state").asText()).isEqualTo("healthy");
        assertThat(d.at("/health/exit_code").asInt()).isZero();
        assertThat(d.at("/kafka/reachable").asBoolean()).isTrue();
        assertThat(d.at("/kafka/end_offsets")).isEqualTo(JSON.readTree("{\"0\": 24}"));
        assertThat(d.get("lag")).isEqualTo(JSON.readTree("{\"total\": 0, \"partitions\": {\"0\": 0}}"));
        assertThat(d.at("/checkpoint/last_committed_batch").asLong()).isEqualTo(5);
        assertThat(d.at("/last_batch/batch_id").asLong()).isEqualTo(5);
        assertThat(d.at("/last_batch/records_in").asLong()).isEqualTo(4);
        assertThat(d.at("/last_batch/watermark").asText()).isEqualTo("2026-11-28T10:50:00Z");
        assertThat(d.at("/last_batch/next_watermark").asText()).isEqualTo("2026-11-28T10:50:00Z");
        assertThat(d.at("/last_batch/max_event_ts_seen").asText()).isEqualTo("2026-11-28T11:00:00Z");
        // One partition: it leads; its last valid record came in batch 5.
        long batch5 = infra.spark.sql("SELECT unix_millis(batch_ts) FROM delta.`" + config.lakehouseUri() + "/stream_progress` WHERE batch_id = 5")
                .first().getLong(0);
        assertThat(d.at("/last_batch/partitions")).isEqualTo(JSON.readTree("[{\"partition\": 0, \"max_event_ts\": \"2026-11-28T11:00:00Z\", "
                + "\"behind_leading_ms\": 0, \"last_record_batch_ts\": \"" + Instant.ofEpochMilli(batch5) + "\"}]"));
        assertThat(d.at("/throughput/batches").asInt()).isEqualTo(6);
        assertThat(d.at("/throughput/records").asLong()).isEqualTo(24);
        assertThat(d.get("totals")).isEqualTo(JSON.readTree("{\"raw_events\": 20, \"raw_events_late\": 6, \"late_events\": 6, "
                + "\"dead_letter\": 4, \"kpi_rows\": " + d.at("/totals/kpi_rows").asLong() + ", \"kpi_final_rows\": " + d.at("/totals/kpi_final_rows").asLong() + "}"));
        long kpiRows = infra.spark.sql("SELECT count(*) FROM delta.`" + config.lakehouseUri() + "/kpi_5m`").first().getLong(0);
        assertThat(d.at("/totals/kpi_rows").asLong()).isEqualTo(kpiRows);
        // 2026-11-27 is closed and dirty: its on-time record is in kpi_5m, its late one only in raw_events.
        assertThat(d.get("closed_days")).isEqualTo(JSON.readTree("[\"2026-11-27\"]"));
        assertThat(d.get("dirty_days")).isEqualTo(JSON.readTree("[{\"day\": \"2026-11-27\", \"raw_records\": 2, \"kpi_records\": 1}]"));
        assertThat(d.get("gaps")).isEqualTo(JSON.readTree("{\"count\": 0, \"lost_records\": 0, \"unknown_size\": 0}"));
        List<String> tables = new ArrayList<>();
        d.get("tables").forEach(t -> tables.add(t.get("name").asText()));
        assertThat(tables).contains("raw_events", "kpi_5m", "late_events", "dead_letter", "stream_progress");

        // The stream stops; ten more records wait. Over --max-lag 5: lagging (4).
        query.stop();
        job.close();
        KafkaFixtures.send(infra.broker.bootstrapServers(), topic, CraftedBatchesTest.messages().subList(0, 10));
        Status lagging = status(config, "--stalled-after", "1000", "--max-lag", "5");
        assertThat(lagging.code()).as(lagging.err()).isEqualTo(4);
        assertThat(lagging.doc().at("/health/state").asText()).isEqualTo("lagging");
        assertThat(lagging.doc().at("/lag/total").asLong()).isEqualTo(10);

        // No batch for 3 triggers (3 s) while records wait: stalled (3), whatever the lag limit.
        Thread.sleep(Math.max(0, 3_500 - (Instant.now().toEpochMilli() - Instant.parse(d.at("/last_batch/finished_at").asText()).toEpochMilli())));
        Status stalled = status(config, "--stalled-after", "3", "--max-lag", "5");
        assertThat(stalled.code()).as(stalled.err()).isEqualTo(3);
        assertThat(stalled.doc().at("/health/state").asText()).isEqualTo("stalled");
        assertThat(stalled.doc().at("/health/reason").asText()).contains("while 10 records wait in " + topic);

        // Kafka unreachable: lag unknown (null), and after 3 triggers without a batch that is stalled too.
        TidemarkConfig noKafka = infra.config(dir, topic).set(Key.KAFKA_BOOTSTRAP, "127.0.0.1:1").set(Key.TRIGGER, "1 second").build();
        Status blind = status(noKafka, "--stalled-after", "3");
        assertThat(blind.code()).as(blind.err()).isEqualTo(3);
        assertThat(blind.doc().at("/kafka/reachable").asBoolean()).isFalse();
        assertThat(blind.doc().get("lag").isNull()).isTrue();
        assertThat(blind.doc().at("/kafka/topic_exists").isNull()).isTrue();
    }

    /**
     * Runs {@code tidemark status --json} in this JVM with the tests' Spark session (the exit code is
     * {@link Tidemark#run}'s); the document must validate against the schema.
     */
    private Status status(TidemarkConfig config, String... extra) throws Exception {
        java.io.StringWriter out = new java.io.StringWriter();
        java.io.StringWriter err = new java.io.StringWriter();
        int code = Tidemark.run(args(config, extra).toArray(String[]::new), System.getenv(), new java.io.PrintWriter(out),
                new java.io.PrintWriter(err), Tidemark.Sessions.shared(infra.spark));
        return validated(code, out.toString(), err.toString());
    }

    /** As {@link #status}, in a JVM of its own, as a probe would run it: the entry point's exit code and stdout. */
    private Status statusInItsOwnJvm(TidemarkConfig config, String... extra) throws Exception {
        Path out = Files.createTempFile(workDir, "status-", ".json");
        Path err = Files.createTempFile(workDir, "status-", ".log");
        JobProcess p = JobProcess.start(Tidemark.class, args(config, extra), Map.of(), out, err);
        int code = p.await(300);
        return validated(code, Files.readString(out), Files.readString(err));
    }

    private static List<String> args(TidemarkConfig config, String... extra) {
        List<String> args = new ArrayList<>(List.of("status", "--json"));
        args.addAll(List.of(extra));
        for (Key k : List.of(Key.KAFKA_BOOTSTRAP, Key.TOPIC, Key.LAKEHOUSE, Key.CHECKPOINT, Key.TRIGGER)) {
            args.add("--set");
            args.add(k.name + "=" + config.get(k));
        }
        return args;
    }

    private static Status validated(int code, String json, String err) throws Exception {
        JsonNode doc;
        try {
            doc = JSON.readTree(json);
        } catch (IOException e) {
            throw new AssertionError("not JSON on stdout (exit " + code + "): " + json + "\nstderr: " + err, e);
        }
        Set<ValidationMessage> problems = schema().validate(doc);
        assertThat(problems).as("schema violations of %s", json).isEmpty();
        return new Status(code, doc, err);
    }

    private static JsonSchema schema;

    private static synchronized JsonSchema schema() throws Exception {
        if (schema == null) {
            schema = JsonSchemaFactory.getInstance(SpecVersion.VersionFlag.V202012).getSchema(JSON.readTree(DOCS.resolve("status.schema.json").toFile()));
        }
        return schema;
    }
}
