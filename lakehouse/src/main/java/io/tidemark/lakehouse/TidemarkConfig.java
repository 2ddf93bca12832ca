package io.tidemark.lakehouse;

import java.io.IOException;
import java.io.Reader;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;

import io.tidemark.pipeline.Durations;
import io.tidemark.pipeline.Pipeline;
import io.tidemark.pipeline.PipelineException;
import io.tidemark.pipeline.PipelineParser;

/**
 * Tidemark's configuration: one immutable, validated value built at start-up.
 *
 * <p>Every key is declared once in {@link Key} with its default and documentation. Values are
 * resolved in this order, later winning: the defaults, the config file ({@code tidemark.properties}
 * in the working directory, or the file named by {@code TIDEMARK_CONFIG} / {@code --config}),
 * environment variables ({@code TIDEMARK_} + the key upper-cased with dots and dashes as
 * underscores, e.g. {@code TIDEMARK_STREAM_TRIGGER}), Spark's conf ({@code spark.tidemark.<key>}:
 * {@code spark-submit --conf} or {@code spark-defaults.conf}, which spark-submit hands the driver as
 * system properties), then command-line overrides. Spark's conf outranks the environment because it
 * is given per application at submit time, while the environment is shared by whatever runs there.
 *
 * <p>Keys starting with {@code kafka.option.} are passed to the Kafka clients unchanged (minus the
 * prefix), which is how security settings such as {@code security.protocol} reach the source.
 */
public final class TidemarkConfig {

    /** How a setting may change for an existing checkpoint and lakehouse. */
    public enum Scope {
        /** Part of the query definition ({@link QueryDefinition}): a restart with another value is refused. */
        QUERY("fixed for a checkpoint and lakehouse: a restart with another value is refused"),
        /**
         * May change between runs, but not while a batch is pending replay: the replay classifies the
         * records its first attempt did not commit, and must do so as that attempt did.
         */
        REPLAY("may change between runs, not while a batch is pending replay"),
        /** May change at any start. */
        RUN("");

        /** What the settings table and {@code --help} say of it. */
        public final String rule;

        Scope(String rule) {
            this.rule = rule;
        }
    }

    /** What a setting's value is: how it is read, checked and written in its canonical form. */
    public enum Type {
        TEXT("text"),
        /** Empty means "not set"; catalog.metastore's own syntax is checked by {@link TidemarkConfig#metastore()}. */
        METASTORE("directory or thrift://host:port"),
        /** Empty means none. */
        CLASS_NAMES("class names, comma-separated"),
        DURATION("duration > 0"),
        DURATION_OR_ZERO("duration, 0 allowed"),
        COUNT("whole number, 0 allowed"),
        POSITIVE("whole number > 0"),
        PORT("port 0-65535, 0 = none"),
        BOOLEAN("true or false"),
        WATERMARK_POLICY("spark or min-partition");

        /** The kind of value, as the settings table shows it. */
        public final String kind;

        Type(String kind) {
            this.kind = kind;
        }
    }

