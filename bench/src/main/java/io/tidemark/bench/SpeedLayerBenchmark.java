package io.tidemark.bench;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.Function;
import java.util.function.ToDoubleFunction;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import io.tidemark.broker.BrokerSettings;
import io.tidemark.broker.LocalKafkaBroker;
import io.tidemark.generate.GenerationReport;
import io.tidemark.generate.KafkaTrafficProducer;
import io.tidemark.generate.TrafficProfile;
import io.tidemark.generate.TrafficSpec;
import io.tidemark.lakehouse.TidemarkConfig;
import io.tidemark.launcher.LocalS3Server;
import io.tidemark.pipeline.Pipeline;

/**
 * Drains the same backlog from a real broker with the plain job, the speed layer and the
 * do-it-yourself Lambda (see {@link BenchJob}), side by side at the same max records per batch,
 * each run in a fresh JVM. The topic is produced once; then {@code --rounds} rounds, in each round
 * for each batch size every job once, the order of the jobs rotated by the round so that no job
 * always runs first. Prints every run and a summary of medians per batch size and job, the speed
 * layer's median time per stage (from its {@code TIDEMARK_TRACE_BATCHES} lines), appends the tables
 * to {@code bench/results.log} and writes {@code bench/results/speed.json}. With the job {@code s3} (the speed layer on
 * the repository's local S3 server, {@code --only tidemark,s3}): the S3 requests per batch too, and {@code speed-s3.json}.
 *
 * <p>{@code bench/run speed [--events N] [--batch-sizes a,b] [--rounds R] [--only plain,tidemark,diy,published,s3] [--pipeline FILE]}
 */
public final class SpeedLayerBenchmark {

    /** published: the speed layer with every KPI table published to Kafka (BenchJob#publishing); not run unless --only names it. */
    /** s3: the speed layer with its lakehouse and checkpoint on the repository's local S3 server (not run unless --only names it). */
    static final List<String> JOBS = List.of("plain", "tidemark", "published", "diy", "s3");
    static final List<String> DEFAULT_JOBS = List.of("plain", "tidemark", "diy");
    /** The queries each job runs (the plain job one per KPI table of the pipeline); each must consume exactly the produced events. */
    static Map<String, List<String>> queries(String pipeline) {
        Pipeline p = 
                TidemarkConfig.builder().set(TidemarkConfig.Key.PIPELINE, pipeline).build().pipeline();
        List<String> plain = p.tables().stream().map(t -> "plain" + BenchJob.querySuffix(p, t)).toList();
        List<String> diy = new ArrayList<>(List.of("bronze"));
        p.tables().forEach(t -> diy.add("kpi" + BenchJob.querySuffix(p, t)));
        return Map.of("plain", plain, "tidemark", List.of("tidemark"), "published", List.of("published"), "diy", diy, "s3", List.of("s3"));
    }
    static final Pattern TRACE = Pattern.compile("trace batch (\\d+) (\\S+) (\\d+) ms");
    /** The system properties of an s3 job's JVM: the S3 server's spark.hadoop.fs.s3a.* settings and the run's s3a:// base. */
    static Map<String, String> s3Properties = Map.of();

    /** One micro-batch of one query. */
    record Batch(String query, long id, long records, long millis) {
    }

    record Run(int round, String job, long batchSize, long events, String load, long millis, List<Batch> batches, long heapPeak,
            long rssPeak, long liveHeapPeak, long cpuNanos, Map<Long, Map<String, Long>> trace, Map<Long, Map<String, Long>> s3Requests) {
        double eventsPerSecond() {
            return events * 1000.0 / millis;
        }

        /** CPU seconds (all threads of the job's JVM) per million events: the cores the job costs. */
        double cpuSecondsPerMillion() {
            return cpuNanos / 1e9 / (events / 1e6);
        }

        List<Batch> of(String query) {
            return batches.stream().filter(b -> b.query().equals(query)).toList();
        }

        /** The queries the run reported batches of, in their first batch's order (runJob checked them against the job's). */
        List<String> queries() {
            return batches.stream().map(Batch::query).distinct().toList();
        }

        /** The steady batches of every query (see {@link #steady}), in seconds. */
        double[] steadyBatchSeconds() {
            return queries().stream().flatMap(q -> steady(of(q)).stream()).mapToDouble(b -> b.millis() / 1000.0).toArray();
        }

        /** The speed layer's batches whose stages count: all but batch 0 and the last batch (which may be partial). */
        List<Long> steadyTraceBatches() {
            List<Long> ids = of("tidemark").stream().map(Batch::id).sorted().toList();
            if (ids.size() < 3) {
                return List.of();
            }
            return ids.subList(1, ids.size() - 1).stream().filter(id -> id != 0).toList();
        }
    }

