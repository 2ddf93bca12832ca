package io.tidemark.stream;

import java.io.BufferedReader;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.regex.Pattern;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;

import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

/**
 * The one reader of the streaming query's Spark checkpoint. Spark writes {@code offsets/<id>} (the
 * end offsets of batch {@code id}, before the batch runs) and {@code commits/<id>} (once it is
 * done); the initial offsets are in {@code sources/0/0}. An offset file is a version line, for the
 * offset log a metadata line, then Spark's Kafka source JSON {@code {"topic":{"0":offset,...}}} as
 * the last line. The format is Spark's internal one, so the header is checked and anything
 * unexpected is reported rather than guessed.
 *
 * <p>Used by {@code tidemark status} (what has been consumed), by the query-definition guard (is a
 * batch pending replay) and by the Kafka gap check (what a batch was planned to read).
 */
public final class StreamCheckpoint {

    /**
     * @param batchId last committed batch, -1 when the checkpoint exists but no batch committed yet
     * @param offsets per topic, per partition: the offset of the next record to read
     * @param batchInFlight a later batch is planned (its offsets written) but not committed yet
     */
    public record Committed(long batchId, Map<String, Map<Integer, Long>> offsets, boolean batchInFlight) {
        public long total() {
            return offsets.values().stream().flatMap(m -> m.values().stream()).mapToLong(Long::longValue).sum();
        }

        public Map<Integer, Long> topic(String name) {
            return offsets.getOrDefault(name, Map.of());
        }
    }

    private static final Pattern BATCH_FILE = Pattern.compile("\\d+");
    private static final ObjectMapper JSON = new ObjectMapper();

    private StreamCheckpoint() {
    }

    /** Empty when there is no checkpoint directory: no stream has run with it. */
    public static Optional<Committed> read(String checkpointUri) {
        Store store = Store.of(checkpointUri, null);
        if (!store.isDirectory("")) {
            return Optional.empty();
        }
        long committed = latest(store.list("commits"));
        long planned = latest(store.list("offsets"));
        if (committed < 0) {
            return Optional.of(new Committed(-1, Map.of(), planned >= 0));
        }
        List<String> lines = store.lines("offsets/" + committed);
        return Optional.of(new Committed(committed, parseOffsets(lines, checkpointUri + "/offsets/" + committed), planned > committed));
    }

    /** The batch planned in the offset log but not committed (Spark replays it first), or -1. */
    public static long pendingBatch(String checkpointUri, Configuration hadoop) {
        Store store = Store.of(checkpointUri, hadoop);
        long planned = latest(store.list("offsets"));
        long committed = latest(store.list("commits"));
        return planned > committed ? planned : -1;
    }

    /**
     * Batch {@code batchId}'s start offsets of {@code topic} (the previous batch's end, or the initial
     * offsets for batch 0) and its end offsets; null when Spark has purged a file (the batch cannot be
     * checked then).
     */
    static Map<Integer, Long> startOffsets(String checkpointUri, Configuration hadoop, String topic, long batchId) {
        return offsets(checkpointUri, hadoop, batchId == 0 ? "sources/0/0" : "offsets/" + (batchId - 1), topic);
    }

    static Map<Integer, Long> endOffsets(String checkpointUri, Configuration hadoop, String topic, long batchId) {
        return offsets(checkpointUri, hadoop, "offsets/" + batchId, topic);
    }

    /**
     * Spark's timestamp of batch {@code batchId} ({@code batchTimestampMs} in its offset log's
     * metadata line): written when the batch is planned, so a replay of the batch reads the same value.
     */
    static long batchTimestampMs(String checkpointUri, Configuration hadoop, long batchId) {
        Store store = Store.of(checkpointUri, hadoop);
        String relative = "offsets/" + batchId;
        String where = checkpointUri + "/" + relative;
        if (!store.exists(relative)) {
            throw new IllegalStateException(where + " is missing: the batch being written has no offset log entry");
        }
        List<String> lines = store.lines(relative);
        if (lines.size() < 2 || !lines.get(0).trim().matches("v\\d+")) {
            throw new IllegalStateException(where + " does not start with Spark's offset-log version and metadata lines");
        }
        try {
            JsonNode ts = JSON.readTree(lines.get(1)).get("batchTimestampMs");
            if (ts == null || !ts.canConvertToLong()) {
                throw new IllegalStateException("no batchTimestampMs");
            }
            return ts.asLong();
        } catch (IOException | RuntimeException e) {
            throw new IllegalStateException(where + ": cannot read the batch timestamp from " + lines.get(1) + ": " + e.getMessage(), e);
        }
    }

    private static Map<Integer, Long> offsets(String checkpointUri, Configuration hadoop, String relative, String topic) {
        Store store = Store.of(checkpointUri, hadoop);
        if (!store.exists(relative)) {
            return null;
        }
        return parseOffsets(store.lines(relative), checkpointUri + "/" + relative).getOrDefault(topic, Map.of());
    }

