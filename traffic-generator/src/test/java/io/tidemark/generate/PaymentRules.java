package io.tidemark.generate;

import com.fasterxml.jackson.core.JacksonException;
import com.fasterxml.jackson.databind.JsonNode;

import java.math.BigDecimal;
import java.nio.charset.CharacterCodingException;
import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.List;
import java.util.Set;

/**
 * An independent reading of {@code pipelines/payments.sql} and the reason table of
 * docs/guarantees.md, written with Jackson, to check the payments profile against without Spark.
 * Returns the dead-letter reason of a message, null for a valid one. (The stream itself is checked
 * against the generator in the tests module, PaymentsTrafficClassificationTest.)
 */
final class PaymentRules {

    static final List<String> FIELDS = List.of("txn_id", "user_id", "merchant_id", "country", "amount", "status", "ts");
    private static final Set<String> STRINGS = Set.of("txn_id", "user_id", "merchant_id", "country", "status");
    private static final Set<String> STATUSES = Set.of("approved", "declined", "refunded");
    /** DECIMAL(12,2): at most 10 digits before the point. */
    private static final BigDecimal AMOUNT_LIMIT = new BigDecimal("10000000000");

    private PaymentRules() {
    }

    static String reason(byte[] value, long ingestMillis, int maxBytes) {
        if (value == null || value.length == 0) {
            return "EMPTY";
        }
        if (value.length > maxBytes) {
            return "OVERSIZED";
        }
        String text;
        try {
            text = SpecRules.strictUtf8(value);
        } catch (CharacterCodingException e) {
            return "NOT_UTF8";
        }
        if (text.isBlank()) {
            return "EMPTY";
        }
        JsonNode node;
        try {
            node = SpecRules.MAPPER.readTree(text);
        } catch (JacksonException e) {
            if (e.getMessage().startsWith("Duplicate field '") && FIELDS.contains(e.getMessage().split("'")[1])) {
                return "DUPLICATE_FIELD";
            }
            return "NOT_JSON";
        }
        if (!node.isObject()) {
            return "NOT_AN_OBJECT";
        }
        for (String f : FIELDS) {
            if (node.has(f) && node.get(f).isNull()) {
                return "NULL_FIELD";
            }
            if (node.has(f) && wrongType(f, node.get(f))) {
                return "WRONG_TYPE";
            }
        }
        for (String f : FIELDS) {
            if (!node.has(f)) {
                return "MISSING_FIELD";
            }
        }
        // The CHECKs, in the file's order.
        if (new BigDecimal(node.get("amount").asText()).signum() <= 0) {
            return "POSITIVE_AMOUNT";
        }
        if (!STATUSES.contains(node.get("status").textValue())) {
            return "KNOWN_STATUS";
        }
        String country = node.get("country").textValue();
        if (country.length() != 2 || !country.toUpperCase(java.util.Locale.ROOT).equals(country)) {
            return "COUNTRY_CODE";
        }
        Instant ts;
        try {
            ts = SpecRules.parseInstant(node.get("ts").textValue());
        } catch (DateTimeParseException e) {
            return "BAD_TIMESTAMP";
        }
        if (ts.toEpochMilli() > ingestMillis + SpecRules.CLOCK_SKEW_MILLIS) {
            return "FUTURE_EVENT_TIME";
        }
        if (ts.toEpochMilli() < ingestMillis - SpecRules.MAX_EVENT_AGE_MILLIS) {
            return "PAST_EVENT_TIME";
        }
        return null;
    }

    private static boolean wrongType(String field, JsonNode v) {
        if (STRINGS.contains(field) || field.equals("ts")) {
            return !v.isTextual();
        }
        // amount DECIMAL(12,2): a finite number with at most two decimals and ten digits before the point.
        if (!v.isNumber() || v.isDouble() && !Double.isFinite(v.doubleValue())) {
            return true;
        }
        BigDecimal d = new BigDecimal(v.asText());
        return d.stripTrailingZeros().scale() > 2 || d.abs().compareTo(AMOUNT_LIMIT) >= 0;
    }
}
