package io.tidemark.reconcile;

import java.math.BigDecimal;
import java.math.RoundingMode;
import java.text.DecimalFormat;
import java.text.DecimalFormatSymbols;
import java.time.Instant;
import java.time.LocalDate;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Optional;

/**
 * The outcome of one reconcile run: its id (the {@code run_id} of its {@code reconcile_report}
 * rows), the watermark that decided which days were closed, and one {@link DayOutcome} per selected
 * day in the order they were processed.
 */
public record ReconcileResult(String runId, Instant startedAt, Optional<Instant> watermark, DaySelection selection, boolean dryRun,
                              List<DayOutcome> days) {

    public ReconcileResult {
        days = List.copyOf(days);
    }

    /** The outcome of {@code day}, if it was part of the run. */
    public Optional<DayOutcome> day(LocalDate day) {
        return days.stream().filter(d -> d.day().equals(day)).findFirst();
    }

    /** The days, in run order. */
    public List<LocalDate> dayList() {
        return days.stream().map(DayOutcome::day).toList();
    }

    /**
     * The run's summary as an aligned table, one line per day: the measure the stream was furthest
     * off in (relatively, of those it keeps exactly), and the measures over the drift threshold.
     */
    public String summaryTable() {
        String header = String.format("%-10s  %8s  %8s  %-36s  %9s  %-24s  %s",
                "day", "windows", "changed", "largest drift", "late in", "over the threshold", "result");
        StringBuilder sb = new StringBuilder(header).append('\n').append("-".repeat(header.length())).append('\n');
        for (DayOutcome d : days) {
            boolean data = d.status() != DayOutcome.Status.NO_DATA;
            Optional<DayOutcome.MeasureDrift> worst = d.measures().stream().filter(m -> !m.estimate())
                    .max(Comparator.comparingDouble(m -> m.driftRel() == null ? (m.drift().signum() == 0 ? 0 : Double.MAX_VALUE)
                            : Math.abs(m.driftRel())));
            List<String> over = d.measures().stream().filter(DayOutcome.MeasureDrift::over).map(d::label).toList();
            sb.append(String.format("%-10s  %8s  %8s  %-36s  %9s  %-24s  %s%n",
                    d.day(),
                    data ? String.format("%,d", d.windows()) : "-",
                    data ? String.format("%,d", d.windowsChanged()) : "-",
                    data ? worst.map(m -> d.label(m) + " " + percent(m.driftRel()) + " (" + value(m.stream()) + " -> " + value(m.batch()) + ")")
                            .orElse("-") : "-",
                    data ? String.format("%,d", d.lateRecords()) : "-",
                    data ? (over.isEmpty() ? "none" : String.join(", ", over)) : "-",
                    result(d)));
        }
        if (days.isEmpty()) {
            sb.append("(no day selected)\n");
        }
        return sb.toString();
    }

    /** A value as the reports show it: whole numbers grouped, others with at most three decimals, half-even; "-" for none. */
    public static String value(BigDecimal v) {
        if (v == null) {
            return "-";
        }
        DecimalFormat f = new DecimalFormat("#,##0.###", DecimalFormatSymbols.getInstance(Locale.ROOT));
        f.setRoundingMode(RoundingMode.HALF_EVEN);
        return f.format(v);
    }

    private static String result(DayOutcome d) {
        return switch (d.status()) {
            case RECONCILED -> d.attempts() > 1 ? "reconciled (" + d.attempts() + " attempts)" : "reconciled";
            case DRY_RUN -> "dry run: not written";
            case NO_DATA -> "no data";
        };
    }

    /** A relative drift as a signed percentage, whatever the JVM's locale; "n/a" when the truth is zero. */
    public static String percent(Double rel) {
        return rel == null ? "n/a" : String.format(Locale.ROOT, "%+.2f%%", rel * 100);
    }
}
