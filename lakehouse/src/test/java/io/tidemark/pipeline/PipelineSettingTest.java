package io.tidemark.pipeline;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import io.tidemark.lakehouse.TidemarkConfig;

/**
 * The {@code pipeline} setting: a pipeline file decides the topic, the lateness and the window, a
 * setting that contradicts it is refused before anything starts, a bad file at its place in it, and
 * any valid pipeline runs with its own tables.
 */
class PipelineSettingTest {

    @TempDir
    Path dir;

    private static final Path NETWORK = Path.of(System.getProperty("user.dir")).getParent().resolve("pipelines/network.sql");

    /** network.sql with its text edited: each pair replaces the first occurrence of a with b. */
    private Path variant(String... edits) throws IOException {
        String text = Files.readString(NETWORK);
        for (int i = 0; i < edits.length; i += 2) {
            assertThat(text).contains(edits[i]);
            text = text.replaceFirst(java.util.regex.Pattern.quote(edits[i]), java.util.regex.Matcher.quoteReplacement(edits[i + 1]));
        }
        Path f = dir.resolve("cells.sql");
        Files.writeString(f, text);
        return f;
    }

    private static TidemarkConfig config(String... settings) {
        TidemarkConfig.Builder b = TidemarkConfig.builder();
        for (int i = 0; i < settings.length; i += 2) {
            b.set(settings[i], settings[i + 1]);
        }
        return b.build();
    }

    @Test
    void aFileDecidesTopicLatenessWindowAndItsOwnRules() throws IOException {
        Path f = variant("topic 'network-events'", "topic 'cells'", "lateness '10 minutes'", "lateness '2 minutes'",
                "lateness '2 minutes'", "lateness '2 minutes', drift_threshold '0.2'",
                "CONSTRAINT volume_too_large", "CONSTRAINT known_cell CHECK (cell_site_id LIKE 'cell-%'),\n  CONSTRAINT volume_too_large",
                "window(event_ts, '5 minutes') AS w", "window(event_ts, '10 minutes') AS w",
                "GROUP BY window(event_ts, '5 minutes')", "GROUP BY window(event_ts, '10 minutes')");
        TidemarkConfig c = config("pipeline", f.toString());
        assertThat(c.topic()).isEqualTo("cells");
        assertThat(c.lateness()).isEqualTo(Duration.ofMinutes(2));
        assertThat(c.window()).isEqualTo(Duration.ofMinutes(10));
        Pipeline p = c.pipeline();
        assertThat(p.file()).isEqualTo(f.toString());
        assertThat(p.driftThreshold()).isEqualTo(0.2);
        assertThat(p.events().checks()).extracting(Pipeline.Check::reason)
                .containsExactly("BLANK_ID", "NON_FINITE_VOLUME", "NEGATIVE_VOLUME", "KNOWN_CELL", "VOLUME_TOO_LARGE");
        // a setting that says what the file says is no contradiction
        assertThat(config("pipeline", f.toString(), "topic", "cells", "lateness", "120s").topic()).isEqualTo("cells");
        // without the setting: the shipped network pipeline, with the settings applied
        TidemarkConfig d = config("topic", "other", "window", "15 minutes");
        assertThat(d.pipeline().events().topic()).isEqualTo("other");
        assertThat(d.pipeline().tables().get(0).window().size()).isEqualTo(Duration.ofMinutes(15));
        assertThat(d.pipelineFile()).isEmpty();
    }

    @Test
    void aSettingThatContradictsTheFileIsRefused() throws IOException {
        Path f = variant("topic 'network-events'", "topic 'cells'");
        assertThatThrownBy(() -> config("pipeline", f.toString(), "topic", "towers")).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("setting topic = 'towers' contradicts the pipeline " + f + ", where its event table's option topic says 'cells': a "
                        + "pipeline file decides topic; remove the setting, or change the file");
        assertThatThrownBy(() -> config("pipeline", f.toString(), "window", "1 minute")).hasMessageStartingWith(
                "setting window = '1 minute' contradicts the pipeline " + f + ", where the window of its table kpi_5m says 'PT5M'");
    }

    @Test
    void anyValidPipelineRunsWithItsOwnTables() {
        TidemarkConfig c = config("pipeline", "payments");
        assertThat(c.topic()).isEqualTo("payments");
        assertThat(c.lateness()).isEqualTo(java.time.Duration.ofMinutes(10));
        io.tidemark.lakehouse.Lakehouse lakehouse = io.tidemark.lakehouse.Lakehouse.of(c);
        assertThat(lakehouse.kpiTables()).extracting(io.tidemark.lakehouse.Lakehouse.Table::tableName).containsExactly("merchant_1m", "country_1h");
        assertThat(lakehouse.tables()).extracting(io.tidemark.lakehouse.Lakehouse.Table::tableName).containsExactly("raw_events", "merchant_1m",
                "country_1h", "late_events", "dead_letter", "stream_progress", "stream_gaps", "reconcile_report", "expired_days");
        assertThat(lakehouse.schema(io.tidemark.lakehouse.Lakehouse.Table.RAW_EVENTS).fieldNames()).startsWith("txn_id", "user_id", "merchant_id",
                "country", "amount", "status", "ts", "payload");
        // the hopping table's last window of a day ends 45 minutes after its midnight: the day closes then
        assertThat(c.pipeline().daySpill()).isEqualTo(java.time.Duration.ofMinutes(45));
        assertThat(PipelineParser.shipped(PipelineParser.DEFAULT).daySpill()).isZero();
    }

    @Test
    void aMissingOrBrokenFileIsRefusedWithWhereAndWhy() throws IOException {
        assertThatThrownBy(() -> config("pipeline", dir.resolve("nope.sql").toString())).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("setting pipeline = '" + dir.resolve("nope.sql") + "': no such file (give a pipeline file, or the name of a shipped "
                        + "pipeline: network)");
        Path broken = variant("count(*) AS record_count", "collect_list(subscriber_id) AS record_count");
        assertThatThrownBy(() -> config("pipeline", broken.toString())).isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("pipeline " + broken + ":28:8: collect_list(subscriber_id) cannot be merged across micro-batches; write instead: ");
        assertThatThrownBy(() -> config("pipeline", "nosuch")).isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("no shipped pipeline 'nosuch'");
    }
}
