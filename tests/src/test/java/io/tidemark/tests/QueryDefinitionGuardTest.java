package io.tidemark.tests;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.apache.spark.sql.streaming.StreamingQuery;
import org.junit.jupiter.api.Test;

import io.tidemark.generate.GenerationReport;
import io.tidemark.generate.KafkaTrafficProducer;
import io.tidemark.generate.TrafficSpec;
import io.tidemark.operations.ConservationCheck;
import io.tidemark.lakehouse.IncompatibleQueryException;
import io.tidemark.lakehouse.Lakehouse;
import io.tidemark.lakehouse.TidemarkConfig;
import io.tidemark.lakehouse.TidemarkConfig.Key;
import io.tidemark.launcher.Tidemark;
import io.tidemark.reconcile.DaySelection;
import io.tidemark.reconcile.ReconcileJob;
import io.tidemark.lakehouse.RequestRefusedException;
import io.tidemark.stream.StreamingJob;

/**
 * A restart with another window, lateness or topic on an existing checkpoint and lakehouse is
 * refused before any batch runs, with the changed settings named, and leaves every table as it was;
 * the original settings then work. The same for a new checkpoint on an old lakehouse, for the
 * reconcile job, and through both entry points (launcher, spark-submit main). A pipeline file
 * that defines kpi_5m as the stream wrote it runs; one that gives its rows another meaning (here a
 * WHERE) is refused by the stream and by reconcile.
 */
class QueryDefinitionGuardTest extends OnSharedInfrastructure {
    private static final String RECOVER = ". Nothing was read or written. To recover: put ";
    private static final String NEW_RUN = "; or, to run with the new settings, start a new checkpoint and a new lakehouse "
            + "(stream.checkpoint and lakehouse pointing at empty directories)";

