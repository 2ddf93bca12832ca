package io.tidemark.output;

import static org.apache.spark.sql.functions.col;
import static org.apache.spark.sql.functions.lit;
import static org.apache.spark.sql.functions.struct;
import static org.apache.spark.sql.functions.to_json;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.sql.Date;
import java.time.Duration;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import org.apache.avro.Schema;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.config.TopicConfig;
import org.apache.kafka.common.errors.InvalidProducerEpochException;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.spark.sql.Column;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import io.tidemark.lakehouse.Errors;
import io.tidemark.lakehouse.Lakehouse;
import io.tidemark.lakehouse.Lakehouse.Table;
import io.tidemark.lakehouse.RequestRefusedException;
import io.tidemark.lakehouse.SchemaRegistry;
import io.tidemark.pipeline.Measure;
import io.tidemark.pipeline.Pipeline;

/**
 * Publishes one KPI table's committed changes to its Kafka output topic.
 *
 * <p>The outbox is the table's own Delta change data feed: what is published is read from commits,
 * so nothing that did not commit is published. How far publishing has come is a record in the
 * progress topic (key: lakehouse, table and output topic; value: the last Delta version published); each round
 * reads the feed from the next version to the newest and publishes what {@link KpiChanges} decides,
 * then the new progress. A table's first publication is its rows at its newest version, day by day,
 * each day's round recording the day it reached ({@link Progress}), so an interrupted one resumes. With exactly-once, a round is one Kafka transaction holding both, under a
 * {@code transactional.id} stable per lakehouse and table: a round killed midway is aborted, and
 * whoever publishes next (the restarted stream, a reconcile) first fences any other writer and then
 * reads the committed progress, so a read_committed consumer sees each (key, version) once. Without
 * it, the records are flushed before the progress is written: a crash in between publishes those
 * versions again, which a consumer keeping the highest version per key absorbs.
 *
 * <p>Record: key {@code {"table":...,"window_start":...,<dimensions>}} (JSON, fields in that order,
 * so a key is the same bytes every time and compaction keeps its newest record); value the row's
 * window, dimensions, measures, {@code is_final}, {@code source} and {@code version} (the Delta
 * commit that made it); header {@code tidemark-version}. A row that no longer exists is a tombstone
 * (null value) with the version in the header.
 */
