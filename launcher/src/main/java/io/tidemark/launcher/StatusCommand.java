package io.tidemark.launcher;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.StringJoiner;
import java.util.TreeMap;
import java.util.TreeSet;

import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import io.tidemark.lakehouse.DayBalance;
import io.tidemark.lakehouse.ExitCode;
import io.tidemark.lakehouse.Lakehouse;
import io.tidemark.lakehouse.PartitionClock;
import io.tidemark.lakehouse.StreamProgress;
import io.tidemark.lakehouse.TidemarkConfig;
import io.tidemark.late.PartitionSkew;
import io.tidemark.operations.LakehouseFigures;
import io.tidemark.operations.Maintenance;
import io.tidemark.operations.TableState;
import io.tidemark.output.KpiPublisher;
import io.tidemark.output.OutputPublisher;
import io.tidemark.stream.StreamCheckpoint;

/**
 * {@code tidemark status}: where the speed layer stands, from the tables, the checkpoint and Kafka.
 * The facts are gathered once ({@link Facts}) and printed as text or as one JSON document
 * ({@code --json}, schema in docs/status.schema.json) whose exit code tells health.
 */
@Command(name = "status", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"Watermark, freshness, throughput, lag per partition, late and invalid counts, closed and dirty days, health.",
                "Reads the tables, the stream's checkpoint and the topic's end offsets; works whether or not a stream runs.",
                "With --json: one JSON document (docs/status.schema.json) and the health as exit code: 0 healthy or idle, "
                        + "3 stalled, 4 lagging, 5 no stream has run yet."})
final class StatusCommand extends TidemarkCommand {

    /** Exit codes of {@code --json}: what a probe or a cron check acts on. */
    static final int STALLED = ExitCode.STALLED.code();
    static final int LAGGING = ExitCode.LAGGING.code();
    static final int NOT_STARTED = ExitCode.NOT_STARTED.code();
    static final String SCHEMA = "tidemark-status/1";

    @Option(names = "--batches", paramLabel = "N", defaultValue = "10",
            description = "Throughput over the last N micro-batches (default: ${DEFAULT-VALUE}).")
    int batches;

    @Option(names = "--json", description = "One JSON document on stdout (docs/status.schema.json); the exit code tells health.")
    boolean json;

    @Option(names = "--stalled-after", paramLabel = "N", defaultValue = "10",
            description = "Stalled when records wait in the topic (or Kafka cannot be asked) and no batch has committed for N triggers "
                    + "(N × stream.trigger, at least N seconds; default: ${DEFAULT-VALUE}).")
    int stalledAfterTriggers;

    @Option(names = "--max-lag", paramLabel = "RECORDS",
            description = "Lagging when more records than this wait in the topic (default: no limit).")
    Long maxLag;

    /** The topic's end offsets; null when Kafka did not answer, empty when the topic does not exist. */
    record Kafka(Map<Integer, Long> endOffsets) {
        boolean reachable() {
            return endOffsets != null;
        }
    }

    /** Records between the checkpoint's committed offsets (nothing committed: 0) and the topic's end. */
    record Lag(long total, Map<Integer, Long> perPartition) {
        static Lag of(Map<Integer, Long> end, Map<Integer, Long> consumed) {
            Map<Integer, Long> per = new TreeMap<>();
            long total = 0;
            for (Map.Entry<Integer, Long> e : end.entrySet()) {
                long lag = Math.max(0, e.getValue() - consumed.getOrDefault(e.getKey(), 0L));
                per.put(e.getKey(), lag);
                total += lag;
            }
            return new Lag(total, per);
        }
    }

    /** Throughput over the newest progress rows. */
    record Throughput(int batches, long records, long busyMs, long wallMs) {
        static Throughput of(List<StreamProgress> recent) {
            long in = 0;
            long busy = 0;
            for (StreamProgress b : recent) {
                in += b.recordsIn();
                busy += b.durationMs();
            }
            StreamProgress oldest = recent.get(recent.size() - 1);
            long wall = recent.get(0).finishedAt().toEpochMilli() - oldest.startedAt().toEpochMilli();
            return new Throughput(recent.size(), in, busy, wall);
        }

        double busyRate() {
            return busyMs > 0 ? records * 1000.0 / busyMs : 0;
        }

