package io.tidemark.generate;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;

/**
 * The records of the {@link TrafficProfile#PAYMENTS payments} profile, the event table of
 * {@code pipelines/payments.sql}:
 * {@code {"txn_id":"txn-3f9c0a1b2c3d4e5f","user_id":"usr-004711","merchant_id":"mer-00042","country":"DE","amount":23.90,"status":"approved","ts":"2026-11-29T14:03:12.345Z"}},
 * exactly these seven fields in this order. {@link TrafficGenerator} decides each message's kind and
 * event time (the clock, late and out-of-order machinery are the profiles' common part);
 * {@link ProfileTraffic} writes the malformed messages every profile has; this class draws and writes
 * the payments and adds the payments' own invalid kinds, those of the pipeline's CHECKs: an amount not
 * positive, an unknown status, a bad country code.
 *
 * <p>Skew: merchants are Zipf-active (exponent 1.1, a few large merchants take most payments), card
 * holders too (0.9); the card's country is one of ten, weighted (US 30 %, GB 14 %, DE 13 %...);
 * amounts are log-normal (median 25.00, sigma 1.1) in cents, from 0.01 to 50,000.00, written with
 * two decimals; status approved 90 %, declined 8 %, refunded 2 %; 3 % of the timestamps are written
 * in a non-UTC offset (the same instant). txn_id is unique within a run: SplitMix64's finaliser, a
 * bijection, of a per-seed salt plus the message's number. The Kafka key of a valid payment is its
 * user_id.
 *
 * <p>Not thread-safe, like its generator.
 */
final class PaymentsTraffic extends ProfileTraffic {

    static final double MERCHANT_ZIPF_EXPONENT = 1.1;
    static final double USER_ZIPF_EXPONENT = 0.9;
    static final double AMOUNT_MEDIAN_CENTS = 2500;
    static final double AMOUNT_SIGMA = 1.1;
    static final long AMOUNT_MAX_CENTS = 5_000_000L;

    /** The event table's columns, in the order they are written. */
    static final List<String> FIELDS = List.of("txn_id", "user_id", "merchant_id", "country", "amount", "status", "ts");
    /** Card countries and their weights in percent (they add up to 100). */
    static final List<String> COUNTRIES = List.of("US", "GB", "DE", "FR", "NL", "ES", "CA", "IT", "SE", "BR");
    static final int[] COUNTRY_PERCENT = {30, 14, 13, 10, 8, 7, 6, 5, 4, 3};
    /** What {@code CHECK (status IN (...))} accepts, and the weights in percent. */
    static final List<String> STATUSES = List.of("approved", "declined", "refunded");
    static final int[] STATUS_PERCENT = {90, 8, 2};

    /**
     * {@link TrafficProfile#sparkColumns}: merchants Zipf-like over about 20,000 ids, card holders over
     * about 1 M, the ten countries and three statuses in their weights, amounts log-uniform from 0.01
     * to about 5,000.00.
     */
    static List<String> sparkColumns(long d, String eventTime) {
        return List.of(
                "concat('txn-', lpad(hex(xxhash64(id, " + d + "L, 'txn')), 16, '0')) AS txn_id",
                "concat('usr-', lpad(CAST(CAST(floor(pow(1000000.0D, pmod(xxhash64(id, " + d + "L, 'usr'), 1000000007L) / 1000000007.0D)) "
                        + "AS BIGINT) AS STRING), 7, '0')) AS user_id",
                "concat('mer-', lpad(CAST(CAST(floor(pow(20000.0D, pmod(xxhash64(id, " + d + "L, 'mer'), 1000000007L) / 1000000007.0D)) "
                        + "AS BIGINT) AS STRING), 5, '0')) AS merchant_id",
                "element_at(array(" + weighted(COUNTRIES, COUNTRY_PERCENT) + "), CAST(pmod(xxhash64(id, " + d + "L, 'cty'), 100) AS INT) + 1) AS country",
                "CAST(greatest(0.01D, round(pow(10.0D, pmod(xxhash64(id, " + d + "L, 'amt'), 1000000007L) / 1000000007.0D * 5.7D - 2.0D), 2)) "
                        + "AS DECIMAL(12,2)) AS amount",
                "element_at(array(" + weighted(STATUSES, STATUS_PERCENT) + "), CAST(pmod(xxhash64(id, " + d + "L, 'sts'), 100) AS INT) + 1) AS status",
                eventTime + " AS ts");
    }

