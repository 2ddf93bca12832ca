package io.tidemark.operations;

import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.List;
import java.util.Locale;

/** Charts drawn on the server as SVG, for the health report's page: grouped bars and lines over time. */
final class SvgChart {
    private static final DateTimeFormatter MINUTE = DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm").withZone(ZoneOffset.UTC);
    private static final int W = 1000;
    private static final int H = 260;
    private static final int LEFT = 70;
    private static final int BOTTOM = 40;
    private static final int TOP = 24;

    private SvgChart() {
    }

    /** Grouped bars: one group per label, one bar per series. */
    static String bars(String id, List<String> labels, List<double[]> values, String[] series, String unit) {
        StringBuilder s = open(id, unit);
        if (labels.isEmpty()) {
            return s.append(nothing()).append("</svg>\n").toString();
        }
        double max = 0;
        for (double[] v : values) {
            for (double x : v) {
                max = Math.max(max, Math.abs(x));
            }
        }
        max = max == 0 ? 1 : max;
        axes(s, max);
        double group = (W - LEFT - 10.0) / labels.size();
        double bar = Math.max(1, group * 0.8 / series.length);
        for (int i = 0; i < labels.size(); i++) {
            for (int k = 0; k < series.length; k++) {
                double v = values.get(i)[k];
                double hgt = Math.abs(v) / max * (H - TOP - BOTTOM);
                double x = LEFT + i * group + group * 0.1 + k * bar;
                s.append(String.format(Locale.ROOT, "<rect class=\"mark s%d\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\"><title>%s %s: %s</title></rect>",
                        k, x, H - BOTTOM - hgt, bar, Math.max(hgt, 0.5), HealthPage.esc(labels.get(i)), HealthPage.esc(series[k]), fmt(v)));
            }
            if (labels.size() <= 40 || i % Math.ceil(labels.size() / 40.0) == 0) {
                s.append(String.format(Locale.ROOT, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%s</text>", LEFT + (i + 0.5) * group, H - BOTTOM + 15,
                        HealthPage.esc(labels.get(i))));
            }
        }
        legend(s, series);
        return s.append("</svg>\n").toString();
    }

    /** Lines over time; NaN leaves a gap. */
    static String lines(String id, List<Instant> xs, List<List<Double>> ys, String[] series, String unit) {
        StringBuilder s = open(id, unit);
        if (xs.isEmpty()) {
            return s.append(nothing()).append("</svg>\n").toString();
        }
        double max = 0;
        for (List<Double> y : ys) {
            for (double v : y) {
                if (!Double.isNaN(v)) {
                    max = Math.max(max, v);
                }
            }
        }
        max = max == 0 ? 1 : max;
        axes(s, max);
        long x0 = xs.get(0).toEpochMilli();
        long span = Math.max(1, xs.get(xs.size() - 1).toEpochMilli() - x0);
        for (int k = 0; k < ys.size(); k++) {
            StringBuilder points = new StringBuilder();
            for (int i = 0; i < xs.size(); i++) {
                double v = ys.get(k).get(i);
                if (Double.isNaN(v)) {
                    continue;
                }
                double x = xs.size() == 1 ? LEFT + (W - LEFT) / 2.0 : LEFT + (xs.get(i).toEpochMilli() - x0) / (double) span * (W - LEFT - 10);
                double y = H - BOTTOM - v / max * (H - TOP - BOTTOM);
                points.append(String.format(Locale.ROOT, "%.1f,%.1f ", x, y));
                s.append(String.format(Locale.ROOT, "<circle class=\"mark s%d\" cx=\"%.1f\" cy=\"%.1f\" r=\"2.5\"><title>%s %s: %s</title></circle>",
                        k, x, y, MINUTE.format(xs.get(i)), HealthPage.esc(series[k]), fmt(v)));
            }
            s.append("<polyline class=\"line s").append(k).append("\" points=\"").append(points.toString().trim()).append("\"/>");
        }
        s.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"%d\">%s</text><text x=\"%d\" y=\"%d\" text-anchor=\"end\">%s</text>", LEFT, H - BOTTOM + 15,
                MINUTE.format(xs.get(0)), W - 10, H - BOTTOM + 15, MINUTE.format(xs.get(xs.size() - 1))));
        legend(s, series);
        return s.append("</svg>\n").toString();
    }

    private static StringBuilder open(String id, String unit) {
        return new StringBuilder().append("<svg class=\"chart\" id=\"").append(id).append("-chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"")
                .append(W).append("\" height=\"").append(H).append("\" viewBox=\"0 0 ").append(W).append(' ').append(H).append("\" role=\"img\">")
                .append("<text x=\"4\" y=\"14\">").append(HealthPage.esc(unit)).append("</text>");
    }

    private static void axes(StringBuilder s, double max) {
        s.append(String.format(Locale.ROOT, "<line class=\"axis\" x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\"/><line class=\"axis\" x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\"/>",
                LEFT, TOP, LEFT, H - BOTTOM, LEFT, H - BOTTOM, W - 10, H - BOTTOM));
        for (int i = 0; i <= 4; i++) {
            double v = max * i / 4;
            double y = H - BOTTOM - (H - TOP - BOTTOM) * i / 4.0;
            s.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%s</text>", LEFT - 6, y + 4, fmt(v)));
        }
    }

    private static void legend(StringBuilder s, String[] series) {
        for (int k = 0; k < series.length; k++) {
            int x = W - 10 - (series.length - k) * 170;
            s.append(String.format(Locale.ROOT, "<rect class=\"s%d\" x=\"%d\" y=\"4\" width=\"12\" height=\"12\"/><text x=\"%d\" y=\"14\">%s</text>",
                    k, x, x + 16, HealthPage.esc(series[k])));
        }
    }

    private static String nothing() {
        return String.format(Locale.ROOT, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">nothing to show</text>", W / 2, H / 2);
    }

    private static String fmt(double v) {
        return Math.abs(v) >= 100 || v == Math.rint(v) ? String.format(Locale.ROOT, "%,.0f", v) : String.format(Locale.ROOT, "%.3g", v);
    }
}
