package io.tidemark.tests;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.time.LocalDate;
import java.time.ZoneOffset;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
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
import io.tidemark.lakehouse.Lakehouse.Table;
import io.tidemark.lakehouse.RecordedPipeline;
import io.tidemark.lakehouse.TidemarkConfig;
import io.tidemark.operations.ConservationCheck;
import io.tidemark.reconcile.DayOutcome;
import io.tidemark.reconcile.DaySelection;
import io.tidemark.reconcile.ReconcileJob;
import io.tidemark.reconcile.ReconcileResult;
import io.tidemark.stream.StreamingJob;

/**
 * The payments pipeline with both KPI tables published to Kafka, on the real broker and through
 * crashes: merchant_1m every change, exactly-once, in JSON; country_1h final windows only, at-least-once,
 * in Avro (Confluent's wire format, its schemas registered in a schema directory). A
 * first run without outputs fills two days; then the stream (its spark-submit entry point, in child
 * JVMs) is killed with SIGKILL five times while it publishes, then runs to the end on the pipeline the
 * lakehouse recorded; reconcile is killed three times as soon as it has replaced the
 * day (its publishing starts then), then runs to the end. After the stream, and again after reconcile,
 * each output topic, read whole by Spark's own Kafka source (read_committed for the transactional
 * one), holds per key at its highest version exactly the table's row (every row for updates, the final
 * ones for final) and nothing else; the exactly-once topic has no (key, version) twice and no key whose
 * version goes backwards; reconcile's corrections carry versions of its commits; status shows no lag.
 */
class KafkaOutputTest extends OnSharedInfrastructure {
    @Test
    void theTopicsHoldTheTablesThroughKilledStreamsAndReconciles() throws Exception {
        Path dir = infra.newDir("kafka-output");
        String topic = "kafka-output-" + dir.getFileName();
        String merchants = topic + "-merchant";
        String countries = topic + "-country";
        // country_1h's output is Avro, its key and value schemas registered in a directory (a registry exported to files)
        Path schemas = Files.createDirectories(dir.resolve("schemas"));
        Path pipeline = Files.writeString(dir.resolve("payments.sql"), OutputTopics.pipeline(topic, merchants, countries, schemas.toString()));
        infra.broker.createTopic(topic, 2);
        // Two hours and five minutes of payments from 23:00 the day before yesterday: that day closes (the hopping table's
        // last window of it ends at 00:45, the lateness is 10 minutes).
        LocalDate day = LocalDate.now(ZoneOffset.UTC).minusDays(2);
        Instant from = day.plusDays(1).atStartOfDay(ZoneOffset.UTC).toInstant().minus(1, ChronoUnit.HOURS);
        TrafficSpec spec = TrafficSpec.builder().profile(TrafficProfile.PAYMENTS).topic(topic).ingestMode(IngestMode.BACKLOG).count(3_000L)
                .ratePerSecond(0).eventClockStart(from).eventsPerSecondOfEventTime(0.4).lateFraction(0.1).invalidFraction(0.05).seed(13)
                .build();
        GenerationReport produced = new KafkaTrafficProducer(infra.broker.bootstrapServers(), Map.of()).produce(spec, null);
        assertThat(produced.messages()).isEqualTo(3_000);

        // An output topic that exists without compaction refuses the start, in one line, before any table is written.
        String deleting = topic + "-deleting";
        infra.broker.createTopic(deleting, 1);
        Path refusedPipeline = Files.writeString(dir.resolve("refused.sql"), OutputTopics.pipeline(topic, deleting, countries));
        TidemarkConfig refused = infra.config(dir.resolve("refused"), topic).set(TidemarkConfig.Key.PIPELINE, refusedPipeline.toString()).build();
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> new StreamingJob(infra.spark, refused, null).start(true))
                .isInstanceOf(io.tidemark.lakehouse.RequestRefusedException.class)
                .hasMessage("the Kafka topic " + deleting + " of merchant_1m's output has cleanup.policy=delete: a consumer rebuilds the table "
                        + "only from a compacted topic. Set cleanup.policy=compact on it, or name another topic in merchant_1m's TBLPROPERTIES");
        assertThat(Path.of(refused.lakehouseUri(), "merchant_1m")).doesNotExist();

