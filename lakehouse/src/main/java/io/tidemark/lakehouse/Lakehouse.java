package io.tidemark.lakehouse;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.apache.spark.sql.DataFrameWriter;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.expressions.GenericRowWithSchema;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

import io.delta.tables.DeltaOptimizeBuilder;
import io.delta.tables.DeltaTable;

import io.tidemark.pipeline.KpiViews;
import io.tidemark.pipeline.Pipeline;
import io.tidemark.pipeline.PipelineTables;

/**
 * The Delta tables under one lakehouse root: their paths and SQL names, created and registered
 * from their definitions ({@code sql/tables.sql}, and the pipeline for those whose columns it decides;
 * the analyst views likewise), and the operations
 * the jobs read and commit them with ({@link #read}, {@link #readAt}, {@link #changes}, {@link #version},
 * {@link #commit} of a {@link TableUpdate}, {@link #exists}). No job opens a table by its path: a
 * read or a commit is one of these, so there is one place to see how Tidemark touches its tables.
 * (SQL over {@link #ref}, such as the analysts' views and {@code VACUUM}, names the table the same way.)
 */
public final class Lakehouse {

    /**
     * A table of the lakehouse, by name: Tidemark's own (the constants: those of sql/tables.sql, and
     * raw_events and late_events, whose event columns the pipeline decides) or a KPI table the pipeline
     * declares ({@link #kpi}). {@link Lakehouse#tables()} lists those of one lakehouse.
     */
    public record Table(String tableName) implements Comparable<Table> {
        public static final Table RAW_EVENTS = new Table("raw_events");
        public static final Table LATE_EVENTS = new Table("late_events");
        public static final Table DEAD_LETTER = new Table("dead_letter");
        public static final Table STREAM_PROGRESS = new Table("stream_progress");
        public static final Table STREAM_GAPS = new Table("stream_gaps");
        public static final Table RECONCILE_REPORT = new Table("reconcile_report");
        public static final Table EXPIRED_DAYS = new Table("expired_days");
        /** Tidemark's own tables, in the order {@link Lakehouse#tables()} lists them (the KPI tables go after raw_events). */
        public static final List<Table> OWN = List.of(RAW_EVENTS, LATE_EVENTS, DEAD_LETTER, STREAM_PROGRESS, STREAM_GAPS, RECONCILE_REPORT,
                EXPIRED_DAYS);

        static {
            // The pipeline's parser refuses these names by the list it holds: the one list of them.
            if (!OWN.stream().map(Table::tableName).toList().equals(PipelineTables.OWN_TABLES)) {
                throw new IllegalStateException("Lakehouse.Table.OWN and PipelineTables.OWN_TABLES name different tables");
            }
        }

        public Table {
            if (tableName == null || !tableName.matches("[a-z][a-z0-9_]*")) {
                throw new IllegalArgumentException("a table name of lower-case letters, digits and underscores; got " + tableName);
            }
        }

        /** The KPI table {@code name} of a pipeline. */
        public static Table kpi(String name) {
            Table t = new Table(name.toLowerCase(Locale.ROOT));
            if (OWN.contains(t)) {
                throw new IllegalArgumentException(name + " is one of Tidemark's own tables, not a KPI table");
            }
            return t;
        }

        /** The table named {@code name}: one of {@link #OWN}, else a KPI table. */
        public static Table of(String name) {
            Table t = new Table(name.toLowerCase(Locale.ROOT));
            return OWN.stream().filter(t::equals).findFirst().orElse(t);
        }

        /** Tables sort by name. */
        @Override
        public int compareTo(Table o) {
            return tableName.compareTo(o.tableName);
        }

        /** Whether it is a KPI table (not one of {@link #OWN}). */
        public boolean isKpi() {
            return !OWN.contains(this);
        }

        public String sqlName() {
            return "tidemark." + tableName;
        }

        @Override
        public String toString() {
            return tableName;
        }
    }

    private final String root;
    /** The pipeline whose tables it holds; null: the shipped default's. */
    private final TidemarkConfig config;

    /** The lakehouse at {@code root}, holding the tables of the shipped default pipeline. */
    public Lakehouse(String root) {
        this(root, null);
    }

    private Lakehouse(String root, TidemarkConfig config) {
        this.root = root.endsWith("/") ? root.substring(0, root.length() - 1) : root;
        this.config = config;
    }

    public static Lakehouse of(TidemarkConfig config) {
        return new Lakehouse(config.lakehouseUri(), config);
    }

    /** The pipeline whose KPI tables this lakehouse holds. */
    public Pipeline pipeline() {
        return (config == null ? TidemarkConfig.defaults() : config).pipeline();
    }

    public String root() {
        return root;
    }

