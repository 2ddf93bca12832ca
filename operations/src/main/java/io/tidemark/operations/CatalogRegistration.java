package io.tidemark.operations;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;

import io.tidemark.lakehouse.ExitCode;
import io.tidemark.lakehouse.JobMain;
import io.tidemark.lakehouse.Lakehouse;
import io.tidemark.lakehouse.SparkSessions;
import io.tidemark.lakehouse.TidemarkConfig;

/**
 * Registers a lakehouse's tables and the analyst views in a Hive metastore, once, so that any Spark
 * session on that metastore ({@code spark-sql}, the Thrift server, a notebook) sees
 * {@code tidemark.kpi_5m}, {@code tidemark.kpi_daily} and the rest without Tidemark's code
 * (docs/tables.md, "A shared catalog").
 *
 * <ul>
 *   <li>the database {@code tidemark}, located at {@code <lakehouse>/_tidemark/tidemark.db} (a path
 *       every reader of the lakehouse reaches; it holds nothing Tidemark writes);</li>
 *   <li>every table of {@code sql/tables.sql} as an EXTERNAL Delta table
 *       ({@code CREATE TABLE tidemark.<t> USING delta LOCATION '<lakehouse>/<t>'}): the metastore holds
 *       the name and location only, the schema stays in the Delta log;</li>
 *   <li>every analyst view ({@link Lakehouse#viewStatements}) as a persistent view, derived from its
 *       {@code CREATE OR REPLACE TEMPORARY VIEW} statement (the one definition), with Spark
 *       built-ins only.</li>
 * </ul>
 *
 * <p>Re-running is safe: a table already registered at this lakehouse is left alone, a view whose
 * text differs from its definition (after an upgrade) is replaced. A table registered at another
 * location, or a Tidemark name taken by another kind of object, is refused before anything changes
 * (a shared catalog is not silently repointed); {@code replace} repoints EXTERNAL tables. MANAGED
 * tables and other objects are never dropped: dropping them would delete data that is not Tidemark's.
 *
 * <p>The jobs never use this: an embedded Derby metastore admits one JVM at a time, and a stream
 * must not hold it. Runs from {@code tidemark catalog}, or {@code spark-submit --class
 * io.tidemark.operations.CatalogRegistration} (see {@link #main}).
 */
public final class CatalogRegistration {

    public static final String DATABASE = "tidemark";

    private static final Pattern TEMPORARY_VIEW = Pattern.compile("^CREATE OR REPLACE TEMPORARY VIEW (\\w+) AS\\s");

    /** Raised when registering would repoint or drop something it must not: nothing was changed. */
    public static final class Refused extends RuntimeException {
        public Refused(String message) {
            super(message);
        }
    }

    /** An analyst view ({@link Lakehouse#viewStatements}): its name and the query after {@code AS}. */
    public record View(String name, String query) {
        /** The persistent form of the TEMPORARY statement: the same query, in database {@code tidemark}. */
        public String createStatement() {
            return "CREATE OR REPLACE VIEW " + DATABASE + "." + name + " AS\n" + query;
        }
    }

    private final Lakehouse lakehouse;
    private final TidemarkConfig config;

    public CatalogRegistration(TidemarkConfig config) {
        this.config = config;
        this.lakehouse = Lakehouse.of(config);
    }

    /** Where the database {@code tidemark} lives: under the lakehouse, which every reader reaches. */
    public String databaseLocation() {
        return lakehouse.root() + "/_tidemark/" + DATABASE + ".db";
    }

    /**
     * The analyst views ({@link Lakehouse#viewStatements}), each from its {@code CREATE OR REPLACE TEMPORARY VIEW name AS
     * query} statement; any other statement there is an error (it could not be made persistent).
     */
    public List<View> views() {
        List<View> out = new ArrayList<>();
        for (String statement : lakehouse.viewStatements()) {
            Matcher m = TEMPORARY_VIEW.matcher(statement);
            if (!m.find()) {
                throw new IllegalStateException("the analyst views: every statement must be 'CREATE OR REPLACE TEMPORARY VIEW <name> AS ...' "
                        + "(tidemark catalog derives the persistent view from it); found: " + statement.lines().findFirst().orElse(""));
            }
            out.add(new View(m.group(1), statement.substring(m.end()).trim()));
        }
        return out;
    }

