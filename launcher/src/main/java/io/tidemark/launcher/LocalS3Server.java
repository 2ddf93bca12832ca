package io.tidemark.launcher;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * The repository's local S3-compatible server ({@code ops/s3-server run}: ministack on loopback) with
 * one bucket, for {@code tidemark demo --storage s3} and the tests. Its objects live in a directory, so
 * that {@link #stop()} and {@link #start()} are an outage it comes back from, and a server started again
 * on the same directory serves the same tables. Any access key is accepted; the settings below are the
 * only ones S3A needs to reach it, per bucket, so that other buckets keep their own.
 */
public final class LocalS3Server implements AutoCloseable {
    private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    private final Path script;
    private final int port;
    private final String bucket;
    private final Path dir;
    private final Path log;
    private Process process;

    private LocalS3Server(Path script, int port, String bucket, Path dir) {
        this.script = script;
        this.port = port;
        this.bucket = bucket;
        this.dir = dir;
        this.log = dir.resolve("server.log");
    }

    /**
     * Starts a server from {@code script} ({@code <repo>/ops/s3-server}, installed) on {@code port} (0: a
     * free one) over {@code dir} (created), and makes {@code bucket} (or finds it there, made by an earlier server on {@code dir}).
     */
    public static LocalS3Server start(Path script, int port, String bucket, Path dir) throws IOException, InterruptedException {
        Files.createDirectories(dir);
        LocalS3Server s = new LocalS3Server(script, port == 0 ? freePort() : port, bucket, dir);
        s.start();
        int made = s.request("PUT", "", null, Map.of());
        if (made != 200 && made != 409) {
            s.close();
            throw new IOException("the S3 server did not make bucket " + bucket + ": HTTP " + made + "; see " + s.log);
        }
        return s;
    }

    /**
     * As {@link #start(Path, int, String, Path)}, after {@code <script> install} (which makes the server's venv, or
     * returns at once when it is up to date); a failed install is an IOException with its output.
     */
    public static LocalS3Server installAndStart(Path script, int port, String bucket, Path dir) throws IOException, InterruptedException {
        Process install = new ProcessBuilder(script.toString(), "install").redirectErrorStream(true).start();
        String output = new String(install.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
        if (install.waitFor() != 0) {
            throw new IOException("'" + script + " install' failed: " + output);
        }
        return start(script, port, bucket, dir);
    }

    /** The command that serves this server: {@code <script> run --port P --dir <objects>}, also after it stopped. */
    public List<String> runCommand() {
        return List.of(script.toString(), "run", "--port", String.valueOf(port), "--dir", dir.resolve("objects").toString());
    }

    /** Starts (again) the server on its port and directory and waits until it answers. */
    public void start() throws IOException, InterruptedException {
        process = new ProcessBuilder(runCommand())
                .redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile())).start();
        Process started = process;
        // a JVM that ends without closing the server does not leave it running
        Runtime.getRuntime().addShutdownHook(new Thread(() -> started.toHandle().destroyForcibly()));
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (true) {
            try {
                HTTP.send(HttpRequest.newBuilder(URI.create(endpoint() + "/")).timeout(Duration.ofSeconds(2)).GET().build(),
                        HttpResponse.BodyHandlers.discarding());
                return;
            } catch (IOException e) {
                if (!process.isAlive() || System.nanoTime() > deadline) {
                    throw new IOException("the S3 server did not start on port " + port + "; its log, " + log + ":\n" + Files.readString(log), e);
                }
                Thread.sleep(100);
            }
        }
    }

    /** Stops the server (SIGTERM); its objects stay in its directory for {@link #start()}. */
    public void stop() throws InterruptedException {
        if (process != null && process.isAlive()) {
            process.toHandle().descendants().forEach(ProcessHandle::destroy);
            process.destroy();
            if (!process.waitFor(15, TimeUnit.SECONDS)) {
                process.toHandle().descendants().forEach(ProcessHandle::destroyForcibly);
                process.destroyForcibly().waitFor();
            }
        }
    }

    public int port() {
        return port;
    }

    public String bucket() {
        return bucket;
    }

    public String endpoint() {
        return "http://127.0.0.1:" + port;
    }

    /** The s3a URI of {@code path} in the bucket. */
    public String uri(String path) {
        return "s3a://" + bucket + "/" + path;
    }

    /**
     * Hadoop's S3A settings that reach this server's bucket (per-bucket keys: other buckets are not touched): where it is
     * ({@link #endpointSettings()}) and a key it accepts (it accepts any).
     */
    public Map<String, String> hadoopSettings() {
        Map<String, String> s = endpointSettings();
        String b = "fs.s3a.bucket." + bucket + ".";
        s.put(b + "access.key", "tidemark");
        s.put(b + "secret.key", "tidemark-secret");
        return s;
    }

    /** Where the server is, for S3A, without credentials (those may come from the AWS variables instead). */
    public Map<String, String> endpointSettings() {
        Map<String, String> s = new LinkedHashMap<>();
        String b = "fs.s3a.bucket." + bucket + ".";
        s.put(b + "endpoint", endpoint());
        s.put(b + "endpoint.region", "us-east-1");
        s.put(b + "path.style.access", "true");
        return s;
    }

    /** {@link #hadoopSettings()} as Spark settings ({@code spark.hadoop.fs.s3a.*}), as {@code --conf} or system properties pass them. */
    public Map<String, String> sparkSettings() {
        return asSpark(hadoopSettings());
    }

    /** {@code spark.hadoop.} before each key: how Spark hands a Hadoop setting on. */
    public static Map<String, String> asSpark(Map<String, String> hadoop) {
        Map<String, String> s = new LinkedHashMap<>();
        hadoop.forEach((k, v) -> s.put("spark.hadoop." + k, v));
        return s;
    }

    /** One unsigned request to the bucket ({@code key} empty: the bucket itself); the HTTP status. */
    public int request(String method, String key, byte[] body, Map<String, String> headers) throws IOException, InterruptedException {
        HttpRequest.Builder r = HttpRequest.newBuilder(URI.create(endpoint() + "/" + bucket + (key.isEmpty() ? "" : "/" + key)))
                .timeout(Duration.ofSeconds(30))
                .method(method, body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofByteArray(body));
        headers.forEach(r::header);
        return HTTP.send(r.build(), HttpResponse.BodyHandlers.discarding()).statusCode();
    }

    @Override
    public void close() throws InterruptedException {
        stop();
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        }
    }
}
