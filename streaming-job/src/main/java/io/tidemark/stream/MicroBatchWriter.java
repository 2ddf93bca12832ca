package io.tidemark.stream;

import static org.apache.spark.sql.functions.col;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.stream.IntStream;

import org.apache.spark.api.java.function.VoidFunction2;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.storage.StorageLevel;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import io.tidemark.lakehouse.ClosedDays;
import io.tidemark.lakehouse.Lakehouse;
import io.tidemark.lakehouse.Lakehouse.Table;
import io.tidemark.lakehouse.StreamProgress;
import io.tidemark.lakehouse.TableUpdate;
import io.tidemark.lakehouse.TidemarkConfig;
import io.tidemark.late.PartitionSkew;
import io.tidemark.late.WatermarkLedger;
import io.tidemark.output.OutputPublisher;
import io.tidemark.pipeline.Durations;
import io.tidemark.pipeline.KpiAggregation;
import io.tidemark.pipeline.Pipeline;
import io.tidemark.pipeline.Watermark;
import io.tidemark.pipeline.WorkingColumns;

/**
 * Writes one micro-batch to every table, exactly once.
 *
 * <p>Per batch: decode and classify once (cached), then four independent Delta commits run side
 * by side (raw_events, late_events, dead_letter appends and each KPI table's rewrite of its open windows: a Delta commit has a
 * large fixed cost, so overlapping them is what makes the batch fast), then the stream_progress
 * row, last. With {@code stream.fail-on-data-loss=false} the Kafka offsets the batch should have
 * read but could not (retention, a recreated topic) go to stream_gaps in the same batch. Each table takes a batch in one atomic commit, with the batch id in its rows; the first
 * batch after a restart (the only one Spark may replay) skips the tables that already hold it: what
 * committed stays, what did not commits now. A stream_progress row therefore proves its whole batch
 * is in every table.
 */
public final class MicroBatchWriter implements VoidFunction2<Dataset<Row>, Long> {
    private static final long serialVersionUID = 1L;
    private static final Logger LOG = LoggerFactory.getLogger(MicroBatchWriter.class);

    private final TidemarkConfig config;
    private final Lakehouse lakehouse;
    private final RecordClassifier classifier;
    private final BatchListener listener;
    /** What the stream computes: the pipeline's events and every KPI table it declares. */
    private final Pipeline pipeline;

    private transient WatermarkLedger ledger;
    /** Tables that already hold the current batch: only ever non-empty for the first batch after a restart. */
    private transient Set<Table> alreadyCommitted = new HashSet<>();
    /** One per KPI table of the pipeline, in its order (a partial row's {@code kpi} is the index). */
    private transient List<OpenWindowKpis> kpis;

    private transient ExecutorService writers;
    /** The leases of the lakehouse and the checkpoint, checked before each batch writes. */
    private transient List<StreamLease> leases = List.of();
    /** The metrics endpoint's feed of committed batches; null without an endpoint. */
    private transient StreamMetrics metrics;
    /** The KPI tables' Kafka output, told of each committed batch; null without one. */
    private transient OutputPublisher output;

    /** Told about every committed batch (the launcher's live status line). */
    public interface BatchListener {
        void batchCommitted(StreamProgress progress);

        /** Told about the Kafka offset gaps a batch recorded in stream_gaps (only with stream.fail-on-data-loss=false). */
        default void gapsRecorded(long batchId, List<String> gaps) {
        }
    }

    public MicroBatchWriter(TidemarkConfig config, BatchListener listener) {
        this.config = config;
        this.lakehouse = Lakehouse.of(config);
        this.pipeline = config.pipeline();
        this.classifier = new RecordClassifier(pipeline, config.maxMessageBytes(), config.clockSkew(), config.maxEventAge());
        this.listener = listener;
    }

    /** The micro-batch of the streaming query: what it is given is read from Spark and the checkpoint ({@link BatchInput}). */
    @Override
    public void call(Dataset<Row> kafkaBatch, Long batchIdBoxed) throws Exception {
        long batchId = batchIdBoxed;
        SparkSession spark = kafkaBatch.sparkSession();
        String queryId = spark.sparkContext().getLocalProperty("sql.streaming.queryId");
        if (queryId == null) {
            throw new IllegalStateException("MicroBatchWriter must run inside foreachBatch of a streaming query");
        }
        write(kafkaBatch, BatchInput.fromCheckpoint(config, spark.sparkContext().hadoopConfiguration(), queryId, batchId));
    }

