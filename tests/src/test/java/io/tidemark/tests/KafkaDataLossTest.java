package io.tidemark.tests;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.tuple;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.spark.sql.Row;
import org.junit.jupiter.api.Test;

import io.tidemark.lakehouse.Lakehouse;
import io.tidemark.lakehouse.Lakehouse.Table;
import io.tidemark.lakehouse.TidemarkConfig;
import io.tidemark.stream.StreamingJob;

/**
 * Kafka data loss on the real broker: records deleted (Admin.deleteRecords, what retention does)
 * before the stream read them, and the topic deleted and recreated behind the checkpoint's back.
 * By default the stream stops with one clear line and writes nothing for that batch; with
 * stream.fail-on-data-loss=false it goes on and records each gap in stream_gaps.
 */
class KafkaDataLossTest extends OnSharedInfrastructure {
    private static final String RECOVER = "Nothing was written for that batch. To recover: restore the data to the topic and restart; "
            + "or restart with stream.fail-on-data-loss=false to continue past the gap and record it in the stream_gaps table; "
            + "or start over with a new checkpoint and a new lakehouse.";

    @Test
    void recordsDeletedBeforeTheStreamReadThemStopItWithTheOffsets() throws Exception {
        Path dir = infra.newDir("loss-retention");
        String topic = "loss-retention-" + dir.getFileName();
        infra.broker.createTopic(topic, 1);
        TidemarkConfig config = infra.config(dir, topic).build();
        send(topic, 0, "a", 0, 10);
        drain(config);
        send(topic, 0, "a", 10, 20);
        deleteRecordsBefore(topic, 0, 15);
        Map<Table, Integer> before = versions(config);

        // Through the launcher, as an operator runs it: one line on the terminal, Spark's trace in a file.
        JobProcess launcher = JobProcess.start(io.tidemark.launcher.Tidemark.class, launcherArgs(config), Map.of(), dir.resolve("launcher.log"));
        assertThat(launcher.await(300)).as("exit code\n%s", launcher.tail()).isEqualTo(1);

        String terminal = Files.readString(dir.resolve("launcher.log"));
        assertThat(terminal).contains("tidemark stream: failed: Kafka data loss: partition " + topic + "-0: offsets [10, 20) expected by the checkpoint "
                + "are no longer in Kafka (removed by retention or deleteRecords before the stream read them); Kafka now holds offsets [15, 20) of it: "
                + "5 records are lost. " + RECOVER + " (Spark's trace: ");
        assertThat(terminal).doesNotContain("\tat org.apache.spark").doesNotContain("KafkaIllegalStateException");
        java.util.regex.Matcher trace = java.util.regex.Pattern.compile("\\(Spark's trace: (\\S+)\\)").matcher(terminal);
        assertThat(trace.find()).isTrue();
        assertThat(Files.readString(Path.of(trace.group(1)))).contains("KafkaIllegalStateException", "Could not read records in offset [10, 20)",
                "OffsetOutOfRangeException");
        assertThat(versions(config)).isEqualTo(before);
    }

    @Test
    void aRecreatedTopicStopsTheStreamWithTheOffsets() throws Exception {
        Path dir = infra.newDir("loss-recreate");
        String topic = "loss-recreate-" + dir.getFileName();
        infra.broker.createTopic(topic, 1);
        TidemarkConfig config = infra.config(dir, topic).build();
        send(topic, 0, "a", 0, 10);
        drain(config);
        recreate(topic, 1);
        send(topic, 0, "b", 0, 3);
        Map<Table, Integer> before = versions(config);

        // Through StreamingJob.main, as spark-submit runs it: exit code 1 and the one line on stderr.
        JobProcess job = JobProcess.start(StreamingJob.class, jobArgs(config), Map.of(), dir.resolve("job.log"));
        assertThat(job.await(300)).as("exit code\n%s", job.tail()).isEqualTo(1);

        assertThat(Files.readString(dir.resolve("job.log"))).contains("tidemark stream: failed: Kafka data loss: partition " + topic
                + "-0 now ends at offset 3 but the checkpoint expected to continue at offset 10: the topic was deleted and recreated "
                + "(or truncated), and the records from there on are not the ones the checkpoint refers to. " + RECOVER);
        assertThat(versions(config)).isEqualTo(before);
    }

