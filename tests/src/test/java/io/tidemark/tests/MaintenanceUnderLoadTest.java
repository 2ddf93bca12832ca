package io.tidemark.tests;

import static io.tidemark.tests.KafkaFixtures.event;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.tuple;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Instant;
import java.time.LocalDate;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.Test;

import io.tidemark.lakehouse.Lakehouse;
import io.tidemark.lakehouse.Lakehouse.Table;
import io.tidemark.lakehouse.TidemarkConfig;
import io.tidemark.operations.ConservationCheck;
import io.tidemark.lakehouse.CommitRetry;
import io.tidemark.reconcile.DayOutcome;
import io.tidemark.reconcile.DaySelection;
import io.tidemark.operations.Maintenance;
import io.tidemark.reconcile.ReconcileJob;
import io.tidemark.reconcile.ReconcileResult;
import io.tidemark.stream.StreamingJob;
import io.tidemark.tests.KafkaFixtures.Message;

/**
 * {@link Maintenance} on a live lakehouse. Compacting beside a running stream and a reconcile that
 * replaces closed days meanwhile (threads on one Spark session) loses and duplicates nothing and
 * really compacts. {@code tidemark maintain} in a JVM of its own, killed with SIGKILL mid-run, leaves
 * every table readable and unchanged, and a rerun exits 0 with the compaction complete. A vacuum below
 * the safety minimum is refused on the command line with status 2 and one line.
 *
 * <p>The crafted topic: closed days D0..D2 written by several micro-batches each (one file per batch
 * and day), invalid records arriving on D0, late records for each closed day, and the open day D3.
 */
class MaintenanceUnderLoadTest extends OnSharedInfrastructure {
    private static final LocalDate D0 = LocalDate.parse("2026-11-25");
    private static final LocalDate D1 = D0.plusDays(1);
    private static final LocalDate D2 = D0.plusDays(2);
    private static final LocalDate D3 = D0.plusDays(3);
    private static final List<LocalDate> CLOSED = List.of(D0, D1, D2);
    /** Kafka timestamp of the valid records (plus a millisecond each); the invalid ones arrive on D0. */
    private static final Instant INGEST = Instant.parse("2026-11-29T12:00:00Z");
    private static final int PER_BATCH = 20;
    private static final List<Table> PARTITIONED = List.of(Table.RAW_EVENTS, Table.LATE_EVENTS, Table.DEAD_LETTER, Table.kpi("kpi_5m"));

    /** What was sent: the messages, and per event day the valid records (late ones included), and the invalid ones. */
    private static final class Sent {
        final List<Message> messages = new ArrayList<>();
        final Map<LocalDate, Long> rawByDay = new TreeMap<>();
        final Map<LocalDate, Long> lateByDay = new TreeMap<>();
        long invalid;

        void valid(String value, LocalDate day, boolean late) {
            messages.add(new Message(value, INGEST.plusMillis(messages.size())));
            rawByDay.merge(day, 1L, Long::sum);
            if (late) {
                lateByDay.merge(day, 1L, Long::sum);
            }
        }

        void invalid() {
            messages.add(new Message("not json " + invalid, D0.atTime(12, 0).toInstant(ZoneOffset.UTC).plusSeconds(invalid)));
            invalid++;
        }

        long valid() {
            return rawByDay.values().stream().mapToLong(Long::longValue).sum();
        }
    }

