package io.tidemark.launcher;

import java.util.ArrayList;
import java.util.List;

/** An aligned plain-text table: header, rule, rows; numeric columns right-aligned. */
final class TextTable {
    private final List<String> header;
    private final boolean[] rightAligned;
    private final List<List<String>> rows = new ArrayList<>();

    TextTable(List<String> header, boolean[] rightAligned) {
        if (header.size() != rightAligned.length) {
            throw new IllegalArgumentException("header has " + header.size() + " columns, alignment " + rightAligned.length);
        }
        this.header = List.copyOf(header);
        this.rightAligned = rightAligned.clone();
    }

    void add(List<String> row) {
        if (row.size() != header.size()) {
            throw new IllegalArgumentException("row has " + row.size() + " cells, the header " + header.size());
        }
        rows.add(List.copyOf(row));
    }

    int size() {
        return rows.size();
    }

    String render() {
        int n = header.size();
        int[] width = new int[n];
        for (int i = 0; i < n; i++) {
            width[i] = header.get(i).length();
            for (List<String> r : rows) {
                width[i] = Math.max(width[i], r.get(i).length());
            }
        }
        StringBuilder sb = new StringBuilder();
        line(sb, header, width, new boolean[n]);
        for (int i = 0; i < n; i++) {
            if (i > 0) {
                sb.append("  ");
            }
            sb.append("-".repeat(width[i]));
        }
        sb.append('\n');
        for (List<String> r : rows) {
            line(sb, r, width, rightAligned);
        }
        return sb.toString();
    }

    private static void line(StringBuilder sb, List<String> cells, int[] width, boolean[] right) {
        StringBuilder l = new StringBuilder();
        for (int i = 0; i < cells.size(); i++) {
            if (i > 0) {
                l.append("  ");
            }
            String c = cells.get(i);
            String pad = " ".repeat(width[i] - c.length());
            l.append(right[i] ? pad + c : c + pad);
        }
        sb.append(l.toString().stripTrailing()).append('\n');
    }

    /** One line, at most {@code max} characters (0 = no limit), control characters shown as spaces. */
    static String cell(String value, int max) {
        String v = value.replace('\n', ' ').replace('\r', ' ').replace('\t', ' ');
        if (max > 0 && v.length() > max) {
            return v.substring(0, Math.max(1, max - 3)) + "...";
        }
        return v;
    }
}