    /** Every table of this lakehouse: raw_events, the pipeline's KPI tables in the file's order, then Tidemark's other tables. */
    public List<Table> tables() {
        List<Table> out = new ArrayList<>();
        out.add(Table.RAW_EVENTS);
        out.addAll(kpiTables());
        Table.OWN.stream().skip(1).forEach(out::add);
        return out;
    }

    /** The pipeline's KPI tables, in the file's order. */
    public List<Table> kpiTables() {
        return pipeline().tables().stream().map(t -> Table.kpi(t.name())).toList();
    }

    public String path(Table t) {
        return root + "/" + t.tableName();
    }

    /** {@code delta.`path`}: a reference that works in any session, registered or not. */
    public String ref(Table t) {
        return "delta.`" + path(t) + "`";
    }

    /** Whether the table has been created at this lakehouse (it has a Delta log). */
    public boolean exists(SparkSession spark, Table t) {
        return DeltaTable.isDeltaTable(spark, path(t));
    }

    /** The table's rows at its newest version. */
    public Dataset<Row> read(SparkSession spark, Table t) {
        return spark.read().format("delta").load(path(t));
    }

    /** The table's rows as of {@code version}: for a reader that must see one snapshot across several queries. */
    public Dataset<Row> readAt(SparkSession spark, Table t, long version) {
        return spark.read().format("delta").option("versionAsOf", version).load(path(t));
    }

    /**
     * The table's change data feed from version {@code from} to {@code to}, both included: its rows with
     * Delta's {@code _change_type} and {@code _commit_version} (the table must keep the feed:
     * {@code delta.enableChangeDataFeed}).
     */
    public Dataset<Row> changes(SparkSession spark, Table t, long from, long to) {
        return spark.read().format("delta").option("readChangeFeed", "true").option("startingVersion", from).option("endingVersion", to)
                .load(path(t));
    }

    /** The table's newest committed version. */
    public long version(SparkSession spark, Table t) {
        return DeltaTable.forPath(spark, path(t)).history(1).select("version").first().getLong(0);
    }

    /** The files and bytes of the table's current version (Delta's detail). */
    public long[] size(SparkSession spark, Table t) {
        Row d = DeltaTable.forPath(spark, path(t)).detail().select("numFiles", "sizeInBytes").first();
        return new long[] {d.getLong(0), d.getLong(1)};
    }

    /** The table's Delta properties ({@code TBLPROPERTIES}); empty when the table does not exist yet. */
    public Map<String, String> properties(SparkSession spark, Table t) {
        if (!exists(spark, t)) {
            return Map.of();
        }
        Row detail = spark.sql("DESCRIBE DETAIL " + ref(t)).first();
        Map<String, String> props = detail.getJavaMap(detail.fieldIndex("properties"));
        return props == null ? Map.of() : props;
    }

    /**
     * Makes {@code update} in one Delta commit: the one place the project writes a table's rows
     * ({@link TableUpdate} says how each is made, and its isolation).
     */
    public void commit(SparkSession spark, TableUpdate update) {
        if (update instanceof TableUpdate.Append a) {
            writer(a.rows(), a.note()).mode("append").save(path(a.table()));
        } else if (update instanceof TableUpdate.Replace r) {
            writer(r.rows(), r.note()).mode("overwrite").option("replaceWhere", r.predicate()).save(path(r.table()));
        } else if (update instanceof TableUpdate.DeleteDays d) {
            if (!d.days().isEmpty()) {
                DeltaTable.forPath(spark, path(d.table())).delete(d.predicate());
            }
        } else if (update instanceof TableUpdate.Compact c) {
            DeltaOptimizeBuilder optimize = DeltaTable.forPath(spark, path(c.table())).optimize();
            (c.predicate() == null ? optimize : optimize.where(c.predicate())).executeCompaction();
        } else {
            throw new IllegalArgumentException("no such update: " + update);
        }
    }

    /**
     * {@link #commit(SparkSession, TableUpdate)}, re-run by {@code retry} when it loses a race to a
     * concurrent writer ({@link CommitRetry#run}: {@code what} and {@code ifGaveUp} word its failure).
     *
     * @return the attempts made
     */
    public int commit(SparkSession spark, TableUpdate update, CommitRetry retry, String what, String ifGaveUp) {
        return retry.run(update.firstDay(), what, ifGaveUp, () -> commit(spark, update));
    }

    private static DataFrameWriter<Row> writer(Dataset<Row> rows, String note) {
        DataFrameWriter<Row> w = rows.write().format("delta");
        return note == null ? w : w.option("userMetadata", note);
    }

    /**
     * Creates the tables that do not exist yet and registers all of them, and the analyst views,
     * under {@code tidemark.*} in this session's catalog. Safe to call from many processes: an
     * existing table is only registered, and its schema must match the definition.
     */
    public void createAndRegister(SparkSession spark) {
        createTables(spark, true);
        for (String statement : viewStatements()) {
            spark.sql(statement);
        }
    }

