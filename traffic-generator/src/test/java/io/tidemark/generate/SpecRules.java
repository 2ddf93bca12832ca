package io.tidemark.generate;

import com.fasterxml.jackson.core.JacksonException;
import com.fasterxml.jackson.core.json.JsonReadFeature;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.json.JsonMapper;

import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.format.DateTimeFormatter;
import java.time.format.DateTimeParseException;

/**
 * An independent reading of the README's validity rules, written with Jackson, to check the generator
 * against. Returns a reason for an invalid message, null for a valid one.
 */
final class SpecRules {

    static final int MAX_MESSAGE_BYTES = 64 * 1024;
    static final long CLOCK_SKEW_MILLIS = 5 * 60_000L;
    static final long MAX_EVENT_AGE_MILLIS = 365 * 86_400_000L;

    /** Like Spark's JSON reader: NaN and Infinity tokens are numbers; unlike it, trailing tokens fail. */
    static final JsonMapper MAPPER = JsonMapper.builder()
            .enable(JsonReadFeature.ALLOW_NON_NUMERIC_NUMBERS)
            .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
            .enable(com.fasterxml.jackson.core.StreamReadFeature.STRICT_DUPLICATE_DETECTION)
            .build();

    private SpecRules() {
    }

    static String strictUtf8(byte[] bytes) throws CharacterCodingException {
        return StandardCharsets.UTF_8.newDecoder()
                .onMalformedInput(CodingErrorAction.REPORT)
                .onUnmappableCharacter(CodingErrorAction.REPORT)
                .decode(ByteBuffer.wrap(bytes)).toString();
    }

    static JsonNode parse(byte[] bytes) throws Exception {
        return MAPPER.readTree(strictUtf8(bytes));
    }

    static Instant parseInstant(String text) {
        return OffsetDateTime.parse(text, DateTimeFormatter.ISO_OFFSET_DATE_TIME).toInstant();
    }

    static String reason(byte[] value, long ingestMillis, int maxBytes) {
        if (value == null) {
            return "NULL_VALUE";
        }
        if (value.length > maxBytes) {
            return "OVERSIZED";
        }
        String text;
        try {
            text = strictUtf8(value);
        } catch (CharacterCodingException e) {
            return "NOT_UTF8";
        }
        JsonNode node;
        try {
            node = MAPPER.readTree(text);
        } catch (JacksonException e) {
            if (e.getMessage().startsWith("Duplicate field '")
                    && TrafficGenerator.REQUIRED_FIELDS.contains(e.getMessage().split("'")[1])) {
                return "DUPLICATE_FIELD";
            }
            return "NOT_JSON";
        }
        if (node == null || node.isMissingNode()) {
            return "NOT_JSON";
        }
        if (!node.isObject()) {
            return "NOT_AN_OBJECT";
        }
        for (String f : TrafficGenerator.REQUIRED_FIELDS) {
            if (!node.has(f)) {
                return "MISSING_FIELD";
            }
            if (node.get(f).isNull()) {
                return "NULL_FIELD";
            }
        }
        if (!node.get("subscriber_id").isTextual() || !node.get("cell_site_id").isTextual()
                || !node.get("event_ts").isTextual() || !node.get("volume_gb").isNumber()) {
            return "WRONG_TYPE";
        }
        if (node.get("subscriber_id").textValue().isBlank() || node.get("cell_site_id").textValue().isBlank()) {
            return "BLANK_ID";
        }
        double volume = node.get("volume_gb").doubleValue();
        if (!Double.isFinite(volume)) {
            return "NON_FINITE_VOLUME";
        }
        if (volume < 0) {
            return "NEGATIVE_VOLUME";
        }
        Instant eventTime;
        try {
            eventTime = parseInstant(node.get("event_ts").textValue());
        } catch (DateTimeParseException e) {
            return "BAD_TIMESTAMP";
        }
        if (eventTime.toEpochMilli() > ingestMillis + CLOCK_SKEW_MILLIS) {
            return "FUTURE_EVENT_TIME";
        }
        if (eventTime.toEpochMilli() < ingestMillis - MAX_EVENT_AGE_MILLIS) {
            return "PAST_EVENT_TIME";
        }
        return null;
    }
}
