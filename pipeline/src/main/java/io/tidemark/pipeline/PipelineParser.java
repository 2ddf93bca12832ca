package io.tidemark.pipeline;


import org.apache.spark.sql.catalyst.analysis.FunctionRegistry$;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;
import java.util.stream.Stream;

import org.apache.spark.sql.catalyst.FunctionIdentifier;
import org.apache.spark.sql.catalyst.analysis.UnresolvedAlias;
import org.apache.spark.sql.catalyst.analysis.UnresolvedAttribute;
import org.apache.spark.sql.catalyst.analysis.UnresolvedFunction;
import org.apache.spark.sql.catalyst.analysis.UnresolvedIdentifier;
import org.apache.spark.sql.catalyst.analysis.UnresolvedRelation;
import org.apache.spark.sql.catalyst.analysis.UnresolvedStar;
import org.apache.spark.sql.catalyst.expressions.Alias;
import org.apache.spark.sql.catalyst.expressions.Cast;
import org.apache.spark.sql.catalyst.expressions.CheckConstraint;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.Literal;
import org.apache.spark.sql.catalyst.parser.ParseException;
import org.apache.spark.sql.catalyst.parser.ParserInterface;
import org.apache.spark.sql.catalyst.plans.logical.Aggregate;
import org.apache.spark.sql.catalyst.plans.logical.ColumnDefinition;
import org.apache.spark.sql.catalyst.plans.logical.CreateStreamingTableAsSelect;
import org.apache.spark.sql.catalyst.plans.logical.CreateTable;
import org.apache.spark.sql.catalyst.plans.logical.CreateView;
import org.apache.spark.sql.catalyst.plans.logical.Filter;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.OptionList;
import org.apache.spark.sql.catalyst.plans.logical.TableSpec;
import org.apache.spark.sql.catalyst.plans.logical.TableSpecBase;
import org.apache.spark.sql.catalyst.plans.logical.UnresolvedTableSpec;
import org.apache.spark.sql.catalyst.trees.Origin;
import org.apache.spark.sql.catalyst.trees.TreeNode;
import org.apache.spark.sql.execution.SparkSqlParser;
import org.apache.spark.sql.types.BooleanType;
import org.apache.spark.sql.types.ByteType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DateType;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.sql.types.DoubleType;
import org.apache.spark.sql.types.FloatType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.ShortType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.TimestampType;

import scala.jdk.javaapi.CollectionConverters;

import io.tidemark.pipeline.Pipeline.Check;
import io.tidemark.pipeline.Pipeline.Column;
import io.tidemark.pipeline.Pipeline.EventTable;
import io.tidemark.pipeline.Pipeline.KpiTable;
import io.tidemark.pipeline.Pipeline.Position;
import io.tidemark.pipeline.Pipeline.Window;

/**
 * Reads a pipeline file: Spark SQL statements, each parsed by Spark's own parser (no session, no
 * catalog: the unresolved plan), then walked here. The walk accepts the few plan shapes Tidemark
 * can keep mergeable and exact, and refuses everything else before anything starts, with the
 * statement's {@code file:line:column}, what is wrong and what to write instead
 * ({@link PipelineException}). docs/pipelines.md lists every refusal.
 *
 * <p>The only text Tidemark itself cuts is the file into statements, at each {@code ;} outside
 * quotes and comments, so that a position in a statement maps back to the file.
 */
public final class PipelineParser {

    /** Options of the event table, with their meaning (for the refusal of an unknown one). */
    static final Map<String, String> EVENT_OPTIONS = new LinkedHashMap<>();

    static {
        EVENT_OPTIONS.put("topic", "the Kafka topic the events arrive on (required)");
        EVENT_OPTIONS.put("format", "'json' (the default) or 'avro' (Confluent's wire format: a 0 byte, the schema id, Avro binary)");
        EVENT_OPTIONS.put("schema_registry", "for format 'avro': a Confluent-compatible schema registry's URL (http://host:8081), or the "
                + "absolute path of a directory of <id>.avsc files");
        EVENT_OPTIONS.put("event_time", "the TIMESTAMP column that places a record in its windows (required)");
        EVENT_OPTIONS.put("lateness", "how far the watermark trails the newest event time, e.g. '10 minutes' (required)");
        EVENT_OPTIONS.put("drift_threshold", "relative drift above which a reconciled window is reported (default 0.01)");
    }

    /** The event table's option that reads a field of the record into a column of another name: {@code 'field.<column>' = '<field>'}. */
    static final String FIELD_PREFIX = "field.";

    /**
     * Why an event column may not be called {@code name}, or null when it may: a working column's prefix
     * ({@link WorkingColumns}), or a column raw_events or late_events stores beside the event's
     * ({@link PipelineTables#ownEventColumns}). Every other name is the producer's to choose.
     */
    static String eventColumnClash(String name) {
        String lower = name.toLowerCase(Locale.ROOT);
        if (WorkingColumns.isWorking(lower)) {
            return "names beginning with " + WorkingColumns.PREFIX + " are Tidemark's working columns";
        }
        if (PipelineTables.ownEventColumns().contains(lower)) {
            return "'" + name + "' is a column raw_events or late_events stores beside the event's";
        }
        return null;
    }

    /** Why a KPI table's dimension, measure or sketch column may not be called {@code name}, or null when it may. */
    static String kpiColumnClash(String name) {
        String lower = name.toLowerCase(Locale.ROOT);
        if (WorkingColumns.isWorking(lower)) {
            return "names beginning with " + WorkingColumns.PREFIX + " are Tidemark's working columns";
        }
        if (KpiTable.ownColumnNames().contains(lower)) {
            return "'" + name + "' is a column every KPI table stores (" + String.join(", ", KpiTable.ownColumnNames()) + ")";
        }
        return null;
    }

    /**
     * The aggregates a measure may use, by the names Spark knows them by: one entry per aggregate (a percentile's
     * quantile is its second argument's, set when the measure is read).
     */
    private static final Map<String, AggregateFunction> AGGREGATES = aggregates();

    private static Map<String, AggregateFunction> aggregates() {
        Map<String, AggregateFunction> out = new LinkedHashMap<>();
        out.put("count", new Count(false));
        out.put("sum", new Sum());
        out.put("min", new MinMax(false));
        out.put("max", new MinMax(true));
        out.put("avg", new Avg());
        out.put("mean", new Avg());
        out.put("approx_count_distinct", new DistinctCount());
        out.put("percentile_approx", new Percentile(Double.NaN));
        return Collections.unmodifiableMap(out);
    }

    /** "count(*), count(col), sum(col), ...": what a measure may be written as, for the messages that list it. */
    static final String MEASURES_WRITTEN = String.join(", ", Stream.concat(Stream.of(new Count(true).spelling()),
            AGGREGATES.values().stream().map(AggregateFunction::spelling)).distinct().toList());

    /** Aggregates Spark knows that cannot be merged across micro-batches, with what to write instead. */
    private static final Map<String, String> NOT_MERGEABLE = Map.ofEntries(
            Map.entry("collect_list", "one of " + MEASURES_WRITTEN),
            Map.entry("collect_set", "approx_count_distinct(col) for how many distinct values, or one of " + MEASURES_WRITTEN),
            Map.entry("array_agg", "one of " + MEASURES_WRITTEN),
            Map.entry("percentile", "percentile_approx(col, p) (a KLL sketch while streaming, the exact percentile after reconcile)"),
            Map.entry("percentile_cont", "percentile_approx(col, p) (a KLL sketch while streaming, the exact percentile after reconcile)"),
            Map.entry("percentile_disc", "percentile_approx(col, p) (a KLL sketch while streaming, the exact percentile after reconcile)"),
            Map.entry("median", "percentile_approx(col, 0.5)"),
            Map.entry("mode", "one of " + MEASURES_WRITTEN),
            Map.entry("first", "min(col) or max(col)"),
            Map.entry("first_value", "min(col) or max(col)"),
            Map.entry("last", "min(col) or max(col)"),
            Map.entry("last_value", "min(col) or max(col)"),
            Map.entry("any_value", "min(col) or max(col)"),
            Map.entry("count_if", "count(*) FILTER (WHERE condition)"),
            Map.entry("stddev", "avg(col) and avg over the square, or one of " + MEASURES_WRITTEN),
            Map.entry("variance", "one of " + MEASURES_WRITTEN),
            Map.entry("string_agg", "one of " + MEASURES_WRITTEN),
            Map.entry("listagg", "one of " + MEASURES_WRITTEN),
            Map.entry("approx_percentile", "percentile_approx(col, p)"));

