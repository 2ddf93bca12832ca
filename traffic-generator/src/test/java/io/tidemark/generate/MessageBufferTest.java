package io.tidemark.generate;

import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.SplittableRandom;

import static org.assertj.core.api.Assertions.assertThat;

class MessageBufferTest {

    private static final DateTimeFormatter ISO_MILLIS = DateTimeFormatter.ofPattern("uuuu-MM-dd'T'HH:mm:ss.SSSXXX");

    private static String text(MessageBuffer b) {
        return new String(b.toBytes(), StandardCharsets.US_ASCII);
    }

    @Test
    void isoInstantMatchesJavaTimeForAnyInstantAndOffset() {
        SplittableRandom r = new SplittableRandom(1);
        int[] offsets = {0, 60, 120, -300, 330, 540, -210, 840, -720};
        long lo = Instant.parse("1970-01-01T00:00:00Z").toEpochMilli() - 86_400_000L * 365 * 50;
        long hi = Instant.parse("2100-01-01T00:00:00Z").toEpochMilli();
        MessageBuffer b = new MessageBuffer();
        for (int i = 0; i < 200_000; i++) {
            long millis = i < 4 ? new long[] {0, -1, 951_782_400_000L, 4_107_542_399_999L}[i] : r.nextLong(lo, hi);
            int offset = offsets[r.nextInt(offsets.length)];
            b.reset();
            b.isoInstant(millis, offset);
            String expected = ISO_MILLIS.format(Instant.ofEpochMilli(millis).atOffset(ZoneOffset.ofTotalSeconds(offset * 60)));
            assertThat(text(b)).as("%d at %d min", millis, offset).isEqualTo(expected);
        }
    }

    @Test
    void microsAreShortExactDecimals() {
        long[] in = {0, 1, 10, 123_400, 1_000_000, 2_500_000, 12_345, 999_999, -500_000, 5_000_000};
        String[] out = {"0.0", "0.000001", "0.00001", "0.1234", "1.0", "2.5", "0.012345", "0.999999", "-0.5", "5.0"};
        MessageBuffer b = new MessageBuffer();
        for (int i = 0; i < in.length; i++) {
            b.reset();
            assertThat(text(b.micros(in[i]))).isEqualTo(out[i]);
            assertThat(Double.parseDouble(out[i])).isEqualTo(in[i] / 1e6);
        }
    }

    @Test
    void zeroPaddingWidensWhenNeededAndBufferGrows() {
        MessageBuffer b = new MessageBuffer();
        b.zeroPadded(42, 6).b(' ').zeroPadded(1_234_567, 4).b(' ').decimal(-17).b(' ').decimal(Long.MIN_VALUE);
        assertThat(text(b)).isEqualTo("000042 1234567 -17 " + Long.MIN_VALUE);
        b.reset();
        for (int i = 0; i < 10_000; i++) {
            b.ascii("abc");
        }
        assertThat(b.length()).isEqualTo(30_000);
        b.truncate(3);
        assertThat(text(b)).isEqualTo("abc");
    }
}
