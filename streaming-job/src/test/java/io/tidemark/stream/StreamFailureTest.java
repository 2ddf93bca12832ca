package io.tidemark.stream;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Map;

import org.apache.spark.SparkThrowable;
import org.junit.jupiter.api.Test;

import io.tidemark.lakehouse.IncompatibleQueryException;
import io.tidemark.lakehouse.TidemarkConfig;

/** Which failures the stream explains, and the one line each entry point prints: without Spark or Kafka. */
class StreamFailureTest {

    private final TidemarkConfig config = TidemarkConfig.defaults();

    /** Spark's Kafka source raises its data loss as a SparkThrowable with a condition and parameters. */
    private static final class KafkaLoss extends IllegalStateException implements SparkThrowable {
        private static final long serialVersionUID = 1L;
        private final String condition;
        private final Map<String, String> parameters;

        KafkaLoss(String condition, Map<String, String> parameters) {
            super("[" + condition + "] Spark's text");
            this.condition = condition;
            this.parameters = parameters;
        }

        @Override
        public String getCondition() {
            return condition;
        }

        @Override
        public Map<String, String> getMessageParameters() {
            return parameters;
        }
    }

    @Test
    void kafkaDataLossDeepInTheCauseChainIsAFailedRunWithTheOffsetsAndTheWayToRecover() {
        Throwable failure = new RuntimeException("query failed", new RuntimeException("batch planning",
                new KafkaLoss("KAFKA_DATA_LOSS.PARTITION_OFFSET_CHANGED", Map.of("topicPartition", "ev-0", "prevOffset", "10", "newOffset", "3"))));
        StreamFailure f = StreamFailure.explain(failure, config).orElseThrow();
        assertThat(f.exitCode()).isEqualTo(1);
        assertThat(f.getCause()).isSameAs(failure);
        assertThat(f.line()).isEqualTo("failed: Kafka data loss: partition ev-0 now ends at offset 3 but the checkpoint expected to continue "
                + "at offset 10: the topic was deleted and recreated (or truncated), and the records from there on are not the ones the "
                + "checkpoint refers to. " + StreamFailure.RECOVER);
        assertThat(f.withTrace("/tmp/trace.log").line()).isEqualTo(f.line() + " (Spark's trace: /tmp/trace.log)");
    }

    @Test
    void aConditionOnlyQuotedInTheTextOfAFailedTaskIsStillKnown() {
        Throwable failure = new RuntimeException("Job aborted: Lost task 0.0: [KAFKA_DATA_LOSS.PARTITIONS_DELETED] gone");
        assertThat(StreamFailure.explain(failure, config).map(StreamFailure::line)).contains("failed: Kafka data loss: partitions ? of the "
                + "checkpoint no longer exist: the topic was deleted (and maybe recreated with fewer partitions). " + StreamFailure.RECOVER);
    }

    @Test
    void anIncompatibleDefinitionIsSettingsToFixNotAFailedRun() {
        IncompatibleQueryException refused = new IncompatibleQueryException("the checkpoint was written with window 5 minutes");
        StreamFailure f = StreamFailure.explain(new RuntimeException("wrapped", refused), config).orElseThrow();
        assertThat(f.exitCode()).isEqualTo(2);
        assertThat(f.line()).isEqualTo("the checkpoint was written with window 5 minutes");
    }

    @Test
    void aRefusedStartIsInputToCorrectInOneLine() {
        io.tidemark.lakehouse.RequestRefusedException refused = new io.tidemark.lakehouse.RequestRefusedException("the Kafka topic out of "
                + "t's output has cleanup.policy=delete: a consumer rebuilds the table only from a compacted topic");
        StreamFailure f = StreamFailure.explain(new IllegalStateException("starting", refused), config).orElseThrow();
        assertThat(f.exitCode()).isEqualTo(2);
        assertThat(f.line()).isEqualTo(refused.getMessage());
    }

    @Test
    void anUnrelatedFailureIsNotSwallowed() {
        assertThat(StreamFailure.explain(new IllegalStateException("something else", new java.io.IOException("connection reset")), config))
                .isEmpty();
        assertThat(StreamFailure.explain(new RuntimeException("KAFKA_DATA_LOSS without brackets"), config)).isEmpty();
    }
}