    /**
     * Every setting: its name, type, default, scope and meaning, declared once. Validation
     * ({@link TidemarkConfig#validate}), the query definition ({@link QueryDefinition}), {@code --help}
     * ({@link #describeKeys}) and the settings table of docs/commands.md ({@link #markdownTable},
     * held equal by a test) are derived from these. Docs are markdown: {@code `code`} and links,
     * which {@code --help} prints plain.
     */
    public enum Key {
        KAFKA_BOOTSTRAP("kafka.bootstrap-servers", Type.TEXT, "127.0.0.1:9092", Scope.RUN, "Kafka bootstrap servers"),
        PIPELINE("pipeline", Type.TEXT, "network", Scope.RUN, "the pipeline: the events and the KPIs over them, a shipped one by "
                + "name (`network`) or a pipeline file (`.sql`, see [pipelines.md](pipelines.md)); a file's event table sets `topic` and "
                + "`lateness`, and its `kpi_5m` `window`. Not set: the pipeline the lakehouse records (its stream's), else `network`"),
        TOPIC("topic", Type.TEXT, "network-events", Scope.QUERY, "the topic events arrive on"),
        LAKEHOUSE("lakehouse", Type.TEXT, "./data/lakehouse", Scope.RUN, "root of the Delta tables (any Hadoop-compatible path)"),
        CHECKPOINT("stream.checkpoint", Type.TEXT, "./data/checkpoints/stream", Scope.RUN, "checkpoint of the streaming query"),
        TRUSTED_LOG_STORES("storage.trusted-log-stores", Type.CLASS_NAMES, "", Scope.RUN, "Delta log stores (class names, comma-separated) "
                + "you vouch for as safe with several JVMs committing to one table on S3, accepted beside Tidemark's and Delta's "
                + "`S3DynamoDBLogStore`; any other store named for an S3 lakehouse is refused ([object-storage.md](object-storage.md))"),
        WINDOW("window", Type.DURATION, "5 minutes", Scope.QUERY, "KPI window (tumbling); must divide a day evenly"),
        LATENESS("lateness", Type.DURATION_OR_ZERO, "10 minutes", Scope.QUERY,
                "allowed lateness: the watermark trails the newest event time by this much"),
        WATERMARK_POLICY("watermark.policy", Type.WATERMARK_POLICY, "spark", Scope.QUERY, "how the watermark is taken over Kafka "
                + "partitions: `spark` (the newest event time over all partitions minus `lateness`, Spark's rule) or `min-partition` "
                + "(the oldest of the partitions' newest event times, over the partitions that are not idle, minus `lateness`) "
                + "([guarantees.md](guarantees.md#opt-in-the-watermark-of-the-slowest-partition))"),
        WATERMARK_IDLE_TIMEOUT("watermark.idle-timeout", Type.DURATION, "1 minute", Scope.REPLAY, "with `min-partition`: a partition "
                + "whose last valid record came in a batch that started this long before the current one stops holding the watermark "
                + "back until it has records again; measured on Spark's batch timestamps (processing time)"),
        CLOCK_SKEW("clock-skew", Type.DURATION_OR_ZERO, "5 minutes", Scope.REPLAY,
                "how far `event_ts` may be ahead of the Kafka record timestamp before the record is invalid"),
        MAX_EVENT_AGE("max-event-age", Type.DURATION, "365 days", Scope.REPLAY, "how far `event_ts` may be behind the Kafka record "
                + "timestamp before the record is invalid (`PAST_EVENT_TIME`); longer than lateness + window, at most 36500 days"),
        MAX_MESSAGE_BYTES("max-message-bytes", Type.POSITIVE, "65536", Scope.REPLAY, "larger messages go to `dead_letter` as `OVERSIZED`"),
        TRIGGER("stream.trigger", Type.DURATION_OR_ZERO, "10 seconds", Scope.RUN, "micro-batch interval; `0` runs micro-batches back to back"),
        STARTING_OFFSETS("stream.starting-offsets", Type.TEXT, "earliest", Scope.RUN,
                "where a new checkpoint starts reading: `earliest`, `latest` or Spark's JSON offsets"),
        MAX_OFFSETS_PER_TRIGGER("stream.max-offsets-per-trigger", Type.COUNT, "500000", Scope.RUN,
                "at most this many Kafka records per micro-batch (0 = unlimited)"),
        LEASE_TIMEOUT("stream.lease-timeout", Type.DURATION, "60 seconds", Scope.RUN, "one stream per lakehouse and checkpoint: a "
                + "running stream renews its lease 4 times per timeout, another start is refused while the lease lives; a stream that "
                + "died on this host is taken over at once, one on another host once its lease is this old; at least 4 seconds"),
        FAIL_ON_DATA_LOSS("stream.fail-on-data-loss", Type.BOOLEAN, "true", Scope.RUN, "stop when Kafka offsets the stream had not "
                + "read are gone (retention, deleteRecords, a topic deleted and recreated); `false` continues and records the gap in "
                + "`stream_gaps`"),
        METRICS_PORT("metrics.port", Type.PORT, "9464", Scope.RUN, "port of the running stream's Prometheus endpoint (`GET /metrics`); "
                + "`0` = no endpoint; a port in use stops the start, before any batch ([observability.md](observability.md))"),
        METRICS_HOST("metrics.host", Type.TEXT, "127.0.0.1", Scope.RUN,
                "address the endpoint binds to: loopback by default; `0.0.0.0` for a Prometheus on another host"),
        SPARK_MASTER("spark.master", Type.TEXT, "local[2]", Scope.RUN,
                "Spark master when the launcher starts Spark itself (`spark-submit` passes its own)"),
        SHUFFLE_PARTITIONS("spark.shuffle-partitions", Type.POSITIVE, "2", Scope.RUN, "`spark.sql.shuffle.partitions` for both jobs"),
        RECONCILE_RECENT_DAYS("reconcile.recent-days", Type.POSITIVE, "3", Scope.RUN, "closed days reconciled when no selection is given"),
        VACUUM_RETENTION("maintain.vacuum-retention", Type.DURATION, "7 days", Scope.RUN, "`tidemark maintain` vacuums files no table "
                + "version of the last this long needs; below 7 days (Delta's safety minimum) only with `--force`: a stream replaying "
                + "a batch, a reconcile or a query on an older version may still read them"),
        RETENTION_RAW_DAYS("retention.raw-days", Type.COUNT, "0", Scope.RUN, "`tidemark maintain` deletes `raw_events` days this many "
                + "days or more before the last closed day, once reconciled and clean; 0 keeps every day; such a day can no longer be "
                + "reconciled (see `expired_days`)"),
        RETENTION_LATE_DAYS("retention.late-days", Type.COUNT, "0", Scope.RUN,
                "the same for `late_events` (reconciled, clean days only); 0 keeps every day"),
        RETENTION_DEAD_LETTER_DAYS("retention.dead-letter-days", Type.COUNT, "0", Scope.RUN,
                "the same for `dead_letter`, by arrival date, closed days only; 0 keeps every day"),
        RETENTION_KPI_DAYS("retention.kpi-days", Type.COUNT, "0", Scope.RUN, "the same for every KPI table, only days whose raw events are "
                + "gone (else reconcile would rebuild them): needs `retention.raw-days`, at least as many days; 0 keeps every day"),
        CATALOG_METASTORE("catalog.metastore", Type.METASTORE, "", Scope.RUN, "Hive metastore `tidemark catalog` registers the tables "
                + "and views in: a directory (embedded Derby, `<dir>/metastore_db`, for one machine) or `thrift://host:port` (several "
                + "comma-separated); empty: Spark's own Hive configuration (`hive-site.xml`, `spark-defaults`). The jobs never use it "
                + "([A shared catalog](tables.md#a-shared-catalog))");

