package io.tidemark.tests;

import static io.tidemark.tests.KafkaFixtures.event;
import static org.assertj.core.api.Assertions.assertThat;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.Test;

import io.tidemark.operations.ConservationCheck;
import io.tidemark.lakehouse.Lakehouse;
import io.tidemark.lakehouse.TidemarkConfig;
import io.tidemark.reconcile.DayOutcome;
import io.tidemark.reconcile.DaySelection;
import io.tidemark.reconcile.ReconcileJob;
import io.tidemark.reconcile.ReconcileResult;
import io.tidemark.stream.StreamingJob;
import io.tidemark.tests.KafkaFixtures.Message;

/**
 * Reconcile in a JVM of its own, SIGKILLed at a random moment after it finished its first day: every
 * day is then either wholly as before or wholly reconciled (one Delta commit per day), and a re-run
 * completes the rest. Also the command line's exit status and one-line message on bad input.
 */
class ReconcileKillTest extends OnSharedInfrastructure {
    private static final List<LocalDate> DAYS = List.of(LocalDate.parse("2026-11-25"), LocalDate.parse("2026-11-26"),
            LocalDate.parse("2026-11-27"));

    @Test
    void aKilledRunLeavesEveryDayWhollyOldOrWhollyNewAndTheRerunCompletesIt() throws Exception {
        Path dir = infra.newDir("reconcile-kill");
        String topic = "reconcile-kill-" + dir.getFileName();
        infra.broker.createTopic(topic, 1);
        List<Message> messages = traffic();
        KafkaFixtures.send(infra.broker.bootstrapServers(), topic, messages);
        TidemarkConfig config = infra.config(dir, topic).set(TidemarkConfig.Key.MAX_OFFSETS_PER_TRIGGER, "50").build();
        SparkSession spark = infra.spark;
        Lakehouse lakehouse = Lakehouse.of(config);
        StreamingJob stream = new StreamingJob(spark, config, null);
        stream.start(true).awaitTermination();
        stream.close();
        Map<LocalDate, List<String>> before = TableChecks.kpiRowsByDay(spark, lakehouse);
        assertThat(before.keySet()).containsAll(DAYS);

        // Killed at a random moment after its first day's progress line.
        long seed = System.nanoTime();
        long delayMs = new Random(seed).nextInt(4000);
        System.out.printf("kill delay %d ms after the first day (seed %d)%n", delayMs, seed);
        List<String> args = List.of("--recent", "3", "lakehouse=" + config.lakehouseUri());
        Process p = reconcileProcess(args, dir.resolve("reconcile-killed.log"));
        List<String> out = new CopyOnWriteArrayList<>();
        CountDownLatch firstDay = new CountDownLatch(1);
        Thread reader = new Thread(() -> {
            try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
                for (String line; (line = r.readLine()) != null; ) {
                    System.out.println("[reconcile process] " + line);
                    out.add(line);
                    if (line.startsWith("reconcile " + DAYS.get(0) + " [1/" + DAYS.size() + "]")) {
                        firstDay.countDown();
                    }
                }
            } catch (Exception e) {
                // the process was killed
            }
        });
        reader.start();
        assertThat(firstDay.await(240, TimeUnit.SECONDS)).as("first day's progress line; stderr in %s", dir.resolve("reconcile-killed.log"))
                .isTrue();
        Thread.sleep(delayMs);
        p.destroyForcibly();
        assertThat(p.waitFor(30, TimeUnit.SECONDS)).isTrue();
        reader.join(10_000);
        assertThat(p.exitValue()).as("killed by SIGKILL, not finished").isEqualTo(137);
        assertThat(out).noneMatch(l -> l.startsWith("day "));

        Map<LocalDate, List<String>> killed = TableChecks.kpiRowsByDay(spark, lakehouse);

        // The command line refuses an open day with status 2, in parallel with the re-run.
        Process refused = reconcileProcess(List.of("--from", "2026-11-27", "--to", "2026-11-28", "lakehouse=" + config.lakehouseUri()),
                dir.resolve("reconcile-refused.log"));
        ReconcileResult rerun = new ReconcileJob(spark, config).run(DaySelection.recent(3), false);
        assertThat(rerun.dayList()).isEqualTo(DAYS);
        assertThat(rerun.days()).extracting(DayOutcome::status).containsOnly(DayOutcome.Status.RECONCILED);
        Map<LocalDate, List<String>> after = TableChecks.kpiRowsByDay(spark, lakehouse);

        int reconciledByKilledRun = 0;
        for (LocalDate day : DAYS) {
            assertThat(after.get(day)).as("every day had late records, so reconcile changes it").isNotEqualTo(before.get(day));
            assertThat(killed.get(day)).as("%s after the kill: wholly old or wholly new", day).isIn(before.get(day), after.get(day));
            reconciledByKilledRun += killed.get(day).equals(after.get(day)) ? 1 : 0;
        }
        System.out.printf("the killed run had replaced %d of %d days%n", reconciledByKilledRun, DAYS.size());
        assertThat(killed.get(DAYS.get(0))).isEqualTo(after.get(DAYS.get(0)));
        assertThat(after.get(LocalDate.parse("2026-11-28"))).as("the open day is untouched").isEqualTo(before.get(LocalDate.parse("2026-11-28")));
        assertThat(ConservationCheck.check(spark, lakehouse, (long) messages.size()).violations()).isEmpty();

