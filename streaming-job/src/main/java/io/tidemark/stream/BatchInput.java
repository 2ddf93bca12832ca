package io.tidemark.stream;

import java.util.Map;

import org.apache.hadoop.conf.Configuration;

import io.tidemark.lakehouse.TidemarkConfig;

/**
 * What a micro-batch is given from outside the writer, read at the edge of the batch: its id, the
 * streaming query it belongs to, Spark's timestamp of the batch, and the Kafka offsets Spark planned
 * it over. {@link MicroBatchWriter#call} reads them from Spark and the checkpoint; a test crafts
 * them ({@code BatchDriver} in the tests) and pipes batches through the whole writer without a
 * broker or a streaming query.
 *
 * @param startOffsets the planned start offset per partition of the topic; null when not checked for
 *                     lost offsets (stream.fail-on-data-loss=true) or when the checkpoint no longer
 *                     holds the batch's files
 * @param endOffsets   the planned end offset per partition, null under the same conditions
 */
public record BatchInput(long batchId, String queryId, long batchTimeMs, Map<Integer, Long> startOffsets, Map<Integer, Long> endOffsets) {

    /** Batch {@code batchId} of query {@code queryId}, as the checkpoint of {@code config} records it. */
    static BatchInput fromCheckpoint(TidemarkConfig config, Configuration hadoop, String queryId, long batchId) {
        String checkpoint = config.checkpointUri();
        long batchTimeMs = StreamCheckpoint.batchTimestampMs(checkpoint, hadoop, batchId);
        if (config.failOnDataLoss()) {
            return new BatchInput(batchId, queryId, batchTimeMs, null, null);
        }
        return new BatchInput(batchId, queryId, batchTimeMs, StreamCheckpoint.startOffsets(checkpoint, hadoop, config.topic(), batchId),
                StreamCheckpoint.endOffsets(checkpoint, hadoop, config.topic(), batchId));
    }

    /** Whether the planned offsets are known, so the batch can be checked for offsets it did not read. */
    boolean plannedOffsetsKnown() {
        return startOffsets != null && endOffsets != null;
    }
}
