package io.tidemark.lakehouse;

import java.io.IOException;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FSDataOutputStreamBuilder;
import org.apache.hadoop.fs.FileAlreadyExistsException;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.RuntimeConfig;

/**
 * What a lakehouse or a stream checkpoint on S3 needs from Delta and Spark, and the configurations
 * it refuses (docs/object-storage.md). S3 is reached through Hadoop's S3A ({@code s3a://}); its
 * endpoint, credentials and path style come from Hadoop's own {@code fs.s3a.*} settings
 * ({@code spark.hadoop.fs.s3a.*} in Spark's configuration) and the AWS credential chain.
 * <ul>
 * <li>Delta's log: {@link ConditionalPutLogStore} unless the configuration names another store safe
 *   for several writing JVMs (Delta's {@code S3DynamoDBLogStore}); a store that is not (Delta's
 *   default for S3, {@code S3SingleDriverLogStore}, or any other) is refused before anything starts,
 *   since the stream and reconcile commit to the same tables from two JVMs. A store the operator
 *   vouches for is named in {@code storage.trusted-log-stores}.</li>
 * <li>The stream's checkpoint: Spark's checkpoint manager for object stores, which writes each
 *   offset and commit file with one PUT instead of a rename S3 does not have
 *   ({@link #applyCheckpointManager}).</li>
 * <li>Creating a file that must not exist yet (the stream's lease, a Delta commit): one conditional
 *   PUT ({@link #createIfAbsent}).</li>
 * </ul>
 */
public final class ObjectStorage {
    /** The S3 schemes Delta maps to its S3 log store; Tidemark writes only through S3A. */
    private static final Set<String> S3_SCHEMES = Set.of("s3a", "s3", "s3n");
    /** Delta's log stores that are safe with several JVMs writing one table on S3. */
    static final Set<String> SAFE_S3_LOG_STORES = Set.of(ConditionalPutLogStore.class.getName(), "io.delta.storage.S3DynamoDBLogStore");
    /** Delta's setting that names one log store for every scheme. */
    static final String LOG_STORE_CLASS = "spark.delta.logStore.class";
    static final String CHECKPOINT_MANAGER_KEY = "spark.sql.streaming.checkpointFileManagerClass";
    static final String CHECKPOINT_MANAGER = "org.apache.spark.internal.io.cloud.AbortableStreamBasedCheckpointFileManager";
    private static final String S3A_FILE_SYSTEM = "org.apache.hadoop.fs.s3a.S3AFileSystem";

    private ObjectStorage() {
    }

    /** The URI's scheme in lower case; {@code file} for a plain path. */
    public static String scheme(String uri) {
        int colon = uri.indexOf("://");
        if (colon <= 0) {
            return "file";
        }
        return uri.substring(0, colon).toLowerCase(Locale.ROOT);
    }

    /** Whether the URI names an S3 bucket (any of Hadoop's S3 schemes). */
    public static boolean isS3(String uri) {
        return S3_SCHEMES.contains(scheme(uri));
    }

    /** S3A's option that makes a create a conditional PUT ({@code If-None-Match: *}). */
    static final String CONDITIONAL_CREATE = "fs.option.create.conditional.overwrite";
    /** S3A's switch for conditional creates (on by default); off, nothing here writes. */
    static final String CONDITIONAL_ENABLED = "fs.s3a.create.conditional.enabled";

    /**
     * Writes {@code content} to {@code file} on S3 with one conditional PUT: exactly one of several
     * racing writers creates it. A refused PUT (the file exists: HTTP 412) and any other failure are
     * an {@code IOException}; the caller tells them apart by looking at the file.
     */
    public static void createIfAbsent(FileSystem fs, Path file, byte[] content) throws IOException {
        if (!fs.getConf().getBoolean(CONDITIONAL_ENABLED, true)) {
            throw new IOException("cannot create " + file + " exclusively: " + CONDITIONAL_ENABLED
                    + " is false, and without conditional PUTs two writers can overwrite each other; remove that setting");
        }
        FSDataOutputStreamBuilder<?, ?> create = fs.createFile(file);
        create.overwrite(false);
        create.must(CONDITIONAL_CREATE, true);
        try (FSDataOutputStream out = (FSDataOutputStream) create.build()) {
            out.write(content);
        }
    }