        double wallRate() {
            return wallMs > 0 ? records * 1000.0 / wallMs : 0;
        }
    }

    /** Kafka offsets the stream skipped (only with stream.fail-on-data-loss=false): stream_gaps. */
    record Gaps(long count, long lostRecords, long unknownSize, Row last) {
    }

    /** The verdict: {@code healthy}, {@code idle}, {@code stalled}, {@code lagging} or {@code not_started}, and why. */
    record Health(String state, int exitCode, String reason) {
    }

    /** Everything status reports, gathered once. */
    record Facts(Instant at, String lakehouse, TidemarkConfig config, Optional<StreamCheckpoint.Committed> committed, Kafka kafka, Lag lag,
                 LakehouseFigures figures, Gaps gaps, List<TableState> tables, List<KpiPublisher.OutputStatus> outputs,
                 Health health) {
    }

    @Override
    public Integer call() {
        if (batches < 1) {
            throw new UserError("--batches must be at least 1, got " + batches);
        }
        if (stalledAfterTriggers < 1) {
            throw new UserError("--stalled-after must be at least 1 trigger, got " + stalledAfterTriggers);
        }
        if (maxLag != null && maxLag < 0) {
            throw new UserError("--max-lag must not be negative, got " + maxLag);
        }
        TidemarkConfig config = config();
        Facts facts = gather(config);
        if (json) {
            out().println(toJson(facts));
            out().flush();
            return facts.health().exitCode();
        }
        print(facts);
        return Tidemark.OK;
    }

    private Facts gather(TidemarkConfig config) {
        Lakehouse lakehouse = Lakehouse.of(config);
        Optional<StreamCheckpoint.Committed> committed = StreamCheckpoint.read(config.checkpointUri());
        Kafka kafka = kafka(config);
        Lag lag = null;
        if (kafka.reachable() && !kafka.endOffsets().isEmpty()) {
            lag = Lag.of(kafka.endOffsets(), committed.filter(c -> c.batchId() >= 0).map(c -> c.topic(config.topic())).orElse(Map.of()));
        }
        LakehouseFigures figures = null;
        Gaps gaps = null;
        List<TableState> tables = List.of();
        List<KpiPublisher.OutputStatus> outputs = List.of();
        if (LakehouseFigures.progressTableExists(lakehouse)) {
            SparkSession spark = spark(config, "tidemark-status");
            try {
                figures = LakehouseFigures.read(spark, lakehouse, batches);
                gaps = gaps(spark, lakehouse);
                tables = tables(spark, lakehouse, figures);
                // Kafka output: the progress topic read as the publisher reads it, within the 5 s status gives Kafka
                outputs = OutputPublisher.of(lakehouse, lakehouse.pipeline(), config.bootstrapServers())
                        .map(o -> o.status(spark, Duration.ofSeconds(5))).orElse(List.of());
            } finally {
                release(spark);
            }
        }
        Instant now = Instant.now();
        return new Facts(now, lakehouse.root().toString(), config, committed, kafka, lag, figures, gaps, tables, outputs,
                health(config, now, figures, kafka, lag));
    }

    private static Kafka kafka(TidemarkConfig config) {
        try (KafkaTopics kafka = new KafkaTopics(config.bootstrapServers(), config.kafkaOptions(), Duration.ofSeconds(5))) {
            return new Kafka(kafka.endOffsets(config.topic()));
        } catch (KafkaTopics.Unavailable e) {
            return new Kafka(null);
        }
    }

    /** Stalled: no batch for N triggers while records wait or Kafka cannot say; idle: the same with nothing waiting. */
    Health health(TidemarkConfig config, Instant now, LakehouseFigures f, Kafka kafka, Lag lag) {
        if (f == null || f.last().isEmpty()) {
            return new Health("not_started", NOT_STARTED, "no stream has committed a batch to this lakehouse yet");
        }
        Duration stalledAfter = Duration.ofMillis(Math.max(config.trigger().toMillis(), 1_000) * stalledAfterTriggers);
        Duration age = Duration.between(f.last().get().finishedAt(), now);
        if (age.compareTo(stalledAfter) > 0) {
            if (!kafka.reachable()) {
                return new Health("stalled", STALLED, "no batch for " + Formats.duration(age) + " and Kafka did not answer at "
                        + config.bootstrapServers());
            }
            if (lag != null && lag.total() > 0) {
                return new Health("stalled", STALLED, "no batch for " + Formats.duration(age) + " while " + Formats.count(lag.total())
                        + " records wait in " + config.topic());
            }
        }
        if (maxLag != null && lag != null && lag.total() > maxLag) {
            return new Health("lagging", LAGGING, Formats.count(lag.total()) + " records wait in " + config.topic() + ", more than --max-lag "
                    + Formats.count(maxLag));
        }
        if (age.compareTo(stalledAfter) > 0) {
            return new Health("idle", Tidemark.OK, "no batch for " + Formats.duration(age) + "; nothing waits in " + config.topic());
        }
        return new Health("healthy", Tidemark.OK, "last batch " + Formats.duration(age) + " ago");
    }

