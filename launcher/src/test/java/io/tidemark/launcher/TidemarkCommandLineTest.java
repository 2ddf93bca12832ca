package io.tidemark.launcher;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import io.tidemark.lakehouse.TidemarkConfig;
import picocli.CommandLine;
import picocli.CommandLine.Model.OptionSpec;

/** Parsing, help and the exit codes of bad input: no broker, no Spark. */
class TidemarkCommandLineTest {

    record Result(int code, String out, String err) {
    }

    static Result run(Map<String, String> env, String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        int code = Tidemark.run(args, env, new PrintWriter(out), new PrintWriter(err));
        return new Result(code, out.toString(), err.toString());
    }

    static Result run(String... args) {
        return run(Map.of(), args);
    }

    static void assertBadInput(Result r, String command, String... mentions) {
        assertThat(r.code()).as("exit code; stderr: %s", r.err()).isEqualTo(Tidemark.BAD_INPUT);
        assertThat(r.err()).startsWith(command + ": ");
        assertThat(r.err().strip().lines()).as("one line: %s", r.err()).hasSize(1);
        assertThat(r.err()).doesNotContain("\tat ", "Exception");
        for (String m : mentions) {
            assertThat(r.err()).contains(m);
        }
    }

    // ------------------------------------------------------------------ help

    @Test
    void everyCommandHasHelpThatListsItsFlags() {
        CommandLine root = Tidemark.commandLine(Map.of(), new PrintWriter(new StringWriter()), new PrintWriter(new StringWriter()));
        List<List<String>> paths = new ArrayList<>();
        collect(root, new ArrayList<>(), paths);
        assertThat(paths).extracting(p -> String.join(" ", p)).contains(
                "", "demo", "broker", "broker start", "broker stop", "broker status", "generate", "stream", "reconcile", "status", "report", "sql",
                "catalog", "catalog register", "catalog status", "catalog drop");
        for (List<String> path : paths) {
            CommandLine cl = root;
            for (String name : path) {
                cl = cl.getSubcommands().get(name);
            }
            List<String> args = new ArrayList<>(path);
            args.add("--help");
            Result r = run(args.toArray(String[]::new));
            assertThat(r.code()).as("%s --help", path).isZero();
            assertThat(r.err()).isEmpty();
            for (OptionSpec o : cl.getCommandSpec().options()) {
                assertThat(r.out()).as("%s --help mentions %s", path, o.longestName()).contains(o.longestName());
            }
            assertThat(r.out()).contains("--config", "--set");
        }
    }

    private static void collect(CommandLine cl, List<String> prefix, List<List<String>> out) {
        out.add(prefix);
        cl.getSubcommands().forEach((name, sub) -> {
            List<String> p = new ArrayList<>(prefix);
            p.add(name);
            collect(sub, p, out);
        });
    }

    @Test
    void rootHelpListsEverySettingAndVersionPrints() {
        Result help = run("--help");
        assertThat(help.code()).isZero();
        for (TidemarkConfig.Key k : TidemarkConfig.Key.values()) {
            assertThat(help.out()).contains(k.name + " = " + k.defaultValue);
        }
        Result version = run("--version");
        assertThat(version.code()).isZero();
        assertThat(version.out()).startsWith("tidemark ");
    }

    @Test
    void specificHelpTexts() {
        assertThat(run("generate", "--help").out()).contains("--rate", "--duration", "--count", "--cells", "--subscribers",
                "--out-of-order", "--late-fraction", "--invalid-fraction", "--seed", "--backlog-hours", "--backlog-end", "--format",
                "--schema-registry");
        assertThat(run("stream", "--help").out()).contains("--available-now", "--trigger", "--starting-offsets",
                "--max-records-per-batch", "SIGTERM");
        assertThat(run("demo", "--help").out()).contains("--dir", "--keep", "--keep-broker", "--storage", "--live-seconds", "--rate");
        assertThat(run("sql", "--help").out()).contains("--max-rows", "--file", "interactive");
        assertThat(run("broker", "start", "--help").out()).contains("--port", "--partitions", "--dir");
        assertThat(run("reconcile", "--help").out()).contains("--from", "--to", "--recent", "--dirty", "--dry-run");
    }

    // ------------------------------------------------------------------ bad input

