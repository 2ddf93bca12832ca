package io.tidemark.tests;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/** A Tidemark job in a JVM of its own, so a test can kill it as an operator's kill -9 would. */
final class JobProcess {
    /**
     * The JIT options of the tests' child JVMs (run-tests sets the same for spark-submit's): C1 only,
     * with the code cache a tiered JVM would have. C1 alone gets a 48 MB code cache by default, which
     * Spark's generated classes fill within a minute of a streaming job's batches; the JVM then stops
     * compiling and runs every new method interpreted, slowly enough that a restarted stream did not
     * commit a batch in ten minutes. The parallel collector costs them about 5 % less CPU than G1.
     * {@code -Dtidemark.test.child-jit="..."} on the Maven command line
     * sets others, to compare.
     */
    static final List<String> SHORT_LIVED_JVM = List.of(
            System.getProperty("tidemark.test.child-jit", "-XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=256m -XX:+UseParallelGC").trim().split("\\s+"));

    final Process process;
    final Path log;
    private final long startedNanos = System.nanoTime();
    /** The child's CPU time as last seen while it lived (the JVM cannot read it after the exit). */
    private java.time.Duration cpu = java.time.Duration.ZERO;

    private JobProcess(Process process, Path log) {
        this.process = process;
        this.log = log;
    }

    /** Notes the child's CPU time so far (its whole life when called just before it ends). */
    private void sampleCpu() {
        process.toHandle().info().totalCpuDuration().ifPresent(d -> cpu = d);
    }

    /**
     * One line to the test's output per child: wall and CPU seconds, and how it ended. A test run's
     * children are most of its CPU; these lines say which ones cost what (docs/testing.md).
     */
    private void report(String end) {
        System.out.printf("child JVM %s: %s, wall %.1f s, cpu %.1f s%n", log.getFileName(), end,
                (System.nanoTime() - startedNanos) / 1e9, cpu.toMillis() / 1000.0);
    }

    /** A process started elsewhere (e.g. spark-submit) whose output goes to {@code log}. */
    static JobProcess of(Process process, Path log) {
        return new JobProcess(process, log);
    }

    static JobProcess start(Class<?> mainClass, List<String> args, Map<String, String> systemProperties, Path log) throws Exception {
        return start(mainClass, args, systemProperties, log, null);
    }

    /** As {@link #start(Class, List, Map, Path)}, with stderr to {@code errLog} (null: into {@code log} too), for a job whose stdout is data. */
    static JobProcess start(Class<?> mainClass, List<String> args, Map<String, String> systemProperties, Path log, Path errLog) throws Exception {
        List<String> cmd = new ArrayList<>();
        cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        cmd.add("-Xmx2g");
        // A child lives for seconds to a few minutes: C2's compilations cost about half of such a JVM's
        // CPU and are never paid back (docs/testing.md). The code it runs is the same.
        cmd.addAll(SHORT_LIVED_JVM);
        cmd.addAll(ClassArchive.options());
        cmd.addAll(Arrays.asList(System.getProperty("tidemark.jvm.opens", "").trim().split("\\s+")));
        String jfr = System.getProperty("tidemark.test.child-jfr", "");
        if (!jfr.isBlank()) {
            // -Dtidemark.test.child-jfr=profile: each child records a flight recording beside its log, to profile
            cmd.add("-XX:StartFlightRecording=settings=" + jfr.trim() + ",filename=" + log + ".jfr");
        }
        systemProperties.forEach((k, v) -> cmd.add("-D" + k + "=" + v));
        cmd.add("-cp");
        cmd.add(ClassArchive.childClasspath());
        cmd.add(mainClass.getName());
        cmd.addAll(args);
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()));
        if (errLog == null) {
            pb.redirectErrorStream(true);
        } else {
            pb.redirectError(ProcessBuilder.Redirect.appendTo(errLog.toFile()));
        }
        pb.environment().put("SPARK_LOCAL_IP", "127.0.0.1");
        return new JobProcess(pb.start(), log);
    }

    int await(long timeoutSeconds) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(timeoutSeconds);
        // polled rather than waited for, so its CPU time is seen until shortly before it ends
        while (!process.waitFor(250, TimeUnit.MILLISECONDS)) {
            sampleCpu();
            if (System.nanoTime() > deadline) {
                process.destroyForcibly().waitFor();
                report("timed out");
                throw new AssertionError("job did not finish in " + timeoutSeconds + " s; log: " + log + "\n" + tail());
            }
        }
        report("exit " + process.exitValue());
        return process.exitValue();
    }

    /** SIGKILL, as {@code kill -9}. */
    void kill() throws Exception {
        sampleCpu();
        process.destroyForcibly();
        process.waitFor();
        report("killed");
    }

    /**
     * Waits, polling the log every 20 ms, for the first line that starts with {@code prefix}, and
     * returns it; fails if the job ends or the time runs out first.
     */
    String awaitLine(String prefix, long timeoutSeconds) throws Exception {
        long deadline = System.currentTimeMillis() + timeoutSeconds * 1000;
        while (true) {
            boolean ended = !process.isAlive();
            for (String l : lines()) {
                if (l.startsWith(prefix)) {
                    return l;
                }
            }
            if (ended || System.currentTimeMillis() > deadline) {
                throw new AssertionError("no line starting with '" + prefix + "' " + (ended ? "before the job ended" : "in " + timeoutSeconds + " s")
                        + "; log: " + log + "\n" + tail());
            }
            Thread.sleep(20);
        }
    }

    /** The lines of the log so far. */
    List<String> lines() throws Exception {
        // lenient decoding: a line being written may end in half a character
        return Files.exists(log) ? List.of(new String(Files.readAllBytes(log), java.nio.charset.StandardCharsets.UTF_8).split("\n")) : List.of();
    }

    String tail() throws Exception {
        List<String> lines = Files.readAllLines(log);
        return String.join("\n", lines.subList(Math.max(0, lines.size() - 30), lines.size()));
    }

    static String classpathSeparator() {
        return File.pathSeparator;
    }
}
