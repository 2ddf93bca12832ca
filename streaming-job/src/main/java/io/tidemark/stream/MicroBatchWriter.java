package io.tidemark.stream;

import static org.apache.spark.sql.functions.col;
import static org.apache.spark.sql.functions.count;
import static org.apache.spark.sql.functions.expr;
import static org.apache.spark.sql.functions.lit;
import static org.apache.spark.sql.functions.max;
import static org.apache.spark.sql.functions.sum;
import static org.apache.spark.sql.functions.when;

import java.sql.Timestamp;
import java.time.Instant;
import java.time.LocalDate;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeSet;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.stream.Collectors;

import org.apache.spark.api.java.function.VoidFunction2;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.storage.StorageLevel;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import io.tidemark.lakehouse.KpiComputation;
import io.tidemark.lakehouse.Lakehouse;
import io.tidemark.lakehouse.Lakehouse.Table;
import io.tidemark.lakehouse.TidemarkConfig;
import io.tidemark.late.LateRecordRouter;
import io.tidemark.late.WatermarkLedger;

/**
 * Writes one micro-batch to every table, exactly once.
 *
 * <p>Per batch: decode and classify once (cached), then four independent Delta commits run side
 * by side (raw_events, late_events, dead_letter appends and the kpi_5m MERGE: a Delta commit has a
 * large fixed cost, so overlapping them is what makes the batch fast), then the stream_progress
 * row, last. Every commit carries the transaction id (query id, batch id), so a batch replayed after
 * a crash is skipped table by table: what committed stays, what did not commits now. A
 * stream_progress row therefore proves its whole batch is in every table.
 */
public final class MicroBatchWriter implements VoidFunction2<Dataset<Row>, Long> {
    private static final long serialVersionUID = 1L;
    private static final Logger LOG = LoggerFactory.getLogger(MicroBatchWriter.class);
    static final String TXN_APP_ID_CONF = "spark.databricks.delta.write.txnAppId";
    static final String TXN_VERSION_CONF = "spark.databricks.delta.write.txnVersion";

    private final TidemarkConfig config;
    private final Lakehouse lakehouse;
    private final RecordClassifier classifier;
    private final BatchListener listener;

    private transient WatermarkLedger ledger;
    /** Days holding KPI rows that are not final yet: the only days the MERGE may touch besides the batch's own. */
    private transient TreeSet<LocalDate> openKpiDays;
    private transient SparkSession mergeSession;
    private transient ExecutorService writers;

    /** Told about every committed batch (the launcher's live status line). */
    public interface BatchListener {
        void batchCommitted(Row progress);
    }

    public MicroBatchWriter(TidemarkConfig config, BatchListener listener) {
        this.config = config;
        this.lakehouse = Lakehouse.of(config);
        this.classifier = new RecordClassifier(config.maxMessageBytes(), config.clockSkew(), config.window());
        this.listener = listener;
    }