    /**
     * 30 on-time records per closed day in order, 6 invalid ones among the first 60, 10 records of D3
     * up to 02:00 (D2 closes), then 6 late records per closed day between 18 more of D3: with
     * {@value #PER_BATCH} records a batch, every closed day is in several files of raw_events, of
     * late_events and of kpi_5m, and D0 in several of dead_letter.
     */
    private static Sent seed(Random r) {
        Sent s = new Sent();
        for (LocalDate day : CLOSED) {
            for (int i = 0; i < 30; i++) {
                s.valid(randomEvent(r, at(day, i * 2_800L)), day, false);
                if (s.messages.size() % 10 == 0 && s.invalid < 6) {
                    s.invalid();
                }
            }
        }
        for (int i = 0; i < 10; i++) {
            s.valid(randomEvent(r, at(D3, 720L + i * 720L)), D3, false);
        }
        for (int i = 0; i < 18; i++) {
            LocalDate day = CLOSED.get(i % 3);
            s.valid(randomEvent(r, at(day, r.nextInt(36_000))), day, true); // before 10:00: far behind the watermark
            s.valid(randomEvent(r, at(D3, 7_200L + i * 200L)), D3, false);
        }
        return s;
    }

    @Test
    void maintenanceBesideALiveStreamAndAReconcileLosesNothingAndCompacts() throws Exception {
        Path dir = infra.newDir("maintain-live");
        String topic = "maintain-live-" + dir.getFileName();
        infra.broker.createTopic(topic, 1);
        Random r = new Random(11);
        Sent sent = seed(r);
        KafkaFixtures.send(infra.broker.bootstrapServers(), topic, sent.messages);
        TidemarkConfig config = infra.config(dir, topic).set(TidemarkConfig.Key.TRIGGER, "1s")
                .set(TidemarkConfig.Key.MAX_OFFSETS_PER_TRIGGER, String.valueOf(PER_BATCH)).build();
        SparkSession spark = infra.spark;
        Lakehouse lakehouse = Lakehouse.of(config);
        LiveStream stream = new LiveStream(spark, config);
        stream.drain();
        assertThat(new ReconcileJob(spark, config, new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8))
                .closedDays().lastClosed()).contains(D2);
        Map<LocalDate, Long> rawFilesBefore = TableChecks.filesByDay(spark, lakehouse, Table.RAW_EVENTS, "event_date");
        for (LocalDate d : CLOSED) {
            assertThat(rawFilesBefore.get(d)).as("%s written by several batches", d).isGreaterThan(1);
        }

        // Live traffic while maintenance and reconcile run: D3 moving on, and a late record for D2 in every group.
        AtomicBoolean producing = new AtomicBoolean(true);
        AtomicReference<Throwable> producerFailure = new AtomicReference<>();
        Thread producer = new Thread(() -> {
            Instant eventTime = at(D3, 4 * 3_600L);
            try {
                while (producing.get()) {
                    int from = sent.messages.size();
                    for (int i = 0; i < 3; i++) {
                        sent.valid(randomEvent(r, eventTime.plusSeconds(i * 17L)), D3, false);
                    }
                    sent.valid(randomEvent(r, at(D2, r.nextInt(36_000))), D2, true);
                    KafkaFixtures.send(infra.broker.bootstrapServers(), topic, sent.messages.subList(from, sent.messages.size()));
                    eventTime = eventTime.plusSeconds(60);
                    Thread.sleep(2_000); // slower than the stream's batches (20 records each), so it keeps up
                }
            } catch (Throwable t) {
                producerFailure.set(t);
            }
        }, "traffic");
        producer.start();

        // Reconcile of D1..D2, and maintain (threads on the test's Spark session, beside the stream)
        // as soon as reconcile has started: past its header line it has pinned the raw log's version
        // and is reading the closed days that maintain compacts. No vacuum: compaction is the point.
        Lines reconcileOut = new Lines();
        Lines maintainOut = new Lines();
        ReconcileJob job = new ReconcileJob(spark, config, reconcileOut);
        AtomicReference<ReconcileResult> reconciled = new AtomicReference<>();
        AtomicReference<List<Maintenance.TableReport>> maintained = new AtomicReference<>();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        long[] reconcileSpan = new long[2];
        long[] maintainSpan = new long[2];
        Thread reconcile = worker("reconcile", reconcileSpan, failure, () -> reconciled.set(job.run(DaySelection.range(D1, D2), false)));
        Thread maintain = worker("maintain", maintainSpan, failure, () -> maintained.set(
                new Maintenance(spark, config, maintainOut, CommitRetry.defaults()).run(new Maintenance.Options(false, null, false))));
        reconcile.start();
        reconcileOut.await("reconcile ", 240);
        maintain.start();
        maintain.join(300_000);
        reconcile.join(300_000);
        stream.keepRunning();
        producing.set(false);
        producer.join();
        stream.drainAndStop();
        assertThat(producerFailure.get()).isNull();
        assertThat(failure.get()).isNull();

