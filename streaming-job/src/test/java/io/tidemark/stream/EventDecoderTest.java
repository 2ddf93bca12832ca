package io.tidemark.stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.time.Instant;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.api.Test;

import io.tidemark.pipeline.PipelineParser;

class EventDecoderTest {
    private static final long INGEST = micros("2026-11-29T12:00:00Z");
    private final EventDecoder decoder = new EventDecoder(PipelineParser.shipped(PipelineParser.DEFAULT).events(), 1024, 5 * 60 * 1_000_000L,
            365 * 86_400_000_000L);

    private static long micros(String iso) {
        Instant i = Instant.parse(iso);
        return i.getEpochSecond() * 1_000_000L + i.getNano() / 1000;
    }

    private EventDecoder.Decoded decode(String json) {
        return decoder.decode(json.getBytes(StandardCharsets.UTF_8), INGEST);
    }

    @Test
    void decodesAValidEventAndIgnoresExtraFields() {
        EventDecoder.Decoded d = decode("{\"subscriber_id\":\"s1\",\"rat\":{\"x\":[1,2]},\"cell_site_id\":\"c1\","
                + "\"event_ts\":\"2026-11-29T11:59:30.123456789Z\",\"volume_gb\":1.5}");
        assertThat(d.reason).isNull();
        assertThat(d.deferred).isNull();
        assertThat(d.values).containsExactly("s1", "c1", Instant.parse("2026-11-29T11:59:30.123456Z"), 1.5);
        assertThat(d.eventMicros).isEqualTo(micros("2026-11-29T11:59:30.123456Z"));
    }

    @Test
    void zoneOffsetsDenoteTheSameInstant() {
        assertThat(EventDecoder.parseIsoInstantMicros("2026-11-29T13:00:00+01:00")).isEqualTo(micros("2026-11-29T12:00:00Z"));
        assertThat(EventDecoder.parseIsoInstantMicros("2026-11-29T07:30:00-0430")).isEqualTo(micros("2026-11-29T12:00:00Z"));
        assertThat(EventDecoder.parseIsoInstantMicros("1969-12-31T23:59:59.5Z")).isEqualTo(-500_000L);
    }

    @ParameterizedTest(name = "{0} -> {1}")
    @CsvSource(delimiter = '|', value = {
            "{\"subscriber_id\":\"s\",\"cell_site_id\":\"c\",\"event_ts\":\"2026-11-29T12:00:00Z\"}|MISSING_FIELD",
            "{\"subscriber_id\":\"s\",\"cell_site_id\":\"c\",\"event_ts\":\"2026-11-29T12:00:00Z\",\"volume_gb\":1|NOT_JSON",
            "{\"subscriber_id\":\"s\",\"cell_site_id\":\"c\",\"event_ts\":\"2026-11-29T12:00:00Z\",\"volume_gb\":1} x|NOT_JSON",
            "hello|NOT_JSON",
            "[1,2]|NOT_AN_OBJECT",
            "42|NOT_AN_OBJECT",
            "{\"subscriber_id\":\"s\",\"subscriber_id\":\"t\",\"cell_site_id\":\"c\",\"event_ts\":\"2026-11-29T12:00:00Z\",\"volume_gb\":1}|DUPLICATE_FIELD",
            "{\"subscriber_id\":null,\"cell_site_id\":\"c\",\"event_ts\":\"2026-11-29T12:00:00Z\",\"volume_gb\":1}|NULL_FIELD",
            "{\"subscriber_id\":\"s\",\"cell_site_id\":\"c\",\"event_ts\":\"2026-11-29T12:00:00Z\",\"volume_gb\":null}|NULL_FIELD",
            "{\"subscriber_id\":7,\"cell_site_id\":\"c\",\"event_ts\":\"2026-11-29T12:00:00Z\",\"volume_gb\":1}|WRONG_TYPE",
            "{\"subscriber_id\":\"s\",\"cell_site_id\":\"c\",\"event_ts\":\"2026-11-29T12:00:00Z\",\"volume_gb\":\"1.5\"}|WRONG_TYPE",
            "{\"subscriber_id\":\"s\",\"cell_site_id\":\"c\",\"event_ts\":1764417600000,\"volume_gb\":1}|WRONG_TYPE",
            "{\"subscriber_id\":\"s\",\"cell_site_id\":\"c\",\"event_ts\":\"yesterday\",\"volume_gb\":1}|BAD_TIMESTAMP",
            "{\"subscriber_id\":\"s\",\"cell_site_id\":\"c\",\"event_ts\":\"2026-13-45T99:00:00Z\",\"volume_gb\":1}|BAD_TIMESTAMP",
            "{\"subscriber_id\":\"s\",\"cell_site_id\":\"c\",\"event_ts\":\"2026-02-30T10:00:00Z\",\"volume_gb\":1}|BAD_TIMESTAMP",
            "{\"subscriber_id\":\"s\",\"cell_site_id\":\"c\",\"event_ts\":\"2026-11-29T12:00:00\",\"volume_gb\":1}|BAD_TIMESTAMP",
            "{\"subscriber_id\":\"s\",\"cell_site_id\":\"c\",\"event_ts\":\"2026-11-29T12:05:00.001Z\",\"volume_gb\":1}|FUTURE_EVENT_TIME",
            // Regression (hostile-conditions suite): a year-0 partition made raw_events unreadable for the deltalake package.
            "{\"subscriber_id\":\"s\",\"cell_site_id\":\"c\",\"event_ts\":\"0000-06-01T00:00:00Z\",\"volume_gb\":1}|PAST_EVENT_TIME",
            "{\"subscriber_id\":\"s\",\"cell_site_id\":\"c\",\"event_ts\":\"1970-01-01T00:00:00Z\",\"volume_gb\":1}|PAST_EVENT_TIME",
            "{\"subscriber_id\":\"s\",\"cell_site_id\":\"c\",\"event_ts\":\"2025-11-29T11:59:59.999Z\",\"volume_gb\":1}|PAST_EVENT_TIME",
    })
    void refusesWithTheRightReason(String json, InvalidReason expected) {
        EventDecoder.Decoded d = decode(json);
        // A time that does not parse or is out of range is deferred: a broken CHECK (RecordClassifierTest) would name the record first.
        boolean deferred = expected == InvalidReason.BAD_TIMESTAMP || expected == InvalidReason.FUTURE_EVENT_TIME
                || expected == InvalidReason.PAST_EVENT_TIME;
        assertThat(deferred ? d.deferred : d.reason).isEqualTo(expected.name());
        assertThat(deferred ? d.deferredDetail : d.detail).isNotBlank();
        if (deferred) {
            assertThat(d.reason).isNull();
        }
    }

