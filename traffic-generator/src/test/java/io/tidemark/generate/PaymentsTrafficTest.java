package io.tidemark.generate;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.databind.JsonNode;
import io.tidemark.generate.GeneratedMessage.Kind;
import org.junit.jupiter.api.Test;

import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

import static io.tidemark.generate.PaymentKind.*;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The payments profile: the records of pipelines/payments.sql with the network profile's clock, late
 * and out-of-order machinery, and malformed messages each carrying the reason the stream gives it.
 *
 * <p>Tolerances of the shares: a count of n independent draws with probability p is binomial, with
 * standard deviation sqrt(n p (1 - p)); each share is checked to within 5 of them (a wrong share of
 * a few percent falls outside, a correct one is outside with probability below 1e-6, and the seed
 * is fixed, so a pass is repeatable).
 */
class PaymentsTrafficTest {

    private static final Instant START = Instant.parse("2026-11-29T12:00:00Z");
    private static final InstantSource FROZEN_NOW = InstantSource.fixed(Instant.parse("2026-11-30T00:00:00Z"));

    private static TrafficSpec.Builder payments(long count) {
        return TrafficSpec.builder().profile(TrafficProfile.PAYMENTS).count(count).eventClockStart(START).seed(7);
    }

    /** A generated message with the event clock it was generated at. */
    private record Generated(GeneratedMessage message, long clock) {
    }

    private static List<Generated> generate(TrafficSpec spec) {
        TrafficGenerator generator = new TrafficGenerator(spec, FROZEN_NOW);
        List<Generated> out = new ArrayList<>();
        while (generator.hasNext()) {
            long clock = generator.eventClockMillis();
            out.add(new Generated(generator.next(), clock));
        }
        return out;
    }

    /** Five standard deviations of a binomial count (see the class comment). */
    private static double tolerance(long n, double p) {
        return 5 * Math.sqrt(n * p * (1 - p));
    }

    // ------------------------------------------------------------------ spec

    @Test
    void theProfileSetsTheDefaultTopicAndTheNetworkStaysTheDefault() {
        TrafficSpec network = TrafficSpec.builder().build();
        assertThat(network.profile()).isEqualTo(TrafficProfile.NETWORK);
        assertThat(network.topic()).isEqualTo("network-events");
        TrafficSpec payments = TrafficSpec.builder().profile(TrafficProfile.PAYMENTS).build();
        assertThat(payments.topic()).isEqualTo("payments");
        assertThat(payments.merchants()).isEqualTo(2_000);
        assertThat(payments.users()).isEqualTo(50_000);
        assertThat(payments.toBuilder().build()).isEqualTo(payments);
        assertThat(TrafficSpec.builder().topic("cards").profile(TrafficProfile.PAYMENTS).build().topic()).isEqualTo("cards");
        assertThat(payments.toBuilder().profile(TrafficProfile.NETWORK).build().topic()).as("a spec's topic is kept").isEqualTo("payments");
        assertThat(TrafficProfile.of("Payments")).isEqualTo(TrafficProfile.PAYMENTS);
        assertThat(TrafficProfile.of("network")).isEqualTo(TrafficProfile.NETWORK);
        assertThatThrownBy(() -> TrafficProfile.of("cards")).hasMessage("profile must be network or payments; got 'cards'");
        assertThatThrownBy(() -> TrafficSpec.builder().profile(null).topic("t").build()).hasMessageContaining("profile must not be null");
        assertThatThrownBy(() -> TrafficSpec.builder().merchants(0).build()).hasMessage("merchants must be between 1 and 10000000; got 0");
        assertThatThrownBy(() -> TrafficSpec.builder().users(0).build()).hasMessage("users must be between 1 and 100000000; got 0");
    }