        List<String> lines = maintainOut.lines();
        lines.forEach(l -> System.out.println("[maintain] " + l));
        System.out.printf("reconcile ran %d..%d ms, maintain %d..%d ms; %d live groups; overwrite attempts %s%n", 0,
                reconcileSpan[1] - reconcileSpan[0], maintainSpan[0] - reconcileSpan[0], maintainSpan[1] - reconcileSpan[0],
                sent.rawByDay.get(D2) - 36, reconciled.get().days().stream().map(DayOutcome::attempts).toList());
        assertThat(maintainSpan[0]).as("maintain started after reconcile").isGreaterThan(reconcileSpan[0]);
        assertThat(maintainSpan[0]).as("maintain started while reconcile was running").isLessThan(reconcileSpan[1]);
        assertThat(reconciled.get().days()).extracting(DayOutcome::day, DayOutcome::status)
                .containsExactly(tuple(D1, DayOutcome.Status.RECONCILED), tuple(D2, DayOutcome.Status.RECONCILED));
        assertThat(maintained.get()).extracting(Maintenance.TableReport::table, Maintenance.TableReport::problem)
                .containsExactly(tuple(Table.RAW_EVENTS, null), tuple(Table.LATE_EVENTS, null), tuple(Table.DEAD_LETTER, null),
                        tuple(Table.kpi("kpi_5m"), null), tuple(Table.STREAM_PROGRESS, null));
        assertThat(lines).as("a header and one line per table").hasSize(6);
        assertThat(lines.get(1)).startsWith("maintain raw_events   compacted 3 closed days (2026-11-25 .. 2026-11-27); ");
        assertThat(lines.get(2)).startsWith("maintain late_events  compacted 3 closed days (2026-11-25 .. 2026-11-27); ");
        assertThat(lines.get(3)).startsWith("maintain dead_letter  compacted 1 closed day (2026-11-25); ");
        assertThat(lines.get(0)).startsWith("maintain: ");
        assertThat(lines.get(5)).startsWith("maintain stream_progress compacted the whole table; ");
        assertThat(lines.subList(1, 6)).allSatisfy(l -> assertThat(l).contains("; vacuum: skipped ("));

        // D2's late records since reconcile's pinned read of the raw log leave it dirty: fold them in.
        // D0 (never reconciled, late records of its own) stays dirty and maintain's alone.
        assertThat(job.dirtyDays()).containsExactly(D0, D2);
        assertThat(job.run(DaySelection.range(D2, D2), false).dayList()).containsExactly(D2);
        assertThat(job.dirtyDays()).containsExactly(D0);

        // Nothing lost, nothing twice, and every count exactly what was sent.
        ConservationCheck.Report check = ConservationCheck.check(spark, lakehouse, (long) sent.messages.size());
        assertThat(check.violations()).as(check.summary()).isEmpty();
        assertThat(check.duplicates()).isZero();
        assertThat(check.rawEvents()).isEqualTo(sent.valid());
        assertThat(check.deadLetters()).isEqualTo(sent.invalid).isEqualTo(6);
        assertThat(rowsByDay(spark, lakehouse, Table.RAW_EVENTS)).isEqualTo(sent.rawByDay);
        assertThat(rowsByDay(spark, lakehouse, Table.LATE_EVENTS)).isEqualTo(sent.lateByDay);
        assertThat(TableChecks.closedDaysAgainstPlainSql(spark, lakehouse, List.of(D1, D2))).as("reconciled days against plain SQL").isEmpty();