    /**
     * A query's batches but its first (start-up, JIT) and, when it holds fewer records than the
     * largest batch, its last: the backlog's remainder (with 2 partitions Spark's rate limit takes
     * e.g. 99,999 of 100,000 per batch, so the run ends with a batch of a few records).
     */
    static List<Batch> steady(List<Batch> batches) {
        if (batches.size() < 2) {
            return List.of();
        }
        long largest = batches.stream().mapToLong(Batch::records).max().orElse(0);
        int end = batches.get(batches.size() - 1).records() < largest ? batches.size() - 1 : batches.size();
        return batches.subList(1, Math.max(1, end));
    }

    record Summary(long batchSize, String job, List<Run> runs, double eps, double epsMin, double epsMax, double ratioVsPlain,
            double ratioVsDiy, double heapMb, double heapRatioVsPlain, double rssMb, double steadyBatchS,
            Map<String, Double> steadyBatchSByQuery, double liveHeapMb, double liveHeapRatioVsPlain, double cpuSPerMillion,
            double cpuRatioVsPlain) {
    }

    public static void main(String[] args) throws Exception {
        Instant startedAt = Instant.now().truncatedTo(ChronoUnit.SECONDS);
        long events = 5_000_000;
        List<Long> batchSizes = List.of(500_000L, 2_000_000L);
        int rounds = 3;
        List<String> only = DEFAULT_JOBS;
        Path work = Path.of("bench/work").toAbsolutePath();
        String pipeline = "network";
        Path results = Path.of("bench/results.log").toAbsolutePath();
        Path json = Path.of("bench/results/speed.json").toAbsolutePath();  // speed-s3.json with the s3 job
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--events" -> events = Long.parseLong(args[++i]);
                case "--batch-sizes" -> batchSizes = Arrays.stream(args[++i].split(",")).map(String::trim).map(Long::parseLong).toList();
                case "--rounds" -> rounds = Integer.parseInt(args[++i]);
                case "--only" -> only = Arrays.stream(args[++i].split(",")).map(String::trim).filter(s -> !s.isEmpty()).toList();
                case "--work" -> work = Path.of(args[++i]).toAbsolutePath();
                case "--pipeline" -> pipeline = args[++i];
                default -> throw new IllegalArgumentException("unknown argument " + args[i]
                        + " (known: --events, --batch-sizes, --rounds, --only, --work, --pipeline)");
            }
        }
        for (String j : only) {
            if (!JOBS.contains(j)) {
                throw new IllegalArgumentException("--only: unknown job " + j + " (known: " + String.join(", ", JOBS) + ")");
            }
        }
        if (rounds < 1) {
            throw new IllegalArgumentException("--rounds must be at least 1");
        }
        final List<String> selected = only;
        List<String> jobs = JOBS.stream().filter(selected::contains).toList();
        if (jobs.contains("s3")) {
            // the object-storage comparison keeps its own file: speed.json stays the figures against the plain job and the DIY Lambda
            json = json.resolveSibling("speed-s3.json");
        }
        if (System.getenv("TIDEMARK_TRACE_BATCHES") == null && jobs.contains("tidemark")) {
            System.out.println("note: TIDEMARK_TRACE_BATCHES is not set (bench/run sets it): no per-stage breakdown of the speed layer");
        }
        deleteRecursively(work);
        Files.createDirectories(work);
        List<Run> runs = new ArrayList<>();
        LocalS3Server s3 = jobs.contains("s3") ? startS3(work) : null;
        try (LocalKafkaBroker broker = LocalKafkaBroker.start(BrokerSettings.of(work.resolve("broker")).withHeapMb(1024))) {
            // The network pipeline reads the benchmark's own topic; a pipeline file its own, with the generator's events for it.
            Pipeline declared = 
                    TidemarkConfig.builder().set(TidemarkConfig.Key.PIPELINE, pipeline).build().pipeline();
            String topic = pipeline.equals("network") ? "bench-events" : declared.events().topic();
            TrafficProfile profile = TrafficProfile.forEvents(
                    declared.events().columns().stream().map(Pipeline.Column::name).toList())
                    .orElseThrow(() -> new IllegalArgumentException("--pipeline: the generator has no events of " + declared.file()));
            broker.createTopic(topic, 2);
            System.out.printf("producing %,d %s events to %s ...%n", events, profile.cliName(), topic);
            TrafficSpec spec = TrafficSpec.builder().profile(profile).topic(topic).count(events).invalidFraction(0).lateFraction(0.01).seed(1)
                    .build();
            GenerationReport report = new KafkaTrafficProducer(broker.bootstrapServers(), Map.of())
                    .produce(spec, p -> System.out.println("  " + p.line()));
            System.out.printf("produced %,d events in %.1f s%n", report.messages(), report.elapsed().toMillis() / 1000.0);

            for (int round = 0; round < rounds; round++) {
                List<String> order = rotate(jobs, round);
                for (long batchSize : batchSizes) {
                    for (String job : order) {
                        String load = BenchResults.loadAverage();
                        System.out.printf("round %d, %s, batch %,d: load average before %s%n", round + 1, job, batchSize, load);
                        Run r = runJob(round + 1, job, broker.bootstrapServers(), topic, batchSize, events, load,
                                work.resolve(job + "-" + batchSize + "-" + round), pipeline);
                        System.out.printf("%-8s batch %,9d round %d: %,8.0f events/s, %s batches, mean batch %s s, heap peak %,.0f MB, RSS peak %,.0f MB, load before %s%n",
                                job, batchSize, r.round(), r.eventsPerSecond(), perQuery(r, bs -> bs.size(), "%.0f"),
                                perQuery(r, SpeedLayerBenchmark::meanSeconds, "%.1f"), r.heapPeak() / 1048576.0, r.rssPeak() / 1048576.0, load);
                        runs.add(r);
                    }
                }
            }
        } finally {
            if (s3 != null) {
                s3.close();
            }
        }
        List<Summary> summaries = summarise(runs, batchSizes, jobs);
        Map<Long, Map<String, double[]>> stages = stages(runs, batchSizes);
        String text = runsTable(runs, events) + summaryTable(summaries, rounds) + stageTable(stages, runs) + publishingRatio(runs, batchSizes)
                + objectStorage(runs, batchSizes);
        System.out.println(text);
        Files.writeString(results, "\n## " + Instant.now() + " speed " + String.join(" ", args) + "\n" + text,
                StandardOpenOption.CREATE, StandardOpenOption.APPEND);
        BenchResults.write(json, json(args, startedAt, events, rounds, batchSizes, jobs, runs, summaries, stages));
        System.out.println("wrote " + json);
    }

    /** The jobs in their order rotated left by the round: round 0 plain, tidemark, diy; round 1 tidemark, diy, plain; ... */
    static List<String> rotate(List<String> jobs, int round) {
        List<String> order = new ArrayList<>();
        for (int i = 0; i < jobs.size(); i++) {
            order.add(jobs.get((i + round) % jobs.size()));
        }
        return order;
    }

    static Run runJob(int round, String job, String bootstrap, String topic, long batchSize, long events, String load, Path dir,
                      String pipeline) throws Exception {
        Files.createDirectories(dir);
        List<String> cmd = new ArrayList<>();
        cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        cmd.add("-Xmx8g");
        cmd.addAll(Arrays.stream(System.getProperty("tidemark.jvm.opens", "").trim().split("\\s+")).filter(s -> !s.isEmpty()).toList());
        if (job.equals("s3")) {
            s3Properties.forEach((k, v) -> cmd.add("-D" + k + "=" + v));
        }
        cmd.addAll(List.of("-cp", System.getProperty("java.class.path"), BenchJob.class.getName(),
                job, bootstrap, topic, String.valueOf(batchSize), dir.toString(), pipeline));
        Path stderr = dir.resolve("stderr.log");
        // The child inherits this JVM's environment (TIDEMARK_TRACE_BATCHES from bench/run included).
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectError(stderr.toFile());
        pb.environment().put("SPARK_LOCAL_IP", "127.0.0.1");
        Process p = pb.start();
        long start = 0;
        long end = 0;
        long heap = 0;
        long rss = 0;
        long liveHeap = 0;
        long cpu = 0;
        List<Batch> batches = new ArrayList<>();
        Map<Long, Map<String, Long>> s3Requests = new TreeMap<>();
        try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
            String line;
            while ((line = r.readLine()) != null) {
                String[] f = line.split(" ");
                switch (f[0]) {
                    case "START" -> start = Long.parseLong(f[1]);
                    case "END" -> end = Long.parseLong(f[1]);
                    case "CPU" -> cpu = Long.parseLong(f[1]);
                    case "BATCH" -> {
                        String query = f.length > 5 ? f[5] : job;
                        Batch b = new Batch(query, Long.parseLong(f[1]), Long.parseLong(f[2]), Long.parseLong(f[3]));
                        batches.add(b);
                        System.out.printf("  %s batch %d: %,d records in %.1f s%n", job.equals(query) ? job : job + "/" + query, b.id(),
                                b.records(), b.millis() / 1000.0);
                    }
                    case "S3" -> {
                        Map<String, Long> counts = new LinkedHashMap<>();
                        for (int i = 2; i < f.length; i++) {
                            String[] kv = f[i].split("=");
                            counts.put(kv[0], Long.parseLong(kv[1]));
                        }
                        s3Requests.put(Long.parseLong(f[1]), counts);
                    }
                    case "PEAK" -> {
                        heap = Long.parseLong(f[1]);
                        rss = Long.parseLong(f[2]);
                        liveHeap = Long.parseLong(f[3]);
                    }
                    default -> { }
                }
            }
        }
        int exit = p.waitFor();
        if (exit != 0 || end == 0) {
            throw new IllegalStateException(job + " run failed with exit code " + exit + "; see " + stderr);
        }
        Map<String, List<String>> queries = queries(pipeline);
        for (String q : queries.get(job)) {
            long consumed = batches.stream().filter(b -> b.query().equals(q)).mapToLong(Batch::records).sum();
            if (consumed != events) {
                throw new IllegalStateException(job + " query " + q + " consumed " + consumed + " records, expected " + events);
            }
        }
        List<String> unknown = batches.stream().map(Batch::query).filter(q -> !queries.get(job).contains(q)).distinct().toList();
        if (!unknown.isEmpty()) {
            throw new IllegalStateException(job + " run reported batches of unexpected queries " + unknown);
        }
        Map<Long, Map<String, Long>> trace = job.equals("tidemark") ? readTrace(stderr) : Map.of();
        if (job.equals("tidemark") && trace.isEmpty() && System.getenv("TIDEMARK_TRACE_BATCHES") != null) {
            System.out.println("  warning: TIDEMARK_TRACE_BATCHES is set but " + stderr + " holds no trace lines");
        }
        return new Run(round, job, batchSize, events, load, end - start, batches, heap, rss, liveHeap, cpu, trace, s3Requests);
    }

    /** The speed layer's {@code trace batch <id> <stage> <ms> ms} lines: batch id -> stage -> ms. */
    static Map<Long, Map<String, Long>> readTrace(Path stderr) throws IOException {
        Map<Long, Map<String, Long>> trace = new TreeMap<>();
        if (!Files.exists(stderr)) {
            return trace;
        }
        try (var lines = Files.lines(stderr, StandardCharsets.UTF_8)) {
            lines.forEach(l -> {
                Matcher m = TRACE.matcher(l);
                if (m.find()) {
                    trace.computeIfAbsent(Long.parseLong(m.group(1)), k -> new LinkedHashMap<>()).put(m.group(2), Long.parseLong(m.group(3)));
                }
            });
        }
        return trace;
    }

    // ------------------------------------------------------------------------------------------
    // Medians
    // ------------------------------------------------------------------------------------------

    static List<Summary> summarise(List<Run> runs, List<Long> batchSizes, List<String> jobs) {
        List<Summary> out = new ArrayList<>();
        for (long bs : batchSizes) {
            double plainEps = median(runs, bs, "plain", Run::eventsPerSecond);
            double diyEps = median(runs, bs, "diy", Run::eventsPerSecond);
            double plainHeap = median(runs, bs, "plain", r -> r.heapPeak() / 1048576.0);
            double plainLive = median(runs, bs, "plain", r -> r.liveHeapPeak() / 1048576.0);
            double plainCpu = median(runs, bs, "plain", Run::cpuSecondsPerMillion);
            for (String job : jobs) {
                List<Run> rs = runs.stream().filter(r -> r.batchSize() == bs && r.job().equals(job)).toList();
                if (rs.isEmpty()) {
                    continue;
                }
                double eps = median(runs, bs, job, Run::eventsPerSecond);
                double heap = median(runs, bs, job, r -> r.heapPeak() / 1048576.0);
                Map<String, Double> byQuery = new LinkedHashMap<>();
                for (String q : rs.get(0).queries()) {
                    byQuery.put(q, BenchResults.median(rs.stream().flatMap(r -> steady(r.of(q)).stream())
                            .mapToDouble(b -> b.millis() / 1000.0).toArray()));
                }
                out.add(new Summary(bs, job, rs, eps,
                        rs.stream().mapToDouble(Run::eventsPerSecond).min().orElse(Double.NaN),
                        rs.stream().mapToDouble(Run::eventsPerSecond).max().orElse(Double.NaN),
                        eps / plainEps, eps / diyEps, heap, heap / plainHeap,
                        median(runs, bs, job, r -> r.rssPeak() / 1048576.0),
                        BenchResults.median(rs.stream().flatMapToDouble(r -> Arrays.stream(r.steadyBatchSeconds())).toArray()),
                        byQuery, median(runs, bs, job, r -> r.liveHeapPeak() / 1048576.0),
                        median(runs, bs, job, r -> r.liveHeapPeak() / 1048576.0) / plainLive,
                        median(runs, bs, job, Run::cpuSecondsPerMillion), median(runs, bs, job, Run::cpuSecondsPerMillion) / plainCpu));
            }
        }
        return out;
    }

    /**
     * With both tidemark and published run: the stream with Kafka output against without, per batch size, as the ratio of
     * the median events/s and the median of each round's own ratio (the two runs of a round are side by side in time).
     */
    static String publishingRatio(List<Run> runs, List<Long> batchSizes) {
        StringBuilder sb = new StringBuilder();
        for (long bs : batchSizes) {
            List<Double> paired = new ArrayList<>();
            for (Run on : runs) {
                if (on.batchSize() == bs && on.job().equals("published")) {
                    runs.stream().filter(off -> off.batchSize() == bs && off.round() == on.round() && off.job().equals("tidemark")).findFirst()
                            .ifPresent(off -> paired.add(on.eventsPerSecond() / off.eventsPerSecond()));
                }
            }
            if (paired.isEmpty()) {
                continue;
            }
            double on = median(runs, bs, "published", Run::eventsPerSecond);
            double off = median(runs, bs, "tidemark", Run::eventsPerSecond);
            sb.append(String.format("%npublishing on vs off, batch %,d: median %,.0f vs %,.0f events/s = %.3fx; per round %s, median %.3fx%n", bs,
                    on, off, on / off, paired.stream().map(r -> String.format("%.3f", r)).toList(),
                    BenchResults.median(paired.stream().mapToDouble(Double::doubleValue).toArray())));
        }
        return sb.toString();
    }

    /**
     * The repository's S3 server ({@code ops/s3-server}, installed first if need be) on a free loopback port, its objects
     * under {@code work}, for the s3 job; {@link #s3Properties} point that job's JVMs at it.
     */
    static LocalS3Server startS3(Path work) throws Exception {
        LocalS3Server s3 = LocalS3Server.installAndStart(Path.of("ops", "s3-server").toAbsolutePath(),
                0, "tidemark-bench", work.resolve("s3"));
        Map<String, String> props = new LinkedHashMap<>(s3.sparkSettings());
        props.put("tidemark.bench.s3-base", s3.uri("runs"));
        s3Properties = props;
        System.out.printf("S3 server at %s (ministack, %s) for the s3 job%n", s3.endpoint(), work.resolve("s3"));
        return s3;
    }

    /**
     * The speed layer on S3 against the same on local disk, per batch size: median events/s and CPU per million events of
     * each (paired per round too), and the S3 requests a steady batch costs (from the s3 runs' S3A counters: those after
     * the first batch up to the last steady one, per batch), and so a day of batches at the default trigger (10 s).
     */
    static String objectStorage(List<Run> runs, List<Long> batchSizes) {
        StringBuilder sb = new StringBuilder();
        for (long bs : batchSizes) {
            List<Run> onS3 = runs.stream().filter(r -> r.batchSize() == bs && r.job().equals("s3")).toList();
            if (onS3.isEmpty()) {
                continue;
            }
            List<Double> paired = new ArrayList<>();
            for (Run on : onS3) {
                runs.stream().filter(off -> off.batchSize() == bs && off.round() == on.round() && off.job().equals("tidemark")).findFirst()
                        .ifPresent(off -> paired.add(on.eventsPerSecond() / off.eventsPerSecond()));
            }
            double s3Eps = median(runs, bs, "s3", Run::eventsPerSecond);
            double localEps = median(runs, bs, "tidemark", Run::eventsPerSecond);
            double s3Cpu = median(runs, bs, "s3", Run::cpuSecondsPerMillion);
            double localCpu = median(runs, bs, "tidemark", Run::cpuSecondsPerMillion);
            sb.append(String.format("%non S3 (local S3 server) vs local disk, batch %,d: median %,.0f vs %,.0f events/s = %.3fx (per round %s); "
                    + "CPU s per million events %.1f vs %.1f = %.3fx%n", bs, s3Eps, localEps, s3Eps / localEps,
                    paired.stream().map(r -> String.format("%.3f", r)).toList(), s3Cpu, localCpu, s3Cpu / localCpu));
            Map<String, List<Double>> perBatch = new LinkedHashMap<>();
            for (Run r : onS3) {
                List<Long> ids = steady(r.of("s3")).stream().map(Batch::id).toList();
                Map<String, Long> first = r.s3Requests().get(r.of("s3").get(0).id());
                if (ids.isEmpty() || first == null || !r.s3Requests().containsKey(ids.get(ids.size() - 1))) {
                    continue;
                }
                Map<String, Long> last = r.s3Requests().get(ids.get(ids.size() - 1));
                last.forEach((kind, n) -> perBatch.computeIfAbsent(kind, k -> new ArrayList<>()).add((n - first.getOrDefault(kind, 0L)) / (double) ids.size()));
            }
            if (perBatch.isEmpty()) {
                sb.append("  (no steady batch to count S3 requests over: give more events or a smaller batch size)\n");
                continue;
            }
            double total = 0;
            StringBuilder kinds = new StringBuilder();
            for (var e : perBatch.entrySet()) {
                double m = BenchResults.median(e.getValue().stream().mapToDouble(Double::doubleValue).toArray());
                total += m;
                kinds.append(String.format(" %s %.0f", e.getKey(), m));
            }
            sb.append(String.format("  S3 requests per steady batch (median over rounds):%s; total %.0f; a batch every 10 s all day: %,.0f requests%n",
                    kinds, total, total * 8640));
        }
        return sb.toString();
    }

    static double median(List<Run> runs, long batchSize, String job, ToDoubleFunction<Run> f) {
        return BenchResults.median(runs.stream().filter(r -> r.batchSize() == batchSize && r.job().equals(job)).mapToDouble(f).toArray());
    }

    /** Per batch size, the speed layer's stages -> their ms over the steady batches of every round, in the order first seen. */
    static Map<Long, Map<String, double[]>> stages(List<Run> runs, List<Long> batchSizes) {
        Map<Long, Map<String, double[]>> out = new LinkedHashMap<>();
        for (long bs : batchSizes) {
            Map<String, List<Double>> ms = new LinkedHashMap<>();
            for (Run r : runs) {
                if (r.batchSize() != bs || !r.job().equals("tidemark")) {
                    continue;
                }
                for (long id : r.steadyTraceBatches()) {
                    r.trace().getOrDefault(id, Map.of()).forEach((stage, v) -> ms.computeIfAbsent(stage, k -> new ArrayList<>()).add(v.doubleValue()));
                }
            }
            Map<String, double[]> m = new LinkedHashMap<>();
            ms.forEach((k, v) -> m.put(k, v.stream().mapToDouble(Double::doubleValue).toArray()));
            out.put(bs, m);
        }
        return out;
    }

    // ------------------------------------------------------------------------------------------
    // Tables
    // ------------------------------------------------------------------------------------------

    static String runsTable(List<Run> runs, long events) {
        StringBuilder sb = new StringBuilder();
        sb.append(String.format("%n%,d events; time = query start to end of the last query (JVM and Spark start excluded); "
                + "diy: figures per query as bronze / kpi%n%n", events));
        sb.append("| round | max records/batch | job | load avg before (1/5/15 min) | events/s | batches | mean batch s | first 3 batches s | last 3 batches s | heap peak MB | live heap peak MB | RSS peak MB | CPU s per M events |\n");
        sb.append("|---:|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
        for (Run r : runs) {
            sb.append(String.format("| %d | %,d | %s | %s | %,.0f | %s | %s | %s | %s | %,.0f | %,.0f | %,.0f | %.1f |%n", r.round(), r.batchSize(), r.job(), r.load(),
                    r.eventsPerSecond(), perQuery(r, List::size, "%.0f"), perQuery(r, SpeedLayerBenchmark::meanSeconds, "%.1f"),
                    perQuery(r, b -> meanSeconds(b.subList(0, Math.min(3, b.size()))), "%.1f"),
                    perQuery(r, b -> meanSeconds(b.subList(b.size() - Math.min(3, b.size()), b.size())), "%.1f"),
                    r.heapPeak() / 1048576.0, r.liveHeapPeak() / 1048576.0, r.rssPeak() / 1048576.0, r.cpuSecondsPerMillion()));
        }
        return sb.toString();
    }

    static String summaryTable(List<Summary> summaries, int rounds) {
        StringBuilder sb = new StringBuilder();
        sb.append(String.format("%nMedians over %d round(s); ratios = median(job) / median(plain or diy) at the same batch size; "
                + "steady batch = every batch but each query's first and, if partial, its last%n%n", rounds));
        sb.append("| max records/batch | job | runs | median events/s | min-max events/s | ratio vs plain | ratio vs diy | median heap peak MB | heap vs plain | median live heap peak MB | live heap vs plain | median RSS peak MB | median CPU s per M events | CPU vs plain | median steady batch s |\n");
        sb.append("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
        for (Summary s : summaries) {
            String steady = fmt("%.1f", s.steadyBatchS());
            if (s.steadyBatchSByQuery().size() > 1) {
                steady += " (" + s.steadyBatchSByQuery().entrySet().stream().map(e -> e.getKey() + " " + fmt("%.1f", e.getValue()))
                        .collect(Collectors.joining(", ")) + ")";
            }
            sb.append(String.format("| %,d | %s | %d | %s | %s-%s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |%n", s.batchSize(), s.job(),
                    s.runs().size(), fmt("%,.0f", s.eps()), fmt("%,.0f", s.epsMin()), fmt("%,.0f", s.epsMax()), fmt("%.2f", s.ratioVsPlain()),
                    fmt("%.2f", s.ratioVsDiy()), fmt("%,.0f", s.heapMb()), fmt("%.2f", s.heapRatioVsPlain()), fmt("%,.0f", s.liveHeapMb()),
                    fmt("%.2f", s.liveHeapRatioVsPlain()), fmt("%,.0f", s.rssMb()), fmt("%.1f", s.cpuSPerMillion()), fmt("%.2f", s.cpuRatioVsPlain()),
                    steady));
        }
        return sb.toString();
    }

    static String stageTable(Map<Long, Map<String, double[]>> stages, List<Run> runs) {
        if (runs.stream().noneMatch(r -> r.job().equals("tidemark"))) {
            return "";
        }
        StringBuilder sb = new StringBuilder();
        sb.append("\nSpeed layer, median ms per stage over the steady batches (all but batch 0 and the last) of every round "
                + "(TIDEMARK_TRACE_BATCHES; the appends and the KPI write run in parallel)\n\n");
        for (var e : stages.entrySet()) {
            long bs = e.getKey();
            int n = runs.stream().filter(r -> r.batchSize() == bs && r.job().equals("tidemark")).mapToInt(r -> r.steadyTraceBatches().size()).sum();
            sb.append(String.format("max records/batch %,d: %d steady batch(es)%n", bs, n));
            if (e.getValue().isEmpty()) {
                sb.append("(no trace lines for steady batches: fewer than 3 batches per run, or TIDEMARK_TRACE_BATCHES not set)\n\n");
                continue;
            }
            sb.append("| stage | median ms | min-max ms | samples |\n|---|---:|---:|---:|\n");
            e.getValue().forEach((stage, v) -> sb.append(String.format("| %s | %,.0f | %,.0f-%,.0f | %d |%n", stage, BenchResults.median(v),
                    Arrays.stream(v).min().orElse(0), Arrays.stream(v).max().orElse(0), v.length)));
            sb.append('\n');
        }
        return sb.toString();
    }

    /** A per-batch figure of a run: one value, or for a job of several queries the values per query joined by " / ". */
    static String perQuery(Run r, Function<List<Batch>, Number> f, String format) {
        return r.queries().stream().map(q -> fmt(format, f.apply(r.of(q)).doubleValue())).collect(Collectors.joining(" / "));
    }

    static double meanSeconds(List<Batch> batches) {
        return batches.stream().mapToLong(Batch::millis).average().orElse(0) / 1000.0;
    }

    static String fmt(String format, double v) {
        return Double.isFinite(v) ? String.format(format, v) : "";
    }

    // ------------------------------------------------------------------------------------------
    // JSON
    // ------------------------------------------------------------------------------------------

    static ObjectNode json(String[] args, Instant startedAt, long events, int rounds, List<Long> batchSizes, List<String> jobs, List<Run> runs,
            List<Summary> summaries, Map<Long, Map<String, double[]>> stages) {
        ObjectNode root = BenchResults.header("bench/run speed " + String.join(" ", args), startedAt);
        root.put("events", events);
        root.put("rounds", rounds);
        ArrayNode sizes = root.putArray("batch_sizes");
        batchSizes.forEach(sizes::add);
        ArrayNode js = root.putArray("jobs");
        jobs.forEach(js::add);
        ArrayNode loads = root.putArray("load_avg_before_each_run");
        for (Run r : runs) {
            ObjectNode l = loads.addObject();
            l.put("round", r.round());
            l.put("batch_size", r.batchSize());
            l.put("job", r.job());
            l.set("load_avg", BenchResults.loadAverageJson(r.load()));
        }
        ArrayNode res = root.putArray("results");
        for (Summary s : summaries) {
            ObjectNode o = res.addObject();
            o.put("job", s.job());
            o.put("batch_size", s.batchSize());
            o.put("runs", s.runs().size());
            BenchResults.putNumber(o, "events_per_s", BenchResults.round(s.eps(), 1));
            BenchResults.putNumber(o, "events_per_s_min", BenchResults.round(s.epsMin(), 1));
            BenchResults.putNumber(o, "events_per_s_max", BenchResults.round(s.epsMax(), 1));
            BenchResults.putNumber(o, "ratio_vs_plain", BenchResults.round(s.ratioVsPlain(), 4));
            BenchResults.putNumber(o, "ratio_vs_diy", BenchResults.round(s.ratioVsDiy(), 4));
            BenchResults.putNumber(o, "heap_peak_mb", BenchResults.round(s.heapMb(), 1));
            BenchResults.putNumber(o, "heap_ratio_vs_plain", BenchResults.round(s.heapRatioVsPlain(), 4));
            BenchResults.putNumber(o, "rss_peak_mb", BenchResults.round(s.rssMb(), 1));
            BenchResults.putNumber(o, "live_heap_peak_mb", BenchResults.round(s.liveHeapMb(), 1));
            BenchResults.putNumber(o, "live_heap_ratio_vs_plain", BenchResults.round(s.liveHeapRatioVsPlain(), 4));
            BenchResults.putNumber(o, "cpu_s_per_million_events", BenchResults.round(s.cpuSPerMillion(), 2));
            BenchResults.putNumber(o, "cpu_ratio_vs_plain", BenchResults.round(s.cpuRatioVsPlain(), 4));
            BenchResults.putNumber(o, "steady_batch_s", BenchResults.round(s.steadyBatchS(), 3));
            if (s.steadyBatchSByQuery().size() > 1) {
                ObjectNode q = o.putObject("steady_batch_s_by_query");
                s.steadyBatchSByQuery().forEach((k, v) -> BenchResults.putNumber(q, k, BenchResults.round(v, 3)));
            }
        }
        if (jobs.contains("tidemark")) {
            ObjectNode st = root.putObject("stages");
            ObjectNode counts = root.putObject("stages_steady_batches");
            for (var e : stages.entrySet()) {
                ObjectNode m = st.putObject(String.valueOf(e.getKey()));
                new TreeMap<>(e.getValue()).forEach((stage, v) -> BenchResults.putNumber(m, stage, BenchResults.median(v)));
                long bs = e.getKey();
                counts.put(String.valueOf(bs), runs.stream().filter(r -> r.batchSize() == bs && r.job().equals("tidemark"))
                        .mapToInt(r -> r.steadyTraceBatches().size()).sum());
            }
        }
        ArrayNode rs = root.putArray("runs");
        for (Run r : runs) {
            ObjectNode o = rs.addObject();
            o.put("round", r.round());
            o.put("job", r.job());
            o.put("batch_size", r.batchSize());
            o.set("load_avg_before", BenchResults.loadAverageJson(r.load()));
            o.put("millis", r.millis());
            o.put("events_per_s", BenchResults.round(r.eventsPerSecond(), 1));
            o.put("heap_peak_mb", BenchResults.round(r.heapPeak() / 1048576.0, 1));
            o.put("rss_peak_mb", BenchResults.round(r.rssPeak() / 1048576.0, 1));
            o.put("live_heap_peak_mb", BenchResults.round(r.liveHeapPeak() / 1048576.0, 1));
            o.put("cpu_s", BenchResults.round(r.cpuNanos() / 1e9, 2));
            ObjectNode bq = o.putObject("batches");
            for (String q : r.queries()) {
                ArrayNode a = bq.putArray(q);
                for (Batch b : r.of(q)) {
                    ObjectNode x = a.addObject();
                    x.put("id", b.id());
                    x.put("records", b.records());
                    x.put("millis", b.millis());
                }
            }
        }
        return root;
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