public final class KpiPublisher implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(KpiPublisher.class);
    /** The header every record carries: its version, in decimal. */
    public static final String VERSION_HEADER = "tidemark-version";
    /** At most this many Delta versions per round (one transaction with exactly-once). */
    static final int VERSIONS_PER_ROUND = 50;
    private static final Map<String, String> JSON = Map.of("timestampFormat", "yyyy-MM-dd'T'HH:mm:ss.SSSXXX", "timeZone", "UTC",
            "ignoreNullFields", "false");

    private final Lakehouse lakehouse;
    private final Pipeline.KpiTable table;
    private final Pipeline.KafkaOutput output;
    private final Table delta;
    private final Map<String, Object> clientSettings;
    private final String progressKey;
    private KafkaProducer<byte[], byte[]> producer;
    /** With {@code output.kafka.format = 'avro'}: the key's and the value's schema and registry id, once registered. */
    private AvroRecords avroKey;
    private AvroRecords avroValue;
    /** How far publishing has come, as this publisher knows it; null until read from the progress topic. */
    private Progress progress;
    /** For the lag: the newest table version a round saw, and the last version known published (kept across failures); -1 = not yet. */
    private volatile long latestSeen = -1;
    private volatile long confirmed = -1;
    /** The table keeps its change data feed (the stream turns it on at start). */
    private boolean feedKept;

    public KpiPublisher(Lakehouse lakehouse, Pipeline.KpiTable table, String defaultBootstrapServers) {
        this.lakehouse = lakehouse;
        this.table = table;
        this.output = table.kafkaOutput().orElseThrow(() -> new IllegalArgumentException(table.name() + " has no Kafka output"));
        this.delta = Table.kpi(table.name());
        this.clientSettings = new HashMap<>();
        clientSettings.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, defaultBootstrapServers);
        clientSettings.putAll(output.producerOptions());
        // Per output topic too: a table pointed at a new topic publishes it whole (a first round's snapshot), not from where the old one stood.
        this.progressKey = lakehouse.root() + "#" + table.name() + "#" + output.topic();
    }

    /** The table it publishes. */
    public Pipeline.KpiTable table() {
        return table;
    }

    /** The producer's {@code transactional.id} with exactly-once: one per lakehouse and table, the same in every process. */
    String transactionalId() {
        Object given = output.producerOptions().get(ProducerConfig.TRANSACTIONAL_ID_CONFIG);
        return given != null ? given.toString()
                : "tidemark-" + table.name() + "-" + Integer.toHexString(lakehouse.root().hashCode());
    }

    /**
     * Creates the output topic (compacted) and the progress topic when missing; refuses an output
     * topic that exists without compaction, where a consumer could not rebuild the table from it.
     */
    public void prepareTopics() {
        if (output.format() == Pipeline.KafkaOutput.Format.AVRO) {
            // Down or mistyped at start is an error; down later makes the publishing rounds wait and retry.
            new SchemaRegistry(output.schemaRegistry(), Duration.ofSeconds(30)).unreachable().ifPresent(why -> {
                throw new RequestRefusedException(why + ": start the registry, or correct 'output.kafka.schema-registry' of " + table.name());
            });
        }
        try (Admin admin = Admin.create(adminSettings())) {
            create(admin, output.topic());
            create(admin, output.progressTopic());
            for (String topic : List.of(output.topic(), output.progressTopic())) {
                ConfigResource r = new ConfigResource(ConfigResource.Type.TOPIC, topic);
                Config c = admin.describeConfigs(List.of(r)).all().get(30, TimeUnit.SECONDS).get(r);
                String policy = c.get(TopicConfig.CLEANUP_POLICY_CONFIG).value();
                if (!policy.contains(TopicConfig.CLEANUP_POLICY_COMPACT)) {
                    throw new RequestRefusedException("the Kafka topic " + topic + " of " + table.name() + "'s output has cleanup.policy="
                            + policy + ": a consumer rebuilds the table only from a compacted topic. Set cleanup.policy=compact on it, "
                            + "or name another topic in " + table.name() + "'s TBLPROPERTIES");
                }
            }
        } catch (ExecutionException | TimeoutException e) {
            throw new RequestRefusedException("cannot prepare the Kafka output topic " + output.topic() + " of " + table.name() + " on "
                    + clientSettings.get(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG) + ": " + cause(e));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    private static void create(Admin admin, String topic) throws ExecutionException, TimeoutException, InterruptedException {
        try {
            admin.createTopics(List.of(new NewTopic(topic, Optional.empty(), Optional.empty())
                    .configs(Map.of(TopicConfig.CLEANUP_POLICY_CONFIG, TopicConfig.CLEANUP_POLICY_COMPACT)))).all().get(30, TimeUnit.SECONDS);
        } catch (ExecutionException e) {
            if (!(e.getCause() instanceof TopicExistsException)) {
                throw e;
            }
        }
    }

    /**
     * Publishes every version committed since the last one published, in rounds of at most
     * {@link #VERSIONS_PER_ROUND}. Returns the versions published. A table that does not keep its change
     * data feed yet (the stream turns it on at start) publishes nothing.
     */
    public long publishPending(SparkSession spark) {
        if (!feedKept) {
            // Asked until it is on (DESCRIBE DETAIL reads the table's state: not once per batch); nobody turns it off.
            feedKept = "true".equals(lakehouse.properties(spark, delta).get("delta.enableChangeDataFeed"));
            if (!feedKept) {
                LOG.debug("{} does not keep its change data feed yet: nothing published", table.name());
                return 0;
            }
        }
        long total = 0;
        long latest = lakehouse.version(spark, delta);
        latestSeen = latest;
        try {
            open();
            if (progress == null) {
                progress = readProgress().orElse(null);
                if (progress != null && progress.complete()) {
                    confirmed = progress.version();
                }
            }
            if (progress == null || !progress.complete()) {
                snapshot(spark, progress == null ? new Progress(latest, null) : progress);
                total++;
            }
            while (progress.version() < latest) {
                long from = progress.version();
                long to = Math.min(latest, from + VERSIONS_PER_ROUND);
                round(changes(spark, from + 1, to), new Progress(to, null));
                total += to - from;
            }
            return total;
        } catch (ProducerFencedException | InvalidProducerEpochException fenced) {
            // Another process publishes this table now (a reconcile, a restarted stream): it read the committed progress after
            // fencing this producer. The next round here starts over the same way.
            LOG.info("publishing {} was taken over by another writer; this one starts over on its next round", table.name());
            reset();
            return total;
        } catch (RuntimeException e) {
            reset();
            throw e;
        }
    }

    /**
     * The publish lag as of the last round, without reading anything: the newest version that round saw
     * minus the last one known published; empty before both are known.
     */
    public Optional<Long> lastLag() {
        long latest = latestSeen;
        long done = confirmed;
        return latest < 0 || done < 0 ? Optional.empty() : Optional.of(Math.max(0, latest - done));
    }

    /** The last version published whole, as last read or written here. */
    public Optional<Long> published() {
        return Optional.ofNullable(progress).filter(Progress::complete).map(Progress::version);
    }

    /**
     * How far publishing has come: every version through {@code version}; or, while the first
     * publication of a table (its rows at {@code version}, day by day) is under way, its days through
     * {@code snapshotThrough}. The value of the progress record: {@code "12"}, or {@code "12 2026-12-01"}.
     */
    record Progress(long version, LocalDate snapshotThrough) {
        boolean complete() {
            return snapshotThrough == null;
        }

        String encode() {
            return complete() ? Long.toString(version) : version + " " + snapshotThrough;
        }

        static Progress decode(String value) {
            String[] parts = value.trim().split(" ");
            return new Progress(Long.parseLong(parts[0]), parts.length > 1 ? LocalDate.parse(parts[1]) : null);
        }
    }

    /**
     * The first publication of the table, or the rest of one a crash interrupted: its rows at the
     * progress's version, one round per day (a day's rows fit in memory, a table's might not), each
     * recording the day it reached, the last one the version as published whole.
     */
    private void snapshot(SparkSession spark, Progress from) {
        List<LocalDate> days = new ArrayList<>();
        for (Row r : lakehouse.readAt(spark, delta, from.version()).select("event_date").distinct().collectAsList()) {
            LocalDate d = r.getDate(0).toLocalDate();
            if (from.complete() || d.isAfter(from.snapshotThrough())) {
                days.add(d);
            }
        }
        Collections.sort(days);
        if (days.isEmpty()) {
            round(List.of(), new Progress(from.version(), null));
        }
        for (int i = 0; i < days.size(); i++) {
            Dataset<Row> day = lakehouse.readAt(spark, delta, from.version()).where(col("event_date").equalTo(lit(Date.valueOf(days.get(i)))));
            round(project(day, lit(from.version()), lit("insert")), new Progress(from.version(), i == days.size() - 1 ? null : days.get(i)));
        }
    }

    /** One round: the records of {@code changes}, then the progress {@code next}; one transaction with exactly-once. */
    private void round(List<KpiChanges.Change> changes, Progress next) {
        List<KpiChanges.Publication> records = KpiChanges.publications(changes, output.mode());
        List<Future<RecordMetadata>> sent = new ArrayList<>(records.size() + 1);
        if (output.exactlyOnce()) {
            producer.beginTransaction();
        }
        try {
            for (KpiChanges.Publication p : records) {
                sent.add(producer.send(p.wire() == null ? record(output.topic(), p.key(), p.value(), p.version())
                        : record(output.topic(), p.wire().key(), p.wire().value(), p.version())));
            }
            if (!output.exactlyOnce()) {
                // The records before the progress that covers them: a crash in between publishes them again, never loses them.
                producer.flush();
                check(sent);
                sent.clear();
            }
            sent.add(producer.send(record(output.progressTopic(), progressKey, next.encode(), next.version())));
            if (output.exactlyOnce()) {
                producer.commitTransaction();
            } else {
                producer.flush();
            }
            check(sent);
        } catch (ProducerFencedException | InvalidProducerEpochException fenced) {
            throw fenced;
        } catch (RuntimeException e) {
            if (output.exactlyOnce()) {
                try {
                    producer.abortTransaction();
                } catch (RuntimeException ignored) {
                    // the producer is closed by reset(); the transaction times out or is aborted by the next initTransactions
                }
            }
            throw e;
        }
        LOG.debug("{}: published {} record(s), progress {}", table.name(), records.size(), next.encode());
        progress = next;
        if (next.complete()) {
            confirmed = next.version();
        }
    }

    private static void check(List<Future<RecordMetadata>> sent) {
        for (Future<RecordMetadata> f : sent) {
            try {
                f.get();
            } catch (ExecutionException e) {
                throw e.getCause() instanceof KafkaException k ? k : new KafkaException(e.getCause());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new KafkaException(e);
            }
        }
    }

    private static ProducerRecord<byte[], byte[]> record(String topic, String key, String value, long version) {
        return record(topic, key.getBytes(StandardCharsets.UTF_8), value == null ? null : value.getBytes(StandardCharsets.UTF_8), version);
    }

    private static ProducerRecord<byte[], byte[]> record(String topic, byte[] key, byte[] value, long version) {
        ProducerRecord<byte[], byte[]> r = new ProducerRecord<>(topic, key, value);
        r.headers().add(new RecordHeader(VERSION_HEADER, Long.toString(version).getBytes(StandardCharsets.UTF_8)));
        return r;
    }

    /** The table's changes in versions {@code from..to}, projected as published. */
    private List<KpiChanges.Change> changes(SparkSession spark, long from, long to) {
        return project(lakehouse.changes(spark, delta, from, to), col("_commit_version"), col("_change_type"));
    }

    private List<KpiChanges.Change> project(Dataset<Row> rows, Column version, Column type) {
        List<Column> key = new ArrayList<>(List.of(lit(table.name()).as("table"), col("window_start")));
        table.dimensions().forEach(d -> key.add(col(d.name())));
        List<Column> content = new ArrayList<>(key);
        content.add(2, col("window_end"));
        for (Measure m : table.measures()) {
            content.add(col(m.name()));
        }
        content.add(col("is_final"));
        content.add(col("source"));
        List<Column> selected = new ArrayList<>(List.of(version.cast("long").as("v"), type.as("t"),
                to_json(struct(key.toArray(Column[]::new)), JSON).as("k"), to_json(struct(content.toArray(Column[]::new)), JSON).as("c"),
                col("is_final")));
        boolean avro = output.format() == Pipeline.KafkaOutput.Format.AVRO;
        if (avro) {
            List<Column> value = new ArrayList<>(content);
            value.add(version.cast("long").as("version"));
            selected.add(struct(key.toArray(Column[]::new)).as("ks"));
            selected.add(struct(value.toArray(Column[]::new)).as("vs"));
        }
        Dataset<Row> projected = rows.select(selected.toArray(Column[]::new));
        if (avro) {
            registerSchemas(projected);
        }
        List<KpiChanges.Change> out = new ArrayList<>();
        for (Row r : projected.collectAsList()) {
            KpiChanges.Wire wire = avro ? new KpiChanges.Wire(avroKey.encode(r.getStruct(5)), avroValue.encode(r.getStruct(6))) : null;
            out.add(new KpiChanges.Change(r.getLong(0), r.getString(1), r.getString(2), r.getString(3), r.getBoolean(4), wire));
        }
        return out;
    }

    /**
     * The Avro output's key and value schemas, made from the published structs and registered under
     * {@code <topic>-key} and {@code <topic>-value} (Confluent's TopicNameStrategy), once per publisher:
     * a registry that does not answer fails the round, which the next one retries.
     */
    private void registerSchemas(Dataset<Row> projected) {
        if (avroKey != null) {
            return;
        }
        StructType s = projected.schema();
        Schema keySchema = AvroRecords.schemaOf((StructType) s.apply("ks").dataType(), table.name() + "_key");
        // The version is never null, whether it comes from the change data feed (a nullable column) or a first publication's
        // constant: one schema for both, so every publisher registers the same one.
        StructType value = new StructType(Arrays.stream(
                ((StructType) s.apply("vs").dataType()).fields())
                .map(f -> f.name().equals("version") ? new StructField(f.name(), f.dataType(), false, f.metadata()) : f)
                .toArray(StructField[]::new));
        Schema valueSchema = AvroRecords.schemaOf(value, table.name() + "_value");
        SchemaRegistry registry = new SchemaRegistry(output.schemaRegistry(), Duration.ofSeconds(30));
        try {
            AvroRecords k = new AvroRecords(keySchema, registry.register(output.topic() + "-key", keySchema));
            avroValue = new AvroRecords(valueSchema, registry.register(output.topic() + "-value", valueSchema));
            avroKey = k;
        } catch (IOException e) {
            throw new KafkaException("cannot register the Avro schemas of " + table.name() + "'s output: " + e.getMessage(), e);
        }
    }

    /** How far this table's publishing has come, from the progress topic (committed records only). */
    Optional<Progress> readProgress() {
        return readProgress(Duration.ofSeconds(30));
    }

    /**
     * What {@code tidemark status} shows of this output: the table's newest version, the last one
     * published (from the progress topic, waiting at most {@code timeout} for Kafka), the lag.
     */
    public OutputStatus status(SparkSession spark, Duration timeout) {
        long latest = lakehouse.exists(spark, delta) ? lakehouse.version(spark, delta) : -1;
        try {
            Optional<Long> done = readProgress(timeout).filter(Progress::complete).map(Progress::version);
            return new OutputStatus(table.name(), output, latest, done.orElse(null),
                    done.map(d -> Math.max(0, latest - d)).orElse(null), null);
        } catch (RuntimeException e) {
            return new OutputStatus(table.name(), output, latest, null, null, e.getClass().getSimpleName() + ": " + e.getMessage());
        }
    }

    /**
     * A KPI table's Kafka output as status reports it.
     *
     * @param latestVersion the table's newest Delta version (-1: no table yet)
     * @param published     the last version published; null when none was or Kafka did not answer
     * @param lag           versions committed but not published; null when unknown
     * @param problem       why the progress could not be read; null when it was
     */
    public record OutputStatus(String table, Pipeline.KafkaOutput output, long latestVersion, Long published, Long lag, String problem) {
    }

    private Optional<Progress> readProgress(Duration timeout) {
        Map<String, Object> settings = new HashMap<>(clientSettings);
        settings.keySet().removeIf(k -> ProducerConfig.configNames().contains(k) && !ConsumerConfig.configNames().contains(k));
        settings.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        settings.put(ConsumerConfig.ALLOW_AUTO_CREATE_TOPICS_CONFIG, "false"); // a missing progress topic is created compacted, by prepareTopics
        settings.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        settings.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        settings.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        settings.remove(ConsumerConfig.GROUP_ID_CONFIG);
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(settings)) {
            List<TopicPartition> partitions = new ArrayList<>();
            List<PartitionInfo> found = consumer.partitionsFor(output.progressTopic(), timeout);
            if (found == null || found.isEmpty()) {
                return Optional.empty(); // no progress topic yet: nothing published
            }
            for (PartitionInfo p : found) {
                partitions.add(new TopicPartition(p.topic(), p.partition()));
            }
            consumer.assign(partitions);
            consumer.seekToBeginning(partitions);
            // With read_committed, the end offsets are the last stable ones: every transaction before them has completed.
            Map<TopicPartition, Long> end = consumer.endOffsets(partitions, timeout);
            Progress last = null;
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (partitions.stream().anyMatch(p -> consumer.position(p, timeout) < end.get(p))) {
                if (System.nanoTime() > deadline) {
                    throw new KafkaException("reading the progress topic " + output.progressTopic() + " took over 60 s");
                }
                for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(500))) {
                    if (r.key() != null && progressKey.equals(new String(r.key(), StandardCharsets.UTF_8))) {
                        last = r.value() == null ? null : Progress.decode(new String(r.value(), StandardCharsets.UTF_8));
                    }
                }
            }
            return Optional.ofNullable(last);
        }
    }

    private void open() {
        if (producer != null) {
            return;
        }
        Map<String, Object> settings = new HashMap<>(clientSettings);
        settings.putIfAbsent(ProducerConfig.LINGER_MS_CONFIG, "5");
        settings.putIfAbsent(ProducerConfig.COMPRESSION_TYPE_CONFIG, "lz4");
        settings.put(ProducerConfig.ACKS_CONFIG, "all");
        settings.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
        settings.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        settings.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        settings.putIfAbsent(ProducerConfig.CLIENT_ID_CONFIG, "tidemark-publish-" + table.name());
        if (output.exactlyOnce()) {
            settings.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, transactionalId());
        } else {
            settings.remove(ProducerConfig.TRANSACTIONAL_ID_CONFIG);
        }
        Properties props = new Properties();
        props.putAll(settings);
        producer = new KafkaProducer<>(props);
        progress = null; // read again: another writer may have published meanwhile
        if (output.exactlyOnce()) {
            // Fences any other producer with this id and waits until its open transaction is completed or aborted.
            producer.initTransactions();
        }
    }

    private Map<String, Object> adminSettings() {
        Map<String, Object> settings = new HashMap<>();
        clientSettings.forEach((k, v) -> {
            if (AdminClientConfig.configNames().contains(k)) {
                settings.put(k, v);
            }
        });
        return settings;
    }

    private void reset() {
        progress = null;
        if (producer != null) {
            try {
                producer.close(Duration.ofSeconds(5));
            } catch (RuntimeException ignored) {
                // closing a fenced or failed producer
            }
            producer = null;
        }
    }

    private static String cause(Throwable e) {
        return Errors.named(e instanceof ExecutionException && e.getCause() != null ? e.getCause() : e);
    }

    @Override
    public void close() {
        reset();
    }
}