    private static final Set<String> SCALAR_SAFE = Set.of("window", "session_window", "window_time");

    private final String file;
    private final String text;
    private final ParserInterface parser = new SparkSqlParser();

    private PipelineParser(String file, String text) {
        this.file = file;
        this.text = text;
    }

    /** Reads and checks the pipeline in {@code path}; the file is named as given in every message. */
    public static Pipeline parse(Path path) {
        String content;
        try {
            content = Files.readString(path, StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read pipeline file " + path + ": " + e.getMessage(), e);
        }
        return parse(path.toString(), content);
    }

    /** The pipeline every job runs when it is given none: the network KPI ({@code pipelines/network.sql}, packaged). */
    public static final String DEFAULT = "network";

    /** One of the pipelines shipped in the jar ({@code pipelines/<name>.sql}), by name: {@link #DEFAULT} or {@code payments}. */
    public static Pipeline shipped(String name) {
        return SHIPPED.computeIfAbsent(name, PipelineParser::readShipped);
    }

    /** The shipped pipelines parsed so far: a pipeline is a value, and Lakehouse.of asks for it often. */
    private static final Map<String, Pipeline> SHIPPED = new ConcurrentHashMap<>();

    private static Pipeline readShipped(String name) {
        String resource = "tidemark/pipelines/" + name + ".sql";
        try (InputStream in = PipelineParser.class.getClassLoader().getResourceAsStream(resource)) {
            if (in == null) {
                throw new IllegalArgumentException("no shipped pipeline '" + name + "' (" + resource + " is not on the classpath)");
            }
            return parse("pipelines/" + name + ".sql", new String(in.readAllBytes(), StandardCharsets.UTF_8));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + resource + ": " + e.getMessage(), e);
        }
    }

    /** Checks the pipeline {@code text}, naming it {@code file} in messages. */
    public static Pipeline parse(String file, String text) {
        return new PipelineParser(file, text).pipeline();
    }

    // ------------------------------------------------------------------ statements

    /** A statement of the file: its text and where it starts (0-based offset, 1-based line, 0-based column). */
    record Statement(String sql, int offset, int line, int column) {
    }

    /** The file cut at each ';' outside quotes and comments; blank pieces and pieces of comments only are dropped. */
    List<Statement> statements() {
        List<Statement> out = new ArrayList<>();
        int start = 0;
        int i = 0;
        int n = text.length();
        while (i < n) {
            char c = text.charAt(i);
            if (c == '\'' || c == '"' || c == '`') {
                i = skipQuoted(i, c);
            } else if (c == '-' && i + 1 < n && text.charAt(i + 1) == '-') {
                while (i < n && text.charAt(i) != '\n') {
                    i++;
                }
            } else if (c == '/' && i + 1 < n && text.charAt(i + 1) == '*') {
                int end = text.indexOf("*/", i + 2);
                i = end < 0 ? n : end + 2;
            } else if (c == ';') {
                add(out, start, i);
                start = ++i;
            } else {
                i++;
            }
        }
        add(out, start, n);
        return out;
    }

    private int skipQuoted(int i, char quote) {
        int j = i + 1;
        while (j < text.length()) {
            char c = text.charAt(j);
            if (c == '\\' && quote != '`') {
                j += 2;
                continue;
            }
            if (c == quote) {
                return j + 1;
            }
            j++;
        }
        return j;
    }

    private void add(List<Statement> out, int from, int to) {
        String piece = text.substring(from, to);
        String stripped = piece.replaceAll("(?s)/\\*.*?\\*/", " ").replaceAll("--[^\\n]*", " ");
        if (stripped.isBlank()) {
            return;
        }
        int line = 1;
        int lineStart = 0;
        for (int k = 0; k < from; k++) {
            if (text.charAt(k) == '\n') {
                line++;
                lineStart = k + 1;
            }
        }
        out.add(new Statement(piece, from, line, from - lineStart));
    }

    // ------------------------------------------------------------------ positions

    private Statement current;

    /** The 1-based file position of a node of the current statement (its start; the statement's start when Spark kept none). */
    private Position at(TreeNode<?> node) {
        Origin o = node.origin();
        return at(o.line().isDefined() ? (Integer) o.line().get() : 1, o.startPosition().isDefined() ? (Integer) o.startPosition().get() : 0);
    }

    private Position at(int lineInStatement, int columnInLine) {
        int line = current.line() + lineInStatement - 1;
        int column = (lineInStatement == 1 ? current.column() : 0) + columnInLine + 1;
        return new Position(file, line, column);
    }

    /** The position of the statement's first word. */
    private Position statementStart() {
        String sql = current.sql();
        int k = 0;
        int line = 1;
        int col = 0;
        while (k < sql.length()) {
            char c = sql.charAt(k);
            if (c == '-' && k + 1 < sql.length() && sql.charAt(k + 1) == '-') {
                while (k < sql.length() && sql.charAt(k) != '\n') {
                    k++;
                }
            } else if (c == '/' && k + 1 < sql.length() && sql.charAt(k + 1) == '*') {
                int end = sql.indexOf("*/", k + 2);
                for (int m = k; m < (end < 0 ? sql.length() : end + 2); m++) {
                    if (sql.charAt(m) == '\n') {
                        line++;
                        col = 0;
                    } else {
                        col++;
                    }
                }
                k = end < 0 ? sql.length() : end + 2;
            } else if (c == '\n') {
                line++;
                col = 0;
                k++;
            } else if (Character.isWhitespace(c)) {
                col++;
                k++;
            } else {
                break;
            }
        }
        return at(line, col);
    }

    /**
     * The source text of a node, as the user wrote it: the span of it and everything under it (an
     * operator's own origin can start at its keyword, {@code IN}, not at its left operand), blanks
     * folded; Spark's rendering when the origin has no indices.
     */
    private String source(TreeNode<?> node) {
        int[] span = {Integer.MAX_VALUE, -1};
        forEachNode(node, n -> {
            Origin o = n.origin();
            if (o.startIndex().isDefined() && o.stopIndex().isDefined()) {
                span[0] = Math.min(span[0], (Integer) o.startIndex().get());
                span[1] = Math.max(span[1], (Integer) o.stopIndex().get());
            }
        });
        if (span[1] >= 0 && span[0] <= span[1] && span[1] < current.sql().length()) {
            return current.sql().substring(span[0], span[1] + 1).replaceAll("\\s+", " ");
        }
        return node instanceof Expression e ? e.sql() : node.simpleString(200);
    }

    private PipelineException refuse(TreeNode<?> node, String problem, String fix) {
        return new PipelineException(at(node), problem, fix);
    }

    // ------------------------------------------------------------------ the walk