        public final String name;
        public final Type type;
        public final String defaultValue;
        public final Scope scope;
        /** What the setting means, in markdown; the scope's rule is added where it is shown. */
        public final String doc;

        Key(String name, Type type, String defaultValue, Scope scope, String doc) {
            this.name = name;
            this.type = type;
            this.defaultValue = defaultValue;
            this.scope = scope;
            this.doc = doc;
        }

        public String envVar() {
            return "TIDEMARK_" + name.toUpperCase(Locale.ROOT).replace('.', '_').replace('-', '_');
        }

        /** The doc and the scope's rule, in markdown. */
        public String meaning() {
            return scope.rule.isEmpty() ? doc : doc + "; " + scope.rule;
        }

        static Key byName(String name) {
            for (Key k : values()) {
                if (k.name.equals(name)) {
                    return k;
                }
            }
            return null;
        }
    }

    /** watermark.policy: how the event clock that the watermark trails is taken over Kafka partitions. */
    public enum WatermarkPolicy {
        /** The max over all partitions: Spark's rule. A lagging partition's records can be late in bulk. */
        SPARK("spark"),
        /** The min over the partitions that are not idle: no record is late for coming from a slower partition. */
        MIN_PARTITION("min-partition");

        /** The setting's value. */
        public final String setting;

        WatermarkPolicy(String setting) {
            this.setting = setting;
        }

        /** The policy a setting names (case and surrounding blanks aside). */
        public static WatermarkPolicy of(String setting) {
            String v = setting.trim().toLowerCase(Locale.ROOT);
            for (WatermarkPolicy p : values()) {
                if (p.setting.equals(v)) {
                    return p;
                }
            }
            throw new IllegalArgumentException("watermark.policy must be spark or min-partition; got '" + setting + "'");
        }
    }

