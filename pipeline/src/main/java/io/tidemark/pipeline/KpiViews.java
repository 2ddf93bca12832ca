package io.tidemark.pipeline;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Pattern;

/**
 * The analyst views over a pipeline's KPI tables, generated from their definitions: for each table
 * {@code <base>_final} (its rows the stream will not change again: the watermark has passed their
 * window, or the day was reconciled), and for a tumbling window that tiles the span, the roll-ups
 * {@code <base>_hourly} and {@code <base>_daily} (UTC days; {@code is_final}: every window of the
 * span is final; {@code reconciled}: every one comes from the batch layer), which merge the
 * windows' stored state with each measure's {@link Measure#rollup roll-up face} and read the value
 * with its {@link Measure#value value face}. A hopping table has no roll-up: its windows overlap,
 * so adding them up would count each record several times.
 *
 * <p>{@code <base>} is the table's name without a trailing window size ({@code kpi_5m} gives
 * {@code kpi_final}, {@code merchant_1m} gives {@code merchant_final}), or the whole name when two
 * tables would share a base. Each statement is a {@code CREATE OR REPLACE TEMPORARY VIEW} over the
 * registered {@code tidemark.*} table, as {@code sql/views.sql} writes the hand-written views.
 */
public final class KpiViews {
    private static final Pattern WINDOW_SUFFIX = Pattern.compile("_\\d+[smhd]$");
    private static final Duration HOUR = Duration.ofHours(1);
    private static final Duration DAY = Duration.ofDays(1);

    private KpiViews() {
    }

    /** The statements of every KPI table's views, in the order of the pipeline's tables. */
    public static List<String> statements(Pipeline pipeline) {
        Map<String, Integer> bases = new HashMap<>();
        pipeline.tables().forEach(t -> bases.merge(strip(t.name()), 1, Integer::sum));
        List<String> out = new ArrayList<>();
        for (Pipeline.KpiTable t : pipeline.tables()) {
            String base = bases.get(strip(t.name())) == 1 ? strip(t.name()) : t.name();
            out.add(finalRows(t, base));
            if (rollsUpTo(t, HOUR)) {
                out.add(hourly(t, base));
            }
            if (rollsUpTo(t, DAY)) {
                out.add(daily(t, base));
            }
        }
        return out;
    }

    /** The names of the views {@link #statements} creates for {@code tables}. */
    static Set<String> names(List<Pipeline.KpiTable> tables) {
        Set<String> out = new TreeSet<>();
        for (String statement : statements(new Pipeline("", null, tables, 0.01))) {
            String rest = statement.substring("CREATE OR REPLACE TEMPORARY VIEW ".length());
            out.add(rest.substring(0, rest.indexOf(' ')).toLowerCase(Locale.ROOT));
        }
        return out;
    }

    private static String strip(String table) {
        String base = WINDOW_SUFFIX.matcher(table).replaceFirst("");
        return base.isEmpty() ? table : base;
    }

    /**
     * The columns the table's roll-up views add beside its dimensions and measures, for a table that has them (none for one
     * without): a dimension or measure may not take one of these names, or its view would hold two columns of one name.
     */
    static Set<String> rollupColumns(Pipeline.KpiTable t) {
        return rollsUpTo(t, HOUR) || rollsUpTo(t, DAY) ? Set.of("hour_start", "hour_end", "windows", "reconciled")
                : Set.of();
    }

    /** Whether the table's windows tile {@code span} without overlapping it: tumbling, shorter, and dividing it. */
    static boolean rollsUpTo(Pipeline.KpiTable t, Duration span) {
        Duration w = t.window().size();
        return t.window().tumbling() && w.compareTo(span) < 0 && span.toMillis() % w.toMillis() == 0;
    }

    private static String finalRows(Pipeline.KpiTable t, String base) {
        List<String> cols = new ArrayList<>();
        for (String name : t.columnNames()) {
            if (!name.equals("is_final") && !name.equals("stream_batch_id")) {
                cols.add(Pipeline.quote(name));
            }
        }
        return "CREATE OR REPLACE TEMPORARY VIEW " + base + "_final AS\n"
                + "SELECT " + String.join(", ", cols) + "\n"
                + "FROM tidemark." + t.name() + "\n"
                + "WHERE is_final";
    }

    private static String hourly(Pipeline.KpiTable t, String base) {
        List<String> outer = new ArrayList<>(List.of("hour_start", "hour_start + INTERVAL 1 HOUR AS hour_end"));
        List<String> keys = new ArrayList<>(List.of("date_trunc('HOUR', window_start)"));
        return rollup(t, base + "_hourly", outer, List.of("date_trunc('HOUR', window_start) AS hour_start"), keys, true);
    }

    private static String daily(Pipeline.KpiTable t, String base) {
        return rollup(t, base + "_daily", new ArrayList<>(List.of("event_date")), List.of("event_date"), new ArrayList<>(List.of("event_date")),
                false);
    }

    /**
     * {@code SELECT <lead>, dimensions, values, windows, is_final, reconciled, state kept besides the
     * values[, event_date]} over the grouped state.
     */
    private static String rollup(Pipeline.KpiTable t, String view, List<String> lead, List<String> innerLead, List<String> keys,
                                 boolean eventDateLast) {
        List<String> dims = t.dimensions().stream().map(d -> Pipeline.quote(d.name())).toList();
        List<String> outer = new ArrayList<>(lead);
        outer.addAll(dims);
        List<String> inner = new ArrayList<>(innerLead);
        inner.addAll(dims);
        if (eventDateLast) {
            inner.add("event_date");
        }
        List<String> state = new ArrayList<>();
        for (Measure m : t.measures()) {
            String value = m.value();
            outer.add(value.equals(m.name()) ? value : value + " AS " + m.name());
            m.rollup().forEach(r -> inner.add(r.aliased()));
            m.state().stream().map(f -> f.name()).filter(n -> !n.equals(m.name())).forEach(state::add);
        }
        outer.addAll(List.of("windows", "is_final", "reconciled"));
        outer.addAll(state);
        if (eventDateLast) {
            outer.add("event_date");
        }
        inner.addAll(List.of("count(*) AS windows", "bool_and(is_final) AS is_final", "bool_and(source = 'batch') AS reconciled"));
        keys.addAll(dims);
        if (eventDateLast) {
            keys.add("event_date");
        }
        return "CREATE OR REPLACE TEMPORARY VIEW " + view + " AS\n"
                + "SELECT " + String.join(", ", outer) + "\n"
                + "FROM (\n"
                + "  SELECT " + String.join(",\n         ", inner) + "\n"
                + "  FROM tidemark." + t.name() + "\n"
                + "  GROUP BY " + String.join(", ", keys) + "\n"
                + ")";
    }
}
