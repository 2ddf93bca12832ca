package io.tidemark.stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import org.apache.hadoop.conf.Configuration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The one reader of Spark's checkpoint files, on hand-written files: no Spark, no Kafka. */
class StreamCheckpointTest {

    @Test
    void findsTheLastCommittedBatchItsOffsetsAndTheBatchPendingReplay(@TempDir Path dir) throws Exception {
        Path cp = dir.resolve("checkpoint");
        Configuration hadoop = new Configuration();
        assertThat(StreamCheckpoint.read(cp.toString())).isEmpty();
        assertThat(StreamCheckpoint.pendingBatch(cp.toString(), hadoop)).isEqualTo(-1);
        Files.createDirectories(cp.resolve("offsets"));
        Files.createDirectories(cp.resolve("commits"));
        assertThat(StreamCheckpoint.read(cp.toString())).get().extracting(StreamCheckpoint.Committed::batchId).isEqualTo(-1L);
        for (int i = 0; i <= 2; i++) {
            Files.writeString(cp.resolve("offsets/" + i), "v1\n{\"batchWatermarkMs\":0}\n{\"network-events\":{\"1\":" + (i * 10) + ",\"0\":" + (i * 7) + "}}");
        }
        Files.writeString(cp.resolve("commits/0"), "v1\n{}");
        Files.writeString(cp.resolve("commits/1"), "v1\n{}");
        Files.writeString(cp.resolve("commits/.1.crc"), "x");
        StreamCheckpoint.Committed c = StreamCheckpoint.read(cp.toString()).orElseThrow();
        assertThat(c.batchId()).isEqualTo(1);
        assertThat(c.batchInFlight()).isTrue();
        assertThat(c.topic("network-events")).containsExactly(Map.entry(0, 7L), Map.entry(1, 10L));
        assertThat(c.total()).isEqualTo(17);
        assertThat(StreamCheckpoint.read("file://" + cp).orElseThrow().batchId()).isEqualTo(1);
        assertThat(StreamCheckpoint.pendingBatch(cp.toString(), hadoop)).isEqualTo(2);
        Files.writeString(cp.resolve("commits/2"), "v1\n{}");
        assertThat(StreamCheckpoint.pendingBatch(cp.toString(), hadoop)).isEqualTo(-1);
        assertThatThrownBy(() -> StreamCheckpoint.parseOffsets(List.of("v9x", "{}"), "f")).hasMessageContaining("version line");
        assertThatThrownBy(() -> StreamCheckpoint.parseOffsets(List.of("v1", "{}", "garbage"), "f")).hasMessageContaining("not a Kafka source offset");
    }

    @Test
    void aBatchRangeIsThePreviousEndOrTheInitialOffsetsUpToItsOwnEnd(@TempDir Path dir) throws Exception {
        Files.createDirectories(dir.resolve("offsets"));
        Files.createDirectories(dir.resolve("sources/0"));
        Files.writeString(dir.resolve("offsets/0"), "v1\n{\"batchWatermarkMs\":0,\"batchTimestampMs\":1,\"conf\":{}}\n{\"t\":{\"1\":12,\"0\":10},\"other\":{\"0\":1}}");
        Files.writeString(dir.resolve("sources/0/0"), "\u0000v1\n{\"t\":{\"0\":2,\"1\":0}}");
        Configuration hadoop = new Configuration();
        String cp = dir.toString();
        assertThat(StreamCheckpoint.endOffsets(cp, hadoop, "t", 0)).isEqualTo(Map.of(0, 10L, 1, 12L));
        assertThat(StreamCheckpoint.startOffsets(cp, hadoop, "t", 0)).containsEntry(0, 2L).containsEntry(1, 0L).hasSize(2);
        assertThat(StreamCheckpoint.startOffsets(cp, hadoop, "t", 1)).containsEntry(0, 10L).containsEntry(1, 12L);
        assertThat(StreamCheckpoint.endOffsets(cp, hadoop, "t", 1)).isNull();
    }
}
