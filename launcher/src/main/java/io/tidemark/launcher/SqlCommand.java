package io.tidemark.launcher;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Timestamp;
import java.time.Instant;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Locale;

import org.apache.spark.sql.AnalysisException;
import org.apache.spark.sql.Column;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.functions;
import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.MapType;
import org.apache.spark.sql.types.NumericType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import io.tidemark.lakehouse.Errors;
import io.tidemark.lakehouse.Lakehouse;
import io.tidemark.lakehouse.SparkSessions;
import io.tidemark.lakehouse.TidemarkConfig;

/** {@code tidemark sql}: SQL against the tables and views, printed as aligned text. */
@Command(name = "sql", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"Run SQL against the tables (tidemark.raw_events, kpi_5m, late_events, dead_letter, stream_progress, "
                + "reconcile_report) and the analyst views. The current database is tidemark, so 'FROM kpi_5m' works.",
                "SQL comes from the arguments, from -f FILE, or, with neither, from an interactive prompt (statements end with ';', "
                        + "'exit' or Ctrl-D leaves)."})
final class SqlCommand extends TidemarkCommand {

    private static final DateTimeFormatter TIMESTAMP = DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm:ss[.SSS]").withZone(ZoneOffset.UTC);

    @Parameters(arity = "0..*", paramLabel = "SQL", description = "SQL statements (joined with spaces; ';' separates several).")
    List<String> sql = new ArrayList<>();

    @Option(names = {"-f", "--file"}, paramLabel = "FILE", description = "Read the statements from FILE.")
    Path file;

    @Option(names = "--max-rows", paramLabel = "N", defaultValue = "100", description = "Print at most N rows per statement (default: ${DEFAULT-VALUE}).")
    int maxRows;

    @Option(names = "--truncate", paramLabel = "CHARS", defaultValue = "80",
            description = "Cut cells longer than this; 0 = never (default: ${DEFAULT-VALUE}).")
    int truncate;

    @Override
    public Integer call() throws Exception {
        if (file != null && !sql.isEmpty()) {
            throw new UserError("give SQL as arguments or with -f FILE, not both");
        }
        if (maxRows < 1) {
            throw new UserError("--max-rows must be at least 1, got " + maxRows);
        }
        if (truncate < 0 || (truncate > 0 && truncate < 4)) {
            throw new UserError("--truncate must be 0 (never) or at least 4, got " + truncate);
        }
        List<String> statements = null;
        if (file != null) {
            if (!Files.isRegularFile(file)) {
                throw new UserError("SQL file " + file + " does not exist");
            }
            statements = SqlScript.statements(Files.readString(file, StandardCharsets.UTF_8));
        } else if (!sql.isEmpty()) {
            statements = SqlScript.statements(String.join(" ", sql));
        }
        if (statements != null && statements.isEmpty()) {
            throw new UserError("no SQL statement given");
        }
        TidemarkConfig config = config();
        err().println("starting Spark and registering the tables of " + config.lakehouseUri() + " ...");
        err().flush();
        SparkSession spark = SparkSessions.create(config, "tidemark-sql");
        try {
            // Instants and LocalDates instead of java.sql types: printed in UTC whatever the JVM's zone.
            spark.conf().set("spark.sql.datetime.java8API.enabled", "true");
            Lakehouse.of(config).createAndRegister(spark);
            spark.sql("USE tidemark");
            if (statements == null) {
                return interactive(spark);
            }
            for (String s : statements) {
                try {
                    execute(spark, s);
                } catch (Exception e) {
                    // AnalysisException (parse errors, unknown tables or columns) is bad input; Scala throws it undeclared.
                    if (e instanceof AnalysisException || e.getCause() instanceof AnalysisException) {
                        throw new UserError(Errors.firstLine(e.getMessage()), e);
                    }
                    throw e;
                }
            }
            return Tidemark.OK;
        } finally {
            spark.stop();
        }
    }