    @Test
    void kindsCarryTheirProfileAndEachInvalidPaymentKindItsReason() {
        assertThat(TrafficProfile.PAYMENTS.kinds()).containsExactly(PaymentKind.values());
        assertThat(TrafficProfile.NETWORK.kinds()).containsExactly(Kind.values());
        assertThat(TrafficProfile.PAYMENTS.invalidKinds(EventFormat.JSON)).containsExactlyElementsOf(PaymentKind.invalidKinds(EventFormat.JSON)).hasSize(19);
        assertThat(TrafficProfile.NETWORK.invalidKinds(EventFormat.JSON)).containsExactlyElementsOf(Kind.invalidKinds(EventFormat.JSON));
        assertThat(TrafficProfile.PAYMENTS.fields()).isEqualTo(PaymentRules.FIELDS);
        Map<String, String> reasons = new TreeMap<>();
        for (PaymentKind k : PaymentKind.values()) {
            reasons.put(k.name(), k.expectedReason());
        }
        Map<String, String> expected = new TreeMap<>();
        expected.put("ON_TIME", null);
        expected.put("LATE", null);
        expected.putAll(Map.ofEntries(
                Map.entry("TRUNCATED_JSON", "NOT_JSON"), Map.entry("NOT_JSON", "NOT_JSON"), Map.entry("INVALID_UTF8", "NOT_UTF8"),
                Map.entry("BINARY_GARBAGE", "NOT_UTF8"), Map.entry("EMPTY", "EMPTY"), Map.entry("NULL_VALUE", "EMPTY"),
                Map.entry("NOT_AN_OBJECT", "NOT_AN_OBJECT"), Map.entry("MISSING_FIELD", "MISSING_FIELD"),
                Map.entry("NULL_FIELD", "NULL_FIELD"), Map.entry("WRONG_TYPE", "WRONG_TYPE"), Map.entry("NESTED_JUNK", "WRONG_TYPE"),
                Map.entry("BAD_TIMESTAMP", "BAD_TIMESTAMP"), Map.entry("FUTURE_EVENT_TIME", "FUTURE_EVENT_TIME"),
                Map.entry("PAST_EVENT_TIME", "PAST_EVENT_TIME"), Map.entry("DUPLICATE_FIELD", "DUPLICATE_FIELD"),
                Map.entry("OVERSIZED", "OVERSIZED"), Map.entry("NON_POSITIVE_AMOUNT", "POSITIVE_AMOUNT"),
                Map.entry("UNKNOWN_STATUS", "KNOWN_STATUS"), Map.entry("BAD_COUNTRY_CODE", "COUNTRY_CODE"),
                Map.entry("NOT_AVRO", "NOT_AVRO"), Map.entry("UNKNOWN_SCHEMA", "UNKNOWN_SCHEMA"), Map.entry("BAD_AVRO", "BAD_AVRO"),
                Map.entry("SCHEMA_MISMATCH", "SCHEMA_MISMATCH")));
        assertThat(reasons).isEqualTo(expected);
        // Avro has the kinds about values and whole messages, and its own four instead of JSON's syntax and type errors.
        assertThat(PaymentKind.invalidKinds(EventFormat.AVRO)).containsExactly(PaymentKind.EMPTY, PaymentKind.NULL_VALUE,
                PaymentKind.MISSING_FIELD, PaymentKind.NULL_FIELD, PaymentKind.FUTURE_EVENT_TIME, PaymentKind.PAST_EVENT_TIME,
                PaymentKind.OVERSIZED, NON_POSITIVE_AMOUNT, PaymentKind.UNKNOWN_STATUS, PaymentKind.BAD_COUNTRY_CODE, PaymentKind.NOT_AVRO,
                PaymentKind.UNKNOWN_SCHEMA, PaymentKind.BAD_AVRO, PaymentKind.SCHEMA_MISMATCH);
        assertThat(Kind.invalidKinds(EventFormat.AVRO)).containsExactly(Kind.EMPTY, Kind.NULL_VALUE, Kind.MISSING_FIELD, Kind.NULL_FIELD,
                Kind.NEGATIVE_VOLUME, Kind.NON_FINITE_VOLUME, Kind.FUTURE_EVENT_TIME, Kind.BLANK_ID, Kind.PAST_EVENT_TIME, Kind.OVERSIZED,
                Kind.NOT_AVRO, Kind.UNKNOWN_SCHEMA, Kind.BAD_AVRO, Kind.SCHEMA_MISMATCH);
        assertThat(NON_POSITIVE_AMOUNT.shareOfInvalid(EventFormat.AVRO)).isEqualTo(1 / 12.75);
        assertThat(PaymentKind.TRUNCATED_JSON.shareOfInvalid(EventFormat.AVRO)).isZero();
        assertThat(PaymentKind.NOT_AVRO.shareOfInvalid(EventFormat.JSON)).isZero();
        assertThat(PaymentKind.invalidKinds(EventFormat.JSON).stream().mapToDouble(k -> k.shareOfInvalid(EventFormat.JSON)).sum()).isCloseTo(1.0,
                org.assertj.core.data.Offset.offset(1e-12));
        assertThat(NON_POSITIVE_AMOUNT.shareOfInvalid(EventFormat.JSON)).isEqualTo(1 / 17.75);
    }