    private Pipeline pipeline() {
        List<Statement> statements = statements();
        if (statements.isEmpty()) {
            throw new PipelineException(new Position(file, 1, 1), "the file declares nothing",
                    "CREATE TABLE events (...) USING kafka OPTIONS (...); then one or more CREATE STREAMING TABLE ... AS SELECT ...");
        }
        EventTable events = null;
        Double drift = null;
        List<KpiTable> tables = new ArrayList<>();
        List<Pipeline.View> views = new ArrayList<>();
        Set<String> names = new HashSet<>();
        for (Statement s : statements) {
            current = s;
            LogicalPlan plan = parsePlan(s);
            if (plan instanceof CreateTable ct) {
                if (events != null) {
                    throw new PipelineException(statementStart(), "a second event table; a pipeline reads one event stream ('"
                            + events.name() + "', declared at " + events.at() + ")", "one CREATE TABLE ... USING kafka per pipeline file");
                }
                Map<String, String> options = new LinkedHashMap<>();
                events = eventTable(ct, options);
                drift = driftThreshold(ct, options);
            } else if (plan instanceof CreateStreamingTableAsSelect st) {
                if (events == null) {
                    throw new PipelineException(statementStart(), "a KPI table before the event table it reads",
                            "the CREATE TABLE ... USING kafka statement first");
                }
                KpiTable t = kpiTable(st, events);
                if (!names.add(t.name())) {
                    throw new PipelineException(t.at(), "a second KPI table named '" + t.name() + "'", "a name of its own");
                }
                tables.add(t);
            } else if (plan instanceof CreateView cv && events != null) {
                Pipeline.View v = view(cv, tables);
                if (!names.add(v.name())) {
                    throw new PipelineException(v.at(), "a second table or view named '" + v.name() + "'", "a name of its own");
                }
                views.add(v);
            } else {
                throw new PipelineException(statementStart(), "a " + plan.nodeName() + " statement; a pipeline file holds one CREATE TABLE ... "
                        + "USING kafka (the events), CREATE STREAMING TABLE ... AS SELECT statements (the KPI tables) and CREATE VIEW ... AS "
                        + "SELECT statements over them (analyst views)",
                        "CREATE STREAMING TABLE name AS SELECT window(event_time, '5 minutes') AS w, ..., count(*) AS n FROM STREAM events "
                                + "GROUP BY window(event_time, '5 minutes'), ...");
            }
        }
        if (events == null) {
            current = statements.get(0);
            throw new PipelineException(statementStart(), "no event table", "CREATE TABLE events (...) USING kafka OPTIONS (topic '...', "
                    + "event_time '...', lateness '...')");
        }
        if (tables.isEmpty()) {
            throw new PipelineException(events.at(), "no KPI table over '" + events.name() + "'",
                    "CREATE STREAMING TABLE name AS SELECT ... FROM STREAM " + events.name() + " GROUP BY ...");
        }
        return new Pipeline(file, events, tables, drift, views, text);
    }

    /** Views Tidemark itself registers (sql/views.sql): a pipeline's view takes another name. */
    static final Set<String> OWN_VIEWS = Set.of("late_by_table_day", "drift_by_day");

    /**
     * {@code CREATE VIEW name AS SELECT ...}: a plain name of its own, a query that reads Tidemark's
     * tables by their registered names ({@code tidemark.<table>}), nothing else. Its columns are
     * checked when the views are registered, with the tables.
     */
    private Pipeline.View view(CreateView cv, List<KpiTable> tables) {
        Position start = statementStart();
        String name = identifier(cv.child());
        if (!name.matches("[A-Za-z][A-Za-z0-9_]*")) {
            throw new PipelineException(start, "view name '" + name + "'; Tidemark registers its views by plain name",
                    "a name of letters, digits and underscores, without a database");
        }
        name = name.toLowerCase(Locale.ROOT);
        Set<String> tableNames = new TreeSet<>();
        tableNames.addAll(PipelineTables.OWN_TABLES);
        tables.forEach(t -> tableNames.add(t.name().toLowerCase(Locale.ROOT)));
        if (tableNames.contains(name) || OWN_VIEWS.contains(name) || KpiViews.names(tables).contains(name)) {
            throw new PipelineException(start, "view '" + name + "' is named like one of Tidemark's tables or views", "another name");
        }
        if (!cv.userSpecifiedColumns().isEmpty() || cv.originalText().isEmpty()) {
            throw new PipelineException(start, "a column list on view '" + name + "'; its columns are its query's", "CREATE VIEW " + name
                    + " AS SELECT ...");
        }
        String viewName = name;
        forEachNode(cv.query(), n -> {
            if (n instanceof UnresolvedRelation r) {
                List<String> parts = CollectionConverters.asJava(r.multipartIdentifier());
                if (parts.size() != 2 || !parts.get(0).equalsIgnoreCase("tidemark") || !tableNames.contains(parts.get(1).toLowerCase(Locale.ROOT))) {
                    throw refuse(r, "'" + String.join(".", parts) + "' in view '" + viewName + "': a view reads Tidemark's tables, by their "
                            + "registered names",
                            "one of " + String.join(", ", tableNames.stream().map(t -> "tidemark." + t).toList()));
                }
            }
        });
        return new Pipeline.View(name, cv.originalText().get().strip(), start);
    }



    private LogicalPlan parsePlan(Statement s) {
        try {
            return parser.parsePlan(s.sql());
        } catch (ParseException e) {
            int line = e.line().isDefined() ? (Integer) e.line().get() : 1;
            int pos = e.startPosition().isDefined() ? (Integer) e.startPosition().get() : 0;
            String message = e.getMessage().strip();
            message = message.lines().findFirst().orElse(message).replaceAll("^\\[[A-Z_]+\\]\\s*", "")
                    .replaceAll("\\s*SQLSTATE: \\w+", "").replaceAll("\\s*\\(line \\d+, pos \\d+\\)\\s*$", "").strip();
            throw new PipelineException(at(line, pos), "Spark SQL cannot parse this: " + message,
                    "Spark SQL (see docs/pipelines.md for the statements a pipeline holds)");
        }
    }

    // ------------------------------------------------------------------ the event table

