package io.tidemark.tests;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

/**
 * A real Spark standalone cluster (a master and workers, each its own JVM, from the pyspark 4.2.0 of
 * the repo's venv) started and stopped with {@code ops/spark-cluster}, the script users run; jobs
 * go to it through pyspark's real {@code spark-submit} with the shaded jobs jar.
 */
final class StandaloneCluster implements AutoCloseable {
    static final Path ROOT = Path.of(System.getProperty("user.dir")).getParent();
    static final Path SCRIPT = ROOT.resolve("ops/spark-cluster");
    static final Path JOBS_JAR = ROOT.resolve("spark-submit-jar/target/tidemark-spark-jobs.jar");

    final Path dir;
    final String masterUrl;
    final int uiPort;
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    private StandaloneCluster(Path dir, int port, int uiPort) {
        this.dir = dir;
        this.masterUrl = "spark://127.0.0.1:" + port;
        this.uiPort = uiPort;
    }

    /** {@code ops/spark-cluster start} with two workers of two cores: room for two applications of two one-core executors. */
    static StandaloneCluster start(Path dir) throws Exception {
        StandaloneCluster c = new StandaloneCluster(dir, PrometheusServer.freePort(), PrometheusServer.freePort());
        Result r = run(List.of(SCRIPT.toString(), "start", "--dir", dir.toString(), "--workers", "2", "--cores", "2",
                "--memory", "2g", "--port", String.valueOf(c.masterUrl.substring(c.masterUrl.lastIndexOf(':') + 1)),
                "--ui-port", String.valueOf(c.uiPort)), 120);
        assertThat(r.code).as("ops/spark-cluster start\n%s", r.output).isZero();
        assertThat(r.output).contains(c.masterUrl + " up with 2 workers");
        return c;
    }

    Result status() throws Exception {
        return run(List.of(SCRIPT.toString(), "status", "--dir", dir.toString()), 30);
    }

    @Override
    public void close() throws Exception {
        Result r = run(List.of(SCRIPT.toString(), "stop", "--dir", dir.toString()), 120);
        assertThat(r.code).as("ops/spark-cluster stop\n%s", r.output).isZero();
    }

    /** The master's view ({@code /json/}). */
    JsonNode master() throws Exception {
        return get("http://127.0.0.1:" + uiPort + "/json/");
    }

    /** pyspark's spark-submit, in the repo's venv. */
    static Path sparkHome() throws IOException {
        try (Stream<Path> libs = Files.list(ROOT.resolve(".venv/lib"))) {
            Path home = libs.map(p -> p.resolve("site-packages/pyspark")).filter(p -> Files.isExecutable(p.resolve("bin/spark-submit")))
                    .findFirst().orElseThrow(() -> new AssertionError("no pyspark in " + ROOT.resolve(".venv") + ": run python/setup-venv"));
            return home;
        }
    }

    /**
     * {@code spark-submit --master spark://...} of a class of the jobs jar, in client mode (the driver is
     * the spark-submit JVM): one-core executors, at most {@code cores} of them, the JVM options the jar
     * carries and the tests' JIT option for child JVMs, Tidemark's settings as {@code --conf spark.tidemark.<key>} (the way Spark users configure
     * applications) and the job's own arguments.
     */
    /** The cluster's {@code spark.sql.shuffle.partitions}, given to every job with {@code --conf}. */
    static final int SHUFFLE_PARTITIONS = 3;

    JobProcess submit(String mainClass, int cores, int driverUiPort, Map<String, String> settings, List<String> args, Path log) throws Exception {
        return submit(mainClass, cores, driverUiPort, settings, Map.of(), args, log);
    }