    // ------------------------------------------------------------------ determinism

    @Test
    void sameSeedAndClockStartGiveIdenticalBytesWhateverTheWallClock() {
        TrafficSpec spec = payments(10_000).invalidFraction(0.2).lateFraction(0.05).build();
        TrafficGenerator a = new TrafficGenerator(spec, FROZEN_NOW);
        TrafficGenerator b = new TrafficGenerator(spec, InstantSource.system());
        for (int i = 0; i < 10_000; i++) {
            GeneratedMessage x = a.next();
            GeneratedMessage y = b.next();
            assertThat(y).as("message %d", i).isEqualTo(x);
        }
        assertThat(a.hasNext()).isFalse();
    }

    /**
     * Pins the payments output of one spec, as outputIsPinnedAcrossJvms does the network's: a
     * deliberate change to the generated payments updates this hash.
     */
    @Test
    void outputIsPinned() throws Exception {
        TrafficSpec spec = payments(10_000).invalidFraction(0.05).build();
        java.security.MessageDigest md = java.security.MessageDigest.getInstance("SHA-256");
        new TrafficGenerator(spec, FROZEN_NOW).forEachRemaining(m -> {
            md.update((byte) m.messageKind().ordinal());
            if (m.key() != null) {
                md.update(m.key());
            }
            if (m.value() != null) {
                md.update(m.value());
            }
        });
        assertThat(java.util.HexFormat.of().formatHex(md.digest()))
                .isEqualTo("f8924b2526617d07abaf7036bb9b6aa1bf1238cfc8dcac7a45f26322a3bad42d");
    }

    @Test
    void differentSeedGivesDifferentPayments() {
        List<Generated> a = generate(payments(1000).seed(1).build());
        List<Generated> b = generate(payments(1000).seed(2).build());
        int same = 0;
        for (int i = 0; i < 1000; i++) {
            if (Arrays.equals(a.get(i).message().value(), b.get(i).message().value())) {
                same++;
            }
        }
        assertThat(same).isZero();
    }

    // ------------------------------------------------------------------ valid payments

    /** The field names of a JSON object in document order, and the literal text of its amount. */
    private record Shape(List<String> names, JsonToken amountToken, String amountText) {
    }

    private static Shape shape(byte[] value) throws Exception {
        List<String> names = new ArrayList<>();
        JsonToken amountToken = null;
        String amountText = null;
        try (JsonParser p = SpecRules.MAPPER.createParser(value)) {
            assertThat(p.nextToken()).isEqualTo(JsonToken.START_OBJECT);
            while (p.nextToken() == JsonToken.FIELD_NAME) {
                String name = p.currentName();
                names.add(name);
                JsonToken t = p.nextToken();
                if (name.equals("amount")) {
                    amountToken = t;
                    amountText = p.getText();
                }
                p.skipChildren();
            }
        }
        return new Shape(names, amountToken, amountText);
    }

