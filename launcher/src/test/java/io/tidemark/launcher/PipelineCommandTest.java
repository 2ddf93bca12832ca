package io.tidemark.launcher;

import static io.tidemark.launcher.TidemarkCommandLineTest.assertBadInput;
import static io.tidemark.launcher.TidemarkCommandLineTest.run;
import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code tidemark pipeline check|explain}: what a valid file will create, how it computes, and a refusal's one line. */
class PipelineCommandTest {

    private static final Path PAYMENTS = Path.of(System.getProperty("user.dir")).getParent().resolve("pipelines/payments.sql");

    @Test
    void checkPrintsTheTablesAValidPipelineWillCreate() {
        TidemarkCommandLineTest.Result r = run("pipeline", "check", PAYMENTS.toString());
        assertThat(r.code()).as(r.err()).isZero();
        assertThat(r.out()).contains(PAYMENTS + ": valid\n",
                "events payments: topic 'payments' (json), event time ts, lateness 10 min\n",
                "  check positive_amount: amount > 0 (a record that fails it goes to dead_letter as POSITIVE_AMOUNT)\n",
                "  check known_status: status IN ('approved', 'declined', 'refunded') (a record that fails it goes to dead_letter as "
                        + "KNOWN_STATUS)\n",
                "KPI tables (drift threshold 0.50 %):\n",
                "  merchant_1m: windows of 1 minute (tumbling) by merchant_id, country\n",
                "  country_1h: windows of 1 hour every 15 minutes (hopping) by country, rows where status <> 'refunded'\n",
                "    columns: window_start TIMESTAMP NOT NULL, window_end TIMESTAMP NOT NULL, country STRING NOT NULL, txns BIGINT NOT NULL, "
                        + "avg_amount DECIMAL(16,6) NOT NULL, avg_amount_sum DECIMAL(22,2) NOT NULL, avg_amount_count BIGINT NOT NULL, "
                        + "min_amount DECIMAL(12,2) NOT NULL, users BIGINT NOT NULL, users_sketch BINARY NOT NULL, is_final BOOLEAN NOT NULL, "
                        + "source STRING NOT NULL, updated_at TIMESTAMP NOT NULL, stream_batch_id BIGINT, event_date DATE NOT NULL\n",
                // A FILTERed measure may have no value in a window: its column may be null.
                "approved_amount DECIMAL(22,2), declined BIGINT NOT NULL,");
    }

    @Test
    void explainShowsEachMeasuresFourFacesAndTheLateRule() {
        TidemarkCommandLineTest.Result r = run("pipeline", "explain", PAYMENTS.toString());
        assertThat(r.code()).as(r.err()).isZero();
        assertThat(r.out()).contains("  approved_amount = sum(amount) FILTER (WHERE status = 'approved')\n"
                // the FILTER folded into the argument (Measure.partial says why)
                + "    partial, per micro-batch and window: sum(CASE WHEN status = 'approved' THEN amount END) AS approved_amount\n"
                + "    merge, stored row s with the batch's b: coalesce(s.approved_amount + b.approved_amount, s.approved_amount, "
                + "b.approved_amount) AS approved_amount\n"
                + "    exact, by reconcile over raw_events: sum(CASE WHEN status = 'approved' THEN amount END) (the stream's value is exact too)\n");
        assertThat(r.out()).contains("  users = approx_count_distinct(user_id)\n"
                + "    partial, per micro-batch and window: hll_sketch_agg(user_id, 12) AS users_sketch\n"
                + "    merge, stored row s with the batch's b: coalesce(hll_union(s.users_sketch, b.users_sketch), s.users_sketch, "
                + "b.users_sketch) AS users_sketch\n"
                + "    value read: hll_sketch_estimate(users_sketch)\n"
                + "    exact, by reconcile over raw_events: CAST(size(array_sort(collect_set(user_id))) AS BIGINT) (the stream's value is the sketch's estimate until then)\n");
        assertThat(r.out()).contains("  late rule: a record is late for each of its windows (1 hour every 15 minutes (hopping)) that ended at or "
                + "before the watermark in force for its batch (the newest event time seen, minus 10 min): it is not counted there but goes "
                + "to late_events, naming country_1h and the window, and reconcile counts it; the windows of it still open count it\n");
    }

    @Test
    void aRefusedPipelineExitsTwoWithItsOneLine(@TempDir Path dir) throws Exception {
        Path bad = dir.resolve("bad.sql");
        Files.writeString(bad, "CREATE TABLE e (id STRING NOT NULL, ts TIMESTAMP NOT NULL) USING kafka OPTIONS (topic 't', event_time 'ts', "
                + "lateness '1 minute');\nCREATE STREAMING TABLE k AS SELECT window(ts, '1 minute') AS w, collect_set(id) AS ids\n"
                + "FROM STREAM e GROUP BY window(ts, '1 minute');\n");
        assertBadInput(run("pipeline", "check", bad.toString()), "tidemark pipeline check", bad + ":2:65: collect_set(id) cannot be merged "
                + "across micro-batches; write instead: approx_count_distinct(col)");
        assertBadInput(run("pipeline", "explain", bad.toString()), "tidemark pipeline explain", bad + ":2:65:");
        assertBadInput(run("pipeline", "check", dir.resolve("none.sql").toString()), "tidemark pipeline check", "no pipeline file");
        assertBadInput(run("pipeline"), "tidemark pipeline", "check or explain");
    }
}
