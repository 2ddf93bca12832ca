package io.tidemark.tests;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.junit.jupiter.api.Test;

import io.tidemark.generate.GenerationReport;
import io.tidemark.generate.KafkaTrafficProducer;
import io.tidemark.generate.TrafficSpec;
import io.tidemark.lakehouse.Lakehouse;
import io.tidemark.lakehouse.TidemarkConfig;
import io.tidemark.operations.ConservationCheck;
import io.tidemark.stream.StreamLease;
import io.tidemark.stream.StreamingJob;

/**
 * One writer per lakehouse and checkpoint, with real stream JVMs, on a real S3 server (the lease's
 * local-disk promises are StreamLeaseTest's): of two streams started at the same moment on one
 * lakehouse and checkpoint exactly one runs, the other is refused with exit code 2 naming it; while
 * it runs, a stream on its lakehouse (another checkpoint) or on its checkpoint (another lakehouse)
 * is refused too; the S3 server stopped for 60 s under it is ridden out or ends the stream with one
 * line and an exit code, and a restart resumes; after a kill -9 a restart takes over without waiting
 * and without manual cleanup, and the tables hold every record exactly once.
 */
class SingleWriterTest extends OnSharedInfrastructure {
    @Test
    void ofTwoStreamsStartedAtOnceOneRunsOthersAreRefusedAndAKilledOneIsTakenOverAtOnce() throws Exception {
        Path dir = infra.newDir("single-writer");
        try (S3Server s3 = S3Server.start(dir.resolve("s3"))) {
            s3.configure(infra.spark);
            String topic = "single-writer-" + dir.getFileName();
            infra.broker.createTopic(topic, 2);
            TrafficSpec spec = TrafficSpec.builder().topic(topic).count(3_000L).cells(10).subscribers(200)
                    .lateFraction(0.02).invalidFraction(0.01).seed(5).eventsPerSecondOfEventTime(5).build();
            GenerationReport produced = new KafkaTrafficProducer(infra.broker.bootstrapServers(), Map.of()).produce(spec, p -> { });
            TidemarkConfig config = infra.config(dir, topic).set(TidemarkConfig.Key.LAKEHOUSE, s3.uri("lakehouse"))
                    .set(TidemarkConfig.Key.CHECKPOINT, s3.uri("checkpoint")).build();
            List<String> common = List.of("kafka.bootstrap-servers=" + config.bootstrapServers(), "topic=" + topic,
                    "stream.max-offsets-per-trigger=500", "stream.trigger=1 second");
            List<String> args = concat(common, "lakehouse=" + config.lakehouseUri(), "stream.checkpoint=" + config.checkpointUri());
            Map<String, String> s3Settings = s3.sparkSettings();
            FileSystem fs = FileSystem.get(URI.create(s3.uri("")), hadoop(s3));
            String progressLog = config.lakehouseUri() + "/stream_progress/_delta_log";

            // two at once: the lease's conditional PUT lets exactly one through
            List<JobProcess> starters = List.of(JobProcess.start(StreamingJob.class, args, s3Settings, dir.resolve("starter-1.log")),
                    JobProcess.start(StreamingJob.class, args, s3Settings, dir.resolve("starter-2.log")));
            JobProcess running = null;
            JobProcess refused = null;
            long deadline = System.currentTimeMillis() + 240_000;
            while ((running == null || refused == null) && System.currentTimeMillis() < deadline) {
                for (JobProcess p : starters) {
                    if (!p.process.isAlive()) {
                        refused = p;
                        running = starters.get(0) == p ? starters.get(1) : starters.get(0);
                    }
                }
                Thread.sleep(200);
            }
            assertThat(refused).as("one of the two starters is refused").isNotNull();
            assertThat(refused.await(10)).as("the refused starter\n%s", refused.tail()).isEqualTo(2);
            String holder = "pid " + running.process.pid() + " on ";
            assertThat(Files.readString(refused.log)).contains("tidemark stream: the ").contains(" is being written by another stream: " + holder);
            while (TableChecks.commits(progressLog, fs.getConf()) < 2 && System.currentTimeMillis() < deadline
                    && running.process.isAlive()) {
                Thread.sleep(200);
            }
            assertThat(running.process.isAlive()).as("the other stream runs\n%s", running.tail()).isTrue();

            JobProcess otherCheckpoint = JobProcess.start(StreamingJob.class,
                    concat(common, "lakehouse=" + config.lakehouseUri(), "stream.checkpoint=" + s3.uri("checkpoint-2")),
                    s3Settings, dir.resolve("other-checkpoint.log"));
            assertThat(otherCheckpoint.await(180)).as("a second stream on the lakehouse\n%s", otherCheckpoint.tail()).isEqualTo(2);
            assertThat(Files.readString(otherCheckpoint.log))
                    .contains("tidemark stream: the lakehouse " + config.lakehouseUri() + " is being written by another stream: " + holder);

            JobProcess otherLakehouse = JobProcess.start(StreamingJob.class,
                    concat(common, "lakehouse=" + s3.uri("lakehouse-2"), "stream.checkpoint=" + config.checkpointUri()),
                    s3Settings, dir.resolve("other-lakehouse.log"));
            assertThat(otherLakehouse.await(180)).as("a second stream on the checkpoint\n%s", otherLakehouse.tail()).isEqualTo(2);
            assertThat(Files.readString(otherLakehouse.log))
                    .contains("tidemark stream: the checkpoint " + config.checkpointUri() + " is being written by another stream: " + holder);
            assertThat(running.process.isAlive()).isTrue();

            // the S3 server down for 60 s under the running stream: it rides the outage out, or stops with one line
            // and an exit code, and a restart resumes
            long before = TableChecks.commits(progressLog, fs.getConf());
            s3.stop();
            Thread.sleep(60_000);
            s3.start();
            if (!running.process.isAlive()) {
                int code = running.await(10);
                List<String> said = running.lines().stream().filter(l -> l.startsWith("tidemark stream:")).toList();
                assertThat(code).as("the stream's exit after the outage\n%s", running.tail()).isIn(1, 3);
                assertThat(said).as("what the stream said").hasSize(1);
                System.out.println("the stream stopped during the S3 outage: exit " + code + ", " + said.get(0));
                running = JobProcess.start(StreamingJob.class, args, s3Settings, dir.resolve("after-outage.log"));
            } else {
                System.out.println("the stream rode out the S3 outage");
            }
            // more traffic: the stream takes it in after the outage
            GenerationReport more = new KafkaTrafficProducer(infra.broker.bootstrapServers(), Map.of())
                    .produce(spec.toBuilder().count(1_000L).seed(6).build(), p -> { });
            while (TableChecks.commits(progressLog, fs.getConf()) < before + 2 && running.process.isAlive()
                    && System.currentTimeMillis() < deadline + 300_000) {
                Thread.sleep(200);
            }
            assertThat(TableChecks.commits(progressLog, fs.getConf())).as("batches after the outage\n%s", running.tail())
                    .isGreaterThanOrEqualTo(before + 2);

            // kill -9: the lease stays behind, naming a process that is gone; the restart takes it over at once.
            running.kill();
            JobProcess restarted = JobProcess.start(StreamingJob.class, concat(args, "--available-now"), s3Settings, dir.resolve("restarted.log"));
            assertThat(restarted.await(300)).as("the restart\n%s", restarted.tail()).isEqualTo(0);

            ConservationCheck.Report report = ConservationCheck.check(infra.spark, Lakehouse.of(config), produced.messages() + more.messages());
            assertThat(report.violations()).isEmpty();
            assertThat(report.duplicates()).isZero();
            assertThat(report.rawEvents()).isEqualTo(produced.valid() + more.valid());
            assertThat(report.deadLetters()).isEqualTo(produced.invalid() + more.invalid());
            // A clean stop gives the leases back; the refused starts wrote no lease and no table.
            assertThat(leases(fs, config.lakehouseUri())).isEmpty();
            assertThat(leases(fs, config.checkpointUri())).isEmpty();
            assertThat(fs.exists(new org.apache.hadoop.fs.Path(s3.uri("lakehouse-2/stream_progress")))).isFalse();
        }
    }

    private static Configuration hadoop(S3Server s3) {
        Configuration c = new Configuration();
        s3.hadoopSettings().forEach(c::set);
        return c;
    }

    private static List<String> leases(FileSystem fs, String guarded) throws Exception {
        List<String> out = new ArrayList<>();
        try {
            for (FileStatus s : fs.listStatus(new org.apache.hadoop.fs.Path(guarded + "/" + StreamLease.DIR))) {
                if (s.getPath().getName().endsWith(".json")) {
                    out.add(s.getPath().getName());
                }
            }
        } catch (java.io.FileNotFoundException e) {
            // no lease directory: no lease
        }
        return out;
    }

    private static List<String> concat(List<String> head, String... more) {
        List<String> out = new ArrayList<>(head);
        out.addAll(List.of(more));
        return out;
    }
}