    /** Each value as a SQL literal, repeated its weight in percent times: 100 entries. */
    private static String weighted(List<String> values, int[] percent) {
        List<String> out = new ArrayList<>();
        for (int i = 0; i < values.size(); i++) {
            for (int k = 0; k < percent[i]; k++) {
                out.add("'" + values.get(i) + "'");
            }
        }
        return String.join(", ", out);
    }

    private static final int TXN = 0;
    private static final int USER = 1;
    private static final int MERCHANT = 2;
    private static final int COUNTRY = 3;
    private static final int AMOUNT = 4;
    private static final int STATUS = 5;
    private static final int TS = 6;
    private static final Format FORMAT = new Format("payment", FIELDS,
            List.of("txnId", "userId", "merchant", "country_code", "amount_eur", "state", "timestamp"), USER, AMOUNT, TS,
            // No ISO-8601 with a zone: garbage, impossible dates, no zone at all.
            List.of("yesterday", "2026-13-45T99:00:00Z", "", "2026-11-29T25:61:00Z", "29/11/2026 14:03:12",
                    "2026-02-30T10:00:00Z", "2026-11-29T14:03:12+25:00", "2026-11-29T14:03:12.345", "2026-11-29 14:03"),
            "\"merchant_name\":\"Caf\u00E9\"");
    /** The shorter plain-text forms: a log line without merchant and country, an XML payment of id, amount and status. */
    private static final int[] LOG_LINE_FIELDS = {TXN, USER, AMOUNT, STATUS, TS};
    private static final int[] XML_FIELDS = {TXN, AMOUNT, STATUS};
    /** The bad UTF-8 sequences of at most three bytes: the first six. */
    private static final int BAD_UTF8_FORMS = 6;

    private static final byte[] TXN_PREFIX = ascii("txn-");
    private static final byte[][] COUNTRY_BYTES = COUNTRIES.stream().map(ProfileTraffic::ascii).toArray(byte[][]::new);
    private static final byte[][] STATUS_BYTES = STATUSES.stream().map(ProfileTraffic::ascii).toArray(byte[][]::new);

    /** What DECIMAL(12,2) cannot hold although JSON reads them as numbers. */
    private static final String[] UNHOLDABLE_AMOUNTS = {"NaN", "Infinity", "-Infinity", "1e999", "1e13", "123456789012.50"};
    private static final String[] UNKNOWN_STATUSES = {
            "pending", "APPROVED", "Declined", "chargeback", "", "approved ", "voided", "authorized"};
    /** ISO 3166 alpha-3 codes of {@link #COUNTRIES}: a common mistake for the two-letter ones. */
    private static final String[] ALPHA3 = {"USA", "GBR", "DEU", "FRA", "NLD", "ESP", "CAN", "ITA", "SWE", "BRA"};

    private final ZipfIds merchants;
    private final ZipfIds users;
    private final long txnSalt;

    // The payment being written (reused; no allocation per message).
    private long txn;
    private long user;
    private long merchant;
    private int country;
    private long amountCents;
    private int status;

    PaymentsTraffic(TrafficSpec spec, SplittableRandom rng) {
        super(spec, rng, FORMAT);
        this.merchants = new ZipfIds("mer-", spec.merchants(), 5, MERCHANT_ZIPF_EXPONENT, spec.seed() ^ 0x3C6EF372FE94F82BL,
                spec.seed() + 11);
        this.users = new ZipfIds("usr-", spec.users(), 6, USER_ZIPF_EXPONENT, spec.seed() ^ 0xA54FF53A5F1D36F1L, spec.seed() + 12);
        this.txnSalt = mix64(spec.seed() + 13);
    }

    @Override
    protected void draft(long number, long eventTime) {
        txn = mix64(txnSalt + number);
        merchant = merchants.next(rng);
        user = users.next(rng);
        country = weighted(COUNTRY_PERCENT);
        amountCents = Math.max(1, logNormal(AMOUNT_MEDIAN_CENTS, AMOUNT_SIGMA, AMOUNT_MAX_CENTS));
        status = weighted(STATUS_PERCENT);
        stamp(eventTime);
    }