    /**
     * Writes one batch of Kafka records (the columns of Spark's Kafka source) to every table, given
     * what {@code in} says of it. {@link #call} is this inside a streaming query; a test calls it
     * directly with crafted batches. The stream's state is read at the edge ({@link #positionFor}),
     * the batch is classified and summed up in one pass, {@link BatchPlan#decide} says what to write,
     * and {@link #commit} writes it, stream_progress last.
     */
    public void write(Dataset<Row> kafkaBatch, BatchInput in) throws Exception {
        long startedMs = System.currentTimeMillis();
        long startedNanos = System.nanoTime();
        SparkSession spark = kafkaBatch.sparkSession();
        for (StreamLease lease : leases) {
            lease.requireHeld();
        }
        long watermarkMs = positionFor(spark, in.batchId(), in.queryId()).watermarkMs();
        trace(in.batchId(), "position", startedNanos);
        Dataset<Row> classified = classifier.classify(kafkaBatch, watermarkMs).persist(StorageLevel.MEMORY_AND_DISK());
        try {
            // The one action over the whole batch before the writes: fills the cache and gives the
            // counts, the watermark input and the on-time partial KPIs in one pass.
            BatchPlan.Summary summary = BatchPlan.Summary.of(classifier.summary(classified, kpis.stream().map(OpenWindowKpis::aggregation).toList(),
                    Watermark.ofMillis(watermarkMs)).collectAsList(), kpis);
            List<KafkaGaps.Gap> gaps = config.failOnDataLoss() ? List.of() : gaps(in, classified);
            BatchPlan plan = BatchPlan.decide(ledger, alreadyCommitted, kpis, in.batchId(), in.batchTimeMs(), summary, gaps);
            ledger.advancePast(plan.entry());
            warnOnSkew(plan.entry());
            long classifiedMs = System.currentTimeMillis();
            trace(in.batchId(), "classify+cache+summary", startedNanos);
            CrashPoint.AFTER_CLASSIFY.reached(in.batchId());
            commit(spark, plan, classified);
            long writtenMs = System.currentTimeMillis();
            CrashPoint.BEFORE_PROGRESS.reached(in.batchId());
            StreamProgress progress = progress(in.queryId(), plan, startedMs, classifiedMs, writtenMs, pipeline.daySpill());
            Row row = progress.toRow();
            append(spark.createDataFrame(List.of(row), row.schema()), Table.STREAM_PROGRESS, in.batchId());
            CrashPoint.AFTER_PROGRESS.reached(in.batchId());
            trace(in.batchId(), "batch-total", startedNanos);
            committed(progress, plan);
        } finally {
            classified.unpersist();
        }
    }

    /**
     * Runs a batch's plan but for its stream_progress row: the appends and the KPI tables' replacements,
     * each one Delta commit, side by side (a commit's fixed cost is large; overlapping them is what makes
     * a batch fast). Returns when every one has ended, and throws the first failure.
     */
    private void commit(SparkSession spark, BatchPlan plan, Dataset<Row> classified) throws Exception {
        long batchId = plan.entry().batchId();
        List<Future<Long>> commits = new ArrayList<>();
        for (Table table : plan.appends()) {
            commits.add(submit(spark, () -> {
                append(rowsFor(spark, table, plan, classified), table, batchId);
                if (table.equals(Table.RAW_EVENTS)) {
                    CrashPoint.AFTER_RAW_EVENTS.reached(batchId);
                }
                return 0L;
            }));
        }
        for (OpenWindowKpis.Replacement r : plan.kpis()) {
            OpenWindowKpis table = kpis.stream().filter(k -> k.table().equals(r.table())).findFirst().orElseThrow();
            commits.add(submit(spark, () -> {
                long t0 = System.nanoTime();
                table.commit(spark, r);
                trace(batchId, r.table().tableName(), t0);
                CrashPoint.AFTER_KPI_WRITE.reached(batchId);
                return 0L;
            }));
        }
        awaitAll(commits);
    }

