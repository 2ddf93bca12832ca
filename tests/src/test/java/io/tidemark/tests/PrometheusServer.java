package io.tidemark.tests;

import java.io.IOException;
import java.net.ServerSocket;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

/**
 * A real Prometheus server (Debian's {@code prometheus} package, which ./run-tests installs) in its
 * own process on loopback, scraping one target every second and evaluating a rules file, queried
 * through its HTTP API.
 */
final class PrometheusServer implements AutoCloseable {
    private static final ObjectMapper JSON = new ObjectMapper();
    private final Process process;
    private final String api;
    private final Path log;
    private final HttpClient http = HttpClient.newHttpClient();

    private PrometheusServer(Process process, String api, Path log) {
        this.process = process;
        this.api = api;
        this.log = log;
    }

    /** The path of a binary of Debian's prometheus package, or an error saying how to install it. */
    static String binary(String name) {
        return binary(name, "prometheus");
    }

    /** The path of {@code name} on the PATH (or /usr/bin), or an error naming the Debian package that has it. */
    static String binary(String name, String debianPackage) {
        for (String dir : (System.getenv().getOrDefault("PATH", "") + ":/usr/bin:/usr/local/bin").split(":")) {
            if (!dir.isEmpty() && Files.isExecutable(Path.of(dir, name))) {
                return Path.of(dir, name).toString();
            }
        }
        throw new IllegalStateException(name + " is not installed: apt-get install " + debianPackage + " (./run-tests does it)");
    }

    static PrometheusServer start(Path dir, String target, Path rules) throws Exception {
        Files.createDirectories(dir);
        int port = freePort();
        Path config = dir.resolve("prometheus.yml");
        Files.writeString(config, String.join("\n",
                "global:",
                "  scrape_interval: 1s",
                "  evaluation_interval: 1s",
                "rule_files:",
                "  - " + rules.toAbsolutePath(),
                "scrape_configs:",
                "  - job_name: tidemark-stream",
                "    static_configs:",
                "      - targets: ['" + target + "']",
                ""));
        Path log = dir.resolve("prometheus.log");
        Process p = new ProcessBuilder(binary("prometheus"), "--config.file=" + config, "--storage.tsdb.path=" + dir.resolve("data"),
                "--web.listen-address=127.0.0.1:" + port, "--log.level=warn")
                .redirectErrorStream(true).redirectOutput(log.toFile()).start();
        PrometheusServer server = new PrometheusServer(p, "http://127.0.0.1:" + port, log);
        Instant deadline = Instant.now().plusSeconds(60);
        while (true) {
            if (!p.isAlive()) {
                throw new IllegalStateException("prometheus exited with " + p.exitValue() + ": " + Files.readString(log));
            }
            try {
                if (server.get("/-/ready").statusCode() == 200) {
                    return server;
                }
            } catch (IOException e) {
                // not listening yet
            }
            if (Instant.now().isAfter(deadline)) {
                server.close();
                throw new IllegalStateException("prometheus not ready within 60 s: " + Files.readString(log));
            }
            Thread.sleep(200);
        }
    }

    private HttpResponse<String> get(String path) throws IOException, InterruptedException {
        return http.send(HttpRequest.newBuilder(URI.create(api + path)).timeout(Duration.ofSeconds(10)).build(),
                HttpResponse.BodyHandlers.ofString());
    }

    /** The result vector of an instant query. */
    List<JsonNode> query(String promql) throws Exception {
        HttpResponse<String> r = get("/api/v1/query?query=" + URLEncoder.encode(promql, StandardCharsets.UTF_8));
        JsonNode body = JSON.readTree(r.body());
        if (r.statusCode() != 200 || !"success".equals(body.path("status").asText())) {
            throw new IllegalStateException("query " + promql + " failed: " + r.body());
        }
        List<JsonNode> out = new ArrayList<>();
        body.path("data").path("result").forEach(out::add);
        return out;
    }

    /** The value of each sample of {@code promql}, by the value of {@code label}. */
    Map<String, Double> byLabel(String promql, String label) throws Exception {
        Map<String, Double> out = new TreeMap<>();
        for (JsonNode s : query(promql)) {
            out.put(s.path("metric").path(label).asText(), s.path("value").get(1).asDouble());
        }
        return out;
    }

    /** The one sample's value of {@code promql}; an error if there is not exactly one. */
    double value(String promql) throws Exception {
        List<JsonNode> r = query(promql);
        if (r.size() != 1) {
            throw new AssertionError("expected one sample of " + promql + ", got " + r);
        }
        return r.get(0).path("value").get(1).asDouble();
    }

    /** Waits until {@code promql} has one sample equal to {@code expected}; the last answer in the error otherwise. */
    void await(String promql, double expected, Duration timeout) throws Exception {
        Instant deadline = Instant.now().plus(timeout);
        List<JsonNode> last = List.of();
        while (Instant.now().isBefore(deadline)) {
            last = query(promql);
            if (last.size() == 1 && last.get(0).path("value").get(1).asDouble() == expected) {
                return;
            }
            Thread.sleep(500);
        }
        throw new AssertionError("Prometheus did not see " + promql + " == " + expected + " within " + timeout.toSeconds() + " s; last: " + last);
    }

    /** The rule groups Prometheus loaded ({@code /api/v1/rules}). */
    JsonNode ruleGroups() throws Exception {
        return JSON.readTree(get("/api/v1/rules").body()).path("data").path("groups");
    }

    /** The scrape targets' health ({@code /api/v1/targets}). */
    JsonNode activeTargets() throws Exception {
        return JSON.readTree(get("/api/v1/targets").body()).path("data").path("activeTargets");
    }

    static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        }
    }

    /** Runs promtool with {@code args}; its exit code and output. */
    static Map.Entry<Integer, String> promtool(Path workDir, String... args) throws Exception {
        List<String> cmd = new ArrayList<>(List.of(binary("promtool")));
        cmd.addAll(List.of(args));
        Process p = new ProcessBuilder(cmd).directory(workDir.toFile()).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(120, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new IllegalStateException("promtool " + args[0] + " did not finish within 120 s");
        }
        return Map.entry(p.exitValue(), out);
    }

    @Override
    public void close() throws Exception {
        process.destroy();
        if (!process.waitFor(20, TimeUnit.SECONDS)) {
            process.destroyForcibly();
        }
    }

    Path log() {
        return log;
    }
}
