package io.tidemark.lakehouse;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;

import org.junit.jupiter.api.Test;

import io.tidemark.lakehouse.DayBalance.TableDay;

/** Which KPI tables a day must be reconciled in: the rule alone, on crafted per-table figures. */
class DayBalanceTest {

    @Test
    void aTableIsUnbalancedWhenItsCountDiffersFromTheRawLogs() {
        assertThat(DayBalance.unbalanced(List.of(new TableDay("merchant_1m", 97, 100, 0, 40), new TableDay("country_1h", 380, 380, 0, 24))))
                .containsExactly("merchant_1m");
        assertThat(DayBalance.unbalanced(List.of(new TableDay("merchant_1m", 100, 100, 0, 40), new TableDay("country_1h", 380, 380, 0, 24))))
                .isEmpty();
    }

    @Test
    void aTableStillHoldingTheStreamsRowsOfADayAnotherHoldsReconciledRowsOfIsUnbalancedEvenWhereItsCountAgrees() {
        // reconcile replaced the day in merchant_1m and stopped before country_1h, whose stream rows count every record
        assertThat(DayBalance.unbalanced(List.of(new TableDay("merchant_1m", 100, 100, 41, 0), new TableDay("country_1h", 380, 380, 0, 24))))
                .containsExactly("country_1h");
        // both replaced: nothing to do; a table without rows of the day (its WHERE kept none) is not waiting for anything
        assertThat(DayBalance.unbalanced(List.of(new TableDay("merchant_1m", 100, 100, 41, 0), new TableDay("country_1h", 380, 380, 24, 0))))
                .isEmpty();
        assertThat(DayBalance.unbalanced(List.of(new TableDay("merchant_1m", 100, 100, 41, 0), new TableDay("country_1h", 0, 0, 0, 0))))
                .isEmpty();
        // a late record after the day was reconciled everywhere: the count rule, in the table it changes
        assertThat(DayBalance.unbalanced(List.of(new TableDay("merchant_1m", 100, 101, 41, 0), new TableDay("country_1h", 380, 380, 24, 0))))
                .containsExactly("merchant_1m");
    }
}