    @Override
    public void call(Dataset<Row> kafkaBatch, Long batchIdBoxed) throws Exception {
        long batchId = batchIdBoxed;
        long startedMs = System.currentTimeMillis();
        long startedNanos = System.nanoTime();
        SparkSession spark = kafkaBatch.sparkSession();
        String queryId = spark.sparkContext().getLocalProperty("sql.streaming.queryId");
        if (queryId == null) {
            throw new IllegalStateException("MicroBatchWriter must run inside foreachBatch of a streaming query");
        }
        String appId = "tidemark-stream-" + queryId;
        WatermarkLedger.Position position = positionFor(spark, batchId);
        long watermarkMs = position.watermarkMs();

        Dataset<Row> classified = classifier.classify(kafkaBatch, watermarkMs).persist(StorageLevel.MEMORY_AND_DISK());
        try {
            Row stats = classified.agg(
                    count(lit(1)),
                    sum(when(col("reason").isNull().and(col("is_late").equalTo(false)), 1).otherwise(0)),
                    sum(when(col("reason").isNull().and(col("is_late")), 1).otherwise(0)),
                    sum(when(col("reason").isNotNull(), 1).otherwise(0)),
                    max(when(col("reason").isNull(), expr("unix_millis(event_ts)")))).first();
            long recordsIn = stats.getLong(0);
            long onTime = stats.isNullAt(1) ? 0 : stats.getLong(1);
            long late = stats.isNullAt(2) ? 0 : stats.getLong(2);
            long invalid = stats.isNullAt(3) ? 0 : stats.getLong(3);
            Long maxEventMs = stats.isNullAt(4) ? null : stats.getLong(4);
            WatermarkLedger.Entry entry = ledger.record(batchId, maxEventMs);
            long classifiedMs = System.currentTimeMillis();
            trace(batchId, "classify+cache", startedNanos);
            CrashPoint.AFTER_CLASSIFY.reached(batchId);

            List<Future<Long>> commits = new ArrayList<>();
            if (onTime + late > 0) {
                commits.add(submit(spark, () -> {
                    append(RecordClassifier.rawEvents(classified, batchId), Table.RAW_EVENTS, appId, batchId);
                    CrashPoint.AFTER_RAW_EVENTS.reached(batchId);
                    return 0L;
                }));
            }
            if (late > 0) {
                commits.add(submit(spark, () -> {
                    append(LateRecordRouter.lateEvents(RecordClassifier.late(classified), watermarkMs, batchId), Table.LATE_EVENTS, appId, batchId);
                    return 0L;
                }));
            }
            if (invalid > 0) {
                commits.add(submit(spark, () -> {
                    append(RecordClassifier.deadLetters(classified, batchId), Table.DEAD_LETTER, appId, batchId);
                    return 0L;
                }));
            }
            Future<Long> kpi = null;
            if (onTime > 0 || entry.nextWatermarkMs() > entry.watermarkMs()) {
                kpi = submit(spark, () -> mergeKpis(RecordClassifier.onTime(classified), entry, appId));
            }
            long kpiRows = 0;
            try {
                for (Future<Long> f : commits) {
                    f.get();
                }
                if (kpi != null) {
                    kpiRows = kpi.get();
                }
            } catch (ExecutionException e) {
                throw e.getCause() instanceof Exception ex ? ex : e;
            }
            long writtenMs = System.currentTimeMillis();
            CrashPoint.BEFORE_PROGRESS.reached(batchId);
            Row progress = progressRow(queryId, entry, recordsIn, onTime, late, invalid, kpiRows, startedMs, classifiedMs, writtenMs);
            append(spark.createDataFrame(List.of(progress), progressSchema()), Table.STREAM_PROGRESS, appId, batchId);
            CrashPoint.AFTER_PROGRESS.reached(batchId);
            trace(batchId, "batch-total", startedNanos);
            if (listener != null) {
                listener.batchCommitted(progress);
            }
        } finally {
            classified.unpersist();
        }
    }

    private WatermarkLedger.Position positionFor(SparkSession spark, long batchId) {
        if (ledger == null || ledger.next().batchId() != batchId) {
            ledger = loadLedger(spark, batchId);
            openKpiDays = loadOpenKpiDays(spark);
        }
        return ledger.next();
    }

    /** The ledger as it stood before {@code batchId}, from the previous batch's progress row. */
    private WatermarkLedger loadLedger(SparkSession spark, long batchId) {
        long latenessMs = config.lateness().toMillis();
        if (batchId == 0) {
            return WatermarkLedger.fresh(latenessMs);
        }
        List<Row> rows = spark.read().format("delta").load(lakehouse.path(Table.STREAM_PROGRESS))
                .filter(col("batch_id").equalTo(batchId - 1))
                .select(expr("unix_millis(watermark)"), expr("unix_millis(next_watermark)"),
                        expr("unix_millis(max_event_ts)"), expr("unix_millis(max_event_ts_seen)"))
                .collectAsList();
        if (rows.isEmpty()) {
            throw new IllegalStateException("stream_progress has no row for batch " + (batchId - 1) + " but the checkpoint resumes at batch "
                    + batchId + ": the checkpoint and the lakehouse " + lakehouse.root() + " do not belong together. "
                    + "Point both at the same run, or start over with an empty checkpoint directory and lakehouse.");
        }
        Row r = rows.get(0);
        return WatermarkLedger.resumeAfter(new WatermarkLedger.Entry(batchId - 1, r.getLong(0), r.getLong(1),
                r.isNullAt(2) ? null : r.getLong(2), r.isNullAt(3) ? null : r.getLong(3)), latenessMs);
    }