        TidemarkConfig config = infra.config(dir, topic).set(TidemarkConfig.Key.PIPELINE, pipeline.toString())
                .set(TidemarkConfig.Key.MAX_OFFSETS_PER_TRIGGER, "200").build();
        List<String> streamArgs = List.of("--available-now", "--pipeline", pipeline.toString(),
                "kafka.bootstrap-servers=" + config.bootstrapServers(), "lakehouse=" + config.lakehouseUri(),
                "stream.checkpoint=" + config.checkpointUri(), "stream.max-offsets-per-trigger=200");
        Path progressLog = Path.of(config.lakehouseUri(), "stream_progress", "_delta_log");
        Path merchantLog = Path.of(config.lakehouseUri(), "merchant_1m", "_delta_log");
        List<String> kills = new ArrayList<>();
        // The first run, in this JVM, has no Kafka output and reads up to 1,500 payments (past midnight) in its first batch; it
        // is stopped once that batch has committed. The outputs are then added to tables that hold rows of two days, which the
        // next run publishes first, day by day, as their rows at its first version.
        Path without = Files.writeString(dir.resolve("without-output.sql"), OutputTopics.pipeline(topic, null, null));
        TidemarkConfig firstRun = infra.config(dir, topic).set(TidemarkConfig.Key.PIPELINE, without.toString())
                .set(TidemarkConfig.Key.MAX_OFFSETS_PER_TRIGGER, "1500").set(TidemarkConfig.Key.TRIGGER, "1 hour").build();
        StreamingJob first = new StreamingJob(infra.spark, firstRun, null);
        try {
            org.apache.spark.sql.streaming.StreamingQuery query = first.start(false);
            long deadline = System.currentTimeMillis() + 240_000;
            while (query.lastProgress() == null && query.isActive() && System.currentTimeMillis() < deadline) {
                Thread.sleep(50);
            }
            query.stop();
        } finally {
            first.close();
        }
        assertThat(infra.spark.read().format("delta").load(Path.of(config.lakehouseUri(), "merchant_1m").toString())
                .select("event_date").distinct().count()).as("days in merchant_1m before its output was declared").isGreaterThanOrEqualTo(2);
        // Five SIGKILLs of the stream while it publishes: each a moment after the first batch it commits (a replay of the batch
        // the last one was killed in, or the next), when the background publisher is at work on it or on what the killed run
        // left (the first one: on the first publication of the tables' two days).
        for (int kill = 0; kill < 5; kill++) {
            long target = TableChecks.commits(progressLog) + 1;
            JobProcess stream = JobProcess.start(StreamingJob.class, streamArgs, Map.of(), dir.resolve("stream-" + kill + ".log"));
            long deadline = System.currentTimeMillis() + 240_000;
            while (TableChecks.commits(progressLog) < target && System.currentTimeMillis() < deadline && stream.process.isAlive()) {
                Thread.sleep(50);
            }
            Thread.sleep(200L * kill);
            assertThat(stream.process.isAlive()).as("stream run %d is still at work when killed\n%s", kill, stream.tail()).isTrue();
            stream.kill();
            kills.add("stream after " + TableChecks.commits(progressLog) + " progress commits");
        }
        assertThat(Path.of(RecordedPipeline.location(config.lakehouseUri()))).as("the stream records its pipeline in the lakehouse")
                .hasContent(Files.readString(pipeline));
        // The last run is given no pipeline: it runs the one the lakehouse records (with the outputs).
        List<String> recordedArgs = new ArrayList<>(streamArgs);
        recordedArgs.removeAll(List.of("--pipeline", pipeline.toString()));
        JobProcess last = JobProcess.start(StreamingJob.class, recordedArgs, Map.of(), dir.resolve("stream-last.log"));
        assertThat(last.await(300)).as("the last stream run\n%s", last.tail()).isZero();

        Lakehouse lakehouse = Lakehouse.of(config);
        OutputTopics topics = new OutputTopics(infra.spark, infra.broker.bootstrapServers()).avro(countries, schemas.toString());
        ConservationCheck.Report report = ConservationCheck.check(infra.spark, lakehouse, produced.messages());
        assertThat(report.violations()).as(report.summary()).isEmpty();
        assertThat(report.duplicates()).isZero();
        assertThat(report.lateEvents()).as("late payments").isPositive();
        long beforeReconcile = lakehouse.version(infra.spark, Table.kpi("merchant_1m"));
        topics.assertOutputIsTheTable(lakehouse, "merchant_1m", merchants, true, false);
        topics.assertOutputIsTheTable(lakehouse, "country_1h", countries, false, true);
        // country_1h's two schemas, registered once (the directory's ids 1 and 2), are the ones its records name
        try (var files = Files.list(schemas)) {
            assertThat(files.map(f -> f.getFileName().toString()).sorted().toList()).containsExactly("1.avsc", "2.avsc");
        }
        assertThat(new org.apache.avro.Schema.Parser().parse(Files.readString(schemas.resolve("1.avsc"))).getFields())
                .extracting(org.apache.avro.Schema.Field::name).containsExactly("table", "window_start", "country");
        org.apache.avro.Schema countryValue = new org.apache.avro.Schema.Parser().parse(Files.readString(schemas.resolve("2.avsc")));
        assertThat(countryValue.getFullName()).isEqualTo("io.tidemark.kpi.country_1h_value");
        assertThat(countryValue.getFields()).extracting(org.apache.avro.Schema.Field::name).containsExactly("table", "window_start", "window_end",
                "country", "txns", "avg_amount", "min_amount", "users", "is_final", "source", "version");
        assertThat(topics.schemaIds(countries)).containsExactly(1, 2);