    private static List<TableState> tables(SparkSession spark, Lakehouse lakehouse, LakehouseFigures f) {
        List<TableState> out = new ArrayList<>();
        for (Lakehouse.Table t : lakehouse.tables()) {
            if (lakehouse.exists(spark, t)) {
                out.add(TableState.of(spark, lakehouse, t, f.closed()));
            }
        }
        return out;
    }

    private static Gaps gaps(SparkSession spark, Lakehouse lakehouse) {
        String path = lakehouse.path(Lakehouse.Table.STREAM_GAPS);
        if (!path.contains("://") && !Files.isDirectory(Path.of(path.replaceFirst("^file:", ""), "_delta_log"))) {
            return new Gaps(0, 0, 0, null);
        }
        Row totals = lakehouse.read(spark, Lakehouse.Table.STREAM_GAPS)
                .selectExpr("count(*)", "coalesce(sum(lost_records), 0)", "count_if(lost_records IS NULL)").first();
        if (totals.getLong(0) == 0) {
            return new Gaps(0, 0, 0, null);
        }
        Row last = lakehouse.read(spark, Lakehouse.Table.STREAM_GAPS)
                .orderBy(org.apache.spark.sql.functions.col("batch_id").desc(), org.apache.spark.sql.functions.col("partition").desc())
                .select("batch_id", "topic", "partition", "expected_offset", "resumed_offset", "kind").first();
        return new Gaps(totals.getLong(0), totals.getLong(1), totals.getLong(2), last);
    }

    // ---- text ----