    @Test
    void validPaymentsHaveExactlyTheDeclaredFieldsTypesAndValues() throws Exception {
        int n = 50_000;
        TrafficSpec spec = payments(n).invalidFraction(0).lateFraction(0.05).build();
        long spread = spec.outOfOrderSpread().toMillis();
        long lateMin = spec.lateDelayMin().toMillis();
        long lateMax = spec.lateDelayMax().toMillis();
        Set<String> txnIds = new HashSet<>();
        Map<String, Integer> statuses = new HashMap<>();
        Map<String, Integer> countries = new HashMap<>();
        int late = 0;
        int withOffset = 0;
        for (Generated g : generate(spec)) {
            GeneratedMessage m = g.message();
            assertThat(m.isValid()).isTrue();
            assertThat(m.paymentKind()).isIn(ON_TIME, LATE);
            assertThat(PaymentRules.reason(m.value(), g.clock(), SpecRules.MAX_MESSAGE_BYTES)).as("%s", m).isNull();
            Shape shape = shape(m.value());
            assertThat(shape.names()).as("%s", m).containsExactly("txn_id", "user_id", "merchant_id", "country", "amount", "status", "ts");
            assertThat(shape.amountToken()).isEqualTo(JsonToken.VALUE_NUMBER_FLOAT);
            assertThat(shape.amountText()).matches("[1-9]\\d{0,4}\\.\\d\\d|0\\.(0[1-9]|[1-9]\\d)|50000\\.00");
            BigDecimal amount = new BigDecimal(shape.amountText());
            assertThat(amount).isGreaterThan(BigDecimal.ZERO).isLessThanOrEqualTo(new BigDecimal("50000.00"));
            assertThat(amount.scale()).isEqualTo(2);

            JsonNode node = SpecRules.parse(m.value());
            for (String f : List.of("txn_id", "user_id", "merchant_id", "country", "status", "ts")) {
                assertThat(node.get(f).isTextual()).as("%s of %s", f, m).isTrue();
            }
            assertThat(node.get("txn_id").textValue()).matches("txn-[0-9a-f]{16}");
            assertThat(txnIds.add(node.get("txn_id").textValue())).as("txn_id unique: %s", m).isTrue();
            assertThat(node.get("user_id").textValue()).matches("usr-\\d{6}");
            assertThat(node.get("merchant_id").textValue()).matches("mer-\\d{5}");
            assertThat(new String(m.key(), StandardCharsets.UTF_8)).isEqualTo(node.get("user_id").textValue());
            statuses.merge(node.get("status").textValue(), 1, Integer::sum);
            countries.merge(node.get("country").textValue(), 1, Integer::sum);

            String ts = node.get("ts").textValue();
            long eventTime = SpecRules.parseInstant(ts).toEpochMilli();
            assertThat(eventTime).isEqualTo(m.eventTimeMillis());
            if (m.paymentKind() == ON_TIME) {
                assertThat(eventTime).isBetween(g.clock() - spread, g.clock());
            } else {
                late++;
                assertThat(eventTime).as("late by the configured delay").isBetween(g.clock() - lateMax, g.clock() - lateMin);
            }
            if (!ts.endsWith("Z")) {
                withOffset++;
            }
        }
        assertThat(txnIds).hasSize(n);
        assertThat((double) late).isCloseTo(n * 0.05, org.assertj.core.data.Offset.offset(tolerance(n, 0.05)));
        assertThat((double) withOffset).as("3%% of the timestamps in a +hh:mm offset")
                .isCloseTo(n * 0.03 * 6 / 7, org.assertj.core.data.Offset.offset(tolerance(n, 0.03 * 6 / 7)));
        assertThat(statuses.keySet()).containsExactlyInAnyOrder("approved", "declined", "refunded");
        Map<String, Double> statusShare = Map.of("approved", 0.90, "declined", 0.08, "refunded", 0.02);
        statusShare.forEach((s, p) -> assertThat((double) statuses.get(s)).as(s)
                .isCloseTo(n * p, org.assertj.core.data.Offset.offset(tolerance(n, p))));
        Map<String, Double> countryShare = new HashMap<>();
        for (int i = 0; i < PaymentsTraffic.COUNTRIES.size(); i++) {
            countryShare.put(PaymentsTraffic.COUNTRIES.get(i), PaymentsTraffic.COUNTRY_PERCENT[i] / 100.0);
        }
        assertThat(countries.keySet()).containsExactlyInAnyOrderElementsOf(
                List.of("US", "GB", "DE", "FR", "NL", "ES", "CA", "IT", "SE", "BR"));
        countryShare.forEach((c, p) -> assertThat((double) countries.get(c)).as(c)
                .isCloseTo(n * p, org.assertj.core.data.Offset.offset(tolerance(n, p))));
    }