    private EventTable eventTable(CreateTable ct, Map<String, String> options) {
        String name = identifier(ct.name());
        UnresolvedTableSpec spec = (UnresolvedTableSpec) ct.tableSpec();
        String provider = spec.provider().isDefined() ? spec.provider().get() : null;
        if (provider == null || !provider.equalsIgnoreCase("kafka")) {
            throw new PipelineException(statementStart(), "the event table '" + name + "' is " + (provider == null ? "not read from Kafka"
                    : "USING " + provider) + "; a pipeline's events come from a Kafka topic", "CREATE TABLE " + name + " (...) USING kafka "
                    + "OPTIONS (topic '...', event_time '...', lateness '...')");
        }
        Map<String, Literal> literals = new LinkedHashMap<>();
        Map<String, Expression> fields = new LinkedHashMap<>();
        OptionList list = spec.optionExpression();
        for (scala.Tuple2<String, Expression> kv : CollectionConverters.asJava(list.options())) {
            String key = kv._1().toLowerCase(Locale.ROOT);
            if (key.startsWith(FIELD_PREFIX)) {
                if (!(kv._2() instanceof Literal l) || l.value() == null || l.value().toString().isEmpty()) {
                    throw refuse(kv._2(), "option '" + kv._1() + "' does not name a field", "'" + kv._1() + "' = '<the field's name in the record>'");
                }
                fields.put(kv._1().substring(FIELD_PREFIX.length()), kv._2());
                continue;
            }
            if (!EVENT_OPTIONS.containsKey(key)) {
                throw refuse(kv._2(), "unknown option '" + kv._1() + "' of the event table", "one of " + String.join(", ",
                        EVENT_OPTIONS.keySet()) + ": " + String.join("; ", EVENT_OPTIONS.entrySet().stream()
                        .map(e -> e.getKey() + " = " + e.getValue()).toList()));
            }
            if (!(kv._2() instanceof Literal l) || l.value() == null) {
                throw refuse(kv._2(), "option '" + key + "' is not a literal", key + " '...'");
            }
            literals.put(key, l);
            options.put(key, l.value().toString());
        }
        List<Column> declared = new ArrayList<>();
        for (ColumnDefinition c : CollectionConverters.asJava(ct.columns())) {
            Position p = at(c);
            if (declared.stream().anyMatch(x -> x.name().equalsIgnoreCase(c.name()))) {
                throw new PipelineException(p, "a second column named '" + c.name() + "'", "a name of its own");
            }
            String clash = eventColumnClash(c.name());
            if (clash != null) {
                throw new PipelineException(p, "an event column called '" + c.name() + "': " + clash, "another name for the column; a field "
                        + "the records carry under this name is read into it with the event table's option 'field.<column>' = '" + c.name()
                        + "' (OPTIONS (..., 'field.event_" + c.name() + "' = '" + c.name() + "'))");
            }
            if (!eventType(c.dataType())) {
                throw new PipelineException(p, "column '" + c.name() + "' has type " + c.dataType().sql() + ", which an event cannot carry",
                        "one of STRING, BOOLEAN, TINYINT, SMALLINT, INT, BIGINT, FLOAT, DOUBLE, DECIMAL(p, s), DATE, TIMESTAMP");
            }
            declared.add(new Column(c.name(), c.dataType(), !c.nullable(), p));
        }
        List<Column> columns = readFields(name, declared, fields);
        if (columns.isEmpty()) {
            throw new PipelineException(statementStart(), "the event table '" + name + "' has no columns", "CREATE TABLE " + name
                    + " (id STRING NOT NULL, ts TIMESTAMP NOT NULL, ...)");
        }
        Position start = statementStart();
        String topic = required(options, "topic", start, "topic 'my-events'");
        String format = options.getOrDefault("format", "json").toLowerCase(Locale.ROOT);
        if (!format.equals("json") && !format.equals("avro")) {
            throw refuse(literals.get("format"), "format '" + options.get("format") + "' is not one Tidemark reads",
                    "format 'json' (JSON objects) or format 'avro' (Confluent's wire format, with schema_registry '...')");
        }
        String registry = options.get("schema_registry");
        if (format.equals("json") && registry != null) {
            throw refuse(literals.get("schema_registry"), "schema_registry is for Avro events, and this table's format is json",
                    "format 'avro' with it, or no schema_registry");
        }
        if (format.equals("avro")) {
            String given = required(options, "schema_registry", start, "schema_registry 'http://localhost:8081'");
            registry = registryLocation(given);
            if (registry == null) {
                throw refuse(literals.get("schema_registry"), "schema_registry '" + given + "' is neither a URL nor an absolute path "
                        + "(the stream records this file in the lakehouse, where a relative path would mean something else)",
                        "schema_registry 'http://host:8081' or schema_registry '/absolute/path/to/schemas'");
            }
        }
        String eventTime = required(options, "event_time", start, "event_time '<a TIMESTAMP NOT NULL column>'");
        Column et = columns.stream().filter(c -> c.name().equalsIgnoreCase(eventTime)).findFirst().orElseThrow(() -> refuse(
                literals.get("event_time"), "event_time '" + eventTime + "' is not a column of '" + name + "'", "event_time '<one of "
                        + String.join(", ", columns.stream().filter(c -> c.type() instanceof TimestampType).map(Column::name).toList()) + ">'"));
        if (!(et.type() instanceof TimestampType) || !et.notNull()) {
            throw refuse(literals.get("event_time"), "the event time '" + et.name() + "' is " + et + "; it must be TIMESTAMP NOT NULL",
                    et.name() + " TIMESTAMP NOT NULL");
        }
        String latenessText = required(options, "lateness", start, "lateness '10 minutes'");
        Duration lateness = duration(literals.get("lateness"), "lateness", latenessText, true);
        List<Check> checks = new ArrayList<>();
        forEachNode(spec, node -> {
            if (node instanceof CheckConstraint cc) {
                checks.add(check(cc, columns));
            }
        });
        return new EventTable(name, columns, checks, topic, format, registry, et.name(), lateness, start);
    }

    /**
     * The columns with the fields they read: a column reads the field of its own name, unless the option
     * {@code 'field.<column>' = '<field>'} names another (the spelling of Hive's JSON SerDe mappings, for a
     * field whose name is taken or awkward). No two columns read the same field.
     */
    private List<Column> readFields(String table, List<Column> columns, Map<String, Expression> fields) {
        List<Column> out = new ArrayList<>(columns);
        for (Map.Entry<String, Expression> f : fields.entrySet()) {
            int i = -1;
            for (int c = 0; c < out.size(); c++) {
                if (out.get(c).name().equalsIgnoreCase(f.getKey())) {
                    i = c;
                }
            }
            if (i < 0) {
                throw refuse(f.getValue(), "option 'field." + f.getKey() + "' names no column of '" + table + "'", "'field.<column>' = "
                        + "'<field>' for one of " + String.join(", ", out.stream().map(Column::name).toList()));
            }
            Column c = out.get(i);
            out.set(i, new Column(c.name(), c.type(), c.notNull(), c.at(), ((Literal) f.getValue()).value().toString()));
        }
        Map<String, Column> byField = new LinkedHashMap<>();
        for (Column c : out) {
            Column other = byField.putIfAbsent(c.field(), c);
            if (other != null) {
                throw new PipelineException(c.at(), "columns '" + other.name() + "' and '" + c.name() + "' both read the field '" + c.field() + "'",
                        "one column per field: another field for one of them ('field." + c.name() + "' = '<field>')");
            }
        }
        return out;
    }

    private Double driftThreshold(CreateTable ct, Map<String, String> options) {
        String v = options.get("drift_threshold");
        if (v == null) {
            return 0.01;
        }
        try {
            double d = Double.parseDouble(v.trim());
            if (d > 0 && d < 1) {
                return d;
            }
        } catch (NumberFormatException e) {
            // below
        }
        throw new PipelineException(statementStart(), "drift_threshold '" + v + "' is not a fraction between 0 and 1",
                "drift_threshold '0.01' (1 %)");
    }

    private static boolean eventType(DataType t) {
        return t instanceof StringType || t instanceof BooleanType || t instanceof ByteType || t instanceof ShortType
                || t instanceof IntegerType || t instanceof LongType || t instanceof FloatType || t instanceof DoubleType
                || t instanceof DecimalType || t instanceof DateType || t instanceof TimestampType;
    }

    private static String required(Map<String, String> options, String key, Position at, String example) {
        String v = options.get(key);
        if (v == null || v.isBlank()) {
            throw new PipelineException(at, "the event table has no option '" + key + "' (" + EVENT_OPTIONS.get(key) + ")",
                    "OPTIONS (..., " + example + ")");
        }
        return v.trim();
    }

    private Duration duration(TreeNode<?> node, String what, String value, boolean zeroAllowed) {
        Duration d;
        try {
            d = Durations.parse(value);
        } catch (RuntimeException e) {
            throw refuse(node, what + " '" + value + "' is not a duration", what + " '10 minutes' (or '90 seconds', '1 hour', '1 day')");
        }
        if (d.isNegative() || (d.isZero() && !zeroAllowed)) {
            throw refuse(node, what + " '" + value + "' must be " + (zeroAllowed ? "0 or more" : "positive"), what + " '5 minutes'");
        }
        return d;
    }

    private Check check(CheckConstraint cc, List<Column> columns) {
        Expression condition = cc.child();
        String name = cc.userProvidedName();
        if (name == null || name.isBlank()) {
            throw refuse(condition, "a CHECK without a name; the name is the dead_letter reason of a record that fails it",
                    "CONSTRAINT positive_amount CHECK (" + source(condition) + ")");
        }
        scalarOverColumns(condition, columns, "a CHECK");
        LinkedHashSet<String> read = new LinkedHashSet<>();
        forEachNode(condition, n -> {
            if (n instanceof UnresolvedAttribute a) {
                List<String> parts = CollectionConverters.asJava(a.nameParts());
                String col = parts.get(parts.size() - 1);
                columns.stream().filter(c -> c.name().equalsIgnoreCase(col)).findFirst().ifPresent(c -> read.add(c.name()));
            }
        });
        return new Check(name, source(condition), List.copyOf(read), at(condition));
    }

    // ------------------------------------------------------------------ a KPI table