    private void print(Facts x) {
        TidemarkConfig config = x.config();
        say("lakehouse   %s", x.lakehouse());
        printKafka(config, x);
        if (x.figures() == null) {
            say("stream      no stream has run yet (no stream_progress table under %s); start one with 'tidemark stream'", x.lakehouse());
            return;
        }
        LakehouseFigures f = x.figures();
        Optional<StreamProgress> last = f.last();
        if (last.isEmpty()) {
            say("stream      no stream has run yet (stream_progress is empty)");
        } else {
            StreamProgress r = last.get();
            Instant finished = r.finishedAt();
            say("last batch  %d, finished %s (%s ago), took %s; query %s", r.batchId(), Formats.instant(finished),
                    Formats.duration(Duration.between(finished, x.at())), Formats.duration(r.durationMs()), r.queryId());
            say("watermark   %s in force, next %s; max event time seen %s", BatchLine.watermark(r.watermark()).trim(),
                    BatchLine.watermark(r.nextWatermark()).trim(), Formats.instant(r.maxEventTsSeen()));
            say("freshness   %s (batch end minus the newest event time seen)",
                    r.freshnessMs() == null ? "unknown" : Formats.duration(r.freshnessMs()));
            partitionsLine(r.partitionClocks(), x.config().lateness()).ifPresent(line -> say("%s", line));
            Throughput t = Throughput.of(f.recent());
            say("throughput  last %d batches: %s records, %s while processing, %s over %s of wall time",
                    t.batches(), Formats.count(t.records()), Formats.rate(t.busyRate()), Formats.rate(t.wallRate()), Formats.duration(t.wallMs()));
        }
        say("totals      raw_events %s (late %s), late_events %s, dead_letter %s (invalid), %s %s rows (%s final)",
                Formats.count(f.rawEvents()), Formats.count(f.rawLate()), Formats.count(f.lateEvents()),
                Formats.count(f.deadLetters()), String.join(" + ", Lakehouse.of(x.config()).kpiTables().stream().map(Lakehouse.Table::tableName).toList()),
                Formats.count(f.kpiRows()), Formats.count(f.kpiFinalRows()));
        List<LocalDate> closed = f.closedDays();
        say("closed days %s", Formats.days(closed));
        List<LocalDate> dirty = f.dirtyDays();
        if (dirty.isEmpty()) {
            say("dirty days  none%s", closed.isEmpty() ? "" : " (every closed day's raw count equals its KPI count)");
        } else {
            StringJoiner j = new StringJoiner(", ");
            for (LocalDate d : dirty.subList(Math.max(0, dirty.size() - 8), dirty.size())) {
                DayBalance c = f.days().get(d);
                Set<String> notYet = new TreeSet<>(c.unbalanced());
                notYet.removeAll(c.reconciled());
                // a reconcile that stopped between two KPI tables, or the raw log against the KPIs
                j.add(d + (!c.reconciled().isEmpty() && !notYet.isEmpty()
                        ? " (reconciled in " + String.join(", ", c.reconciled()) + ", not yet in " + String.join(", ", notYet) + ")"
                        : " (raw " + Formats.count(c.rawRecords()) + " vs kpi " + Formats.count(c.kpiRecords()) + ")"));
            }
            say("dirty days  %d: %s%s; reconcile them to fold the late records in", dirty.size(), dirty.size() > 8 ? "... " : "", j);
        }
        printGaps(x.gaps());
        for (TableState s : x.tables()) {
            say("table       %-16s %s files, %s bytes, %s commits since the last log checkpoint%s", s.table().tableName(), Formats.count(s.files()),
                    Formats.count(s.bytes()), Formats.count(s.commitsSinceCheckpoint()),
                    s.oldestUncompacted().map(d -> "; closed days not compacted since " + d + " (tidemark maintain)").orElse(""));
        }
        for (KpiPublisher.OutputStatus o : x.outputs()) {
            say("output      %-16s -> %s (%s, %s, %s): %s", o.table(), o.output().topic(), o.output().mode().name().toLowerCase(Locale.ROOT),
                    o.output().exactlyOnce() ? "exactly-once" : "at-least-once", o.output().format().name().toLowerCase(Locale.ROOT),
                    o.problem() != null
                            ? "progress unknown, Kafka did not answer (" + o.problem() + ")"
                            : o.published() == null ? "nothing published yet; the table is at version " + o.latestVersion()
                            : "published up to version " + o.published() + " of " + o.latestVersion() + " (" + o.lag() + " behind)");
        }
        say("health      %s: %s", x.health().state(), x.health().reason());
    }

    private void printGaps(Gaps g) {
        if (g.count() == 0) {
            say("gaps        none: no Kafka offset was skipped");
            return;
        }
        Row last = g.last();
        say("gaps        %d Kafka offset gaps skipped (stream.fail-on-data-loss=false): %s records lost%s; last: batch %d, %s-%d %s, "
                        + "expected offset %d, resumed at %s; see the stream_gaps table",
                g.count(), Formats.count(g.lostRecords()), g.unknownSize() == 0 ? "" : " plus " + g.unknownSize() + " gaps of unknown size",
                last.getLong(0), last.getString(1), last.getInt(2), last.getString(5), last.getLong(3), last.isNullAt(4) ? "-" : last.get(4));
    }

    private void printKafka(TidemarkConfig config, Facts x) {
        Map<Integer, Long> end = x.kafka().endOffsets();
        if (!x.kafka().reachable()) {
            say("kafka       not reachable at %s within 5 s: lag unknown", config.bootstrapServers());
        } else if (end.isEmpty()) {
            say("kafka       topic %s does not exist at %s", config.topic(), config.bootstrapServers());
        }
        if (x.committed().isEmpty()) {
            say("checkpoint  none yet at %s%s", config.checkpointUri(),
                    x.lag() == null ? "" : "; waiting in the topic: " + Formats.count(x.lag().total()) + " records (" + perPartition(x.lag()) + ")");
            return;
        }
        StreamCheckpoint.Committed c = x.committed().get();
        if (c.batchId() < 0) {
            say("checkpoint  %s: no batch committed yet%s", config.checkpointUri(), c.batchInFlight() ? " (the first batch is running)" : "");
            if (x.lag() != null) {
                say("lag         %s records (%s)", Formats.count(x.lag().total()), perPartition(x.lag()));
            }
            return;
        }
        say("checkpoint  %s: batch %d committed%s", config.checkpointUri(), c.batchId(), c.batchInFlight() ? ", the next one is running" : "");
        if (x.lag() != null) {
            say("lag         %s records behind the end of %s (%s)", Formats.count(x.lag().total()), config.topic(), perPartition(x.lag()));
        }
    }