    @Test
    void merchantsAndUsersAreZipfActiveAndAmountsLogNormal() throws Exception {
        int n = 100_000;
        TrafficSpec spec = payments(n).invalidFraction(0).build();
        Map<String, Integer> perMerchant = new HashMap<>();
        Map<String, Integer> perUser = new HashMap<>();
        double[] amounts = new double[n];
        int i = 0;
        for (Generated g : generate(spec)) {
            JsonNode node = SpecRules.parse(g.message().value());
            perMerchant.merge(node.get("merchant_id").textValue(), 1, Integer::sum);
            perUser.merge(node.get("user_id").textValue(), 1, Integer::sum);
            amounts[i++] = node.get("amount").doubleValue();
        }
        // Zipf(1.1) over 2,000 merchants: the top 20 (1 %) take 54 % of the payments; Zipf(0.9) over
        // 50,000 users: the top 500 (1 %) take 46 %. Uniform activity would give each 1 %.
        List<Integer> merchants = perMerchant.values().stream().sorted((a, b) -> b - a).toList();
        long top20 = merchants.stream().limit(20).mapToLong(Integer::longValue).sum();
        assertThat(top20).isBetween(n * 45L / 100, n * 60L / 100);
        List<Integer> users = perUser.values().stream().sorted((a, b) -> b - a).toList();
        long top500 = users.stream().limit(500).mapToLong(Integer::longValue).sum();
        assertThat(top500).isBetween(n * 40L / 100, n * 52L / 100);
        // Rank 1 is not id 0: ids are permuted by seed.
        String busiest = perMerchant.entrySet().stream().max(Map.Entry.comparingByValue()).orElseThrow().getKey();
        assertThat(busiest).isNotEqualTo("mer-00000");
        Arrays.sort(amounts);
        assertThat(amounts[0]).isGreaterThanOrEqualTo(0.01);
        assertThat(amounts[n / 2]).isBetween(24.0, 26.0);                 // median 25.00
        assertThat(amounts[n - 1]).isBetween(1_000.0, 50_000.0);          // long tail, capped
    }

    // ------------------------------------------------------------------ invalid payments

    @Test
    void theInvalidShareAndEachKindsShareFollowTheSpec() {
        int n = 100_000;
        double invalidFraction = 0.4;
        double lateFraction = 0.1;
        TrafficSpec spec = payments(n).invalidFraction(invalidFraction).lateFraction(lateFraction).build();
        Map<PaymentKind, Integer> counts = new EnumMap<>(PaymentKind.class);
        GenerationReport.Tally tally = new GenerationReport.Tally(TrafficProfile.PAYMENTS);
        TrafficGenerator generator = new TrafficGenerator(spec, FROZEN_NOW);
        while (generator.hasNext()) {
            GeneratedMessage m = generator.next();
            counts.merge(m.paymentKind(), 1, Integer::sum);
            tally.add(m);
        }
        int invalid = n - counts.get(ON_TIME) - counts.get(LATE);
        assertThat((double) invalid).isCloseTo(n * invalidFraction,
                org.assertj.core.data.Offset.offset(tolerance(n, invalidFraction)));          // 40,000 +- 775
        assertThat((double) counts.get(LATE)).isCloseTo(n * lateFraction,
                org.assertj.core.data.Offset.offset(tolerance(n, lateFraction)));             // 10,000 +- 474
        for (PaymentKind k : PaymentKind.invalidKinds(EventFormat.JSON)) {
            double p = invalidFraction * k.shareOfInvalid(EventFormat.JSON);                                 // weight 1: 2,254 +- 235
            assertThat((double) counts.getOrDefault(k, 0)).as("%s", k).isCloseTo(n * p, org.assertj.core.data.Offset.offset(tolerance(n, p)));
        }

        // The report of a payments run counts its kinds.
        GenerationReport report = tally.report("payments", Duration.ofSeconds(1), false);
        assertThat(report.profile()).isEqualTo(TrafficProfile.PAYMENTS);
        assertThat(report.messages()).isEqualTo(n);
        for (PaymentKind k : PaymentKind.values()) {
            assertThat(report.count(k)).as("%s", k).isEqualTo((long) counts.getOrDefault(k, 0));
        }
        assertThat(report.invalid()).isEqualTo(invalid);
        assertThat(report.late()).isEqualTo((long) counts.get(LATE));
        assertThat(report.count(Kind.ON_TIME)).as("a network kind in a payments report").isZero();
        assertThat(report.summary()).contains("100,000 messages", "NON_POSITIVE_AMOUNT", "BAD_COUNTRY_CODE", "UNKNOWN_STATUS");
        assertThatThrownBy(report::countsByKind).hasMessageContaining("a payments report counts its own kinds");
        GeneratedMessage network = new GeneratedMessage(null, null, Kind.NULL_VALUE);
        assertThatThrownBy(() -> tally.add(network)).hasMessage("a payments tally cannot count a network message");
    }