    /**
     * The Spark settings of a session whose catalog is the configured metastore: Hive's catalog, and
     * for a Derby directory its JDBC URL and a warehouse beside it; for thrift URIs
     * {@code hive.metastore.uris}; when {@code catalog.metastore} is empty, nothing: Spark's own
     * configuration decides (it must enable Hive, see {@link #requireHive}).
     */
    public static Map<String, String> sparkConfs(TidemarkConfig config) {
        Map<String, String> confs = new LinkedHashMap<>();
        TidemarkConfig.Metastore m = config.metastore();
        if (m instanceof TidemarkConfig.DerbyDirectory d) {
            confs.put("spark.sql.catalogImplementation", "hive");
            confs.put("spark.hadoop.javax.jdo.option.ConnectionURL", derbyUrl(d.dir()));
            // Managed tables of other databases (and 'default', which the metastore creates) land here, not in the working directory.
            confs.put("spark.sql.warehouse.dir", d.dir().resolve("warehouse").toString());
            // Hive retries opening its store 10 times, 2 s apart: pointless for a local database another JVM holds.
            confs.put("spark.hadoop.hive.hmshandler.retry.attempts", "1");
        } else if (m instanceof TidemarkConfig.ThriftUris t) {
            confs.put("spark.sql.catalogImplementation", "hive");
            confs.put("spark.hadoop.hive.metastore.uris", t.uris());
        }
        return confs;
    }

    /** {@code jdbc:derby:;databaseName=<dir>/metastore_db;create=true}: what a Spark session on the Derby directory needs. */
    public static String derbyUrl(Path dir) {
        return "jdbc:derby:;databaseName=" + dir.resolve("metastore_db") + ";create=true";
    }

    /**
     * A Spark session on the configured metastore. Derby's own log goes to {@code <dir>/derby.log},
     * not the working directory (unless {@code derby.stream.error.file} is set already).
     */
    public static SparkSession session(TidemarkConfig config, String appName) {
        TidemarkConfig.Metastore m = config.metastore();
        if (m instanceof TidemarkConfig.DerbyDirectory d) {
            try {
                Files.createDirectories(d.dir());
            } catch (IOException e) {
                throw new IllegalArgumentException("cannot create the metastore directory " + d.dir() + ": " + e.getMessage(), e);
            }
            if (System.getProperty("derby.stream.error.file") == null) {
                System.setProperty("derby.stream.error.file", d.dir().resolve("derby.log").toString());
            }
        }
        if (!(m instanceof TidemarkConfig.SparkDefault)) {
            try {
                Class.forName("org.apache.spark.sql.hive.HiveSessionStateBuilder");
            } catch (ClassNotFoundException e) {
                throw new IllegalStateException("Spark's Hive support (spark-hive_2.13) is not on the classpath: a Spark distribution "
                        + "has it; run with its spark-submit, or use tidemark catalog");
            }
        }
        SparkSession spark = SparkSessions.create(config, appName, sparkConfs(config));
        requireHive(spark);
        return spark;
    }

    /** Fails unless the session's catalog is a Hive metastore (else nothing registered would outlive it). */
    public static void requireHive(SparkSession spark) {
        String impl = spark.conf().get("spark.sql.catalogImplementation", "in-memory");
        if (!impl.equals("hive")) {
            throw new Refused("this Spark session's catalog is " + impl + ", not a Hive metastore: set catalog.metastore to a directory "
                    + "(embedded Derby) or thrift://host:port, or run with Spark's Hive configuration (spark.sql.catalogImplementation=hive "
                    + "and hive-site.xml)");
        }
    }

    /**
     * Whether {@code failure} is Derby failing to open the metastore's database. Its cause (SQLState XSDB6,
     * another JVM has booted it: an embedded metastore admits one session at a time, e.g. a {@code spark-sql}
     * still running on it) is a chained SQLException that Hive's and DataNucleus's wrappers do not pass on,
     * so only the outer message tells.
     */
    public static boolean derbyInUse(Throwable failure) {
        StringWriter trace = new StringWriter();
        failure.printStackTrace(new PrintWriter(trace));
        return trace.toString().contains("Failed to start database") || trace.toString().contains("Another instance of Derby");
    }

    /** What the catalog holds under one of Tidemark's names. */
    record Entry(String type, String location, String provider, String viewText) {
    }

