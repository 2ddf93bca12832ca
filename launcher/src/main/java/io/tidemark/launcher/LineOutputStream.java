package io.tidemark.launcher;

import java.io.ByteArrayOutputStream;
import java.io.OutputStream;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;

/** Bytes written by a PrintStream-based API, passed on line by line (UTF-8) to a command's writer. */
final class LineOutputStream extends OutputStream {
    private final PrintWriter out;
    private final ByteArrayOutputStream line = new ByteArrayOutputStream();

    LineOutputStream(PrintWriter out) {
        this.out = out;
    }

    @Override
    public synchronized void write(int b) {
        line.write(b);
        if (b == '\n') {
            flush();
        }
    }

    @Override
    public synchronized void flush() {
        if (line.size() > 0) {
            out.print(line.toString(StandardCharsets.UTF_8));
            line.reset();
        }
        out.flush();
    }

    @Override
    public void close() {
        flush();
    }
}
