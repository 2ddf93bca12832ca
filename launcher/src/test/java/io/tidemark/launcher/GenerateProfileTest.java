package io.tidemark.launcher;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Instant;

import org.junit.jupiter.api.Test;

import io.tidemark.generate.EventFormat;
import io.tidemark.generate.TrafficProfile;
import io.tidemark.generate.TrafficSpec;
import io.tidemark.lakehouse.TidemarkConfig;
import picocli.CommandLine;

/** {@code tidemark generate --profile}: which events, and the topic they go to. No broker: the spec only. */
class GenerateProfileTest {

    private static final Instant NOW = Instant.parse("2026-05-03T12:00:00Z");
    private static final TidemarkConfig CONFIG = TidemarkConfig.builder().set(TidemarkConfig.Key.TOPIC, "my-network").build();

    private static GenerateCommand parse(String... args) {
        GenerateCommand g = new GenerateCommand();
        new CommandLine(g).parseArgs(args);
        return g;
    }

    @Test
    void paymentsGoToThePaymentsTopicWithTheirOwnPopulation() {
        GenerateCommand g = parse("--profile", "payments", "--backlog-hours", "1", "--count", "1000", "--merchants", "50", "--users", "500");
        assertThat(g.topicName(CONFIG)).as("the topic setting is the network stream's").isEqualTo("payments");
        TrafficSpec s = g.spec(g.topicName(CONFIG), NOW);
        assertThat(s.profile()).isEqualTo(TrafficProfile.PAYMENTS);
        assertThat(s.topic()).isEqualTo("payments");
        assertThat(s.merchants()).isEqualTo(50);
        assertThat(s.users()).isEqualTo(500);
        assertThat(GenerateCommand.describe(s)).isEqualTo("1,000 messages, unpaced, backlog of event time from 2026-05-03 11:00:00Z"
                + " spanning 1 h, payments from 50 merchants and 500 users, late 0.01, invalid 0.005, seed 42");

        GenerateCommand named = parse("--profile", "PAYMENTS", "--topic", "cards");
        assertThat(named.topicName(CONFIG)).isEqualTo("cards");
        assertThat(named.spec(named.topicName(CONFIG), NOW).profile()).isEqualTo(TrafficProfile.PAYMENTS);
    }

    @Test
    void avroRegistersItsWriterSchemasFirstOrSaysWhyNot(@org.junit.jupiter.api.io.TempDir java.nio.file.Path dir) throws Exception {
        java.io.StringWriter printed = new java.io.StringWriter();
        GenerateCommand g = new GenerateCommand();
        new CommandLine(g).setOut(new java.io.PrintWriter(printed)).parseArgs("--profile", "payments", "--format", "avro",
                "--schema-registry", dir.toString(), "--backlog-hours", "1", "--count", "1000");
        TrafficSpec json = g.spec(g.topicName(CONFIG), NOW);
        assertThat(json.format()).as("until its schemas are registered").isEqualTo(EventFormat.JSON);
        TrafficSpec avro = g.withRegisteredSchemas(json);
        assertThat(avro.format()).isEqualTo(EventFormat.AVRO);
        assertThat(avro.schemaIds()).hasSize(23).containsEntry("v1", 1).containsEntry("v2", 2).containsEntry("mismatch-ts", 23);
        assertThat(printed.toString()).isEqualTo("registered 23 writer schemas at " + dir
                + ": subject payments-value has ids 1 (v1) and 2 (v2, an optional field added)\n");
        assertThat(GenerateCommand.describe(avro)).isEqualTo("1,000 messages, unpaced, backlog of event time from 2026-05-03 11:00:00Z"
                + " spanning 1 h, payments from 2,000 merchants and 50,000 users, in Avro, late 0.01, invalid 0.005, seed 42");
        // A second run finds its schemas registered: the same ids, no new file.
        assertThat(g.withRegisteredSchemas(json).schemaIds()).isEqualTo(avro.schemaIds());
        try (var files = java.nio.file.Files.list(dir)) {
            assertThat(files.count()).isEqualTo(23);
        }

        GenerateCommand gone = parse("--profile", "payments", "--format", "avro", "--schema-registry", dir.resolve("no-such").toString());
        assertThatThrownBy(() -> gone.withRegisteredSchemas(json)).isInstanceOf(UserError.class)
                .hasMessage("the schema directory " + dir.resolve("no-such") + " does not exist: start the registry, or correct --schema-registry");
    }

    @Test
    void theNetworkStaysTheDefaultWithTheTopicSetting() {
        GenerateCommand g = parse("--backlog-hours", "1", "--count", "1000");
        assertThat(g.topicName(CONFIG)).isEqualTo("my-network");
        TrafficSpec s = g.spec(g.topicName(CONFIG), NOW);
        assertThat(s.profile()).isEqualTo(TrafficProfile.NETWORK);
        assertThat(GenerateCommand.describe(s)).isEqualTo("1,000 messages, unpaced, backlog of event time from 2026-05-03 11:00:00Z"
                + " spanning 1 h, 200 cells, 10,000 subscribers, late 0.01, invalid 0.005, seed 42");
        assertThat(parse("--profile", "network").topicName(CONFIG)).isEqualTo("my-network");
    }

    @Test
    void badProfilesAndPopulationsAreUserErrorsInFlagTerms() {
        GenerateCommand cards = parse("--profile", "cards");
        assertThatThrownBy(() -> cards.topicName(CONFIG)).isInstanceOf(UserError.class)
                .hasMessage("--profile must be network or payments; got 'cards'");
        assertThatThrownBy(() -> cards.spec("t", NOW)).isInstanceOf(UserError.class)
                .hasMessage("--profile must be network or payments; got 'cards'");
        GenerateCommand noUsers = parse("--profile", "payments", "--users", "0");
        assertThatThrownBy(() -> noUsers.spec("payments", NOW)).isInstanceOf(UserError.class)
                .hasMessage("--users must be between 1 and 100000000; got 0");
        GenerateCommand noMerchants = parse("--profile", "payments", "--merchants", "-1");
        assertThatThrownBy(() -> noMerchants.spec("payments", NOW)).isInstanceOf(UserError.class)
                .hasMessage("--merchants must be between 1 and 10000000; got -1");
    }

    @Test
    void theUsageTextDocumentsTheProfile() {
        String usage = new CommandLine(new GenerateCommand()).getUsageMessage();
        assertThat(usage).contains("--profile=NAME", "network", "payments", "pipelines/payments.sql", "--merchants=N", "--users=N",
                "With --profile payments");
    }
}
