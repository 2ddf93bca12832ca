package io.tidemark.stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

import org.apache.hadoop.conf.Configuration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** One stream per directory, on the local file system: refusal, release, takeover of dead holders, races. */
class StreamLeaseTest {
    private static final Duration TIMEOUT = Duration.ofSeconds(60);
    private static final Configuration HADOOP = new Configuration();

    private static StreamLease take(Path dir, String app) {
        return StreamLease.acquire(dir.toString(), "the lakehouse " + dir, app, TIMEOUT, HADOOP);
    }

    private static List<String> leaseFiles(Path dir) throws Exception {
        try (var s = Files.list(dir.resolve(StreamLease.DIR))) {
            return s.map(p -> p.getFileName().toString()).filter(n -> n.endsWith(".json")).sorted().toList();
        }
    }

    @Test
    void aLiveLeaseRefusesASecondStreamNamingTheHolderAndAReleasedOneIsTakenAtOnce(@TempDir Path dir) throws Exception {
        StreamLease first = take(dir, "app-1");
        assertThatThrownBy(() -> take(dir, "app-2")).isInstanceOf(StreamLease.HeldElsewhereException.class)
                .hasMessageStartingWith("the lakehouse " + dir + " is being written by another stream: pid " + ProcessHandle.current().pid()
                        + " on " + StreamLease.hostName() + " (app-1), since ")
                .hasMessageContaining("stop that one first");
        first.beat();
        first.requireHeld();
        first.close();
        assertThat(leaseFiles(dir)).isEmpty();
        StreamLease second = take(dir, "app-2");
        assertThat(leaseFiles(dir)).containsExactly("stream-lease-1.json");
        second.close();
    }

    @Test
    void theLeaseOfAProcessGoneFromThisHostIsTakenOverAtOnceAndTheOldHolderKnowsItLostIt(@TempDir Path dir) throws Exception {
        Files.createDirectories(dir.resolve(StreamLease.DIR));
        // What a stream killed with SIGKILL leaves behind: its lease, fresh, naming a pid that no longer runs.
        long deadPid = new ProcessBuilder("true").start().onExit().get().pid();
        Files.writeString(dir.resolve(StreamLease.DIR).resolve("stream-lease-4.json"), "{\"host\":\"" + StreamLease.hostName()
                + "\",\"pid\":" + deadPid + ",\"processStart\":\"\",\"application\":\"app-killed\",\"startedAt\":\"2026-12-01T00:00:00Z\"}");
        StreamLease next = take(dir, "app-restarted");
        assertThat(leaseFiles(dir)).containsExactly("stream-lease-5.json");

        // A holder whose lease was taken over (its heartbeat stopped for the whole timeout) stops writing.
        Files.writeString(dir.resolve(StreamLease.DIR).resolve("stream-lease-6.json"), "{\"host\":\"elsewhere\",\"pid\":1,"
                + "\"processStart\":\"\",\"application\":\"app-new\",\"startedAt\":\"2026-12-01T01:00:00Z\"}");
        next.beat();
        assertThatThrownBy(next::requireHeld).isInstanceOf(StreamLease.HeldElsewhereException.class)
                .hasMessageContaining("was taken over by pid 1 on elsewhere (app-new)");
        next.close();
        assertThat(leaseFiles(dir)).containsExactly("stream-lease-5.json", "stream-lease-6.json");
    }

    @Test
    void aLeaseOfAnotherHostLivesUntilItsHeartbeatIsOlderThanTheTimeout(@TempDir Path dir) throws Exception {
        Path file = dir.resolve(StreamLease.DIR).resolve("stream-lease-1.json");
        Files.createDirectories(file.getParent());
        Files.writeString(file, "{\"host\":\"other-host\",\"pid\":42,\"processStart\":\"\",\"application\":\"app-x\","
                + "\"startedAt\":\"2026-12-01T00:00:00Z\"}");
        assertThatThrownBy(() -> take(dir, "app-y")).hasMessageContaining("pid 42 on other-host (app-x)");
        Files.setLastModifiedTime(file, FileTime.from(Instant.now().minus(TIMEOUT).minusSeconds(5)));
        StreamLease taken = take(dir, "app-y");
        assertThat(leaseFiles(dir)).containsExactly("stream-lease-2.json");
        taken.close();
    }

    @Test
    void ofStreamsStartingAtTheSameMomentExactlyOneWins(@TempDir Path dir) throws Exception {
        int starters = 8;
        ExecutorService pool = Executors.newFixedThreadPool(starters);
        CountDownLatch go = new CountDownLatch(1);
        List<Future<StreamLease>> results = new ArrayList<>();
        for (int i = 0; i < starters; i++) {
            String app = "app-" + i;
            Callable<StreamLease> start = () -> {
                go.await();
                return take(dir, app);
            };
            results.add(pool.submit(start));
        }
        go.countDown();
        List<StreamLease> won = new ArrayList<>();
        int refused = 0;
        for (Future<StreamLease> f : results) {
            try {
                won.add(f.get());
            } catch (java.util.concurrent.ExecutionException e) {
                assertThat(e.getCause()).isInstanceOf(StreamLease.HeldElsewhereException.class);
                refused++;
            }
        }
        pool.shutdown();
        assertThat(won).hasSize(1);
        assertThat(refused).isEqualTo(starters - 1);
        assertThat(leaseFiles(dir)).containsExactly("stream-lease-1.json");
        won.get(0).close();
    }
}
