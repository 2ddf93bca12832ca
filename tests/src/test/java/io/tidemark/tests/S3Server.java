package io.tidemark.tests;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * A real S3-compatible server on a free loopback port ({@code ops/s3-server run}: ministack), with a
 * bucket of its own ({@link #bucket}, named after the port, so that Hadoop's per-bucket settings and
 * its cache of file systems keep servers apart). Its objects are kept in a directory, so {@link
 * #stop()} and {@link #start()} act as an outage the server comes back from. {@code run-tests}
 * installs it ({@code ops/s3-server install}).
 */
final class S3Server implements AutoCloseable {
    private static final Path ROOT = Path.of(System.getProperty("user.dir")).toAbsolutePath().getParent();
    private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    final int port;
    final String bucket;
    private final Path dir;
    private final Path log;
    private Process process;

    private S3Server(int port, Path dir) {
        this.port = port;
        this.bucket = "tidemark-" + port;
        this.dir = dir;
        this.log = dir.resolve("server.log");
    }

    /** Starts a server over {@code dir} (created) and makes the bucket. */
    static S3Server start(Path dir) throws Exception {
        Files.createDirectories(dir);
        S3Server s = new S3Server(PrometheusServer.freePort(), dir);
        s.start();
        int made = s.request("PUT", "", null, Map.of());
        if (made != 200) {
            s.close();
            throw new AssertionError("the S3 server did not make bucket " + s.bucket + ": HTTP " + made + "; log " + s.log);
        }
        return s;
    }

    /** Starts (again) the server on its port and directory and waits until it answers. */
    void start() throws Exception {
        Path script = ROOT.resolve("ops/s3-server");
        if (!Files.isExecutable(ROOT.resolve(".venv-s3/bin/ministack"))) {
            throw new AssertionError("no S3 server in " + ROOT.resolve(".venv-s3") + ": run 'ops/s3-server install' (run-tests does)");
        }
        process = new ProcessBuilder(script.toString(), "run", "--port", String.valueOf(port), "--dir", dir.resolve("objects").toString())
                .redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile())).start();
        Process started = process;
        // a test that fails before it closes the server does not leave it running after the test JVM
        Runtime.getRuntime().addShutdownHook(new Thread(() -> started.toHandle().destroyForcibly()));
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (true) {
            try {
                HTTP.send(HttpRequest.newBuilder(URI.create(endpoint() + "/")).timeout(Duration.ofSeconds(2)).GET().build(),
                        HttpResponse.BodyHandlers.discarding());
                return;
            } catch (IOException e) {
                if (!process.isAlive() || System.nanoTime() > deadline) {
                    throw new AssertionError("the S3 server did not start on port " + port + "; log " + log + ":\n" + Files.readString(log), e);
                }
                Thread.sleep(100);
            }
        }
    }

    /** Stops the server (SIGTERM); its objects stay in its directory for {@link #start()}. */
    void stop() throws Exception {
        if (process != null && process.isAlive()) {
            process.toHandle().descendants().forEach(ProcessHandle::destroy);
            process.destroy();
            if (!process.waitFor(15, TimeUnit.SECONDS)) {
                process.toHandle().descendants().forEach(ProcessHandle::destroyForcibly);
                process.destroyForcibly().waitFor();
            }
        }
    }

    String endpoint() {
        return "http://127.0.0.1:" + port;
    }

    /** The s3a URI of {@code path} in the bucket. */
    String uri(String path) {
        return "s3a://" + bucket + "/" + path;
    }

    /** Hadoop's S3A settings that reach this server, as Spark settings ({@code spark.hadoop.fs.s3a.*}). */
    Map<String, String> sparkSettings() {
        Map<String, String> s = new LinkedHashMap<>();
        hadoopSettings().forEach((k, v) -> s.put("spark.hadoop." + k, v));
        return s;
    }

    /** Hadoop's S3A settings that reach this server's bucket (per-bucket keys: other buckets are not touched). */
    Map<String, String> hadoopSettings() {
        Map<String, String> s = new LinkedHashMap<>();
        String b = "fs.s3a.bucket." + bucket + ".";
        s.put(b + "endpoint", endpoint());
        s.put(b + "endpoint.region", "us-east-1");
        s.put(b + "path.style.access", "true");
        s.put(b + "access.key", "tidemark");
        s.put(b + "secret.key", "tidemark-secret");
        return s;
    }

    /**
     * Points this JVM at this server's bucket: a running session's Hadoop configuration (which Spark and
     * Delta copy per job), and the {@code spark.hadoop.*} system properties a command reads before it
     * has a session (as a user's {@code -Dspark.hadoop.fs.s3a...} in TIDEMARK_JAVA_OPTS).
     */
    void configure(org.apache.spark.sql.SparkSession spark) {
        hadoopSettings().forEach(spark.sparkContext().hadoopConfiguration()::set);
        sparkSettings().forEach(System::setProperty);
    }

    /** One request to the bucket ({@code key} empty: the bucket itself); the HTTP status. */
    int request(String method, String key, byte[] body, Map<String, String> headers) throws Exception {
        HttpRequest.Builder r = HttpRequest.newBuilder(URI.create(endpoint() + "/" + bucket + (key.isEmpty() ? "" : "/" + key)))
                .timeout(Duration.ofSeconds(30))
                .method(method, body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofByteArray(body));
        headers.forEach(r::header);
        return HTTP.send(r.build(), HttpResponse.BodyHandlers.discarding()).statusCode();
    }

    @Override
    public void close() throws Exception {
        stop();
    }
}