    @Test
    void unknownSettingExitsTwoNamingTheKey() {
        assertBadInput(run("--set", "unknown.key=1", "status"), "tidemark status", "unknown.key");
        assertBadInput(run("status", "--set", "unknown.key=1"), "tidemark status", "unknown.key");
        assertBadInput(run("--set", "no-equals-sign", "stream"), "tidemark stream", "KEY=VALUE");
        assertBadInput(run("--set", "window=7 minutes", "sql", "SELECT 1"), "tidemark sql", "window");
        assertBadInput(run("--set", "lateness=soon", "demo"), "tidemark demo", "lateness");
    }

    @Test
    void catalogRefusesAMissingOrMalformedMetastoreBeforeStartingSpark() {
        assertBadInput(run("catalog"), "tidemark catalog", "register", "status", "drop");
        assertBadInput(run("catalog", "register"), "tidemark catalog register", "--metastore DIR", "thrift://host:port");
        assertBadInput(run("catalog", "register", "--metastore", "http://hms:9083"), "tidemark catalog register", "'http://hms:9083' is not thrift://host:port");
        assertBadInput(run("catalog", "status", "--metastore", "thrift://hms"), "tidemark catalog status", "thrift://host:port");
        assertBadInput(run("--set", "catalog.metastore=/tmp/ms;create=false", "catalog", "drop"), "tidemark catalog drop", "must not contain ';'");
        assertBadInput(run(Map.of("TIDEMARK_CATALOG_METASTORE", "thrift://hms:99999"), "catalog", "register"), "tidemark catalog register",
                "catalog.metastore");
        assertBadInput(run("catalog", "status", "--replace", "--metastore", "/tmp/ms"), "tidemark catalog status", "--replace");
    }

    @Test
    void everySettingIsInTheSettingsTableOfTheDocs() throws Exception {
        String docs = Files.readString(Path.of(System.getProperty("user.dir")).getParent().resolve("docs/commands.md"));
        for (TidemarkConfig.Key k : TidemarkConfig.Key.values()) {
            assertThat(docs).as("docs/commands.md lists %s", k.name).contains("| `" + k.name + "` |");
        }
        String start = "<!-- settings: generated from TidemarkConfig.Key; a test keeps them equal -->\n";
        assertThat(docs).contains(start, "<!-- /settings -->");
        String table = docs.substring(docs.indexOf(start) + start.length(), docs.indexOf("<!-- /settings -->"));
        assertThat(table).as("the settings table of docs/commands.md, from TidemarkConfig.markdownTable()")
                .isEqualTo(TidemarkConfig.markdownTable());
    }

    @Test
    void theExitCodesOfTheDocsAreTheOneTableOfThem() throws Exception {
        String docs = Files.readString(Path.of(System.getProperty("user.dir")).getParent().resolve("docs/commands.md"));
        String start = "<!-- exit-codes: generated from ExitCode.java; a test keeps them equal -->\n";
        String table = docs.substring(docs.indexOf(start) + start.length(), docs.indexOf("<!-- /exit-codes -->"));
        assertThat(table).isEqualTo(io.tidemark.lakehouse.ExitCode.markdownTable());
        assertThat(StatusCommand.STALLED).isEqualTo(3);
        assertThat(Tidemark.INTERRUPTED).isEqualTo(130);
    }

    @Test
    void missingConfigFileExitsTwo(@TempDir Path dir) {
        assertBadInput(run("--config", dir.resolve("nope.properties").toString(), "status"), "tidemark status", "nope.properties");
    }

    @Test
    void missingOrUnknownCommandExitsTwo() {
        assertBadInput(run(), "tidemark", "demo", "broker");
        assertBadInput(run("frobnicate"), "tidemark", "frobnicate");
        assertBadInput(run("broker"), "tidemark broker", "start");
        assertBadInput(run("broker", "restart"), "tidemark broker", "restart");
    }

