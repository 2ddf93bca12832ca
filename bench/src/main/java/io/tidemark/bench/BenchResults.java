package io.tidemark.bench;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.Arrays;
import java.util.concurrent.TimeUnit;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

/** What the benchmarks share for their machine-readable results: medians, load average, commit, JSON files. */
final class BenchResults {
    static final ObjectMapper JSON = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT)
            .enable(SerializationFeature.ORDER_MAP_ENTRIES_BY_KEYS);

    private BenchResults() {
    }

    /** The median of the values; NaN when there are none. */
    static double median(double[] values) {
        if (values.length == 0) {
            return Double.NaN;
        }
        double[] s = values.clone();
        Arrays.sort(s);
        return s.length % 2 == 1 ? s[s.length / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
    }

    /** The three load averages (1, 5, 15 minutes) from /proc/loadavg, as written there; "?" if unreadable. */
    static String loadAverage() {
        try {
            String[] f = Files.readString(Path.of("/proc/loadavg")).trim().split("\\s+");
            return f[0] + " " + f[1] + " " + f[2];
        } catch (IOException | RuntimeException e) {
            return "?";
        }
    }

    /** A load average string as a JSON array of three numbers, or null if it was not readable. */
    static JsonNode loadAverageJson(String load) {
        String[] f = load.trim().split("\\s+");
        if (f.length != 3) {
            return JSON.nullNode();
        }
        ArrayNode a = JSON.createArrayNode();
        try {
            for (String x : f) {
                a.add(Double.parseDouble(x));
            }
        } catch (NumberFormatException e) {
            return JSON.nullNode();
        }
        return a;
    }

    /**
     * The start of a benchmark's results document: the command, the commit it ran on, whether the
     * working tree differed from it, and when it started.
     */
    static ObjectNode header(String command, Instant startedAt) {
        ObjectNode root = JSON.createObjectNode();
        root.put("command", command.trim());
        root.put("commit", gitCommit());
        Boolean dirty = gitDirty();
        if (dirty == null) {
            root.putNull("working_tree_dirty");
        } else {
            root.put("working_tree_dirty", dirty);
        }
        root.put("started_at", startedAt.toString());
        return root;
    }

    /** {@code git rev-parse --short HEAD} in the working directory, or null if git or the repository is not there. */
    static String gitCommit() {
        String out = git("rev-parse", "--short", "HEAD");
        return out == null || out.isBlank() ? null : out.trim();
    }

    /** Whether {@code git status --porcelain} lists tracked changes (so the commit is not exactly what ran); null if unknown. */
    static Boolean gitDirty() {
        String out = git("status", "--porcelain", "--untracked-files=no");
        return out == null ? null : !out.isBlank();
    }

    private static String git(String... args) {
        try {
            String[] cmd = new String[args.length + 1];
            cmd[0] = "git";
            System.arraycopy(args, 0, cmd, 1, args.length);
            Process p = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.DISCARD).start();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (!p.waitFor(30, TimeUnit.SECONDS) || p.exitValue() != 0) {
                p.destroy();
                return null;
            }
            return out;
        } catch (IOException e) {
            return null;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return null;
        }
    }

    /** Puts a number, or null when it is not finite (no runs, or a division by zero). */
    static void putNumber(ObjectNode o, String key, double v) {
        if (Double.isFinite(v)) {
            o.put(key, v);
        } else {
            o.putNull(key);
        }
    }

    /** Rounds to the given number of decimals (for readable JSON; the tables round the same way). */
    static double round(double v, int decimals) {
        if (!Double.isFinite(v)) {
            return v;
        }
        double f = Math.pow(10, decimals);
        return Math.round(v * f) / f;
    }

    /** Writes the JSON pretty-printed, creating the directory; returns the path. */
    static Path write(Path file, JsonNode root) throws IOException {
        Files.createDirectories(file.getParent());
        Files.writeString(file, JSON.writeValueAsString(root) + "\n");
        return file;
    }
}
