package io.tidemark.tests;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.File;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;

import io.tidemark.lakehouse.TidemarkConfig;
import io.tidemark.launcher.Tidemark;
import io.tidemark.reconcile.DaySelection;
import io.tidemark.reconcile.ReconcileJob;
import io.tidemark.stream.StreamingJob;

/**
 * {@code tidemark catalog register} into an embedded Derby metastore, then a fresh {@code spark-sql}
 * of pyspark 4.2.0 (the venv's Spark distribution, with only Delta's two jars added: no Tidemark
 * code) reads the tables and views by name and gets exactly what {@code tidemark sql} gets from its
 * per-session catalog. Over the crafted input of {@link CraftedBatchesTest} with its closed day
 * 2026-11-27 reconciled. Re-registration is idempotent, replaces a view whose text is not the one of
 * sql/views.sql (an upgrade), and refuses to repoint tables registered at another lakehouse.
 */
class SharedCatalogTest extends OnSharedInfrastructure {
    private static final Path REPO = Path.of(System.getProperty("user.dir")).toAbsolutePath().getParent();
    private static final List<String> TABLES = List.of("raw_events", "kpi_5m", "late_events", "dead_letter", "stream_progress",
            "stream_gaps", "reconcile_report", "expired_days");
    private static final List<String> VIEWS = List.of("kpi_final", "kpi_hourly", "kpi_daily", "late_by_day", "late_by_cell_day",
            "late_by_table_day", "drift_by_day");

    /**
     * One row per line, every column as text, tagged with the query's name: the same text from both kinds of
     * session. Unqualified names: tidemark sql's views are temporary (no database), and both sessions USE tidemark.
     */
    private static final Map<String, String> QUERIES = new LinkedHashMap<>();

    static {
        QUERIES.put("kpi_daily", rowsOf("kpi_daily", "event_date", "cell_site_id", "record_count", "total_gb", "subscribers", "windows",
                "is_final", "reconciled", "base64(subscriber_sketch)"));
        QUERIES.put("kpi_hourly", rowsOf("kpi_hourly", "hour_start", "hour_end", "cell_site_id", "record_count", "total_gb", "subscribers",
                "windows", "is_final", "reconciled", "base64(subscriber_sketch)", "event_date"));
        QUERIES.put("kpi_final", rowsOf("kpi_final", "window_start", "window_end", "cell_site_id", "record_count", "total_gb", "subscribers",
                "base64(subscriber_sketch)", "source", "updated_at", "event_date"));
        QUERIES.put("late_by_day", rowsOf("late_by_day", "event_date", "late_records", "late_gb", "max_late_by_ms", "avg_late_by_ms"));
        QUERIES.put("late_by_cell_day", rowsOf("late_by_cell_day", "event_date", "cell_site_id", "late_records", "late_gb", "max_late_by_ms",
                "avg_late_by_ms"));
        QUERIES.put("late_by_table_day", rowsOf("late_by_table_day", "event_date", "kpi", "late_records", "max_late_by_ms", "avg_late_by_ms"));
        QUERIES.put("drift_by_day", rowsOf("drift_by_day", "event_date", "kpi", "measure", "run_id", "run_started_at", "stream_value",
                "batch_value", "drift", "drift_rel", "estimate", "drift_threshold", "over_threshold", "windows_changed", "late_records"));
        QUERIES.put("kpi_5m", "SELECT concat_ws('|', 'kpi_5m', CAST(event_date AS STRING), CAST(count(*) AS STRING), "
                + "CAST(sum(record_count) AS STRING), CAST(count_if(source = 'batch') AS STRING)) AS r "
                + "FROM kpi_5m GROUP BY event_date ORDER BY r");
        // Tables no view reads cost a Delta snapshot each: only the raw log, and the two the views read.
        for (String t : List.of("raw_events", "late_events", "reconcile_report")) {
            QUERIES.put(t, "SELECT concat_ws('|', '" + t + "', CAST(count(*) AS STRING)) AS r FROM tidemark." + t);
        }
    }

    private static String rowsOf(String view, String... columns) {
        String cells = Arrays.stream(columns).map(c -> "coalesce(CAST(" + c + " AS STRING), 'NULL')").collect(Collectors.joining(", "));
        return "SELECT concat_ws('|', '" + view + "', " + cells + ") AS r FROM " + view + " ORDER BY r";
    }

