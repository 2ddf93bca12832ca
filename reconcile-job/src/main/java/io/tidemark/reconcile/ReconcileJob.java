package io.tidemark.reconcile;

import static org.apache.spark.sql.functions.coalesce;
import static org.apache.spark.sql.functions.col;
import static org.apache.spark.sql.functions.count;
import static org.apache.spark.sql.functions.expr;
import static org.apache.spark.sql.functions.lit;
import static org.apache.spark.sql.functions.sum;
import static org.apache.spark.sql.functions.when;

import java.io.PrintStream;
import java.math.BigDecimal;
import java.sql.Date;
import java.sql.Timestamp;
import java.time.Instant;
import java.time.LocalDate;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.NavigableMap;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;

import org.apache.spark.sql.Column;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.storage.StorageLevel;

import io.tidemark.lakehouse.ClosedDays;
import io.tidemark.lakehouse.CommitFailedException;
import io.tidemark.lakehouse.CommitRetry;
import io.tidemark.lakehouse.DayBalance;
import io.tidemark.lakehouse.Errors;
import io.tidemark.lakehouse.ExpiredDays;
import io.tidemark.lakehouse.IncompatibleQueryException;
import io.tidemark.lakehouse.JobMain;
import io.tidemark.lakehouse.Lakehouse;
import io.tidemark.lakehouse.Lakehouse.Table;
import io.tidemark.lakehouse.QueryDefinition;
import io.tidemark.lakehouse.RequestRefusedException;
import io.tidemark.lakehouse.StorageCheck;
import io.tidemark.lakehouse.TableUpdate;
import io.tidemark.lakehouse.TidemarkConfig;
import io.tidemark.output.OutputPublisher;
import io.tidemark.pipeline.DriftRule;
import io.tidemark.pipeline.Measure;
import io.tidemark.pipeline.Pipeline;
import io.tidemark.pipeline.TruthKpis;

/**
 * The batch layer: recomputes closed days from {@code raw_events}, exactly and with late records
 * folded in, replaces each day's partition of every KPI table in one Delta commit each and reports the drift
 * between the replaced rows and the truth in {@code reconcile_report}.
 *
 * <p>Days are processed one after the other. Per day: the raw log is read at a pinned version, the
 * truth ({@link TruthKpis#of}) is compared with the current KPI rows, the report rows are appended,
 * then the day is replaced in each KPI table, one table after the other, with {@code replaceWhere event_date = D}:
 * a run killed at any point leaves each day of each table wholly old or wholly new (not of every table: a kill
 * between two tables leaves the day replaced in the first only; docs/guarantees.md says how a reader and the
 * next run see it), and a re-run over the same raw log writes the same rows.
 * The stream may run meanwhile: it never writes a closed day, and a commit that still loses a race
 * is rebuilt and re-run ({@link CommitRetry}).
 *
 * <p>Runs under {@code spark-submit --class io.tidemark.reconcile.ReconcileJob} (see
 * {@link ReconcileArguments}) or through {@code tidemark reconcile}.
 */
public final class ReconcileJob {

    private static final DateTimeFormatter RUN_ID_TIME = DateTimeFormatter.ofPattern("yyyyMMdd'T'HHmmss'Z'").withZone(ZoneOffset.UTC);

    private final SparkSession spark;
    private final TidemarkConfig config;
    private final Lakehouse lakehouse;
    private final PrintStream out;
    private final CommitRetry retry;
    /** What an operator does when a day's commit gave up to concurrent writers. */
    private static final String RERUN = "re-run reconcile for it";
    private boolean registered;

    public ReconcileJob(SparkSession spark, TidemarkConfig config) {
        this(spark, config, System.out);
    }

    /** @param out where the per-day progress lines and the final summary go */
    public ReconcileJob(SparkSession spark, TidemarkConfig config, PrintStream out) {
        this(spark, config, out, CommitRetry.defaults());
    }

