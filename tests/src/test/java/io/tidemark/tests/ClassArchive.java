package io.tidemark.tests;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The classpath and class-data-sharing options of the tests' child JVMs. Every child starts a Spark
 * job and so loads some 16,000 classes of Spark, Delta, Hadoop and Tidemark, parsing and verifying each
 * from its jar; a dynamic CDS archive (JDK 17's {@code -XX:ArchiveClassesAtExit}) made once by one
 * short Spark SQL run holds them ready to map: a short {@code tidemark sql} takes CPU 0.70 and wall
 * 0.66 of the same run without it (docs/testing.md). The code that runs is the same.
 *
 * <p>CDS requires the archive's classpath to be a prefix of a child's and refuses non-empty
 * directories in it, so a child's classpath is this JVM's with the jars first and the directories
 * (this module's own classes) after them; the archive covers the jars. It lives in
 * {@code target/cds}, named by a digest of the jars with their sizes and times, so a rebuilt jar gets
 * a new one. A child whose archive cannot be used (made by another JDK, or mapping refused) runs as
 * without one, silently. {@code -Dtidemark.test.child-cds=off} turns it off, to compare.
 */
final class ClassArchive {
    private static final boolean ENABLED = !"off".equals(System.getProperty("tidemark.test.child-cds"));
    /** A short Spark SQL run that loads what a job loads: Delta writes and reads, windows, sketches, a merge. */
    private static final String WORKLOAD = """
            CREATE TABLE t (id BIGINT, k STRING, ts TIMESTAMP, v DOUBLE) USING delta LOCATION '%1$s/t' PARTITIONED BY (k);
            INSERT INTO t SELECT id, CAST(id %% 5 AS STRING), TIMESTAMP'2026-01-01 00:00:00' + make_interval(0, 0, 0, 0, 0, 0, id), id / 7.0 FROM range(5000);
            MERGE INTO t USING (SELECT id, CAST(id %% 5 AS STRING) AS k, TIMESTAMP'2026-01-02 00:00:00' AS ts, 1.0 AS v FROM range(100)) s
              ON t.id = s.id AND t.k = s.k WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *;
            SELECT window(ts, '5 minutes').start, k, count(*), sum(v), approx_count_distinct(id), hll_sketch_estimate(hll_sketch_agg(id)),
              percentile_approx(v, 0.95) FROM t GROUP BY 1, 2 ORDER BY 1, 2 LIMIT 3;
            SELECT k, max(ts) FROM delta.`%1$s/t` WHERE k IN ('1', '2') GROUP BY k ORDER BY k;
            """;

    private static List<String> options;

    private ClassArchive() {
    }

    /** This JVM's classpath, jars first, then directories. */
    static String childClasspath() {
        return String.join(File.pathSeparator, ordered());
    }

    /** The options that map the children's archive, made on the first call; none when it cannot be made. */
    static synchronized List<String> options() throws Exception {
        if (options == null) {
            options = ENABLED ? make() : List.of();
        }
        return options;
    }

    private static List<String> ordered() {
        List<String> jars = new ArrayList<>();
        List<String> others = new ArrayList<>();
        for (String entry : System.getProperty("java.class.path").split(File.pathSeparator)) {
            (isJar(entry) ? jars : others).add(entry);
        }
        jars.addAll(others);
        return jars;
    }

    private static boolean isJar(String entry) {
        return entry.endsWith(".jar") && Files.isRegularFile(Path.of(entry));
    }

    private static List<String> make() throws Exception {
        List<String> jars = ordered().stream().filter(ClassArchive::isJar).toList();
        MessageDigest digest = MessageDigest.getInstance("SHA-256");
        for (String jar : jars) {
            Path p = Path.of(jar);
            digest.update((jar + "|" + Files.size(p) + "|" + Files.getLastModifiedTime(p).toMillis() + "\n").getBytes(StandardCharsets.UTF_8));
        }
        digest.update(System.getProperty("java.home").getBytes(StandardCharsets.UTF_8));
        Path dir = Path.of("target", "cds").toAbsolutePath();
        Path archive = dir.resolve("children-" + HexFormat.of().formatHex(digest.digest()).substring(0, 16) + ".jsa");
        List<String> use = List.of("-XX:SharedArchiveFile=" + archive, "-Xlog:cds=off", "-Xlog:cds+dynamic=off");
        if (Files.isRegularFile(archive)) {
            return use;
        }
        Files.createDirectories(dir);
        Path work = Files.createTempDirectory(dir, "dump-");
        Path partial = work.resolve("children.jsa");
        Path sql = work.resolve("workload.sql");
        Files.writeString(sql, WORKLOAD.formatted(work.resolve("lakehouse")));
        List<String> cmd = new ArrayList<>();
        cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        cmd.add("-Xmx1g");
        cmd.addAll(JobProcess.SHORT_LIVED_JVM);
        cmd.addAll(ReconcileKillTest.sparkJvmOptions());
        cmd.add("-XX:ArchiveClassesAtExit=" + partial);
        cmd.add("-cp");
        cmd.add(String.join(File.pathSeparator, jars));
        cmd.add(io.tidemark.launcher.Tidemark.class.getName());
        cmd.add("sql");
        cmd.add("-f");
        cmd.add(sql.toString());
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(work.resolve("dump.log").toFile());
        pb.environment().put("SPARK_LOCAL_IP", "127.0.0.1");
        Process p = pb.start();
        boolean ended = p.waitFor(300, TimeUnit.SECONDS);
        if (!ended) {
            p.destroyForcibly().waitFor();
        }
        if (!ended || p.exitValue() != 0 || !Files.isRegularFile(partial)) {
            // Children start without an archive: slower, the same otherwise. The log says why.
            System.err.println("ClassArchive: no archive for the child JVMs (see " + work.resolve("dump.log") + ")");
            return List.of();
        }
        try {
            Files.move(partial, archive, StandardCopyOption.ATOMIC_MOVE);
        } catch (IOException e) {
            if (!Files.isRegularFile(archive)) {
                throw e;
            }
        }
        return use;
    }
}