    @Test
    void aFreshSparkSqlWithoutTidemarkSeesTheTablesAndViewsWithTidemarkSqlsNumbers() throws Exception {
        Path dir = infra.newDir("catalog");
        String topic = "catalog-" + dir.getFileName();
        infra.broker.createTopic(topic, 1);
        KafkaFixtures.send(infra.broker.bootstrapServers(), topic, CraftedBatchesTest.messages());
        TidemarkConfig config = infra.config(dir, topic).set(TidemarkConfig.Key.MAX_OFFSETS_PER_TRIGGER, "4").build();
        StreamingJob stream = new StreamingJob(infra.spark, config, null);
        stream.start(true).awaitTermination();
        stream.close();
        new ReconcileJob(infra.spark, config, new PrintStream(OutputStream.nullOutputStream()))
                .run(DaySelection.day(LocalDate.parse("2026-11-27")), false);
        String lakehouse = config.lakehouseUri();
        Path metastore = dir.resolve("metastore");

        // Register: the database under the lakehouse, eight EXTERNAL Delta tables, six views.
        Launch first = tidemark(dir, "catalog", "register", "--metastore", metastore.toString(), "--set", "lakehouse=" + lakehouse);
        assertThat(first.code()).as(first.output()).isZero();
        assertThat(first.lines()).contains("database tidemark              created at " + lakehouse + "/_tidemark/tidemark.db");
        for (String t : TABLES) {
            assertThat(first.lines()).contains(String.format("%-30s registered at %s/%s", "table tidemark." + t, lakehouse, t));
        }
        for (String v : VIEWS) {
            assertThat(first.lines()).contains(String.format("%-30s created", "view tidemark." + v));
        }
        assertThat(metastore.resolve("metastore_db")).isDirectory();
        assertThat(metastore.resolve("derby.log")).isRegularFile();
        assertThat(Path.of(System.getProperty("user.dir"), "derby.log")).as("derby.log in the working directory").doesNotExist();
        assertThat(first.output()).doesNotContain("WARN", "ERROR");

        // A fresh spark-sql: pyspark's distribution, Delta's jars, the metastore. Its rows are tidemark sql's rows.
        String sql = String.join(";\n", QUERIES.values());
        SparkSql fresh = sparkSql(dir, metastore, "USE tidemark;\n" + sql + ";\nCREATE OR REPLACE VIEW tidemark.kpi_daily AS SELECT 1 AS stale_definition");
        Launch tidemarkSql = tidemark(dir, "sql", "--max-rows", "1000", "--truncate", "0", "--set", "lakehouse=" + lakehouse, sql);
        assertThat(tidemarkSql.code()).as(tidemarkSql.output()).isZero();
        Map<String, List<String>> viaLauncher = tagged(tidemarkSql.stdout());
        Map<String, List<String>> viaCatalog = tagged(fresh.stdout());
        assertThat(viaCatalog.keySet()).containsExactlyInAnyOrderElementsOf(QUERIES.keySet());
        assertThat(viaCatalog).isEqualTo(viaLauncher);

        // The figures themselves (CraftedBatchesTest's fates; 2026-11-27 reconciled with its late record folded in).
        assertThat(viaCatalog.get("kpi_daily")).extracting(SharedCatalogTest::withoutSketch).containsExactly(
                "kpi_daily|2026-11-27|c1|2|9.250000000|2|1|true|true",
                "kpi_daily|2026-11-28|c1|7|8.600000000|3|4|false|false",
                "kpi_daily|2026-11-28|c2|4|2.700000000|3|3|false|false",
                "kpi_daily|2026-11-28|c4|1|2.000000000|1|1|true|false",
                "kpi_daily|2026-11-28|c5|1|0.900000000|1|1|false|false");
        assertThat(viaCatalog.get("kpi_5m")).containsExactly("kpi_5m|2026-11-27|1|2|1", "kpi_5m|2026-11-28|9|13|0");
        assertThat(viaCatalog.get("late_by_day")).extracting(r -> String.join("|", Arrays.asList(r.split("\\|")).subList(0, 4)))
                .containsExactly("late_by_day|2026-11-27|1|9.000000000", "late_by_day|2026-11-28|5|16.000000000");
        // One row per measure: event_date, kpi, measure, stream, batch, drift, estimate, over the threshold, windows changed, late records folded in
        assertThat(viaCatalog.get("drift_by_day")).extracting(r -> {
            String[] f = r.split("\\|");
            return String.join("|", f[1], f[2], f[3], f[6], f[7], f[8], f[10], f[12], f[13], f[14]);
        }).containsExactly("2026-11-27|kpi_5m|record_count|1.000000000|2.000000000|1.000000000|false|true|1|1",
                "2026-11-27|kpi_5m|subscribers|1.000000000|2.000000000|1.000000000|true|false|1|1",
                "2026-11-27|kpi_5m|total_gb|0.250000000|9.250000000|9.000000000|false|true|1|1");
        assertThat(viaCatalog.get("raw_events")).containsExactly("raw_events|20");
        assertThat(viaCatalog.get("late_events")).containsExactly("late_events|6");
        // a summary row and a window row for each of the three measures (the window's count, volume and subscribers all changed)
        assertThat(viaCatalog.get("reconcile_report")).containsExactly("reconcile_report|6");

        // Another lakehouse onto the same metastore: refused, nothing changed.
        Path other = dir.resolve("other-lakehouse");
        copy(Path.of(lakehouse), other);
        Launch refused = tidemark(dir, "catalog", "register", "--metastore", metastore.toString(), "--set", "lakehouse=" + other);
        assertThat(refused.code()).as(refused.output()).isEqualTo(Tidemark.BAD_INPUT);
        assertThat(refused.stderr()).contains("tidemark catalog register: nothing registered: tidemark.raw_events is registered at file:"
                + lakehouse + "/raw_events, not at " + other + "/raw_events (another lakehouse?), and so are 7 more tables; pass --replace to point them here");

        // Registering again (as after an upgrade): tables unchanged, the view spark-sql replaced by an older definition is replaced back.
        Launch again = tidemark(dir, "catalog", "register", "--metastore", metastore.toString(), "--set", "lakehouse=" + lakehouse);
        assertThat(again.code()).as(again.output()).isZero();
        for (String t : TABLES) {
            assertThat(again.lines()).contains(String.format("%-30s unchanged", "table tidemark." + t));
        }
        for (String v : VIEWS) {
            assertThat(again.lines()).contains(String.format("%-30s %s", "view tidemark." + v,
                    v.equals("kpi_daily") ? "replaced (the view changed)" : "unchanged"));
        }
        // An embedded metastore admits one JVM at a time: while another holds it (here this test's), the command says so in one line.
        String database = "jdbc:derby:" + metastore.resolve("metastore_db");
        System.setProperty("derby.stream.error.file", dir.resolve("derby-test.log").toString()); // this JVM's Derby: not in the working directory either
        try (java.sql.Connection held = java.sql.DriverManager.getConnection(database)) {
            Launch busy = tidemark(dir, "catalog", "status", "--metastore", metastore.toString(), "--set", "lakehouse=" + lakehouse);
            assertThat(busy.code()).as(busy.output()).isEqualTo(Tidemark.BAD_INPUT);
            assertThat(busy.stderr().strip().lines().reduce((a, b) -> b).orElse("")).isEqualTo("tidemark catalog status: the embedded "
                    + "Derby metastore could not be opened, most likely because another JVM uses it (a spark-sql, a notebook, the Thrift "
                    + "server?): it admits one at a time; stop that session and run this again (" + metastore + ")");
            assertThat(busy.stderr()).doesNotContain("\tat ");
        }
        try {
            java.sql.DriverManager.getConnection(database + ";shutdown=true");
        } catch (java.sql.SQLException shutDown) {
            assertThat(shutDown.getSQLState()).isEqualTo("08006"); // Derby's "database shut down"
        }

        SparkSql after = sparkSql(dir, metastore, "USE tidemark;\n" + QUERIES.get("kpi_daily") + ";\nSHOW TABLES IN tidemark");
        assertThat(after.stdout().lines().filter(l -> l.startsWith("kpi_daily|")).toList()).isEqualTo(viaLauncher.get("kpi_daily"));
        assertThat(after.stdout().lines().map(String::strip).filter(l -> !l.startsWith("kpi_daily|")).sorted().toList())
                .isEqualTo(Stream.concat(TABLES.stream(), VIEWS.stream()).sorted().toList());
    }