    /** The rows of a batch's append to {@code table}. */
    private Dataset<Row> rowsFor(SparkSession spark, Table table, BatchPlan plan, Dataset<Row> classified) {
        long batchId = plan.entry().batchId();
        if (table.equals(Table.RAW_EVENTS)) {
            return classifier.rawEvents(classified, batchId);
        } else if (table.equals(Table.LATE_EVENTS)) {
            return classifier.lateEvents(classified, plan.entry().watermarkMs(), batchId);
        } else if (table.equals(Table.DEAD_LETTER)) {
            return RecordClassifier.deadLetters(classified, batchId);
        } else if (table.equals(Table.STREAM_GAPS)) {
            return spark.createDataFrame(KafkaGaps.rows(batchId, plan.gaps()), Lakehouse.ownSchema(Table.STREAM_GAPS));
        }
        throw new IllegalArgumentException("a batch appends no rows to " + table.tableName());
    }

    /** Tells the Kafka output, the metrics endpoint and the listener of a committed batch. */
    private void committed(StreamProgress progress, BatchPlan plan) {
        if (output != null) {
            output.committed();
        }
        if (metrics != null) {
            metrics.batchCommitted(progress, plan.summary().invalidByReason(), alreadyCommitted);
        }
        if (listener != null) {
            if (!plan.gaps().isEmpty()) {
                listener.gapsRecorded(progress.batchId(), plan.gaps().stream().map(KafkaGaps.Gap::describe).toList());
            }
            listener.batchCommitted(progress);
        }
    }

    /**
     * The Kafka offsets this batch should have read but did not (see {@link KafkaGaps}): Spark's own
     * plan for the batch ({@link BatchInput}'s offsets, from the checkpoint's offset log), against the
     * offsets the batch holds.
     */
    private List<KafkaGaps.Gap> gaps(BatchInput in, Dataset<Row> classified) {
        long t0 = System.nanoTime();
        if (!in.plannedOffsetsKnown()) {
            LOG.warn("batch {}: the checkpoint no longer holds its start and end offsets; not checked for lost Kafka offsets", in.batchId());
            return List.of();
        }
        List<KafkaGaps.Gap> gaps = KafkaGaps.find(config.topic(), in.startOffsets(), in.endOffsets(), KafkaGaps.read(classified));
        for (KafkaGaps.Gap g : gaps) {
            LOG.warn("batch {}: Kafka data loss, continuing past it (stream.fail-on-data-loss=false): {}; recorded in stream_gaps", in.batchId(), g.describe());
        }
        trace(in.batchId(), "gap-check", t0);
        return gaps;
    }

    /**
     * Where the stream stands before batch {@code batchId}, read from the tables after a (re)start or a
     * failed batch, else as the previous batch left it: the ledger's position, the tables that already hold
     * the batch, each KPI table's open rows (of the tables still to write).
     */
    private WatermarkLedger.Position positionFor(SparkSession spark, long batchId, String queryId) {
        if (kpis == null) {
            kpis = IntStream.range(0, pipeline.tables().size()).mapToObj(i -> new OpenWindowKpis(lakehouse,
                    new KpiAggregation(pipeline.tables().get(i), pipeline.events().eventTime()), i)).toList();
        }
        alreadyCommitted = new HashSet<>();
        if (ledger == null || ledger.next().batchId() != batchId) {
            requireSameQuery(spark, queryId);
            ledger = loadLedger(spark, batchId);
            alreadyCommitted = committedTables(spark, batchId);
            if (!alreadyCommitted.isEmpty()) {
                LOG.info("batch {} is a replay: already in {}; writing only the rest", batchId, alreadyCommitted);
            }
            kpis.forEach(OpenWindowKpis::reset);
        }
        for (OpenWindowKpis k : kpis) {
            if (!alreadyCommitted.contains(k.table())) {
                k.load(spark);
            }
        }
        return ledger.next();
    }

    /**
     * A lakehouse belongs to one streaming query (one checkpoint): batch ids restart at 0 with a new
     * checkpoint, and the replay check below must not mistake another query's batch for this one's.
     */
    private void requireSameQuery(SparkSession spark, String queryId) {
        Optional<String> last = StreamProgress.last(spark, lakehouse).map(StreamProgress::queryId);
        if (last.isPresent() && !last.get().equals(queryId)) {
            throw new IllegalStateException("the lakehouse " + lakehouse.root() + " holds the output of another streaming query ("
                    + last.get() + ") than the checkpoint's (" + queryId + "). Point the stream at its own checkpoint, "
                    + "or at a new lakehouse for a new checkpoint.");
        }
    }

