package io.tidemark.tests;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import org.apache.spark.sql.streaming.StreamingQuery;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

import com.fasterxml.jackson.databind.ObjectMapper;

import io.tidemark.generate.GenerationReport;
import io.tidemark.operations.ConservationCheck;
import io.tidemark.lakehouse.Lakehouse;
import io.tidemark.lakehouse.StorageCheck.StorageUnavailableException;
import io.tidemark.lakehouse.TidemarkConfig;
import io.tidemark.lakehouse.TidemarkConfig.Key;
import io.tidemark.launcher.Tidemark;
import io.tidemark.reconcile.DaySelection;
import io.tidemark.reconcile.ReconcileJob;
import io.tidemark.stream.StreamFailure;
import io.tidemark.stream.StreamingJob;

/**
 * An unwritable lakehouse (a path through a regular file, a read-only mount, an immutable
 * directory) stops the stream and reconcile at start, before Kafka is read, naming the path and
 * the cause; a lakehouse that fills up mid-stream stops it with one clear line, and after space is
 * freed a restart loses and doubles nothing. The mounts need root: skipped (with the reason) without.
 */
class LakehouseStorageTest extends OnSharedInfrastructure {
    @Test
    void aLakehouseUnderARegularFileFailsAtStartInBothJobsAndTheLauncher() throws Exception {
        Path dir = infra.newDir("notdir");
        Path file = Files.writeString(dir.resolve("a-file"), "not a directory");
        TidemarkConfig config = infra.config(dir, "notdir-" + dir.getFileName()).set(Key.LAKEHOUSE, file.resolve("lakehouse").toString()).build();
        String expected = "cannot write lakehouse " + file.resolve("lakehouse") + ": a part of the path is a regular file, not a directory ("
                + file + " is a regular file); move that file away or point the setting at a directory path";
        assertRefusedAtStart(config, expected);

        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        int code = Tidemark.run(new String[] {"stream", "--available-now", "--set", "kafka.bootstrap-servers=" + config.bootstrapServers(),
                "--set", "topic=" + config.topic(), "--set", "lakehouse=" + config.lakehouseUri(), "--set", "stream.checkpoint=" + config.checkpointUri()},
                Map.of(), new PrintWriter(out), new PrintWriter(err));
        assertThat(code).isEqualTo(1);
        assertThat(err.toString().strip()).isEqualTo("tidemark stream: failed: " + expected);
    }

    @Test
    void aReadOnlyOrImmutableLakehouseFailsAtStart() throws Exception {
        Path dir = infra.newDir("readonly");
        Path mount = Files.createDirectories(dir.resolve("ro"));
        requireRoot("mount -t tmpfs -o ro,size=1m", mount);
        try {
            TidemarkConfig config = infra.config(dir, "ro-" + dir.getFileName()).set(Key.LAKEHOUSE, mount.resolve("lakehouse").toString()).build();
            assertRefusedAtStart(config, "cannot write lakehouse " + mount.resolve("lakehouse") + ": the file system is read-only ("
                    + mount.resolve("lakehouse") + ": Read-only file system); remount it read-write or point the setting at a writable path");
        } finally {
            sh("umount", mount.toString());
        }
        Path immutable = Files.createDirectories(dir.resolve("immutable"));
        sh("chattr", "+i", immutable.toString());
        try {
            TidemarkConfig config = infra.config(dir, "imm-" + dir.getFileName()).set(Key.LAKEHOUSE, immutable.toString()).build();
            assertThatThrownBy(() -> new StreamingJob(infra.spark, config, null).start(true))
                    .isInstanceOf(StorageUnavailableException.class)
                    .hasMessageStartingWith("cannot write lakehouse " + immutable + ": write access denied (" + immutable.resolve(".tidemark-write-probe-"))
                    .hasMessageEndingWith(": Operation not permitted); grant write access (permissions, ACLs, chattr -i) or point the setting at a writable path");
        } finally {
            sh("chattr", "-i", immutable.toString());
        }
    }