    private static String withoutSketch(String row) {
        return row.substring(0, row.lastIndexOf('|'));
    }

    /** The lines of both sessions' output that a query tagged, by tag, in order. */
    private static Map<String, List<String>> tagged(String stdout) {
        Map<String, List<String>> out = new TreeMap<>();
        for (String line : stdout.split("\n")) {
            String l = line.strip();
            int bar = l.indexOf('|');
            if (bar > 0 && QUERIES.containsKey(l.substring(0, bar))) {
                out.computeIfAbsent(l.substring(0, bar), k -> new ArrayList<>()).add(l);
            }
        }
        return out;
    }

    record Launch(int code, String stdout, String stderr) {
        List<String> lines() {
            return stdout.lines().toList();
        }

        String output() {
            return stdout + "\n" + stderr;
        }
    }

    /** The launcher in its own JVM, as ./tidemark runs it. */
    private static Launch tidemark(Path dir, String... args) throws Exception {
        Path out = Files.createTempFile(dir, "tidemark-", ".out");
        Path err = Files.createTempFile(dir, "tidemark-", ".err");
        JobProcess p = JobProcess.start(Tidemark.class, List.of(args), Map.of(), out, err);
        int code = p.await(480);
        return new Launch(code, Files.readString(out), Files.readString(err));
    }

