package io.tidemark.generate;

import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.Arrays;

/**
 * A growable byte buffer that writes ASCII JSON pieces without going through String or Jackson:
 * the generator's hot path (hundreds of thousands of messages per second on one core).
 */
final class MessageBuffer {

    private static final long MILLIS_PER_DAY = 86_400_000L;
    private static final DateTimeFormatter FALLBACK = DateTimeFormatter.ofPattern("uuuu-MM-dd'T'HH:mm:ss.SSS");

    private byte[] buf = new byte[512];
    private int len;

    void reset() {
        len = 0;
    }

    int length() {
        return len;
    }

    void truncate(int newLength) {
        if (newLength < 0 || newLength > len) {
            throw new IllegalArgumentException("cannot truncate " + len + " bytes to " + newLength);
        }
        len = newLength;
    }

    byte[] toBytes() {
        return Arrays.copyOf(buf, len);
    }

    byte[] copy(int from, int to) {
        return Arrays.copyOfRange(buf, from, to);
    }

    private void ensure(int extra) {
        if (len + extra > buf.length) {
            buf = Arrays.copyOf(buf, Math.max(buf.length * 2, len + extra));
        }
    }

    MessageBuffer b(int value) {
        ensure(1);
        buf[len++] = (byte) value;
        return this;
    }

    MessageBuffer bytes(byte[] b) {
        return bytes(b, 0, b.length);
    }

    MessageBuffer bytes(byte[] b, int off, int n) {
        ensure(n);
        System.arraycopy(b, off, buf, len, n);
        len += n;
        return this;
    }

    /** Characters below 128 only (callers pass literals). */
    MessageBuffer ascii(String s) {
        int n = s.length();
        ensure(n);
        for (int i = 0; i < n; i++) {
            buf[len++] = (byte) s.charAt(i);
        }
        return this;
    }

    /** A non-negative number, left-padded with zeros to at least {@code width} digits. */
    MessageBuffer zeroPadded(long v, int width) {
        if (v < 0) {
            throw new IllegalArgumentException("negative: " + v);
        }
        int digits = digits(v);
        int w = Math.max(width, digits);
        ensure(w);
        int end = len + w;
        for (int i = end - 1; i >= len; i--) {
            buf[i] = (byte) ('0' + (v % 10));
            v /= 10;
        }
        len = end;
        return this;
    }

    MessageBuffer decimal(long v) {
        if (v < 0) {
            if (v == Long.MIN_VALUE) {
                return ascii(Long.toString(v));
            }
            b('-');
            v = -v;
        }
        return zeroPadded(v, 1);
    }

    /** All 64 bits of {@code v} as 16 lower-case hex digits, leading zeros included. */
    MessageBuffer hex16(long v) {
        ensure(16);
        for (int shift = 60; shift >= 0; shift -= 4) {
            int d = (int) (v >>> shift) & 0xF;
            buf[len++] = (byte) (d < 10 ? '0' + d : 'a' + d - 10);
        }
        return this;
    }

    /** {@code cents / 100} with exactly two decimals, e.g. 12.30, 0.05, -7.00: how an amount of money is written. */
    MessageBuffer cents(long cents) {
        if (cents < 0) {
            b('-');
            cents = -cents;
        }
        return zeroPadded(cents / 100, 1).b('.').zeroPadded(cents % 100, 2);
    }

    /** {@code micros / 1e6} as a JSON number with one to six decimals, e.g. 0.0123, 2.5, 0.0. */
    MessageBuffer micros(long micros) {
        if (micros < 0) {
            b('-');
            micros = -micros;
        }
        zeroPadded(micros / 1_000_000, 1);
        long frac = micros % 1_000_000;
        b('.');
        if (frac == 0) {
            return b('0');
        }
        int width = 6;
        while (frac % 10 == 0) {
            frac /= 10;
            width--;
        }
        return zeroPadded(frac, width);
    }

    /**
     * An ISO-8601 instant with milliseconds, written in the given UTC offset:
     * {@code 2026-11-29T14:03:12.345Z} or, for +60 minutes, {@code 2026-11-29T15:03:12.345+01:00}
     * (the same instant). Years 0000-9999; civil date from days per H. Hinnant's algorithm.
     */
    MessageBuffer isoInstant(long epochMillis, int offsetMinutes) {
        long local = epochMillis + offsetMinutes * 60_000L;
        long days = Math.floorDiv(local, MILLIS_PER_DAY);
        long msOfDay = local - days * MILLIS_PER_DAY;
        long z = days + 719_468;
        long era = Math.floorDiv(z, 146_097);
        long doe = z - era * 146_097;
        long yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
        long doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        long mp = (5 * doy + 2) / 153;
        long day = doy - (153 * mp + 2) / 5 + 1;
        long month = mp < 10 ? mp + 3 : mp - 9;
        long year = yoe + era * 400 + (month <= 2 ? 1 : 0);
        if (year < 0 || year > 9999) {
            ascii(FALLBACK.format(Instant.ofEpochMilli(local).atOffset(ZoneOffset.UTC)));
        } else {
            zeroPadded(year, 4).b('-').zeroPadded(month, 2).b('-').zeroPadded(day, 2).b('T');
            long secOfDay = msOfDay / 1000;
            zeroPadded(secOfDay / 3600, 2).b(':').zeroPadded(secOfDay / 60 % 60, 2).b(':').zeroPadded(secOfDay % 60, 2)
                    .b('.').zeroPadded(msOfDay % 1000, 3);
        }
        if (offsetMinutes == 0) {
            return b('Z');
        }
        int abs = Math.abs(offsetMinutes);
        return b(offsetMinutes < 0 ? '-' : '+').zeroPadded(abs / 60, 2).b(':').zeroPadded(abs % 60, 2);
    }

    static int digits(long v) {
        int d = 1;
        while (v >= 10) {
            v /= 10;
            d++;
        }
        return d;
    }
}
