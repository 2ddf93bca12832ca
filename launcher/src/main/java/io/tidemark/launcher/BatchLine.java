package io.tidemark.launcher;

import java.time.Instant;
import java.util.Locale;

import io.tidemark.lakehouse.StreamProgress;

/** One line per committed micro-batch, from its stream_progress row. */
final class BatchLine {
    private BatchLine() {
    }

    static String of(StreamProgress p) {
        return String.format(Locale.ROOT, "batch %4d  in %9s  on time %9s  late %7s  invalid %7s  watermark %s  %s",
                p.batchId(), Formats.count(p.recordsIn()), Formats.count(p.onTime()), Formats.count(p.late()),
                Formats.count(p.invalid()), watermark(p.watermark()), Formats.duration(p.durationMs()));
    }

    static String watermark(Instant t) {
        return t == null || t.toEpochMilli() <= 0 ? "none yet            " : Formats.instant(t);
    }
}
