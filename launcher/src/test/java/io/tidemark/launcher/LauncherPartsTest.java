package io.tidemark.launcher;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDate;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import org.apache.spark.sql.RowFactory;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import io.tidemark.generate.IngestMode;
import io.tidemark.lakehouse.ClosedDays;
import io.tidemark.lakehouse.DayBalance;
import io.tidemark.lakehouse.Lakehouse;
import io.tidemark.lakehouse.Watermark;
import io.tidemark.generate.TrafficSpec;
import picocli.CommandLine;

/** The launcher's pure parts: SQL splitting, tables, the checkpoint reader, day bookkeeping, specs. */
class LauncherPartsTest {

    @Test
    void sqlSplitsAtSemicolonsOutsideQuotesAndComments() {
        String text = "SELECT 'a;b', \"c;d\", `e;f` FROM t; -- comment; with semicolon\n"
                + "SELECT 2 /* block; comment */ ;\nSELECT 'it''s'; SELECT 3";
        SqlScript.Split s = SqlScript.split(text);
        assertThat(s.statements()).containsExactly("SELECT 'a;b', \"c;d\", `e;f` FROM t", "SELECT 2", "SELECT 'it''s'");
        assertThat(s.rest().trim()).isEqualTo("SELECT 3");
        assertThat(SqlScript.statements(text)).hasSize(4).last().isEqualTo("SELECT 3");
        assertThat(SqlScript.statements(" ;\n; ")).isEmpty();
        assertThat(SqlScript.split("SELECT 'unterminated;").statements()).isEmpty();
    }

    @Test
    void textTableAlignsColumnsAndRightAlignsNumbers() {
        TextTable t = new TextTable(List.of("day", "records"), new boolean[] {false, true});
        t.add(List.of("2026-05-01", "7"));
        t.add(List.of("2026-05-02", "12345"));
        assertThat(t.render()).isEqualTo(String.join("\n",
                "day         records",
                "----------  -------",
                "2026-05-01        7",
                "2026-05-02    12345",
                ""));
        assertThat(TextTable.cell("a\nb\tc", 0)).isEqualTo("a b c");
        assertThat(TextTable.cell("abcdefghij", 8)).isEqualTo("abcde...");
    }

    @Test
    void sqlValuesPrintInUtc() {
        assertThat(SqlCommand.value(null)).isEqualTo("NULL");
        assertThat(SqlCommand.value(Instant.parse("2026-05-01T10:05:00Z"))).isEqualTo("2026-05-01 10:05:00.000");
        assertThat(SqlCommand.value(new java.math.BigDecimal("1.500000000"))).isEqualTo("1.500000000");
        assertThat(SqlCommand.value(new byte[] {1, 2, (byte) 0xff})).isEqualTo("0x0102ff");
    }

    @Test
    void closedDaysAreTheStreamsDecisionAndDirtyOnesDisagree() {
        java.util.NavigableMap<LocalDate, DayBalance> days = new TreeMap<>(Map.of(
                LocalDate.parse("2026-05-01"), new DayBalance(LocalDate.parse("2026-05-01"), 100, 3, 97, 10),
                LocalDate.parse("2026-05-02"), new DayBalance(LocalDate.parse("2026-05-02"), 50, 0, 50, 5),
                LocalDate.parse("2026-05-03"), new DayBalance(LocalDate.parse("2026-05-03"), 10, 1, 9, 2)));
        ProgressRow last = progress(Instant.parse("2026-05-03T00:00:00Z"));
        LakehouseFigures f = new LakehouseFigures(List.of(last), decided("2026-05-03T00:00:00Z"), 160, 4, 4, 2, 30, 20, days);
        assertThat(f.closedDays()).containsExactly(LocalDate.parse("2026-05-01"), LocalDate.parse("2026-05-02"));
        assertThat(f.dirtyDays()).containsExactly(LocalDate.parse("2026-05-01"));
        assertThat(f.closingWatermark()).contains(Instant.parse("2026-05-03T00:00:00Z"));
        LakehouseFigures earlier = new LakehouseFigures(List.of(last), decided("2026-05-02T23:59:59.999Z"), 0, 0, 0, 0, 0, 0, days);
        assertThat(earlier.closedDays()).containsExactly(LocalDate.parse("2026-05-01"));
        LakehouseFigures none = new LakehouseFigures(List.of(), ClosedDays.none(), 0, 0, 0, 0, 0, 0, days);
        assertThat(none.closedDays()).isEmpty();
        assertThat(LakehouseFigures.list(List.of())).isEqualTo("none");
    }

