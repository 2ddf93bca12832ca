package io.tidemark.stream;

import static org.apache.spark.sql.functions.col;
import static org.apache.spark.sql.functions.count;
import static org.apache.spark.sql.functions.max;
import static org.apache.spark.sql.functions.min;

import java.sql.Timestamp;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;

import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;


import io.tidemark.lakehouse.Lakehouse;
import io.tidemark.lakehouse.Lakehouse.Table;

/**
 * Gaps in the Kafka offsets a micro-batch read, for {@code stream.fail-on-data-loss=false}: Spark
 * then skips lost offsets with a log warning only; this records each gap in {@code stream_gaps}.
 *
 * <p>What Spark meant to read is exact ({@link StreamCheckpoint}): the checkpoint's offset log holds the end offsets of every
 * batch ({@code offsets/<id>}), written before the batch runs, so batch N's range per partition is
 * {@code [offsets/N-1, offsets/N)} (batch 0 starts at the initial offsets in {@code sources/0/0}).
 * What it did read comes from the batch itself: min offset and count per partition of the cached,
 * classified batch (every record is in raw_events or dead_letter). Per partition:
 * <ul>
 *   <li>end &lt; start: the offsets went backwards, the topic was deleted and recreated (or truncated).
 *       Spark reads nothing of it in this batch and resumes at {@code end}; how many records were lost
 *       cannot be known ({@code lost_records} null). Kind {@code topic_recreated}.</li>
 *   <li>the first offset read is above start (or nothing read of a non-empty range): retention or
 *       deleteRecords removed records before the stream read them. Kind {@code offsets_out_of_range},
 *       {@code lost_records} = first offset read - start.</li>
 *   <li>a partition in start but not in end: kind {@code partition_deleted}, nothing known after it.</li>
 *   <li>a partition new since the previous batch that does not start at offset 0: kind
 *       {@code partition_added_late}, the records before its first offset are lost.</li>
 * </ul>
 * Offsets are contiguous because Tidemark's producer is idempotent and not transactional. A
 * transactional producer leaves offset holes (commit markers, aborted records): a range that starts
 * at a marker would show here as a one-record gap.
 */
final class KafkaGaps {
    static final String OUT_OF_RANGE = "offsets_out_of_range";
    static final String TOPIC_RECREATED = "topic_recreated";
    static final String PARTITION_DELETED = "partition_deleted";
    static final String PARTITION_ADDED_LATE = "partition_added_late";

    private KafkaGaps() {
    }

    /** One gap: offsets {@code [expected, resumed)} of a partition were never read. */
    record Gap(String topic, int partition, long expectedOffset, Long resumedOffset, Long lostRecords, String kind) {
        String describe() {
            return kind + " on " + topic + "-" + partition + ": expected offset " + expectedOffset + ", resumed at "
                    + (resumedOffset == null ? "(unknown)" : resumedOffset) + ", "
                    + (lostRecords == null ? "an unknown number of records" : lostRecords + " records") + " lost";
        }
    }

    /** Per partition of one batch: what Spark planned ([start, end)) against what the batch holds. */
    static List<Gap> find(String topic, Map<Integer, Long> start, Map<Integer, Long> end, Map<Integer, long[]> read) {
        List<Gap> gaps = new ArrayList<>();
        TreeSet<Integer> partitions = new TreeSet<>(start.keySet());
        partitions.addAll(end.keySet());
        for (int p : partitions) {
            Long from = start.get(p);
            Long until = end.get(p);
            long[] seen = read.get(p); // {min offset, count}
            if (until == null) {
                gaps.add(new Gap(topic, p, from, null, null, PARTITION_DELETED));
            } else if (from == null) {
                long first = seen != null ? seen[0] : until;
                if (first > 0) {
                    gaps.add(new Gap(topic, p, 0, first, first, PARTITION_ADDED_LATE));
                }
            } else if (until < from) {
                gaps.add(new Gap(topic, p, from, until, null, TOPIC_RECREATED));
            } else {
                long first = seen != null ? seen[0] : until;
                if (first > from) {
                    gaps.add(new Gap(topic, p, from, first, first - from, OUT_OF_RANGE));
                }
            }
        }
        return gaps;
    }

    /** Min offset and count per partition of a classified batch: one small aggregation of the cached batch. */
    static Map<Integer, long[]> read(Dataset<Row> classified) {
        Map<Integer, long[]> out = new HashMap<>();
        for (Row r : classified.groupBy(col("kafka_partition")).agg(min(col("kafka_offset")), count(col("kafka_offset"))).collectAsList()) {
            out.put(r.getInt(0), new long[] {r.getLong(1), r.getLong(2)});
        }
        return out;
    }

    static List<Row> rows(long batchId, List<Gap> gaps) {
        Timestamp now = new Timestamp(System.currentTimeMillis());
        List<Row> rows = new ArrayList<>();
        for (Gap g : gaps) {
            Map<String, Object> v = new HashMap<>();
            v.put("batch_id", batchId);
            v.put("topic", g.topic());
            v.put("partition", g.partition());
            v.put("expected_offset", g.expectedOffset());
            v.put("resumed_offset", g.resumedOffset());
            v.put("lost_records", g.lostRecords());
            v.put("kind", g.kind());
            v.put("detected_at", now);
            rows.add(Lakehouse.row(Table.STREAM_GAPS, v));
        }
        return rows;
    }
}
