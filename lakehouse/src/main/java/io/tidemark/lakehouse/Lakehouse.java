package io.tidemark.lakehouse;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

import org.apache.spark.sql.SparkSession;

/**
 * The Delta tables under one lakehouse root: their paths and SQL names, created and registered
 * from {@code sql/tables.sql} (and the analyst views from {@code sql/views.sql}).
 */
public final class Lakehouse {

    /** The tables of sql/tables.sql. */
    public enum Table {
        RAW_EVENTS, KPI_5M, LATE_EVENTS, DEAD_LETTER, STREAM_PROGRESS, STREAM_GAPS, RECONCILE_REPORT;

        public String tableName() {
            return name().toLowerCase(Locale.ROOT);
        }

        public String sqlName() {
            return "tidemark." + tableName();
        }
    }

    private final String root;

    public Lakehouse(String root) {
        this.root = root.endsWith("/") ? root.substring(0, root.length() - 1) : root;
    }

    public static Lakehouse of(TidemarkConfig config) {
        return new Lakehouse(config.lakehouseUri());
    }

    public String root() {
        return root;
    }

    public String path(Table t) {
        return root + "/" + t.tableName();
    }

    /** {@code delta.`path`}: a reference that works in any session, registered or not. */
    public String ref(Table t) {
        return "delta.`" + path(t) + "`";
    }

    /**
     * Creates the tables that do not exist yet and registers all of them, and the analyst views,
     * under {@code tidemark.*} in this session's catalog. Safe to call from many processes: an
     * existing table is only registered, and its schema must match the definition.
     */
    public void createAndRegister(SparkSession spark) {
        for (String statement : statements("tables.sql")) {
            java.util.regex.Matcher m = CREATE_TABLE.matcher(statement);
            if (!m.find()) {
                spark.sql(statement);
                continue;
            }
            Table table = Table.valueOf(m.group(1).toUpperCase(Locale.ROOT));
            // Create by path, so the table exists at this lakehouse whatever the session's catalog holds...
            String byPath = m.replaceFirst("CREATE TABLE IF NOT EXISTS " + java.util.regex.Matcher.quoteReplacement(ref(table)) + " (")
                    .replaceAll("(?m)^LOCATION .*$", "");
            try {
                spark.sql(byPath);
            } catch (RuntimeException concurrentCreate) {
                if (!io.delta.tables.DeltaTable.isDeltaTable(spark, path(table))) {
                    throw concurrentCreate;
                }
            }
            // ...then point the SQL name at it (a session may have registered another lakehouse before).
            spark.sql("DROP TABLE IF EXISTS " + table.sqlName());
            spark.sql("CREATE TABLE " + table.sqlName() + " USING delta LOCATION '" + path(table) + "'");
        }
        for (String statement : statements("views.sql")) {
            spark.sql(statement);
        }
    }

    private static final java.util.regex.Pattern CREATE_TABLE =
            java.util.regex.Pattern.compile("CREATE TABLE IF NOT EXISTS tidemark\\.(\\w+) \\(");

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
