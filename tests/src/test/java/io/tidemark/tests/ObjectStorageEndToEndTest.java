package io.tidemark.tests;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.junit.jupiter.api.Test;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import io.tidemark.generate.EventFormat;
import io.tidemark.generate.GeneratedMessage.Kind;
import io.tidemark.generate.GenerationReport;
import io.tidemark.generate.IngestMode;
import io.tidemark.generate.KafkaTrafficProducer;
import io.tidemark.generate.TrafficSpec;
import io.tidemark.lakehouse.Lakehouse;
import io.tidemark.lakehouse.Lakehouse.Table;
import io.tidemark.lakehouse.TidemarkConfig;
import io.tidemark.launcher.Tidemark;
import io.tidemark.operations.ConservationCheck;

/**
 * Generated traffic with late and invalid records of every kind through the real broker and the whole
 * flow of commands a user runs (stream, reconcile, maintain, status), with the lakehouse and the
 * checkpoint on a real S3 server, beside the same flow over the same topic on local disk. After the
 * stream, on S3: every record lands in exactly one place, the KPIs equal a recomputation from the raw
 * log, volume is conserved exactly and each kind of garbage is refused for its own reason. After the
 * whole flow: every table holds the same rows on S3 as on local disk, status reads the same, and the
 * Python reader (delta-rs) reads the S3 tables with its storage options.
 */
class ObjectStorageEndToEndTest extends OnSharedInfrastructure {
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
            // 20,000 records from midnight (UTC) two days ago until now, 4,000 per batch: that first day closes while
            // the stream drains, whatever the hour. Late records come 10 to 20 hours after their time (more than a
            // batch spans), so they are late whatever the batch boundaries. The event clock ends now, so the
            // generator's future event times are ahead of their Kafka timestamps.
            java.time.LocalDate day = java.time.LocalDate.now(java.time.ZoneOffset.UTC).minusDays(2);
            Instant start = day.atStartOfDay(java.time.ZoneOffset.UTC).toInstant();
            long count = 20_000;
            TrafficSpec spec = TrafficSpec.builder().topic(topic).count(count).ratePerSecond(0).ingestMode(IngestMode.BACKLOG)
                    .eventClockStart(start).eventsPerSecondOfEventTime(count / (double) java.time.Duration.between(start, Instant.now()).toSeconds())
                    .cells(30).subscribers(2_000).lateFraction(0.03).lateDelay(java.time.Duration.ofHours(10), java.time.Duration.ofHours(20))
                    .invalidFraction(0.06).seed(5).build();
            GenerationReport produced = new KafkaTrafficProducer(infra.broker.bootstrapServers(), Map.of()).produce(spec, p -> { });
            for (Kind k : Kind.invalidKinds(EventFormat.JSON)) {
                assertThat(produced.count(k)).as("generated %s", k).isPositive();
            }
            assertThat(Kind.invalidKinds(EventFormat.JSON)).hasSize(19);

            Map<String, TidemarkConfig> runs = new LinkedHashMap<>();
            runs.put("s3", infra.config(dir, topic).set(TidemarkConfig.Key.LAKEHOUSE, s3.uri("lakehouse"))
                    .set(TidemarkConfig.Key.CHECKPOINT, s3.uri("checkpoints/stream")).build());
            runs.put("local", infra.config(dir, topic).build());
            Map<String, JsonNode> status = new LinkedHashMap<>();
            for (Map.Entry<String, TidemarkConfig> run : runs.entrySet()) {
                TidemarkConfig c = run.getValue();
                List<String> settings = List.of("--set", "kafka.bootstrap-servers=" + c.bootstrapServers(), "--set", "topic=" + topic,
                        "--set", "lakehouse=" + c.lakehouseUri(), "--set", "stream.checkpoint=" + c.checkpointUri(), "--set", "metrics.port=0");
                command(run.getKey(), concat(List.of("stream", "--available-now"), settings, List.of("--set", "stream.max-offsets-per-trigger=4000")));
                if (run.getKey().equals("s3")) {
                    afterTheStream(Lakehouse.of(c), produced);
                }
                String reconciled = command(run.getKey(), concat(List.of("reconcile", "--from", day.toString(), "--to", day.toString()), settings));
                assertThat(reconciled).contains("reconcile " + day);
                command(run.getKey(), concat(List.of("maintain"), settings));
                status.put(run.getKey(), new ObjectMapper().readTree(command(run.getKey(), concat(List.of("status", "--json"), settings))));
            }
            TidemarkConfig onS3 = runs.get("s3");
            Lakehouse s3Lakehouse = Lakehouse.of(onS3);
            Lakehouse local = Lakehouse.of(runs.get("local"));

