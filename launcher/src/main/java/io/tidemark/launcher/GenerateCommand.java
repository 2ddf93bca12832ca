package io.tidemark.launcher;

import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import io.tidemark.generate.AvroTraffic;
import io.tidemark.generate.EventFormat;
import io.tidemark.generate.GenerationReport;
import io.tidemark.generate.IngestMode;
import io.tidemark.generate.KafkaTrafficProducer;
import io.tidemark.generate.Progress;
import io.tidemark.generate.TrafficProfile;
import io.tidemark.generate.TrafficSpec;
import io.tidemark.lakehouse.SchemaRegistry;
import io.tidemark.lakehouse.TidemarkConfig;

/** {@code tidemark generate}: realistic traffic, late and malformed records included, to the topic. */
@Command(name = "generate", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"Produce events to the topic: JSON records from cells and subscribers, some out of order, "
                + "some deliberately late, some invalid. Deterministic for a seed (byte for byte with --backlog-hours).",
                "With --profile payments: card payments (pipelines/payments.sql) from merchants and users instead, "
                + "to the topic 'payments' unless --topic is given.",
                "With --format avro: the same records in Avro (Confluent's wire format), their writer schemas registered at "
                + "--schema-registry first.",
                "With neither --count nor --duration it produces until Ctrl-C."})
final class GenerateCommand extends TidemarkCommand {

    static final double DEFAULT_RATE = 1000;

    @Option(names = "--profile", paramLabel = "NAME", defaultValue = "network",
            description = "Which events: network (cell sites and subscribers, pipelines/network.sql) or payments (card payments "
                    + "from merchants and users, pipelines/payments.sql; topic 'payments' unless --topic) (default: ${DEFAULT-VALUE}).")
    String profile;

    @Option(names = "--rate", paramLabel = "MSG_PER_S",
            description = "Messages per second; 0 = as fast as possible (default: 1000; unpaced with --backlog-hours).")
    Double rate;

    @Option(names = "--duration", paramLabel = "DURATION", converter = DurationConverter.class,
            description = "Stop after this much wall time, e.g. 60s, 5m.")
    Duration duration;

    @Option(names = "--count", paramLabel = "N", description = "Stop after N messages.")
    Long count;

    @Option(names = "--cells", paramLabel = "N", defaultValue = "" + TrafficSpec.DEFAULT_CELLS,
            description = "Cell sites (default: ${DEFAULT-VALUE}).")
    int cells;

    @Option(names = "--subscribers", paramLabel = "N", defaultValue = "" + TrafficSpec.DEFAULT_SUBSCRIBERS,
            description = "Subscribers, Zipf-active (default: ${DEFAULT-VALUE}).")
    int subscribers;

    @Option(names = "--merchants", paramLabel = "N", defaultValue = "" + TrafficSpec.DEFAULT_MERCHANTS,
            description = "With --profile payments: merchants, Zipf-active (default: ${DEFAULT-VALUE}).")
    int merchants;

    @Option(names = "--users", paramLabel = "N", defaultValue = "" + TrafficSpec.DEFAULT_USERS,
            description = "With --profile payments: card holders, Zipf-active (default: ${DEFAULT-VALUE}).")
    int users;

    @Option(names = "--out-of-order", paramLabel = "DURATION", converter = DurationConverter.class, defaultValue = "2m",
            description = "On-time events are up to this much older than the event clock (default: ${DEFAULT-VALUE}).")
    Duration outOfOrder;

    @Option(names = "--late-fraction", paramLabel = "F", defaultValue = "" + TrafficSpec.DEFAULT_LATE_FRACTION,
            description = "Share of messages that are deliberately late (default: ${DEFAULT-VALUE}).")
    double lateFraction;

    @Option(names = "--late-delay-min", paramLabel = "DURATION", converter = DurationConverter.class, defaultValue = "20m",
            description = "Least delay of a late event behind the event clock (default: ${DEFAULT-VALUE}).")
    Duration lateDelayMin;

