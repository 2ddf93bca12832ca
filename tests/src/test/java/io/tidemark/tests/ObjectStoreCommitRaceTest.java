package io.tidemark.tests;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.InputStream;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.stream.Collectors;
import java.util.stream.IntStream;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import io.tidemark.lakehouse.ConditionalPutLogStore;

/**
 * Two JVMs committing to one Delta table on a real S3 server, forced onto the same commit version
 * round after round: with Tidemark's log store every commit each writer reported is in the log, no
 * commit file was written twice and the table holds exactly the rows written; with Delta's default
 * S3 store the same race loses commits (the negative control: the race test can fail). The server's
 * conditional PUT, which the store relies on, is probed first.
 */
class ObjectStoreCommitRaceTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Path WORK = Path.of(System.getProperty("tidemark.test.work", "target/work")).toAbsolutePath()
            .resolve("commit-race-" + UUID.randomUUID().toString().substring(0, 8));
    private static S3Server s3;

    @BeforeAll
    static void startServer() throws Exception {
        s3 = S3Server.start(WORK.resolve("s3"));
    }

    @AfterAll
    static void stopServer() throws Exception {
        if (s3 != null) {
            s3.close();
        }
    }

    /** The probe: of 48 concurrent If-None-Match PUTs to one new key exactly one succeeds, 8 rounds in a row. */
    @Test
    void theServersConditionalPutIsAtomic() throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(48);
        try {
            for (int round = 0; round < 8; round++) {
                String key = "probe/" + UUID.randomUUID();
                List<CompletableFuture<Integer>> puts = new ArrayList<>();
                for (int i = 0; i < 48; i++) {
                    byte[] body = ("writer " + i).getBytes(StandardCharsets.UTF_8);
                    puts.add(CompletableFuture.supplyAsync(() -> call(() -> s3.request("PUT", key, body, Map.of("If-None-Match", "*"))), pool));
                }
                Map<Integer, Long> statuses = puts.stream().map(CompletableFuture::join).collect(Collectors.groupingBy(s -> s, TreeMap::new, Collectors.counting()));
                assertThat(statuses).as("round %d", round).isEqualTo(Map.of(200, 1L, 412, 47L));
                assertThat(s3.request("PUT", key, new byte[] {1}, Map.of("If-None-Match", "*"))).isEqualTo(412);
            }
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void twoWritersRacingForEachVersionLoseNothingWithTidemarksLogStore() throws Exception {
        int rounds = 10;
        Race race = race("conditional", ConditionalPutLogStore.class.getName(), rounds);
        List<String> expected = new ArrayList<>();
        for (int r = 0; r < rounds; r++) {
            expected.add("a:" + r);
            expected.add("b:" + r);
        }
        // every commit each writer reported, exactly once in the log, at versions 1..2*rounds
        assertThat(race.reported).containsExactlyInAnyOrderElementsOf(expected);
        assertThat(race.txnByVersion.keySet()).containsExactlyElementsOf(IntStream.rangeClosed(1, 2 * rounds).boxed().toList());
        assertThat(race.txnByVersion.values()).containsExactlyInAnyOrderElementsOf(expected);
        // no commit file written twice, and the race was real: the gate put both writers on one version, one was refused each time
        assertThat(race.writtenTwice).isEmpty();
        assertThat(race.refused).isGreaterThanOrEqualTo(rounds / 2);
        // the table: every append of a, the last replacement of b
        assertThat(race.table).isEqualTo(IntStream.range(0, rounds).mapToObj(r -> "a" + r).collect(Collectors.joining(",")) + ",b" + (rounds - 1));
    }

    @Test
    void negativeControlDeltasDefaultS3StoreLosesCommitsInTheSameRace() throws Exception {
        int rounds = 4;
        Race race = race("single-driver", "io.delta.storage.S3SingleDriverLogStore", rounds);
        assertThat(race.reported).hasSize(2 * rounds); // both writers believe every commit landed
        assertThat(race.writtenTwice).isNotEmpty();
        assertThat(race.txnByVersion.values()).hasSizeLessThan(2 * rounds);
    }

    /** What a race left: the commits the writers reported, the log's transactions, the files both wrote, the table. */
    private record Race(List<String> reported, Map<Integer, String> txnByVersion, List<String> writtenTwice, long refused, String table) {
    }

    private Race race(String name, String store, int rounds) throws Exception {
        Path gate = WORK.resolve(name + "-gate");
        Files.createDirectories(gate);
        String table = s3.uri(name + "/t");
        createTable(name + "/t");
        Map<String, String> props = new HashMap<>(s3.sparkSettings());
        props.put("spark.delta.logStore.s3a.impl", GatedLogStore.class.getName());
        props.put("spark.hadoop.tidemark.test.gate.delegate", store);
        props.put("spark.hadoop.tidemark.test.gate.dir", gate.toString());
        List<JobProcess> racers = new ArrayList<>();
        for (String w : List.of("a", "b")) {
            Map<String, String> p = new HashMap<>(props);
            p.put("spark.hadoop.tidemark.test.gate.writer", w);
            p.put("spark.hadoop.tidemark.test.gate.peer", w.equals("a") ? "b" : "a");
            racers.add(JobProcess.start(CommitRacer.class, List.of(table, w, String.valueOf(rounds), gate.toString()), p,
                    WORK.resolve(name + "-" + w + ".log")));
        }
        for (JobProcess r : racers) {
            assertThat(r.await(300)).as("racer exit; log %s:%n%s", r.log, r.tail()).isEqualTo(0);
        }
        List<String> reported = new ArrayList<>();
        String rows = null;
        for (JobProcess r : racers) {
            for (String l : r.lines()) {
                if (l.startsWith("committed ")) {
                    String[] f = l.split(" ");
                    reported.add(f[1] + ":" + f[2]);
                } else if (l.startsWith("table ")) {
                    rows = l.substring("table ".length());
                }
            }
        }
        Map<String, Long> writes = new HashMap<>();
        long refused = 0;
        for (String w : List.of("a", "b")) {
            for (String l : Files.readAllLines(gate.resolve("written." + w))) {
                if (l.endsWith(" ok")) {
                    writes.merge(l.substring(0, l.length() - 3), 1L, Long::sum);
                } else {
                    refused++;
                }
            }
        }
        List<String> twice = writes.entrySet().stream().filter(e -> e.getValue() > 1).map(Map.Entry::getKey).sorted().toList();
        return new Race(reported, transactions(table), twice, refused, rows);
    }

    /** Writes version 0 of a Delta table (writer STRING, round INT, partitioned by writer) straight to the bucket. */
    private static void createTable(String path) throws Exception {
        String schema = "{\"type\":\"struct\",\"fields\":[{\"name\":\"writer\",\"type\":\"string\",\"nullable\":true,\"metadata\":{}},"
                + "{\"name\":\"round\",\"type\":\"integer\",\"nullable\":true,\"metadata\":{}}]}";
        String commit = "{\"protocol\":{\"minReaderVersion\":1,\"minWriterVersion\":2}}\n"
                + "{\"metaData\":{\"id\":\"" + UUID.randomUUID() + "\",\"format\":{\"provider\":\"parquet\",\"options\":{}},\"schemaString\":"
                + JSON.writeValueAsString(schema) + ",\"partitionColumns\":[\"writer\"],\"configuration\":{},\"createdTime\":"
                + System.currentTimeMillis() + "}}\n";
        assertThat(s3.request("PUT", path + "/_delta_log/00000000000000000000.json", commit.getBytes(StandardCharsets.UTF_8), Map.of())).isEqualTo(200);
    }

    /** The log's commits after version 0: version -> "writer:round" of the transaction it carries. */
    private static Map<Integer, String> transactions(String table) throws Exception {
        Configuration conf = new Configuration();
        s3.hadoopSettings().forEach(conf::set);
        conf.setBoolean("fs.s3a.impl.disable.cache", true);
        Map<Integer, String> out = new TreeMap<>();
        try (FileSystem fs = FileSystem.get(URI.create(table), conf)) {
            for (FileStatus s : fs.listStatus(new org.apache.hadoop.fs.Path(table + "/_delta_log"))) {
                String n = s.getPath().getName();
                if (!n.matches("\\d{20}\\.json") || Integer.parseInt(n.substring(0, 20)) == 0) {
                    continue;
                }
                try (InputStream in = fs.open(s.getPath())) {
                    for (String line : new String(in.readAllBytes(), StandardCharsets.UTF_8).split("\n")) {
                        JsonNode txn = JSON.readTree(line).get("txn");
                        if (txn != null) {
                            out.put(Integer.parseInt(n.substring(0, 20)), txn.get("appId").asText() + ":" + txn.get("version").asLong());
                        }
                    }
                }
            }
        }
        return out;
    }

    private static <T> T call(Callable<T> c) {
        try {
            return c.call();
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }
}