    private TreeSet<LocalDate> loadOpenKpiDays(SparkSession spark) {
        TreeSet<LocalDate> days = new TreeSet<>();
        for (Row r : spark.read().format("delta").load(lakehouse.path(Table.KPI_5M))
                .filter(col("is_final").equalTo(false)).select(col("event_date")).distinct().collectAsList()) {
            days.add(r.getDate(0).toLocalDate());
        }
        return days;
    }

    private Future<Long> submit(SparkSession spark, java.util.concurrent.Callable<Long> work) {
        if (writers == null) {
            writers = Executors.newFixedThreadPool(4, r -> {
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

    private void append(Dataset<Row> rows, Table table, String appId, long batchId) {
        long t0 = System.nanoTime();
        rows.write().format("delta").mode("append")
                .option("txnAppId", appId)
                .option("txnVersion", batchId)
                .save(lakehouse.path(table));
        trace(batchId, table.tableName(), t0);
    }

    /** Per-commit timings on stderr when TIDEMARK_TRACE_BATCHES is set: where a batch's time goes. */
    private static final boolean TRACE = System.getenv("TIDEMARK_TRACE_BATCHES") != null;

    private static void trace(long batchId, String what, long startNanos) {
        if (TRACE) {
            System.err.printf("trace batch %d %s %d ms%n", batchId, what, (System.nanoTime() - startNanos) / 1_000_000);
        }
    }

    /**
     * Adds the batch's on-time records to kpi_5m and marks final every window the watermark has
     * passed. The MERGE names its days as literals, so it never conflicts with a reconcile
     * overwriting a closed day (DESIGN.md).
     */
    private long mergeKpis(Dataset<Row> onTime, WatermarkLedger.Entry entry, String appId) {
        long t0 = System.nanoTime();
        Dataset<Row> aggregated = KpiComputation.partialKpis(onTime);
        StructType schema = aggregated.schema();
        List<Row> partials = aggregated.collectAsList();
        TreeSet<LocalDate> days = new TreeSet<>();
        for (Row r : partials) {
            days.add(r.getDate(r.fieldIndex("event_date")).toLocalDate());
        }
        long next = entry.nextWatermarkMs();
        long current = entry.watermarkMs();
        LocalDate nextDay = Instant.ofEpochMilli(next).atZone(ZoneOffset.UTC).toLocalDate();
        TreeSet<LocalDate> finalizing = new TreeSet<>(openKpiDays.headSet(nextDay, true));
        TreeSet<LocalDate> touched = new TreeSet<>(days);
        touched.addAll(finalizing);
        if (touched.isEmpty()) {
            return 0;
        }
        trace(entry.batchId(), "kpi-aggregate", t0);
        SparkSession s = mergeSession();
        s.createDataFrame(partials, schema).createOrReplaceTempView("tidemark_batch_kpis");
        String dayList = touched.stream().map(d -> "DATE'" + d + "'").collect(Collectors.joining(", "));
        String finalizeList = finalizing.isEmpty() ? "NULL" : finalizing.stream().map(d -> "DATE'" + d + "'").collect(Collectors.joining(", "));
        String cur = "timestamp_millis(" + current + "L)";
        String nxt = "timestamp_millis(" + next + "L)";
        String sql = "MERGE INTO " + lakehouse.ref(Table.KPI_5M) + " t USING tidemark_batch_kpis s "
                + "ON t.event_date IN (" + dayList + ") AND t.window_end > " + cur
                + " AND t.event_date = s.event_date AND t.window_start = s.window_start AND t.cell_site_id = s.cell_site_id "
                + "WHEN MATCHED THEN UPDATE SET "
                + "  record_count = t.record_count + s.record_count, "
                + "  total_gb = CAST(t.total_gb AS DECIMAL(37,9)) + CAST(s.total_gb AS DECIMAL(37,9)), "
                + "  subscriber_sketch = hll_union(t.subscriber_sketch, s.subscriber_sketch), "
                + "  subscribers = hll_sketch_estimate(hll_union(t.subscriber_sketch, s.subscriber_sketch)), "
                + "  is_final = s.window_end <= " + nxt + ", source = 'stream', "
                + "  updated_at = greatest(t.updated_at, s.updated_at) "
                + "WHEN NOT MATCHED THEN INSERT (window_start, window_end, cell_site_id, record_count, total_gb, subscribers, "
                + "  subscriber_sketch, is_final, source, updated_at, event_date) VALUES (s.window_start, s.window_end, s.cell_site_id, "
                + "  s.record_count, s.total_gb, hll_sketch_estimate(s.subscriber_sketch), s.subscriber_sketch, s.window_end <= " + nxt + ", "
                + "  'stream', s.updated_at, s.event_date) "
                + "WHEN NOT MATCHED BY SOURCE AND t.event_date IN (" + finalizeList + ") AND NOT t.is_final AND t.window_end <= " + nxt
                + " THEN UPDATE SET is_final = true";
        s.conf().set(TXN_APP_ID_CONF, appId);
        s.conf().set(TXN_VERSION_CONF, String.valueOf(entry.batchId()));
        try {
            long m0 = System.nanoTime();
            s.sql(sql);
            trace(entry.batchId(), "kpi_5m-merge", m0);
            CrashPoint.AFTER_KPI_MERGE.reached(entry.batchId());
        } finally {
            // While set, every Delta write of this session is checked against them (DESIGN.md).
            s.conf().unset(TXN_APP_ID_CONF);
            s.conf().unset(TXN_VERSION_CONF);
        }
        long dayEndOfNext = next; // a day is all final once its end is at or before the next watermark
        openKpiDays.removeIf(d -> d.plusDays(1).atStartOfDay(ZoneOffset.UTC).toInstant().toEpochMilli() <= dayEndOfNext);
        for (Row r : partials) {
            if (r.getTimestamp(r.fieldIndex("window_end")).getTime() > next) {
                openKpiDays.add(r.getDate(r.fieldIndex("event_date")).toLocalDate());
            }
        }
        return partials.size();
    }

    private SparkSession mergeSession() {
        if (mergeSession == null) {
            mergeSession = SparkSession.active().newSession();
        }
        return mergeSession;
    }

    static StructType progressSchema() {
        return new StructType()
                .add("batch_id", DataTypes.LongType, false)
                .add("query_id", DataTypes.StringType, false)
                .add("watermark", DataTypes.TimestampType, false)
                .add("next_watermark", DataTypes.TimestampType, false)
                .add("max_event_ts", DataTypes.TimestampType, true)
                .add("max_event_ts_seen", DataTypes.TimestampType, true)
                .add("records_in", DataTypes.LongType, false)
                .add("on_time", DataTypes.LongType, false)
                .add("late", DataTypes.LongType, false)
                .add("invalid", DataTypes.LongType, false)
                .add("kpi_rows", DataTypes.LongType, false)
                .add("started_at", DataTypes.TimestampType, false)
                .add("finished_at", DataTypes.TimestampType, false)
                .add("duration_ms", DataTypes.LongType, false)
                .add("classify_ms", DataTypes.LongType, false)
                .add("write_ms", DataTypes.LongType, false)
                .add("freshness_ms", DataTypes.LongType, true);
    }

    private static Row progressRow(String queryId, WatermarkLedger.Entry e, long in, long onTime, long late, long invalid, long kpiRows,
                                   long startedMs, long classifiedMs, long writtenMs) {
        long finished = System.currentTimeMillis();
        return RowFactory.create(e.batchId(), queryId, new Timestamp(e.watermarkMs()), new Timestamp(e.nextWatermarkMs()),
                e.maxEventMs() == null ? null : new Timestamp(e.maxEventMs()),
                e.maxEventSeenMs() == null ? null : new Timestamp(e.maxEventSeenMs()),
                in, onTime, late, invalid, kpiRows,
                new Timestamp(startedMs), new Timestamp(finished), finished - startedMs, classifiedMs - startedMs, writtenMs - classifiedMs,
                e.maxEventSeenMs() == null ? null : finished - e.maxEventSeenMs());
    }

    /** Stops the writer threads; the query has stopped calling. */
    public void close() {
        if (writers != null) {
            writers.shutdownNow();
        }
    }
}
