package io.tidemark.tests;

import io.tidemark.launcher.LocalS3Server;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

/**
 * The repository's S3-compatible server ({@link LocalS3Server}: {@code ops/s3-server run}, ministack) on a
 * free loopback port, with a bucket of its own named after the port, so that Hadoop's per-bucket settings
 * and its cache of file systems keep servers apart. {@link #stop()} and {@link #start()} act as an outage
 * the server comes back from. {@code run-tests} installs it ({@code ops/s3-server install}).
 */
final class S3Server implements AutoCloseable {
    private static final Path ROOT = Path.of(System.getProperty("user.dir")).toAbsolutePath().getParent();

    private final LocalS3Server server;
    final int port;
    final String bucket;

    private S3Server(LocalS3Server server) {
        this.server = server;
        this.port = server.port();
        this.bucket = server.bucket();
    }

    /** Starts a server over {@code dir} (created) and makes the bucket. */
    static S3Server start(Path dir) throws Exception {
        if (!Files.isExecutable(ROOT.resolve(".venv-s3/bin/ministack"))) {
            throw new AssertionError("no S3 server in " + ROOT.resolve(".venv-s3") + ": run 'ops/s3-server install' (run-tests does)");
        }
        int port = PrometheusServer.freePort();
        return new S3Server(LocalS3Server.start(ROOT.resolve("ops/s3-server"), port, "tidemark-" + port, dir));
    }

    /** Starts the server again on its port and directory and waits until it answers. */
    void start() throws Exception {
        server.start();
    }

    /** Stops the server (SIGTERM); its objects stay in its directory for {@link #start()}. */
    void stop() throws Exception {
        server.stop();
    }

    String endpoint() {
        return server.endpoint();
    }

    /** The s3a URI of {@code path} in the bucket. */
    String uri(String path) {
        return server.uri(path);
    }

    /** Hadoop's S3A settings that reach this server, as Spark settings ({@code spark.hadoop.fs.s3a.*}). */
    Map<String, String> sparkSettings() {
        return server.sparkSettings();
    }

    /** Hadoop's S3A settings that reach this server's bucket (per-bucket keys: other buckets are not touched). */
    Map<String, String> hadoopSettings() {
        return server.hadoopSettings();
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
        return server.request(method, key, body, headers);
    }

    @Override
    public void close() throws Exception {
        server.close();
    }
}
