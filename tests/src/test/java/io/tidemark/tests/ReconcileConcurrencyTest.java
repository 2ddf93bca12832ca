package io.tidemark.tests;

import static io.tidemark.tests.KafkaFixtures.event;
import static org.apache.spark.sql.functions.col;
import static org.apache.spark.sql.functions.udf;
import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.api.java.UDF1;
import org.apache.spark.sql.expressions.UserDefinedFunction;
import org.apache.spark.sql.types.DataTypes;
import org.junit.jupiter.api.Test;

import io.tidemark.operations.ConservationCheck;
import io.tidemark.lakehouse.Lakehouse;
import io.tidemark.lakehouse.Lakehouse.Table;
import io.tidemark.lakehouse.TidemarkConfig;
import io.tidemark.lakehouse.CommitRetry;
import io.tidemark.reconcile.DayOutcome;
import io.tidemark.reconcile.DaySelection;
import io.tidemark.reconcile.ReconcileJob;
import io.tidemark.reconcile.ReconcileResult;
import io.tidemark.tests.KafkaFixtures.Message;

/**
 * The two layers writing at once: reconcile replaces a closed day again and again while the stream
 * runs on live traffic (including late records for that very day); afterwards nothing is lost and
 * conservation holds. And a real Delta conflict on a day's overwrite is rebuilt and re-run.
 */
class ReconcileConcurrencyTest extends OnSharedInfrastructure {
    private static final LocalDate D27 = LocalDate.parse("2026-11-27");
    private static final Instant INGEST = Instant.parse("2026-11-29T12:00:00Z");

    @Test
    void reconcileBesideALiveStreamCompletesAndNothingIsLost() throws Exception {
        Path dir = infra.newDir("reconcile-live");
        String topic = "reconcile-live-" + dir.getFileName();
        infra.broker.createTopic(topic, 1);
        Random r = new Random(7);
        AtomicLong produced = new AtomicLong();
        // 11-27 through the day, then 11-28 just past midnight: two batches later 11-27 is closed.
        List<String> seed = new ArrayList<>();
        for (int i = 0; i < 40; i++) {
            seed.add(randomEvent(r, D27.atStartOfDay(java.time.ZoneOffset.UTC).toInstant().plusSeconds(i * 2_100L)));
        }
        for (int i = 0; i < 10; i++) {
            seed.add(randomEvent(r, Instant.parse("2026-11-28T00:00:00Z").plusSeconds(i * 180L)));
        }
        send(topic, seed, produced);

        TidemarkConfig config = infra.config(dir, topic)
                .set(TidemarkConfig.Key.TRIGGER, "1s")
                .set(TidemarkConfig.Key.MAX_OFFSETS_PER_TRIGGER, "1000")
                .build();
        SparkSession spark = infra.spark;
        Lakehouse lakehouse = Lakehouse.of(config);
        LiveStream stream = new LiveStream(spark, config);

        // Live traffic: 11-28 moving on a minute per message group, and a late record for 11-27 in each group.
        AtomicBoolean producing = new AtomicBoolean(true);
        AtomicReference<Throwable> producerFailure = new AtomicReference<>();
        Thread producer = new Thread(() -> {
            Instant eventTime = Instant.parse("2026-11-28T00:30:00Z");
            try {
                while (producing.get()) {
                    List<String> group = new ArrayList<>();
                    for (int i = 0; i < 4; i++) {
                        group.add(randomEvent(r, eventTime.plusSeconds(i * 13L)));
                    }
                    group.add(randomEvent(r, D27.atStartOfDay(java.time.ZoneOffset.UTC).toInstant().plusSeconds(r.nextInt(86_400))));
                    send(topic, group, produced);
                    eventTime = eventTime.plusSeconds(60);
                    Thread.sleep(500);
                }
            } catch (Throwable t) {
                producerFailure.set(t);
            }
        }, "traffic");
        producer.start();

        ReconcileJob job = new ReconcileJob(spark, config);
        long deadline = System.currentTimeMillis() + 600_000;
        while (!job.closedDays().isClosed(D27)) {
            assertThat(System.currentTimeMillis()).as("11-27 closes").isLessThan(deadline);
            stream.keepRunning();
            Thread.sleep(500);
        }
        List<ReconcileResult> duringTraffic = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            duringTraffic.add(job.run(DaySelection.day(D27), false));
            stream.keepRunning();
        }
        producing.set(false);
        producer.join();
        assertThat(producerFailure.get()).isNull();
        stream.drainAndStop();