    /**
     * Which tables already hold batch {@code batchId}: after a crash, Spark replays the last batch
     * it had not committed, and each table took that batch in one atomic commit or not at all.
     * Checked once per (re)start instead of on every commit (Delta's txnAppId check costs about
     * two seconds per commit here: bench/RESULTS.md).
     */
    private Set<Table> committedTables(SparkSession spark, long batchId) {
        Set<Table> found = new HashSet<>();
        for (Table t : lakehouse.tables()) {
            if (t.equals(Table.RECONCILE_REPORT) || t.equals(Table.EXPIRED_DAYS)) {
                continue;
            }
            String column = t.isKpi() ? "stream_batch_id" : "batch_id";
            if (!lakehouse.read(spark, t).where(col(column).equalTo(batchId)).limit(1).isEmpty()) {
                found.add(t);
            }
        }
        return found;
    }

    /** The ledger as it stood before {@code batchId}, from the previous batch's progress row. */
    private WatermarkLedger loadLedger(SparkSession spark, long batchId) {
        long latenessMs = config.lateness().toMillis();
        long idleMs = config.watermarkIdleTimeout().toMillis();
        TidemarkConfig.WatermarkPolicy policy = config.watermarkPolicy();
        if (batchId == 0) {
            return WatermarkLedger.fresh(policy, latenessMs, idleMs);
        }
        StreamProgress p = StreamProgress.ofBatch(spark, lakehouse, batchId - 1).orElseThrow(() -> new IllegalStateException(
                "stream_progress has no row for batch " + (batchId - 1) + " but the checkpoint resumes at batch "
                + batchId + ": the checkpoint and the lakehouse " + lakehouse.root() + " do not belong together. "
                + "Point both at the same run, or start over with an empty checkpoint directory and lakehouse."));
        // A row written before partition clocks were recorded has none: the policy is spark there (QueryDefinition), which needs none.
        return WatermarkLedger.resumeAfter(new WatermarkLedger.Entry(p.batchId(), p.watermark().toEpochMilli(), p.nextWatermark().toEpochMilli(),
                millis(p.maxEventTs()), millis(p.maxEventTsSeen()), p.batchTs() == null ? 0L : p.batchTs().toEpochMilli(), p.partitionClocks()),
                policy, latenessMs, idleMs);
    }

    private static Long millis(Instant i) {
        return i == null ? null : i.toEpochMilli();
    }

    /** The partition whose clock trailed the leader by more than the lateness at the last warning; -1 when none did. */
    private transient int skewWarned = -1;

    /**
     * One WARN line per episode when a Kafka partition's event clock trails the leading partition's by
     * more than the lateness: under the spark policy its records are then late for lagging (they all go
     * to late_events until reconcile); under min-partition it holds every window open.
     */
    private void warnOnSkew(WatermarkLedger.Entry entry) {
        PartitionSkew skew = PartitionSkew.of(entry.partitions());
        long latenessMs = config.lateness().toMillis();
        if (skew == null || skew.behindMs() <= latenessMs) {
            skewWarned = -1;
            return;
        }
        if (skewWarned == skew.trailing()) {
            return;
        }
        skewWarned = skew.trailing();
        String effect = ledger.policy() == TidemarkConfig.WatermarkPolicy.SPARK
                ? "with watermark.policy=spark its records are late for lagging and reach the KPI tables only at reconcile; "
                        + "watermark.policy=min-partition (a new checkpoint and lakehouse) would wait for it"
                : "with watermark.policy=min-partition it holds the watermark back, so windows stay open until it catches up or has been "
                        + "idle for watermark.idle-timeout (" + Durations.human(config.watermarkIdleTimeout()) + ")";
        LOG.warn("Kafka partition {}'s event clock trails partition {}'s by {} minutes, more than the lateness ({}): {}", skew.trailing(),
                skew.leading(), String.format(Locale.ROOT, "%.1f", skew.behindMs() / 60_000.0), Durations.human(config.lateness()),
                effect);
    }

