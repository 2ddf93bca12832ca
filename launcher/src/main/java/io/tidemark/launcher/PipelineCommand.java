package io.tidemark.launcher;

import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;

import io.tidemark.pipeline.Measure;
import io.tidemark.pipeline.Pipeline;
import io.tidemark.pipeline.PipelineException;
import io.tidemark.pipeline.PipelineParser;
import io.tidemark.pipeline.PipelineTables;
import picocli.CommandLine.Command;
import picocli.CommandLine.Parameters;

/**
 * {@code tidemark pipeline check|explain FILE}: a pipeline file read as the jobs will read it
 * ({@link PipelineParser}), without Spark or Kafka. A refused file exits 2 with its one line
 * ({@code file:line:column}, what is wrong, what to write instead).
 */
@Command(name = "pipeline", mixinStandardHelpOptions = true,
        description = {"Check or explain a pipeline file: the events and the KPI tables it declares in Spark SQL (docs/pipelines.md)."},
        subcommands = {PipelineCommand.Check.class, PipelineCommand.Explain.class})
final class PipelineCommand extends TidemarkCommand {

    @Override
    public Integer call() {
        throw new UserError("say check or explain, and the pipeline file (see 'tidemark pipeline --help')");
    }

    abstract static class OnFile extends TidemarkCommand {
        @Parameters(paramLabel = "FILE", description = "The pipeline file, e.g. pipelines/network.sql.")
        Path file;

        Pipeline read() {
            if (!Files.isRegularFile(file)) {
                throw new UserError("no pipeline file " + file);
            }
            try {
                return PipelineParser.parse(file);
            } catch (PipelineException | UncheckedIOException e) {
                throw new UserError(e.getMessage(), e);
            }
        }
    }

    @Command(name = "check", mixinStandardHelpOptions = true,
            description = {"Parse and check the pipeline; print the event table and the KPI tables it will create, with their columns. "
                    + "Exit 0 when the file is valid, 2 when it is refused (one line: file:line:column, what is wrong, what to write instead)."})
    static final class Check extends OnFile {
        @Override
        public Integer call() {
            Pipeline p = read();
            say("%s: valid", file);
            Pipeline.EventTable e = p.events();
            say("events %s: topic '%s' (%s), event time %s, lateness %s", e.name(), e.topic(), e.format().equals("avro")
                    ? "avro, writer schemas from " + e.schemaRegistry() : e.format(), e.eventTime(), Formats.duration(e.lateness()));
            say("  columns: %s", String.join(", ", e.columns().stream()
                    .map(c -> c + (c.field().equals(c.name()) ? "" : " (reads field '" + c.field() + "')")).toList()));
            if (e.checks().isEmpty()) {
                say("  checks: none");
            }
            for (Pipeline.Check c : e.checks()) {
                say("  check %s: %s (a record that fails it goes to dead_letter as %s)", c.name(), c.condition(), c.reason());
            }
            say("KPI tables (drift threshold %s):", percent(p.driftThreshold()));
            for (Pipeline.KpiTable t : p.tables()) {
                say("  %s: windows of %s%s", t.name(), t.window(), groupedAndFiltered(t));
                say("    columns: %s", String.join(", ", t.columns().stream().map(PipelineTables::ddl).toList()));
            }
            for (Pipeline.View v : p.views()) {
                say("view %s: %s", v.name(), v.query().replaceAll("\\s+", " "));
            }
            return Tidemark.OK;
        }
    }

    @Command(name = "explain", mixinStandardHelpOptions = true,
            description = {"For each KPI table of the pipeline: how each measure is computed in a micro-batch, merged into the stored row, "
                    + "recomputed exactly by reconcile and compared (drift), and which records are late."})
    static final class Explain extends OnFile {
        @Override
        public Integer call() {
            Pipeline p = read();
            for (Pipeline.KpiTable t : p.tables()) {
                say("%s: windows of %s over %s%s", t.name(), t.window(), p.events().name(), groupedAndFiltered(t));
                for (Measure m : t.measures()) {
                    say("  %s = %s", m.name(), m.written());
                    say("    partial, per micro-batch and window: %s", String.join(", ", m.partial().stream().map(Measure.Computed::aliased).toList()));
                    say("    merge, stored row s with the batch's b: %s", String.join(", ", m.merge().stream().map(Measure.Computed::aliased).toList()));
                    if (!m.value().equals(m.name())) {
                        say("    value read: %s", m.value());
                    }
                    say("    exact, by reconcile over raw_events: %s%s", m.exact(), m.exactWhileStreaming() ? " (the stream's value is exact too)"
                            : " (the stream's value is the sketch's estimate until then)");
                    say("    drift: |exact - stream| / |exact|, reported above %s", percent(p.driftThreshold()));
                }
                say("  late rule: a record is late for each of its windows (%s) that ended at or before the watermark in force for its "
                        + "batch (the newest event time seen, minus %s): it is not counted there but goes to late_events, naming %s and "
                        + "the window, and reconcile counts it%s", t.window(), Formats.duration(p.events().lateness()), t.name(),
                        t.window().tumbling() ? "" : "; the windows of it still open count it");
            }
            return Tidemark.OK;
        }
    }

    /** " by merchant_id, country, rows where status <> 'x'": what a table's rows are grouped by and which records it reads. */
    private static String groupedAndFiltered(Pipeline.KpiTable t) {
        return (t.dimensions().isEmpty() ? "" : " by " + String.join(", ", t.dimensions().stream().map(Pipeline.Column::name).toList()))
                + (t.where() == null ? "" : ", rows where " + t.where());
    }

    private static String percent(double fraction) {
        return String.format(Locale.ROOT, "%.2f %%", fraction * 100).replace(".00 %", " %");
    }
}
