package io.tidemark.lakehouse;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Where a setting comes from: each source overrides the ones before it, in the documented order. */
class TidemarkConfigSourcesTest {

    @TempDir
    Path dir;

    @Test
    void eachSourceOverridesTheOnesBeforeIt() throws Exception {
        Path file = dir.resolve("tidemark.properties");
        Files.writeString(file, "topic=from-file\nstream.trigger=1s\nlateness=1 minute\nwindow=1 minute\nreconcile.recent-days=5\n");
        Map<String, String> env = Map.of("TIDEMARK_STREAM_TRIGGER", "2s", "TIDEMARK_LATENESS", "2 minutes", "TIDEMARK_WINDOW", "2 minutes");
        Map<String, String> spark = Map.of("spark.tidemark.lateness", "3 minutes", "spark.tidemark.window", "3 minutes",
                "spark.tidemark.kafka.option.security.protocol", "SSL", "spark.executor.memory", "1g");

        TidemarkConfig c = TidemarkConfig.load(file, env, spark).set("window", "4 minutes").build();

        assertThat(c.get(TidemarkConfig.Key.KAFKA_BOOTSTRAP)).isEqualTo("127.0.0.1:9092"); // default
        assertThat(c.topic()).isEqualTo("from-file");                                      // file over default
        assertThat(c.reconcileRecentDays()).isEqualTo(5);
        assertThat(c.get(TidemarkConfig.Key.TRIGGER)).isEqualTo("2s");                     // environment over file
        assertThat(c.get(TidemarkConfig.Key.LATENESS)).isEqualTo("3 minutes");             // Spark conf over environment
        assertThat(c.get(TidemarkConfig.Key.WINDOW)).isEqualTo("4 minutes");               // arguments over Spark conf
        assertThat(c.kafkaOptions()).containsExactly(Map.entry("security.protocol", "SSL"));
    }

    @Test
    void sparkConfReachesTheJobsAsSystemProperties() {
        // spark-submit hands the driver its conf (--conf, spark-defaults.conf) as system properties.
        System.setProperty("spark.tidemark.reconcile.recent-days", "7");
        try {
            assertThat(TidemarkConfig.load(null, Map.of("TIDEMARK_RECONCILE_RECENT_DAYS", "6")).build().reconcileRecentDays()).isEqualTo(7);
        } finally {
            System.clearProperty("spark.tidemark.reconcile.recent-days");
        }
        assertThat(TidemarkConfig.load(null, Map.of("TIDEMARK_RECONCILE_RECENT_DAYS", "6")).build().reconcileRecentDays()).isEqualTo(6);
    }

    @Test
    void aTriggerOfZeroNeedsNoUnit() {
        // The documented "stream.trigger = 0: micro-batches back to back", as a user writes it.
        assertThat(TidemarkConfig.load(null, Map.of(), Map.of("spark.tidemark.stream.trigger", "0")).build().trigger()).isZero();
        assertThat(io.tidemark.pipeline.Durations.parse("0 s")).isZero();
    }

    @Test
    void anUnknownKeyInSparkConfIsAnErrorNamingIt() {
        assertThatThrownBy(() -> TidemarkConfig.load(null, Map.of(), Map.of("spark.tidemark.lakehose", "/x")))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("Spark conf spark.tidemark.lakehose: unknown setting 'lakehose'");
        assertThatThrownBy(() -> TidemarkConfig.load(null, Map.of(), Map.of("spark.tidemark.stream.trigger", "soon")).build())
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("stream.trigger");
    }
}
