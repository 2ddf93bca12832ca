package io.tidemark.tests;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Locale;

import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * The CPU each test class of this module costs, for the run's report ({@code .ci/test-times} adds it to
 * the wall times): registered for every class (META-INF/services, junit-platform.properties), it reads
 * this JVM's CPU time and that of the child processes it has waited for ({@code /proc/self/stat}: a child
 * JVM, a spark-sql, a script) before the class and after it, and appends a line to
 * {@code target/test-cpu.tsv}. On a machine whose cores are all busy, CPU rather than wall time says what
 * a class costs the run. Processes a class leaves to others (a Spark cluster's daemons and executors,
 * the shared broker) are not counted. Nothing is asserted: it is a measurement.
 */
public final class CpuPerClass implements BeforeAllCallback, AfterAllCallback {
    private static final Path OUT = Path.of("target", "test-cpu.tsv");
    private static final ExtensionContext.Namespace NS = ExtensionContext.Namespace.create(CpuPerClass.class);

    @Override
    public void beforeAll(ExtensionContext context) {
        context.getStore(NS).put("start", ticks());
    }

    @Override
    public void afterAll(ExtensionContext context) {
        long[] start = context.getStore(NS).get("start", long[].class);
        long[] end = ticks();
        if (start == null || end == null) {
            return;
        }
        String line = String.format(Locale.ROOT, "%s\t%.1f\t%.1f%n", context.getRequiredTestClass().getName(),
                (end[0] - start[0]) / 100.0, (end[1] - start[1]) / 100.0);
        try {
            Files.createDirectories(OUT.getParent());
            Files.writeString(OUT, line, StandardCharsets.UTF_8, StandardOpenOption.CREATE, StandardOpenOption.APPEND);
        } catch (IOException e) {
            // a measurement only: a test never fails for it
        }
    }

    /** This process's user + system time and its waited-for children's, in clock ticks (100 a second on Linux); null elsewhere. */
    private static long[] ticks() {
        try {
            String stat = Files.readString(Path.of("/proc/self/stat"));
            // Fields after the command name (which may hold spaces, inside parentheses): state is field 3,
            // utime 14, stime 15, cutime 16, cstime 17.
            String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
            return new long[] {Long.parseLong(f[11]) + Long.parseLong(f[12]), Long.parseLong(f[13]) + Long.parseLong(f[14])};
        } catch (IOException | RuntimeException e) {
            return null;
        }
    }
}
