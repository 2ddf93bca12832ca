package io.tidemark.output;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import io.tidemark.pipeline.Pipeline.KafkaOutput.Mode;

/**
 * What a KPI table's committed changes publish: the decision, pure, from the rows Delta's change
 * data feed gives for a range of versions ({@link KpiPublisher} reads them).
 *
 * <p>A commit of a KPI table replaces rows whole: the stream rewrites its open windows every batch
 * (a delete and an insert of each, changed or not), reconcile replaces a day. So per commit and key
 * the change is the row after it (an insert or update's post-image) against the row before it (a
 * delete or a pre-image): published when they differ, as a deletion when no row is left. Mode
 * {@code final} publishes only rows that are final, and the deletion only of a row that was.
 */
public final class KpiChanges {
    private KpiChanges() {
    }

    /**
     * One row of the change data feed, projected.
     *
     * @param version the Delta commit
     * @param type    Delta's {@code _change_type}: insert, delete, update_preimage, update_postimage
     * @param key     the record key (table, window, dimensions) as published
     * @param content the row as published, without its version
     * @param isFinal the row's is_final
     * @param wire    the key and the value (with this version) as an Avro output writes them; null for JSON, where
     *                {@code key} and {@code content} are what is written
     */
    public record Change(long version, String type, String key, String content, boolean isFinal, Wire wire) {
        public Change(long version, String type, String key, String content, boolean isFinal) {
            this(version, type, key, content, isFinal, null);
        }

        boolean after() {
            return type.equals("insert") || type.equals("update_postimage");
        }
    }

    /** A record's key and value in an encoding of their own (Avro's wire format); the decisions are made on the JSON. */
    public record Wire(byte[] key, byte[] value) {
    }

    /**
     * A record for the output topic.
     *
     * @param value the row with its version; null for a row that no longer exists (a tombstone, the version in a header)
     * @param wire  the key and value as written when the output is not JSON (the value null for a tombstone), else null
     */
    public record Publication(String key, String value, long version, Wire wire) {
        public Publication(String key, String value, long version) {
            this(key, value, version, null);
        }
    }

    /** The records {@code changes} publish, in version order (and by key within a version). */
    public static List<Publication> publications(List<Change> changes, Mode mode) {
        TreeMap<Long, TreeMap<String, Change[]>> byVersion = new TreeMap<>();
        for (Change c : changes) {
            Change[] beforeAfter = byVersion.computeIfAbsent(c.version(), v -> new TreeMap<>()).computeIfAbsent(c.key(), k -> new Change[2]);
            int slot = c.after() ? 1 : 0;
            if (beforeAfter[slot] != null) {
                throw new IllegalStateException("two " + (c.after() ? "new" : "old") + " rows for " + c.key() + " in version " + c.version());
            }
            beforeAfter[slot] = c;
        }
        List<Publication> out = new ArrayList<>();
        for (Map.Entry<Long, TreeMap<String, Change[]>> v : byVersion.entrySet()) {
            long version = v.getKey();
            for (Map.Entry<String, Change[]> k : v.getValue().entrySet()) {
                Change before = k.getValue()[0];
                Change after = k.getValue()[1];
                if (after != null) {
                    boolean changed = before == null || !before.content().equals(after.content());
                    if (changed && (mode == Mode.UPDATES || after.isFinal())) {
                        out.add(new Publication(k.getKey(), withVersion(after.content(), version), version, after.wire()));
                    }
                } else if (mode == Mode.UPDATES || before.isFinal()) {
                    out.add(new Publication(k.getKey(), null, version, before.wire() == null ? null : new Wire(before.wire().key(), null)));
                }
            }
        }
        return out;
    }

    /** The row's JSON object with {@code "version": version} as its last field. */
    static String withVersion(String content, long version) {
        if (!content.endsWith("}")) {
            throw new IllegalArgumentException("not a JSON object: " + content);
        }
        return content.substring(0, content.length() - 1) + (content.equals("{}") ? "" : ",") + "\"version\":" + version + "}";
    }
}
