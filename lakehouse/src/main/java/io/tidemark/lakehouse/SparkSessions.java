package io.tidemark.lakehouse;

import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.TreeMap;

import org.apache.spark.SparkConf;
import org.apache.spark.sql.SparkSession;

/** Builds the Spark session both jobs run in, with Delta and the tuning measured in bench/. */
public final class SparkSessions {
    private SparkSessions() {
    }

    /**
     * A session for the launcher and the tests. When running under {@code spark-submit} (a
     * {@code spark.master} is already set by Spark), the master and the bind addresses are left
     * to Spark's own configuration.
     */
    public static SparkSession create(TidemarkConfig config, String appName) {
        return create(config, appName, Map.of());
    }

    /** As {@link #create(TidemarkConfig, String)}, with {@code extra} Spark settings applied last (e.g. a Hive metastore's). */
    public static SparkSession create(TidemarkConfig config, String appName, Map<String, String> extra) {
        SparkSession.Builder b = SparkSession.builder();
        boolean submitted = System.getProperty("spark.master") != null;
        String master = submitted ? System.getProperty("spark.master") : config.sparkMaster();
        if (!submitted) {
            b.master(master);
        }
        // What the JVM was started with: spark-submit's --conf and spark-defaults.conf arrive as spark.* system properties.
        Map<String, String> given = new HashMap<>();
        for (scala.Tuple2<String, String> kv : new SparkConf(true).getAll()) {
            given.put(kv._1(), kv._2());
        }
        b.appName(appName(appName, given));
        settings(config, given, master, submitted).forEach(b::config);
        extra.forEach(b::config);
        return b.getOrCreate();
    }

    /**
     * The application's name: the one the configuration gives ({@code spark-submit --name}, {@code
     * spark.app.name}), else Tidemark's ({@code tidemark-stream}, ...). spark-submit names an application
     * after its main class when not told otherwise: a Tidemark class name counts as not told.
     */
    static String appName(String tidemarks, Map<String, String> given) {
        String name = given.get("spark.app.name");
        return name == null || name.isBlank() || name.startsWith("io.tidemark.") ? tidemarks : name;
    }

    /** Delta's session extension: every session Tidemark opens has it, beside any the user's configuration names. */
    static final String DELTA_EXTENSION = "io.delta.sql.DeltaSparkSessionExtension";

    /**
     * The Spark settings Tidemark applies over {@code given}, the Spark configuration the JVM was started
     * with (a cluster's spark-defaults.conf, spark-submit's {@code --conf}). Two kinds:
     * <ul>
     * <li>what Tidemark needs to be right, always: Delta's extension (added to the user's list of
     *   extensions, not in place of it) and catalog, UTC as the session's time zone (a day is a UTC day), and
     *   for a lakehouse or checkpoint on S3 the log store and checkpoint manager {@link ObjectStorage} names;</li>
     * <li>tuning for a small machine, measured in bench/ (shuffle partitions from the setting
     *   {@code spark.shuffle-partitions}, Delta's snapshot partitions, ...), and on a local master the
     *   loopback addresses and the local file system without a process per file: each applied only
     *   where {@code given} does not set the key, so a cluster's {@code --conf
     *   spark.sql.shuffle.partitions=400} is what runs.</li>
     * </ul>
     */
    static Map<String, String> settings(TidemarkConfig config, Map<String, String> given, String master, boolean submitted) {
        Map<String, String> tuning = new LinkedHashMap<>();
        if (!submitted) {
            tuning.put("spark.driver.host", "127.0.0.1");
            tuning.put("spark.driver.bindAddress", "127.0.0.1");
            tuning.put("spark.ui.enabled", "false");
            tuning.put("spark.ui.showConsoleProgress", "false");
        }
        tuning.put("spark.sql.shuffle.partitions", String.valueOf(config.shufflePartitions()));
        // Delta rebuilds a table's state with this many tasks after each commit; its default
        // (50) costs seconds per commit on a small machine. See bench/RESULTS.md.
        tuning.put("spark.databricks.delta.snapshotPartitions", "2");
        // hll_sketch_agg is an object aggregate: past this many groups per task Spark abandons
        // the hash map and sorts every input row (default 128). A micro-batch has a few thousand
        // (window, cell) groups; the sort was most of the KPI aggregation's time (bench/RESULTS.md).
        tuning.put("spark.sql.objectHashAggregate.sortBased.fallbackThreshold", "65536");
        // Where a plan's input is already clustered and sorted by the grouping keys (reconcile's
        // truth: repartitioned and sorted by window and dimensions), aggregate in one sorted pass
        // instead of a hash map per task; an object aggregate (collect_set) otherwise pays for both.
        tuning.put("spark.sql.execution.replaceHashWithSortAgg", "true");
        // Compiled code is cached by its source, 100 classes by default: a stream's batch compiles
        // more than that (its stages, Delta's commit and snapshot work), so each batch evicted and
        // compiled again the classes the previous one had (half the compile time of a batch,
        // bench/RESULTS.md). A class is some tens of KB.
        tuning.put("spark.sql.codegen.cache.maxEntries", "2000");
        tuning.put("spark.sql.streaming.stateStore.stateSchemaCheck", "true");
        // A vacuum leaves VACUUM START/END commits in the table's history on every store: Delta's default
        // leaves them out on S3, where a lakehouse's history would then not say when maintain removed files.
        tuning.put("spark.databricks.delta.vacuum.logging.enabled", "true");
        tuning.put("spark.sql.adaptive.enabled", "true");
        // On one machine, file: paths without a process per file written (LocalDisk). Not on a cluster:
        // its executors keep Hadoop's class, which every executor's class loader has.
        if (master.startsWith("local")) {
            tuning.putAll(new TreeMap<>(LocalDisk.sparkSettings()));
        }
        Map<String, String> out = new LinkedHashMap<>();
        String extensions = given.get("spark.sql.extensions");
        boolean hasDelta = extensions != null && Arrays.stream(extensions.split(",")).map(String::trim).anyMatch(DELTA_EXTENSION::equals);
        out.put("spark.sql.extensions", extensions == null || extensions.isBlank() ? DELTA_EXTENSION
                : hasDelta ? extensions : extensions + "," + DELTA_EXTENSION);
        out.put("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog");
        out.put("spark.sql.session.timeZone", "UTC");
        out.putAll(ObjectStorage.sparkSettings(config.lakehouseUri(), config.checkpointUri(), config.trustedLogStores(), given));
        tuning.forEach((k, v) -> {
            if (!given.containsKey(k)) {
                out.put(k, v);
            }
        });
        return out;
    }
}