    /** Whether a failed {@link #createIfAbsent} was refused because the file exists (HTTP 412), as S3A reports it. */
    public static boolean refusedAsExisting(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof FileAlreadyExistsException || t instanceof java.nio.file.FileAlreadyExistsException
                    || t.getClass().getName().equals("org.apache.hadoop.fs.s3a.RemoteFileChangedException")
                    || String.valueOf(t.getMessage()).contains("Status Code: 412")) {
                return true;
            }
        }
        return false;
    }

    /** Delta's setting that names the log store of one scheme. */
    static String logStoreKey(String scheme) {
        return "spark.delta.logStore." + scheme + ".impl";
    }

    /**
     * The Spark settings a session needs for S3, given the configuration the JVM started with and
     * where the lakehouse and checkpoint are: Tidemark's log store for {@code s3a://} tables unless
     * the configuration names one (any S3 table a session writes, also one read or written beside a
     * local lakehouse, gets a store safe for two writers).
     *
     * @throws RequestRefusedException a lakehouse on S3 with a Delta log store unsafe for two writers,
     *         or a lakehouse or checkpoint on an S3 scheme not served by S3A; the message names the setting
     */
    static Map<String, String> sparkSettings(String lakehouse, String checkpoint, Set<String> trusted, Map<String, String> given) {
        Map<String, String> out = new LinkedHashMap<>();
        if (checkpoint != null && isS3(checkpoint)) {
            requireS3A(scheme(checkpoint), "stream.checkpoint", checkpoint, given);
        }
        String scheme = isS3(lakehouse) ? scheme(lakehouse) : "s3a";
        if (isS3(lakehouse)) {
            requireS3A(scheme, "lakehouse", lakehouse, given);
            if (given.containsKey(LOG_STORE_CLASS)) {
                requireSafe(LOG_STORE_CLASS, given.get(LOG_STORE_CLASS), lakehouse, trusted);
            } else if (given.containsKey(logStoreKey(scheme))) {
                requireSafe(logStoreKey(scheme), given.get(logStoreKey(scheme)), lakehouse, trusted);
            }
        }
        if (!given.containsKey(LOG_STORE_CLASS) && !given.containsKey(logStoreKey(scheme))) {
            out.put(logStoreKey(scheme), ConditionalPutLogStore.class.getName());
        }
        return out;
    }

    /**
     * Sets, in the session, the checkpoint manager of a stream about to start on this checkpoint:
     * on S3 Spark's manager for object stores (each offset and commit file one PUT, not a rename S3
     * does not have), unless the configuration names another; elsewhere Spark's default again if
     * an earlier stream of the session had set that one.
     */
    public static void applyCheckpointManager(RuntimeConfig conf, String checkpoint) {
        String current = conf.getOption(CHECKPOINT_MANAGER_KEY).getOrElse(() -> null);
        if (isS3(checkpoint)) {
            if (current == null) {
                conf.set(CHECKPOINT_MANAGER_KEY, CHECKPOINT_MANAGER);
            }
        } else if (CHECKPOINT_MANAGER.equals(current)) {
            conf.unset(CHECKPOINT_MANAGER_KEY);
        }
    }

    private static void requireS3A(String scheme, String setting, String uri, Map<String, String> given) {
        if (!scheme.equals("s3a") && !S3A_FILE_SYSTEM.equals(given.get("spark.hadoop.fs." + scheme + ".impl"))) {
            throw new RequestRefusedException("'" + setting + "' is " + uri + ": Tidemark writes S3 through Hadoop's S3A, write s3a://"
                    + uri.substring(uri.indexOf("://") + 3) + " (or map the scheme to S3A: spark.hadoop.fs." + scheme + ".impl=" + S3A_FILE_SYSTEM + ")");
        }
    }

    private static void requireSafe(String key, String store, String lakehouse, Set<String> trusted) {
        if (!SAFE_S3_LOG_STORES.contains(store.trim()) && !trusted.contains(store.trim())) {
            throw new RequestRefusedException("the lakehouse " + lakehouse + " is on S3, where the stream and reconcile commit to the same Delta tables "
                    + "from two JVMs, and " + key + "=" + store + " is not safe for that (one of two racing commits can be lost without an "
                    + "error): remove the setting (Tidemark then uses " + ConditionalPutLogStore.class.getName()
                    + ", conditional PUTs) or set it to io.delta.storage.S3DynamoDBLogStore (a store you know to be safe: name it in storage.trusted-log-stores)");
        }
    }
}