    public static final String KAFKA_OPTION_PREFIX = "kafka.option.";
    public static final String DEFAULT_FILE = "tidemark.properties";
    /** Prefix of Tidemark's keys in Spark's conf: {@code --conf spark.tidemark.lakehouse=...}. */
    public static final String SPARK_CONF_PREFIX = "spark.tidemark.";

    private final Map<Key, String> values;
    private final Map<String, String> kafkaOptions;
    /** The pipeline file's definition when {@code pipeline} names one; null for the shipped default. */
    private final Pipeline pipeline;

    private TidemarkConfig(Map<Key, String> values, Map<String, String> kafkaOptions, Pipeline pipeline,
                           boolean pipelineNamed) {
        this.values = Collections.unmodifiableMap(values);
        this.kafkaOptions = Collections.unmodifiableMap(kafkaOptions);
        this.pipeline = pipeline;
        this.pipelineNamed = pipelineNamed;
        validate();
    }

    /**
     * The pipeline the jobs run with: the one the {@code pipeline} setting names, or by default the shipped
     * network pipeline with the settings {@code topic}, {@code window} and {@code lateness} applied, which
     * predate pipeline files and keep meaning what they did (their defaults are the file's values).
     */
    public Pipeline pipeline() {
        return pipeline != null ? pipeline
                : PipelineParser.shipped(PipelineParser.DEFAULT)
                        .withSettings(topic(), lateness(), window());
    }

    /**
     * The pipeline {@code pipeline} names when it is not the shipped default, as read when this
     * configuration was built; empty for the default ({@link #pipeline} builds it with the settings).
     */
    public Optional<Pipeline> pipelineFile() {
        return Optional.ofNullable(pipeline);
    }

    /** Defaults only: what the demo and the tests start from. */
    public static TidemarkConfig defaults() {
        return builder().build();
    }

    /**
     * Defaults, then the config file, then the environment, then Spark's conf as this JVM's system
     * properties ({@code spark.tidemark.*}); call {@link Builder#set} for flags.
     */
    public static Builder load(Path explicitFile, Map<String, String> env) {
        Map<String, String> sparkConf = new TreeMap<>();
        Properties system = System.getProperties();
        for (String name : system.stringPropertyNames()) {
            if (name.startsWith(SPARK_CONF_PREFIX)) {
                sparkConf.put(name, system.getProperty(name));
            }
        }
        return load(explicitFile, env, sparkConf);
    }

    /** As {@link #load(Path, Map)}, with Spark's conf given ({@code spark.tidemark.*} entries; others are ignored). */
    public static Builder load(Path explicitFile, Map<String, String> env, Map<String, String> sparkConf) {
        Builder b = builder();
        Path file = explicitFile;
        if (file == null && env.get("TIDEMARK_CONFIG") != null) {
            file = Path.of(env.get("TIDEMARK_CONFIG"));
        }
        if (file == null && Files.isRegularFile(Path.of(DEFAULT_FILE))) {
            file = Path.of(DEFAULT_FILE);
        }
        if (file != null) {
            if (!Files.isRegularFile(file)) {
                throw new IllegalArgumentException("config file " + file + " does not exist");
            }
            Properties p = new Properties();
            try (Reader r = Files.newBufferedReader(file)) {
                p.load(r);
            } catch (IOException e) {
                throw new IllegalArgumentException("cannot read config file " + file + ": " + e.getMessage(), e);
            }
            for (String name : p.stringPropertyNames()) {
                b.set(name, p.getProperty(name).trim());
            }
        }
        for (Key k : Key.values()) {
            String v = env.get(k.envVar());
            if (v != null && !v.isBlank()) {
                b.set(k.name, v.trim());
            }
        }
        new TreeMap<>(sparkConf).forEach((name, value) -> {
            if (!name.startsWith(SPARK_CONF_PREFIX)) {
                return;
            }
            try {
                b.set(name.substring(SPARK_CONF_PREFIX.length()), value.trim());
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException("Spark conf " + name + ": " + e.getMessage(), e);
            }
        });
        return b;
    }

    public static Builder builder() {
        return new Builder();
    }

    public Builder toBuilder() {
        Builder b = new Builder();
        b.values.putAll(values);
        b.kafkaOptions.putAll(kafkaOptions);
        b.pipelineNamed = pipelineNamed;
        if (pipeline != null) {
            // the pipeline's own values are not the user's: a pipeline named afterwards sets them again
            PIPELINE_SETS.forEach(k -> b.values.put(k, k.defaultValue));
        }
        return b;
    }

