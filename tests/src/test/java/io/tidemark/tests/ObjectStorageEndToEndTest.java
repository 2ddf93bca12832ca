package io.tidemark.tests;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.RegisterExtension;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import io.tidemark.generate.GenerationReport;
import io.tidemark.generate.KafkaTrafficProducer;
import io.tidemark.generate.TrafficSpec;
import io.tidemark.lakehouse.Lakehouse;
import io.tidemark.lakehouse.Lakehouse.Table;
import io.tidemark.lakehouse.TidemarkConfig;
import io.tidemark.launcher.Tidemark;
import io.tidemark.operations.ConservationCheck;

/**
 * The whole flow with the lakehouse and the checkpoint on a real S3 server, through the commands a
 * user runs (stream with late and invalid records, reconcile, maintain, status), beside the same
 * flow over the same topic on local disk: every table holds the same rows in both, conservation
 * holds on S3, and the Python reader (delta-rs) reads the S3 tables with its storage options.
 */
class ObjectStorageEndToEndTest {
    static SharedInfrastructure infra;

    @RegisterExtension
    static BeforeAllCallback start = (ExtensionContext c) -> infra = SharedInfrastructure.get(c);

    /** Columns that hold a wall-clock time or duration, or a query's or run's id: they differ between any two runs. */
    private static final Set<String> WALL_CLOCK = Set.of("updated_at", "run_id", "run_started_at", "started_at", "finished_at",
            "detected_at", "removed_at", "batch_ts", "partition_clocks", "duration_ms", "query_id", "classify_ms", "write_ms", "freshness_ms");

    @Test
    void aRunOnS3HoldsWhatTheSameRunHoldsOnLocalDisk() throws Exception {
        Path dir = infra.newDir("s3-e2e");
        try (S3Server s3 = S3Server.start(dir.resolve("s3"))) {
            s3.configure(infra.spark);
            String topic = "s3-e2e-" + dir.getFileName();
            infra.broker.createTopic(topic, 2);
            // 22 hours of event time from 11-26 06:00: 11-26 closes, 11-27 stays open
            TrafficSpec spec = TrafficSpec.builder().topic(topic).count(4_000L).cells(12).subscribers(300).lateFraction(0.03)
                    .invalidFraction(0.03).seed(11).eventClockStart(Instant.parse("2026-11-26T06:00:00Z")).eventsPerSecondOfEventTime(0.05).build();
            GenerationReport produced = new KafkaTrafficProducer(infra.broker.bootstrapServers(), Map.of()).produce(spec, p -> { });

            Map<String, TidemarkConfig> runs = new LinkedHashMap<>();
            runs.put("s3", infra.config(dir, topic).set(TidemarkConfig.Key.LAKEHOUSE, s3.uri("lakehouse"))
                    .set(TidemarkConfig.Key.CHECKPOINT, s3.uri("checkpoints/stream")).build());
            runs.put("local", infra.config(dir, topic).build());
            Map<String, JsonNode> status = new LinkedHashMap<>();
            for (Map.Entry<String, TidemarkConfig> run : runs.entrySet()) {
                TidemarkConfig c = run.getValue();
                List<String> settings = List.of("--set", "kafka.bootstrap-servers=" + c.bootstrapServers(), "--set", "topic=" + topic,
                        "--set", "lakehouse=" + c.lakehouseUri(), "--set", "stream.checkpoint=" + c.checkpointUri(), "--set", "metrics.port=0");
                command(run.getKey(), concat(List.of("stream", "--available-now"), settings, List.of("--set", "stream.max-offsets-per-trigger=1000")));
                String reconciled = command(run.getKey(), concat(List.of("reconcile", "--from", "2026-11-26", "--to", "2026-11-26"), settings));
                assertThat(reconciled).contains("2026-11-26");
                command(run.getKey(), concat(List.of("maintain"), settings));
                status.put(run.getKey(), new ObjectMapper().readTree(command(run.getKey(), concat(List.of("status", "--json"), settings))));
            }
            TidemarkConfig onS3 = runs.get("s3");
            Lakehouse s3Lakehouse = Lakehouse.of(onS3);
            Lakehouse local = Lakehouse.of(runs.get("local"));

            ConservationCheck.Report report = ConservationCheck.check(infra.spark, s3Lakehouse, produced.messages());
            assertThat(report.violations()).isEmpty();
            // every record in exactly one place (the generator's future-time records are not future on a clock of 11-26: counted together)
            assertThat(report.rawEvents() + report.deadLetters()).isEqualTo(produced.messages());
            assertThat(report.deadLetters()).isBetween(produced.invalid() - produced.count(io.tidemark.generate.GeneratedMessage.Kind.FUTURE_EVENT_TIME), produced.invalid());
            assertThat(report.duplicates()).isZero();
            assertThat(report.lateEvents()).isPositive();

            for (Table t : List.of(Table.RAW_EVENTS, Table.LATE_EVENTS, Table.DEAD_LETTER, Table.kpi("kpi_5m"), Table.STREAM_PROGRESS,
                    Table.RECONCILE_REPORT)) {
                Dataset<Row> a = comparable(s3Lakehouse, t);
                Dataset<Row> b = comparable(local, t);
                assertThat(a.count()).as("%s rows", t).isEqualTo(b.count()).isPositive();
                assertThat(a.exceptAll(b).count() + b.exceptAll(a).count()).as("%s rows that differ between S3 and local disk", t).isZero();
            }
            assertThat(infra.spark.read().format("delta").load(s3Lakehouse.path(Table.kpi("kpi_5m"))).where("source = 'batch'").count())
                    .as("reconciled rows on S3").isPositive();
            // status reads the same from both: the stream's position, the days, each table's files and commits since its
            // checkpoint, and the bytes of the tables whose rows are equal (the others hold wall-clock times)
            for (String field : List.of("stream", "days")) {
                assertThat(status.get("s3").path(field).toString().replace(onS3.lakehouseUri(), "LH"))
                        .as("status %s", field).isEqualTo(status.get("local").path(field).toString().replace(runs.get("local").lakehouseUri(), "LH"));
            }
            assertThat(tableStates(status.get("s3"))).isEqualTo(tableStates(status.get("local"))).hasSize(Table.OWN.size() + 1);

            // the Python reader, from S3, with delta-rs's storage options
            assertThat(python(s3, onS3.lakehouseUri() + "/raw_events")).isEqualTo(String.valueOf(report.rawEvents()));
        }
    }

