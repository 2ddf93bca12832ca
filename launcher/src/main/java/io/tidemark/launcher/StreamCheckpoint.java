package io.tidemark.launcher;

import java.io.BufferedReader;
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

import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.ObjectMapper;

/**
 * What the streaming query's checkpoint says it has consumed: the Kafka offsets of the last
 * committed micro-batch. A batch is committed once {@code commits/<id>} exists; its end offsets are
 * the last line of {@code offsets/<id>}, Spark's Kafka source JSON {@code {"topic":{"0":offset,...}}}.
 * The format is Spark's internal one, so the header is checked and anything unexpected is reported
 * rather than guessed.
 */
final class StreamCheckpoint {

    /**
     * @param batchId last committed batch, -1 when the checkpoint exists but no batch committed yet
     * @param offsets per topic, per partition: the offset of the next record to read
     * @param batchInFlight a later batch is planned (its offsets written) but not committed yet
     */
    record Committed(long batchId, Map<String, Map<Integer, Long>> offsets, boolean batchInFlight) {
        long total() {
            return offsets.values().stream().flatMap(m -> m.values().stream()).mapToLong(Long::longValue).sum();
        }

        Map<Integer, Long> topic(String name) {
            return offsets.getOrDefault(name, Map.of());
        }
    }

    private static final Pattern BATCH_FILE = Pattern.compile("\\d+");
    private static final ObjectMapper JSON = new ObjectMapper();

    private StreamCheckpoint() {
    }

    /** Empty when there is no checkpoint directory: no stream has run with it. */
    static Optional<Committed> read(String checkpointUri) {
        Store store = Store.of(checkpointUri);
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

    static long latest(List<String> names) {
        long max = -1;
        for (String n : names) {
            if (BATCH_FILE.matcher(n).matches()) {
                max = Math.max(max, Long.parseLong(n));
            }
        }
        return max;
    }

    /** Parses an offset-log file: "v1", the batch metadata, then one line per source. */
    static Map<String, Map<Integer, Long>> parseOffsets(List<String> lines, String where) {
        if (lines.isEmpty() || !lines.get(0).matches("v\\d+")) {
            throw new IllegalStateException(where + " does not start with Spark's offset-log version line (v1); "
                    + "this launcher cannot read this checkpoint format");
        }
        String last = lines.get(lines.size() - 1).trim();
        if (!last.startsWith("{")) {
            throw new IllegalStateException(where + ": the last line is not a Kafka source offset JSON: " + last);
        }
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

        List<String> list(String relative);

        List<String> lines(String relative);

        static Store of(String uri) {
            if (!uri.contains("://") || uri.startsWith("file:")) {
                Path root = uri.startsWith("file:") ? Path.of(URI.create(uri)) : Path.of(uri);
                return new LocalStore(root);
            }
            return new HadoopStore(uri);
        }
    }

    private record LocalStore(Path root) implements Store {
        public boolean isDirectory(String relative) {
            return Files.isDirectory(root.resolve(relative));
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

    private record HadoopStore(String root) implements Store {
        private org.apache.hadoop.fs.Path path(String relative) {
            return relative.isEmpty() ? new org.apache.hadoop.fs.Path(root) : new org.apache.hadoop.fs.Path(root, relative);
        }

        private org.apache.hadoop.fs.FileSystem fs() throws IOException {
            return path("").getFileSystem(new org.apache.hadoop.conf.Configuration());
        }

        public boolean isDirectory(String relative) {
            try {
                return fs().getFileStatus(path(relative)).isDirectory();
            } catch (java.io.FileNotFoundException e) {
                return false;
            } catch (IOException e) {
                throw new UncheckedIOException("cannot read " + path(relative), e);
            }
        }

        public List<String> list(String relative) {
            try {
                List<String> names = new ArrayList<>();
                for (org.apache.hadoop.fs.FileStatus s : fs().listStatus(path(relative))) {
                    names.add(s.getPath().getName());
                }
                return names;
            } catch (java.io.FileNotFoundException e) {
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