            // after reconcile and maintain, still: every record in exactly one place
            ConservationCheck.Report report = ConservationCheck.check(infra.spark, s3Lakehouse, produced.messages());
            assertThat(report.violations()).isEmpty();
            assertThat(report.rawEvents()).isEqualTo(produced.valid());
            assertThat(report.deadLetters()).isEqualTo(produced.invalid());
            assertThat(report.duplicates()).isZero();

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

    /** What the stream alone leaves on S3: each record in one place, the KPIs as recomputed, volume conserved, garbage refused by reason. */
    private static void afterTheStream(Lakehouse lh, GenerationReport produced) {
        ConservationCheck.Report report = ConservationCheck.check(infra.spark, lh, produced.messages());
        assertThat(report.violations()).isEmpty();
        assertThat(report.rawEvents()).isEqualTo(produced.valid());
        assertThat(report.deadLetters()).isEqualTo(produced.invalid());
        assertThat(report.duplicates()).isZero();
        assertThat(report.kpiRowsDiffering()).isZero();
        assertThat(report.lateEvents()).as("late records").isPositive();

        // Volume is conserved exactly: what the KPIs hold plus what was late is what the raw log holds.
        Row volumes = infra.spark.sql("SELECT "
                + "(SELECT sum(CAST(volume_gb AS DECIMAL(38,9))) FROM " + lh.ref(Table.RAW_EVENTS) + "), "
                + "(SELECT sum(total_gb) FROM " + lh.ref(Table.kpi("kpi_5m")) + "), "
                + "(SELECT sum(CAST(volume_gb AS DECIMAL(38,9))) FROM " + lh.ref(Table.LATE_EVENTS) + ")").first();
        assertThat(volumes.getDecimal(1).add(volumes.getDecimal(2))).isEqualByComparingTo(volumes.getDecimal(0));

        // Each kind of garbage is refused for its own reason.
        Map<String, Long> reasons = new HashMap<>();
        for (Row r : infra.spark.sql("SELECT reason, count(*) FROM " + lh.ref(Table.DEAD_LETTER) + " GROUP BY reason").collectAsList()) {
            reasons.put(r.getString(0), r.getLong(1));
        }
        assertThat(reasons.getOrDefault("EMPTY", 0L)).isEqualTo(produced.count(Kind.EMPTY) + produced.count(Kind.NULL_VALUE));
        assertThat(reasons.getOrDefault("NOT_AN_OBJECT", 0L)).isEqualTo(produced.count(Kind.NOT_AN_OBJECT));
        assertThat(reasons.getOrDefault("MISSING_FIELD", 0L)).isEqualTo(produced.count(Kind.MISSING_FIELD));
        assertThat(reasons.getOrDefault("NULL_FIELD", 0L)).isEqualTo(produced.count(Kind.NULL_FIELD));
        assertThat(reasons.getOrDefault("WRONG_TYPE", 0L)).isEqualTo(produced.count(Kind.WRONG_TYPE) + produced.count(Kind.NESTED_JUNK));
        assertThat(reasons.getOrDefault("DUPLICATE_FIELD", 0L)).isEqualTo(produced.count(Kind.DUPLICATE_FIELD));
        assertThat(reasons.getOrDefault("BLANK_ID", 0L)).isEqualTo(produced.count(Kind.BLANK_ID));
        assertThat(reasons.getOrDefault("PAST_EVENT_TIME", 0L)).isEqualTo(produced.count(Kind.PAST_EVENT_TIME));
        assertThat(reasons.getOrDefault("NEGATIVE_VOLUME", 0L)).isEqualTo(produced.count(Kind.NEGATIVE_VOLUME));
        assertThat(reasons.getOrDefault("NON_FINITE_VOLUME", 0L)).isEqualTo(produced.count(Kind.NON_FINITE_VOLUME));
        assertThat(reasons.getOrDefault("BAD_TIMESTAMP", 0L)).isEqualTo(produced.count(Kind.BAD_TIMESTAMP));
        assertThat(reasons.getOrDefault("FUTURE_EVENT_TIME", 0L)).isEqualTo(produced.count(Kind.FUTURE_EVENT_TIME));
        assertThat(reasons.getOrDefault("OVERSIZED", 0L)).isEqualTo(produced.count(Kind.OVERSIZED));
        assertThat(reasons.getOrDefault("NOT_UTF8", 0L) + reasons.getOrDefault("NOT_JSON", 0L))
                .isEqualTo(produced.count(Kind.INVALID_UTF8) + produced.count(Kind.BINARY_GARBAGE)
                        + produced.count(Kind.TRUNCATED_JSON) + produced.count(Kind.NOT_JSON));
        assertThat(reasons.getOrDefault("NOT_UTF8", 0L)).isGreaterThanOrEqualTo(produced.count(Kind.INVALID_UTF8));
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

    /**
     * {@code tidemark demo --storage s3}, as a user runs it (in a JVM of its own, as ./tidemark starts it): the repository's
     * S3 server installed if need be and started, the whole demo on it, conservation checked over the S3 tables, the server
     * stopped. Nothing of the lakehouse or the checkpoint is on local disk; the server started again on the objects the demo
     * left, as the demo's last lines say, serves the tables the demo counted.
     */
    @Test
    void theDemoRunsOnTheLocalS3Server() throws Exception {
        Path dir = infra.newDir("s3-demo");
        Path root = Path.of(System.getProperty("user.dir")).toAbsolutePath().getParent();
        Path home = dir.resolve("demo");
        JobProcess demo = JobProcess.start(Tidemark.class, List.of("demo", "--storage", "s3", "--dir", home.toString(),
                        "--backlog-events", "3000", "--live-seconds", "3", "--rate", "300"),
                Map.of(io.tidemark.broker.BrokerSettings.CLASSPATH_PROPERTY, System.getProperty(io.tidemark.broker.BrokerSettings.CLASSPATH_PROPERTY),
                        "tidemark.s3-server", root.resolve("ops/s3-server").toString()),
                dir.resolve("demo.log"));
        assertThat(demo.await(600)).as("the demo\n%s", demo.tail()).isZero();
        String out = java.nio.file.Files.readString(dir.resolve("demo.log"));
        assertThat(out).contains("s3          running at http://127.0.0.1:", "The tables stay in s3a://tidemark-demo/lakehouse.",
                "conservation HOLDS: every record is in exactly one place", "export AWS_ACCESS_KEY_ID=demo AWS_SECRET_ACCESS_KEY=demo");
        assertThat(out).as("no key of the server's is printed").doesNotContain("tidemark-secret");
        assertThat(home.resolve("lakehouse")).doesNotExist();
        assertThat(home.resolve("checkpoint")).doesNotExist();

        // "s3          stopped; its objects stay in ...: '<script> run --port P --dir <objects>' serves them again"
        java.util.regex.Matcher again = java.util.regex.Pattern.compile("run --port (\\d+) --dir (\\S+)' serves them again").matcher(out);
        assertThat(again.find()).as(out).isTrue();
        java.util.regex.Matcher counted = java.util.regex.Pattern.compile("conservation consumed ([\\d,]+) = raw_events ([\\d,]+) \\+ dead_letter ([\\d,]+)")
                .matcher(out);
        assertThat(counted.find()).as(out).isTrue();
        try (io.tidemark.launcher.LocalS3Server served = io.tidemark.launcher.LocalS3Server.start(root.resolve("ops/s3-server"),
                Integer.parseInt(again.group(1)), "tidemark-demo", home.resolve("s3"))) {
            served.hadoopSettings().forEach(infra.spark.sparkContext().hadoopConfiguration()::set);
            long raw = infra.spark.read().format("delta").load(served.uri("lakehouse/raw_events")).count();
            long dead = infra.spark.read().format("delta").load(served.uri("lakehouse/dead_letter")).count();
            assertThat(List.of(raw + dead, raw, dead)).as("consumed, raw_events, dead_letter on S3 as the demo counted them").containsExactly(
                    Long.parseLong(counted.group(1).replace(",", "")), Long.parseLong(counted.group(2).replace(",", "")),
                    Long.parseLong(counted.group(3).replace(",", "")));
        }
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