    private int weighted(int[] percent) {
        int u = rng.nextInt(100);
        for (int i = 0; i < percent.length; i++) {
            u -= percent[i];
            if (u < 0) {
                return i;
            }
        }
        return percent.length - 1;
    }

    @Override
    protected void writeText(MessageBuffer out, int field) {
        switch (field) {
            case TXN -> out.bytes(TXN_PREFIX).hex16(txn);
            case USER -> users.write(out, user);
            case MERCHANT -> merchants.write(out, merchant);
            case COUNTRY -> out.bytes(COUNTRY_BYTES[country]);
            case AMOUNT -> out.cents(amountCents);
            case STATUS -> out.bytes(STATUS_BYTES[status]);
            default -> throw new IllegalArgumentException("field " + field);
        }
    }

    @Override
    protected void nudge(int field) {
        switch (field) {
            case TXN -> txn = ~txn;
            case USER -> user = (user + 1) % spec.users();
            case MERCHANT -> merchant = (merchant + 1) % spec.merchants();
            case COUNTRY -> country = (country + 1) % COUNTRIES.size();
            case AMOUNT -> amountCents += 1;
            case STATUS -> status = (status + 1) % STATUSES.size();
            default -> throw new IllegalArgumentException("field " + field);
        }
    }

    @Override
    protected int writeWrongType(MessageBuffer raw, int turn) {
        int field;
        switch (Math.floorMod(turn, 10)) {
            case 0 -> { field = AMOUNT; raw.b('"').cents(amountCents).b('"'); }                   // a number in a string
            case 1 -> { field = AMOUNT; raw.ascii("true"); }
            case 2 -> { field = AMOUNT; raw.cents(amountCents).b('0' + 1 + rng.nextInt(9)); }     // three decimals
            case 3 -> { field = AMOUNT; raw.ascii(UNHOLDABLE_AMOUNTS[rng.nextInt(UNHOLDABLE_AMOUNTS.length)]); }
            case 4 -> { field = TS; raw.decimal(eventMillis()); }                                 // epoch millis as a number
            case 5 -> { field = TS; raw.ascii("{\"$date\":\"").isoInstant(eventMillis(), 0).ascii("\"}"); }
            case 6 -> { field = USER; raw.decimal(user); }                                        // a number, not a string
            case 7 -> { field = STATUS; raw.ascii("[\"").bytes(STATUS_BYTES[status]).ascii("\"]"); }
            case 8 -> { field = COUNTRY; raw.decimal(276); }                                      // ISO 3166 numeric
            default -> { field = MERCHANT; raw.ascii("{\"id\":").decimal(merchant).b('}'); }
        }
        return field;
    }

    @Override
    protected boolean writeOwnInvalid(MessageKind kind) {
        switch ((PaymentKind) kind) {
            case NON_POSITIVE_AMOUNT -> {
                String amount = switch (rng.nextInt(3)) {
                    case 0 -> "0";
                    case 1 -> "0.00";
                    default -> null; // the drawn amount, negated: a refund booked with the wrong sign
                };
                writeRecordWith(AMOUNT, amount != null ? ascii(amount) : new MessageBuffer().cents(-amountCents).toBytes());
            }
            case UNKNOWN_STATUS -> writeRecordWith(STATUS, quoted(UNKNOWN_STATUSES[rng.nextInt(UNKNOWN_STATUSES.length)]));
            case BAD_COUNTRY_CODE -> {
                String code = COUNTRIES.get(country);
                String bad = switch (rng.nextInt(4)) {
                    case 0 -> code.toLowerCase(Locale.ROOT);                                      // "de"
                    case 1 -> ALPHA3[country];                                                    // "DEU"
                    case 2 -> code.charAt(0) + code.substring(1).toLowerCase(Locale.ROOT);        // "De"
                    default -> "";
                };
                writeRecordWith(COUNTRY, quoted(bad));
            }
            default -> {
                return false;
            }
        }
        return true;
    }

    @Override
    protected int[] logLineFields() {
        return LOG_LINE_FIELDS;
    }

    @Override
    protected int[] xmlFields() {
        return XML_FIELDS;
    }

    @Override
    protected int badUtf8Forms() {
        return BAD_UTF8_FORMS;
    }

    /** Always: each payments kind names the one reason the stream gives it, and binary garbage's is NOT_UTF8. */
    @Override
    protected boolean binaryHoldsNonUtf8Byte() {
        return true;
    }
}