    private static String perPartition(Lag lag) {
        StringJoiner j = new StringJoiner(", ");
        lag.perPartition().forEach((p, n) -> j.add("partition " + p + ": " + Formats.count(n)));
        return j.toString();
    }

    /**
     * The status line of partition skew: each Kafka partition's newest event time and how far it
     * trails the leading one, flagged when more than the lateness. Empty when no partition has had a
     * valid record (or the batch predates partition clocks).
     */
    static Optional<String> partitionsLine(Map<Integer, PartitionClock> clocks, Duration lateness) {
        PartitionSkew skew = PartitionSkew.of(clocks);
        if (skew == null) {
            return Optional.empty();
        }
        StringJoiner line = new StringJoiner("; ", "partitions  newest event time per Kafka partition: ", "");
        clocks.forEach((p, c) -> {
            long behind = skew.behindByPartition().get(p);
            line.add(p + ": " + Formats.instant(Instant.ofEpochMilli(c.maxEventMs()))
                    + (behind == 0 ? " (leading)" : ", " + Formats.duration(behind) + " behind"
                            + (behind > lateness.toMillis() ? " (more than the lateness)" : "")));
        });
        return Optional.of(line.toString());
    }

    // ---- JSON (docs/status.schema.json: keys are stable; a new key may appear, none disappears within tidemark-status/1) ----

