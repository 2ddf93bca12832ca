package io.tidemark.lakehouse;

/**
 * One Kafka partition's event clock, as the stream keeps it across batches and records it in
 * {@code stream_progress.partition_clocks}: the partition's newest valid event time over this and
 * every earlier batch, and the Spark batch time of the last batch that gave it a valid record (from
 * which {@code watermark.idle-timeout} is measured).
 */
public record PartitionClock(long maxEventMs, long lastRecordBatchTimeMs) {
}
