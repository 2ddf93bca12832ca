package io.tidemark.lakehouse;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.util.Arrays;
import java.util.Iterator;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;

import io.delta.storage.HadoopFileSystemLogStore;

/**
 * Delta's log on S3 for several writing JVMs: each commit file {@code N.json} is written with one
 * conditional PUT ({@code If-None-Match: *}), so of two writers that race for version N exactly one
 * creates it and the other is told the version exists, which is what Delta's optimistic concurrency
 * needs to read the winner's commit and retry at N+1.
 *
 * <p>Delta's own default for {@code s3a://} ({@code S3SingleDriverLogStore}) checks for the file
 * and then PUTs it, mutually excluded inside one JVM only: Tidemark's stream and reconcile are two
 * JVMs committing to the same tables, and there the second PUT silently replaces the first commit.
 * Delta's {@code S3DynamoDBLogStore} needs DynamoDB; S3 and the compatible stores have honoured
 * conditional PUTs since 2024, which is all this store needs (docs/object-storage.md).
 *
 * <p>The PUT goes through Hadoop S3A's create builder ({@link ObjectStorage#createIfAbsent}); S3A
 * reports a refused condition (HTTP 412) as an {@code IOException}. A refused or failed write is then judged by reading the object back: the
 * bytes this writer sent mean its own earlier attempt landed (a PUT the SDK retried after a lost
 * response), other bytes mean another writer holds the version ({@link
 * java.nio.file.FileAlreadyExistsException}, Delta retries), no object means the write failed (the
 * error is rethrown) unless the store refused it as existing. A commit carries its writer's transaction id and time, so two writers never
 * send the same bytes. Reads and listings are Hadoop's, as in Delta's other stores: S3 lists and
 * reads after a write consistently.
 */
public final class ConditionalPutLogStore extends HadoopFileSystemLogStore {
    public ConditionalPutLogStore(Configuration hadoop) {
        super(hadoop);
    }

    @Override
    public void write(Path path, Iterator<String> actions, Boolean overwrite, Configuration hadoop) throws IOException {
        byte[] content = content(actions);
        FileSystem fs = path.getFileSystem(hadoop);
        if (overwrite) {
            // Not a commit (Delta overwrites only files it alone owns, e.g. a checkpoint's): one PUT, atomic on S3.
            try (FSDataOutputStream out = fs.create(path, true)) {
                out.write(content);
            }
            return;
        }
        try {
            ObjectStorage.createIfAbsent(fs, path, content);
        } catch (IOException | RuntimeException e) {
            byte[] there = readBack(fs, path);
            if (there == null && !ObjectStorage.refusedAsExisting(e)) {
                throw e;
            }
            if (there == null || !Arrays.equals(there, content)) {
                FileAlreadyExistsException taken = new FileAlreadyExistsException(path.toString());
                taken.initCause(e);
                throw taken;
            }
            // Our own bytes: an earlier attempt of this PUT landed and its answer was lost.
        }
    }

    /** S3 shows a whole object or none: a reader never sees a commit half written. */
    @Override
    public Boolean isPartialWriteVisible(Path path, Configuration hadoop) {
        return false;
    }

    /** Delta's commit file format: one action per line, each line ended. */
    static byte[] content(Iterator<String> actions) {
        StringBuilder s = new StringBuilder();
        actions.forEachRemaining(a -> s.append(a).append('\n'));
        return s.toString().getBytes(StandardCharsets.UTF_8);
    }

    /** The object's bytes, or null when there is none. */
    private static byte[] readBack(FileSystem fs, Path path) throws IOException {
        try (InputStream in = fs.open(path)) {
            return in.readAllBytes();
        } catch (FileNotFoundException e) {
            return null;
        }
    }
}
