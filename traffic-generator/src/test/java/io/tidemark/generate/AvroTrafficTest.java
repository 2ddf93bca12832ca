package io.tidemark.generate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

import org.apache.avro.Schema;
import org.apache.avro.generic.GenericDatumReader;
import org.apache.avro.generic.GenericRecord;
import org.apache.avro.io.BinaryDecoder;
import org.apache.avro.io.DecoderFactory;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.api.Test;

/**
 * The generator's Avro records read back with Avro's own reader and the writer schema of their id:
 * each kind is the message its name says, in Confluent's wire format or deliberately not; valid
 * records carry their event time and key. (The stream's reasons for them: the tests module's
 * PaymentsTrafficClassificationTest, through the stream's own decoder.)
 */
class AvroTrafficTest {
    private static final Instant START = Instant.parse("2026-11-29T12:00:00Z");

    /** Ids as a registry hands them out: 1, 2, ... in the order of {@link AvroTraffic#writerSchemas}. */
    static Map<String, Integer> ids(TrafficProfile profile) {
        Map<String, Integer> ids = new LinkedHashMap<>();
        for (String name : AvroTraffic.writerSchemas(profile).keySet()) {
            ids.put(name, ids.size() + 1);
        }
        return ids;
    }

    static TrafficSpec spec(TrafficProfile profile, int count) {
        return TrafficSpec.builder().profile(profile).count(count).invalidFraction(0.5).lateFraction(0.1).eventClockStart(START).seed(7)
                .avro(ids(profile)).build();
    }

    @ParameterizedTest
    @EnumSource(TrafficProfile.class)
    void eachKindIsWhatItsNameSaysInConfluentsWireFormat(TrafficProfile profile) throws Exception {
        Map<String, Integer> ids = ids(profile);
        Map<Integer, Schema> byId = new HashMap<>();
        Map<Integer, String> nameOf = new HashMap<>();
        AvroTraffic.writerSchemas(profile).forEach((name, schema) -> {
            byId.put(ids.get(name), schema);
            nameOf.put(ids.get(name), name);
        });
        List<String> fields = profile.fields();
        String key = fields.get(profile == TrafficProfile.NETWORK ? 0 : 1);
        String time = fields.get(profile == TrafficProfile.NETWORK ? 2 : 6);
        TrafficGenerator g = new TrafficGenerator(spec(profile, 6_000));
        Map<String, Integer> seen = new TreeMap<>();
        Map<String, Integer> schemasUsed = new TreeMap<>();
        Set<String> channels = new java.util.TreeSet<>();
        while (g.hasNext()) {
            GeneratedMessage m = g.next();
            MessageKind kind = m.messageKind();
            seen.merge(kind.name(), 1, Integer::sum);
            assertThat(EventFormat.AVRO.writes(kind)).as("%s", kind).isTrue();
            byte[] v = m.value();
            switch (kind.name()) {
                case "ON_TIME", "LATE" -> {
                    int id = header(v);
                    assertThat(nameOf.get(id)).isIn("v1", "v2");
                    schemasUsed.merge(nameOf.get(id), 1, Integer::sum);
                    GenericRecord r = read(v, byId.get(id));
                    assertThat((long) r.get(time)).as("%s", m).isEqualTo(m.eventTimeMillis() * 1000);
                    assertThat(r.get(key).toString().getBytes(StandardCharsets.UTF_8)).isEqualTo(m.key());
                    if (nameOf.get(id).equals("v2")) {
                        channels.add(r.get(AvroTraffic.ADDED_FIELD).toString());
                    }
                    for (String f : fields) {
                        assertThat(r.get(f)).as("%s of %s", f, m).isNotNull();
                    }
                }
                case "NOT_AVRO" -> assertThat(v.length < 5 || v[0] != 0).as("%s", m).isTrue();
                case "UNKNOWN_SCHEMA" -> assertThat(nameOf.get(header(v))).as("%s", m).isNull();
                case "BAD_AVRO" -> {
                    Schema s = byId.get(header(v));
                    assertThat(nameOf.get(header(v))).isEqualTo("v1");
                    boolean decodes;
                    try {
                        BinaryDecoder d = DecoderFactory.get().binaryDecoder(v, 5, v.length - 5, null);
                        new GenericDatumReader<GenericRecord>(s).read(null, d);
                        decodes = d.isEnd();
                    } catch (java.io.IOException | RuntimeException e) {
                        decodes = false;
                    }
                    assertThat(decodes).as("%s", m).isFalse();
                }
                case "SCHEMA_MISMATCH", "MISSING_FIELD", "NULL_FIELD" -> {
                    String name = nameOf.get(header(v));
                    String prefix = kind.name().equals("SCHEMA_MISMATCH") ? "mismatch-" : kind.name().equals("MISSING_FIELD") ? "missing-" : "nullable-";
                    assertThat(name).as("%s", m).startsWith(prefix);
                    String field = name.substring(prefix.length());
                    GenericRecord r = read(v, byId.get(header(v)));
                    seen.merge(kind.name() + " " + field, 1, Integer::sum);
                    switch (prefix) {
                        case "missing-" -> assertThat(r.getSchema().getField(field)).isNull();
                        case "nullable-" -> assertThat(r.get(field)).isNull();
                        default -> assertThat(r.getSchema().getField(field).schema().getType()).isIn(Schema.Type.STRING, Schema.Type.BYTES);
                    }
                }
                case "EMPTY" -> assertThat(v).isEmpty();
                case "NULL_VALUE" -> assertThat(v).isNull();
                case "OVERSIZED" -> {
                    assertThat(v.length).isGreaterThan(spec(profile, 1).oversizedBytes());
                    assertThat(nameOf.get(header(v))).isEqualTo("v2");
                    read(v, byId.get(header(v)));
                }
                default -> {
                    // The kinds about values: the profile's record in v1, decoding in full.
                    assertThat(nameOf.get(header(v))).as("%s", m).isEqualTo("v1");
                    read(v, byId.get(header(v)));
                }
            }
        }
        for (MessageKind k : profile.invalidKinds(EventFormat.AVRO)) {
            assertThat(seen).as("kind %s generated", k).containsKey(k.name());
        }
        for (String f : fields) {
            assertThat(seen).containsKeys("SCHEMA_MISMATCH " + f, "MISSING_FIELD " + f, "NULL_FIELD " + f);
        }
        // About a quarter of the valid records under the second writer schema, with each channel.
        assertThat(schemasUsed.get("v2") * 4).isBetween(schemasUsed.get("v1") * 4 / 3 - 300, schemasUsed.get("v1") * 4 / 3 + 300);
        assertThat(channels).containsExactly("app", "pos", "web");
    }