    @Test
    void clockSkewBoundaryIsInclusive() {
        EventDecoder.Decoded d = decode("{\"subscriber_id\":\"s\",\"cell_site_id\":\"c\",\"event_ts\":\"2026-11-29T12:05:00Z\",\"volume_gb\":0}");
        assertThat(d.reason).isNull();
        assertThat(d.deferred).isNull();
    }

    @Test
    void maxEventAgeBoundaryIsInclusive() {
        EventDecoder.Decoded d = decode("{\"subscriber_id\":\"s\",\"cell_site_id\":\"c\",\"event_ts\":\"2025-11-29T12:00:00Z\",\"volume_gb\":1}");
        assertThat(d.reason).isNull();
        assertThat(d.deferred).isNull();
    }

    @Test
    void emptyOversizedAndInvalidUtf8() {
        assertThat(decoder.decode(null, INGEST).reason).isEqualTo(InvalidReason.EMPTY.name());
        assertThat(decoder.decode(new byte[0], INGEST).reason).isEqualTo(InvalidReason.EMPTY.name());
        assertThat(decoder.decode(" \r\n\t".getBytes(StandardCharsets.UTF_8), INGEST).reason).isEqualTo(InvalidReason.EMPTY.name());
        assertThat(decoder.decode(new byte[1025], INGEST).reason).isEqualTo(InvalidReason.OVERSIZED.name());
        byte[] bad = "{\"subscriber_id\":\"s\u00e9\"}".getBytes(StandardCharsets.UTF_8);
        bad[bad.length - 3] = (byte) 0xC3; // lead byte followed by '"': not UTF-8
        bad[bad.length - 2] = (byte) 0x28;
        assertThat(decoder.decode(bad, INGEST).reason).isEqualTo(InvalidReason.NOT_UTF8.name());
        assertThat(decoder.decode(new byte[] {(byte) 0xFF, (byte) 0xFE, 0, 1}, INGEST).reason).isEqualTo(InvalidReason.NOT_UTF8.name());
    }

    @Test
    void parserRejectsMalformedTimes() {
        assertThatThrownBy(() -> EventDecoder.parseIsoInstantMicros("2026-11-29T24:00:00Z")).hasMessageContaining("out of range");
        assertThatThrownBy(() -> EventDecoder.parseIsoInstantMicros("2026-11-29T12:00:00.Z")).hasMessageContaining("fraction");
        assertThatThrownBy(() -> EventDecoder.parseIsoInstantMicros("2026-11-29T12:00:00+25:00")).hasMessageContaining("offset");
    }
}