    private static final ObjectMapper JSON = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);

    static String toJson(Facts x) {
        ObjectNode doc = JSON.createObjectNode();
        doc.put("schema", SCHEMA);
        doc.put("generated_at", x.at().toString());
        ObjectNode health = doc.putObject("health");
        health.put("state", x.health().state());
        health.put("exit_code", x.health().exitCode());
        health.put("reason", x.health().reason());
        doc.put("lakehouse", x.lakehouse());

        putKafka(doc, x);
        LakehouseFigures f = x.figures();
        putLastBatch(doc, x, f);
        putLakehouse(doc, x, f);
        return write(doc);
    }

    /** The document's kafka, lag and checkpoint. */
    private static void putKafka(ObjectNode doc, Facts x) {
        ObjectNode kafka = doc.putObject("kafka");
        kafka.put("bootstrap_servers", x.config().bootstrapServers());
        kafka.put("topic", x.config().topic());
        kafka.put("reachable", x.kafka().reachable());
        kafka.put("topic_exists", x.kafka().reachable() ? !x.kafka().endOffsets().isEmpty() : null);
        ObjectNode end = kafka.putObject("end_offsets");
        if (x.kafka().reachable()) {
            x.kafka().endOffsets().forEach((p, o) -> end.put(String.valueOf(p), o));
        }
        if (x.lag() == null) {
            doc.putNull("lag");
        } else {
            ObjectNode lag = doc.putObject("lag");
            lag.put("total", x.lag().total());
            ObjectNode per = lag.putObject("partitions");
            x.lag().perPartition().forEach((p, n) -> per.put(String.valueOf(p), n));
        }

        ObjectNode checkpoint = doc.putObject("checkpoint");
        checkpoint.put("uri", x.config().checkpointUri());
        checkpoint.put("exists", x.committed().isPresent());
        Long committedBatch = x.committed().map(StreamCheckpoint.Committed::batchId).filter(b -> b >= 0).orElse(null);
        checkpoint.put("last_committed_batch", committedBatch);
        checkpoint.put("batch_in_flight", x.committed().map(StreamCheckpoint.Committed::batchInFlight).orElse(false));
    }

    /** The document's last_batch and throughput (null before the first batch). */
    private static void putLastBatch(ObjectNode doc, Facts x, LakehouseFigures f) {
        Optional<StreamProgress> last = f == null ? Optional.empty() : f.last();
        if (last.isEmpty()) {
            doc.putNull("last_batch");
            doc.putNull("throughput");
        } else {
            StreamProgress r = last.get();
            ObjectNode b = doc.putObject("last_batch");
            b.put("batch_id", r.batchId());
            b.put("query_id", r.queryId());
            b.put("finished_at", r.finishedAt().toString());
            b.put("age_seconds", Duration.between(r.finishedAt(), x.at()).toMillis() / 1000.0);
            b.put("duration_ms", r.durationMs());
            b.put("records_in", r.recordsIn());
            b.put("watermark", instantOrNull(r.watermark()));
            b.put("next_watermark", instantOrNull(r.nextWatermark()));
            b.put("max_event_ts_seen", r.maxEventTsSeen() == null ? null : r.maxEventTsSeen().toString());
            b.put("freshness_ms", r.freshnessMs());
            Map<Integer, PartitionClock> clocks = r.partitionClocks();
            PartitionSkew skew = PartitionSkew.of(clocks);
            ArrayNode parts = b.putArray("partitions");
            clocks.forEach((p, c) -> parts.addObject().put("partition", p)
                    .put("max_event_ts", Instant.ofEpochMilli(c.maxEventMs()).toString())
                    .put("behind_leading_ms", skew.behindByPartition().get(p))
                    .put("last_record_batch_ts", Instant.ofEpochMilli(c.lastRecordBatchTimeMs()).toString()));
            Throughput t = Throughput.of(f.recent());
            ObjectNode tp = doc.putObject("throughput");
            tp.put("batches", t.batches());
            tp.put("records", t.records());
            tp.put("processing_ms", t.busyMs());
            tp.put("wall_ms", t.wallMs());
            tp.put("records_per_second_processing", t.busyRate());
            tp.put("records_per_second_wall", t.wallRate());
        }
    }

    /** The document's totals, closed and dirty days, gaps, Kafka outputs and tables (empty without a lakehouse). */
    private static void putLakehouse(ObjectNode doc, Facts x, LakehouseFigures f) {
        if (f == null) {
            doc.putNull("totals");
            doc.putArray("closed_days");
            doc.putArray("dirty_days");
            doc.putNull("gaps");
            doc.putArray("kafka_output");
            doc.putArray("tables");
            return;
        }
        ObjectNode totals = doc.putObject("totals");
        totals.put("raw_events", f.rawEvents());
        totals.put("raw_events_late", f.rawLate());
        totals.put("late_events", f.lateEvents());
        totals.put("dead_letter", f.deadLetters());
        totals.put("kpi_rows", f.kpiRows());
        totals.put("kpi_final_rows", f.kpiFinalRows());
        ArrayNode closed = doc.putArray("closed_days");
        f.closedDays().forEach(d -> closed.add(d.toString()));
        ArrayNode dirty = doc.putArray("dirty_days");
        for (LocalDate d : f.dirtyDays()) {
            DayBalance c = f.days().get(d);
            dirty.addObject().put("day", d.toString()).put("raw_records", c.rawRecords()).put("kpi_records", c.kpiRecords());
        }
        ObjectNode gaps = doc.putObject("gaps");
        gaps.put("count", x.gaps().count());
        gaps.put("lost_records", x.gaps().lostRecords());
        gaps.put("unknown_size", x.gaps().unknownSize());
        ArrayNode outputs = doc.putArray("kafka_output");
        for (KpiPublisher.OutputStatus o : x.outputs()) {
            ObjectNode n = outputs.addObject().put("table", o.table()).put("topic", o.output().topic())
                    .put("mode", o.output().mode().name().toLowerCase(Locale.ROOT)).put("exactly_once", o.output().exactlyOnce())
                    .put("format", o.output().format().name().toLowerCase(Locale.ROOT))
                    .put("latest_version", o.latestVersion()).put("published_version", o.published()).put("lag_versions", o.lag());
            n.put("problem", o.problem());
        }
        ArrayNode tables = doc.putArray("tables");
        for (TableState s : x.tables()) {
            tables.addObject().put("name", s.table().tableName()).put("files", s.files()).put("bytes", s.bytes())
                    .put("commits_since_checkpoint", s.commitsSinceCheckpoint())
                    .put("oldest_uncompacted_day", s.oldestUncompacted().map(LocalDate::toString).orElse(null));
        }
    }

    private static String instantOrNull(Instant t) {
        return t == null || t.toEpochMilli() <= 0 ? null : t.toString();
    }

    private static String write(ObjectNode doc) {
        try {
            return JSON.writeValueAsString(doc);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
    }
}
