package io.tidemark.lakehouse;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;

import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.ObjectMapper;

import io.tidemark.lakehouse.Lakehouse.Table;
import io.tidemark.lakehouse.TidemarkConfig.Key;
import io.tidemark.pipeline.Durations;
import io.tidemark.pipeline.Pipeline;

/**
 * The settings that decide what the stream's numbers mean, recorded where they cannot be separated
 * from what they describe: a file {@value #FILE} in the checkpoint directory, and table properties
 * {@code tidemark.query.*} on each KPI table and {@code stream_progress}.
 *
 * <p>Which settings these are, and how each may change, is declared with the setting
 * ({@link TidemarkConfig.Scope} of each {@link Key}). Today:
 *
 * <p>Incompatible (refused on restart, {@link TidemarkConfig.Scope#QUERY}): {@code window} (kpi_5m would mix window sizes),
 * {@code lateness} and {@code watermark.policy} (which records are late would change mid-stream; a
 * definition recorded before the policy existed was written under {@code spark}), {@code topic} (the
 * checkpoint's offsets and the lakehouse's rows belong to the old topic).
 *
 * <p>Compatible ({@link TidemarkConfig.Scope#REPLAY}): {@code clock-skew}, {@code max-event-age} and {@code max-message-bytes} are validation rules for records
 * read from now on, and {@code watermark.idle-timeout} decides the watermark of batches from now on, so they may change between batches; but not while a batch is pending replay
 * (planned in the checkpoint, not committed): a replay skips the tables that already hold the batch
 * and classifies the rest again, so a record could land in both raw_events and dead_letter.
 */
public record QueryDefinition(Map<String, String> settings) {

    /** The file in the checkpoint directory. */
    public static final String FILE = "tidemark-query.json";
    /** Prefix of the Delta table properties. */
    public static final String PROPERTY_PREFIX = "tidemark.query.";

    private static final List<Key> INCOMPATIBLE = keys(TidemarkConfig.Scope.QUERY);
    private static final List<Key> REPLAY_SENSITIVE = keys(TidemarkConfig.Scope.REPLAY);
    /** What a definition recorded before a setting existed was written with. */
    private static final Map<Key, String> BEFORE_IT_WAS_RECORDED = Map.of(Key.WATERMARK_POLICY, "spark");
    /** The recorded settings, in the order of their declaration. */
    private static final List<Key> ORDER = Arrays.stream(Key.values()).filter(k -> k.scope != TidemarkConfig.Scope.RUN).toList();
    private static final ObjectMapper JSON = new ObjectMapper();

    /** Prefix of a KPI table's entry: {@code kpi.<table>} = {@link io.tidemark.pipeline.Pipeline.KpiTable#definition}. */
    static final String KPI_PREFIX = "kpi.";

    /**
     * The definition of a configuration: setting name to its canonical text ({@link TidemarkConfig#canonical}),
     * in {@link #ORDER}, then each KPI table of its pipeline ({@code kpi.<table>}: what its rows mean).
     */
    public static QueryDefinition of(TidemarkConfig config) {
        Map<String, String> m = new LinkedHashMap<>();
        for (Key k : ORDER) {
            m.put(k.name, config.canonical(k));
        }
        for (Pipeline.KpiTable t : config.pipeline().tables()) {
            m.put(KPI_PREFIX + t.name(), t.definition());
        }
        return new QueryDefinition(Collections.unmodifiableMap(m));
    }

    /** The tables that carry the definition as properties: the KPI tables and stream_progress. */
    private static List<Table> stamped(Lakehouse lakehouse) {
        List<Table> out = new ArrayList<>(lakehouse.kpiTables());
        out.add(Table.STREAM_PROGRESS);
        return out;
    }

    private static List<Key> keys(TidemarkConfig.Scope scope) {
        return Arrays.stream(Key.values()).filter(k -> k.scope == scope).toList();
    }

    /** What one place (the checkpoint when table is null, or one table) says the definition was; missing keys are absent. */
    record Recorded(Table table, Map<String, String> settings) {
    }