    @Option(names = "--late-delay-max", paramLabel = "DURATION", converter = DurationConverter.class, defaultValue = "60m",
            description = "Greatest delay of a late event behind the event clock (default: ${DEFAULT-VALUE}).")
    Duration lateDelayMax;

    @Option(names = "--invalid-fraction", paramLabel = "F", defaultValue = "" + TrafficSpec.DEFAULT_INVALID_FRACTION,
            description = "Share of messages that are invalid, of every kind (default: ${DEFAULT-VALUE}).")
    double invalidFraction;

    @Option(names = "--seed", paramLabel = "N", defaultValue = "" + TrafficSpec.DEFAULT_SEED,
            description = "Random seed (default: ${DEFAULT-VALUE}).")
    long seed;

    @Option(names = "--backlog-hours", paramLabel = "H",
            description = "Backlog: event times span the last H hours (event clock starts at now - H), sent unpaced unless --rate is given. "
                    + "Default count 1,000,000.")
    Double backlogHours;

    @Option(names = "--backlog-end", paramLabel = "INSTANT", converter = InstantConverter.class,
            description = "With --backlog-hours: the event clock ends at this instant instead of now (ISO-8601 with zone, e.g. "
                    + "2026-12-03T21:00:00Z), so the same seed gives the same events on any day.")
    Instant backlogEnd;

    @Option(names = "--topic", paramLabel = "NAME", description = "Topic (default: the topic setting).")
    String topic;

    @Option(names = "--format", paramLabel = "FORMAT", defaultValue = "json",
            description = "json, or avro: Confluent's wire format, for an event table with format 'avro'; its invalid messages are "
                    + "Avro's (no header, an unknown schema id, bytes that do not decode, a field of another type) (default: ${DEFAULT-VALUE}).")
    String format;

    @Option(names = "--schema-registry", paramLabel = "URL|DIR",
            description = "With --format avro: where the writer schemas are registered, the event table's schema_registry: a "
                    + "Confluent-compatible registry's URL, or a directory of <id>.avsc files.")
    String schemaRegistry;

