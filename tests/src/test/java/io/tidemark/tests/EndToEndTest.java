package io.tidemark.tests;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;

import org.apache.spark.sql.Row;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.RegisterExtension;

import io.tidemark.generate.EventFormat;
import io.tidemark.generate.GeneratedMessage.Kind;
import io.tidemark.generate.GenerationReport;
import io.tidemark.generate.KafkaTrafficProducer;
import io.tidemark.generate.TrafficSpec;
import io.tidemark.operations.ConservationCheck;
import io.tidemark.lakehouse.Lakehouse;
import io.tidemark.lakehouse.Lakehouse.Table;
import io.tidemark.lakehouse.TidemarkConfig;
import io.tidemark.stream.StreamingJob;

/**
 * Generated traffic with late and invalid records of every kind through the real broker and the
 * real streaming job: the stream never stops, every record lands in exactly one place, and the KPIs
 * equal a recomputation from the raw log.
 */
class EndToEndTest {
    static SharedInfrastructure infra;

    @RegisterExtension
    static BeforeAllCallback start = (ExtensionContext c) -> infra = SharedInfrastructure.get(c);

    @Test
    void everyRecordIsAccountedForExactly() throws Exception {
        Path dir = infra.newDir("e2e");
        String topic = "e2e-" + dir.getFileName();
        infra.broker.createTopic(topic, 2);
        TrafficSpec spec = TrafficSpec.builder().topic(topic).count(20_000L).cells(30).subscribers(2_000)
                .lateFraction(0.03).invalidFraction(0.06).seed(5).eventsPerSecondOfEventTime(4).build();
        GenerationReport produced = new KafkaTrafficProducer(infra.broker.bootstrapServers(), Map.of()).produce(spec, p -> { });
        for (Kind k : Kind.invalidKinds(EventFormat.JSON)) {
            assertThat(produced.count(k)).as("generated %s", k).isPositive();
        }
        assertThat(Kind.invalidKinds(EventFormat.JSON)).hasSize(19);

        TidemarkConfig config = infra.config(dir, topic).set(TidemarkConfig.Key.MAX_OFFSETS_PER_TRIGGER, "4000").build();
        StreamingJob job = new StreamingJob(infra.spark, config, null);
        job.start(true).awaitTermination();
        job.close();

        Lakehouse lh = Lakehouse.of(config);
        ConservationCheck.Report report = ConservationCheck.check(infra.spark, lh, produced.messages());
        assertThat(report.violations()).isEmpty();
        assertThat(report.rawEvents()).isEqualTo(produced.valid());
        assertThat(report.deadLetters()).isEqualTo(produced.invalid());
        assertThat(report.duplicates()).isZero();
        assertThat(report.kpiRowsDiffering()).isZero();
        assertThat(report.lateEvents()).as("late records past the first batches' zero watermark").isPositive();

        // Volume is conserved exactly: what the KPIs hold plus what was late is what the raw log holds.
        Row volumes = infra.spark.sql("SELECT "
                + "(SELECT sum(CAST(volume_gb AS DECIMAL(38,9))) FROM " + lh.ref(Table.RAW_EVENTS) + "), "
                + "(SELECT sum(total_gb) FROM " + lh.ref(Table.kpi("kpi_5m")) + "), "
                + "(SELECT sum(CAST(volume_gb AS DECIMAL(38,9))) FROM " + lh.ref(Table.LATE_EVENTS) + ")").first();
        assertThat(volumes.getDecimal(1).add(volumes.getDecimal(2))).isEqualByComparingTo(volumes.getDecimal(0));

        // Each kind of garbage is refused for its own reason.
        Map<String, Long> reasons = new HashMap<>();
        for (Row r : infra.spark.sql("SELECT reason, count(*) FROM " + lh.ref(Table.DEAD_LETTER) + " GROUP BY reason").collectAsList()) {
            reasons.put(r.getString(0), r.getLong(1));
        }
        assertThat(reasons.getOrDefault("EMPTY", 0L)).isEqualTo(produced.count(Kind.EMPTY) + produced.count(Kind.NULL_VALUE));
        assertThat(reasons.getOrDefault("NOT_AN_OBJECT", 0L)).isEqualTo(produced.count(Kind.NOT_AN_OBJECT));
        assertThat(reasons.getOrDefault("MISSING_FIELD", 0L)).isEqualTo(produced.count(Kind.MISSING_FIELD));
        assertThat(reasons.getOrDefault("NULL_FIELD", 0L)).isEqualTo(produced.count(Kind.NULL_FIELD));
        assertThat(reasons.getOrDefault("WRONG_TYPE", 0L)).isEqualTo(produced.count(Kind.WRONG_TYPE) + produced.count(Kind.NESTED_JUNK));
        assertThat(reasons.getOrDefault("DUPLICATE_FIELD", 0L)).isEqualTo(produced.count(Kind.DUPLICATE_FIELD));
        assertThat(reasons.getOrDefault("BLANK_ID", 0L)).isEqualTo(produced.count(Kind.BLANK_ID));
        assertThat(reasons.getOrDefault("PAST_EVENT_TIME", 0L)).isEqualTo(produced.count(Kind.PAST_EVENT_TIME));
        assertThat(reasons.getOrDefault("NEGATIVE_VOLUME", 0L)).isEqualTo(produced.count(Kind.NEGATIVE_VOLUME));
        assertThat(reasons.getOrDefault("NON_FINITE_VOLUME", 0L)).isEqualTo(produced.count(Kind.NON_FINITE_VOLUME));
        assertThat(reasons.getOrDefault("BAD_TIMESTAMP", 0L)).isEqualTo(produced.count(Kind.BAD_TIMESTAMP));
        assertThat(reasons.getOrDefault("FUTURE_EVENT_TIME", 0L)).isEqualTo(produced.count(Kind.FUTURE_EVENT_TIME));
        assertThat(reasons.getOrDefault("OVERSIZED", 0L)).isEqualTo(produced.count(Kind.OVERSIZED));
        assertThat(reasons.getOrDefault("NOT_UTF8", 0L) + reasons.getOrDefault("NOT_JSON", 0L))
                .isEqualTo(produced.count(Kind.INVALID_UTF8) + produced.count(Kind.BINARY_GARBAGE)
                        + produced.count(Kind.TRUNCATED_JSON) + produced.count(Kind.NOT_JSON));
        assertThat(reasons.getOrDefault("NOT_UTF8", 0L)).isGreaterThanOrEqualTo(produced.count(Kind.INVALID_UTF8));
    }
}