    /**
     * Creates the tables that do not exist yet at this lakehouse (by path) and adds the nullable columns
     * {@code sql/tables.sql} has gained since a table was created; with {@code register}, also points
     * {@code tidemark.<table>} of this session's catalog at each. Without it, no catalog object is
     * touched (not even the database).
     */
    public void createTables(SparkSession spark, boolean register) {
        for (String statement : tableStatements()) {
            Matcher m = CREATE_TABLE.matcher(statement);
            if (!m.find()) {
                if (register) {
                    // CREATE DATABASE: the session's own catalog. Registration in a metastore creates it with a location first.
                    spark.sql(statement);
                }
                continue;
            }
            Table table = Table.of(m.group(1));
            // Create by path, so the table exists at this lakehouse whatever the session's catalog holds...
            String byPath = m.replaceFirst("CREATE TABLE IF NOT EXISTS " + Matcher.quoteReplacement(ref(table)) + " (")
                    .replaceAll("(?m)^LOCATION .*$", "");
            try {
                spark.sql(byPath);
            } catch (RuntimeException concurrentCreate) {
                if (!exists(spark, table)) {
                    throw concurrentCreate;
                }
            }
            addMissingColumns(spark, table);
            if (register) {
                // ...then point the SQL name at it (a session may have registered another lakehouse before).
                spark.sql("DROP TABLE IF EXISTS " + table.sqlName());
                spark.sql("CREATE TABLE " + table.sqlName() + " USING delta LOCATION '" + path(table) + "'");
            }
        }
    }

    /**
     * Sets the Delta properties the tables' definitions declare on tables created before they declared
     * them (or with other values); a table that has them already is not touched. A property change
     * conflicts with every concurrent commit to the table, so only the stream calls this, at start-up,
     * holding its lease and before its first batch.
     */
    public void applyDeclaredProperties(SparkSession spark) {
        for (Table table : tables()) {
            Map<String, String> declared = declaredProperties(table);
            if (declared.isEmpty()) {
                continue;
            }
            Map<String, String> current = properties(spark, table);
            List<String> changes = new ArrayList<>();
            declared.forEach((k, v) -> {
                if (!v.equals(current.get(k))) {
                    changes.add("'" + k + "' = '" + v + "'");
                }
            });
            if (!changes.isEmpty()) {
                spark.sql("ALTER TABLE " + ref(table) + " SET TBLPROPERTIES (" + String.join(", ", changes) + ")");
            }
        }
    }

    /** The {@code TBLPROPERTIES} a table's definition declares, in declaration order (empty when none). */
    public Map<String, String> declaredProperties(Table table) {
        for (String statement : tableStatements()) {
            Matcher m = CREATE_TABLE.matcher(statement);
            if (m.find() && m.group(1).equalsIgnoreCase(table.tableName())) {
                Map<String, String> out = new LinkedHashMap<>();
                int at = statement.indexOf("TBLPROPERTIES (");
                if (at >= 0) {
                    Matcher kv = PROPERTY.matcher(statement.substring(at));
                    while (kv.find()) {
                        out.put(kv.group(1), kv.group(2));
                    }
                }
                return out;
            }
        }
        throw new IllegalStateException("no definition of table " + table.tableName());
    }

    private static final Pattern PROPERTY = Pattern.compile("'([^']+)'\\s*=\\s*'([^']*)'");

    /**
     * Brings a table written by an earlier version up to its definition: a nullable column the
     * definition has gained is added (rows written before hold null in it). Anything else that
     * differs is left to Delta's own schema check on the next write.
     */
    private void addMissingColumns(SparkSession spark, Table table) {
        Set<String> present = new HashSet<>(Arrays.asList(read(spark, table).schema().fieldNames()));
        List<String> missing = new ArrayList<>();
        List<String> names = new ArrayList<>();
        for (StructField f : schema(table).fields()) {
            if (!present.contains(f.name()) && f.nullable()) {
                String comment = f.getComment().isDefined() ? " COMMENT '" + f.getComment().get().replace("'", "\\'") + "'" : "";
                missing.add(f.name() + " " + f.dataType().sql() + comment);
                names.add(f.name());
            }
        }
        if (!missing.isEmpty()) {
            try {
                spark.sql("ALTER TABLE " + ref(table) + " ADD COLUMNS (" + String.join(", ", missing) + ")");
            } catch (RuntimeException concurrentAdd) {
                // Another process may have added them meanwhile; the check below decides.
                Set<String> now = new HashSet<>(Arrays.asList(read(spark, table).schema().fieldNames()));
                if (!now.containsAll(names)) {
                    throw concurrentAdd;
                }
            }
        }
    }

