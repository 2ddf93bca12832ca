package io.tidemark.tests;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.List;

import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.Test;

import io.tidemark.generate.GeneratedMessage;
import io.tidemark.generate.TrafficGenerator;
import io.tidemark.generate.TrafficProfile;
import io.tidemark.generate.TrafficSpec;
import io.tidemark.lakehouse.Lakehouse;
import io.tidemark.lakehouse.Lakehouse.Table;
import io.tidemark.lakehouse.QueryDefinition;
import io.tidemark.lakehouse.TidemarkConfig;
import io.tidemark.reconcile.DayOutcome;
import io.tidemark.reconcile.DaySelection;
import io.tidemark.reconcile.ReconcileJob;
import io.tidemark.reconcile.ReconcileResult;

/**
 * A KPI table added to a running pipeline: the stream serves it from its next start, and reconcile
 * backfills its history from raw_events. The payments pipeline runs with merchant_1m only through
 * the first hour of the 28th; it restarts with country_1h (hopping, with a WHERE) added and runs through
 * the 28th. The 27th, which country_1h never saw, and the 28th, whose first hour it missed, are
 * then dirty for it; reconcile makes both tables of both days the truth (Spark's own window() and
 * aggregates over every record), and the stream's rows of the open day are country_1h's own.
 */
class KpiTableAddedTest extends OnSharedInfrastructure {
    private static final LocalDate D27 = LocalDate.parse("2026-11-27");
    private static final LocalDate D28 = LocalDate.parse("2026-11-28");

    private static final String COUNTRY_1H = """
            SELECT w.start AS window_start, w.end AS window_end, country, count(*) AS txns, avg(amount) AS avg_amount, min(amount) AS min_amount,
                   count(DISTINCT user_id) AS users, to_date(w.start) AS event_date
            FROM (SELECT *, window(ts, '1 hour', '15 minutes') AS w FROM {raw} WHERE status <> 'refunded' {and}) GROUP BY w, country""";
    private static final String MERCHANT_1M = """
            SELECT w.start AS window_start, merchant_id, country, count(*) AS txns, sum(amount) FILTER (WHERE status = 'approved') AS approved,
                   count(*) FILTER (WHERE status = 'declined') AS declined, count(DISTINCT user_id) AS users,
                   CAST(percentile_disc(0.95) WITHIN GROUP (ORDER BY amount) AS DECIMAL(12,2)) AS p95, max(amount) AS max_amount,
                   to_date(w.start) AS event_date
            FROM (SELECT *, window(ts, '1 minute') AS w FROM {raw}) GROUP BY w, merchant_id, country""";