    public ReconcileJob(SparkSession spark, TidemarkConfig config, PrintStream out, CommitRetry retry) {
        this.spark = spark;
        this.config = config;
        this.lakehouse = Lakehouse.of(config);
        this.out = out;
        this.retry = retry;
    }

    /** The closed days, from the stream's current watermark. */
    public ClosedDays closedDays() {
        ensureTables();
        return ClosedDays.load(spark, lakehouse);
    }

    /** The closed days whose raw record count differs from their KPIs, oldest first. */
    public List<LocalDate> dirtyDays() {
        ClosedDays closed = closedDays();
        return DayBalance.dirtyDays(DayBalance.load(spark, lakehouse, null, null), closed, ExpiredDays.load(spark, lakehouse));
    }

    /**
     * Reconciles the selected days, one after the other.
     *
     * @param dryRun compute and print the drift, write nothing
     * @throws RequestRefusedException a selected day is not closed; nothing was written
     * @throws CommitFailedException  a day could not be replaced; earlier days of the run are done
     */
    public ReconcileResult run(DaySelection selection, boolean dryRun) {
        return run(selection, dryRun, null);
    }

    /**
     * {@link #run(DaySelection, boolean)} under a given run id (written to reconcile_report.run_id),
     * so a scheduler can find its run's rows; null for a generated one.
     */
    public ReconcileResult run(DaySelection selection, boolean dryRun, String runId) {
        if (!dryRun) {
            StorageCheck.requireWritable(config.lakehouseUri(), TidemarkConfig.Key.LAKEHOUSE.name, spark.sparkContext().hadoopConfiguration());
        }
        ensureTables();
        Instant started = Instant.now();
        if (runId == null) {
            runId = "reconcile-" + RUN_ID_TIME.format(started) + "-" + UUID.randomUUID().toString().substring(0, 8);
        }
        ClosedDays closed = ClosedDays.load(spark, lakehouse);
        ExpiredDays expired = ExpiredDays.load(spark, lakehouse);
        List<LocalDate> days;
        NavigableMap<LocalDate, DayBalance> balances;
        switch (selection.kind()) {
            case RANGE -> {
                for (LocalDate d = selection.from(); !d.isAfter(selection.to()); d = d.plusDays(1)) {
                    Optional<String> open = closed.whyOpen(d);
                    if (open.isPresent()) {
                        throw new RequestRefusedException(open.get() + ". Reconcile closed days only.");
                    }
                    Optional<String> sealed = expired.whySealed(d);
                    if (sealed.isPresent()) {
                        throw new RequestRefusedException(sealed.get() + ". Choose a range after "
                                + expired.of(Table.RAW_EVENTS).last() + ".");
                    }
                }
                days = selection.from().datesUntil(selection.to().plusDays(1)).toList();
                balances = DayBalance.load(spark, lakehouse, selection.from(), selection.to());
            }
            case RECENT -> {
                // a recent day that retention deleted (retention.raw-days below reconcile.recent-days) was reconciled before
                days = closed.mostRecent(selection.recentDays()).stream().filter(d -> !expired.isSealed(d)).toList();
                balances = days.isEmpty() ? Collections.emptyNavigableMap()
                        : DayBalance.load(spark, lakehouse, days.get(0), days.get(days.size() - 1));
            }
            case DIRTY -> {
                balances = DayBalance.load(spark, lakehouse, null, null);
                days = DayBalance.dirtyDays(balances, closed, expired);
            }
            default -> throw new IllegalStateException(selection.kind().toString());
        }
        out.println("reconcile " + runId + ": " + selection + " -> " + describe(days) + " (" + closed + ")"
                + (dryRun ? "; dry run: nothing will be written" : ""));
        List<DayOutcome> outcomes = new ArrayList<>();
        Timestamp runStartedAt = Timestamp.from(started);
        // The raw log is read at one pinned version for the whole run, so a day's truth, report and
        // overwrite agree even if a late record of that day lands meanwhile (it then leaves the day
        // dirty for the next --dirty run).
        long rawVersion = days.isEmpty() ? -1
                : lakehouse.version(spark, Table.RAW_EVENTS);
        for (int i = 0; i < days.size(); i++) {
            LocalDate day = days.get(i);
            DayOutcome o = reconcileDay(day, balances.get(day), rawVersion, runId, runStartedAt, dryRun);
            outcomes.add(o);
            out.println(progressLine(o, i + 1, days.size()));
            out.flush();
        }
        if (!dryRun && !days.isEmpty()) {
            publishCorrections();
        }
        ReconcileResult result = new ReconcileResult(runId, started, closed.watermark().instant(), selection, dryRun, outcomes);
        out.println();
        out.print(result.summaryTable());
        out.flush();
        return result;
    }