    /** As {@link #submit(String, int, int, Map, List, Path)}, with {@code sparkConf} as more {@code --conf}s (an object store's {@code spark.hadoop.*}). */
    JobProcess submit(String mainClass, int cores, int driverUiPort, Map<String, String> settings, Map<String, String> sparkConf, List<String> args,
            Path log) throws Exception {
        // The driver and the executors live minutes at most: C1 only, as the tests' other child JVMs (JobProcess),
        // and Spark's classes mapped from run-tests' archive of them when there is one (the driver gets it
        // through SPARK_SUBMIT_OPTS, the executors here).
        String opens = String.join(" ", Files.readAllLines(ROOT.resolve("lakehouse/target/classes/tidemark/jvm.options"))).trim()
                + " " + String.join(" ", JobProcess.SHORT_LIVED_JVM)
                + " " + System.getenv().getOrDefault("TIDEMARK_SPARK_CDS_OPTS", "").trim();
        List<String> cmd = new ArrayList<>(List.of(sparkHome().resolve("bin/spark-submit").toString(),
                "--master", masterUrl, "--deploy-mode", "client", "--class", mainClass,
                "--conf", "spark.cores.max=" + cores, "--conf", "spark.executor.cores=1", "--conf", "spark.executor.memory=768m",
                "--conf", "spark.driver.memory=1g", "--conf", "spark.log.level=WARN", "--conf", "spark.ui.port=" + driverUiPort, "--conf", "spark.port.maxRetries=0",
                // a cluster's own Spark setting, which the jobs must run with rather than Tidemark's default of 2 (SparkSessions)
                "--conf", "spark.sql.shuffle.partitions=" + SHUFFLE_PARTITIONS,
                "--conf", "spark.driver.extraJavaOptions=" + opens, "--conf", "spark.executor.extraJavaOptions=" + opens));
        settings.forEach((k, v) -> {
            cmd.add("--conf");
            cmd.add("spark.tidemark." + k + "=" + v);
        });
        sparkConf.forEach((k, v) -> {
            cmd.add("--conf");
            cmd.add(k + "=" + v);
        });
        cmd.add(JOBS_JAR.toString());
        cmd.addAll(args);
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()));
        pb.environment().put("SPARK_LOCAL_IP", "127.0.0.1");
        pb.environment().remove("TIDEMARK_METRICS_PORT"); // the conf decides
        return JobProcess.of(pb.start(), log);
    }

    /** A submitted application's executors, as its driver's REST API lists them (removed ones included), by id. */
    static Map<String, JsonNode> executors(int driverUiPort) throws Exception {
        JsonNode apps = get("http://127.0.0.1:" + driverUiPort + "/api/v1/applications");
        String app = apps.get(0).get("id").asText();
        Map<String, JsonNode> out = new LinkedHashMap<>();
        for (JsonNode e : get("http://127.0.0.1:" + driverUiPort + "/api/v1/applications/" + app + "/allexecutors")) {
            if (!e.get("id").asText().equals("driver")) {
                out.put(e.get("id").asText(), e);
            }
        }
        return out;
    }

    /** The pid of an executor JVM of this machine, from its command line (CoarseGrainedExecutorBackend --executor-id ID --app-id APP). */
    static Optional<Long> executorPid(String appId, String executorId) throws IOException {
        try (Stream<Path> procs = Files.list(Path.of("/proc"))) {
            for (Path p : procs.filter(p -> p.getFileName().toString().matches("\\d+")).toList()) {
                List<String> args;
                try {
                    args = List.of(new String(Files.readAllBytes(p.resolve("cmdline")), StandardCharsets.UTF_8).split("\0"));
                } catch (IOException gone) {
                    continue;
                }
                int id = args.indexOf("--executor-id");
                int app = args.indexOf("--app-id");
                if (args.contains("org.apache.spark.executor.CoarseGrainedExecutorBackend") && id > 0 && app > 0
                        && args.get(id + 1).equals(executorId) && args.get(app + 1).equals(appId)) {
                    return Optional.of(Long.parseLong(p.getFileName().toString()));
                }
            }
        }
        return Optional.empty();
    }

    static String appId(int driverUiPort) throws Exception {
        return get("http://127.0.0.1:" + driverUiPort + "/api/v1/applications").get(0).get("id").asText();
    }

    /** Every executor JVM of this machine that runs in one of this cluster's workers' directories. */
    long executorJvms() throws IOException {
        try (Stream<Path> procs = Files.list(Path.of("/proc"))) {
            return procs.filter(p -> p.getFileName().toString().matches("\\d+")).filter(p -> {
                try {
                    String cmd = new String(Files.readAllBytes(p.resolve("cmdline")), StandardCharsets.UTF_8);
                    return cmd.contains("CoarseGrainedExecutorBackend") && Files.readSymbolicLink(p.resolve("cwd")).startsWith(dir);
                } catch (IOException gone) {
                    return false;
                }
            }).count();
        }
    }

    static JsonNode get(String url) throws Exception {
        HttpResponse<String> r = HTTP.send(HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(10)).build(),
                HttpResponse.BodyHandlers.ofString());
        if (r.statusCode() != 200) {
            throw new IOException(url + " answered " + r.statusCode());
        }
        return JSON.readTree(r.body());
    }

    record Result(int code, String output) {
    }

    static Result run(List<String> cmd, long timeoutSeconds) throws Exception {
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        byte[] out = p.getInputStream().readAllBytes();
        if (!p.waitFor(timeoutSeconds, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new AssertionError(cmd + " did not finish in " + timeoutSeconds + " s");
        }
        return new Result(p.exitValue(), new String(out, StandardCharsets.UTF_8));
    }
}
