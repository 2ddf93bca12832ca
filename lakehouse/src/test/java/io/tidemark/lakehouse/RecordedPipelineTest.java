package io.tidemark.lakehouse;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

import org.apache.hadoop.conf.Configuration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import io.tidemark.pipeline.Pipeline;
import io.tidemark.pipeline.PipelineParser;

/** The pipeline a lakehouse's stream runs, recorded in the lakehouse, is what a command given none runs. */
class RecordedPipelineTest {

    @TempDir
    Path dir;

    private TidemarkConfig.Builder at(Path lakehouse) {
        return TidemarkConfig.builder().set(TidemarkConfig.Key.LAKEHOUSE, lakehouse.toString());
    }

    @Test
    void aCommandGivenNoPipelineRunsTheOneTheLakehouseRecords() throws Exception {
        Path lakehouse = dir.resolve("lakehouse");
        assertThat(at(lakehouse).buildForLakehouse().pipelineFile()).as("nothing recorded: the shipped default").isEmpty();

        TidemarkConfig payments = at(lakehouse).set(TidemarkConfig.Key.PIPELINE, "payments").build();
        RecordedPipeline.record(new Configuration(), payments);
        Path recorded = lakehouse.resolve("_tidemark/pipeline.sql");
        String shippedText = PipelineParser.shipped("payments").source();
        assertThat(Files.readString(recorded)).isEqualTo(shippedText);

        TidemarkConfig resolved = at(lakehouse).buildForLakehouse();
        Pipeline p = resolved.pipelineFile().orElseThrow();
        assertThat(p.file()).isEqualTo(recorded.toString());
        assertThat(p.tables()).extracting(Pipeline.KpiTable::name).containsExactly("merchant_1m", "country_1h");
        assertThat(resolved.topic()).isEqualTo("payments");
        assertThat(Lakehouse.of(resolved).kpiTables()).extracting(Lakehouse.Table::tableName).containsExactly("merchant_1m", "country_1h");
        // a settings chain keeps it (toBuilder re-reads the recorded file)
        assertThat(resolved.toBuilder().set(TidemarkConfig.Key.MAX_OFFSETS_PER_TRIGGER, "10").build().pipelineFile().orElseThrow().tables())
                .hasSize(2);
        // the spark-submit jobs' command line resolves it too
        JobMain.Arguments job = JobMain.parse(JobMain.Spec.of("reconcile", "Usage\n"), new String[] {"lakehouse=" + lakehouse}, Map.of());
        assertThat(job.config().pipelineFile().orElseThrow().file()).isEqualTo(recorded.toString());

        // a pipeline named explicitly wins (the query-definition check then compares it with the tables)
        assertThat(at(lakehouse).set(TidemarkConfig.Key.PIPELINE, "network").buildForLakehouse().pipelineFile()).isEmpty();

        // the stream restarted with the recorded pipeline records nothing new
        long modified = Files.getLastModifiedTime(recorded).toMillis();
        Thread.sleep(20);
        RecordedPipeline.record(new Configuration(), resolved);
        assertThat(Files.getLastModifiedTime(recorded).toMillis()).isEqualTo(modified);

        // a pipeline with a table added replaces the record
        Path grown = Files.writeString(dir.resolve("grown.sql"), shippedText + "\nCREATE STREAMING TABLE country_1d AS\n"
                + "SELECT window(ts, '1 day') AS w, country, count(*) AS txns FROM STREAM payments GROUP BY window(ts, '1 day'), country;\n");
        RecordedPipeline.record(new Configuration(), at(lakehouse).set(TidemarkConfig.Key.PIPELINE, grown.toString()).build());
        assertThat(Files.readString(recorded)).isEqualTo(Files.readString(grown));
        assertThat(at(lakehouse).buildForLakehouse().pipelineFile().orElseThrow().tables()).extracting(Pipeline.KpiTable::name)
                .containsExactly("merchant_1m", "country_1h", "country_1d");
    }

    @Test
    void theShippedDefaultIsNotRecorded() {
        Path lakehouse = dir.resolve("network-lakehouse");
        RecordedPipeline.record(new Configuration(), at(lakehouse).build());
        assertThat(lakehouse.resolve("_tidemark/pipeline.sql")).doesNotExist();
        assertThat(RecordedPipeline.text(lakehouse.toString())).isEmpty();
    }
}