    @Test
    void withFailOnDataLossFalseTheStreamContinuesAndRecordsEachGap() throws Exception {
        Path dir = infra.newDir("loss-continue");
        String topic = "loss-continue-" + dir.getFileName();
        infra.broker.createTopic(topic, 2);
        TidemarkConfig config = infra.config(dir, topic).set(TidemarkConfig.Key.FAIL_ON_DATA_LOSS, "false").build();
        Set<String> survivors = new HashSet<>();
        // batch 0: offsets 0..4 of both partitions
        survivors.addAll(send(topic, 0, "p0a", 0, 5));
        survivors.addAll(send(topic, 1, "p1a", 0, 5));
        drain(config);
        // batch 1: partition 0 loses offsets 5..8 to deleteRecords; partition 1 is whole
        List<String> p0 = send(topic, 0, "p0a", 5, 15);
        survivors.addAll(p0.subList(4, 10));
        survivors.addAll(send(topic, 1, "p1a", 5, 15));
        deleteRecordsBefore(topic, 0, 9);
        drain(config);
        // batch 2: the topic is recreated; its first records are lost without a trace in the offsets
        recreate(topic, 2);
        send(topic, 0, "p0b", 0, 3);
        send(topic, 1, "p1b", 0, 2);
        drain(config);
        // batch 3: what arrives after the gap is read
        survivors.addAll(send(topic, 0, "p0b", 3, 5));
        survivors.addAll(send(topic, 1, "p1b", 2, 3));
        drain(config);

        Lakehouse lakehouse = Lakehouse.of(config);
        List<Row> gaps = infra.spark.sql("SELECT batch_id, topic, partition, expected_offset, resumed_offset, lost_records, kind FROM "
                + lakehouse.ref(Table.STREAM_GAPS) + " ORDER BY batch_id, partition").collectAsList();
        assertThat(gaps).extracting(r -> tuple(r.get(0), r.get(1), r.get(2), r.get(3), r.get(4), r.get(5), r.get(6))).containsExactly(
                tuple(1L, topic, 0, 5L, 9L, 4L, "offsets_out_of_range"),
                tuple(2L, topic, 0, 15L, 3L, null, "topic_recreated"),
                tuple(2L, topic, 1, 15L, 2L, null, "topic_recreated"));
        // Conservation for what survived: every record still in the log after each gap, exactly once.
        List<Row> read = infra.spark.sql("SELECT id, count(*) FROM ("
                + "SELECT get_json_object(payload, '$.subscriber_id') AS id FROM " + lakehouse.ref(Table.RAW_EVENTS)
                + " UNION ALL SELECT get_json_object(raw_text, '$.subscriber_id') FROM " + lakehouse.ref(Table.DEAD_LETTER)
                + ") GROUP BY id").collectAsList();
        Map<String, Long> counts = new LinkedHashMap<>();
        read.forEach(r -> counts.put(r.getString(0), r.getLong(1)));
        assertThat(counts.keySet()).containsExactlyInAnyOrderElementsOf(survivors);
        assertThat(counts.values()).allMatch(n -> n == 1L);
        assertThat(infra.spark.sql("SELECT count(*) FROM " + lakehouse.ref(Table.DEAD_LETTER)).first().getLong(0))
                .isEqualTo(survivors.stream().filter(s -> s.endsWith("-bad")).count());
        assertThat(infra.spark.sql("SELECT max(batch_id) FROM " + lakehouse.ref(Table.STREAM_PROGRESS)).first().getLong(0)).isEqualTo(3L);

        List<String> statusArgs = new ArrayList<>(launcherArgs(config).subList(2, 10));
        statusArgs.add(0, "status");
        // In this JVM with the tests' session (the launcher's entry point in a JVM of its own is the first test's).
        java.io.StringWriter out = new java.io.StringWriter();
        int code = io.tidemark.launcher.Tidemark.run(statusArgs.toArray(String[]::new), System.getenv(), new java.io.PrintWriter(out),
                new java.io.PrintWriter(out), io.tidemark.launcher.Tidemark.Sessions.shared(infra.spark));
        assertThat(code).as("exit code\n%s", out).isEqualTo(0);
        assertThat(out.toString()).contains("gaps        3 Kafka offset gaps skipped (stream.fail-on-data-loss=false): "
                + "4 records lost plus 2 gaps of unknown size; last: batch 2, " + topic + "-1 topic_recreated, expected offset 15, resumed at 2; "
                + "see the stream_gaps table");
    }

