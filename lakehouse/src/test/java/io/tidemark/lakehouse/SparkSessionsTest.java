package io.tidemark.lakehouse;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Map;

import org.junit.jupiter.api.Test;

/**
 * Which Spark settings a job applies over the configuration it was started with: the cluster's win for
 * every tuning key, Delta and UTC are always there, Delta's extension beside the user's own.
 */
class SparkSessionsTest {
    private static final TidemarkConfig DEFAULTS = TidemarkConfig.defaults();

    @Test
    void onOneMachineTidemarksTuningFillsAnEmptyConfiguration() {
        Map<String, String> s = SparkSessions.settings(DEFAULTS, Map.of(), "local[2]", false);
        assertThat(s).containsEntry("spark.sql.shuffle.partitions", "2").containsEntry("spark.databricks.delta.snapshotPartitions", "2")
                .containsEntry("spark.sql.extensions", SparkSessions.DELTA_EXTENSION)
                .containsEntry("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
                .containsEntry("spark.sql.session.timeZone", "UTC").containsEntry("spark.driver.bindAddress", "127.0.0.1")
                .containsAllEntriesOf(LocalDisk.sparkSettings());
        TidemarkConfig eight = TidemarkConfig.builder().set(TidemarkConfig.Key.SHUFFLE_PARTITIONS, "8").build();
        assertThat(SparkSessions.settings(eight, Map.of(), "local[2]", false)).containsEntry("spark.sql.shuffle.partitions", "8");
    }

    @Test
    void underSparkSubmitTheClustersSettingsWin() {
        Map<String, String> given = Map.of("spark.sql.shuffle.partitions", "400", "spark.databricks.delta.snapshotPartitions", "50",
                "spark.sql.extensions", "com.example.AuditExtension", "spark.sql.session.timeZone", "America/New_York",
                "spark.sql.adaptive.enabled", "false");
        Map<String, String> s = SparkSessions.settings(DEFAULTS, given, "spark://10.0.0.1:7077", true);
        // a key the cluster sets is not touched, so Spark keeps the cluster's value
        assertThat(s).doesNotContainKeys("spark.sql.shuffle.partitions", "spark.databricks.delta.snapshotPartitions",
                "spark.sql.adaptive.enabled", "spark.driver.host", "spark.driver.bindAddress", "spark.ui.enabled");
        assertThat(s).doesNotContainKeys(LocalDisk.sparkSettings().keySet().toArray(String[]::new));
        // what the answers depend on: Delta beside the user's extension, Delta's catalog, UTC
        assertThat(s).containsEntry("spark.sql.extensions", "com.example.AuditExtension," + SparkSessions.DELTA_EXTENSION)
                .containsEntry("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
                .containsEntry("spark.sql.session.timeZone", "UTC");
        // tuning the cluster leaves unset is filled in
        assertThat(s).containsEntry("spark.sql.codegen.cache.maxEntries", "2000");
        // the application's name: the user's --name, else Tidemark's (spark-submit's default, the main class, is not a choice)
        assertThat(SparkSessions.appName("tidemark-stream", Map.of("spark.app.name", "kpis-eu-prod"))).isEqualTo("kpis-eu-prod");
        assertThat(SparkSessions.appName("tidemark-stream", Map.of("spark.app.name", "io.tidemark.stream.StreamingJob"))).isEqualTo("tidemark-stream");
        assertThat(SparkSessions.appName("tidemark-stream", Map.of())).isEqualTo("tidemark-stream");
        // Delta already among the user's extensions: the list as it is
        assertThat(SparkSessions.settings(DEFAULTS, Map.of("spark.sql.extensions", SparkSessions.DELTA_EXTENSION + ", com.example.A"),
                "yarn", true)).containsEntry("spark.sql.extensions", SparkSessions.DELTA_EXTENSION + ", com.example.A");
    }
}