    private static Optional<Entry> describe(SparkSession spark, String name) {
        if (!spark.catalog().tableExists(DATABASE, name)) {
            return Optional.empty();
        }
        Map<String, String> info = new LinkedHashMap<>();
        for (Row r : spark.sql("DESCRIBE TABLE EXTENDED " + DATABASE + ".`" + name + "`").collectAsList()) {
            String key = r.getString(0) == null ? "" : r.getString(0).trim();
            info.putIfAbsent(key, r.getString(1) == null ? "" : r.getString(1).trim());
        }
        return Optional.of(new Entry(info.getOrDefault("Type", "").toUpperCase(Locale.ROOT), info.get("Location"),
                info.get("Provider"), info.get("View Text")));
    }

    /** A location as the catalog reports it, comparable with a lakehouse path ({@code file:/x} and {@code /x/} are {@code /x}). */
    static String normalize(String location) {
        if (location == null) {
            return null;
        }
        String l = location.trim();
        if (l.startsWith("file:")) {
            l = l.substring("file:".length()).replaceFirst("^/+", "/");
        }
        while (l.endsWith("/") && l.length() > 1) {
            l = l.substring(0, l.length() - 1);
        }
        return l;
    }

    private boolean registeredHere(Entry e, Lakehouse.Table t) {
        return normalize(e.location()) != null && normalize(e.location()).equals(normalize(lakehouse.path(t)));
    }

    /**
     * Registers the database, the tables and the views; returns a line per object saying what
     * happened. Every conflict is checked before the first change.
     *
     * @param replace repoint tables registered at another location (EXTERNAL ones only)
     */
    public List<String> register(SparkSession spark, boolean replace) {
        requireHive(spark);
        List<View> views = views();
        // 1. Refuse before changing anything.
        boolean anyTable = false;
        for (Lakehouse.Table t : lakehouse.tables()) {
            anyTable |= lakehouse.exists(spark, t);
        }
        if (!anyTable) {
            throw new Refused("no Tidemark table at " + lakehouse.root() + ": is the lakehouse setting right? (a stream, reconcile or "
                    + "tidemark sql creates the tables)");
        }
        List<String> problems = new ArrayList<>();
        List<String> elsewhere = new ArrayList<>();
        Map<Lakehouse.Table, Optional<Entry>> tables = new LinkedHashMap<>();
        boolean dbExists = spark.catalog().databaseExists(DATABASE);
        for (Lakehouse.Table t : lakehouse.tables()) {
            Optional<Entry> e = dbExists ? describe(spark, t.tableName()) : Optional.empty();
            tables.put(t, e);
            if (e.isEmpty() || registeredHere(e.get(), t)) {
                continue;
            }
            Entry x = e.get();
            if (!x.type().equals("EXTERNAL")) {
                problems.add(t.sqlName() + " exists as a " + x.type() + (x.type().equals("VIEW") ? "" : " table at " + x.location())
                        + ", not Tidemark's; drop or rename it first");
            } else if (!replace) {
                elsewhere.add(t.sqlName() + " is registered at " + x.location() + ", not at " + lakehouse.path(t) + " (another lakehouse?)");
            }
        }
        if (!elsewhere.isEmpty()) {
            problems.add(0, elsewhere.get(0) + (elsewhere.size() == 1 ? "; pass --replace to point it here"
                    : ", and so are " + (elsewhere.size() - 1) + " more tables; pass --replace to point them here"));
        }
        Map<View, Optional<Entry>> existingViews = new LinkedHashMap<>();
        for (View v : views) {
            Optional<Entry> e = dbExists ? describe(spark, v.name()) : Optional.empty();
            existingViews.put(v, e);
            if (e.isPresent() && !e.get().type().equals("VIEW")) {
                problems.add(DATABASE + "." + v.name() + " exists as a " + e.get().type() + " table, not a view; drop or rename it first");
            }
        }
        if (!problems.isEmpty()) {
            throw new Refused("nothing registered: " + String.join("; ", problems));
        }

        // 2. Register.
        List<String> lines = new ArrayList<>();
        if (!dbExists) {
            spark.sql("CREATE DATABASE IF NOT EXISTS " + DATABASE + " COMMENT 'Tidemark: Delta tables of " + lakehouse.root().replace("'", "")
                    + " and analyst views (tidemark catalog register)' LOCATION '" + databaseLocation() + "'");
            lines.add(String.format("%-30s created at %s", "database " + DATABASE, databaseLocation()));
        } else {
            Row db = spark.sql("DESCRIBE DATABASE " + DATABASE).collectAsList().stream()
                    .filter(r -> r.getString(0).equalsIgnoreCase("Location")).findFirst().orElse(null);
            lines.add(String.format("%-30s exists%s", "database " + DATABASE, db == null ? "" : " at " + db.getString(1)));
        }
        // Tables missing at the lakehouse (an older lakehouse after an upgrade) are created by path, as the jobs would.
        lakehouse.createTables(spark, false);
        for (Map.Entry<Lakehouse.Table, Optional<Entry>> te : tables.entrySet()) {
            Lakehouse.Table t = te.getKey();
            Optional<Entry> e = te.getValue();
            String create = "CREATE TABLE " + t.sqlName() + " USING delta LOCATION '" + lakehouse.path(t) + "'";
            if (e.isEmpty()) {
                spark.sql(create);
                lines.add(String.format("%-30s registered at %s", "table " + t.sqlName(), lakehouse.path(t)));
            } else if (registeredHere(e.get(), t)) {
                lines.add(String.format("%-30s unchanged", "table " + t.sqlName()));
            } else {
                // EXTERNAL (checked above): dropping it removes the catalog entry only, never the files.
                spark.sql("DROP TABLE " + t.sqlName());
                spark.sql(create);
                lines.add(String.format("%-30s moved from %s to %s", "table " + t.sqlName(), e.get().location(), lakehouse.path(t)));
            }
        }
        for (Map.Entry<View, Optional<Entry>> ve : existingViews.entrySet()) {
            View v = ve.getKey();
            Optional<Entry> e = ve.getValue();
            String name = "view " + DATABASE + "." + v.name();
            if (e.isPresent() && v.query().equals(e.get().viewText())) {
                lines.add(String.format("%-30s unchanged", name));
                continue;
            }
            spark.sql(v.createStatement());
            lines.add(String.format("%-30s %s", name, e.isEmpty() ? "created" : "replaced (the view changed)"));
        }
        return lines;
    }