    private DayOutcome reconcileDay(LocalDate day, DayBalance balance, long rawVersion, String runId, Timestamp runStartedAt,
                                    boolean dryRun) {
        long t0 = System.currentTimeMillis();
        if (balance == null || balance.rawRecords() == 0) {
            return DayOutcome.noData(day, balance == null ? 0 : balance.kpiRecords(), System.currentTimeMillis() - t0);
        }
        Column ofDay = col("event_date").equalTo(lit(Date.valueOf(day)));
        Pipeline pipeline = lakehouse.pipeline();
        DriftRule rule = DriftRule.of(pipeline);
        // A hopping window that starts on the day can hold records of the next one.
        Column rawDays = pipeline.daySpill().isZero() ? ofDay : col("event_date").isin(Date.valueOf(day), Date.valueOf(day.plusDays(1)));
        Dataset<Row> raw = lakehouse.readAt(spark, Table.RAW_EVENTS, rawVersion).filter(rawDays);
        List<Dataset<Row>> cached = new ArrayList<>();
        try {
            long windows = 0;
            long changed = 0;
            long late = 0;
            List<DayOutcome.MeasureDrift> measures = new ArrayList<>();
            List<Dataset<Row>> truths = new ArrayList<>();
            Dataset<Row> report = null;
            StructType reportSchema = reportSchema();
            for (Pipeline.KpiTable table : pipeline.tables()) {
                Table kpiTable = Table.kpi(table.name());
                KpiDrift kpiDrift = new KpiDrift(table);
                Dataset<Row> truth = TruthKpis.of(raw, table, pipeline.events().eventTime()).filter(ofDay).persist(StorageLevel.MEMORY_AND_DISK());
                Dataset<Row> current = lakehouse.read(spark, kpiTable).filter(ofDay).persist(StorageLevel.MEMORY_AND_DISK());
                Dataset<Row> comparison = kpiDrift.compare(current, truth).persist(StorageLevel.MEMORY_AND_DISK());
                cached.addAll(List.of(truth, current, comparison));
                truths.add(truth);
                // One pass for the table's counts; it also fills the caches the report and the overwrite read.
                List<Column> figures = new ArrayList<>(List.of(count(when(col(KpiDrift.IN_TRUTH), 1)).as("windows"),
                        count(when(col(KpiDrift.ANY_CHANGED), 1)).as("windows_changed"),
                        coalesce(sum(KpiDrift.LATE_RECORDS), lit(0L)).as("late_records")));
                table.measures().forEach(m -> figures.add(count(when(col(KpiDrift.changed(m)), 1)).as("changed_" + figures.size())));
                Row f = comparison.agg(figures.get(0), figures.subList(1, figures.size()).toArray(Column[]::new)).first();
                windows += f.getLong(0);
                changed += f.getLong(1);
                long tableLate = f.getLong(2);
                if (truths.size() == 1) {
                    late = tableLate; // the day's late records, as the first table counts them
                }
                Map<String, BigDecimal> streamDay = kpiDrift.dayValues(current);
                Map<String, BigDecimal> batchDay = kpiDrift.dayValues(truth);
                List<DayOutcome.MeasureDrift> tableMeasures = new ArrayList<>();
                for (int i = 0; i < table.measures().size(); i++) {
                    Measure m = table.measures().get(i);
                    BigDecimal st = streamDay.get(m.name());
                    BigDecimal b = batchDay.get(m.name());
                    tableMeasures.add(new DayOutcome.MeasureDrift(table.name(), m.name(), st, b, DriftRule.relative(st, b),
                            m.sketched(), rule.over(m, st, b), f.getLong(3 + i)));
                }
                measures.addAll(tableMeasures);
                if (!dryRun) {
                    List<Row> summaries = new ArrayList<>();
                    for (DayOutcome.MeasureDrift md : tableMeasures) {
                        summaries.add(summaryRow(reportSchema, md, runId, runStartedAt, rule.threshold(), tableLate, day));
                    }
                    Dataset<Row> rows = reportRows(kpiDrift.windowRows(comparison), reportSchema, runId, runStartedAt, day)
                            .union(spark.createDataFrame(summaries, reportSchema));
                    report = report == null ? rows : report.union(rows);
                }
            }

            int attempts = 0;
            if (!dryRun) {
                String note = "tidemark " + runId + " " + day;
                Dataset<Row> all = report;
                lakehouse.commit(spark, new TableUpdate.Append(Table.RECONCILE_REPORT, all, note), retry, "appending the drift report", RERUN);
                for (int i = 0; i < pipeline.tables().size(); i++) {
                    Table kpiTable = Table.kpi(pipeline.tables().get(i).name());
                    Dataset<Row> truth = truths.get(i);
                    // the rows rebuilt for each attempt: a retried replacement starts from scratch
                    attempts = Math.max(attempts, retry.run(day, "replacing the KPI rows of " + kpiTable, RERUN, () -> lakehouse.commit(spark,
                            new TableUpdate.Replace(kpiTable, asTable(truth, kpiTable), List.of(day), List.of(), note))));
                }
            }
            return new DayOutcome(day, dryRun ? DayOutcome.Status.DRY_RUN : DayOutcome.Status.RECONCILED, windows, changed, measures, late,
                    attempts, System.currentTimeMillis() - t0, null);
        } catch (CommitFailedException e) {
            throw e;
        } catch (RuntimeException e) {
            throw new CommitFailedException(day, "reconciling " + day + " failed: " + Errors.oneLine(e), e);
        } finally {
            cached.forEach(Dataset::unpersist);
        }
    }