    /**
     * Waits for every commit of the batch, then throws the first failure: a failed batch leaves no
     * commit of its own still running behind it, which a restart (in this JVM or another) would
     * race with when it checks which tables already hold the batch.
     */
    private static void awaitAll(List<Future<Long>> commits) throws Exception {
        Exception first = null;
        for (Future<Long> f : commits) {
            try {
                f.get();
            } catch (ExecutionException e) {
                if (first == null) {
                    first = e.getCause() instanceof Exception ex ? ex : e;
                }
            }
        }
        if (first != null) {
            throw first;
        }
    }

    private Future<Long> submit(SparkSession spark, Callable<Long> work) {
        if (writers == null) {
            // One thread per table a batch commits to side by side: raw_events, late_events, dead_letter, stream_gaps, the KPI tables.
            writers = Executors.newFixedThreadPool(4 + pipeline.tables().size(), r -> {
                Thread t = new Thread(r, "tidemark-delta-writer");
                t.setDaemon(true);
                return t;
            });
        }
        return writers.submit(() -> {
            SparkSession.setActiveSession(spark);
            // The stream thread's SQL execution id is inherited by new threads; each write is an execution of its own.
            spark.sparkContext().setLocalProperty("spark.sql.execution.id", null);
            return work.call();
        });
    }

    private void append(Dataset<Row> rows, Table table, long batchId) {
        if (alreadyCommitted.contains(table)) {
            return;
        }
        long t0 = System.nanoTime();
        lakehouse.commit(rows.sparkSession(), new TableUpdate.Append(table, rows, null));
        trace(batchId, table.tableName(), t0);
    }

    /** Per-commit timings on stderr when TIDEMARK_TRACE_BATCHES is set: where a batch's time goes. */
    private static final boolean TRACE = System.getenv("TIDEMARK_TRACE_BATCHES") != null;

    static void trace(long batchId, String what, long startNanos) {
        if (TRACE) {
            System.err.printf("trace batch %d %s %d ms%n", batchId, what, (System.nanoTime() - startNanos) / 1_000_000);
        }
    }


    /**
     * The batch's stream_progress row, with the stream's decision on closed days
     * ({@link ClosedDays#COLUMN}) made from the watermark in force for the next batch.
     */
    private static StreamProgress progress(String queryId, BatchPlan plan, long startedMs, long classifiedMs, long writtenMs, Duration daySpill) {
        WatermarkLedger.Entry e = plan.entry();
        BatchPlan.Summary s = plan.summary();
        long finished = System.currentTimeMillis();
        return new StreamProgress(e.batchId(), queryId, Instant.ofEpochMilli(e.watermarkMs()), Instant.ofEpochMilli(e.nextWatermarkMs()),
                instant(e.maxEventMs()), instant(e.maxEventSeenMs()), s.recordsIn(), s.onTime(), s.late(), s.invalid(), plan.kpiRows(),
                Instant.ofEpochMilli(startedMs), Instant.ofEpochMilli(finished), finished - startedMs, classifiedMs - startedMs, writtenMs - classifiedMs,
                e.maxEventSeenMs() == null ? null : finished - e.maxEventSeenMs(),
                ClosedDays.decidedBy(Watermark.ofMillis(e.nextWatermarkMs()), daySpill).lastClosed().orElse(null), Instant.ofEpochMilli(e.batchTimeMs()),
                new TreeMap<>(e.partitions()));
    }

    private static Instant instant(Long ms) {
        return ms == null ? null : Instant.ofEpochMilli(ms);
    }


    /** The leases this writer's batches must hold ({@link StreamingJob} takes them). */
    void holding(List<StreamLease> held) {
        this.leases = List.copyOf(held);
    }

    /** The metrics endpoint each committed batch reports to ({@link StreamingJob} starts it). */
    void reportingTo(StreamMetrics endpoint) {
        this.metrics = endpoint;
    }

    /** The Kafka output each committed batch wakes ({@link StreamingJob} starts it). */
    void publishingTo(OutputPublisher publisher) {
        this.output = publisher;
    }

    /** Stops the writer threads; the query has stopped calling. */
    public void close() {
        if (writers != null) {
            writers.shutdownNow();
        }
    }
}
