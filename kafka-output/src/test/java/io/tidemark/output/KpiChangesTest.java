package io.tidemark.output;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;

import org.junit.jupiter.api.Test;

import io.tidemark.pipeline.Pipeline.KafkaOutput.Mode;
import io.tidemark.output.KpiChanges.Change;
import io.tidemark.output.KpiChanges.Publication;

class KpiChangesTest {
    private static final String K1 = "{\"table\":\"t\",\"window_start\":\"2026-12-01T10:00:00.000Z\",\"cell\":\"a\"}";
    private static final String K2 = "{\"table\":\"t\",\"window_start\":\"2026-12-01T10:00:00.000Z\",\"cell\":\"b\"}";

    private static String row(long n, boolean isFinal, String source) {
        return "{\"n\":" + n + ",\"is_final\":" + isFinal + ",\"source\":\"" + source + "\"}";
    }

    private static Change insert(long v, String key, long n, boolean isFinal, String source) {
        return new Change(v, "insert", key, row(n, isFinal, source), isFinal);
    }

    private static Change delete(long v, String key, long n, boolean isFinal, String source) {
        return new Change(v, "delete", key, row(n, isFinal, source), isFinal);
    }

    /**
     * The stream's commits rewrite every open window, changed or not (a delete and an insert each);
     * reconcile replaces the day. In updates mode a key is published in each version its row changed,
     * with that version; an unchanged rewrite publishes nothing; a row gone is a tombstone.
     */
    private static final List<Change> HISTORY = List.of(
            insert(3, K1, 5, false, "stream"),
            delete(4, K1, 5, false, "stream"), insert(4, K1, 5, false, "stream"), insert(4, K2, 1, false, "stream"),
            delete(5, K1, 5, false, "stream"), insert(5, K1, 7, true, "stream"), delete(5, K2, 1, false, "stream"), insert(5, K2, 1, true, "stream"),
            delete(9, K1, 7, true, "stream"), insert(9, K1, 8, true, "batch"), delete(9, K2, 1, true, "stream"),
            // a second reconcile of the day with nothing new: the same rows again
            delete(12, K1, 8, true, "batch"), insert(12, K1, 8, true, "batch"));

    @Test
    void updatesPublishEveryChangeOfARowWithTheCommitThatMadeIt() {
        assertThat(KpiChanges.publications(HISTORY, Mode.UPDATES)).containsExactly(
                new Publication(K1, "{\"n\":5,\"is_final\":false,\"source\":\"stream\",\"version\":3}", 3),
                new Publication(K2, "{\"n\":1,\"is_final\":false,\"source\":\"stream\",\"version\":4}", 4),
                new Publication(K1, "{\"n\":7,\"is_final\":true,\"source\":\"stream\",\"version\":5}", 5),
                new Publication(K2, "{\"n\":1,\"is_final\":true,\"source\":\"stream\",\"version\":5}", 5),
                new Publication(K1, "{\"n\":8,\"is_final\":true,\"source\":\"batch\",\"version\":9}", 9),
                new Publication(K2, null, 9));
    }

    @Test
    void finalPublishesAWindowOnceItIsFinalThenEachCorrection() {
        assertThat(KpiChanges.publications(HISTORY, Mode.FINAL)).containsExactly(
                new Publication(K1, "{\"n\":7,\"is_final\":true,\"source\":\"stream\",\"version\":5}", 5),
                new Publication(K2, "{\"n\":1,\"is_final\":true,\"source\":\"stream\",\"version\":5}", 5),
                new Publication(K1, "{\"n\":8,\"is_final\":true,\"source\":\"batch\",\"version\":9}", 9),
                new Publication(K2, null, 9));
        // An open row that goes away was never published in final mode: no tombstone for it either.
        assertThat(KpiChanges.publications(List.of(insert(1, K1, 2, false, "stream"), delete(2, K1, 2, false, "stream")), Mode.FINAL)).isEmpty();
    }

    @Test
    void updateImagesCountAsTheRowBeforeAndAfter() {
        assertThat(KpiChanges.publications(List.of(new Change(7, "update_preimage", K1, row(1, true, "stream"), true),
                new Change(7, "update_postimage", K1, row(2, true, "batch"), true)), Mode.FINAL))
                .containsExactly(new Publication(K1, "{\"n\":2,\"is_final\":true,\"source\":\"batch\",\"version\":7}", 7));
    }

    @Test
    void twoNewRowsForOneKeyInOneCommitAreRefused() {
        assertThatThrownBy(() -> KpiChanges.publications(List.of(insert(2, K1, 1, false, "stream"), insert(2, K1, 2, false, "stream")),
                Mode.UPDATES)).hasMessage("two new rows for " + K1 + " in version 2");
    }
}
