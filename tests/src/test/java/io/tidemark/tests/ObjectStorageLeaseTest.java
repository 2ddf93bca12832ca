package io.tidemark.tests;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.OutputStream;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import io.tidemark.stream.StreamLease;

/**
 * The stream's lease on a real S3 server, with the promises it keeps on a local disk: of several
 * starters racing for it exactly one wins (the race harness itself, given S3A's plain create,
 * lets two win: it can fail); the holder's heartbeat renews the lease although S3 cannot touch an
 * object; a lease whose heartbeat stopped is taken over after the timeout; a holder that lost it
 * is stopped before its next write.
 */
class ObjectStorageLeaseTest {
    private static final Path WORK = Path.of(System.getProperty("tidemark.test.work", "target/work")).toAbsolutePath()
            .resolve("s3-lease-" + java.util.UUID.randomUUID().toString().substring(0, 8));
    private static final Duration MINUTE = Duration.ofSeconds(60);
    private static S3Server s3;
    private static Configuration hadoop;
    private static FileSystem fs;

    @BeforeAll
    static void startServer() throws Exception {
        s3 = S3Server.start(WORK.resolve("s3"));
        hadoop = new Configuration();
        s3.hadoopSettings().forEach(hadoop::set);
        fs = FileSystem.get(URI.create(s3.uri("")), hadoop);
    }

    @AfterAll
    static void stopServer() throws Exception {
        if (s3 != null) {
            s3.close();
        }
    }

    @Test
    void ofSixStartersRacingForTheLeaseExactlyOneWinsEveryRound() throws Exception {
        List<Integer> winners = race(20, guarded -> {
            StreamLease lease = StreamLease.acquire(guarded, "the lakehouse " + guarded, "app", MINUTE, hadoop);
            return lease;
        });
        assertThat(winners).as("winners per round").containsOnly(1).hasSize(20);
    }

    @Test
    void negativeControlTheSameRaceOverS3asPlainCreateHasRoundsWithTwoWinners() throws Exception {
        List<Integer> winners = race(20, guarded -> {
            org.apache.hadoop.fs.Path file = new org.apache.hadoop.fs.Path(guarded + "/_tidemark/stream-lease-1.json");
            try (OutputStream out = fs.create(file, false)) { // check, then PUT: not atomic on S3
                out.write(Thread.currentThread().getName().getBytes(StandardCharsets.UTF_8));
            }
            return (AutoCloseable) () -> { };
        });
        assertThat(winners).as("winners per round").anyMatch(w -> w > 1);
    }

    @Test
    void theHeartbeatRenewsTheLeaseOnS3() throws Exception {
        String guarded = s3.uri("lease-heartbeat");
        try (StreamLease lease = StreamLease.acquire(guarded, "the lakehouse", "app", Duration.ofSeconds(2), hadoop)) {
            FileStatus first = leaseFile(guarded, 1);
            Thread.sleep(3_000); // six heartbeats (every timeout/4)
            FileStatus later = leaseFile(guarded, 1);
            assertThat(later.getModificationTime() - first.getModificationTime()).as("renewed by its heartbeats").isGreaterThanOrEqualTo(2_000);
            assertThat(System.currentTimeMillis() - later.getModificationTime()).as("its last heartbeat is recent").isLessThan(1_500);
            lease.requireHeld();
        }
        assertThat(fs.exists(new org.apache.hadoop.fs.Path(guarded + "/_tidemark/stream-lease-1.json"))).as("a clean stop removes it").isFalse();
    }

    @Test
    void aLeaseWithoutHeartbeatIsTakenOverAfterTheTimeoutAndItsHolderStopsWriting() throws Exception {
        // a holder on another host whose heartbeat stopped: the lease file as it wrote it
        String guarded = s3.uri("lease-takeover");
        String other = "{\"host\":\"another-host\",\"pid\":4242,\"processStart\":\"\",\"application\":\"app-other\",\"startedAt\":\"2026-12-07T00:00:00Z\"}";
        assertThat(s3.request("PUT", "lease-takeover/_tidemark/stream-lease-1.json", other.getBytes(StandardCharsets.UTF_8), Map.of())).isEqualTo(200);
        assertThatThrownBy(() -> StreamLease.acquire(guarded, "the lakehouse", "app", Duration.ofSeconds(2), hadoop))
                .isInstanceOf(StreamLease.HeldElsewhereException.class).hasMessageContaining("pid 4242 on another-host (app-other)");
        Thread.sleep(2_500);
        try (StreamLease taken = StreamLease.acquire(guarded, "the lakehouse", "app", Duration.ofSeconds(2), hadoop)) {
            assertThat(leaseFile(guarded, 2)).isNotNull();
            assertThat(fs.exists(new org.apache.hadoop.fs.Path(guarded + "/_tidemark/stream-lease-1.json"))).as("the dead lease is removed").isFalse();
            taken.requireHeld();
            // now another stream takes this one's lease over (as after a long pause of this holder): its next heartbeat sees it
            assertThat(s3.request("PUT", "lease-takeover/_tidemark/stream-lease-3.json", other.getBytes(StandardCharsets.UTF_8), Map.of())).isEqualTo(200);
            Thread.sleep(1_500);
            assertThatThrownBy(taken::requireHeld).isInstanceOf(StreamLease.HeldElsewhereException.class)
                    .hasMessageContaining("was taken over by pid 4242 on another-host");
        }
    }

    private static FileStatus leaseFile(String guarded, int n) throws Exception {
        return fs.getFileStatus(new org.apache.hadoop.fs.Path(guarded + "/_tidemark/stream-lease-" + n + ".json"));
    }

    /** Per round, six threads released at once each try {@code take} on a fresh directory; how many won each round. */
    private static List<Integer> race(int rounds, Take take) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(6);
        List<Integer> winners = new ArrayList<>();
        try {
            for (int round = 0; round < rounds; round++) {
                String guarded = s3.uri("lease-race/" + System.nanoTime());
                CyclicBarrier start = new CyclicBarrier(6);
                List<Future<AutoCloseable>> tries = new ArrayList<>();
                for (int i = 0; i < 6; i++) {
                    tries.add(pool.submit((Callable<AutoCloseable>) () -> {
                        start.await();
                        try {
                            return take.take(guarded);
                        } catch (StreamLease.HeldElsewhereException | org.apache.hadoop.fs.FileAlreadyExistsException e) {
                            return null;
                        }
                    }));
                }
                List<AutoCloseable> held = new ArrayList<>();
                for (Future<AutoCloseable> f : tries) {
                    if (f.get() != null) {
                        held.add(f.get());
                    }
                }
                winners.add(held.size());
                for (AutoCloseable h : held) {
                    h.close();
                }
            }
        } finally {
            pool.shutdownNow();
        }
        return winners;
    }

    private interface Take {
        AutoCloseable take(String guarded) throws Exception;
    }
}