    @Test
    void theStreamServesItFromItsNextStartAndReconcileBackfillsItsPast() throws Exception {
        Path dir = infra.newDir("added");
        String payments = Files.readString(Path.of(System.getProperty("user.dir")).getParent().resolve("pipelines/payments.sql"));
        int hopping = payments.indexOf("-- Hopping");
        String withoutCountry = payments.substring(0, hopping) + payments.substring(payments.indexOf(';', hopping) + 1);
        Path before = Files.writeString(dir.resolve("before.sql"), withoutCountry);
        Path after = Files.writeString(dir.resolve("after.sql"), payments);
        TidemarkConfig one = infra.config(dir, "payments").set(TidemarkConfig.Key.PIPELINE, before.toString()).build();
        TidemarkConfig two = infra.config(dir, "payments").set(TidemarkConfig.Key.PIPELINE, after.toString()).build();
        SparkSession spark = infra.spark;
        Lakehouse lakehouse = Lakehouse.of(two);
        assertThat(Lakehouse.of(one).kpiTables()).extracting(Table::tableName).containsExactly("merchant_1m");

        long restartBatch;
        try (BatchDriver driver = new BatchDriver(spark, one)) {
            // 27th 21:00 to 28th about 01:25: the 27th closes under merchant_1m alone
            pipe(driver, spec(Instant.parse("2026-11-27T21:00:00Z"), 800, 0.05, 1));
            assertThat(spark.sql("SELECT max(last_closed_day) FROM " + lakehouse.ref(Table.STREAM_PROGRESS)).first().getDate(0).toLocalDate())
                    .isEqualTo(D27);
            assertThat(lakehouse.exists(spark, Table.kpi("country_1h"))).isFalse();
            // Restarted with the table added: the guard accepts a new table (it refuses a changed one).
            QueryDefinition.verify(spark, two, -1);
            driver.restartWith(two);
            restartBatch = driver.nextBatchId();
            // 28th 01:30 to 29th about 10:50: the 28th closes once the watermark (a batch behind) passes 29th 00:45
            pipe(driver, spec(Instant.parse("2026-11-28T01:30:00Z"), 1_200, 0.01, 2));
        }
        String raw = lakehouse.ref(Table.RAW_EVENTS);
        String country = lakehouse.ref(Table.kpi("country_1h"));
        // The stream served country_1h from the restart on: its rows are those of the records of the batches since
        // (every one on time); of the 27th it has nothing.
        String sinceRestart = "SELECT * FROM (" + COUNTRY_1H.replace("{raw}", raw).replace("{and}", "AND batch_id >= " + restartBatch) + ")";
        String countryColumns = "SELECT window_start, window_end, country, txns, avg_amount, min_amount, users, event_date FROM " + country;
        assertThat(spark.sql("SELECT min(stream_batch_id) FROM " + country).first().getLong(0)).isGreaterThanOrEqualTo(restartBatch);
        assertThat(rows(spark, countryColumns)).hasSizeGreaterThan(100).containsExactlyElementsOf(rows(spark, sinceRestart));
        assertThat(rows(spark, countryColumns + " WHERE event_date = DATE'" + D27 + "'")).isEmpty();
        assertThat(spark.sql("SELECT count(*) FROM " + raw + " WHERE is_late").first().getLong(0)).isZero();

        ByteArrayOutputStream printed = new ByteArrayOutputStream();
        ReconcileJob job = new ReconcileJob(spark, two, new PrintStream(printed, true, StandardCharsets.UTF_8));
        assertThat(job.closedDays().lastClosed()).contains(D28);
        // Both days are dirty: country_1h counts nothing of the 27th and misses the 28th's first hour.
        assertThat(job.dirtyDays()).containsExactly(D27, D28);
        ReconcileResult result = job.run(DaySelection.dirty(), false);
        assertThat(result.days()).extracting(DayOutcome::day).containsExactly(D27, D28);
        assertThat(job.dirtyDays()).isEmpty();

        String closed = "event_date <= DATE'" + D28 + "'";
        assertThat(rows(spark, countryColumns + " WHERE " + closed)).hasSizeGreaterThan(150)
                .containsExactlyElementsOf(rows(spark, "SELECT * FROM (" + COUNTRY_1H.replace("{raw}", raw).replace("{and}", "") + ") WHERE "
                        + closed));
        assertThat(rows(spark, "SELECT window_start, merchant_id, country, txns, approved_amount, declined, users, p95_amount, max_amount, event_date "
                + "FROM " + lakehouse.ref(Table.kpi("merchant_1m")) + " WHERE " + closed)).hasSizeGreaterThan(500)
                .containsExactlyElementsOf(rows(spark, "SELECT * FROM (" + MERCHANT_1M.replace("{raw}", raw) + ") WHERE " + closed));
        // The open day keeps the stream's rows.
        String open = " WHERE event_date > DATE'" + D28 + "'";
        assertThat(rows(spark, countryColumns + open)).isNotEmpty().containsExactlyElementsOf(rows(spark, sinceRestart + open));
    }

    private static List<String> rows(SparkSession spark, String sql) {
        return spark.sql(sql + " ORDER BY ALL").collectAsList().stream().map(Row::toString).toList();
    }

    private static TrafficSpec spec(Instant start, long count, double perSecond, long seed) {
        // on time only: the open day's comparison needs no late split (PaymentsPipelineTest checks that)
        return TrafficSpec.builder().profile(TrafficProfile.PAYMENTS).count(count).invalidFraction(0.05).lateFraction(0)
                .eventClockStart(start).eventsPerSecondOfEventTime(perSecond).merchants(20).users(100).seed(seed).build();
    }

    /** Pipes the spec's messages in batches of 200, each with the Kafka timestamp of the event clock it was generated at. */
    private static void pipe(BatchDriver driver, TrafficSpec spec) throws Exception {
        TrafficGenerator generator = new TrafficGenerator(spec);
        List<BatchDriver.Bytes> batch = new ArrayList<>();
        while (generator.hasNext()) {
            Instant ingest = Instant.ofEpochMilli(generator.eventClockMillis());
            GeneratedMessage m = generator.next();
            batch.add(new BatchDriver.Bytes(0, m.value(), ingest));
            if (batch.size() == 200 || !generator.hasNext()) {
                driver.pipeBytes(ingest, batch);
                batch = new ArrayList<>();
            }
        }
    }
}