    /**
     * Refuses to start when the checkpoint or the lakehouse was written with another definition.
     * Reads only: nothing is written, so a refused start leaves both exactly as they were.
     *
     * @param pending the batch pending replay in the checkpoint, -1 for none (the stream's checkpoint reader tells)
     * @throws IncompatibleQueryException naming each changed setting (old -> new) and how to recover
     */
    public static void verify(SparkSession spark, TidemarkConfig config, long pending) {
        QueryDefinition now = of(config);
        Lakehouse lakehouse = Lakehouse.of(config);
        List<Recorded> recorded = recorded(spark, config, lakehouse);
        Map<Key, String[]> changed = new LinkedHashMap<>();
        Map<String, String[]> changedTables = new LinkedHashMap<>();
        boolean checkpoint = false;
        List<String> tables = new ArrayList<>();
        for (Recorded r : recorded) {
            boolean differs = false;
            for (Key k : INCOMPATIBLE) {
                differs |= compare(k, r, now, changed);
            }
            if (pending >= 0) {
                for (Key k : REPLAY_SENSITIVE) {
                    differs |= compare(k, r, now, changed);
                }
            }
            // A KPI table recorded before is compared; one the pipeline adds is new, and allowed.
            for (Map.Entry<String, String> e : now.settings().entrySet()) {
                String old = r.settings().get(e.getKey());
                if (e.getKey().startsWith(KPI_PREFIX) && old != null && !old.equals(e.getValue())) {
                    changedTables.putIfAbsent(e.getKey().substring(KPI_PREFIX.length()), new String[] {old, e.getValue()});
                    differs = true;
                }
            }
            if (differs) {
                if (r.table() == null) {
                    checkpoint = true;
                } else {
                    tables.add(r.table().tableName());
                }
            }
        }
        if (!changed.isEmpty() || !changedTables.isEmpty()) {
            List<String> where = new ArrayList<>();
            if (checkpoint) {
                where.add("the checkpoint " + config.checkpointUri());
            }
            if (!tables.isEmpty()) {
                where.add("the lakehouse " + lakehouse.root() + " (" + String.join(", ", tables) + ")");
            }
            throw new IncompatibleQueryException(message(changed, changedTables, where, pending, config));
        }
    }

    /**
     * Records the definition in the checkpoint and on the tables where it is missing or out of date, and
     * the pipeline file in the lakehouse ({@link RecordedPipeline}); after {@link #verify}.
     */
    public static void record(SparkSession spark, TidemarkConfig config) {
        QueryDefinition now = of(config);
        Map<String, String> settings = now.settings();
        Lakehouse lakehouse = Lakehouse.of(config);
        for (Table t : stamped(lakehouse)) {
            Map<String, String> props = tableSettings(spark, lakehouse, t);
            if (!settings.equals(props)) {
                StringBuilder sql = new StringBuilder("ALTER TABLE " + lakehouse.ref(t) + " SET TBLPROPERTIES (");
                String sep = "";
                for (Map.Entry<String, String> e : settings.entrySet()) {
                    sql.append(sep).append('\'').append(PROPERTY_PREFIX).append(e.getKey()).append("' = '")
                            .append(e.getValue().replace("'", "\\'")).append('\'');
                    sep = ", ";
                }
                spark.sql(sql.append(')').toString());
            }
        }
        Map<String, String> file = checkpointSettings(spark, config.checkpointUri());
        if (!settings.equals(file)) {
            writeCheckpointFile(spark, config.checkpointUri(), settings);
        }
        RecordedPipeline.record(spark.sparkContext().hadoopConfiguration(), config);
    }

