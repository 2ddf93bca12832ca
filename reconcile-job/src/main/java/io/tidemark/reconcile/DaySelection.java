package io.tidemark.reconcile;

import java.time.LocalDate;
import java.time.format.DateTimeParseException;
import java.util.Objects;
import java.util.regex.Pattern;

import io.tidemark.lakehouse.RequestRefusedException;

/**
 * Which closed days a reconcile run recomputes: an explicit range, the most recent N closed days, or
 * the dirty ones. Immutable; the factories validate, so an instance is always a sensible request
 * (whether its days are closed is decided against the stream's watermark when the run starts).
 */
public final class DaySelection {

    /** The three ways to select days. */
    public enum Kind { RANGE, RECENT, DIRTY }

    private final Kind kind;
    private final LocalDate from;
    private final LocalDate to;
    private final int recentDays;

    private DaySelection(Kind kind, LocalDate from, LocalDate to, int recentDays) {
        this.kind = kind;
        this.from = from;
        this.to = to;
        this.recentDays = recentDays;
    }

    /** Days {@code from} through {@code to}, both included. Every one of them must be closed. */
    public static DaySelection range(LocalDate from, LocalDate to) {
        Objects.requireNonNull(from, "from");
        Objects.requireNonNull(to, "to");
        if (from.isAfter(to)) {
            throw new RequestRefusedException("--from " + from + " is after --to " + to + "; give the earlier day first");
        }
        return new DaySelection(Kind.RANGE, from, to, 0);
    }

    /** One day. */
    public static DaySelection day(LocalDate day) {
        return range(day, day);
    }

    /** The {@code n} most recent closed days, whether they hold data or not. */
    public static DaySelection recent(int n) {
        if (n < 1) {
            throw new RequestRefusedException("--recent " + n + ": the number of days must be at least 1");
        }
        return new DaySelection(Kind.RECENT, null, null, n);
    }

    /**
     * Closed days whose raw record count differs from the records counted in their KPI rows: days that
     * received late records since they were last reconciled (raw_events keeps late records, the
     * stream's KPIs leave them out) or were never reconciled and had late records. A reconciled day
     * balances.
     */
    public static DaySelection dirty() {
        return new DaySelection(Kind.DIRTY, null, null, 0);
    }

    /**
     * The selection of a command line: a range ({@code from} and {@code to}), {@code recent} days or
     * the dirty days, at most one of them; none means the {@code defaultRecent} most recent closed days.
     * The one place these rules live for {@code spark-submit} and {@code tidemark reconcile}.
     */
    public static DaySelection of(LocalDate from, LocalDate to, Integer recent, boolean dirty, int defaultRecent) {
        int modes = (from != null || to != null ? 1 : 0) + (recent != null ? 1 : 0) + (dirty ? 1 : 0);
        if (modes > 1) {
            throw new RequestRefusedException("choose one selection: --from/--to, --recent N or --dirty");
        }
        if ((from == null) != (to == null)) {
            throw new RequestRefusedException(from == null ? "--to " + to + " needs --from (for one day give the same date to both)"
                    : "--from " + from + " needs --to (for one day give the same date to both)");
        }
        if (from != null) {
            return range(from, to);
        }
        return dirty ? dirty() : recent(recent != null ? recent : defaultRecent);
    }

    private static final Pattern RUN_ID = Pattern.compile("[A-Za-z0-9][A-Za-z0-9_.:+@-]{0,199}");

    /**
     * A run id given by the caller (a scheduler's own id, so it can find the run's rows in
     * reconcile_report): 1-200 letters, digits and {@code _.:+@-}, starting with a letter or digit,
     * so it is safe in file names, SQL literals and URLs.
     */
    public static String checkRunId(String runId) {
        if (runId == null || !RUN_ID.matcher(runId).matches()) {
            throw new RequestRefusedException("--run-id '" + runId + "' is not a run id: use 1-200 letters, digits and _.:+@-, "
                    + "starting with a letter or digit");
        }
        return runId;
    }

    /** Parses a UTC day as {@code yyyy-MM-dd}, refusing anything else with the option's name in the message. */
    public static LocalDate parseDay(String option, String text) {
        try {
            return LocalDate.parse(text.trim());
        } catch (DateTimeParseException | NullPointerException e) {
            throw new RequestRefusedException(option + " '" + text + "' is not a day; write it as yyyy-MM-dd, e.g. 2026-11-27");
        }
    }

    public Kind kind() {
        return kind;
    }

    /** First day of a range; null for the other kinds. */
    public LocalDate from() {
        return from;
    }

    /** Last day of a range; null for the other kinds. */
    public LocalDate to() {
        return to;
    }

    /** N of {@link #recent(int)}; 0 for the other kinds. */
    public int recentDays() {
        return recentDays;
    }

    @Override
    public String toString() {
        return switch (kind) {
            case RANGE -> from.equals(to) ? "day " + from : "days " + from + " to " + to;
            case RECENT -> "the " + (recentDays == 1 ? "most recent closed day" : recentDays + " most recent closed days");
            case DIRTY -> "dirty days";
        };
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof DaySelection s && s.kind == kind && Objects.equals(s.from, from) && Objects.equals(s.to, to)
                && s.recentDays == recentDays;
    }

    @Override
    public int hashCode() {
        return Objects.hash(kind, from, to, recentDays);
    }
}