    /** A summary row of the report: one measure of one KPI table over the day. */
    private static Row summaryRow(StructType reportSchema, DayOutcome.MeasureDrift md, String runId, Timestamp runStartedAt, double threshold,
                                  long late, LocalDate day) {
        Map<String, Object> v = new HashMap<>();
        v.put("run_id", runId);
        v.put("run_started_at", runStartedAt);
        v.put("row_kind", "summary");
        v.put("kpi", md.kpi());
        v.put("measure", md.measure());
        v.put("stream_value", md.stream());
        v.put("batch_value", md.batch());
        v.put("drift", md.drift());
        v.put("drift_rel", md.driftRel());
        v.put("estimate", md.estimate());
        v.put("drift_threshold", threshold);
        v.put("over_threshold", md.over());
        v.put("late_records", late);
        v.put("windows_changed", md.windowsChanged());
        v.put("event_date", Date.valueOf(day));
        Object[] row = new Object[reportSchema.size()];
        for (int k = 0; k < row.length; k++) {
            row[k] = v.get(reportSchema.fields()[k].name());
        }
        return RowFactory.create(row);
    }

    /** The window rows of the report, in the table's column order and types; a column they lack (an older one) is null. */
    private static Dataset<Row> reportRows(Dataset<Row> drift, StructType schema, String runId, Timestamp runStartedAt, LocalDate day) {
        Dataset<Row> rows = drift
                .withColumn("run_id", lit(runId))
                .withColumn("run_started_at", lit(runStartedAt))
                .withColumn("row_kind", lit("window"))
                .withColumn("event_date", lit(Date.valueOf(day)));
        Set<String> have = new HashSet<>(Arrays.asList(rows.columns()));
        List<Column> cols = new ArrayList<>();
        for (StructField f : schema.fields()) {
            cols.add((have.contains(f.name()) ? rows.col(f.name()) : lit(null)).cast(f.dataType()).as(f.name()));
        }
        return rows.select(cols.toArray(Column[]::new));
    }