    private static ClosedDays decided(String nextWatermark) {
        return ClosedDays.decidedBy(Watermark.of(Instant.parse(nextWatermark)));
    }

    private static ProgressRow progress(Instant nextWatermark) {
        Timestamp t = Timestamp.from(nextWatermark);
        Map<String, Object> v = new java.util.HashMap<>();
        for (String c : Lakehouse.schema(Lakehouse.Table.STREAM_PROGRESS).fieldNames()) {
            v.put(c, null);
        }
        v.putAll(Map.of("batch_id", 7L, "query_id", "q", "watermark", t, "next_watermark", t, "max_event_ts", t, "max_event_ts_seen", t,
                "records_in", 10L, "on_time", 9L, "late", 1L, "invalid", 0L));
        v.putAll(Map.of("kpi_rows", 3L, "started_at", t, "finished_at", t, "duration_ms", 1500L, "classify_ms", 500L, "write_ms", 1000L,
                "freshness_ms", 2000L));
        return new ProgressRow(Lakehouse.row(Lakehouse.Table.STREAM_PROGRESS, v));
    }

    @Test
    void batchLinesShowTheBatchFigures() {
        String line = BatchLine.of(progress(Instant.parse("2026-05-03T00:00:00Z")));
        assertThat(line).contains("batch    7", "in        10", "late       1", "watermark 2026-05-03 00:00:00Z", "1.5 s");
    }

    @Test
    void backlogSpecSpansTheLastHoursEndingNow() {
        GenerateCommand g = new GenerateCommand();
        new CommandLine(g).parseArgs("--backlog-hours", "30", "--count", "200000");
        Instant now = Instant.parse("2026-05-03T12:00:00Z");
        TrafficSpec s = g.spec("t", now);
        assertThat(s.resolvedIngestMode()).isEqualTo(IngestMode.BACKLOG);
        assertThat(s.eventClockStart()).isEqualTo(Instant.parse("2026-05-02T06:00:00Z"));
        assertThat(s.backlogSpan()).isCloseTo(Duration.ofHours(30), Duration.ofSeconds(1));
        assertThat(s.isPaced()).isFalse();

        GenerateCommand live = new GenerateCommand();
        new CommandLine(live).parseArgs("--duration", "10s");
        TrafficSpec l = live.spec("t", now);
        assertThat(l.resolvedIngestMode()).isEqualTo(IngestMode.LIVE);
        assertThat(l.count()).isNull();
        assertThat(l.ratePerSecond()).isEqualTo(GenerateCommand.DEFAULT_RATE);

        GenerateCommand forever = new GenerateCommand();
        new CommandLine(forever).parseArgs();
        assertThat(forever.spec("t", now).count()).isNull();
        assertThat(GenerateCommand.describe(forever.spec("t", now))).contains("until Ctrl-C");
    }

    @Test
    void failuresAreDescribedOnOneLineWithoutRepeatingCauses() {
        RuntimeException root = new IllegalStateException("disk full\n  at somewhere");
        RuntimeException quoting = new RuntimeException("[STREAM_FAILED] query failed: disk full", root);
        RuntimeException outer = new IllegalStateException("the stream stopped: " + quoting.getMessage(), quoting);
        assertThat(Tidemark.describe(outer)).isEqualTo("the stream stopped: [STREAM_FAILED] query failed: disk full");
        assertThat(Tidemark.describe(new RuntimeException("a", new RuntimeException("b")))).isEqualTo("a <- b");
        assertThat(Tidemark.firstLine("\n\n  [PARSE_SYNTAX_ERROR] at 'x'\n== SQL ==")).isEqualTo("[PARSE_SYNTAX_ERROR] at 'x'");
    }

    @Test
    void durationsReadLikeTheSettings() {
        assertThat(new DurationConverter().convert("90s")).hasSeconds(90);
        assertThat(Formats.duration(850)).isEqualTo("850 ms");
        assertThat(Formats.duration(8_200)).isEqualTo("8.2 s");
        assertThat(Formats.duration(185_000)).isEqualTo("3 min 5 s");
        assertThat(Formats.duration(Duration.ofHours(26).toMillis())).isEqualTo("1 d 2 h");
    }
}
