package io.tidemark.launcher;

import java.util.ArrayList;
import java.util.List;

/**
 * Splits SQL text into statements at semicolons that are outside quotes, backticks and comments.
 */
final class SqlScript {
    private SqlScript() {
    }

    /** The complete statements of {@code text} (trimmed, non-empty), and whatever follows the last semicolon. */
    record Split(List<String> statements, String rest) {
    }

    static Split split(String text) {
        List<String> statements = new ArrayList<>();
        StringBuilder current = new StringBuilder();
        char quote = 0;
        boolean lineComment = false;
        boolean blockComment = false;
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            char next = i + 1 < text.length() ? text.charAt(i + 1) : 0;
            if (lineComment) {
                if (c == '\n') {
                    lineComment = false;
                    current.append(c);
                }
                continue;
            }
            if (blockComment) {
                if (c == '*' && next == '/') {
                    blockComment = false;
                    i++;
                }
                continue;
            }
            if (quote != 0) {
                current.append(c);
                if (c == '\\' && quote != '`' && next != 0) {
                    current.append(next);
                    i++;
                } else if (c == quote) {
                    quote = 0;
                }
                continue;
            }
            if (c == '-' && next == '-') {
                lineComment = true;
                i++;
            } else if (c == '/' && next == '*') {
                blockComment = true;
                i++;
            } else if (c == '\'' || c == '"' || c == '`') {
                quote = c;
                current.append(c);
            } else if (c == ';') {
                add(statements, current);
                current.setLength(0);
            } else {
                current.append(c);
            }
        }
        return new Split(statements, current.toString());
    }

    /** All statements, the text after the last semicolon counting as one too. */
    static List<String> statements(String text) {
        Split s = split(text);
        List<String> all = new ArrayList<>(s.statements());
        add(all, new StringBuilder(s.rest()));
        return all;
    }

    private static void add(List<String> out, CharSequence statement) {
        String s = statement.toString().trim();
        if (!s.isEmpty()) {
            out.add(s);
        }
    }
}