        // Compaction really happened. D0 and D1 got nothing after it: one file per table. D2 got late
        // records meanwhile: one file holds every batch up to the compaction, each later file one later batch.
        for (Table t : List.of(Table.RAW_EVENTS, Table.LATE_EVENTS)) {
            Map<LocalDate, Long> files = TableChecks.filesByDay(spark, lakehouse, t, "event_date");
            assertThat(files.get(D0)).as("%s %s", t, D0).isEqualTo(1);
            assertThat(files.get(D1)).as("%s %s", t, D1).isEqualTo(1);
            assertCompactedUpToSomeBatch(spark, lakehouse, t, D2);
        }
        assertThat(TableChecks.filesByDay(spark, lakehouse, Table.DEAD_LETTER, "arrival_date")).containsEntry(D0, 1L);
        // kpi_5m: D0 is maintain's alone (not reconciled); D1 and D2 were replaced by reconcile before or after.
        assertThat(TableChecks.filesByDay(spark, lakehouse, Table.kpi("kpi_5m"), "event_date").get(D0)).isEqualTo(1);

        assertThat(stream.failures).as("the stream failed beside maintain (it was restarted from its checkpoint)").isEmpty();
    }

    @Test
    void aKilledMaintainLeavesEveryTableReadableAndUnchangedAndARerunCompletes() throws Exception {
        Path dir = infra.newDir("maintain-kill");
        String topic = "maintain-kill-" + dir.getFileName();
        infra.broker.createTopic(topic, 1);
        Sent sent = seed(new Random(12));
        KafkaFixtures.send(infra.broker.bootstrapServers(), topic, sent.messages);
        TidemarkConfig config = infra.config(dir, topic).set(TidemarkConfig.Key.MAX_OFFSETS_PER_TRIGGER, String.valueOf(PER_BATCH)).build();
        SparkSession spark = infra.spark;
        Lakehouse lakehouse = Lakehouse.of(config);
        // The command line refuses a vacuum below 7 days without --force: status 2, one line, nothing
        // done (it refuses before reading anything, so it may start beside the stream).
        JobProcess refused = JobProcess.start(Maintenance.class, List.of("lakehouse=" + config.lakehouseUri(), "maintain.vacuum-retention=1 hour"),
                Map.of(), dir.resolve("maintain-refused.log"));
        StreamingJob streamJob = new StreamingJob(spark, config, null);
        streamJob.start(true).awaitTermination();
        streamJob.close();
        List<Table> tables = lakehouse.tables().stream()
                .filter(t -> io.delta.tables.DeltaTable.isDeltaTable(spark, lakehouse.path(t))).toList();
        Map<String, Long> countsBefore = TableChecks.rowCounts(spark, lakehouse, tables);
        assertThat(countsBefore).containsEntry("raw_events", sent.valid()).containsEntry("dead_letter", 6L)
                .containsEntry("late_events", 18L);
        Map<LocalDate, List<String>> kpiBefore = TableChecks.kpiRowsByDay(spark, lakehouse);
        Map<Table, Map<LocalDate, Long>> filesBefore = files(spark, lakehouse);
        for (Table t : PARTITIONED) {
            LocalDate multi = t.equals(Table.DEAD_LETTER) ? D0 : D2;
            assertThat(filesBefore.get(t).get(multi)).as("%s %s in several files", t, multi).isGreaterThan(1);
        }

        // Killed as soon as it printed its first table's line: raw_events compacted (and committed),
        // late_events being compacted, dead_letter and kpi_5m not reached. No vacuum (the default one
        // deletes nothing younger than 7 days, and takes most of maintain's time).
        JobProcess killed = JobProcess.start(Maintenance.class, List.of("lakehouse=" + config.lakehouseUri(), "--no-vacuum"), Map.of(),
                dir.resolve("maintain-killed.log"));
        killed.awaitLine("maintain raw_events", 240);
        killed.kill();
        assertThat(killed.process.exitValue()).as("killed by SIGKILL, not finished").isEqualTo(137);
        List<String> killedLines = killed.lines().stream().filter(l -> l.startsWith("maintain")).toList();
        killedLines.forEach(l -> System.out.println("[killed maintain] " + l));
        assertThat(killedLines).noneMatch(l -> l.startsWith("maintain kpi_5m") || l.startsWith("maintain dead_letter"));

        assertThat(refused.await(180)).as("the refused maintain\n%s", refused.tail()).isEqualTo(2);
        assertThat(refused.lines().stream().filter(l -> l.startsWith("tidemark maintain:") || l.startsWith("maintain")).toList())
                .containsExactly("tidemark maintain: a vacuum retention of 1 hours is below Delta's safety minimum of 168 hours: it could delete "
                        + "files that a running stream replaying its last batch, a reconcile in progress or an analyst's query on an older table "
                        + "version still reads. Keep at least 168 hours, or add --force when nothing reads or writes these tables meanwhile");

        // Every table readable, every count and KPI row as before; raw_events compacted, kpi_5m not yet.
        assertThat(TableChecks.rowCounts(spark, lakehouse, tables)).isEqualTo(countsBefore);
        assertThat(TableChecks.kpiRowsByDay(spark, lakehouse)).isEqualTo(kpiBefore);
        Map<Table, Map<LocalDate, Long>> filesKilled = files(spark, lakehouse);
        for (LocalDate d : CLOSED) {
            assertThat(filesKilled.get(Table.RAW_EVENTS).get(d)).as("raw_events %s compacted by the killed run", d).isEqualTo(1);
        }
        assertThat(filesKilled.get(Table.kpi("kpi_5m"))).as("kpi_5m not reached").isEqualTo(filesBefore.get(Table.kpi("kpi_5m")));
        assertThat(filesKilled.get(Table.DEAD_LETTER)).as("dead_letter not reached").isEqualTo(filesBefore.get(Table.DEAD_LETTER));

        JobProcess rerun = JobProcess.start(Maintenance.class, List.of("lakehouse=" + config.lakehouseUri(), "--no-vacuum"), Map.of(),
                dir.resolve("maintain-rerun.log"));
        assertThat(rerun.await(240)).as("the rerun\n%s", rerun.tail()).isZero();
        List<String> rerunLines = rerun.lines().stream().filter(l -> l.startsWith("maintain")).toList();
        rerunLines.forEach(l -> System.out.println("[rerun maintain] " + l));
        assertThat(rerunLines).hasSize(6).noneMatch(l -> l.contains("PROBLEM"));
        assertThat(rerunLines.get(1)).startsWith("maintain raw_events   no closed day to compact; ");
        assertThat(rerunLines.get(3)).startsWith("maintain dead_letter  compacted 1 closed day (2026-11-25); ");
        assertThat(rerunLines.get(4)).startsWith("maintain kpi_5m       compacted 3 closed days (2026-11-25 .. 2026-11-27); ");

        // Compaction complete: each closed day one file in every table, the open day as it was; data unchanged.
        Map<Table, Map<LocalDate, Long>> filesAfter = files(spark, lakehouse);
        for (Table t : PARTITIONED) {
            Map<LocalDate, Long> expected = new TreeMap<>(filesBefore.get(t));
            expected.replaceAll((day, n) -> day.isAfter(D2) ? n : 1L);
            assertThat(filesAfter.get(t)).as("%s files per day", t).isEqualTo(expected);
        }
        assertThat(TableChecks.rowCounts(spark, lakehouse, tables)).isEqualTo(countsBefore);
        assertThat(TableChecks.kpiRowsByDay(spark, lakehouse)).isEqualTo(kpiBefore);
        assertThat(ConservationCheck.check(spark, lakehouse, (long) sent.messages.size()).violations()).isEmpty();
    }

    /** Runs {@code body} in a thread, recording when it started and ended and the first failure. */
    private static Thread worker(String name, long[] span, AtomicReference<Throwable> failure, Runnable body) {
        return new Thread(() -> {
            span[0] = System.currentTimeMillis();
            try {
                body.run();
            } catch (Throwable t) {
                failure.compareAndSet(null, t);
            } finally {
                span[1] = System.currentTimeMillis();
            }
        }, name);
    }

    /** A job's printed lines, kept so the test can wait for one. */
    private static final class Lines extends PrintStream {
        private final List<String> lines = new java.util.concurrent.CopyOnWriteArrayList<>();

        Lines() {
            super(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8);
        }

        @Override
        public void println(String line) {
            lines.add(line);
        }

        List<String> lines() {
            return List.copyOf(lines);
        }

        void await(String prefix, long timeoutSeconds) throws InterruptedException {
            long deadline = System.currentTimeMillis() + timeoutSeconds * 1000;
            while (lines.stream().noneMatch(l -> l.startsWith(prefix))) {
                assertThat(System.currentTimeMillis()).as("a line starting with '%s'", prefix).isLessThan(deadline);
                Thread.sleep(10);
            }
        }
    }

    private static Map<Table, Map<LocalDate, Long>> files(SparkSession spark, Lakehouse lakehouse) {
        Map<Table, Map<LocalDate, Long>> out = new TreeMap<>();
        for (Table t : PARTITIONED) {
            out.put(t, TableChecks.filesByDay(spark, lakehouse, t, t.equals(Table.DEAD_LETTER) ? "arrival_date" : "event_date"));
        }
        return out;
    }

    /**
     * The day was compacted while the stream kept appending to it: exactly one of its files holds
     * several batches, and every other file holds one batch, later than all of those.
     */
    private static void assertCompactedUpToSomeBatch(SparkSession spark, Lakehouse lakehouse, Table table, LocalDate day) {
        List<Row> files = spark.sql("SELECT _metadata.file_path, min(batch_id), max(batch_id), count(DISTINCT batch_id) FROM "
                + lakehouse.ref(table) + " WHERE event_date = DATE'" + day + "' GROUP BY 1 ORDER BY 2").collectAsList();
        List<Row> compacted = files.stream().filter(f -> f.getLong(3) > 1).toList();
        assertThat(compacted).as("%s %s: the one file holding several batches, of %s", table, day, files).hasSize(1);
        long upTo = compacted.get(0).getLong(2);
        assertThat(files).filteredOn(f -> f != compacted.get(0))
                .allSatisfy(f -> {
                    assertThat(f.getLong(3)).isEqualTo(1);
                    assertThat(f.getLong(1)).isGreaterThan(upTo);
                });
        System.out.printf("%s %s: one file up to batch %d, then %d files of later batches%n", table, day, upTo, files.size() - 1);
    }

    private static Map<LocalDate, Long> rowsByDay(SparkSession spark, Lakehouse lakehouse, Table table) {
        Map<LocalDate, Long> out = new TreeMap<>();
        spark.sql("SELECT event_date, count(*) FROM " + lakehouse.ref(table) + " GROUP BY 1").collectAsList()
                .forEach(row -> out.put(row.getDate(0).toLocalDate(), row.getLong(1)));
        return out;
    }

    private static Instant at(LocalDate day, long second) {
        return day.atStartOfDay(ZoneOffset.UTC).toInstant().plusSeconds(second);
    }

    private static String randomEvent(Random r, Instant t) {
        return event("s" + (1 + r.nextInt(30)), "c" + (1 + r.nextInt(4)), t.toString(), Math.round(r.nextDouble() * 2_000) / 1000.0);
    }
}
