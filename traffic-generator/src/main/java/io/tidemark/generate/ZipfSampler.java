package io.tidemark.generate;

import java.util.SplittableRandom;

/**
 * Zipf-distributed ranks 1..n (P(k) proportional to k^-exponent) in O(1) per sample, no tables:
 * rejection-inversion after W. Hörmann and G. Derflinger, "Rejection-inversion to generate variates
 * from monotone discrete distributions" (1996), as in Apache Commons. StrictMath keeps the sequence
 * identical on every JVM and CPU.
 */
final class ZipfSampler {

    private final int n;
    private final double exponent;
    private final double hIntegralX1;
    private final double hIntegralN;
    private final double s;

    ZipfSampler(int n, double exponent) {
        if (n < 1 || !(exponent > 0)) {
            throw new IllegalArgumentException("Zipf needs n >= 1 and exponent > 0; got n=" + n + ", exponent=" + exponent);
        }
        this.n = n;
        this.exponent = exponent;
        this.hIntegralX1 = hIntegral(1.5) - 1.0;
        this.hIntegralN = hIntegral(n + 0.5);
        this.s = 2.0 - hIntegralInverse(hIntegral(2.5) - h(2));
    }

    int sample(SplittableRandom rng) {
        while (true) {
            double u = hIntegralN + rng.nextDouble() * (hIntegralX1 - hIntegralN);
            double x = hIntegralInverse(u);
            int k = (int) (x + 0.5);
            if (k < 1) {
                k = 1;
            } else if (k > n) {
                k = n;
            }
            if (k - x <= s || u >= hIntegral(k + 0.5) - h(k)) {
                return k;
            }
        }
    }

    private double hIntegral(double x) {
        double logX = StrictMath.log(x);
        return helper2((1.0 - exponent) * logX) * logX;
    }

    private double h(double x) {
        return StrictMath.exp(-exponent * StrictMath.log(x));
    }

    private double hIntegralInverse(double x) {
        double t = x * (1.0 - exponent);
        if (t < -1.0) {
            t = -1.0;
        }
        return StrictMath.exp(helper1(t) * x);
    }

    /** log(1+x)/x, accurate near 0. */
    private static double helper1(double x) {
        return Math.abs(x) > 1e-8 ? StrictMath.log1p(x) / x : 1.0 - x * (0.5 - x * (1.0 / 3.0 - 0.25 * x));
    }

    /** (exp(x)-1)/x, accurate near 0. */
    private static double helper2(double x) {
        return Math.abs(x) > 1e-8 ? StrictMath.expm1(x) / x : 1.0 + x * 0.5 * (1.0 + x / 3.0 * (1.0 + 0.25 * x));
    }
}
