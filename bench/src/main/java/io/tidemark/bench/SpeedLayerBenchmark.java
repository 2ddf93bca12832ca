package io.tidemark.bench;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

import io.tidemark.broker.BrokerSettings;
import io.tidemark.broker.LocalKafkaBroker;
import io.tidemark.generate.GenerationReport;
import io.tidemark.generate.KafkaTrafficProducer;
import io.tidemark.generate.TrafficSpec;

/**
 * Drains the same backlog from a real broker with the speed layer and with the plain job, side by
 * side, at the same max records per batch, each in a fresh JVM; prints a markdown table and
 * appends it to the results file.
 *
 * <p>{@code bench/run speed [--events N] [--batch-sizes a,b] [--rounds R] [--only tidemark|plain]}
 */
public final class SpeedLayerBenchmark {

    record Run(String job, long batchSize, long events, long millis, List<long[]> batches, long heapPeak, long rssPeak) {
        double eventsPerSecond() {
            return events * 1000.0 / millis;
        }

        double meanBatchSeconds() {
            return batches.stream().mapToLong(b -> b[1]).average().orElse(0) / 1000.0;
        }
    }

    public static void main(String[] args) throws Exception {
        long events = 5_000_000;
        List<Long> batchSizes = List.of(500_000L, 2_000_000L);
        int rounds = 1;
        String only = null;
        Path work = Path.of("bench/work").toAbsolutePath();
        Path results = Path.of("bench/results.log").toAbsolutePath();
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--events" -> events = Long.parseLong(args[++i]);
                case "--batch-sizes" -> batchSizes = Arrays.stream(args[++i].split(",")).map(Long::parseLong).toList();
                case "--rounds" -> rounds = Integer.parseInt(args[++i]);
                case "--only" -> only = args[++i];
                case "--work" -> work = Path.of(args[++i]).toAbsolutePath();
                default -> throw new IllegalArgumentException("unknown argument " + args[i]);
            }
        }
        deleteRecursively(work);
        Files.createDirectories(work);
        try (LocalKafkaBroker broker = LocalKafkaBroker.start(BrokerSettings.of(work.resolve("broker")).withHeapMb(1024))) {
            String topic = "bench-events";
            broker.createTopic(topic, 2);
            System.out.printf("producing %,d events to %s ...%n", events, topic);
            TrafficSpec spec = TrafficSpec.builder().topic(topic).count(events).invalidFraction(0).lateFraction(0.01).seed(1).build();
            GenerationReport report = new KafkaTrafficProducer(broker.bootstrapServers(), Map.of())
                    .produce(spec, p -> System.out.println("  " + p.line()));
            System.out.printf("produced %,d events in %.1f s%n", report.messages(), report.elapsed().toMillis() / 1000.0);

            List<Run> runs = new ArrayList<>();
            for (int round = 0; round < rounds; round++) {
                for (long batchSize : batchSizes) {
                    List<String> order = round % 2 == 0 ? List.of("plain", "tidemark") : List.of("tidemark", "plain");
                    for (String job : order) {
                        if (only != null && !only.equals(job)) {
                            continue;
                        }
                        Run r = runJob(job, broker.bootstrapServers(), topic, batchSize, events, work.resolve(job + "-" + batchSize + "-" + round));
                        System.out.printf("%-8s batch %,9d: %,8.0f events/s, %d batches, mean batch %.1f s, heap peak %,d MB, RSS peak %,d MB%n",
                                job, batchSize, r.eventsPerSecond(), r.batches().size(), r.meanBatchSeconds(), r.heapPeak() >> 20, r.rssPeak() >> 20);
                        runs.add(r);
                    }
                }
            }
            String table = table(runs, events);
            System.out.println(table);
            Files.writeString(results, "\n## " + Instant.now() + " speed " + String.join(" ", args) + "\n" + table,
                    StandardOpenOption.CREATE, StandardOpenOption.APPEND);
        }
    }

    static Run runJob(String job, String bootstrap, String topic, long batchSize, long events, Path dir) throws Exception {
        Files.createDirectories(dir);
        List<String> cmd = new ArrayList<>();
        cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        cmd.add("-Xmx8g");
        cmd.addAll(Arrays.asList(System.getProperty("tidemark.jvm.opens", "").trim().split("\\s+")));
        cmd.addAll(List.of("-cp", System.getProperty("java.class.path"), BenchJob.class.getName(),
                job, bootstrap, topic, String.valueOf(batchSize), dir.toString()));
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectError(dir.resolve("stderr.log").toFile());
        pb.environment().put("SPARK_LOCAL_IP", "127.0.0.1");
        Process p = pb.start();
        long start = 0;
        long end = 0;
        long heap = 0;
        long rss = 0;
        List<long[]> batches = new ArrayList<>();
        try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
            String line;
            while ((line = r.readLine()) != null) {
                String[] f = line.split(" ");
                switch (f[0]) {
                    case "START" -> start = Long.parseLong(f[1]);
                    case "END" -> end = Long.parseLong(f[1]);
                    case "BATCH" -> {
                        batches.add(new long[] {Long.parseLong(f[2]), Long.parseLong(f[3])});
                        System.out.printf("  %s batch %s: %s records in %.1f s%n", job, f[1], f[2], Long.parseLong(f[3]) / 1000.0);
                    }
                    case "PEAK" -> {
                        heap = Long.parseLong(f[1]);
                        rss = Long.parseLong(f[2]);
                    }
                    default -> { }
                }
            }
        }
        int exit = p.waitFor();
        if (exit != 0 || end == 0) {
            throw new IllegalStateException(job + " run failed with exit code " + exit + "; see " + dir.resolve("stderr.log"));
        }
        long consumed = batches.stream().mapToLong(b -> b[0]).sum();
        if (consumed != events) {
            throw new IllegalStateException(job + " consumed " + consumed + " records, expected " + events);
        }
        return new Run(job, batchSize, events, end - start, batches, heap, rss);
    }

    static String table(List<Run> runs, long events) {
        StringBuilder sb = new StringBuilder();
        sb.append(String.format("%n%,d events; time = query start to end (JVM and Spark start excluded)%n%n", events));
        sb.append("| max records/batch | job | events/s | ratio tidemark/plain | batches | mean batch s | first 3 batches s | last 3 batches s | heap peak MB | RSS peak MB |\n");
        sb.append("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
        for (Run r : runs) {
            double plain = runs.stream().filter(x -> x.job().equals("plain") && x.batchSize() == r.batchSize())
                    .mapToDouble(Run::eventsPerSecond).average().orElse(Double.NaN);
            String ratio = r.job().equals("tidemark") ? String.format("%.2f", r.eventsPerSecond() / plain) : "";
            sb.append(String.format("| %,d | %s | %,.0f | %s | %d | %.1f | %.1f | %.1f | %,d | %,d |%n", r.batchSize(), r.job(), r.eventsPerSecond(),
                    ratio, r.batches().size(), r.meanBatchSeconds(), mean(r.batches(), true), mean(r.batches(), false),
                    r.heapPeak() >> 20, r.rssPeak() >> 20));
        }
        return sb.toString();
    }

    private static double mean(List<long[]> batches, boolean first) {
        int n = Math.min(3, batches.size());
        List<long[]> part = first ? batches.subList(0, n) : batches.subList(batches.size() - n, batches.size());
        return part.stream().mapToLong(b -> b[1]).average().orElse(0) / 1000.0;
    }

    static void deleteRecursively(Path p) throws Exception {
        if (!Files.exists(p)) {
            return;
        }
        try (var s = Files.walk(p)) {
            s.sorted((a, b) -> b.getNameCount() - a.getNameCount()).forEach(x -> x.toFile().delete());
        }
    }
}
