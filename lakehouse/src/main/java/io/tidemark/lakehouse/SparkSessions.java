package io.tidemark.lakehouse;

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
        return create(config, appName, java.util.Map.of());
    }

    /** As {@link #create(TidemarkConfig, String)}, with {@code extra} Spark settings applied last (e.g. a Hive metastore's). */
    public static SparkSession create(TidemarkConfig config, String appName, java.util.Map<String, String> extra) {
        SparkSession.Builder b = SparkSession.builder().appName(appName);
        boolean submitted = System.getProperty("spark.master") != null;
        if (!submitted) {
            b.master(config.sparkMaster())
                    .config("spark.driver.host", "127.0.0.1")
                    .config("spark.driver.bindAddress", "127.0.0.1")
                    .config("spark.ui.enabled", "false")
                    .config("spark.ui.showConsoleProgress", "false");
        }
        b.config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
                .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
                .config("spark.sql.session.timeZone", "UTC")
                .config("spark.sql.shuffle.partitions", String.valueOf(config.shufflePartitions()))
                // Delta rebuilds a table's state with this many tasks after each commit; its default
                // (50) costs seconds per commit on a small machine. See bench/RESULTS.md.
                .config("spark.databricks.delta.snapshotPartitions", "2")
                // hll_sketch_agg is an object aggregate: past this many groups per task Spark abandons
                // the hash map and sorts every input row (default 128). A micro-batch has a few thousand
                // (window, cell) groups; the sort was most of the KPI aggregation's time (bench/RESULTS.md).
                .config("spark.sql.objectHashAggregate.sortBased.fallbackThreshold", "65536")
                // Where a plan's input is already clustered and sorted by the grouping keys (reconcile's
                // truth: repartitioned and sorted by window and dimensions), aggregate in one sorted pass
                // instead of a hash map per task; an object aggregate (collect_set) otherwise pays for both.
                .config("spark.sql.execution.replaceHashWithSortAgg", "true")
                // Compiled code is cached by its source, 100 classes by default: a stream's batch compiles
                // more than that (its stages, Delta's commit and snapshot work), so each batch evicted and
                // compiled again the classes the previous one had (half the compile time of a batch,
                // bench/RESULTS.md). A class is some tens of KB.
                .config("spark.sql.codegen.cache.maxEntries", "2000")
                .config("spark.sql.streaming.stateStore.stateSchemaCheck", "true")
                .config("spark.sql.adaptive.enabled", "true");
        // On one machine, file: paths without a process per file written (LocalDisk). Not on a cluster:
        // its executors keep Hadoop's class, which every executor's class loader has.
        String master = submitted ? System.getProperty("spark.master") : config.sparkMaster();
        if (master.startsWith("local")) {
            LocalDisk.sparkSettings().forEach(b::config);
        }
        extra.forEach(b::config);
        return b.getOrCreate();
    }
}
