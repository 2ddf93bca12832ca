package io.tidemark.tests;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.List;
import java.util.Map;

import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.junit.jupiter.api.Test;

import io.tidemark.generate.GenerationReport;
import io.tidemark.generate.IngestMode;
import io.tidemark.generate.KafkaTrafficProducer;
import io.tidemark.generate.TrafficProfile;
import io.tidemark.generate.TrafficSpec;
import io.tidemark.lakehouse.Lakehouse;
import io.tidemark.lakehouse.RecordedPipeline;
import io.tidemark.lakehouse.TidemarkConfig;
import io.tidemark.operations.ConservationCheck;
import io.tidemark.stream.StreamingJob;

/**
 * The payments pipeline's stream killed with SIGKILL in its own JVM (spark-submit's entry point,
 * {@code --pipeline FILE}) while it works through a topic of generated payments, then run to the end:
 * conservation holds for both KPI tables, no table has a duplicate, and every table equals that of an
 * uninterrupted run over the same topic, row for row.
 */
class PaymentsKillTest extends OnSharedInfrastructure {
    @Test
    void aKilledStreamEndsWithTheTablesOfAnUninterruptedOne() throws Exception {
        Path dir = infra.newDir("payments-kill");
        String topic = "payments-kill-" + dir.getFileName();
        String text = Files.readString(Path.of(System.getProperty("user.dir")).getParent().resolve("pipelines/payments.sql"))
                .replace("topic 'payments'", "topic '" + topic + "'");
        Path pipeline = Files.writeString(dir.resolve("payments.sql"), text);
        infra.broker.createTopic(topic, 2);
        TrafficSpec spec = TrafficSpec.builder().profile(TrafficProfile.PAYMENTS).topic(topic).ingestMode(IngestMode.BACKLOG).count(4_000L)
                .ratePerSecond(0).eventClockStart(Instant.now().minus(3, ChronoUnit.HOURS).truncatedTo(ChronoUnit.SECONDS))
                .eventsPerSecondOfEventTime(4_000 / 10_800.0).lateFraction(0.05).invalidFraction(0.05).seed(9).build();
        GenerationReport produced = new KafkaTrafficProducer(infra.broker.bootstrapServers(), Map.of()).produce(spec, null);
        assertThat(produced.messages()).isEqualTo(4_000);

        TidemarkConfig config = infra.config(dir, topic).set(TidemarkConfig.Key.PIPELINE, pipeline.toString())
                .set(TidemarkConfig.Key.MAX_OFFSETS_PER_TRIGGER, "800").build();
        List<String> args = List.of("--available-now", "--pipeline", pipeline.toString(),
                "kafka.bootstrap-servers=" + config.bootstrapServers(), "lakehouse=" + config.lakehouseUri(),
                "stream.checkpoint=" + config.checkpointUri(), "stream.max-offsets-per-trigger=800");
        Path progressLog = Path.of(config.lakehouseUri(), "stream_progress", "_delta_log");
        JobProcess job = JobProcess.start(StreamingJob.class, args, Map.of(), dir.resolve("stream.log"));
        long deadline = System.currentTimeMillis() + 180_000;
        while (TableChecks.commits(progressLog) < 3 && System.currentTimeMillis() < deadline && job.process.isAlive()) {
            Thread.sleep(100);
        }
        // inside a batch: the next one starts as soon as the last has committed
        Thread.sleep(1_500);
        assertThat(job.process.isAlive()).as("the stream is still at work when it is killed").isTrue();
        job.kill();
        assertThat(Path.of(RecordedPipeline.location(config.lakehouseUri()))).as("the stream records its pipeline in the lakehouse")
                .hasContent(text);
        // restarted without a pipeline setting: the one the lakehouse records
        TidemarkConfig restart = infra.config(dir, topic).set(TidemarkConfig.Key.MAX_OFFSETS_PER_TRIGGER, "800").buildForLakehouse();
        assertThat(restart.pipelineFile().orElseThrow().file()).isEqualTo(RecordedPipeline.location(config.lakehouseUri()));
        StreamingJob rest = new StreamingJob(infra.spark, restart, null);
        try {
            rest.start(true).awaitTermination();
        } finally {
            rest.close();
        }

        Lakehouse killed = Lakehouse.of(config);
        ConservationCheck.Report report = ConservationCheck.check(infra.spark, killed, produced.messages());
        assertThat(report.violations()).as(report.summary()).isEmpty();
        assertThat(report.duplicates()).isZero();
        assertThat(report.rawEvents()).isEqualTo(produced.valid());
        assertThat(report.deadLetters()).isEqualTo(produced.invalid());
        assertThat(report.tables()).extracting(ConservationCheck.TableFigures::table).containsExactly("merchant_1m", "country_1h");
        assertThat(report.lateEvents()).isPositive();

        // tidemark status, given no pipeline either, reports the payments tables
        java.io.StringWriter out = new java.io.StringWriter();
        int code = io.tidemark.launcher.Tidemark.run(new String[] {"status", "--json", "--set", "lakehouse=" + config.lakehouseUri(),
                        "--set", "stream.checkpoint=" + config.checkpointUri(), "--set", "kafka.bootstrap-servers=" + config.bootstrapServers()},
                Map.of(), new java.io.PrintWriter(out), new java.io.PrintWriter(new java.io.StringWriter()),
                io.tidemark.launcher.Tidemark.Sessions.shared(infra.spark));
        com.fasterxml.jackson.databind.JsonNode status = new com.fasterxml.jackson.databind.ObjectMapper().readTree(out.toString());
        assertThat(code).as(out.toString()).isZero();
        long kpiRows = killed.kpiTables().stream().mapToLong(t -> killed.read(infra.spark, t).count()).sum();
        assertThat(status.get("totals").get("kpi_rows").asLong()).isEqualTo(kpiRows);
        assertThat(status.get("totals").get("raw_events").asLong()).isEqualTo(produced.valid());
        List<String> tableNames = new java.util.ArrayList<>();
        status.get("tables").forEach(t -> tableNames.add(t.get("name").asText()));
        assertThat(tableNames).contains("merchant_1m", "country_1h").doesNotContain("kpi_5m");

        TidemarkConfig reference = infra.config(dir.resolve("uninterrupted"), topic).set(TidemarkConfig.Key.PIPELINE, pipeline.toString())
                .set(TidemarkConfig.Key.MAX_OFFSETS_PER_TRIGGER, "800").build();
        StreamingJob whole = new StreamingJob(infra.spark, reference, null);
        try {
            whole.start(true).awaitTermination();
        } finally {
            whole.close();
        }
        Lakehouse uninterrupted = Lakehouse.of(reference);
        for (Lakehouse.Table t : killed.tables()) {
            if (t.equals(Lakehouse.Table.RECONCILE_REPORT) || t.equals(Lakehouse.Table.EXPIRED_DAYS) || t.equals(Lakehouse.Table.STREAM_GAPS)) {
                continue;
            }
            assertThat(rows(killed, t)).as("%s after a SIGKILL, against the uninterrupted run", t.tableName()).isNotEmpty()
                    .containsExactlyElementsOf(rows(uninterrupted, t));
        }
    }

    /**
     * A table's rows as text, sorted, without what differs between two correct runs: when batches ran,
     * how many rows a replayed batch rewrote, and a sketch's bytes (merged in another order; its value is compared).
     */
    private static List<String> rows(Lakehouse lakehouse, Lakehouse.Table table) {
        Dataset<Row> d = infra.spark.read().format("delta").load(lakehouse.path(table));
        if (table.isKpi()) {
            d = d.drop("users_sketch", "p95_amount_sketch");
        } else if (table.equals(Lakehouse.Table.STREAM_PROGRESS)) {
            d = d.selectExpr("batch_id", "watermark", "next_watermark", "max_event_ts", "max_event_ts_seen", "records_in", "on_time", "late",
                    "invalid", "last_closed_day");
        }
        // binary columns (dead_letter's raw bytes, the Kafka key) as hex: a byte[] prints as its identity
        String[] columns = java.util.Arrays.stream(d.schema().fields())
                .map(f -> f.dataType() instanceof org.apache.spark.sql.types.BinaryType ? "hex(" + f.name() + ") AS " + f.name() : f.name())
                .sorted().toArray(String[]::new);
        return d.selectExpr(columns).collectAsList().stream().map(Row::toString).sorted().toList();
    }

}
