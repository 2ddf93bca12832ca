package io.tidemark.launcher;

import java.time.Duration;
import java.time.Instant;
import java.time.LocalDate;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.StringJoiner;

import org.apache.spark.sql.SparkSession;

import io.tidemark.lakehouse.DayBalance;
import io.tidemark.lakehouse.Lakehouse;
import io.tidemark.lakehouse.SparkSessions;
import io.tidemark.lakehouse.TidemarkConfig;
import io.tidemark.stream.StreamCheckpoint;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code tidemark status}: where the speed layer stands, from the tables, the checkpoint and Kafka. */
@Command(name = "status", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"Watermark, freshness, throughput, lag per partition, late and invalid counts, closed and dirty days.",
                "Reads the tables, the stream's checkpoint and the topic's end offsets; works whether or not a stream runs."})
final class StatusCommand extends TidemarkCommand {

    @Option(names = "--batches", paramLabel = "N", defaultValue = "10",
            description = "Throughput over the last N micro-batches (default: ${DEFAULT-VALUE}).")
    int batches;

    @Override
    public Integer call() {
        if (batches < 1) {
            throw new UserError("--batches must be at least 1, got " + batches);
        }
        TidemarkConfig config = config();
        Lakehouse lakehouse = Lakehouse.of(config);
        say("lakehouse   %s", lakehouse.root());
        Optional<StreamCheckpoint.Committed> committed = StreamCheckpoint.read(config.checkpointUri());
        printLag(config, committed);
        if (!LakehouseFigures.progressTableExists(lakehouse)) {
            say("stream      no stream has run yet (no stream_progress table under %s); start one with 'tidemark stream'", lakehouse.root());
            return Tidemark.OK;
        }
        SparkSession spark = SparkSessions.create(config, "tidemark-status");
        try {
            LakehouseFigures f = LakehouseFigures.read(spark, lakehouse, batches);
            print(f);
            printGaps(spark, lakehouse);
            printTables(spark, lakehouse, f.closed());
        } finally {
            spark.stop();
        }
        return Tidemark.OK;
    }

    private void print(LakehouseFigures f) {
        Optional<ProgressRow> last = f.last();
        if (last.isEmpty()) {
            say("stream      no stream has run yet (stream_progress is empty)");
        } else {
            ProgressRow r = last.get();
            Instant finished = r.finishedAt().toInstant();
            say("last batch  %d, finished %s (%s ago), took %s; query %s", r.batchId(), Formats.instant(finished),
                    Formats.duration(Duration.between(finished, Instant.now())), Formats.duration(r.durationMs()), r.queryId());
            say("watermark   %s in force, next %s; max event time seen %s", BatchLine.watermark(r.watermark()).trim(),
                    BatchLine.watermark(r.nextWatermark()).trim(), Formats.instant(r.maxEventTsSeen()));
            say("freshness   %s (batch end minus the newest event time seen)",
                    r.freshnessMs() == null ? "unknown" : Formats.duration(r.freshnessMs()));
            long in = 0;
            long busyMs = 0;
            for (ProgressRow b : f.recent()) {
                in += b.recordsIn();
                busyMs += b.durationMs();
            }
            ProgressRow oldest = f.recent().get(f.recent().size() - 1);
            long wallMs = finished.toEpochMilli() - oldest.startedAt().getTime();
            say("throughput  last %d batches: %s records, %s while processing, %s over %s of wall time",
                    f.recent().size(), Formats.count(in), Formats.rate(busyMs > 0 ? in * 1000.0 / busyMs : 0),
                    Formats.rate(wallMs > 0 ? in * 1000.0 / wallMs : 0), Formats.duration(wallMs));
        }
        say("totals      raw_events %s (late %s), late_events %s, dead_letter %s (invalid), kpi_5m %s rows (%s final)",
                Formats.count(f.rawEvents()), Formats.count(f.rawLate()), Formats.count(f.lateEvents()),
                Formats.count(f.deadLetters()), Formats.count(f.kpiRows()), Formats.count(f.kpiFinalRows()));
        List<LocalDate> closed = f.closedDays();
        say("closed days %s", LakehouseFigures.list(closed));
        List<LocalDate> dirty = f.dirtyDays();
        if (dirty.isEmpty()) {
            say("dirty days  none%s", closed.isEmpty() ? "" : " (every closed day's raw count equals its KPI count)");
        } else {
            StringJoiner j = new StringJoiner(", ");
            for (LocalDate d : dirty.subList(Math.max(0, dirty.size() - 8), dirty.size())) {
                DayBalance c = f.days().get(d);
                j.add(d + " (raw " + Formats.count(c.rawRecords()) + " vs kpi " + Formats.count(c.kpiRecords()) + ")");
            }
            say("dirty days  %d: %s%s; reconcile them to fold the late records in", dirty.size(), dirty.size() > 8 ? "... " : "", j);
        }
    }