    /** Whether {@code pipeline} was set (by a flag, the file, the environment...), not left at its default. */
    private final boolean pipelineNamed;

    /** The settings a pipeline file decides (its event table's topic and lateness, its kpi_5m's window). */
    private static final List<Key> PIPELINE_SETS = List.of(Key.TOPIC, Key.LATENESS, Key.WINDOW);

    public static final class Builder {
        private final Map<Key, String> values = new LinkedHashMap<>();
        private final Map<String, String> kafkaOptions = new LinkedHashMap<>();
        private boolean pipelineNamed;

        private Builder() {
            for (Key k : Key.values()) {
                values.put(k, k.defaultValue);
            }
        }

        /** Sets a key by its dotted name; unknown keys are an error, not silently ignored. */
        public Builder set(String name, String value) {
            if (name.startsWith(KAFKA_OPTION_PREFIX)) {
                kafkaOptions.put(name.substring(KAFKA_OPTION_PREFIX.length()), value);
                return this;
            }
            Key k = Key.byName(name);
            if (k == null) {
                throw new IllegalArgumentException("unknown setting '" + name + "'; known settings: "
                        + String.join(", ", Arrays.stream(Key.values()).map(x -> x.name).toList())
                        + ", or " + KAFKA_OPTION_PREFIX + "<kafka client property>");
            }
            return set(k, value);
        }

        public Builder set(Key key, String value) {
            if (value != null) {
                values.put(key, value);
                pipelineNamed |= key == Key.PIPELINE;
            }
            return this;
        }

        /**
         * As {@link #build()}, but when no {@code pipeline} was set, the pipeline the lakehouse records
         * ({@link RecordedPipeline}: the one its stream runs) instead of the shipped default. What the
         * commands and jobs build their settings with: a lakehouse's own definition needs no flag.
         */
        public TidemarkConfig buildForLakehouse() {
            TidemarkConfig config = build();
            if (pipelineNamed) {
                return config;
            }
            String recorded = RecordedPipeline.location(config.lakehouseUri());
            return RecordedPipeline.exists(recorded) ? config.toBuilder().set(Key.PIPELINE, recorded).build() : config;
        }

        public TidemarkConfig build() {
            Map<Key, String> v = new LinkedHashMap<>(values);
            Pipeline p = null;
            String named = v.get(Key.PIPELINE).trim();
            if (!named.equals(PipelineParser.DEFAULT)) {
                p = readPipeline(named);
                Map<Key, String[]> fromFile = new LinkedHashMap<>();
                fromFile.put(Key.TOPIC, new String[] {p.events().topic(), "its event table's option topic"});
                fromFile.put(Key.LATENESS, new String[] {p.events().lateness().toString(), "its event table's option lateness"});
                p.table(Pipeline.WINDOW_SETTING_TABLE).ifPresent(t ->
                        fromFile.put(Key.WINDOW, new String[] {t.window().size().toString(), "the window of its table " + Pipeline.WINDOW_SETTING_TABLE}));
                for (Map.Entry<Key, String[]> e : fromFile.entrySet()) {
                    Key k = e.getKey();
                    String mine = v.get(k);
                    if (!mine.equals(k.defaultValue) && !sameValue(k, mine, e.getValue()[0])) {
                        throw new IllegalArgumentException("setting " + k.name + " = '" + mine + "' contradicts the pipeline " + p.file() + ", where "
                                + e.getValue()[1] + " says '" + e.getValue()[0] + "': a pipeline file decides " + k.name + "; remove the setting, "
                                + "or change the file");
                    }
                    v.put(k, e.getValue()[0]);
                }
            }
            return new TidemarkConfig(v, new LinkedHashMap<>(kafkaOptions), p, pipelineNamed);
        }

        private static boolean sameValue(Key k, String a, String b) {
            try {
                return k.type == Type.TEXT ? a.equals(b) : Durations.parse(a).equals(Durations.parse(b));
            } catch (RuntimeException notADuration) {
                return false;
            }
        }