    @Test
    void changedWindowLatenessOrTopicIsRefusedAndTheOriginalSettingsStillWork() throws Exception {
        Path dir = infra.newDir("definition");
        String topic = "definition-" + dir.getFileName();
        String otherTopic = topic + "-other";
        infra.broker.createTopic(topic, 2);
        infra.broker.createTopic(otherTopic, 1);
        GenerationReport first = produce(infra, topic, 1500, 1);
        TidemarkConfig original = infra.config(dir, topic).build();
        runToEnd(infra, original);
        String cp = original.checkpointUri();
        String lh = original.lakehouseUri();
        Map<String, Long> versions = deltaVersions(original);
        assertThat(versions).hasSize(Lakehouse.of(original).tables().size());
        Path definition = Path.of(cp, "tidemark-query.json");
        assertThat(Files.readString(definition)).contains("\"window\" : \"PT5M\"", "\"lateness\" : \"PT10M\"", "\"topic\" : \"" + topic + "\"");

        String where = "the checkpoint " + cp + " and the lakehouse " + lh + " (kpi_5m, stream_progress) were written with another query definition: ";
        assertRefused(original.toBuilder().set(Key.WINDOW, "10 minutes").build(),
                where + "window 5 minutes -> 10 minutes" + RECOVER + "window back to 5 minutes" + NEW_RUN);
        assertRefused(original.toBuilder().set(Key.LATENESS, "20m").build(),
                where + "lateness 10 minutes -> 20 minutes" + RECOVER + "lateness back to 10 minutes" + NEW_RUN);
        assertRefused(original.toBuilder().set(Key.TOPIC, otherTopic).build(),
                where + "topic '" + topic + "' -> '" + otherTopic + "'" + RECOVER + "topic back to '" + topic + "'" + NEW_RUN
                        + "; the checkpoint's Kafka offsets and the lakehouse's rows belong to topic '" + topic + "': to move to topic '"
                        + otherTopic + "' keep the old lakehouse as it is (reconcile it with topic '" + topic
                        + "') and start the new topic in a new checkpoint and a new lakehouse");
        assertRefused(original.toBuilder().set(Key.WINDOW, "1 hour").set(Key.LATENESS, "0s").build(),
                where + "window 5 minutes -> 1 hour, lateness 10 minutes -> 0 seconds" + RECOVER
                        + "window back to 5 minutes and lateness back to 10 minutes" + NEW_RUN);
        // The same wording, but spelled differently, is the same definition.
        TidemarkConfig sameInOtherWords = original.toBuilder().set(Key.WINDOW, "PT5M").set(Key.LATENESS, "600 seconds").build();
        assertThat(deltaVersions(original)).isEqualTo(versions);

        // A new checkpoint on the old lakehouse with another window: caught by the tables' properties.
        TidemarkConfig newCheckpoint = original.toBuilder().set(Key.WINDOW, "10 minutes")
                .set(Key.CHECKPOINT, dir.resolve("checkpoint-2").toString()).build();
        assertRefused(newCheckpoint, "the lakehouse " + lh + " (kpi_5m, stream_progress) was written with another query definition: "
                + "window 5 minutes -> 10 minutes" + RECOVER + "window back to 5 minutes" + NEW_RUN);
        assertThat(dir.resolve("checkpoint-2")).doesNotExist();

        // Reconcile uses the lakehouse's window and refuses a configuration that disagrees.
        assertThatThrownBy(() -> new ReconcileJob(infra.spark, original.toBuilder().set(Key.WINDOW, "10 minutes").build(),
                new java.io.PrintStream(java.io.OutputStream.nullOutputStream())).run(DaySelection.recent(1), false))
                .isInstanceOf(RequestRefusedException.class)
                .hasMessage("the lakehouse " + lh + " holds 5 minutes KPI windows (kpi_5m property tidemark.query.window) but this run has "
                        + "window = 10 minutes; set window back to 5 minutes (the stream's window): reconcile recomputes days with the window "
                        + "the stream wrote");

        // The launcher: one line, exit code 2.
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        int code = Tidemark.run(new String[] {"stream", "--available-now",
                "--set", "kafka.bootstrap-servers=" + original.bootstrapServers(), "--set", "topic=" + topic,
                "--set", "lakehouse=" + lh, "--set", "stream.checkpoint=" + cp, "--set", "window=10 minutes"},
                Map.of(), new PrintWriter(out), new PrintWriter(err));
        assertThat(code).isEqualTo(2);
        assertThat(err.toString().strip()).isEqualTo("tidemark stream: " + where + "window 5 minutes -> 10 minutes" + RECOVER
                + "window back to 5 minutes" + NEW_RUN);

        // spark-submit's entry point: the same line last, exit code 2.
        Path log = dir.resolve("main.log");
        JobProcess main = JobProcess.start(StreamingJob.class, List.of("--available-now",
                "kafka.bootstrap-servers=" + original.bootstrapServers(), "topic=" + topic, "lakehouse=" + lh,
                "stream.checkpoint=" + cp, "lateness=20 minutes"), Map.of(), log);
        assertThat(main.await(180)).as("exit code\n%s", main.tail()).isEqualTo(2);
        List<String> lines = Files.readAllLines(log);
        assertThat(lines.get(lines.size() - 1)).isEqualTo("tidemark stream: " + where + "lateness 10 minutes -> 20 minutes" + RECOVER
                + "lateness back to 10 minutes" + NEW_RUN);
        assertThat(String.join("\n", lines)).doesNotContain("\tat ");
        assertThat(deltaVersions(original)).isEqualTo(versions);

        // A pipeline file: the same definition runs; another meaning of kpi_5m's rows is refused by the stream and by reconcile.
        String network = Files.readString(Path.of(System.getProperty("user.dir")).getParent().resolve("pipelines/network.sql"))
                .replace("topic 'network-events'", "topic '" + topic + "'");
        Path same = dir.resolve("same.sql");
        Files.writeString(same, network);
        runToEnd(infra, original.toBuilder().set(Key.PIPELINE, same.toString()).build());
        Map<String, Long> afterSame = deltaVersions(original);
        String kpi = "dimensions cell_site_id; where (none); measures record_count = count(*), "
                + "total_gb = sum(CAST(volume_gb AS DECIMAL(38,9))), subscribers = approx_count_distinct(subscriber_id)";
        assertThat(Files.readString(definition)).contains("\"kpi.kpi_5m\" : \"" + kpi + "\"");
        Path filtered = dir.resolve("filtered.sql");
        Files.writeString(filtered, network.replace("FROM STREAM events\n", "FROM STREAM events\nWHERE volume_gb > 0\n"));
        TidemarkConfig withWhere = original.toBuilder().set(Key.PIPELINE, filtered.toString()).build();
        assertRefused(withWhere, where + "KPI table kpi_5m [" + kpi + "] -> [" + kpi.replace("where (none)", "where volume_gb > 0") + "]"
                + RECOVER + "the pipeline's kpi_5m back as it was (dimensions, WHERE and measures)" + NEW_RUN);
        assertThatThrownBy(() -> new ReconcileJob(infra.spark, withWhere, new java.io.PrintStream(java.io.OutputStream.nullOutputStream()))
                .run(DaySelection.recent(1), false))
                .isInstanceOf(RequestRefusedException.class)
                .hasMessage("the lakehouse " + lh + " holds KPI table kpi_5m as [" + kpi + "] (property tidemark.query.kpi.kpi_5m) but this "
                        + "run's pipeline (" + filtered + ") defines it as [" + kpi.replace("where (none)", "where volume_gb > 0") + "]; run "
                        + "reconcile with the stream's pipeline (setting pipeline): it recomputes days as the stream wrote them");
        assertThat(deltaVersions(original)).isEqualTo(afterSame);

        // The original settings (in other words) still work, and nothing was lost or doubled.
        GenerationReport second = produce(infra, topic, 700, 2);
        runToEnd(infra, sameInOtherWords);
        ConservationCheck.Report report = ConservationCheck.check(infra.spark, Lakehouse.of(original), first.messages() + second.messages());
        assertThat(report.violations()).isEmpty();
        assertThat(report.duplicates()).isZero();
        assertThat(report.rawEvents()).isEqualTo(first.valid() + second.valid());
        assertThat(report.deadLetters()).isEqualTo(first.invalid() + second.invalid());
    }