    private KpiTable kpiTable(CreateStreamingTableAsSelect st, EventTable events) {
        Position start = statementStart();
        String name = null;
        LogicalPlan query = null;
        for (LogicalPlan child : CollectionConverters.asJava(st.children())) {
            if (child instanceof UnresolvedIdentifier id) {
                name = String.join(".", CollectionConverters.asJava(id.nameParts()));
            } else {
                query = child;
            }
        }
        if (name == null || query == null) {
            throw new PipelineException(start, "a CREATE STREAMING TABLE without a name or a query", "CREATE STREAMING TABLE name AS SELECT ...");
        }
        if (!name.matches("[A-Za-z][A-Za-z0-9_]*")) {
            throw new PipelineException(start, "KPI table name '" + name + "'; Tidemark keeps its tables in the lakehouse, by plain name",
                    "a name of letters, digits and underscores, without a database");
        }
        if (PipelineTables.OWN_TABLES.contains(name.toLowerCase(Locale.ROOT))) {
            throw new PipelineException(start, "'" + name + "' is one of Tidemark's own tables", "another name");
        }
        if (!(query instanceof Aggregate agg)) {
            throw refuse(query, "a KPI table aggregates the events by window", "SELECT window(" + events.eventTime() + ", '5 minutes') AS w, "
                    + "..., count(*) AS n FROM STREAM " + events.name() + " GROUP BY window(" + events.eventTime() + ", '5 minutes'), ...");
        }
        String where = streamSource(agg.child(), events);
        List<Expression> grouping = CollectionConverters.asJava(agg.groupingExpressions());
        Window window = null;
        UnresolvedFunction windowCall = null;
        List<Column> dimensions = new ArrayList<>();
        for (Expression g : grouping) {
            if (g instanceof UnresolvedFunction f && isWindowFunction(f)) {
                if (window != null) {
                    throw refuse(g, "a second window in GROUP BY", "one window(...) per KPI table; declare another table for another window");
                }
                window = window(f, events);
                windowCall = f;
            } else if (g instanceof UnresolvedAttribute a) {
                dimensions.add(dimension(a, events));
            } else {
                throw refuse(g, "GROUP BY " + source(g) + "; a KPI table groups by its window and event columns",
                        "GROUP BY window(" + events.eventTime() + ", '5 minutes')" + (dimensions.isEmpty() ? "" : ", " + dimensions.get(0).name())
                                + " (columns by name, not by position or expression)");
            }
        }
        if (window == null) {
            throw refuse(agg, "no window in GROUP BY", "GROUP BY window(" + events.eventTime() + ", '5 minutes')" + dimensions.stream()
                    .map(d -> ", " + d.name()).reduce("", String::concat));
        }
        List<Measure> measures = new ArrayList<>();
        boolean windowSelected = false;
        Set<String> selectedDimensions = new HashSet<>();
        Set<String> outputNames = new HashSet<>();
        for (Object named : CollectionConverters.asJava(agg.aggregateExpressions())) {
            Expression e = (Expression) named;
            // An item without AS: Spark wraps it in UnresolvedAlias, to be named by the analyzer.
            Expression item = e instanceof Alias al ? al.child() : e instanceof UnresolvedAlias u ? u.child() : e;
            String alias = e instanceof Alias al ? al.name() : null;
            if (item instanceof UnresolvedFunction f && isWindowFunction(f)) {
                if (!source(f).equalsIgnoreCase(source(windowCall)) && !window(f, events).equals(window)) {
                    throw refuse(f, "the window selected is not the one grouped by (" + source(windowCall) + ")", source(windowCall) + " AS w");
                }
                windowSelected = true;
            } else if (item instanceof UnresolvedAttribute a) {
                String col = columnName(a, events);
                if (dimensions.stream().noneMatch(d -> d.name().equalsIgnoreCase(col))) {
                    throw refuse(a, "'" + col + "' is selected but not grouped by, and is not an aggregate", "add it to GROUP BY, or "
                            + "aggregate it: one of " + MEASURES_WRITTEN);
                }
                if (alias != null && !alias.equalsIgnoreCase(col)) {
                    throw refuse(e, "a dimension renamed (" + col + " AS " + alias + "); a KPI table keeps the event column's name", col);
                }
                selectedDimensions.add(col.toLowerCase(Locale.ROOT));
                outputNames.add(col.toLowerCase(Locale.ROOT));
            } else if (item instanceof UnresolvedFunction f) {
                Measure m = measure(f, alias, e, events);
                for (StructField stored : m.stored()) {
                    String column = stored.name().toLowerCase(Locale.ROOT);
                    String clash = kpiColumnClash(column);
                    if (!outputNames.add(column) || clash != null) {
                        throw refuse(e, "the measure '" + m.name() + "' would store a column '" + column + "' that "
                                + (clash != null ? "Tidemark keeps for itself: " + clash : "the table has already"), "another name");
                    }
                }
                measures.add(m);
            } else {
                throw refuse(item, "'" + source(item) + "' is neither the window, a grouped column nor a measure",
                        "one of " + MEASURES_WRITTEN + " over an event column, AS a name");
            }
        }
        if (!windowSelected) {
            throw refuse(agg, "the window is grouped by but not selected", "SELECT " + source(windowCall) + " AS w, ...");
        }
        for (Column d : dimensions) {
            if (!selectedDimensions.contains(d.name().toLowerCase(Locale.ROOT))) {
                throw refuse(agg, "'" + d.name() + "' is grouped by but not selected: its rows could not be told apart", "SELECT ..., "
                        + d.name() + ", ...");
            }
        }
        if (measures.isEmpty()) {
            throw refuse(agg, "no measure", "at least one of " + MEASURES_WRITTEN + ", AS a name");
        }
        Pipeline.KafkaOutput output = kafkaOutput(st, name, events);
        measures = tableProperties(st, name, measures, outputNames);
        KpiTable table = new KpiTable(name, window, dimensions, where, measures, output, start);
        viewAndOutputNames(table, agg);
        if (table.recordCount().isEmpty()) {
            throw new PipelineException(start, "KPI table '" + name + "' has no count(*) without FILTER: Tidemark balances each day of the raw log against "
                    + "it to find the days reconcile must recompute", "count(*) AS records among its measures");
        }
        return table;
    }

    /** The names a KPI table's Kafka output adds to each message's key and value beside its dimensions and measures. */
    static final Set<String> OUTPUT_COLUMNS = Set.of("table", "version");

    /**
     * A dimension or measure named like a column the table's roll-up views add ({@link KpiViews#rollupColumns}), or, with Kafka
     * output, like a field its messages add ({@link #OUTPUT_COLUMNS}): refused, as the view or the message would hold two
     * of one name.
     */
    private void viewAndOutputNames(KpiTable table, Aggregate agg) {
        List<String> names = new ArrayList<>(table.dimensions().stream().map(Column::name).toList());
        table.measures().forEach(m -> names.add(m.name()));
        for (String n : names) {
            String lower = n.toLowerCase(Locale.ROOT);
            if (KpiViews.rollupColumns(table).contains(lower)) {
                throw refuse(agg, "'" + n + "' in KPI table '" + table.name() + "': its hourly or daily view has a column of that name "
                        + "(" + String.join(", ", new TreeSet<>(KpiViews.rollupColumns(table))) + ")",
                        "another name (for a dimension: another name for the event column, reading its field with 'field.<column>')");
            }
            if (table.kafkaOutput().isPresent() && OUTPUT_COLUMNS.contains(lower)) {
                throw refuse(agg, "'" + n + "' in KPI table '" + table.name() + "': its Kafka output's messages have a field of that name "
                        + "(table, version)", "another name (for a dimension: another name for the event column, reading its field with "
                        + "'field.<column>')");
            }
        }
    }

    /** What {@code TBLPROPERTIES} of a KPI table may say: {@code '<measure>.sketch_column'}, the column that stores a sketch. */
    static final String SKETCH_COLUMN = ".sketch_column";

