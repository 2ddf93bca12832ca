package io.tidemark.stream;

import org.apache.spark.sql.SparkSession;

/**
 * The small local Spark of this module's tests: one core, two shuffle partitions, no UI, UTC, and
 * TIMESTAMP/DATE values as {@code Instant}/{@code LocalDate} so that no JVM time zone gets in the way.
 * Start it in {@code @BeforeAll}, stop it in {@code @AfterAll}.
 */
final class LocalSpark {
    private LocalSpark() {
    }

    static SparkSession start(String appName) {
        return SparkSession.builder().master("local[1]").appName(appName)
                .config("spark.ui.enabled", "false").config("spark.driver.host", "127.0.0.1")
                .config("spark.driver.bindAddress", "127.0.0.1").config("spark.sql.shuffle.partitions", "2")
                .config("spark.sql.session.timeZone", "UTC")
                .config("spark.sql.datetime.java8API.enabled", "true").getOrCreate();
    }
}
