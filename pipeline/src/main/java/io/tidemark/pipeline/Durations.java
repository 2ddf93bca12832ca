package io.tidemark.pipeline;

import java.time.Duration;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A duration as a person writes it, in a pipeline file ({@code lateness '10 minutes'}, a window's size)
 * and in a setting ({@code stream.trigger=5s}): read ({@link #parse}) and written back ({@link #human}),
 * each in one place, so that what Tidemark says of a duration reads back as the same duration.
 */
public final class Durations {
    private static final Pattern WRITTEN = Pattern.compile(
            "(\\d+)\\s*(ms|milliseconds?|s|sec|seconds?|m|min|minutes?|h|hours?|d|days?)", Pattern.CASE_INSENSITIVE);

    private Durations() {
    }

    /** Parses "5 minutes", "10s", "250 ms", "2h", ISO-8601 ("PT5M") or a bare "0". */
    public static Duration parse(String text) {
        String t = text.trim();
        if (t.equals("0")) {
            return Duration.ZERO; // "stream.trigger = 0": no unit needed for nothing
        }
        if (t.toUpperCase(Locale.ROOT).startsWith("P")) {
            return Duration.parse(t.toUpperCase(Locale.ROOT));
        }
        Matcher m = WRITTEN.matcher(t);
        if (!m.matches()) {
            throw new IllegalArgumentException("'" + text + "' is not a duration; write e.g. '5 minutes', '10s', '250 ms' or 'PT5M'");
        }
        long n = Long.parseLong(m.group(1));
        String unit = m.group(2).toLowerCase(Locale.ROOT);
        if (unit.startsWith("ms") || unit.startsWith("milli")) {
            return Duration.ofMillis(n);
        }
        if (unit.startsWith("s")) {
            return Duration.ofSeconds(n);
        }
        if (unit.startsWith("m")) {
            return Duration.ofMinutes(n);
        }
        if (unit.startsWith("h")) {
            return Duration.ofHours(n);
        }
        return Duration.ofDays(n);
    }

    /** "1 minute", "5 minutes", "1 day", "90 seconds", "0 seconds": what {@link #parse} reads back as {@code d}. */
    public static String human(Duration d) {
        long ms = d.toMillis();
        if (ms == 0) {
            return "0 seconds";
        }
        if (ms % 86_400_000 == 0) {
            return plural(ms / 86_400_000, "day");
        }
        if (ms % 3_600_000 == 0) {
            return plural(ms / 3_600_000, "hour");
        }
        if (ms % 60_000 == 0) {
            return plural(ms / 60_000, "minute");
        }
        return ms % 1000 == 0 ? plural(ms / 1000, "second") : plural(ms, "millisecond");
    }

    private static String plural(long n, String unit) {
        return n + " " + unit + (n == 1 ? "" : "s");
    }
}