        /** The pipeline a {@code pipeline} setting names: a shipped one by name, else a file. */
        private static Pipeline readPipeline(String named) {
            try {
                if (named.matches("[a-z][a-z0-9_-]*")) {
                    return PipelineParser.shipped(named);
                }
                if (named.contains("://")) {
                    return PipelineParser.parse(named, RecordedPipeline.readText(named));
                }
                Path file = Path.of(named);
                if (!Files.isRegularFile(file)) {
                    throw new IllegalArgumentException("setting pipeline = '" + named + "': no such file (give a pipeline file, or the name of a "
                            + "shipped pipeline: " + PipelineParser.DEFAULT + ")");
                }
                return PipelineParser.parse(file);
            } catch (PipelineException | UncheckedIOException e) {
                throw new IllegalArgumentException("pipeline " + e.getMessage(), e);
            }
        }
    }

    private void validate() {
        for (Key k : Key.values()) {
            canonical(k);
        }
        Duration w = window();
        if (Duration.ofDays(1).toMillis() % w.toMillis() != 0) {
            throw new IllegalArgumentException("window must divide a day evenly so windows never straddle midnight; got " + get(Key.WINDOW));
        }
        int raw = retentionDays(Lakehouse.Table.RAW_EVENTS);
        int kpi = (int) Math.min(36_500, count(Key.RETENTION_KPI_DAYS));
        if (kpi > 0 && (raw == 0 || kpi < raw)) {
            throw new IllegalArgumentException("retention.kpi-days (" + kpi + ") needs retention.raw-days set and at most as large (it is "
                    + raw + "): KPI rows are only deleted for days whose raw events are gone, or reconcile would rebuild them");
        }
        trigger();
        for (Lakehouse.Table t : Lakehouse.Table.OWN) {
            retentionDays(t);
        }
        if (leaseTimeout().compareTo(Duration.ofSeconds(4)) < 0) {
            throw new IllegalArgumentException("stream.lease-timeout must be at least 4 seconds; got " + get(Key.LEASE_TIMEOUT));
        }
        if (lateness().isNegative()) {
            throw new IllegalArgumentException("lateness must not be negative; got " + get(Key.LATENESS));
        }
        if (maxEventAge().compareTo(lateness().plus(w)) <= 0 || maxEventAge().compareTo(Duration.ofDays(36_500)) > 0) {
            throw new IllegalArgumentException("max-event-age must be longer than lateness + window and at most 36500 days; got "
                    + get(Key.MAX_EVENT_AGE));
        }
    }

    public String get(Key key) {
        return values.get(key);
    }

    /**
     * The value of {@code k} checked against its type and written in its canonical form: durations
     * in ISO-8601 (so "5 minutes" and "5m" agree), numbers plain, the policy by its name, text as given.
     */
    public String canonical(Key k) {
        return switch (k.type) {
            case TEXT -> {
                if (get(k).isBlank()) {
                    throw new IllegalArgumentException(k.name + " must not be empty");
                }
                yield get(k);
            }
            case CLASS_NAMES -> String.join(",", classNames(k));
            case METASTORE -> {
                metastore();
                yield get(k).trim();
            }
            case DURATION, DURATION_OR_ZERO -> duration(k).toString();
            case COUNT, POSITIVE -> Long.toString(count(k));
            case PORT -> Integer.toString(metricsPort());
            case BOOLEAN -> Boolean.toString(bool(k));
            case WATERMARK_POLICY -> watermarkPolicy().setting;
        };
    }

    public Map<String, String> kafkaOptions() {
        return kafkaOptions;
    }

    public String bootstrapServers() { return get(Key.KAFKA_BOOTSTRAP); }
    public String topic() { return get(Key.TOPIC); }
    public Path lakehouse() { return Path.of(get(Key.LAKEHOUSE)).toAbsolutePath().normalize(); }
    /** The log stores named in {@code storage.trusted-log-stores}. */
    public Set<String> trustedLogStores() {
        return Set.copyOf(classNames(Key.TRUSTED_LOG_STORES));
    }

    /** A setting of type CLASS_NAMES as its names, each checked to be a Java class name. */
    private List<String> classNames(Key k) {
        List<String> names = Arrays.stream(get(k).split(",")).map(String::trim).filter(v -> !v.isEmpty()).toList();
        for (String n : names) {
            if (!n.matches("[\\p{L}_$][\\p{L}\\p{N}_$]*(\\.[\\p{L}_$][\\p{L}\\p{N}_$]*)*")) {
                throw new IllegalArgumentException(k.name + ": '" + n + "' is not a Java class name (write e.g. com.example.MyLogStore)");
            }
        }
        return names;
    }