    @Override
    public Integer call() throws Exception {
        TidemarkConfig config = config(topic == null ? Map.of() : Map.of(TidemarkConfig.Key.TOPIC.name, topic));
        TrafficSpec spec = spec(topicName(config), Instant.now());
        try (KafkaTopics kafka = new KafkaTopics(config.bootstrapServers(), config.kafkaOptions(), Duration.ofSeconds(10))) {
            if (kafka.partitions(spec.topic()).isEmpty()) {
                throw new UserError("topic '" + spec.topic() + "' does not exist at " + config.bootstrapServers()
                        + "; 'tidemark broker start" + (spec.topic().equals(config.topic()) ? "" : " --topic " + spec.topic())
                        + "' creates it on a local broker");
            }
        }
        if (schemaRegistry != null) {
            spec = withRegisteredSchemas(spec);
        }
        say("generating to %s at %s: %s", spec.topic(), config.bootstrapServers(), describe(spec));
        KafkaTrafficProducer producer = new KafkaTrafficProducer(config.bootstrapServers(), config.kafkaOptions());
        CountDownLatch reported = new CountDownLatch(1);
        Thread hook = new Thread(() -> {
            producer.requestStop();
            try {
                reported.await(30, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }, "tidemark-generate-stop");
        Runtime.getRuntime().addShutdownHook(hook);
        ProgressPrinter printer = new ProgressPrinter(out(), System.console() != null);
        GenerationReport report;
        try {
            report = producer.produce(spec, printer);
            printer.finish();
            out().print(report.summary());
            out().flush();
        } finally {
            reported.countDown();
        }
        try {
            Runtime.getRuntime().removeShutdownHook(hook);
        } catch (IllegalStateException shuttingDown) {
            // Ctrl-C: the hook is running and waits for the report printed above
        }
        return Tidemark.OK;
    }

    /**
     * The spec (checked: --format avro with --schema-registry) in Avro, with the ids of its writer schemas, registered first at --schema-registry: the record's
     * two versions under {@code <topic>-value}, each deliberately wrong one under a subject of its own.
     */
    TrafficSpec withRegisteredSchemas(TrafficSpec spec) {
        String location = schemaRegistry.startsWith("http://") || schemaRegistry.startsWith("https://") ? schemaRegistry
                : Path.of(schemaRegistry).toAbsolutePath().normalize().toString();
        SchemaRegistry registry = new SchemaRegistry(location, Duration.ofSeconds(30));
        registry.unreachable().ifPresent(why -> {
            throw new UserError(why + ": start the registry, or correct --schema-registry");
        });
        Map<String, Integer> ids;
        try {
            ids = AvroTraffic.register(spec.profile(), spec.topic(), registry::register);
        } catch (IOException e) {
            throw new UserError("could not register the writer schemas at " + location + ": " + e.getMessage(), e);
        }
        say("registered %d writer schemas at %s: subject %s has ids %d (v1) and %d (v2, an optional field added)", ids.size(), location,
                AvroTraffic.subject(spec.topic(), "v1"), ids.get("v1"), ids.get("v2"));
        return spec.toBuilder().avro(ids).build();
    }

    /**
     * The topic: --topic if given; else the topic setting for network events, and the payments
     * pipeline's topic ('payments') for payments, which the setting (the network stream's topic) is not.
     */
    String topicName(TidemarkConfig config) {
        if (topic != null) {
            return topic;
        }
        TrafficProfile p;
        try {
            p = TrafficProfile.of(profile);
        } catch (IllegalArgumentException e) {
            throw new UserError(inFlagTerms(e.getMessage()), e);
        }
        return p == TrafficProfile.NETWORK ? config.topic() : p.defaultTopic();
    }

    /** The traffic spec from the flags; bad combinations are user errors. */
    TrafficSpec spec(String topicName, Instant now) {
        try {
            return buildSpec(topicName, now);
        } catch (UserError e) {
            throw new UserError(inFlagTerms(e.getMessage()), e);
        }
    }

    private TrafficSpec buildSpec(String topicName, Instant now) {
        return UserError.check(() -> {
            TrafficSpec.Builder b = TrafficSpec.builder()
                    .profile(TrafficProfile.of(profile))
                    .topic(topicName)
                    .cells(cells)
                    .subscribers(subscribers)
                    .merchants(merchants)
                    .users(users)
                    .outOfOrderSpread(outOfOrder)
                    .lateFraction(lateFraction)
                    .lateDelay(lateDelayMin, lateDelayMax)
                    .invalidFraction(invalidFraction)
                    .seed(seed)
                    .duration(duration);
            EventFormat f = EventFormat.of(format);
            if (f == EventFormat.AVRO && schemaRegistry == null) {
                throw new IllegalArgumentException("--format avro needs --schema-registry URL|DIR: where the writer schemas are registered "
                        + "(the event table's schema_registry)");
            }
            if (f == EventFormat.JSON && schemaRegistry != null) {
                throw new IllegalArgumentException("--schema-registry is for --format avro; JSON records have no schema ids");
            }
            if (count != null && count < 1) {
                throw new IllegalArgumentException("--count must be at least 1, got " + count);
            }
            if (backlogEnd != null && backlogHours == null) {
                throw new IllegalArgumentException("--backlog-end needs --backlog-hours (it ends a backlog's event clock)");
            }
            if (backlogHours != null) {
                Instant end = backlogEnd != null ? backlogEnd : now;
                if (!(backlogHours > 0) || backlogHours > 24 * 365) {
                    throw new IllegalArgumentException("--backlog-hours must be > 0 and at most a year of hours, got " + backlogHours);
                }
                long n = count != null ? count : TrafficSpec.DEFAULT_COUNT;
                double spanSeconds = backlogHours * 3600;
                b.ingestMode(IngestMode.BACKLOG)
                        .count(n)
                        .ratePerSecond(rate != null ? rate : 0)
                        .eventClockStart(end.minusMillis((long) (spanSeconds * 1000)).truncatedTo(ChronoUnit.SECONDS))
                        .eventsPerSecondOfEventTime(n / spanSeconds);
            } else {
                b.ingestMode(IngestMode.LIVE)
                        .ratePerSecond(rate != null ? rate : DEFAULT_RATE)
                        .count(count);
            }
            return b.build();
        });
    }

    private static final Map<String, String> FLAG_OF = Map.ofEntries(
            Map.entry("lateFraction", "--late-fraction"), Map.entry("invalidFraction", "--invalid-fraction"),
            Map.entry("outOfOrderSpread", "--out-of-order"), Map.entry("lateDelayMin", "--late-delay-min"),
            Map.entry("lateDelayMax", "--late-delay-max"), Map.entry("ratePerSecond", "--rate"), Map.entry("cells", "--cells"),
            Map.entry("subscribers", "--subscribers"), Map.entry("count", "--count"), Map.entry("duration", "--duration"),
            Map.entry("merchants", "--merchants"), Map.entry("users", "--users"), Map.entry("profile", "--profile"),
            Map.entry("format", "--format"));

    /** TrafficSpec's messages name its fields; the user typed flags. */
    static String inFlagTerms(String message) {
        String m = message;
        for (Map.Entry<String, String> e : FLAG_OF.entrySet()) {
            boolean camel = !e.getKey().equals(e.getKey().toLowerCase(Locale.ROOT));
            if (camel) {
                m = m.replaceAll("\\b" + e.getKey() + "\\b", e.getValue());
            } else if (m.startsWith(e.getKey() + " ")) {
                m = e.getValue() + m.substring(e.getKey().length());
            }
        }
        return m;
    }

    static String describe(TrafficSpec s) {
        StringBuilder sb = new StringBuilder();
        sb.append(s.count() != null ? Formats.count(s.count()) + " messages" : "messages");
        if (s.duration() != null) {
            sb.append(s.count() != null ? " or " : " for ").append(Formats.duration(s.duration()));
        } else if (s.count() == null) {
            sb.append(" until Ctrl-C");
        }
        sb.append(s.isPaced() ? " at " + Formats.rate(s.ratePerSecond()) : ", unpaced");
        if (s.resolvedIngestMode() == IngestMode.BACKLOG) {
            sb.append(", backlog of event time from ").append(Formats.instant(s.eventClockStart()))
                    .append(" spanning ").append(Formats.duration(s.backlogSpan()));
        } else {
            sb.append(", live event time");
        }
        if (s.profile() == TrafficProfile.PAYMENTS) {
            sb.append(String.format(Locale.ROOT, ", payments from %,d merchants and %,d users", s.merchants(), s.users()));
        } else {
            sb.append(String.format(Locale.ROOT, ", %d cells, %,d subscribers", s.cells(), s.subscribers()));
        }
        if (s.format() == EventFormat.AVRO) {
            sb.append(", in Avro");
        }
        sb.append(String.format(Locale.ROOT, ", late %s, invalid %s, seed %d",
                s.lateFraction(), s.invalidFraction(), s.seed()));
        return sb.toString();
    }

    /** A progress line a second: rewritten in place on a terminal, one line each otherwise. */
    static final class ProgressPrinter implements Consumer<Progress> {
        private final PrintWriter out;
        private final boolean terminal;
        private int lastLength;

        ProgressPrinter(PrintWriter out, boolean terminal) {
            this.out = out;
            this.terminal = terminal;
        }

        @Override
        public void accept(Progress p) {
            String line = p.line();
            if (terminal) {
                out.print("\r" + line + " ".repeat(Math.max(0, lastLength - line.length())));
                lastLength = line.length();
            } else {
                out.println(line);
            }
            out.flush();
        }

        void finish() {
            if (terminal && lastLength > 0) {
                out.println();
                out.flush();
            }
        }
    }
}