        assertThat(refused.waitFor(180, TimeUnit.SECONDS)).isTrue();
        assertThat(refused.exitValue()).isEqualTo(2);
        assertThat(messageLines(dir.resolve("reconcile-refused.log"))).containsExactly("tidemark reconcile: day 2026-11-28 is not closed: the stream's watermark is "
                + "2026-11-28T12:20:00Z and the day closes only when it reaches 2026-11-29T00:00:00Z; the last closed day is 2026-11-27. "
                + "Reconcile closed days only.");
    }

    @Test
    void theCommandLineRefusesBadInputWithStatusTwoAndOneLine() throws Exception {
        Path dir = infra.newDir("reconcile-cli");
        Map<List<String>, String> cases = new java.util.LinkedHashMap<>();
        cases.put(List.of("--from", "2026-11-27", "--to", "2026-11-31"),
                "tidemark reconcile: --to '2026-11-31' is not a day; write it as yyyy-MM-dd, e.g. 2026-11-27");
        cases.put(List.of("--from", "2026-11-28", "--to", "2026-11-27"),
                "tidemark reconcile: --from 2026-11-28 is after --to 2026-11-27; give the earlier day first");
        cases.put(List.of("--recent", "0"), "tidemark reconcile: --recent 0: the number of days must be at least 1");
        cases.put(List.of("--dirty", "--recent", "2"), "tidemark reconcile: choose one selection: --from/--to, --recent N or --dirty");
        int i = 0;
        for (Map.Entry<List<String>, String> c : cases.entrySet()) {
            Process p = reconcileProcess(c.getKey(), dir.resolve("cli-" + i++ + ".log"));
            assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
            assertThat(p.exitValue()).as("%s", c.getKey()).isEqualTo(2);
            assertThat(new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8)).as("nothing on stdout").isEmpty();
            assertThat(Files.readAllLines(dir.resolve("cli-" + (i - 1) + ".log"))).containsExactly(c.getValue());
        }
    }

    /**
     * Days 11-25 to 11-27 in two batches read with watermark 0 (all on time), then three late records
     * per day in the third batch (its watermark is 11-28 11:50); the stream's watermark ends at 11-28
     * 12:20, so the three days are closed and 11-28 is open.
     */
    private static List<Message> traffic() {
        Random r = new Random(42);
        Instant ingest = Instant.parse("2026-11-28T14:00:00Z");
        List<String> onTime = new ArrayList<>();
        for (int i = 0; i < 98; i++) {
            onTime.add(randomEvent(r, DAYS.get(i % DAYS.size())));
        }
        List<String> values = new ArrayList<>();
        values.add(event("s1", "c1", "2026-11-28T12:00:00Z", 1.0));
        values.addAll(onTime.subList(0, 49));
        values.addAll(onTime.subList(49, 98));
        values.add(event("s2", "c2", "2026-11-28T12:30:00Z", 1.0));
        for (LocalDate day : DAYS) {
            for (int k = 0; k < 3; k++) {
                values.add(randomEvent(r, day));
            }
        }
        values.add(event("s3", "c3", "2026-11-28T13:00:00Z", 1.0));
        List<Message> messages = new ArrayList<>();
        for (int i = 0; i < values.size(); i++) {
            messages.add(new Message(values.get(i), ingest.plusSeconds(i)));
        }
        return messages;
    }

    private static String randomEvent(Random r, LocalDate day) {
        Instant t = day.atStartOfDay(java.time.ZoneOffset.UTC).toInstant().plusSeconds(r.nextInt(86_400));
        return event("s" + (1 + r.nextInt(15)), "c" + (1 + r.nextInt(4)), t.toString(),
                Math.round(r.nextDouble() * 5_000) / 1000.0);
    }

    /** {@code ReconcileJob.main} in a JVM of its own, on the test classpath, with Spark's JVM options; stderr to {@code log}. */
    static Process reconcileProcess(List<String> args, Path log) throws Exception {
        List<String> cmd = new ArrayList<>();
        cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        cmd.add("-Xmx1g");
        cmd.addAll(JobProcess.SHORT_LIVED_JVM);
        cmd.addAll(ClassArchive.options());
        cmd.addAll(sparkJvmOptions());
        cmd.add("-cp");
        cmd.add(ClassArchive.childClasspath());
        cmd.add(ReconcileJob.class.getName());
        cmd.addAll(args);
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectError(log.toFile());
        pb.environment().put("SPARK_LOCAL_IP", "127.0.0.1");
        return pb.start();
    }

    /**
     * The root pom's {@code spark.jvm.opens}: surefire started this JVM with them (its argLine), so
     * they are read back from here; {@code -Dtidemark.jvm.opens} overrides.
     */
    static List<String> sparkJvmOptions() {
        String explicit = System.getProperty("tidemark.jvm.opens");
        if (explicit != null && !explicit.isBlank()) {
            return Arrays.asList(explicit.trim().split("\\s+"));
        }
        return ManagementFactory.getRuntimeMXBean().getInputArguments().stream()
                .filter(a -> a.startsWith("--add-opens") || a.startsWith("-Djdk.reflect"))
                .toList();
    }

    /** The job's own lines on stderr (Spark may log around them). */
    private static List<String> messageLines(Path log) throws Exception {
        return Files.readAllLines(log).stream().filter(l -> l.startsWith("tidemark reconcile:")).toList();
    }
}