    static long latest(List<String> names) {
        long max = -1;
        for (String n : names) {
            if (BATCH_FILE.matcher(n).matches()) {
                max = Math.max(max, Long.parseLong(n));
            }
        }
        return max;
    }

    /** Parses an offset file: "v1", for the offset log the batch metadata, then the source's offsets. */
    static Map<String, Map<Integer, Long>> parseOffsets(List<String> lines, String where) {
        // The source's initial-offsets file is written with a leading NUL-padded length by some versions.
        lines = lines.stream().map(l -> l.replace("\u0000", "").trim()).filter(l -> !l.isEmpty()).toList();
        if (lines.isEmpty() || !lines.get(0).matches("v\\d+")) {
            throw new IllegalStateException(where + " does not start with Spark's offset-log version line (v1); "
                    + "Tidemark cannot read this checkpoint format");
        }
        String last = lines.get(lines.size() - 1);
        if (!last.startsWith("{")) {
            throw new IllegalStateException(where + ": the last line is not a Kafka source offset JSON: " + last);
        }
        return parseSourceOffsets(last, where);
    }

    /** Spark's Kafka source offsets, {@code {"topic":{"0":42,"1":17}}}, as offsets per partition per topic. */
    static Map<String, Map<Integer, Long>> parseSourceOffsets(String last, String where) {
        try {
            Map<String, Map<String, Long>> raw = JSON.readValue(last, new TypeReference<Map<String, Map<String, Long>>>() { });
            Map<String, Map<Integer, Long>> out = new LinkedHashMap<>();
            raw.forEach((topic, partitions) -> {
                Map<Integer, Long> byPartition = new TreeMap<>();
                partitions.forEach((p, off) -> byPartition.put(Integer.parseInt(p), off));
                out.put(topic, Collections.unmodifiableMap(byPartition));
            });
            return Collections.unmodifiableMap(out);
        } catch (IOException | RuntimeException e) {
            throw new IllegalStateException(where + ": cannot read the Kafka offsets in " + last + ": " + e.getMessage(), e);
        }
    }

    /** The checkpoint's files, on the local file system or any Hadoop one. */
    private interface Store {
        boolean isDirectory(String relative);

        boolean exists(String relative);

        List<String> list(String relative);

        List<String> lines(String relative);

        /** @param hadoop the session's Hadoop settings (credentials of remote stores); null for the defaults */
        static Store of(String uri, Configuration hadoop) {
            if (!uri.contains("://") || uri.startsWith("file:")) {
                Path root = uri.startsWith("file:") ? Path.of(URI.create(uri)) : Path.of(uri);
                return new LocalStore(root);
            }
            return new HadoopStore(uri, hadoop == null ? new Configuration() : hadoop);
        }
    }

    private record LocalStore(Path root) implements Store {
        public boolean isDirectory(String relative) {
            return Files.isDirectory(root.resolve(relative));
        }

        public boolean exists(String relative) {
            return Files.exists(root.resolve(relative));
        }

        public List<String> list(String relative) {
            Path dir = root.resolve(relative);
            if (!Files.isDirectory(dir)) {
                return List.of();
            }
            try (var s = Files.list(dir)) {
                return s.map(p -> p.getFileName().toString()).toList();
            } catch (IOException e) {
                throw new UncheckedIOException("cannot list " + dir, e);
            }
        }

        public List<String> lines(String relative) {
            try {
                return Files.readAllLines(root.resolve(relative), StandardCharsets.UTF_8);
            } catch (IOException e) {
                throw new UncheckedIOException("cannot read " + root.resolve(relative), e);
            }
        }
    }

    private record HadoopStore(String root, Configuration hadoop) implements Store {
        private org.apache.hadoop.fs.Path path(String relative) {
            return relative.isEmpty() ? new org.apache.hadoop.fs.Path(root) : new org.apache.hadoop.fs.Path(root, relative);
        }

        private FileSystem fs() throws IOException {
            return path("").getFileSystem(hadoop);
        }

        public boolean isDirectory(String relative) {
            try {
                return fs().getFileStatus(path(relative)).isDirectory();
            } catch (FileNotFoundException e) {
                return false;
            } catch (IOException e) {
                throw new UncheckedIOException("cannot read " + path(relative), e);
            }
        }

        public boolean exists(String relative) {
            try {
                return fs().exists(path(relative));
            } catch (IOException e) {
                throw new UncheckedIOException("cannot read " + path(relative), e);
            }
        }

        public List<String> list(String relative) {
            try {
                List<String> names = new ArrayList<>();
                for (FileStatus s : fs().listStatus(path(relative))) {
                    names.add(s.getPath().getName());
                }
                return names;
            } catch (FileNotFoundException e) {
                return List.of();
            } catch (IOException e) {
                throw new UncheckedIOException("cannot list " + path(relative), e);
            }
        }

        public List<String> lines(String relative) {
            try (BufferedReader r = new BufferedReader(new InputStreamReader(fs().open(path(relative)), StandardCharsets.UTF_8))) {
                return r.lines().toList();
            } catch (IOException e) {
                throw new UncheckedIOException("cannot read " + path(relative), e);
            }
        }
    }
}
