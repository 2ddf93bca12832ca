package io.tidemark.lakehouse;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.Arrays;
import java.util.List;

import org.junit.jupiter.api.Test;

import io.tidemark.lakehouse.TidemarkConfig.Key;
import io.tidemark.lakehouse.TidemarkConfig.Scope;
import io.tidemark.lakehouse.TidemarkConfig.WatermarkPolicy;

/** The settings are declarations: what may change for a checkpoint, validation and the docs all come from {@link Key}. */
class SettingsDeclarationsTest {

    private static List<String> names(Scope scope) {
        return Arrays.stream(Key.values()).filter(k -> k.scope == scope).map(k -> k.name).toList();
    }

    private static TidemarkConfig with(String key, String value) {
        return TidemarkConfig.builder().set(key, value).build();
    }

    @Test
    void theQueryDefinitionIsTheKeysDeclaredForIt() {
        assertThat(names(Scope.QUERY)).containsExactlyInAnyOrder("topic", "window", "lateness", "watermark.policy");
        assertThat(names(Scope.REPLAY)).containsExactlyInAnyOrder("clock-skew", "max-event-age", "max-message-bytes",
                "watermark.idle-timeout");
        assertThat(QueryDefinition.of(TidemarkConfig.defaults()).settings()).containsOnlyKeys(
                "topic", "window", "lateness", "watermark.policy", "clock-skew", "max-event-age", "max-message-bytes",
                "watermark.idle-timeout", "kpi.kpi_5m");
        // and what each KPI table's rows mean
        assertThat(QueryDefinition.of(TidemarkConfig.defaults()).settings().get("kpi.kpi_5m")).isEqualTo("dimensions cell_site_id; where "
                + "(none); measures record_count = count(*), total_gb = sum(CAST(volume_gb AS DECIMAL(38,9))), subscribers = "
                + "approx_count_distinct(subscriber_id)");
    }

    @Test
    void canonicalFormsMakeEqualSettingsEqual() {
        assertThat(with("window", "5m").canonical(Key.WINDOW)).isEqualTo("PT5M");
        assertThat(with("window", "PT5M").canonical(Key.WINDOW)).isEqualTo(TidemarkConfig.defaults().canonical(Key.WINDOW));
        assertThat(with("watermark.policy", " Min-Partition ").canonical(Key.WATERMARK_POLICY)).isEqualTo("min-partition");
        assertThat(with("watermark.policy", "MIN-PARTITION").watermarkPolicy()).isEqualTo(WatermarkPolicy.MIN_PARTITION);
        assertThat(TidemarkConfig.defaults().watermarkPolicy()).isEqualTo(WatermarkPolicy.SPARK);
        assertThat(with("max-message-bytes", " 1024 ").canonical(Key.MAX_MESSAGE_BYTES)).isEqualTo("1024");
        assertThat(with("stream.fail-on-data-loss", "FALSE").failOnDataLoss()).isFalse();
    }

    @Test
    void eachTypeRefusesWhatItIsNot() {
        assertThatThrownBy(() -> with("watermark.policy", "oldest")).hasMessage("watermark.policy must be spark or min-partition; got 'oldest'");
        assertThatThrownBy(() -> with("window", "0")).hasMessage("setting window = '0': must be positive");
        assertThat(with("lateness", "0").lateness()).isZero();
        assertThat(with("stream.trigger", "0").trigger()).isZero();
        assertThatThrownBy(() -> with("max-message-bytes", "0")).hasMessage("setting max-message-bytes = 0 must be > 0");
        assertThat(with("stream.max-offsets-per-trigger", "0").maxOffsetsPerTrigger()).isZero();
        assertThatThrownBy(() -> with("retention.raw-days", "-1")).hasMessage("setting retention.raw-days = -1 must be ≥ 0");
        assertThatThrownBy(() -> with("metrics.port", "70000")).hasMessageContaining("is not a port");
        assertThatThrownBy(() -> with("stream.fail-on-data-loss", "yes")).hasMessage(
                "setting stream.fail-on-data-loss = 'yes' must be true or false");
        assertThatThrownBy(() -> with("topic", " ")).hasMessage("topic must not be empty");
        assertThatThrownBy(() -> with("catalog.metastore", "http://hms:9083")).hasMessageContaining("is not thrift://host:port");
    }

    @Test
    void helpIsTheDeclarationsInPlainText() {
        String help = TidemarkConfig.describeKeys();
        for (Key k : Key.values()) {
            assertThat(help).contains("  " + k.name + " ");
        }
        assertThat(help).doesNotContain("`", "](").contains("fixed for a checkpoint and lakehouse",
                "may change between runs, not while a batch is pending replay", "kafka.option.<name>");
        assertThat(TidemarkConfig.markdownTable()).startsWith("| key | default | kind | meaning |\n|---|---|---|---|\n")
                .contains("| `window` | `5 minutes` | duration > 0 | KPI window (tumbling); must divide a day evenly; fixed for a checkpoint "
                        + "and lakehouse: a restart with another value is refused |\n")
                .contains("| `catalog.metastore` | (empty) | directory or thrift://host:port |");
    }
}