    @Test
    void aFullLakehouseStopsTheStreamClearlyAndARestartAfterFreeingSpaceLosesNothing() throws Exception {
        Path dir = infra.newDir("full");
        Path mount = Files.createDirectories(dir.resolve("disk"));
        requireRoot("mount -t tmpfs -o size=24m", mount);
        try {
            String topic = "full-" + dir.getFileName();
            infra.broker.createTopic(topic, 2);
            TidemarkConfig config = infra.config(dir, topic).set(Key.LAKEHOUSE, mount.resolve("lakehouse").toString())
                    .set(Key.MAX_OFFSETS_PER_TRIGGER, "2500").build();
            Lakehouse.of(config).createAndRegister(infra.spark);

            // Leave the first batch too little room: some of its commits may land, the rest fail.
            Path filler = mount.resolve("filler");
            long free = Files.getFileStore(mount).getUsableSpace();
            try (OutputStream o = Files.newOutputStream(filler)) {
                byte[] chunk = new byte[64 * 1024];
                for (long left = free - 160 * 1024; left > 0; left -= chunk.length) {
                    o.write(chunk, 0, (int) Math.min(chunk.length, left));
                }
            }
            GenerationReport produced = QueryDefinitionGuardTest.produce(infra, topic, 2500, 22);
            StreamingJob job = new StreamingJob(infra.spark, config, null);
            StreamingQuery q = job.start(true);
            Throwable failure = null;
            try {
                q.awaitTermination();
            } catch (Exception e) {
                failure = e;
            } finally {
                job.close();
            }
            assertThat(failure).as("the stream should have run out of space").isNotNull();
            StreamFailure clear = StreamFailure.explain(failure, config).orElseThrow(() -> new AssertionError("not explained", null));
            assertThat(clear.getMessage())
                    .startsWith("no space left on device writing the lakehouse " + config.lakehouseUri() + " (")
                    .endsWith(" MB free now); free space on that file system (or move the path to a bigger one), then start the stream again: "
                            + "nothing is lost, the checkpoint did not advance past the failed batch and the restart replays it exactly once");
            assertThat(clear.exitCode()).isEqualTo(1);
            assertThat(clear.getCause()).isSameAs(failure);
            assertCommittedLogIsWhole(config);

            // Still full (Spark may have deleted its aborted files: fill what they left): a restart is refused at once, naming the path.
            try (OutputStream o = Files.newOutputStream(filler, java.nio.file.StandardOpenOption.APPEND)) {
                for (int i = 0; i < 10_000; i++) {
                    o.write(new byte[4096]);
                    o.flush();
                }
            } catch (IOException full) {
                // as intended
            }
            assertThatThrownBy(() -> new StreamingJob(infra.spark, config, null).start(true))
                    .isInstanceOf(StorageUnavailableException.class)
                    .hasMessage("cannot write lakehouse " + config.lakehouseUri() + ": no space left on device; "
                            + "free space on that file system (or move the path to a bigger one)");

            Files.delete(filler);
            QueryDefinitionGuardTest.runToEnd(infra, config);
            ConservationCheck.Report report = ConservationCheck.check(infra.spark, Lakehouse.of(config), produced.messages());
            assertThat(report.violations()).isEmpty();
            assertThat(report.duplicates()).isZero();
            assertThat(report.rawEvents()).isEqualTo(produced.valid());
            assertThat(report.deadLetters()).isEqualTo(produced.invalid());
        } finally {
            sh("umount", "-l", mount.toString());
        }
    }

    /** Stream and reconcile both refuse, before anything is read: no checkpoint directory appears. */
    private static void assertRefusedAtStart(TidemarkConfig config, String message) {
        Throwable refused = org.assertj.core.api.Assertions.catchThrowable(() -> new StreamingJob(infra.spark, config, null).start(true));
        assertThat(refused).isInstanceOf(StorageUnavailableException.class).hasMessage(message);
        assertThat(Path.of(config.checkpointUri())).doesNotExist();
        assertThat(StreamFailure.explain(new RuntimeException("wrapped", refused), config).map(Throwable::getMessage)).contains(message);
        assertThatThrownBy(() -> new ReconcileJob(infra.spark, config, new java.io.PrintStream(OutputStream.nullOutputStream()))
                .run(DaySelection.recent(1), false))
                .isInstanceOf(StorageUnavailableException.class).hasMessage(message);
    }

    /** Every committed Delta log entry of every table is whole JSON: a full disk may leave orphan files, never a torn commit. */
    private static void assertCommittedLogIsWhole(TidemarkConfig config) throws Exception {
        ObjectMapper json = new ObjectMapper();
        for (Lakehouse.Table t : Lakehouse.of(config).tables()) {
            Path log = Path.of(Lakehouse.of(config).path(t), "_delta_log");
            try (var s = Files.list(log)) {
                for (Path p : s.filter(p -> p.getFileName().toString().matches("\\d{20}\\.json")).toList()) {
                    for (String line : Files.readAllLines(p)) {
                        json.readTree(line);
                    }
                }
            }
        }
    }

    private static void requireRoot(String mountCommand, Path at) throws Exception {
        List<String> cmd = new ArrayList<>(List.of(mountCommand.split(" ")));
        cmd.addAll(List.of("tmpfs", at.toString()));
        int code;
        try {
            code = run(cmd);
        } catch (IOException e) {
            code = -1;
        }
        Assumptions.assumeTrue(code == 0, "needs root to mount a tmpfs (" + String.join(" ", cmd) + " failed): skipped");
    }

    private static void sh(String... cmd) throws Exception {
        int code = run(List.of(cmd));
        if (code != 0) {
            throw new IllegalStateException(String.join(" ", cmd) + " exited " + code);
        }
    }

    private static int run(List<String> cmd) throws Exception {
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
        if (!p.waitFor(30, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            return -1;
        }
        return p.exitValue();
    }
}
