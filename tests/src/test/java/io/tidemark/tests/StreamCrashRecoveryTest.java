package io.tidemark.tests;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.RegisterExtension;

import io.tidemark.generate.GenerationReport;
import io.tidemark.generate.KafkaTrafficProducer;
import io.tidemark.generate.TrafficSpec;
import io.tidemark.launcher.ConservationCheck;
import io.tidemark.lakehouse.Lakehouse;
import io.tidemark.lakehouse.TidemarkConfig;
import io.tidemark.stream.CrashPoint;
import io.tidemark.stream.StreamingJob;

/**
 * The streaming job in its own JVM, killed again and again at different points of a batch and
 * restarted from its checkpoint each time; afterwards conservation holds exactly and no table has
 * a duplicate row.
 */
class StreamCrashRecoveryTest {
    static SharedInfrastructure infra;

    @RegisterExtension
    static BeforeAllCallback start = (ExtensionContext c) -> infra = SharedInfrastructure.get(c);

    @Test
    void conservationHoldsAfterRepeatedKills() throws Exception {
        Path dir = infra.newDir("crash");
        String topic = "crash-" + dir.getFileName();
        infra.broker.createTopic(topic, 2);
        TrafficSpec spec = TrafficSpec.builder().topic(topic).count(12_000L).cells(20).subscribers(500)
                .lateFraction(0.03).invalidFraction(0.01).seed(11).eventsPerSecondOfEventTime(5).build();
        GenerationReport produced = new KafkaTrafficProducer(infra.broker.bootstrapServers(), Map.of()).produce(spec, p -> { });

        TidemarkConfig config = infra.config(dir, topic).set(TidemarkConfig.Key.MAX_OFFSETS_PER_TRIGGER, "1500").build();
        List<String> args = List.of("--available-now",
                "kafka.bootstrap-servers=" + config.bootstrapServers(), "topic=" + topic,
                "lakehouse=" + config.lakehouseUri(), "stream.checkpoint=" + config.checkpointUri(),
                "stream.max-offsets-per-trigger=1500");
        Path log = dir.resolve("stream.log");

        // Halts inside the batch, each at a different point, each in a different batch.
        List<String> crashes = List.of(
                CrashPoint.AFTER_CLASSIFY + "@1",
                CrashPoint.AFTER_RAW_EVENTS + "@2",
                CrashPoint.AFTER_KPI_WRITE + "@3",
                CrashPoint.BEFORE_PROGRESS + "@4",
                CrashPoint.AFTER_PROGRESS + "@5");
        int kills = 0;
        for (String crash : crashes) {
            JobProcess job = JobProcess.start(StreamingJob.class, args, Map.of(CrashPoint.PROPERTY, crash), log);
            assertThat(job.await(300)).as("exit code of the run halted at %s\n%s", crash, job.tail()).isEqualTo(137);
            assertThat(Files.readString(log)).contains("halting at " + crash.replace("@", " of batch "));
            kills++;
        }
        // External SIGKILLs at random moments while batches run.
        Random random = new Random(3);
        Path progressLog = Path.of(config.lakehouseUri(), "stream_progress", "_delta_log");
        for (int i = 0; i < 2; i++) {
            long before = commits(progressLog);
            JobProcess job = JobProcess.start(StreamingJob.class, args, Map.of(), log);
            long deadline = System.currentTimeMillis() + 120_000;
            while (commits(progressLog) < before + 1 && System.currentTimeMillis() < deadline && job.process.isAlive()) {
                Thread.sleep(100);
            }
            Thread.sleep(random.nextInt(4000));
            if (job.process.isAlive()) {
                job.kill();
                kills++;
            }
        }
        JobProcess last = JobProcess.start(StreamingJob.class, args, Map.of(), log);
        assertThat(last.await(600)).as("final run\n%s", last.tail()).isEqualTo(0);

        assertThat(kills).isGreaterThanOrEqualTo(6);
        ConservationCheck.Report report = ConservationCheck.check(infra.spark, Lakehouse.of(config), Duration.ofMinutes(5), produced.messages());
        assertThat(report.violations()).isEmpty();
        assertThat(report.duplicates()).isZero();
        assertThat(report.deadLetters()).isEqualTo(produced.invalid());
        assertThat(report.rawEvents()).isEqualTo(produced.valid());
    }

    private static long commits(Path deltaLog) throws Exception {
        if (!Files.isDirectory(deltaLog)) {
            return 0;
        }
        try (var s = Files.list(deltaLog)) {
            return s.filter(p -> p.getFileName().toString().endsWith(".json")).count();
        }
    }
}