    /**
     * The KPI table's clauses besides its query: {@code TBLPROPERTIES ('<measure>.sketch_column' = 'name')}
     * names a sketch's column (the network pipeline keeps {@code subscriber_sketch}, as its table always
     * had); a COMMENT is documentation. Everything else is Tidemark's to decide (where the table lives,
     * its format, its partitions, its columns) and is refused rather than ignored.
     */
    private List<Measure> tableProperties(CreateStreamingTableAsSelect st, String table, List<Measure> measures, Set<String> outputNames) {
        if (!st.columns().isEmpty()) {
            throw new PipelineException(statementStart(), "a column list on KPI table '" + table + "'; its columns are its query's",
                    "CREATE STREAMING TABLE " + table + " AS SELECT ...");
        }
        if (!st.partitioning().isEmpty()) {
            throw new PipelineException(statementStart(), "PARTITIONED BY on KPI table '" + table + "'; Tidemark partitions every KPI table "
                    + "by event_date", "no PARTITIONED BY");
        }
        TableSpecBase spec = st.tableSpec();
        boolean options = spec instanceof TableSpec ts ? !ts.options().isEmpty()
                : spec instanceof UnresolvedTableSpec us && !us.optionExpression().options().isEmpty();
        if (spec.location().isDefined() || spec.provider().isDefined() || options || spec.serde().isDefined()) {
            throw new PipelineException(statementStart(), "LOCATION, USING or OPTIONS on KPI table '" + table + "'; every KPI table is a "
                    + "Delta table in the lakehouse", "no LOCATION, USING or OPTIONS clause");
        }
        List<Measure> out = new ArrayList<>(measures);
        for (Map.Entry<String, String> p : new TreeMap<>(CollectionConverters.asJava(spec.properties())).entrySet()) {
            String key = p.getKey();
            if (key.startsWith(OUTPUT_PREFIX) || key.startsWith(PRODUCER_PREFIX)) {
                continue; // kafkaOutput's
            }
            int m = key.endsWith(SKETCH_COLUMN) ? indexOf(out, key.substring(0, key.length() - SKETCH_COLUMN.length())) : -1;
            if (m < 0 || !out.get(m).sketched()) {
                throw new PipelineException(statementStart(), "table property '" + key + "'; a KPI table knows "
                        + "'<measure>.sketch_column', for a measure with a sketch (approx_count_distinct, percentile_approx), and its Kafka "
                        + "output's '" + OUTPUT_PREFIX + "*' and '" + PRODUCER_PREFIX + "*'",
                        "TBLPROPERTIES ('" + out.stream().filter(Measure::sketched).map(Measure::name).findFirst().orElse("users")
                                + SKETCH_COLUMN + "' = 'users_sketch'), or no TBLPROPERTIES");
            }
            String column = p.getValue().toLowerCase(Locale.ROOT);
            if (!column.matches("[a-z][a-z0-9_]*") || kpiColumnClash(column) != null
                    || (outputNames.contains(column) && !column.equals(out.get(m).sketch().toLowerCase(Locale.ROOT)))) {
                throw new PipelineException(statementStart(), "the sketch column '" + p.getValue() + "' of '" + out.get(m).name()
                        + "' is not a name of its own", "a name of letters, digits and underscores that no other column has");
            }
            outputNames.remove(out.get(m).sketch().toLowerCase(Locale.ROOT));
            outputNames.add(column);
            out.set(m, out.get(m).withSketchColumn(p.getValue()));
        }
        return out;
    }

    /**
     * A schema registry's location as written in a pipeline: an http(s) URL as it is, a {@code file:} URI or an
     * absolute path as the path; null for anything else (a relative path would mean another place once the
     * lakehouse records the file).
     */
    static String registryLocation(String given) {
        if (given.startsWith("http://") || given.startsWith("https://")) {
            return given;
        }
        if (given.startsWith("file:")) {
            return Path.of(URI.create(given)).toString();
        }
        return Path.of(given).isAbsolute() ? given : null;
    }

    /** The table properties of a KPI table's Kafka output: {@code output.kafka.*}, and {@code kafka.option.*} for its producer. */
    static final String OUTPUT_PREFIX = "output.kafka.";
    static final String PRODUCER_PREFIX = "kafka.option.";
    static final Map<String, String> OUTPUT_OPTIONS = new LinkedHashMap<>();

    static {
        OUTPUT_OPTIONS.put("topic", "the compacted topic each change of a row is published to (required for Kafka output)");
        OUTPUT_OPTIONS.put("mode", "'final' (the default: a window once it is final, then each correction) or 'updates' (every change)");
        OUTPUT_OPTIONS.put("exactly-once", "'true': a transactional producer, each (key, version) once for a read_committed consumer; "
                + "'false' (the default): at-least-once");
        OUTPUT_OPTIONS.put("progress-topic", "where the publisher records how far it has published (default '"
                + Pipeline.KafkaOutput.DEFAULT_PROGRESS_TOPIC + "')");
        OUTPUT_OPTIONS.put("format", "'json' (the default) or 'avro': Confluent's wire format, the schemas registered under <topic>-key "
                + "and <topic>-value");
        OUTPUT_OPTIONS.put("schema-registry", "with 'avro': a Confluent-compatible registry's URL or a directory of <id>.avsc files "
                + "(default: the event table's schema_registry)");
    }

    /** Producer settings Tidemark decides itself: the serializers (keys and values are bytes it encodes) and idempotence. */
    private static final Set<String> FIXED_PRODUCER_OPTIONS = Set.of("key.serializer", "value.serializer", "enable.idempotence", "acks");

    /** {@code 'output.kafka.topic' = '...'} and its companions in a KPI table's TBLPROPERTIES; null when the table publishes nothing. */
    private Pipeline.KafkaOutput kafkaOutput(CreateStreamingTableAsSelect st, String table, EventTable events) {
        Map<String, String> props = new TreeMap<>(CollectionConverters.asJava(st.tableSpec().properties()));
        Map<String, String> output = new TreeMap<>();
        Map<String, String> producer = new TreeMap<>();
        props.forEach((k, v) -> {
            if (k.startsWith(OUTPUT_PREFIX)) {
                output.put(k.substring(OUTPUT_PREFIX.length()), v);
            } else if (k.startsWith(PRODUCER_PREFIX)) {
                producer.put(k.substring(PRODUCER_PREFIX.length()), v);
            }
        });
        if (output.isEmpty() && producer.isEmpty()) {
            return null;
        }
        for (String k : output.keySet()) {
            if (!OUTPUT_OPTIONS.containsKey(k)) {
                throw new PipelineException(statementStart(), "table property '" + OUTPUT_PREFIX + k + "' on KPI table '" + table
                        + "'; Kafka output knows " + String.join(", ", OUTPUT_OPTIONS.keySet().stream().map(o -> "'" + OUTPUT_PREFIX + o + "'")
                        .toList()), String.join("; ", OUTPUT_OPTIONS.entrySet().stream().map(e -> OUTPUT_PREFIX + e.getKey() + ": "
                        + e.getValue()).toList()));
            }
        }
        String topic = output.get("topic");
        if (topic == null) {
            throw new PipelineException(statementStart(), "Kafka output settings on KPI table '" + table + "' without a topic",
                    "TBLPROPERTIES ('" + OUTPUT_PREFIX + "topic' = '" + table + "', ...)");
        }
        String progress = output.getOrDefault("progress-topic", Pipeline.KafkaOutput.DEFAULT_PROGRESS_TOPIC);
        for (String t : List.of(topic, progress)) {
            if (!t.matches("[A-Za-z0-9._-]{1,249}") || t.equals(".") || t.equals("..")) {
                throw new PipelineException(statementStart(), "'" + t + "' is not a Kafka topic name", "letters, digits, '.', '_' and '-', "
                        + "at most 249 of them");
            }
        }
        if (topic.equals(progress)) {
            throw new PipelineException(statementStart(), "the output topic of '" + table + "' is also its progress topic; consumers of "
                    + "the output would read the publisher's bookkeeping", "another '" + OUTPUT_PREFIX + "progress-topic'");
        }
        String mode = output.getOrDefault("mode", "final").toLowerCase(Locale.ROOT);
        if (!mode.equals("final") && !mode.equals("updates")) {
            throw new PipelineException(statementStart(), "'" + OUTPUT_PREFIX + "mode' = '" + output.get("mode") + "'",
                    "'final' (a window once it is final, then each correction) or 'updates' (every change)");
        }
        String exactlyOnce = output.getOrDefault("exactly-once", "false").toLowerCase(Locale.ROOT);
        if (!exactlyOnce.equals("true") && !exactlyOnce.equals("false")) {
            throw new PipelineException(statementStart(), "'" + OUTPUT_PREFIX + "exactly-once' = '" + output.get("exactly-once") + "'",
                    "'true' or 'false'");
        }
        for (String k : producer.keySet()) {
            if (FIXED_PRODUCER_OPTIONS.contains(k)) {
                throw new PipelineException(statementStart(), "'" + PRODUCER_PREFIX + k + "'; Tidemark sets the producer's serializers, "
                        + "idempotence and acks itself (every record written to all in-sync replicas, once)", "no '" + PRODUCER_PREFIX + k + "'");
            }
        }
        String format = output.getOrDefault("format", "json").toLowerCase(Locale.ROOT);
        if (!format.equals("json") && !format.equals("avro")) {
            throw new PipelineException(statementStart(), "'" + OUTPUT_PREFIX + "format' = '" + output.get("format") + "'",
                    "'json' or 'avro' (Confluent's wire format, with a schema registry)");
        }
        String registry = null;
        if (format.equals("avro")) {
            registry = output.getOrDefault("schema-registry", events.schemaRegistry());
            if (registry == null || registry.isBlank()) {
                throw new PipelineException(statementStart(), "Avro output of KPI table '" + table + "' without a schema registry to "
                        + "register its schemas in", "'" + OUTPUT_PREFIX + "schema-registry' = 'http://registry:8081' (or the absolute path "
                        + "of a directory of <id>.avsc files)");
            }
            String given = registry;
            registry = registryLocation(given);
            if (registry == null) {
                throw new PipelineException(statementStart(), "'" + OUTPUT_PREFIX + "schema-registry' = '" + given + "' is neither a URL nor "
                        + "an absolute path (the stream records this file in the lakehouse, where a relative path would mean something else)",
                        "'http://host:8081' or '/absolute/path/to/schemas'");
            }
        } else if (output.containsKey("schema-registry")) {
            throw new PipelineException(statementStart(), "'" + OUTPUT_PREFIX + "schema-registry' on KPI table '" + table
                    + "', whose output is JSON", "'" + OUTPUT_PREFIX + "format' = 'avro', or no '" + OUTPUT_PREFIX + "schema-registry'");
        }
        return new Pipeline.KafkaOutput(topic, Pipeline.KafkaOutput.Mode.valueOf(mode.toUpperCase(Locale.ROOT)), exactlyOnce.equals("true"),
                progress, producer, Pipeline.KafkaOutput.Format.valueOf(format.toUpperCase(Locale.ROOT)), registry);
    }