    @Test
    void reconcileRejectsBadSelections() {
        assertBadInput(run("reconcile", "--from", "2026-13-01", "--to", "2026-13-02"), "tidemark reconcile", "--from", "yyyy-MM-dd");
        assertBadInput(run("reconcile", "--from", "2026-05-01"), "tidemark reconcile", "needs --to");
        assertBadInput(run("reconcile", "--to", "2026-05-01"), "tidemark reconcile", "needs --from");
        assertBadInput(run("reconcile", "--from", "2026-05-02", "--to", "2026-05-01"), "tidemark reconcile", "after --to");
        assertBadInput(run("reconcile", "--recent", "0"), "tidemark reconcile", "--recent");
        assertBadInput(run("reconcile", "--recent", "x"), "tidemark reconcile", "--recent");
        assertBadInput(run("reconcile", "--recent", "3", "--dirty"), "tidemark reconcile", "choose one");
        assertBadInput(run("reconcile", "--dirty", "--from", "2026-05-01", "--to", "2026-05-01"), "tidemark reconcile", "choose one");
        assertBadInput(run("reconcile", "--bogus"), "tidemark reconcile", "--bogus");
        assertBadInput(run("--set", "reconcile.recent-days=0", "reconcile"), "tidemark reconcile", "reconcile.recent-days");
    }

    @Test
    void generateRejectsBadFlags() {
        assertBadInput(run("generate", "--rate", "abc"), "tidemark generate", "--rate", "abc");
        assertBadInput(run("generate", "--bogus"), "tidemark generate", "--bogus");
        assertBadInput(run("generate", "--late-fraction", "2"), "tidemark generate", "--late-fraction");
        assertBadInput(run("generate", "--late-fraction", "0.7", "--invalid-fraction", "0.7"), "tidemark generate", "must not exceed 1");
        assertBadInput(run("generate", "--count", "0"), "tidemark generate", "--count");
        assertBadInput(run("generate", "--cells", "0"), "tidemark generate", "--cells");
        assertBadInput(run("generate", "--duration", "soon"), "tidemark generate", "--duration", "soon");
        assertBadInput(run("generate", "--backlog-hours", "-1"), "tidemark generate", "--backlog-hours");
        assertBadInput(run("generate", "--backlog-end", "2026-12-03T21:00:00Z"), "tidemark generate", "--backlog-end needs --backlog-hours");
        assertBadInput(run("generate", "--backlog-hours", "2", "--backlog-end", "yesterday"), "tidemark generate", "--backlog-end",
                "2026-12-03T21:00:00Z");
        assertBadInput(run("generate", "--late-delay-min", "1m"), "tidemark generate", "--late-delay-min", "--out-of-order");
        assertBadInput(run("generate", "--rate", "-5"), "tidemark generate", "--rate");
        assertBadInput(run("generate", "--format", "protobuf"), "tidemark generate", "--format must be json or avro; got 'protobuf'");
        assertBadInput(run("generate", "--format", "avro"), "tidemark generate", "--format avro needs --schema-registry URL|DIR");
        assertBadInput(run("generate", "--schema-registry", "/tmp/schemas"), "tidemark generate",
                "--schema-registry is for --format avro; JSON records have no schema ids");
    }

    @Test
    void streamRejectsBadFlags() {
        assertBadInput(run("stream", "--trigger", "often"), "tidemark stream", "stream.trigger", "often");
        assertBadInput(run("stream", "--max-records-per-batch", "-1"), "tidemark stream", "stream.max-offsets-per-trigger");
        assertBadInput(run("stream", "--max-records-per-batch", "lots"), "tidemark stream", "--max-records-per-batch");
        assertBadInput(run("stream", "--available-now=maybe"), "tidemark stream", "--available-now");
    }

    @Test
    void sqlRejectsBadInput(@TempDir Path dir) {
        assertBadInput(run("sql", "-f", dir.resolve("missing.sql").toString()), "tidemark sql", "missing.sql");
        assertBadInput(run("sql", "-f", dir.resolve("a.sql").toString(), "SELECT 1"), "tidemark sql", "not both");
        assertBadInput(run("sql", "--max-rows", "0", "SELECT 1"), "tidemark sql", "--max-rows");
        assertBadInput(run("sql", " ; ;"), "tidemark sql", "no SQL statement");
    }

    @Test
    void statusAndBrokerRejectBadFlags() {
        assertBadInput(run("status", "--batches", "0"), "tidemark status", "--batches");
        assertBadInput(run("broker", "start", "--port", "70000"), "tidemark broker start", "--port");
        assertBadInput(run("broker", "start", "--partitions", "0"), "tidemark broker start", "--partitions");
        assertBadInput(run("broker", "stop", "--port", "1"), "tidemark broker stop", "--port");
    }

