package io.tidemark.launcher;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDate;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import org.apache.spark.sql.RowFactory;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import io.tidemark.generate.GeneratedMessage;
import io.tidemark.generate.IngestMode;
import io.tidemark.generate.TrafficGenerator;
import io.tidemark.generate.TrafficSpec;
import io.tidemark.lakehouse.StreamProgress;
import io.tidemark.lakehouse.ClosedDays;
import io.tidemark.lakehouse.ExpiredDays;
import io.tidemark.lakehouse.DayBalance;
import io.tidemark.lakehouse.Lakehouse;
import io.tidemark.pipeline.Watermark;
import io.tidemark.reconcile.DayOutcome;
import io.tidemark.reconcile.DaySelection;
import io.tidemark.reconcile.ReconcileResult;
import io.tidemark.operations.LakehouseFigures;
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
    void dayListsAreShortEvenForManyDays() {
        assertThat(Formats.days(List.of())).isEqualTo("none");
        List<LocalDate> ten = new ArrayList<>();
        for (int i = 1; i <= 10; i++) {
            ten.add(LocalDate.of(2026, 5, i));
        }
        assertThat(Formats.days(ten.subList(0, 2))).isEqualTo("2026-05-01, 2026-05-02");
        assertThat(Formats.days(ten)).isEqualTo("10 days, 2026-05-01 .. 2026-05-06, 2026-05-07, 2026-05-08, 2026-05-09, 2026-05-10");
    }

    private static StreamProgress progress(Instant nextWatermark) {
        Timestamp t = Timestamp.from(nextWatermark);
        Map<String, Object> v = new java.util.HashMap<>();
        for (String c : Lakehouse.ownSchema(Lakehouse.Table.STREAM_PROGRESS).fieldNames()) {
            v.put(c, null);
        }
        v.putAll(Map.of("batch_id", 7L, "query_id", "q", "watermark", t, "next_watermark", t, "max_event_ts", t, "max_event_ts_seen", t,
                "records_in", 10L, "on_time", 9L, "late", 1L, "invalid", 0L));
        v.putAll(Map.of("kpi_rows", 3L, "started_at", t, "finished_at", t, "duration_ms", 1500L, "classify_ms", 500L, "write_ms", 1000L,
                "freshness_ms", 2000L));
        return StreamProgress.of(Lakehouse.row(Lakehouse.Table.STREAM_PROGRESS, v));
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

        // --backlog-end pins the event clock: the same events on any day.
        GenerateCommand pinned = new GenerateCommand();
        new CommandLine(pinned).parseArgs("--backlog-hours", "30", "--count", "200000", "--backlog-end", "2026-12-03T21:00:00Z");
        assertThat(pinned.spec("t", now).eventClockStart()).isEqualTo(Instant.parse("2026-12-02T15:00:00Z"));
        assertThat(pinned.spec("t", now.plus(Duration.ofDays(400))).eventClockStart()).isEqualTo(Instant.parse("2026-12-02T15:00:00Z"));

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
    void demoHoldsBackRecordsOfEachClosedDayOfTheBacklog() {
        DemoCommand demo = new DemoCommand();
        new CommandLine(demo).parseArgs();
        // Before 06:00 UTC the default 30-hour backlog reaches into the day before yesterday.
        TrafficSpec backlog = demo.backlogSpec("t", Instant.parse("2026-05-03T05:49:51Z"), io.tidemark.generate.TrafficProfile.NETWORK);
        assertThat(backlog.eventClockStart()).isEqualTo(Instant.parse("2026-05-01T23:49:51Z"));
        Instant watermark = Instant.parse("2026-05-03T05:39:48Z");

        List<DemoCommand.HeldBack> held = DemoCommand.heldBackSpecs(backlog, ClosedDays.decidedBy(Watermark.of(watermark)), demo.offlineShare, demo.seed);
        assertThat(held).extracting(DemoCommand.HeldBack::day)
                .containsExactly(LocalDate.parse("2026-05-01"), LocalDate.parse("2026-05-02"));
        // 1% of the backlog's records of each day: 609 s of 30 h gives 11, raised to the minimum; all of 2026-05-02 gives 1,600.
        assertThat(held).extracting(h -> h.spec().count()).containsExactly((long) DemoCommand.MIN_HELD_BACK_PER_DAY, 1600L);
        for (DemoCommand.HeldBack h : held) {
            Instant dayEnd = h.day().plusDays(1).atStartOfDay(ZoneOffset.UTC).toInstant();
            assertThat(dayEnd).isBeforeOrEqualTo(watermark); // closed: every record of it arrives late
            Instant from = h.spec().eventClockStart();
            assertThat(from).isEqualTo(h.day().atStartOfDay(ZoneOffset.UTC).toInstant().isAfter(backlog.eventClockStart())
                    ? h.day().atStartOfDay(ZoneOffset.UTC).toInstant() : backlog.eventClockStart());
            List<GeneratedMessage> messages = new ArrayList<>();
            new TrafficGenerator(h.spec()).forEachRemaining(messages::add);
            assertThat(messages).hasSize((int) (long) h.spec().count());
            assertThat(messages).allSatisfy(m -> {
                assertThat(m.kind()).isEqualTo(GeneratedMessage.Kind.ON_TIME);
                assertThat(m.eventTime().orElseThrow()).isBetween(from, dayEnd.minusMillis(1));
            });
            assertThat(messages.get(messages.size() - 1).eventTime().orElseThrow()).isAfter(dayEnd.minus(Duration.ofMinutes(2)));
            List<GeneratedMessage> again = new ArrayList<>();
            new TrafficGenerator(h.spec()).forEachRemaining(again::add);
            assertThat(again).isEqualTo(messages); // deterministic: the same records on every run
        }

        // A watermark short of a day's end leaves the day alone; no share, nothing held back.
        assertThat(DemoCommand.heldBackSpecs(backlog, ClosedDays.decidedBy(Watermark.of(Instant.parse("2026-05-02T23:59:59.999Z"))), 0.01, 42))
                .extracting(DemoCommand.HeldBack::day).containsExactly(LocalDate.parse("2026-05-01"));
        assertThat(DemoCommand.heldBackSpecs(backlog, ClosedDays.decidedBy(Watermark.of(Instant.parse("2026-05-01T23:59:59Z"))), 0.01, 42)).isEmpty();
        assertThat(DemoCommand.heldBackSpecs(backlog, ClosedDays.decidedBy(Watermark.of(watermark)), 0, 42)).isEmpty();

        // After 06:00 the backlog starts yesterday: one closed day, 18 of its 30 hours.
        TrafficSpec noon = demo.backlogSpec("t", Instant.parse("2026-05-03T12:00:00Z"), io.tidemark.generate.TrafficProfile.NETWORK);
        List<DemoCommand.HeldBack> one = DemoCommand.heldBackSpecs(noon, ClosedDays.decidedBy(Watermark.of(Instant.parse("2026-05-03T11:50:00Z"))), 0.01, 42);
        assertThat(one).extracting(DemoCommand.HeldBack::day).containsExactly(LocalDate.parse("2026-05-02"));
        assertThat(one.get(0).spec().count()).isEqualTo(1200L);
        assertThat(one.get(0).spec().eventClockStart()).isEqualTo(Instant.parse("2026-05-02T06:00:00Z"));

        // Between 06:00 and 07:00 only the backlog's late records (up to 60 min behind its clock) reach the day before
        // yesterday: a closed day with data, which gets the minimum over the part of it they reach.
        TrafficSpec early = demo.backlogSpec("t", Instant.parse("2026-05-03T06:08:11Z"), io.tidemark.generate.TrafficProfile.NETWORK);
        List<DemoCommand.HeldBack> two = DemoCommand.heldBackSpecs(early, ClosedDays.decidedBy(Watermark.of(Instant.parse("2026-05-03T05:58:08Z"))), 0.01, 42);
        assertThat(two).extracting(DemoCommand.HeldBack::day).containsExactly(LocalDate.parse("2026-05-01"), LocalDate.parse("2026-05-02"));
        assertThat(two).extracting(h -> h.spec().count()).containsExactly((long) DemoCommand.MIN_HELD_BACK_PER_DAY, 1591L);
        assertThat(two).extracting(h -> h.spec().eventClockStart())
                .containsExactly(Instant.parse("2026-05-01T23:08:11Z"), Instant.parse("2026-05-02T00:08:11Z"));
    }

    @Test
    void demoStoryTellsWhatReconcileFoldedInFromTheRun() {
        LocalDate d1 = LocalDate.parse("2026-05-01");
        LocalDate d2 = LocalDate.parse("2026-05-02");
        DayOutcome sliver = new DayOutcome(d1, DayOutcome.Status.RECONCILED, 394, 24, measures(1237, 1262, "40.534", "41.300"), 25, 1, 100, null);
        DayOutcome full = new DayOutcome(d2, DayOutcome.Status.RECONCILED, 46266, 1583, measures(159246, 160846, "5659.535", "5717.000"), 1600, 1,
                100, null);
        ReconcileResult run = new ReconcileResult("r", Instant.EPOCH, java.util.Optional.empty(), DaySelection.range(d1, d2), false,
                List.of(sliver, full));
        Map<LocalDate, DemoCommand.LateOfDay> late = Map.of(d1, new DemoCommand.LateOfDay(25, 25), d2, new DemoCommand.LateOfDay(1600, 1600),
                LocalDate.parse("2026-05-03"), new DemoCommand.LateOfDay(600, 0));

        List<String> story = DemoCommand.story(run, late, 1625);
        assertThat(story).hasSize(4);
        assertThat(story.get(0)).isEqualTo("What happened: 25 records of 2026-05-01 and 1,600 of 2026-05-02 arrived after the day had closed, "
                + "sent by devices that had been offline for hours.");
        assertThat(story.get(1)).contains("late_events", "raw_events", "folded them in");
        // the largest relative drift of the measures kept exactly: the records' (+1.98 %) over the volume's (+1.85 %); never the estimate's
        assertThat(story.get(2)).contains("2026-05-01 changed in 24 of 394 windows (25 late records folded in), the largest drift: "
                + "record_count +1.98% (stream 1,237, truth 1,262)");
        assertThat(story.get(3)).contains("2026-05-02 changed in 1,583 of 46,266 windows (1,600 late records folded in), the largest drift: "
                + "total_gb +1.01% (stream 5,659.535, truth 5,717)");

        DayOutcome exact = new DayOutcome(d2, DayOutcome.Status.RECONCILED, 46266, 0, measures(159246, 159246, "1", "1"), 0, 1, 100, null);
        ReconcileResult quiet = new ReconcileResult("r", Instant.EPOCH, java.util.Optional.empty(), DaySelection.range(d2, d2), false,
                List.of(exact));
        assertThat(DemoCommand.story(quiet, Map.of(), 0)).containsExactly(
                "No record reached 2026-05-02 after the day had closed, so reconcile found the streaming KPIs exact (0 windows changed).");
        assertThat(DemoCommand.story(null, late, 0)).isEmpty();
    }

    @Test
    void durationsReadLikeTheSettings() {
        assertThat(new DurationConverter().convert("90s")).hasSeconds(90);
        assertThat(Formats.duration(850)).isEqualTo("850 ms");
        assertThat(Formats.duration(8_200)).isEqualTo("8.2 s");
        assertThat(Formats.duration(185_000)).isEqualTo("3 min 5 s");
        assertThat(Formats.duration(Duration.ofHours(26).toMillis())).isEqualTo("1 d 2 h");
    }

    @Test
    void statusShowsEachPartitionsEventClockAndItsLagBehindTheLeader() {
        long t = Instant.parse("2026-11-28T11:00:00Z").toEpochMilli();
        Map<Integer, io.tidemark.lakehouse.PartitionClock> clocks = new TreeMap<>(Map.of(
                0, new io.tidemark.lakehouse.PartitionClock(t, 0),
                1, new io.tidemark.lakehouse.PartitionClock(t - 50 * 60_000, 0),
                2, new io.tidemark.lakehouse.PartitionClock(t - 5 * 60_000, 0)));
        assertThat(StatusCommand.partitionsLine(clocks, Duration.ofMinutes(10))).contains("partitions  newest event time per Kafka partition: "
                + "0: 2026-11-28 11:00:00Z (leading); 1: 2026-11-28 10:10:00Z, 50 min behind (more than the lateness); "
                + "2: 2026-11-28 10:55:00Z, 5 min behind");
        assertThat(StatusCommand.partitionsLine(Map.of(), Duration.ofMinutes(10))).isEmpty();
    }

    /** network's day: record_count and total_gb of the stream and of the truth, subscribers unchanged (an estimate). */
    private static List<DayOutcome.MeasureDrift> measures(long streamRecords, long batchRecords, String streamGb, String batchGb) {
        java.math.BigDecimal sr = java.math.BigDecimal.valueOf(streamRecords);
        java.math.BigDecimal br = java.math.BigDecimal.valueOf(batchRecords);
        java.math.BigDecimal sg = new java.math.BigDecimal(streamGb);
        java.math.BigDecimal bg = new java.math.BigDecimal(batchGb);
        return List.of(new DayOutcome.MeasureDrift("kpi_5m", "record_count", sr, br, io.tidemark.pipeline.DriftRule.relative(sr, br), false,
                        false, 0),
                new DayOutcome.MeasureDrift("kpi_5m", "total_gb", sg, bg, io.tidemark.pipeline.DriftRule.relative(sg, bg), false, false, 0),
                new DayOutcome.MeasureDrift("kpi_5m", "subscribers", java.math.BigDecimal.TEN, java.math.BigDecimal.TEN, 0.0, true, false, 0));
    }
}
