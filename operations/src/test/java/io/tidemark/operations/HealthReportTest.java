package io.tidemark.operations;

import static org.assertj.core.api.Assertions.assertThat;

import java.math.BigDecimal;
import java.time.Instant;
import java.time.LocalDate;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;

/** The report's page from given figures, without Spark: the tables under the charts and what the charts draw. */
class HealthReportTest {

    @Test
    void eachChartDrawsOneMarkPerFigureOfItsTableAndTheCellsCarryExactValues() {
        LocalDate d1 = LocalDate.of(2026, 11, 27);
        LocalDate d2 = LocalDate.of(2026, 11, 28);
        Map<String, Long> invalid = new LinkedHashMap<>();
        invalid.put("NOT_JSON", 3L);
        invalid.put("<script>", 1L); // a reason is data: escaped, never markup
        HealthFigures f = new HealthFigures(Instant.parse("2026-12-02T08:00:00Z"), "/data/lake",
                List.of(new HealthFigures.DayDrift(d1, 0.972972972, 0.5, 1, 1, 2, 2, new BigDecimal("9.25"), new BigDecimal("9.25")),
                        new HealthFigures.DayDrift(d2, null, null, 0, 0, 18, 13, new BigDecimal("20"), new BigDecimal("9.4"))),
                List.of(new HealthFigures.LateDay(d1, 1, 37_200_000, 37_200_000, 37_200_000)),
                invalid,
                List.of(new HealthFigures.Bucket(Instant.parse("2026-12-02T07:00:00Z"), 3, 60, 1.0, 2_500.0, 4_000.0),
                        new HealthFigures.Bucket(Instant.parse("2026-12-02T07:01:00Z"), 2, 30, 0.5, null, null)),
                60, List.of(new HealthFigures.DayState(d1, true, false, 1, 2, 2), new HealthFigures.DayState(d2, false, false, 0, 18, 13)));
        String html = HealthPage.html(f);

        assertThat(html).contains("<tr><td data-value=\"2026-11-27\">2026-11-27</td><td class=\"n\" data-value=\"1\">1</td>"
                + "<td class=\"n\" data-value=\"97.297\">97.297</td><td class=\"n\" data-value=\"50.0\">50.0</td>");
        // 2026-11-28: never reconciled (no figure before), 53 % of its volume missing from the KPIs now
        assertThat(html).contains("<td data-value=\"\">–</td><td data-value=\"\">–</td>", "data-value=\"53.0\"");
        assertThat(html).contains("<td data-value=\"&lt;script&gt;\">&lt;script&gt;</td>");
        assertThat(html).contains("<td data-value=\"2026-12-02 07:01:00Z\">2026-12-02 07:01:00Z</td>");
        assertThat(count(html, "<svg class=\"chart\"")).isEqualTo(5);
        assertThat(count(html, "class=\"mark s")).isEqualTo(2 * 2 + 1 + 2 + (2 + 0) + 2); // drift, late, invalid, freshness, throughput
        assertThat(count(html, "<script>")).isEqualTo(1); // the one that records what the browser drew
    }

    @Test
    void anEmptyChartSaysSoAndTheTableSaysNone() {
        HealthFigures f = new HealthFigures(Instant.parse("2026-12-02T08:00:00Z"), "/data/lake", List.of(), List.of(), Map.of(),
                List.of(), 0, List.of());
        String html = HealthPage.html(f);
        assertThat(count(html, "nothing to show")).isEqualTo(5);
        assertThat(count(html, "class=\"none\">none</td>")).isEqualTo(5);
    }

    @Test
    void bucketsKeepTheTimeChartsWithinSixtyPoints() {
        assertThat(HealthFigures.niceBucketSeconds(0)).isEqualTo(10);
        assertThat(HealthFigures.niceBucketSeconds(599)).isEqualTo(10);
        assertThat(HealthFigures.niceBucketSeconds(600)).isEqualTo(30);
        assertThat(HealthFigures.niceBucketSeconds(7 * 86_400)).isEqualTo(10_800);
        assertThat(HealthFigures.niceBucketSeconds(30 * 86_400)).isEqualTo(86_400);
    }

    private static int count(String s, String what) {
        int n = 0;
        for (int i = s.indexOf(what); i >= 0; i = s.indexOf(what, i + 1)) {
            n++;
        }
        return n;
    }
}