    @Test
    void demoRejectsBadFlagsAndForeignDirectories(@TempDir Path dir) throws Exception {
        assertBadInput(run("demo", "--live-seconds", "0"), "tidemark demo", "--live-seconds");
        assertBadInput(run("demo", "--storage", "nfs"), "tidemark demo", "--storage must be local or s3, got 'nfs'");
        assertBadInput(run("status", "--stalled-after", "0"), "tidemark status", "--stalled-after");
        assertBadInput(run("status", "--json", "--max-lag", "-1"), "tidemark status", "--max-lag");
        assertBadInput(run("report", "--days", "0"), "tidemark report", "--days must be a whole number from 1 to 3660");
        assertBadInput(run("--set", "metrics.port=70000", "stream"), "tidemark stream", "metrics.port = 70000 is not a port");
        assertBadInput(run("demo", "--rate", "0"), "tidemark demo", "--rate");
        assertBadInput(run("demo", "--backlog-events", "0"), "tidemark demo", "--backlog-events");
        assertBadInput(run("demo", "--offline-share", "1.5"), "tidemark demo", "--offline-share");
        Files.writeString(dir.resolve("precious.txt"), "not a demo");
        assertBadInput(run("demo", "--dir", dir.toString()), "tidemark demo", "not empty", DemoCommand.MARKER);
        assertThat(dir.resolve("precious.txt")).exists();
    }

    // ------------------------------------------------------------------ settings

    @Test
    void settingsResolveFileThenEnvironmentThenSetThenFlags(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("tidemark.properties");
        Files.writeString(file, "topic=from-file\nlakehouse=/file/lakehouse\nstream.trigger=30 seconds\nwindow=10 minutes\n");
        Map<String, String> env = Map.of("TIDEMARK_LAKEHOUSE", "/env/lakehouse", "TIDEMARK_STREAM_TRIGGER", "20 seconds");
        CommandLine cl = Tidemark.commandLine(env, new PrintWriter(new StringWriter()), new PrintWriter(new StringWriter()));
        cl.parseArgs("--config", file.toString(), "--set", "stream.trigger=15 seconds", "stream", "--set", "kafka.option.security.protocol=SSL");
        StreamCommand stream = cl.getSubcommands().get("stream").getCommand();
        TidemarkConfig c = stream.config(Map.of());
        assertThat(c.topic()).isEqualTo("from-file");
        assertThat(c.window()).hasMinutes(10);
        assertThat(c.get(TidemarkConfig.Key.LAKEHOUSE)).isEqualTo("/env/lakehouse");
        assertThat(c.trigger()).hasSeconds(15);
        assertThat(c.kafkaOptions()).containsEntry("security.protocol", "SSL");
        assertThat(stream.config(Map.of("stream.trigger", "5 seconds")).trigger()).hasSeconds(5);
        Tidemark root = cl.getCommand();
        assertThat(root.config(Map.of()).kafkaOptions()).isEmpty();
    }

    @Test
    void settingsOfNestedCommandsMergeFromTheRootDown() {
        CommandLine cl = Tidemark.commandLine(Map.of(), new PrintWriter(new StringWriter()), new PrintWriter(new StringWriter()));
        cl.parseArgs("--set", "topic=a", "broker", "--set", "topic=b", "--set", "lakehouse=/x", "start", "--set", "topic=c");
        BrokerCommand.Start start = cl.getSubcommands().get("broker").getSubcommands().get("start").getCommand();
        TidemarkConfig c = start.config(Map.of());
        assertThat(c.topic()).isEqualTo("c");
        assertThat(c.get(TidemarkConfig.Key.LAKEHOUSE)).isEqualTo("/x");
    }

    @Test
    void brokerPortComesFromLoopbackBootstrapServers() {
        assertThat(BrokerCommand.loopbackPort("127.0.0.1:9092")).contains(9092);
        assertThat(BrokerCommand.loopbackPort("localhost:19092")).contains(19092);
        assertThat(BrokerCommand.loopbackPort("kafka.example.com:9092")).isEmpty();
        assertThat(BrokerCommand.loopbackPort("127.0.0.1:1,127.0.0.1:2")).isEmpty();
        assertThat(BrokerCommand.loopbackPort("127.0.0.1:notaport")).isEmpty();
    }
}