    /** A line per object: registered here, elsewhere, missing, a view current or out of date. Changes nothing. */
    public List<String> status(SparkSession spark) {
        requireHive(spark);
        List<String> lines = new ArrayList<>();
        if (!spark.catalog().databaseExists(DATABASE)) {
            lines.add(String.format("%-30s not registered (tidemark catalog register)", "database " + DATABASE));
            return lines;
        }
        Row db = spark.sql("DESCRIBE DATABASE " + DATABASE).collectAsList().stream()
                .filter(r -> r.getString(0).equalsIgnoreCase("Location")).findFirst().orElse(null);
        lines.add(String.format("%-30s at %s", "database " + DATABASE, db == null ? "?" : db.getString(1)));
        for (Lakehouse.Table t : lakehouse.tables()) {
            Optional<Entry> e = describe(spark, t.tableName());
            String state;
            if (e.isEmpty()) {
                state = "missing";
            } else if (registeredHere(e.get(), t)) {
                state = "registered at this lakehouse";
            } else if (e.get().type().equals("EXTERNAL")) {
                state = "registered at " + e.get().location() + " (another lakehouse)";
            } else {
                state = "a " + e.get().type() + " object, not Tidemark's";
            }
            lines.add(String.format("%-30s %s", "table " + t.sqlName(), state));
        }
        for (View v : views()) {
            Optional<Entry> e = describe(spark, v.name());
            String state = e.isEmpty() ? "missing"
                    : !e.get().type().equals("VIEW") ? "a " + e.get().type() + " table, not a view"
                    : v.query().equals(e.get().viewText()) ? "current" : "out of date (the views changed: run register)";
            lines.add(String.format("%-30s %s", "view " + DATABASE + "." + v.name(), state));
        }
        return lines;
    }

    /** Counts of {@link #status} lines: whether everything is registered at this lakehouse and current. */
    public boolean complete(List<String> statusLines) {
        return statusLines.size() == 1 + lakehouse.tables().size() + views().size()
                && statusLines.stream().skip(1).allMatch(l -> l.endsWith("registered at this lakehouse") || l.endsWith(" current"));
    }