    /**
     * The definition the lakehouse's kpi_5m was written with, checked against the configuration: the
     * batch layer must recompute days as the stream computed them, or it would replace 5-minute rows
     * with 10-minute ones, or one measure with another.
     *
     * @throws IncompatibleQueryException the configured window or KPI table differs from the lakehouse's
     */
    public static void requireLakehouseDefinition(SparkSession spark, TidemarkConfig config) {
        Lakehouse lakehouse = Lakehouse.of(config);
        Table first = lakehouse.kpiTables().get(0);
        Map<String, String> props = tableSettings(spark, lakehouse, first);
        String recorded = props.get(Key.WINDOW.name);
        if (recorded != null && !Duration.parse(recorded).equals(config.window())) {
            throw new IncompatibleQueryException("the lakehouse " + lakehouse.root() + " holds " + Durations.human(Duration.parse(recorded))
                    + " KPI windows (" + first + " property " + PROPERTY_PREFIX + Key.WINDOW.name + ") but this run has window = "
                    + Durations.human(config.window()) + "; set window back to " + Durations.human(Duration.parse(recorded))
                    + " (the stream's window): reconcile recomputes days with the window the stream wrote");
        }
        of(config).settings().forEach((k, now) -> {
            String was = props.get(k);
            if (k.startsWith(KPI_PREFIX) && was != null && !was.equals(now)) {
                String table = k.substring(KPI_PREFIX.length());
                throw new IncompatibleQueryException("the lakehouse " + lakehouse.root() + " holds KPI table " + table + " as [" + was
                        + "] (property " + PROPERTY_PREFIX + k + ") but this run's pipeline (" + config.pipeline().file() + ") defines it as ["
                        + now + "]; run reconcile with the stream's pipeline (setting pipeline): it recomputes days as the stream wrote them");
            }
        });
    }

    private static boolean compare(Key k, Recorded r, QueryDefinition now, Map<Key, String[]> changed) {
        String old = r.settings().getOrDefault(k.name, BEFORE_IT_WAS_RECORDED.get(k));
        String current = now.settings().get(k.name);
        if (old == null || old.equals(current)) {
            return false;
        }
        changed.putIfAbsent(k, new String[] {old, current});
        return true;
    }

    private static String message(Map<Key, String[]> changed, Map<String, String[]> changedTables, List<String> where, long pending,
                                  TidemarkConfig config) {
        StringBuilder sb = new StringBuilder(String.join(" and ", where))
                .append(where.size() > 1 ? " were" : " was").append(" written with another query definition: ");
        String sep = "";
        for (Map.Entry<Key, String[]> e : changed.entrySet()) {
            sb.append(sep).append(e.getKey().name).append(' ').append(show(e.getKey(), e.getValue()[0]))
                    .append(" -> ").append(show(e.getKey(), e.getValue()[1]));
            sep = ", ";
        }
        for (Map.Entry<String, String[]> e : changedTables.entrySet()) {
            sb.append(sep).append("KPI table ").append(e.getKey()).append(" [").append(e.getValue()[0]).append("] -> [")
                    .append(e.getValue()[1]).append(']');
            sep = ", ";
        }
        sb.append(". Nothing was read or written. To recover: put ");
        sep = "";
        for (Map.Entry<Key, String[]> e : changed.entrySet()) {
            sb.append(sep).append(e.getKey().name).append(" back to ").append(show(e.getKey(), e.getValue()[0]));
            sep = " and ";
        }
        for (String t : changedTables.keySet()) {
            sb.append(sep).append("the pipeline's ").append(t).append(" back as it was (dimensions, WHERE and measures)");
            sep = " and ";
        }
        boolean incompatible = !changedTables.isEmpty() || changed.keySet().stream().anyMatch(INCOMPATIBLE::contains);
        if (incompatible) {
            sb.append("; or, to run with the new settings, start a new checkpoint and a new lakehouse (stream.checkpoint and lakehouse "
                    + "pointing at empty directories)");
        }
        if (changed.containsKey(Key.TOPIC)) {
            sb.append("; the checkpoint's Kafka offsets and the lakehouse's rows belong to topic '").append(changed.get(Key.TOPIC)[0])
                    .append("': to move to topic '").append(config.topic())
                    .append("' keep the old lakehouse as it is (reconcile it with topic '").append(changed.get(Key.TOPIC)[0])
                    .append("') and start the new topic in a new checkpoint and a new lakehouse");
        }
        if (changed.keySet().stream().anyMatch(REPLAY_SENSITIVE::contains)) {
            sb.append("; ").append(String.join(" and ", changed.keySet().stream().filter(REPLAY_SENSITIVE::contains).map(k -> k.name).toList()))
                    .append(" may change between batches, but batch ").append(pending)
                    .append(" is pending replay in the checkpoint and must be classified as it was first: start with the old value until "
                            + "that batch commits, then change it");
        }
        return sb.toString();
    }