    record SparkSql(String stdout, String stderr) {
    }

    /**
     * pyspark 4.2.0's {@code spark-sql} from the repository's venv (python/setup-venv makes it), with
     * Delta's two jars (the ones this build resolved) and nothing of Tidemark: what docs/tables.md,
     * "A shared catalog", tells an analyst to run.
     */
    private static SparkSql sparkSql(Path dir, Path metastore, String sql) throws Exception {
        Path sparkSql;
        try (Stream<Path> pythons = Files.list(REPO.resolve(".venv/lib"))) {
            sparkSql = pythons.map(p -> p.resolve("site-packages/pyspark/bin/spark-sql")).filter(Files::isExecutable).findFirst()
                    .orElseThrow(() -> new AssertionError("no pyspark in " + REPO.resolve(".venv") + ": run python/setup-venv"));
        } catch (java.nio.file.NoSuchFileException e) {
            throw new AssertionError("no venv at " + REPO.resolve(".venv") + ": run python/setup-venv", e);
        }
        String jars = Arrays.stream(System.getProperty("java.class.path").split(File.pathSeparator))
                .filter(j -> j.matches(".*/delta-(spark_2\\.13|storage)-4\\.4\\.0\\.jar"))
                .collect(Collectors.joining(","));
        assertThat(jars.split(",")).hasSize(2);
        List<String> cmd = List.of(sparkSql.toString(), "--master", "local[2]", "--jars", jars,
                "--conf", "spark.sql.extensions=io.delta.sql.DeltaSparkSessionExtension",
                "--conf", "spark.sql.catalog.spark_catalog=org.apache.spark.sql.delta.catalog.DeltaCatalog",
                "--conf", "spark.hadoop.javax.jdo.option.ConnectionURL=jdbc:derby:;databaseName=" + metastore + "/metastore_db;create=true",
                "--conf", "spark.sql.warehouse.dir=" + metastore + "/warehouse",
                "--conf", "spark.sql.session.timeZone=UTC",
                // Speed only, as Tidemark's own sessions: 2 tasks per aggregation and per Delta snapshot instead of 200 and 50.
                "--conf", "spark.sql.shuffle.partitions=2",
                "--conf", "spark.databricks.delta.snapshotPartitions=2",
                "--conf", "spark.ui.enabled=false",
                "--driver-java-options", "-Dderby.stream.error.file=" + metastore + "/derby.log",
                "-S", "-e", sql);
        Path out = Files.createTempFile(dir, "spark-sql-", ".out");
        Path err = Files.createTempFile(dir, "spark-sql-", ".err");
        ProcessBuilder pb = new ProcessBuilder(cmd).directory(dir.toFile())
                .redirectOutput(out.toFile()).redirectError(err.toFile());
        pb.environment().put("JAVA_HOME", System.getProperty("java.home"));
        pb.environment().put("SPARK_LOCAL_IP", "127.0.0.1");
        pb.environment().remove("SPARK_HOME");
        pb.environment().remove("SPARK_CONF_DIR");
        Process p = pb.start();
        if (!p.waitFor(480, TimeUnit.SECONDS)) {
            p.destroyForcibly().waitFor();
            throw new AssertionError("spark-sql did not finish in 480 s: " + Files.readString(err));
        }
        assertThat(p.exitValue()).as("spark-sql exit code; stderr: %s", Files.readString(err)).isZero();
        return new SparkSql(Files.readString(out), Files.readString(err));
    }

    private static void copy(Path from, Path to) throws Exception {
        try (Stream<Path> all = Files.walk(from)) {
            for (Path p : all.toList()) {
                Path target = to.resolve(from.relativize(p).toString());
                if (Files.isDirectory(p)) {
                    Files.createDirectories(target);
                } else {
                    Files.copy(p, target);
                }
            }
        }
    }
}
