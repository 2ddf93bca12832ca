package io.tidemark.lakehouse;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.Optional;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;

import io.tidemark.pipeline.Pipeline;

/**
 * The pipeline a lakehouse's stream runs, kept in the lakehouse itself ({@value #FILE} under its
 * root, the file's text as the stream read it), so that every other part reads the same definition:
 * a command or job given no {@code pipeline} setting runs with it
 * ({@link TidemarkConfig.Builder#buildForLakehouse}). Reconcile, maintain, status, the report, the
 * catalog, {@code tidemark sql} and the Airflow DAG's jobs need no {@code --pipeline}; the stream
 * restarts with it. The stream writes it at start, after the query-definition check
 * ({@link QueryDefinition}) has accepted the pipeline, so the file only ever holds a definition
 * the lakehouse's tables agree with (a KPI table added since included).
 *
 * <p>The shipped default pipeline is not recorded: a lakehouse without the file runs the default,
 * with the {@code topic}, {@code window} and {@code lateness} settings, as before pipeline files.
 */
public final class RecordedPipeline {
    /** Where, under the lakehouse root. */
    public static final String FILE = "_tidemark/pipeline.sql";

    private RecordedPipeline() {
    }

    /** The recorded pipeline's path (or URI) in the lakehouse at {@code lakehouseUri}. */
    public static String location(String lakehouseUri) {
        return (lakehouseUri.endsWith("/") ? lakehouseUri : lakehouseUri + "/") + FILE;
    }

    /** Whether {@code location} holds a recorded pipeline. */
    static boolean exists(String location) {
        Path p = new Path(location);
        try {
            return p.getFileSystem(hadoopConf()).exists(p);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + location + ": " + e.getMessage(), e);
        }
    }

    /** The text of a file named by a Hadoop URI (or a local path). */
    static String readText(String location) {
        Path p = new Path(location);
        try (InputStream in = p.getFileSystem(hadoopConf()).open(p)) {
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + location + ": " + e.getMessage(), e);
        }
    }

    /** The text the lakehouse at {@code lakehouseUri} records, if any. */
    public static Optional<String> text(String lakehouseUri) {
        String location = location(lakehouseUri);
        return exists(location) ? Optional.of(readText(location)) : Optional.empty();
    }

    /**
     * Records the pipeline of {@code config} in its lakehouse when it is a pipeline file whose text the
     * lakehouse does not hold yet (written to a temporary file, then renamed over the old one). The
     * shipped default is not recorded.
     */
    public static void record(Configuration hadoop, TidemarkConfig config) {
        Optional<Pipeline> pipeline = config.pipelineFile();
        if (pipeline.isEmpty() || pipeline.get().source() == null) {
            return;
        }
        String text = pipeline.get().source();
        Path p = new Path(location(config.lakehouseUri()));
        Path tmp = new Path(p.getParent(), "." + p.getName() + ".tmp");
        try {
            FileSystem fs = p.getFileSystem(hadoop);
            if (fs.exists(p)) {
                try (InputStream in = fs.open(p)) {
                    if (new String(in.readAllBytes(), StandardCharsets.UTF_8).equals(text)) {
                        return;
                    }
                }
            }
            fs.mkdirs(p.getParent());
            try (OutputStream out = fs.create(tmp, true)) {
                out.write(text.getBytes(StandardCharsets.UTF_8));
            }
            fs.delete(p, false);
            if (!fs.rename(tmp, p)) {
                throw new IOException("rename " + tmp + " -> " + p + " failed");
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot record the pipeline in " + p + ": " + e.getMessage(), e);
        }
    }

    /**
     * The Hadoop configuration for reading before any Spark session exists: Hadoop's defaults (its
     * site files on the classpath) and Spark's {@code spark.hadoop.*} settings of this JVM, as Spark
     * would apply them.
     */
    static Configuration hadoopConf() {
        Configuration conf = new Configuration();
        System.getProperties().stringPropertyNames().stream().filter(n -> n.startsWith("spark.hadoop."))
                .forEach(n -> conf.set(n.substring("spark.hadoop.".length()), System.getProperty(n)));
        return conf;
    }
}