    private static String show(Key k, String canonical) {
        return switch (k.type) {
            case DURATION, DURATION_OR_ZERO -> Durations.human(Duration.parse(canonical));
            case TEXT -> "'" + canonical + "'";
            default -> canonical;
        };
    }


    private static List<Recorded> recorded(SparkSession spark, TidemarkConfig config, Lakehouse lakehouse) {
        List<Recorded> out = new ArrayList<>();
        Map<String, String> file = checkpointSettings(spark, config.checkpointUri());
        if (!file.isEmpty()) {
            out.add(new Recorded(null, file));
        }
        for (Table t : stamped(lakehouse)) {
            Map<String, String> props = tableSettings(spark, lakehouse, t);
            if (!props.isEmpty()) {
                out.add(new Recorded(t, props));
            }
        }
        return out;
    }

    /** The tidemark.query.* properties of a table, empty when it is not a Delta table (yet). */
    static Map<String, String> tableSettings(SparkSession spark, Lakehouse lakehouse, Table t) {
        Map<String, String> props = lakehouse.properties(spark, t);
        Map<String, String> out = new TreeMap<>();
        props.forEach((k, v) -> {
            if (k.startsWith(PROPERTY_PREFIX)) {
                out.put(k.substring(PROPERTY_PREFIX.length()), v);
            }
        });
        return sameOrder(out);
    }

    private static Map<String, String> sameOrder(Map<String, String> m) {
        Map<String, String> out = new LinkedHashMap<>();
        for (Key k : ORDER) {
            if (m.containsKey(k.name)) {
                out.put(k.name, m.get(k.name));
            }
        }
        m.forEach(out::putIfAbsent);
        return out;
    }

    private static Path checkpointPath(String checkpointUri, String relative) {
        return new Path(new Path(checkpointUri), relative);
    }

    private static FileSystem fs(SparkSession spark, Path p) throws IOException {
        return p.getFileSystem(spark.sparkContext().hadoopConfiguration());
    }

    static Map<String, String> checkpointSettings(SparkSession spark, String checkpointUri) {
        Path p = checkpointPath(checkpointUri, FILE);
        try {
            FileSystem fs = fs(spark, p);
            if (!fs.exists(p)) {
                return Map.of();
            }
            try (InputStream in = fs.open(p)) {
                return sameOrder(JSON.readValue(in, new TypeReference<Map<String, String>>() { }));
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read the query definition " + p + ": " + e.getMessage()
                    + "; if the file is damaged, delete it: the next start writes it again from the lakehouse's tables", e);
        }
    }

    private static void writeCheckpointFile(SparkSession spark, String checkpointUri, Map<String, String> settings) {
        Path p = checkpointPath(checkpointUri, FILE);
        Path tmp = checkpointPath(checkpointUri, "." + FILE + ".tmp");
        try {
            FileSystem fs = fs(spark, p);
            fs.mkdirs(p.getParent());
            try (OutputStream out = fs.create(tmp, true)) {
                out.write(JSON.writerWithDefaultPrettyPrinter().writeValueAsString(settings).getBytes(StandardCharsets.UTF_8));
            }
            fs.delete(p, false);
            if (!fs.rename(tmp, p)) {
                throw new IOException("rename " + tmp + " -> " + p + " failed");
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write the query definition " + p + ": " + e.getMessage(), e);
        }
    }
}