    /**
     * The schema a table's definition declares (sql/tables.sql, or the pipeline's for raw_events,
     * late_events and the KPI tables): the one definition of its columns, their order, types and
     * nullability. Writers build their rows with it ({@link #row}); no Java copy.
     */
    public StructType schema(Table table) {
        return schemas.computeIfAbsent(table, t -> {
            for (String statement : tableStatements()) {
                Matcher m = CREATE_TABLE.matcher(statement);
                if (m.find() && m.group(1).equalsIgnoreCase(t.tableName())) {
                    int end = statement.indexOf("\n) USING");
                    if (end < 0) {
                        throw new IllegalStateException("the columns of " + t.tableName() + " must end with a line ') USING'");
                    }
                    return StructType.fromDDL(statement.substring(m.end(), end).trim());
                }
            }
            throw new IllegalStateException("no definition of table " + t.tableName() + " in " + pipeline().file() + " or sql/tables.sql");
        });
    }

    private final Map<Table, StructType> schemas = new ConcurrentHashMap<>();

    /** The schema of one of sql/tables.sql's tables, whose columns no pipeline changes (stream_progress, dead_letter...). */
    public static StructType ownSchema(Table table) {
        if (table.isKpi() || table.equals(Table.RAW_EVENTS) || table.equals(Table.LATE_EVENTS)) {
            throw new IllegalArgumentException(table + ": its columns depend on the pipeline; ask the lakehouse (schema)");
        }
        return OWN_SCHEMAS.computeIfAbsent(table, t -> new Lakehouse("").schema(t));
    }

    private static final Map<Table, StructType> OWN_SCHEMAS = new ConcurrentHashMap<>();

    /**
     * A row of one of sql/tables.sql's tables ({@link #ownSchema}) from its values by column name, in the order of {@link #schema}: a column
     * without a value, or a value without a column, is a programming error and fails at once.
     */
    public static Row row(Table table, Map<String, ?> values) {
        StructType schema = ownSchema(table);
        Object[] fields = new Object[schema.size()];
        for (int i = 0; i < fields.length; i++) {
            String name = schema.fields()[i].name();
            if (!values.containsKey(name)) {
                throw new IllegalArgumentException(table.tableName() + " row without column " + name);
            }
            fields[i] = values.get(name);
        }
        if (values.size() != fields.length) {
            Set<String> extra = new TreeSet<>(values.keySet());
            extra.removeAll(Arrays.asList(schema.fieldNames()));
            throw new IllegalArgumentException(table.tableName() + " has no column " + extra);
        }
        return new GenericRowWithSchema(fields, schema);
    }

    private static final Pattern CREATE_TABLE =
            Pattern.compile("CREATE TABLE IF NOT EXISTS tidemark\\.(\\w+) \\(");

    /**
     * The statements that create the database and the tables: {@code sql/tables.sql}'s, with those
     * of the tables whose columns the pipeline decides ({@link io.tidemark.pipeline.PipelineTables}:
     * raw_events, the KPI tables, late_events) before its first table.
     */
    List<String> tableStatements() {
        List<String> out = new ArrayList<>();
        boolean added = false;
        for (String statement : statements("tables.sql")) {
            if (!added && CREATE_TABLE.matcher(statement).find()) {
                PipelineTables.statements(pipeline()).forEach(g -> out.add(g.replace("${lakehouse}", root)));
                added = true;
            }
            out.add(statement);
        }
        return out;
    }

    /**
     * The analyst views, each a {@code CREATE OR REPLACE TEMPORARY VIEW}: those of the pipeline's KPI
     * tables ({@link io.tidemark.pipeline.KpiViews}), then those the pipeline file declares, then
     * {@code sql/views.sql}'s, in order.
     */
    public List<String> viewStatements() {
        List<String> out = new ArrayList<>(KpiViews.statements(pipeline()));
        pipeline().views().forEach(v -> out.add(v.statement()));
        out.addAll(statements("views.sql"));
        return out;
    }

    List<String> statements(String file) {
        String text = resource("tidemark/sql/" + file);
        List<String> out = new ArrayList<>();
        StringBuilder current = new StringBuilder();
        for (String line : text.split("\n", -1)) {
            if (line.trim().equals(";")) {
                String s = current.toString().trim();
                if (!s.isEmpty()) {
                    out.add(s.replace("${lakehouse}", root));
                }
                current.setLength(0);
            } else if (!line.trim().startsWith("--")) {
                current.append(line).append('\n');
            }
        }
        return out;
    }

    private static String resource(String name) {
        try (InputStream in = Lakehouse.class.getClassLoader().getResourceAsStream(name)) {
            if (in == null) {
                if (name.endsWith("views.sql")) {
                    return "";
                }
                throw new IllegalStateException("missing resource " + name + ": the lakehouse jar was built without sql/");
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new IllegalStateException("cannot read " + name, e);
        }
    }
}
