package io.tidemark.launcher;

import java.time.Duration;
import java.time.Instant;
import java.time.LocalDate;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.List;
import java.util.Locale;

/** How the launcher prints numbers, instants and durations: UTC, thousands separated. */
final class Formats {
    private static final DateTimeFormatter SECONDS = DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm:ss'Z'").withZone(ZoneOffset.UTC);

    private Formats() {
    }

    static String count(long n) {
        return String.format(Locale.ROOT, "%,d", n);
    }

    static String instant(Instant t) {
        return t == null ? "-" : SECONDS.format(t);
    }

    static String instantMillis(long epochMillis) {
        return epochMillis <= 0 ? "none yet" : instant(Instant.ofEpochMilli(epochMillis));
    }

    /** "850 ms", "8.2 s", "3 min 5 s", "2 h 10 min", "3 d 4 h". */
    static String duration(long millis) {
        if (millis < 0) {
            return "-" + duration(-millis);
        }
        if (millis < 1000) {
            return millis + " ms";
        }
        if (millis < 60_000) {
            return millis % 1000 == 0 ? millis / 1000 + " s" : String.format(Locale.ROOT, "%.1f s", millis / 1000.0);
        }
        Duration d = Duration.ofMillis(millis);
        if (millis < 3_600_000) {
            return two(d.toMinutes(), "min", d.toSecondsPart(), "s");
        }
        if (millis < 86_400_000) {
            return two(d.toHours(), "h", d.toMinutesPart(), "min");
        }
        return two(d.toDays(), "d", d.toHoursPart(), "h");
    }

    private static String two(long big, String bigUnit, long small, String smallUnit) {
        return big + " " + bigUnit + (small == 0 ? "" : " " + small + " " + smallUnit);
    }

    static String duration(Duration d) {
        return duration(d.toMillis());
    }

    static String rate(double perSecond) {
        return String.format(Locale.ROOT, "%,.0f/s", perSecond);
    }

    /** "2026-05-01, 2026-05-02" or, for many, the first, a count and the last few. */
    static String days(List<LocalDate> days) {
        if (days.isEmpty()) {
            return "none";
        }
        if (days.size() <= 8) {
            return String.join(", ", days.stream().map(LocalDate::toString).toList());
        }
        return days.size() + " days, " + days.get(0) + " .. " + String.join(", ",
                days.subList(days.size() - 5, days.size()).stream().map(LocalDate::toString).toList());
    }
}