    /** Sends records {@code [from, until)} to one partition (every fifth one invalid: a negative volume); returns their ids. */
    private static List<String> send(String topic, int partition, String prefix, int from, int until) throws Exception {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, infra.broker.bootstrapServers());
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
        List<String> ids = new ArrayList<>();
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer())) {
            for (int i = from; i < until; i++) {
                boolean bad = i % 5 == 4;
                String id = prefix + "-" + i + (bad ? "-bad" : "");
                String value = KafkaFixtures.event(id, "c1", java.time.Instant.now().toString(), bad ? -1.0 : 1.0);
                producer.send(new ProducerRecord<>(topic, partition, null, value.getBytes(StandardCharsets.UTF_8))).get();
                ids.add(id);
            }
        }
        return ids;
    }

    private static Admin admin() {
        return Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, infra.broker.bootstrapServers()));
    }

    private static void deleteRecordsBefore(String topic, int partition, long offset) throws Exception {
        try (Admin admin = admin()) {
            admin.deleteRecords(Map.of(new TopicPartition(topic, partition), RecordsToDelete.beforeOffset(offset))).all().get(30, TimeUnit.SECONDS);
        }
    }

    private static void recreate(String topic, int partitions) throws Exception {
        infra.broker.deleteTopic(topic);
        for (int attempt = 0; !infra.broker.createTopic(topic, partitions); attempt++) {
            assertThat(attempt).as("topic %s recreated", topic).isLessThan(50);
            Thread.sleep(200);
        }
    }

    private static void drain(TidemarkConfig config) throws Exception {
        StreamingJob job = new StreamingJob(infra.spark, config, null);
        try {
            job.start(true).awaitTermination();
        } finally {
            job.close();
        }
    }

    private static List<String> jobArgs(TidemarkConfig config) {
        return List.of("--available-now", "kafka.bootstrap-servers=" + config.bootstrapServers(), "topic=" + config.topic(),
                "lakehouse=" + config.lakehouseUri(), "stream.checkpoint=" + config.checkpointUri());
    }

    private static List<String> launcherArgs(TidemarkConfig config) {
        List<String> args = new ArrayList<>(List.of("stream", "--available-now"));
        for (String setting : jobArgs(config).subList(1, 5)) {
            args.add("--set");
            args.add(setting);
        }
        return args;
    }

    /** The latest commit of every table: a batch that wrote nothing leaves them all as they were. */
    private static Map<Table, Integer> versions(TidemarkConfig config) throws Exception {
        Map<Table, Integer> out = new LinkedHashMap<>();
        Lakehouse lakehouse = Lakehouse.of(config);
        for (Table t : lakehouse.tables()) {
            Path log = Path.of(lakehouse.path(t).replaceFirst("^file:", ""), "_delta_log");
            try (var files = Files.list(log)) {
                out.put(t, (int) files.filter(f -> f.getFileName().toString().endsWith(".json")).count());
            } catch (java.nio.file.NoSuchFileException e) {
                out.put(t, -1);
            }
        }
        return out;
    }
}