    @Test
    void eachInvalidKindBreaksExactlyTheRuleItsNameSaysAndCarriesItsReason() throws Exception {
        TrafficSpec spec = payments(40_000).invalidFraction(1.0).lateFraction(0).build();
        Map<PaymentKind, Set<String>> variants = new EnumMap<>(PaymentKind.class);
        for (Generated g : generate(spec)) {
            GeneratedMessage m = g.message();
            PaymentKind kind = m.paymentKind();
            assertThat(m.isValid()).isFalse();
            assertThat(m.key()).isNull();
            assertThat(m.eventTime()).isEmpty();
            assertThatThrownBy(m::kind).isInstanceOf(IllegalStateException.class);
            assertThat(PaymentRules.reason(m.value(), g.clock(), SpecRules.MAX_MESSAGE_BYTES)).as("%s", m).isEqualTo(kind.expectedReason());
            Set<String> seen = variants.computeIfAbsent(kind, k -> new HashSet<>());
            String text = m.value() == null ? null : new String(m.value(), StandardCharsets.ISO_8859_1);
            switch (kind) {
                case TRUNCATED_JSON -> assertThat(text).startsWith("{").doesNotEndWith("}");
                case OVERSIZED -> {
                    assertThat(m.value()).hasSize(128 * 1024);
                    // Nothing but its size is wrong.
                    assertThat(PaymentRules.reason(m.value(), g.clock(), Integer.MAX_VALUE)).isNull();
                }
                case BINARY_GARBAGE -> {
                    assertThat(m.value()).contains((byte) 0xFF);
                    seen.add(Integer.toHexString(m.value()[0] & 0xFF));
                }
                case MISSING_FIELD -> {
                    JsonNode node = SpecRules.parse(m.value());
                    PaymentRules.FIELDS.stream().filter(f -> !node.has(f)).forEach(f -> seen.add("missing " + f));
                    if (node.size() == 7) {
                        seen.add("misspelled");
                    }
                }
                case NULL_FIELD -> {
                    JsonNode node = SpecRules.parse(m.value());
                    PaymentRules.FIELDS.stream().filter(f -> node.get(f).isNull()).forEach(seen::add);
                }
                case DUPLICATE_FIELD -> PaymentRules.FIELDS.stream()
                        .filter(f -> text.split("\"" + f + "\":", -1).length == 3).forEach(seen::add);
                case NESTED_JUNK -> {
                    JsonNode node = SpecRules.parse(m.value());
                    PaymentRules.FIELDS.stream().filter(f -> node.get(f).isContainerNode()).forEach(seen::add);
                }
                case WRONG_TYPE -> {
                    JsonNode node = SpecRules.parse(m.value());
                    List<String> wrong = PaymentRules.FIELDS.stream()
                            .filter(f -> f.equals("amount") ? !node.get(f).isNumber() : !node.get(f).isTextual()).toList();
                    assertThat(wrong).as("%s", m).hasSizeLessThanOrEqualTo(1);
                    wrong.forEach(f -> seen.add(f + ":" + node.get(f).getNodeType()));
                    if (wrong.isEmpty()) {
                        // A number DECIMAL(12,2) cannot hold: its literal, three decimals shown as N.NNN.
                        seen.add("amount:" + text.replaceAll(".*\"amount\":([^,}]*).*", "$1").replaceAll("\\d+\\.\\d\\d\\d", "N.NNN"));
                    }
                }
                case NON_POSITIVE_AMOUNT -> {
                    BigDecimal amount = SpecRules.parse(m.value()).get("amount").decimalValue();
                    assertThat(amount.signum()).isLessThanOrEqualTo(0);
                    seen.add(amount.signum() == 0 ? "zero" : "negative");
                }
                case UNKNOWN_STATUS -> seen.add(SpecRules.parse(m.value()).get("status").textValue());
                case BAD_COUNTRY_CODE -> seen.add(SpecRules.parse(m.value()).get("country").textValue()
                        .replaceAll("^[A-Z]{3}$", "ABC").replaceAll("^[a-z]{2}$", "ab").replaceAll("^[A-Z][a-z]$", "Ab"));
                case BAD_TIMESTAMP -> seen.add(SpecRules.parse(m.value()).get("ts").textValue());
                case FUTURE_EVENT_TIME -> assertThat(SpecRules.parseInstant(SpecRules.parse(m.value()).get("ts").textValue()))
                        .isBetween(Instant.ofEpochMilli(g.clock()).plus(Duration.ofHours(2)),
                                // ahead of the backlog's end (40 s of event time after its start) by at most 24 h
                                START.plus(spec.backlogSpan()).plus(Duration.ofHours(24)));
                case NOT_AN_OBJECT -> seen.add(SpecRules.parse(m.value()).getNodeType().name());
                default -> {
                }
            }
        }
        assertThat(variants.keySet()).containsExactlyInAnyOrderElementsOf(PaymentKind.invalidKinds(EventFormat.JSON));
        assertThat(variants.get(MISSING_FIELD)).containsExactlyInAnyOrder("missing txn_id", "missing user_id", "missing merchant_id",
                "missing country", "missing amount", "missing status", "missing ts", "misspelled");
        assertThat(variants.get(NULL_FIELD)).containsExactlyInAnyOrderElementsOf(PaymentRules.FIELDS);
        assertThat(variants.get(DUPLICATE_FIELD)).containsExactlyInAnyOrderElementsOf(PaymentRules.FIELDS);
        assertThat(variants.get(NESTED_JUNK)).containsExactlyInAnyOrderElementsOf(PaymentRules.FIELDS);
        assertThat(variants.get(WRONG_TYPE)).containsExactlyInAnyOrder("amount:STRING", "amount:BOOLEAN", "amount:N.NNN",
                "amount:NaN", "amount:Infinity", "amount:-Infinity", "amount:1e999", "amount:1e13", "amount:123456789012.50",
                "ts:NUMBER", "ts:OBJECT", "user_id:NUMBER", "status:ARRAY", "country:NUMBER", "merchant_id:OBJECT");
        assertThat(variants.get(NON_POSITIVE_AMOUNT)).containsExactlyInAnyOrder("zero", "negative");
        assertThat(variants.get(UNKNOWN_STATUS)).containsExactlyInAnyOrder("pending", "APPROVED", "Declined", "chargeback", "",
                "approved ", "voided", "authorized");
        assertThat(variants.get(BAD_COUNTRY_CODE)).containsExactlyInAnyOrder("ab", "ABC", "Ab", "");
        assertThat(variants.get(BAD_TIMESTAMP)).contains("yesterday", "2026-02-30T10:00:00Z", "2026-11-29T14:03:12.345");
        assertThat(variants.get(NOT_AN_OBJECT)).containsExactlyInAnyOrder("ARRAY", "NUMBER", "STRING", "NULL", "BOOLEAN");
        assertThat(variants.get(BINARY_GARBAGE)).contains("0", "1f");
    }
}
