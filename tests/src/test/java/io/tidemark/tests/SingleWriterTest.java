package io.tidemark.tests;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.RegisterExtension;

import io.tidemark.generate.GenerationReport;
import io.tidemark.generate.KafkaTrafficProducer;
import io.tidemark.generate.TrafficSpec;
import io.tidemark.lakehouse.Lakehouse;
import io.tidemark.lakehouse.TidemarkConfig;
import io.tidemark.operations.ConservationCheck;
import io.tidemark.stream.StreamingJob;

/**
 * One writer per lakehouse and checkpoint, with real stream JVMs: while a stream runs, a second one
 * on its lakehouse (another checkpoint) or on its checkpoint (another lakehouse) is refused at once
 * with exit code 2, naming the running one; after a kill -9 a restart takes over without waiting
 * and without manual cleanup, and the tables hold every record exactly once.
 */
class SingleWriterTest {
    static SharedInfrastructure infra;

    @RegisterExtension
    static BeforeAllCallback start = (ExtensionContext c) -> infra = SharedInfrastructure.get(c);

    @Test
    void aSecondStreamIsRefusedWhileOneRunsAndAKilledOneIsTakenOverAtOnce() throws Exception {
        Path dir = infra.newDir("single-writer");
        String topic = "single-writer-" + dir.getFileName();
        infra.broker.createTopic(topic, 2);
        TrafficSpec spec = TrafficSpec.builder().topic(topic).count(3_000L).cells(10).subscribers(200)
                .lateFraction(0.02).invalidFraction(0.01).seed(5).eventsPerSecondOfEventTime(5).build();
        GenerationReport produced = new KafkaTrafficProducer(infra.broker.bootstrapServers(), Map.of()).produce(spec, p -> { });
        TidemarkConfig config = infra.config(dir, topic).build();
        List<String> common = List.of("kafka.bootstrap-servers=" + config.bootstrapServers(), "topic=" + topic,
                "stream.max-offsets-per-trigger=500", "stream.trigger=1 second");
        List<String> args = concat(common, "lakehouse=" + config.lakehouseUri(), "stream.checkpoint=" + config.checkpointUri());

        JobProcess running = JobProcess.start(StreamingJob.class, args, Map.of(), dir.resolve("running.log"));
        Path progressLog = Path.of(config.lakehouseUri(), "stream_progress", "_delta_log");
        long deadline = System.currentTimeMillis() + 180_000;
        while (TableChecks.commits(progressLog) < 2 && System.currentTimeMillis() < deadline && running.process.isAlive()) {
            Thread.sleep(200);
        }
        assertThat(running.process.isAlive()).as("the first stream runs\n%s", running.tail()).isTrue();
        String holder = "pid " + running.process.pid() + " on ";

        JobProcess otherCheckpoint = JobProcess.start(StreamingJob.class,
                concat(common, "lakehouse=" + config.lakehouseUri(), "stream.checkpoint=" + dir.resolve("checkpoint-2")),
                Map.of(), dir.resolve("other-checkpoint.log"));
        assertThat(otherCheckpoint.await(180)).as("a second stream on the lakehouse\n%s", otherCheckpoint.tail()).isEqualTo(2);
        assertThat(Files.readString(otherCheckpoint.log))
                .contains("tidemark stream: the lakehouse " + config.lakehouseUri() + " is being written by another stream: " + holder);

        JobProcess otherLakehouse = JobProcess.start(StreamingJob.class,
                concat(common, "lakehouse=" + dir.resolve("lakehouse-2"), "stream.checkpoint=" + config.checkpointUri()),
                Map.of(), dir.resolve("other-lakehouse.log"));
        assertThat(otherLakehouse.await(180)).as("a second stream on the checkpoint\n%s", otherLakehouse.tail()).isEqualTo(2);
        assertThat(Files.readString(otherLakehouse.log))
                .contains("tidemark stream: the checkpoint " + config.checkpointUri() + " is being written by another stream: " + holder);
        assertThat(running.process.isAlive()).isTrue();

        // kill -9: the lease stays behind, naming a process that is gone; the restart takes it over at once.
        running.kill();
        JobProcess restarted = JobProcess.start(StreamingJob.class, concat(args, "--available-now"), Map.of(), dir.resolve("restarted.log"));
        assertThat(restarted.await(300)).as("the restart\n%s", restarted.tail()).isEqualTo(0);

        ConservationCheck.Report report = ConservationCheck.check(infra.spark, Lakehouse.of(config), produced.messages());
        assertThat(report.violations()).isEmpty();
        assertThat(report.duplicates()).isZero();
        assertThat(report.rawEvents()).isEqualTo(produced.valid());
        assertThat(report.deadLetters()).isEqualTo(produced.invalid());
        // A clean stop gives the leases back; the refused starts wrote no lease and no table.
        assertThat(leases(Path.of(config.lakehouseUri()))).isEmpty();
        assertThat(leases(Path.of(config.checkpointUri()))).isEmpty();
        assertThat(dir.resolve("lakehouse-2").resolve("stream_progress")).doesNotExist();
    }

    private static List<String> concat(List<String> head, String... more) {
        List<String> out = new java.util.ArrayList<>(head);
        out.addAll(List.of(more));
        return out;
    }

    private static List<Path> leases(Path guarded) throws Exception {
        Path dir = guarded.resolve(io.tidemark.stream.StreamLease.DIR);
        if (!Files.isDirectory(dir)) {
            return List.of();
        }
        try (var s = Files.list(dir)) {
            return s.filter(p -> p.getFileName().toString().endsWith(".json")).toList();
        }
    }

}