    public String lakehouseUri() {
        String v = get(Key.LAKEHOUSE);
        return v.contains("://") ? v : lakehouse().toString();
    }
    public String checkpointUri() {
        String v = get(Key.CHECKPOINT);
        return v.contains("://") ? v : Path.of(v).toAbsolutePath().normalize().toString();
    }
    public Duration window() { return duration(Key.WINDOW); }
    public Duration lateness() { return duration(Key.LATENESS); }
    public Duration clockSkew() { return duration(Key.CLOCK_SKEW); }
    public Duration watermarkIdleTimeout() { return duration(Key.WATERMARK_IDLE_TIMEOUT); }
    public WatermarkPolicy watermarkPolicy() { return WatermarkPolicy.of(get(Key.WATERMARK_POLICY)); }
    public Duration maxEventAge() { return duration(Key.MAX_EVENT_AGE); }
    public Duration trigger() { return duration(Key.TRIGGER); }
    public Duration leaseTimeout() { return duration(Key.LEASE_TIMEOUT); }
    public Duration vacuumRetention() { return duration(Key.VACUUM_RETENTION); }
    public int maxMessageBytes() { return (int) count(Key.MAX_MESSAGE_BYTES); }
    public long maxOffsetsPerTrigger() { return count(Key.MAX_OFFSETS_PER_TRIGGER); }
    public String startingOffsets() { return get(Key.STARTING_OFFSETS); }
    public boolean failOnDataLoss() { return bool(Key.FAIL_ON_DATA_LOSS); }
    public String sparkMaster() { return get(Key.SPARK_MASTER); }
    public String metricsHost() { return get(Key.METRICS_HOST); }

    /** Where {@code tidemark catalog} registers the tables: none (Spark's own configuration), a Derby directory, or thrift URIs. */
    public sealed interface Metastore permits SparkDefault, DerbyDirectory, ThriftUris {
    }

    /** catalog.metastore is empty: whatever Spark's configuration (hive-site.xml, spark-defaults) says. */
    public record SparkDefault() implements Metastore {
    }

    /** An embedded Derby metastore in {@code dir} (its database is {@code dir/metastore_db}). */
    public record DerbyDirectory(Path dir) implements Metastore {
    }

    /** A metastore service, as Hive's {@code hive.metastore.uris} (comma-separated {@code thrift://host:port}). */
    public record ThriftUris(String uris) implements Metastore {
    }

    public Metastore metastore() {
        String v = get(Key.CATALOG_METASTORE).trim();
        if (v.isEmpty()) {
            return new SparkDefault();
        }
        if (v.contains("://")) {
            List<String> uris = new ArrayList<>();
            for (String part : v.split(",")) {
                String u = part.trim();
                URI uri;
                try {
                    uri = new URI(u);
                } catch (URISyntaxException e) {
                    uri = null;
                }
                if (uri == null || !"thrift".equalsIgnoreCase(uri.getScheme()) || uri.getHost() == null || uri.getPort() < 1
                        || uri.getPort() > 65_535 || (uri.getPath() != null && !uri.getPath().isEmpty())) {
                    throw new IllegalArgumentException("setting " + Key.CATALOG_METASTORE.name + " = '" + v + "': '" + u
                            + "' is not thrift://host:port (a metastore URI), and a Derby metastore needs a local directory, not a URL");
                }
                uris.add(u);
            }
            return new ThriftUris(String.join(",", uris));
        }
        if (v.contains(";") || v.contains(":")) {
            // ';' and ':' would change the meaning of Derby's JDBC URL (jdbc:derby:;databaseName=...;create=true).
            throw new IllegalArgumentException("setting " + Key.CATALOG_METASTORE.name + " = '" + v
                    + "': a Derby metastore directory must not contain ';' or ':'; a metastore service is thrift://host:port");
        }
        return new DerbyDirectory(Path.of(v).toAbsolutePath().normalize());
    }

