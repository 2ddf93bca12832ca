package io.tidemark.stream;

import static org.apache.spark.sql.functions.col;
import static org.apache.spark.sql.functions.count;
import static org.apache.spark.sql.functions.max;
import static org.apache.spark.sql.functions.min;

import java.io.BufferedReader;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.sql.Timestamp;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.catalyst.expressions.GenericRowWithSchema;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;

import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.ObjectMapper;

/**
 * Gaps in the Kafka offsets a micro-batch read, for {@code stream.fail-on-data-loss=false}: Spark
 * then skips lost offsets with a log warning only; this records each gap in {@code stream_gaps}.
 *
 * <p>What Spark meant to read is exact: the checkpoint's offset log holds the end offsets of every
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
    private static final ObjectMapper JSON = new ObjectMapper();

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

    /** Batch {@code batchId}'s start offsets of {@code topic}: the previous batch's end, or the initial offsets. */
    static Map<Integer, Long> startOffsets(Configuration hadoop, String checkpoint, String topic, long batchId) {
        if (batchId == 0) {
            return offsets(hadoop, new Path(checkpoint, "sources/0/0"), topic);
        }
        return offsets(hadoop, new Path(checkpoint, "offsets/" + (batchId - 1)), topic);
    }

    static Map<Integer, Long> endOffsets(Configuration hadoop, String checkpoint, String topic, long batchId) {
        return offsets(hadoop, new Path(checkpoint, "offsets/" + batchId), topic);
    }

    /**
     * Reads one of Spark's offset files: a version line, for the offset log a metadata line, then the
     * Kafka source's JSON {@code {"topic":{"0":offset}}} as the last line. Null when the file is not
     * there (Spark purged it): the batch is then not checked.
     */
    static Map<Integer, Long> offsets(Configuration hadoop, Path file, String topic) {
        List<String> lines = new ArrayList<>();
        try {
            FileSystem fs = file.getFileSystem(hadoop);
            try (BufferedReader r = new BufferedReader(new InputStreamReader(fs.open(file), StandardCharsets.UTF_8))) {
                r.lines().forEach(lines::add);
            }
        } catch (FileNotFoundException e) {
            return null;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read the stream checkpoint's offsets " + file, e);
        }
        String last = null;
        for (String l : lines) {
            String t = l.replace("\u0000", "").trim();
            if (t.startsWith("{")) {
                last = t;
            }
        }
        if (last == null) {
            throw new IllegalStateException(file + " holds no Kafka offsets JSON line; cannot check the batch for lost offsets");
        }
        try {
            Map<String, Map<String, Long>> raw = JSON.readValue(last, new TypeReference<Map<String, Map<String, Long>>>() { });
            Map<Integer, Long> out = new TreeMap<>();
            raw.getOrDefault(topic, Map.of()).forEach((p, o) -> out.put(Integer.parseInt(p), o));
            return out;
        } catch (IOException e) {
            throw new IllegalStateException(file + ": the last line is not a Kafka source offsets JSON: " + last, e);
        }
    }

    static StructType schema() {
        return new StructType()
                .add("batch_id", DataTypes.LongType, false)
                .add("topic", DataTypes.StringType, false)
                .add("partition", DataTypes.IntegerType, false)
                .add("expected_offset", DataTypes.LongType, false)
                .add("resumed_offset", DataTypes.LongType, true)
                .add("lost_records", DataTypes.LongType, true)
                .add("kind", DataTypes.StringType, false)
                .add("detected_at", DataTypes.TimestampType, false);
    }

    static List<Row> rows(long batchId, List<Gap> gaps) {
        Timestamp now = new Timestamp(System.currentTimeMillis());
        List<Row> rows = new ArrayList<>();
        for (Gap g : gaps) {
            rows.add(new GenericRowWithSchema(new Object[] {batchId, g.topic(), g.partition(), g.expectedOffset(), g.resumedOffset(),
                    g.lostRecords(), g.kind(), now}, schema()));
        }
        return rows;
    }
}