    /** status --json's tables: name, files, commits since checkpoint, oldest uncompacted day, and bytes where rows hold no wall-clock time. */
    private static List<String> tableStates(JsonNode status) {
        List<String> out = new ArrayList<>();
        for (JsonNode t : status.path("tables")) {
            String name = t.path("name").asText();
            boolean timeless = !name.equals("stream_progress") && !name.equals("reconcile_report") && !name.equals("expired_days");
            out.add(name + " files=" + t.path("files") + " commits=" + t.path("commits_since_checkpoint") + " oldest="
                    + t.path("oldest_uncompacted_day") + (timeless ? " bytes=" + t.path("bytes") : ""));
        }
        return out;
    }

    /** Runs a tidemark command in this JVM on the shared session; its standard output. */
    private static String command(String run, List<String> args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        int code = Tidemark.run(args.toArray(String[]::new), Map.of(), new PrintWriter(out), new PrintWriter(err), Tidemark.Sessions.shared(infra.spark));
        assertThat(code).as("%s: tidemark %s%n%s%n%s", run, args.get(0), out, err).isZero();
        return out.toString();
    }

    /** The table without the columns that differ between any two runs, and without maps (not comparable). */
    private static Dataset<Row> comparable(Lakehouse lakehouse, Table t) {
        Dataset<Row> d = infra.spark.read().format("delta").load(lakehouse.path(t));
        String[] keep = Arrays.stream(d.schema().fields())
                .filter(f -> !WALL_CLOCK.contains(f.name()) && !(f.dataType() instanceof org.apache.spark.sql.types.MapType))
                .map(f -> "`" + f.name() + "`").toArray(String[]::new);
        return d.selectExpr(keep);
    }

    /** The row count of a Delta table on the S3 server, read by delta-rs from the project's venv. */
    private static String python(S3Server s3, String table) throws Exception {
        Path python = Path.of(System.getProperty("user.dir")).toAbsolutePath().getParent().resolve(".venv/bin/python");
        String script = """
                import sys
                from deltalake import DeltaTable, QueryBuilder
                opts = {"AWS_ENDPOINT_URL": sys.argv[2], "AWS_ALLOW_HTTP": "true", "AWS_REGION": "us-east-1",
                        "AWS_ACCESS_KEY_ID": "tidemark", "AWS_SECRET_ACCESS_KEY": "tidemark-secret"}
                t = DeltaTable(sys.argv[1].replace("s3a://", "s3://"), storage_options=opts)
                print(QueryBuilder().register("t", t).execute("SELECT count(*) AS n FROM t").read_all().column("n")[0].as_py())
                """;
        Process p = new ProcessBuilder(python.toString(), "-c", script, table, s3.endpoint()).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
        assertThat(p.waitFor()).as("python: %s", out).isZero();
        return out;
    }

    @SafeVarargs
    private static List<String> concat(List<String>... parts) {
        List<String> out = new ArrayList<>();
        for (List<String> p : parts) {
            out.addAll(p);
        }
        return out;
    }

}
