package io.tidemark.lakehouse;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.ConnectException;
import java.util.concurrent.ExecutionException;

import org.junit.jupiter.api.Test;

class ErrorsTest {

    @Test
    void failuresAreDescribedOnOneLineWithoutRepeatingCauses() {
        RuntimeException root = new IllegalStateException("disk full\n  at somewhere");
        RuntimeException quoting = new RuntimeException("[STREAM_FAILED] query failed: disk full", root);
        RuntimeException outer = new IllegalStateException("the stream stopped: " + quoting.getMessage(), quoting);
        assertThat(Errors.withCauses(outer)).isEqualTo("the stream stopped: [STREAM_FAILED] query failed: disk full");
        assertThat(Errors.withCauses(new RuntimeException("a", new RuntimeException("b")))).isEqualTo("a <- b");
        assertThat(Errors.firstLine("\n\n  [PARSE_SYNTAX_ERROR] at 'x'\n== SQL ==")).isEqualTo("[PARSE_SYNTAX_ERROR] at 'x'");
    }

    @Test
    void aMessagelessFailureIsToldByItsClassAndANetworkFailureWithIt() {
        assertThat(Errors.oneLine(new ExecutionException(null))).isEqualTo("ExecutionException");
        assertThat(Errors.oneLine(new IllegalStateException("commit failed\nplan: ..."))).isEqualTo("commit failed");
        assertThat(Errors.named(new ConnectException("Connection refused\n at ..."))).isEqualTo("ConnectException: Connection refused");
        assertThat(Errors.named(new ConnectException())).isEqualTo("ConnectException");
        assertThat(Errors.firstLine(null)).isEmpty();
    }
}