    private static int indexOf(List<Measure> measures, String name) {
        for (int i = 0; i < measures.size(); i++) {
            if (measures.get(i).name().equalsIgnoreCase(name)) {
                return i;
            }
        }
        return -1;
    }

    /** The WHERE condition of the query under the aggregate (null for none), after checking it reads STREAM events. */
    private String streamSource(LogicalPlan under, EventTable events) {
        String where = null;
        LogicalPlan p = under;
        if (p instanceof Filter f) {
            scalarOverColumns(f.condition(), events.columns(), "WHERE");
            where = source(f.condition());
            p = f.child();
        }
        String kind = p.nodeName();
        if (kind.equals("NamedStreamingRelation") && p.children().size() == 1 && p.children().head() instanceof UnresolvedRelation r) {
            String from = String.join(".", CollectionConverters.asJava(r.multipartIdentifier()));
            if (!from.equalsIgnoreCase(events.name())) {
                throw refuse(r, "no event table '" + from + "'; this pipeline's events are '" + events.name() + "'", "FROM STREAM "
                        + events.name());
            }
            return where;
        }
        if (p instanceof UnresolvedRelation r && !r.isStreaming()) {
            throw refuse(r, "FROM " + String.join(".", CollectionConverters.asJava(r.multipartIdentifier()))
                    + " reads a table once; a KPI table reads the events as a stream", "FROM STREAM " + events.name());
        }
        if (kind.equals("Join")) {
            throw refuse(p, "a join; a KPI table reads one event stream, and a join's rows could not be recomputed from raw_events alone",
                    "FROM STREAM " + events.name() + " (enrich the events before they reach Kafka)");
        }
        if (kind.contains("Watermark")) {
            throw refuse(p, "a WATERMARK clause; the lateness is declared once, for all KPI tables, on the event table",
                    "FROM STREAM " + events.name() + ", with OPTIONS (lateness '...') on " + events.name());
        }
        throw refuse(p, "a " + kind + " under the aggregate; a KPI table is SELECT ... FROM STREAM " + events.name()
                + " [WHERE ...] GROUP BY ...", "FROM STREAM " + events.name() + " [WHERE condition]");
    }

    private static boolean isWindowFunction(UnresolvedFunction f) {
        String n = functionName(f);
        return n.equals("window") || n.equals("session_window");
    }

    private Window window(UnresolvedFunction f, EventTable events) {
        if (functionName(f).equals("session_window")) {
            throw refuse(f, "a session window; its end depends on records still to come, so it never closes at a time the watermark can tell",
                    "window(" + events.eventTime() + ", '5 minutes') (tumbling) or window(" + events.eventTime() + ", '1 hour', '15 minutes') (hopping)");
        }
        List<Expression> args = CollectionConverters.asJava(f.arguments());
        if (args.size() < 2 || args.size() > 3) {
            throw refuse(f, "window takes the event time, a size and an optional slide" + (args.size() == 4 ? " (a start offset would "
                    + "move windows off midnight)" : ""), "window(" + events.eventTime() + ", '5 minutes') or window(" + events.eventTime()
                    + ", '1 hour', '15 minutes')");
        }
        if (!(args.get(0) instanceof UnresolvedAttribute a) || !columnName(a, events).equalsIgnoreCase(events.eventTime())) {
            throw refuse(args.get(0), "windows are over the event time '" + events.eventTime() + "', not " + source(args.get(0)),
                    "window(" + events.eventTime() + ", ...)");
        }
        Duration size = windowDuration(args.get(1), "window size");
        Duration slide = args.size() == 3 ? windowDuration(args.get(2), "window slide") : size;
        long day = Duration.ofDays(1).toMillis();
        if (day % size.toMillis() != 0) {
            throw refuse(args.get(1), "a window of " + Durations.human(size) + " does not divide a day, so windows would not start at midnight "
                    + "and a day's KPIs could not be recomputed on their own", "a size that divides 24 hours: '1 minute', '5 minutes', "
                    + "'15 minutes', '1 hour', '6 hours', '1 day'...");
        }
        if (slide.compareTo(size) > 0 || size.toMillis() % slide.toMillis() != 0) {
            throw refuse(args.get(2), "a slide of " + Durations.human(slide) + " does not divide the window of " + Durations.human(size)
                    + "; each record must count in a whole number of windows", "a slide that divides the size, e.g. window("
                    + events.eventTime() + ", '1 hour', '15 minutes')");
        }
        return new Window(size, slide);
    }

    private Duration windowDuration(Expression e, String what) {
        if (!(e instanceof Literal l) || l.value() == null || !(l.dataType() instanceof StringType)) {
            throw refuse(e, what + " " + source(e) + " is not a duration in quotes", "'5 minutes'");
        }
        String v = l.value().toString().trim();
        String unit = v.replaceFirst("(?i)^interval\\s+", "");
        return duration(e, what, unit, false);
    }

    private Column dimension(UnresolvedAttribute a, EventTable events) {
        String name = columnName(a, events);
        Column c = events.column(name).orElseThrow(() -> refuse(a, "GROUP BY " + name + ": no such column in '" + events.name() + "'",
                "one of " + String.join(", ", events.columns().stream().map(Column::name).toList())));
        String clash = kpiColumnClash(c.name());
        if (clash != null) {
            throw refuse(a, "GROUP BY " + c.name() + ": a KPI table keeps its dimensions under the event column's name, and " + clash,
                    "another name for the event column (a field the records carry as '" + c.field() + "' is read into it with the event table's "
                            + "option 'field.<column>' = '" + c.field() + "')");
        }
        if (c.type() instanceof FloatType || c.type() instanceof DoubleType) {
            throw refuse(a, "GROUP BY " + c.name() + ", a " + c.sqlType() + " column: floating-point values that print alike can differ, "
                    + "so the stream and reconcile could group them apart", "a STRING, whole-number, DECIMAL, BOOLEAN or DATE column");
        }
        return c;
    }