        // Three SIGKILLs of reconcile as soon as it has replaced the day in merchant_1m: its publishing starts then.
        List<String> reconcileArgs = List.of("--from", day.toString(), "--to", day.toString(),
                "kafka.bootstrap-servers=" + config.bootstrapServers(), "lakehouse=" + config.lakehouseUri());
        for (int kill = 0; kill < 3; kill++) {
            long before = TableChecks.commits(merchantLog);
            JobProcess reconcile = JobProcess.start(ReconcileJob.class, reconcileArgs, Map.of(), dir.resolve("reconcile-" + kill + ".log"));
            long deadline = System.currentTimeMillis() + 240_000;
            while (TableChecks.commits(merchantLog) == before && System.currentTimeMillis() < deadline && reconcile.process.isAlive()) {
                Thread.sleep(20);
            }
            Thread.sleep(250L * kill);
            assertThat(reconcile.process.isAlive()).as("reconcile run %d is still at work when killed\n%s", kill, reconcile.tail()).isTrue();
            reconcile.kill();
            kills.add("reconcile after merchant_1m version " + (TableChecks.commits(merchantLog) - 1));
        }
        System.out.println("killed: " + kills);
        ByteArrayOutputStream printed = new ByteArrayOutputStream();
        ReconcileResult result = new ReconcileJob(infra.spark, config, new PrintStream(printed, true, StandardCharsets.UTF_8))
                .run(DaySelection.day(day), false);
        assertThat(result.days()).extracting(DayOutcome::status).containsExactly(DayOutcome.Status.RECONCILED);
        long reconciled = lakehouse.version(infra.spark, Table.kpi("merchant_1m"));
        long countryVersion = lakehouse.version(infra.spark, Table.kpi("country_1h"));
        assertThat(reconciled).isGreaterThan(beforeReconcile);
        assertThat(printed.toString(StandardCharsets.UTF_8)).contains("kafka output: merchant_1m -> " + merchants
                + " published up to version " + reconciled + ", 0 behind; country_1h -> " + countries + " published up to version "
                + countryVersion + ", 0 behind");
        topics.assertOutputIsTheTable(lakehouse, "merchant_1m", merchants, true, false);
        topics.assertOutputIsTheTable(lakehouse, "country_1h", countries, false, true);
        // reconcile's corrections, as versions of its commits (the first one that replaced the day: the reruns changed nothing)
        Dataset<Row> corrections = topics.latest(merchants, true).where("source = 'batch'");
        assertThat(corrections.count()).isEqualTo(lakehouse.read(infra.spark, Table.kpi("merchant_1m")).where("source = 'batch'").count());
        assertThat(corrections.where("version <= " + beforeReconcile + " OR version > " + reconciled).count()).isZero();

        // tidemark status: each output published up to the table's newest version
        java.io.StringWriter out = new java.io.StringWriter();
        int code = io.tidemark.launcher.Tidemark.run(new String[] {"status", "--json", "--set", "lakehouse=" + config.lakehouseUri(),
                        "--set", "stream.checkpoint=" + config.checkpointUri(), "--set", "kafka.bootstrap-servers=" + config.bootstrapServers()},
                Map.of(), new java.io.PrintWriter(out), new java.io.PrintWriter(new java.io.StringWriter()),
                io.tidemark.launcher.Tidemark.Sessions.shared(infra.spark));
        assertThat(code).as(out.toString()).isZero();
        com.fasterxml.jackson.databind.JsonNode outputs = new com.fasterxml.jackson.databind.ObjectMapper().readTree(out.toString())
                .get("kafka_output");
        assertThat(outputs.toString()).isEqualTo("[{\"table\":\"merchant_1m\",\"topic\":\"" + merchants + "\",\"mode\":\"updates\","
                + "\"exactly_once\":true,\"format\":\"json\",\"latest_version\":" + reconciled + ",\"published_version\":" + reconciled + ",\"lag_versions\":0,"
                + "\"problem\":null},{\"table\":\"country_1h\",\"topic\":\"" + countries + "\",\"mode\":\"final\",\"exactly_once\":false,\"format\":\"avro\","
                + "\"latest_version\":" + countryVersion + ",\"published_version\":" + countryVersion + ",\"lag_versions\":0,\"problem\":null}]");

        // The record format, to the byte: the key's fields in their order, decimals with their scale, UTC times in milliseconds.
        String time = "\"\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:00\\.000Z\"";
        String amount = "(\\d+\\.\\d\\d|null)";
        List<Row> sample = topics.latest(merchants, true).where("v IS NOT NULL").select("k", "v").collectAsList();
        assertThat(sample).hasSizeGreaterThan(50).allSatisfy(r -> {
            assertThat(r.getString(0)).matches("\\{\"table\":\"merchant_1m\",\"window_start\":" + time
                    + ",\"merchant_id\":\"mer-\\d{5}\",\"country\":\"[A-Z]{2}\"}");
            assertThat(r.getString(1)).matches("\\{\"table\":\"merchant_1m\",\"window_start\":" + time + ",\"window_end\":" + time
                    + ",\"merchant_id\":\"mer-\\d{5}\",\"country\":\"[A-Z]{2}\",\"txns\":\\d+,\"approved_amount\":" + amount
                    + ",\"declined\":\\d+,\"users\":\\d+,\"p95_amount\":" + amount + ",\"max_amount\":" + amount
                    + ",\"is_final\":(true|false),\"source\":\"(stream|batch)\",\"version\":\\d+}");
        });
    }
}