    /** Per table: files, bytes, log commits since Delta's last checkpoint, and what compaction has left ({@code tidemark maintain}). */
    private void printTables(SparkSession spark, Lakehouse lakehouse, io.tidemark.lakehouse.ClosedDays closed) {
        for (Lakehouse.Table t : Lakehouse.Table.values()) {
            if (!io.delta.tables.DeltaTable.isDeltaTable(spark, lakehouse.path(t))) {
                continue;
            }
            io.tidemark.reconcile.Maintenance.TableState s = io.tidemark.reconcile.Maintenance.state(spark, lakehouse, t, closed);
            say("table       %-16s %s files, %s bytes, %s commits since the last log checkpoint%s", t.tableName(), Formats.count(s.files()),
                    Formats.count(s.bytes()), Formats.count(s.commitsSinceCheckpoint()),
                    s.oldestUncompacted().map(d -> "; closed days not compacted since " + d + " (tidemark maintain)").orElse(""));
        }
    }

    /** Kafka offsets the stream skipped (only with stream.fail-on-data-loss=false): stream_gaps. */
    private void printGaps(SparkSession spark, Lakehouse lakehouse) {
        String path = lakehouse.path(Lakehouse.Table.STREAM_GAPS);
        if (!path.contains("://") && !java.nio.file.Files.isDirectory(java.nio.file.Path.of(path.replaceFirst("^file:", ""), "_delta_log"))) {
            say("gaps        none (no stream_gaps table yet)");
            return;
        }
        org.apache.spark.sql.Row totals = spark.read().format("delta").load(path)
                .selectExpr("count(*)", "coalesce(sum(lost_records), 0)", "count_if(lost_records IS NULL)").first();
        long gaps = totals.getLong(0);
        if (gaps == 0) {
            say("gaps        none: no Kafka offset was skipped");
            return;
        }
        org.apache.spark.sql.Row last = spark.read().format("delta").load(path)
                .orderBy(org.apache.spark.sql.functions.col("batch_id").desc(), org.apache.spark.sql.functions.col("partition").desc())
                .select("batch_id", "topic", "partition", "expected_offset", "resumed_offset", "kind").first();
        long unknown = totals.getLong(2);
        say("gaps        %d Kafka offset gaps skipped (stream.fail-on-data-loss=false): %s records lost%s; last: batch %d, %s-%d %s, "
                        + "expected offset %d, resumed at %s; see the stream_gaps table",
                gaps, Formats.count(totals.getLong(1)), unknown == 0 ? "" : " plus " + unknown + " gaps of unknown size",
                last.getLong(0), last.getString(1), last.getInt(2), last.getString(5), last.getLong(3), last.isNullAt(4) ? "-" : last.get(4));
    }

    private void printLag(TidemarkConfig config, Optional<StreamCheckpoint.Committed> committed) {
        String topic = config.topic();
        Map<Integer, Long> end;
        try (KafkaTopics kafka = new KafkaTopics(config.bootstrapServers(), config.kafkaOptions(), Duration.ofSeconds(5))) {
            end = kafka.endOffsets(topic);
            if (end.isEmpty()) {
                say("kafka       topic %s does not exist at %s", topic, config.bootstrapServers());
            }
        } catch (KafkaTopics.Unavailable e) {
            say("kafka       not reachable at %s within 5 s: lag unknown", config.bootstrapServers());
            end = null;
        }
        if (committed.isEmpty()) {
            say("checkpoint  none yet at %s%s", config.checkpointUri(),
                    end == null || end.isEmpty() ? "" : "; waiting in the topic: " + Formats.count(sum(end)) + " records (" + perPartition(end) + ")");
            return;
        }
        StreamCheckpoint.Committed c = committed.get();
        if (c.batchId() < 0) {
            say("checkpoint  %s: no batch committed yet%s", config.checkpointUri(), c.batchInFlight() ? " (the first batch is running)" : "");
            if (end != null && !end.isEmpty()) {
                say("lag         %s records (%s)", Formats.count(sum(end)), perPartition(end));
            }
            return;
        }
        say("checkpoint  %s: batch %d committed%s", config.checkpointUri(), c.batchId(), c.batchInFlight() ? ", the next one is running" : "");
        if (end == null || end.isEmpty()) {
            return;
        }
        Map<Integer, Long> consumed = c.topic(topic);
        StringJoiner j = new StringJoiner(", ");
        long total = 0;
        for (Map.Entry<Integer, Long> e : end.entrySet()) {
            long lag = e.getValue() - consumed.getOrDefault(e.getKey(), 0L);
            total += lag;
            j.add("partition " + e.getKey() + ": " + Formats.count(lag));
        }
        say("lag         %s records behind the end of %s (%s)", Formats.count(total), topic, j);
    }

    private static long sum(Map<Integer, Long> m) {
        return m.values().stream().mapToLong(Long::longValue).sum();
    }

    private static String perPartition(Map<Integer, Long> m) {
        StringJoiner j = new StringJoiner(", ");
        m.forEach((p, n) -> j.add("partition " + p + ": " + Formats.count(n)));
        return j.toString();
    }
}