    /**
     * Removes Tidemark's views and tables from the catalog (the Delta files stay: the tables are
     * EXTERNAL), then the database when nothing else is left in it. Objects under Tidemark's names
     * that are not its own (MANAGED tables, tables of views' names) are left, and named.
     */
    public List<String> drop(SparkSession spark) {
        requireHive(spark);
        List<String> lines = new ArrayList<>();
        if (!spark.catalog().databaseExists(DATABASE)) {
            lines.add(String.format("%-30s not registered: nothing to drop", "database " + DATABASE));
            return lines;
        }
        for (View v : views()) {
            Optional<Entry> e = describe(spark, v.name());
            String name = "view " + DATABASE + "." + v.name();
            if (e.isEmpty()) {
                lines.add(String.format("%-30s not registered", name));
            } else if (e.get().type().equals("VIEW")) {
                spark.sql("DROP VIEW " + DATABASE + "." + v.name());
                lines.add(String.format("%-30s dropped", name));
            } else {
                lines.add(String.format("%-30s left: a %s table, not Tidemark's view", name, e.get().type()));
            }
        }
        for (Lakehouse.Table t : lakehouse.tables()) {
            Optional<Entry> e = describe(spark, t.tableName());
            String name = "table " + t.sqlName();
            if (e.isEmpty()) {
                lines.add(String.format("%-30s not registered", name));
            } else if (e.get().type().equals("EXTERNAL")) {
                spark.sql("DROP TABLE " + t.sqlName());
                lines.add(String.format("%-30s dropped from the catalog (its files at %s stay)", name, e.get().location()));
            } else {
                lines.add(String.format("%-30s left: a %s object, not Tidemark's", name, e.get().type()));
            }
        }
        if (spark.sql("SHOW TABLES IN " + DATABASE).isEmpty()) {
            spark.sql("DROP DATABASE " + DATABASE);
            lines.add(String.format("%-30s dropped", "database " + DATABASE));
        } else {
            lines.add(String.format("%-30s left: it holds objects that are not Tidemark's", "database " + DATABASE));
        }
        return lines;
    }

    /** The one line for {@link #derbyInUse}. */
    public static final String IN_USE = "the embedded Derby metastore could not be opened, most likely because another JVM uses it "
            + "(a spark-sql, a notebook, the Thrift server?): it admits one at a time; stop that session and run this again";

    private static final String USAGE = """
            Usage: spark-submit --class io.tidemark.operations.CatalogRegistration tidemark-spark-jobs.jar \\
                     [register [--replace] | status | drop] [key=value ...]
            Registers the lakehouse's tables and the analyst views in a Hive metastore (docs/tables.md, "A shared catalog"):
            catalog.metastore=DIR (embedded Derby) or thrift://host:port, else Spark's Hive configuration.
              register    create database tidemark, the EXTERNAL Delta tables and the views (the default; safe to re-run)
              --replace   repoint tables registered at another location to this lakehouse
              status      what the metastore holds under Tidemark's names; exit code 6 when not all is registered and current
              drop        remove Tidemark's views and tables from the metastore (the Delta files stay)
            Exit codes: 0 done, 1 failure, 2 bad input or refused (nothing changed), 6 status: incomplete.
            Settings (key=value):
            """;

    static final JobMain.Spec COMMAND_LINE = JobMain.Spec.of("catalog", USAGE).words("register", "status", "drop").flags("--replace");

    /** {@code spark-submit} entry point ({@link JobMain}); exit codes as {@link #USAGE} says. */
    public static void main(String[] args) {
        JobMain.Arguments a = JobMain.parseOrExit(COMMAND_LINE, args);
        String action = a.word().orElse("register");
        TidemarkConfig config = a.config();
        JobMain.orRefuse(COMMAND_LINE.command(), () -> {
            if (a.has("--replace") && !action.equals("register")) {
                throw new IllegalArgumentException("--replace goes with register only");
            }
            return config.metastore();
        });
        ExitCode status = ExitCode.OK;
        String message = null;
        SparkSession spark = null;
        try {
            spark = session(config, "tidemark-catalog");
            CatalogRegistration registration = new CatalogRegistration(config);
            List<String> lines = switch (action) {
                case "status" -> registration.status(spark);
                case "drop" -> registration.drop(spark);
                default -> registration.register(spark, a.has("--replace"));
            };
            lines.forEach(System.out::println);
            if (action.equals("status") && !registration.complete(lines)) {
                status = ExitCode.INCOMPLETE;
            }
        } catch (Refused | IllegalArgumentException e) {
            status = ExitCode.BAD_INPUT;
            message = e.getMessage();
        } catch (Exception e) { // AnalysisException is checked, and thrown undeclared
            if (derbyInUse(e)) {
                status = ExitCode.BAD_INPUT;
                message = IN_USE;
            } else {
                e.printStackTrace();
                status = ExitCode.FAILED;
                message = e.getMessage();
            }
        } finally {
            if (spark != null) {
                spark.stop();
            }
        }
        if (status != ExitCode.OK) {
            throw JobMain.exit(COMMAND_LINE.command(), status, message);
        }
    }
}