    private static void assertRefused(TidemarkConfig config, String message) {
        assertThatThrownBy(() -> runToEnd(infra, config)).isInstanceOf(IncompatibleQueryException.class).hasMessage(message);
    }

    static GenerationReport produce(SharedInfrastructure infra, String topic, long count, long seed) throws Exception {
        TrafficSpec spec = TrafficSpec.builder().topic(topic).count(count).cells(10).subscribers(200)
                .lateFraction(0.02).invalidFraction(0.02).seed(seed).eventsPerSecondOfEventTime(5).build();
        return new KafkaTrafficProducer(infra.broker.bootstrapServers(), Map.of()).produce(spec, p -> { });
    }

    static void runToEnd(SharedInfrastructure infra, TidemarkConfig config) throws Exception {
        StreamingJob job = new StreamingJob(infra.spark, config, null);
        try {
            StreamingQuery q = job.start(true);
            q.awaitTermination();
        } finally {
            job.close();
        }
    }

    /** The latest Delta version of each table that exists. */
    static Map<String, Long> deltaVersions(TidemarkConfig config) throws Exception {
        Map<String, Long> out = new LinkedHashMap<>();
        for (Lakehouse.Table t : Lakehouse.of(config).tables()) {
            Path log = Path.of(Lakehouse.of(config).path(t), "_delta_log");
            if (!Files.isDirectory(log)) {
                continue;
            }
            try (var s = Files.list(log)) {
                out.put(t.tableName(), s.map(p -> p.getFileName().toString()).filter(n -> n.matches("\\d{20}\\.json"))
                        .mapToLong(n -> Long.parseLong(n.substring(0, 20))).max().orElse(-1));
            }
        }
        return out;
    }
}