    /**
     * {@code rows} with exactly the table's columns, in its order and types; a column the rows do not
     * have (such as the stream's bookkeeping, {@code stream_batch_id}) is written as null.
     */
    private Dataset<Row> asTable(Dataset<Row> rows, Table table) {
        Set<String> have = new HashSet<>(Arrays.asList(rows.columns()));
        List<Column> cols = new ArrayList<>();
        for (StructField f : lakehouse.read(spark, table).schema().fields()) {
            cols.add((have.contains(f.name()) ? rows.col(f.name()) : lit(null)).cast(f.dataType()).as(f.name()));
        }
        return rows.select(cols.toArray(Column[]::new));
    }

    private StructType reportSchema() {
        return lakehouse.read(spark, Table.RECONCILE_REPORT).schema();
    }

    private void ensureTables() {
        if (!registered) {
            try {
                QueryDefinition.requireLakehouseDefinition(spark, config);
            } catch (IncompatibleQueryException e) {
                throw new RequestRefusedException(e.getMessage());
            }
            lakehouse.createAndRegister(spark);
            registered = true;
        }
    }

    /**
     * The replaced days out to the Kafka output of each KPI table that has one, as versions of this
     * run's commits. A failure is reported, not thrown: the days are replaced, and the stream, or the
     * next reconcile, publishes what is left.
     */
    private void publishCorrections() {
        Optional<OutputPublisher> output = OutputPublisher.of(lakehouse, lakehouse.pipeline(),
                config.bootstrapServers());
        if (output.isEmpty()) {
            return;
        }
        try (OutputPublisher o = output.get()) {
            o.publishNow(spark);
            out.println("kafka output: " + o.describe());
        }
    }

    private static String describe(List<LocalDate> days) {
        if (days.isEmpty()) {
            return "no day";
        }
        if (days.size() == 1) {
            return "1 day (" + days.get(0) + ")";
        }
        return days.size() + " days (" + days.get(0) + " .. " + days.get(days.size() - 1) + ")";
    }

    static String progressLine(DayOutcome o, int index, int total) {
        String head = String.format("reconcile %s [%d/%d]: ", o.day(), index, total);
        if (o.status() == DayOutcome.Status.NO_DATA) {
            return head + "no data: raw_events has no record of this day; nothing written" + (o.note() == null ? "" : " (" + o.note() + ")");
        }
        List<String> measures = new ArrayList<>();
        for (DayOutcome.MeasureDrift m : o.measures()) {
            measures.add(o.label(m) + " " + ReconcileResult.value(m.stream()) + " -> " + ReconcileResult.value(m.batch()) + " ("
                    + (m.estimate() ? "estimate, " : "") + ReconcileResult.percent(m.driftRel()) + (m.over() ? ", OVER the drift threshold" : "")
                    + ")");
        }
        String figures = String.format("%,d windows, %,d changed; %s; %,d late folded in", o.windows(), o.windowsChanged(),
                String.join(", ", measures), o.lateRecords());
        String done = o.status() == DayOutcome.Status.DRY_RUN ? "dry run, nothing written"
                : "replaced" + (o.attempts() > 1 ? " after " + o.attempts() + " attempts" : "");
        return head + figures + "; " + done + String.format(" (%.1f s)", o.durationMs() / 1000.0);
    }

    /** Entry point for spark-submit: see {@link ReconcileArguments}. Exit status 2 on bad input, 1 on failure. */
    public static void main(String[] args) {
        ReconcileArguments a = JobMain.orRefuse("reconcile", () -> ReconcileArguments.parse(args, System.getenv()));
        if (a.help()) {
            System.out.print(ReconcileArguments.usage());
            return;
        }
        JobMain.run("reconcile", a.config(), spark -> {
            new ReconcileJob(spark, a.config()).run(a.selection(), a.dryRun(), a.runId());
            return null;
        });
    }
}