    @Test
    void avroTrafficIsDeterministicAndItsPaymentsAreTheJsonPayments() throws Exception {
        List<GeneratedMessage> a = new ArrayList<>();
        new TrafficGenerator(spec(TrafficProfile.PAYMENTS, 500)).forEachRemaining(a::add);
        List<GeneratedMessage> b = new ArrayList<>();
        new TrafficGenerator(spec(TrafficProfile.PAYMENTS, 500)).forEachRemaining(b::add);
        assertThat(a).isEqualTo(b);
        // Without invalid messages the draws are the same in both formats: the same payments, field for field.
        TrafficSpec valid = spec(TrafficProfile.PAYMENTS, 300).toBuilder().invalidFraction(0).build();
        List<GeneratedMessage> avro = new ArrayList<>();
        new TrafficGenerator(valid).forEachRemaining(avro::add);
        List<GeneratedMessage> json = new ArrayList<>();
        new TrafficGenerator(valid.toBuilder().json().build()).forEachRemaining(json::add);
        Map<String, Schema> schemas = AvroTraffic.writerSchemas(TrafficProfile.PAYMENTS);
        Map<String, Integer> ids = ids(TrafficProfile.PAYMENTS);
        for (int i = 0; i < avro.size(); i++) {
            GeneratedMessage m = avro.get(i);
            assertThat(m.messageKind()).isEqualTo(json.get(i).messageKind());
            assertThat(m.eventTimeMillis()).isEqualTo(json.get(i).eventTimeMillis());
            GenericRecord r = read(m.value(), schemas.get(header(m.value()) == ids.get("v1") ? "v1" : "v2"));
            com.fasterxml.jackson.databind.JsonNode j = SpecRules.parse(json.get(i).value());
            for (String f : List.of("txn_id", "user_id", "merchant_id", "country", "status")) {
                assertThat(r.get(f).toString()).isEqualTo(j.get(f).textValue());
            }
            java.math.BigDecimal amount = new java.math.BigDecimal(new java.math.BigInteger(bytes((ByteBuffer) r.get("amount"))), 2);
            assertThat(amount).isEqualByComparingTo(j.get("amount").decimalValue());
        }
    }

    @Test
    void avroNeedsAnIdForEveryWriterSchema() {
        Map<String, Integer> ids = new LinkedHashMap<>(ids(TrafficProfile.NETWORK));
        ids.remove("v2");
        ids.remove("nullable-event_ts");
        assertThatThrownBy(() -> TrafficSpec.builder().avro(ids).build())
                .hasMessage("format AVRO needs the registry's id of every writer schema; none for [nullable-event_ts, v2]");
        assertThat(AvroTraffic.subject("payments", "v2")).isEqualTo("payments-value");
        assertThat(AvroTraffic.subject("payments", "missing-amount")).isEqualTo("payments-value-missing-amount");
        assertThat(AvroTraffic.writerSchemas(TrafficProfile.PAYMENTS)).hasSize(2 + 3 * 7);
        assertThat(EnumSet.allOf(EventFormat.class)).allMatch(f -> EventFormat.of(f.cliName()) == f);
        assertThatThrownBy(() -> EventFormat.of("protobuf")).hasMessage("format must be json or avro; got 'protobuf'");
    }

    private static byte[] bytes(ByteBuffer b) {
        byte[] out = new byte[b.remaining()];
        b.duplicate().get(out);
        return out;
    }

    private static int header(byte[] v) {
        assertThat(v.length).isGreaterThanOrEqualTo(5);
        assertThat(v[0]).isZero();
        return ByteBuffer.wrap(v, 1, 4).getInt();
    }

    /** The record after the header, which must decode to its last byte. */
    private static GenericRecord read(byte[] v, Schema s) throws java.io.IOException {
        BinaryDecoder d = DecoderFactory.get().binaryDecoder(v, 5, v.length - 5, null);
        GenericRecord r = new GenericDatumReader<GenericRecord>(s).read(null, d);
        assertThat(d.isEnd()).isTrue();
        return r;
    }
}