    private String columnName(UnresolvedAttribute a, EventTable events) {
        List<String> parts = CollectionConverters.asJava(a.nameParts());
        if (parts.size() == 2 && parts.get(0).equalsIgnoreCase(events.name())) {
            return parts.get(1);
        }
        if (parts.size() != 1) {
            throw refuse(a, "'" + String.join(".", parts) + "' is not a column of '" + events.name() + "'", "the column's plain name");
        }
        return parts.get(0);
    }

    private static String functionName(UnresolvedFunction f) {
        List<String> parts = CollectionConverters.asJava(f.nameParts());
        return parts.get(parts.size() - 1).toLowerCase(Locale.ROOT);
    }

    // ------------------------------------------------------------------ a measure

    private Measure measure(UnresolvedFunction f, String alias, Expression item, EventTable events) {
        String fn = functionName(f);
        String written = source(f);
        if (NOT_MERGEABLE.containsKey(fn)) {
            throw refuse(f, written + " cannot be merged across micro-batches", NOT_MERGEABLE.get(fn));
        }
        AggregateFunction function = AGGREGATES.get(fn);
        if (function == null) {
            boolean builtin = CollectionConverters.asJava(f.nameParts()).size() == 1
                    && FunctionRegistry$.MODULE$.builtin().functionExists(new FunctionIdentifier(fn));
            throw refuse(f, builtin ? written + " is not an aggregate Tidemark can keep mergeable"
                    : "unknown function '" + fn + "' (a pipeline uses Spark's built-in functions, no UDFs)", "one of " + MEASURES_WRITTEN);
        }
        if (alias == null || alias.isBlank() || item == f) {
            throw refuse(f, "the measure " + written + " has no name", written + " AS a_name");
        }
        if (f.isDistinct()) {
            throw refuse(f, written + ": a DISTINCT aggregate cannot be merged across micro-batches", function instanceof Count
                    ? "approx_count_distinct(col) (an HLL sketch while streaming, the exact distinct count after reconcile)"
                    : fn + "(col) without DISTINCT");
        }
        if (!f.orderingWithinGroup().isEmpty()) {
            throw refuse(f, written + " WITHIN GROUP", "percentile_approx(col, p)");
        }
        String filter = null;
        if (f.filter().isDefined()) {
            scalarOverColumns(f.filter().get(), events.columns(), "FILTER");
            filter = source(f.filter().get());
        }
        List<Expression> args = CollectionConverters.asJava(f.arguments());
        if (function instanceof Count && args.size() == 1 && (args.get(0) instanceof UnresolvedStar
                || (args.get(0) instanceof Literal l && l.value() != null && !(l.dataType() instanceof StringType)))) {
            return new Measure(alias, new Count(true), null, null, null, filter, null, true, at(f));
        }
        int expected = function.arguments();
        if (args.size() != expected) {
            throw refuse(f, written + " takes " + (expected == 1 ? "one column" : "a column and a percentile") + function.argumentsNote(args.size()),
                    function.spelling());
        }
        Expression arg = args.get(0);
        Column column;
        DataType type;
        if (arg instanceof UnresolvedAttribute a) {
            column = eventColumn(a, events);
            type = column.type();
        } else if (arg instanceof Cast c && c.child() instanceof UnresolvedAttribute a && c.dataType() instanceof DecimalType) {
            column = eventColumn(a, events);
            if (!numeric(column.type())) {
                throw refuse(arg, "CAST(" + column.name() + " AS DECIMAL) of a " + column.sqlType() + " column", "a numeric column");
            }
            type = c.dataType();
        } else {
            throw refuse(arg, "the argument " + source(arg) + "; a measure reads one event column", fn + "(column), or " + fn
                    + "(CAST(column AS DECIMAL(p, s))) for an exact sum of a floating-point column");
        }
        AggregateFunction.Refusal refused = function.refuse(fn, column.name(), type).orElse(null);
        if (refused != null) {
            throw refuse(arg, refused.what(), refused.instead());
        }
        if (function instanceof Percentile) {
            Expression p = args.get(1);
            Double value = p instanceof Literal l && l.value() != null ? toDouble(l) : null;
            if (value == null || !(value > 0 && value < 1)) {
                throw refuse(p, "the percentile " + source(p) + " is not one number between 0 and 1", "percentile_approx(" + column.name()
                        + ", 0.95)");
            }
            function = new Percentile(value);
        }
        String argument = arg instanceof Cast ? "CAST(" + column.name() + " AS " + type.sql() + ")" : column.name();
        return new Measure(alias, function, column.name(), argument, type, filter, null, function instanceof Count || (filter == null && column.notNull()),
                at(f));
    }

    private Column eventColumn(UnresolvedAttribute a, EventTable events) {
        String name = columnName(a, events);
        return events.column(name).orElseThrow(() -> refuse(a, "no column '" + name + "' in '" + events.name() + "'", "one of "
                + String.join(", ", events.columns().stream().map(Column::name).toList())));
    }

    private static boolean numeric(DataType t) {
        return t instanceof ByteType || t instanceof ShortType || t instanceof IntegerType || t instanceof LongType || t instanceof FloatType
                || t instanceof DoubleType || t instanceof DecimalType;
    }

    private static Double toDouble(Literal l) {
        Object v = l.value();
        if (v instanceof Decimal d) {
            return d.toDouble();
        }
        return v instanceof Number n ? n.doubleValue() : null;
    }

    /** Checks a condition (WHERE, FILTER, CHECK) names only event columns and calls no aggregate, window or unknown function. */
    private void scalarOverColumns(Expression condition, List<Column> columns, String where) {
        forEachNode(condition, node -> {
            if (node instanceof UnresolvedAttribute a) {
                List<String> parts = CollectionConverters.asJava(a.nameParts());
                String name = parts.get(parts.size() - 1);
                if (columns.stream().noneMatch(c -> c.name().equalsIgnoreCase(name))) {
                    throw refuse(a, where + " names '" + String.join(".", parts) + "', which is not an event column", "one of "
                            + String.join(", ", columns.stream().map(Column::name).toList()));
                }
            } else if (node instanceof UnresolvedFunction f) {
                String fn = functionName(f);
                if (SCALAR_SAFE.contains(fn) || NOT_MERGEABLE.containsKey(fn) || Set.of("count", "sum", "min", "max", "avg", "mean",
                        "approx_count_distinct", "percentile_approx").contains(fn)) {
                    throw refuse(f, where + " calls " + fn + "; a condition is about one record", "a condition over the record's columns");
                }
                if (CollectionConverters.asJava(f.nameParts()).size() != 1
                        || !FunctionRegistry$.MODULE$.builtin().functionExists(new FunctionIdentifier(fn))) {
                    throw refuse(f, where + " calls unknown function '" + fn + "' (a pipeline uses Spark's built-in functions, no UDFs)",
                            "Spark's built-in functions");
                }
            } else if (node instanceof Expression e && e.nodeName().contains("Subquery") || node instanceof LogicalPlan) {
                throw refuse(node, where + " holds a subquery; a condition is about one record", "a condition over the record's columns");
            }
        });
    }

    /** Visits {@code root} and everything below it: children and inner children (a table spec's options and constraints). */
    private static void forEachNode(TreeNode<?> root, Consumer<TreeNode<?>> visit) {
        visit.accept(root);
        for (Object c : CollectionConverters.asJava(root.innerChildren())) {
            if (c instanceof TreeNode<?> t) {
                forEachNode(t, visit);
            }
        }
        for (Object c : CollectionConverters.asJava(root.children())) {
            forEachNode((TreeNode<?>) c, visit);
        }
    }

    private String identifier(LogicalPlan name) {
        if (name instanceof UnresolvedIdentifier id) {
            return String.join(".", CollectionConverters.asJava(id.nameParts()));
        }
        return name.simpleString(100);
    }
}