        assertThat(duringTraffic).allSatisfy(res -> assertThat(res.days()).extracting(DayOutcome::day, DayOutcome::status)
                .containsExactly(org.assertj.core.api.Assertions.tuple(D27, DayOutcome.Status.RECONCILED)));
        System.out.printf("produced %d; late records folded in per run %s; overwrite attempts %s%n", produced.get(),
                duringTraffic.stream().map(res -> res.days().get(0).lateRecords()).toList(),
                duringTraffic.stream().map(res -> res.days().get(0).attempts()).toList());
        assertThat(duringTraffic.get(2).days().get(0).lateRecords()).as("late records kept arriving for the reconciled day")
                .isGreaterThan(duringTraffic.get(0).days().get(0).lateRecords());

        // The late records that came after the last run leave 11-27 dirty; a --dirty run folds them in.
        assertThat(job.dirtyDays()).containsExactly(D27);
        job.run(DaySelection.dirty(), false);
        assertThat(job.dirtyDays()).isEmpty();
        ConservationCheck.Report check = ConservationCheck.check(spark, lakehouse, produced.get());
        assertThat(check.violations()).as(check.summary()).isEmpty();
        assertThat(check.rawEvents() + check.deadLetters()).isEqualTo(produced.get());

        // Last, so everything above is checked either way: the speed layer itself must survive the batch layer.
        assertThat(stream.failures).as("the stream failed beside reconcile (it was restarted from its checkpoint to finish the test)")
                .isEmpty();
    }

    private static final AtomicBoolean BLOCK_NEXT = new AtomicBoolean();
    private static final AtomicReference<CountDownLatch> ENTERED = new AtomicReference<>();
    private static final AtomicReference<CountDownLatch> RELEASE = new AtomicReference<>();

    @Test
    void aRealConflictOnTheOverwriteIsRebuiltAndRerun() throws Exception {
        SparkSession spark = infra.spark;
        String path = infra.newDir("reconcile-conflict").resolve("table").toString();
        spark.sql("SELECT id, DATE'2026-11-27' AS event_date FROM range(5) UNION ALL SELECT id, DATE'2026-11-28' FROM range(2)")
                .write().format("delta").partitionBy("event_date").save(path);
        BLOCK_NEXT.set(true);
        ENTERED.set(new CountDownLatch(1));
        RELEASE.set(new CountDownLatch(1));
        UserDefinedFunction blockOnce = udf((UDF1<Long, Long>) id -> {
            if (BLOCK_NEXT.compareAndSet(true, false)) {
                ENTERED.get().countDown();
                RELEASE.get().await(60, TimeUnit.SECONDS);
            }
            return id;
        }, DataTypes.LongType).asNondeterministic();

        AtomicInteger attempts = new AtomicInteger();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        CommitRetry retry = new CommitRetry(5, Duration.ofMillis(100), d -> Thread.sleep(d.toMillis()));
        Thread overwrite = new Thread(() -> {
            try {
                attempts.set(retry.run(D27, "replacing the KPI rows", "re-run reconcile for it", () -> spark.range(100, 103).coalesce(1)
                        .select(blockOnce.apply(col("id")).as("id"), org.apache.spark.sql.functions.expr("DATE'2026-11-27'").as("event_date"))
                        .write().format("delta").mode("overwrite").option("replaceWhere", "event_date = DATE'2026-11-27'").save(path)));
            } catch (Throwable t) {
                failure.set(t);
            }
        });
        overwrite.start();
        assertThat(ENTERED.get().await(120, TimeUnit.SECONDS)).isTrue();
        // Another writer commits to the same day while the overwrite's transaction is open.
        spark.sql("SELECT 99L AS id, DATE'2026-11-27' AS event_date").write().format("delta").mode("append").save(path);
        RELEASE.get().countDown();
        overwrite.join(120_000);

        assertThat(failure.get()).isNull();
        assertThat(attempts.get()).as("the first overwrite lost to the append and was re-run").isEqualTo(2);
        assertThat(spark.read().format("delta").load(path).orderBy("event_date", "id").collectAsList())
                .extracting(row -> row.getLong(0) + "@" + row.getDate(1))
                .containsExactly("100@2026-11-27", "101@2026-11-27", "102@2026-11-27", "0@2026-11-28", "1@2026-11-28");
    }

    private static String randomEvent(Random r, Instant t) {
        return event("s" + (1 + r.nextInt(40)), "c" + (1 + r.nextInt(5)), t.toString(), Math.round(r.nextDouble() * 2_000) / 1000.0);
    }

    private static void send(String topic, List<String> values, AtomicLong produced) throws Exception {
        List<Message> m = new ArrayList<>();
        for (String v : values) {
            m.add(new Message(v, INGEST.plusMillis(produced.getAndIncrement())));
        }
        KafkaFixtures.send(infra.broker.bootstrapServers(), topic, m);
    }
}
