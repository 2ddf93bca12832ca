package io.tidemark.testing;

import org.apache.spark.sql.SparkSession;

/**
 * The small local Spark of a module's unit tests, the one builder they share: one core, two shuffle
 * partitions, no UI, loopback only, UTC as the session's time zone. A test adds what it needs on top
 * ({@link #builder}), starts it in {@code @BeforeAll} and stops it in {@code @AfterAll}.
 */
public final class LocalSpark {
    private LocalSpark() {
    }

    /** The builder, for a test to add settings to before {@code getOrCreate()}. */
    public static SparkSession.Builder builder(String appName) {
        return SparkSession.builder().master("local[1]").appName(appName)
                .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
                .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
                .config("spark.sql.shuffle.partitions", "2").config("spark.sql.session.timeZone", "UTC");
    }

    /** The session as {@link #builder} makes it, with TIMESTAMP and DATE values as {@code Instant} and {@code LocalDate}: no JVM time zone in the way. */
    public static SparkSession start(String appName) {
        return builder(appName).config("spark.sql.datetime.java8API.enabled", "true").getOrCreate();
    }
}