    /** The metrics endpoint's port; 0 = none. */
    public int metricsPort() {
        long p = count(Key.METRICS_PORT);
        if (p > 65_535) {
            throw new IllegalArgumentException("setting " + Key.METRICS_PORT.name + " = " + p + " is not a port (0-65535; 0 = no endpoint)");
        }
        return (int) p;
    }
    public int shufflePartitions() { return (int) count(Key.SHUFFLE_PARTITIONS); }
    public int reconcileRecentDays() { return (int) count(Key.RECONCILE_RECENT_DAYS); }

    /** Days of a table that {@code tidemark maintain} keeps before the last closed day; 0 = every day. */
    public int retentionDays(Lakehouse.Table table) {
        Key k = table.isKpi() ? Key.RETENTION_KPI_DAYS
                : table.equals(Lakehouse.Table.RAW_EVENTS) ? Key.RETENTION_RAW_DAYS
                : table.equals(Lakehouse.Table.LATE_EVENTS) ? Key.RETENTION_LATE_DAYS
                : table.equals(Lakehouse.Table.DEAD_LETTER) ? Key.RETENTION_DEAD_LETTER_DAYS
                : null;
        return k == null ? 0 : (int) Math.min(36_500, count(k));
    }

    private Duration duration(Key k) {
        try {
            Duration d = Durations.parse(get(k));
            if (d.isNegative() || (d.isZero() && k.type != Type.DURATION_OR_ZERO)) {
                throw new IllegalArgumentException("must be positive");
            }
            return d;
        } catch (RuntimeException e) {
            throw new IllegalArgumentException("setting " + k.name + " = '" + get(k) + "': " + e.getMessage(), e);
        }
    }

    /** A whole-number setting: at least 0 ({@link Type#COUNT}, {@link Type#PORT}) or 1 ({@link Type#POSITIVE}). */
    private long count(Key k) {
        boolean zeroAllowed = k.type != Type.POSITIVE;
        long v;
        try {
            v = Long.parseLong(get(k).trim());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("setting " + k.name + " = '" + get(k) + "' is not a whole number");
        }
        if (v < 0 || (v == 0 && !zeroAllowed)) {
            throw new IllegalArgumentException("setting " + k.name + " = " + v + " must be " + (zeroAllowed ? "≥ 0" : "> 0"));
        }
        return v;
    }

    private boolean bool(Key k) {
        String v = get(k).trim().toLowerCase(Locale.ROOT);
        if (!v.equals("true") && !v.equals("false")) {
            throw new IllegalArgumentException("setting " + k.name + " = '" + get(k) + "' must be true or false");
        }
        return Boolean.parseBoolean(v);
    }

    /** Every key, its default and meaning, for {@code --help}: the declarations of {@link Key}, plain text. */
    public static String describeKeys() {
        StringBuilder sb = new StringBuilder();
        for (Key k : Key.values()) {
            sb.append(String.format("  %-32s %-22s %s%n", k.name, k.defaultValue, plain(k.meaning())));
        }
        sb.append(String.format("  %-32s %-22s %s%n", KAFKA_OPTION_PREFIX + "<name>", "", plain(KAFKA_OPTION_DOC)));
        return sb.toString();
    }

    /** The settings table of docs/commands.md: the declarations of {@link Key} (a test holds the two equal). */
    public static String markdownTable() {
        StringBuilder sb = new StringBuilder("| key | default | kind | meaning |\n|---|---|---|---|\n");
        for (Key k : Key.values()) {
            sb.append("| `").append(k.name).append("` | ").append(k.defaultValue.isEmpty() ? "(empty)" : "`" + k.defaultValue + "`")
                    .append(" | ").append(k.type.kind).append(" | ").append(k.meaning()).append(" |\n");
        }
        sb.append("| `").append(KAFKA_OPTION_PREFIX).append("<name>` | | | ").append(KAFKA_OPTION_DOC).append(" |\n");
        return sb.toString();
    }

    private static final String KAFKA_OPTION_DOC = "passed to the Kafka clients unchanged, e.g. `kafka.option.security.protocol=SSL`";

    /** Markdown as plain text: links keep their text, code loses its backticks. */
    private static String plain(String markdown) {
        return markdown.replaceAll("\\[([^\\]]*)\\]\\([^)]*\\)", "$1").replace("`", "");
    }

    @Override
    public String toString() {
        return "TidemarkConfig" + values;
    }
}