    private int interactive(SparkSession spark) throws IOException {
        boolean terminal = System.console() != null;
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        if (terminal) {
            say("tables: %s; statements end with ';', 'exit' leaves", String.join(", ",
                    Lakehouse.of(config()).tables().stream().map(Lakehouse.Table::tableName).toList()));
        }
        StringBuilder buffer = new StringBuilder();
        while (true) {
            if (terminal) {
                out().print(buffer.isEmpty() ? "tidemark> " : "       -> ");
                out().flush();
            }
            String line = in.readLine();
            if (line == null) {
                break;
            }
            if (buffer.isEmpty() && isExit(line)) {
                break;
            }
            buffer.append(line).append('\n');
            SqlScript.Split split = SqlScript.split(buffer.toString());
            for (String s : split.statements()) {
                executeReportingErrors(spark, s);
            }
            buffer.setLength(0);
            if (isExit(split.rest())) {
                buffer.setLength(0);
                break;
            }
            if (!split.rest().isBlank()) {
                buffer.append(split.rest());
            }
        }
        if (!buffer.toString().isBlank()) {
            executeReportingErrors(spark, buffer.toString().trim());
        }
        if (terminal) {
            out().println();
        }
        return Tidemark.OK;
    }

    private static boolean isExit(String text) {
        String t = text.trim().toLowerCase(Locale.ROOT);
        return t.equals("exit") || t.equals("quit") || t.equals("\\q") || t.equals("exit;") || t.equals("quit;");
    }

    /** Interactive mode: an error is reported and the prompt comes back. */
    private void executeReportingErrors(SparkSession spark, String statement) {
        try {
            execute(spark, statement);
        } catch (Exception e) {
            out().println("error: " + Errors.withCauses(e));
            out().flush();
        }
    }

    private void execute(SparkSession spark, String statement) {
        long started = System.nanoTime();
        Dataset<Row> df = spark.sql(statement);
        StructType schema = df.schema();
        if (schema.isEmpty()) {
            say("OK (%s)", Formats.duration((System.nanoTime() - started) / 1_000_000));
            return;
        }
        df = printable(df);
        List<Row> rows = df.limit(maxRows + 1).collectAsList();
        boolean[] right = new boolean[schema.size()];
        List<String> header = new ArrayList<>();
        for (int i = 0; i < schema.size(); i++) {
            StructField f = schema.fields()[i];
            header.add(f.name());
            right[i] = f.dataType() instanceof NumericType;
        }
        TextTable table = new TextTable(header, right);
        for (Row r : rows.subList(0, Math.min(rows.size(), maxRows))) {
            List<String> cells = new ArrayList<>(r.size());
            for (int i = 0; i < r.size(); i++) {
                cells.add(TextTable.cell(value(r.get(i)), truncate));
            }
            table.add(cells);
        }
        out().print(table.render());
        long ms = (System.nanoTime() - started) / 1_000_000;
        if (rows.size() > maxRows) {
            say("(first %d rows shown, more exist: raise --max-rows; %s)", maxRows, Formats.duration(ms));
        } else {
            say("(%d row%s, %s)", rows.size(), rows.size() == 1 ? "" : "s", Formats.duration(ms));
        }
    }

    /** Nested values (structs, arrays, maps) as JSON, so every cell is one readable string. */
    private static Dataset<Row> printable(Dataset<Row> df) {
        boolean nested = false;
        List<Column> cols = new ArrayList<>();
        for (StructField f : df.schema().fields()) {
            Column c = df.col("`" + f.name().replace("`", "``") + "`");
            if (f.dataType() instanceof StructType || f.dataType() instanceof ArrayType || f.dataType() instanceof MapType) {
                nested = true;
                cols.add(functions.to_json(c).as(f.name()));
            } else {
                cols.add(c);
            }
        }
        return nested ? df.select(cols.toArray(Column[]::new)) : df;
    }

    static String value(Object v) {
        if (v == null) {
            return "NULL";
        }
        if (v instanceof Instant i) {
            return TIMESTAMP.format(i);
        }
        if (v instanceof LocalDateTime t) {
            return TIMESTAMP.format(t.toInstant(ZoneOffset.UTC));
        }
        if (v instanceof Timestamp t) {
            return TIMESTAMP.format(t.toInstant());
        }
        if (v instanceof BigDecimal d) {
            return d.toPlainString();
        }
        if (v instanceof byte[] b) {
            String hex = HexFormat.of().formatHex(b, 0, Math.min(b.length, 16));
            return "0x" + hex + (b.length > 16 ? "... (" + b.length + " bytes)" : "");
        }
        return v.toString();
    }
}
