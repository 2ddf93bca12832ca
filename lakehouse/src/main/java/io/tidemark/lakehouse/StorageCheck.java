package io.tidemark.lakehouse;

import java.io.IOException;
import java.io.OutputStream;
import java.net.URI;
import java.nio.file.AccessDeniedException;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.NotDirectoryException;
import java.nio.file.Path;
import java.nio.file.ReadOnlyFileSystemException;
import java.util.Locale;
import java.util.UUID;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;

/**
 * Checks at start-up that a directory the job writes (the lakehouse, the checkpoint) can be written,
 * by creating it and a small probe file in it, so an unwritable or full path fails at once, naming
 * the path and the cause, instead of in the middle of the first batch.
 */
public final class StorageCheck {

    /** Why a path cannot be written; {@link #hint} says what to do about it. */
    public enum Cause {
        NO_SPACE("no space left on device", "free space on that file system (or move the path to a bigger one)"),
        READ_ONLY("the file system is read-only", "remount it read-write or point the setting at a writable path"),
        NOT_PERMITTED("write access denied", "grant write access (permissions, ACLs, chattr -i) or point the setting at a writable path"),
        NOT_A_DIRECTORY("a part of the path is a regular file, not a directory", "move that file away or point the setting at a directory path"),
        OTHER("cannot write", "check the path and the file system");

        public final String what;
        public final String hint;

        Cause(String what, String hint) {
            this.what = what;
            this.hint = hint;
        }

        /** The cause an I/O error reports, from its type or the operating system's words. */
        public static Cause of(Throwable e) {
            String m = String.valueOf(e.getMessage()).toLowerCase(Locale.ROOT);
            if (e instanceof FileSystemException f && f.getReason() != null) {
                m = m + " " + f.getReason().toLowerCase(Locale.ROOT);
            }
            if (m.contains("no space left on device") || m.contains("disk quota exceeded")) {
                return NO_SPACE;
            }
            if (e instanceof ReadOnlyFileSystemException || m.contains("read-only file system")) {
                return READ_ONLY;
            }
            if (e instanceof AccessDeniedException || m.contains("permission denied") || m.contains("operation not permitted")) {
                return NOT_PERMITTED;
            }
            if (e instanceof NotDirectoryException || m.contains("not a directory")) {
                return NOT_A_DIRECTORY;
            }
            return OTHER;
        }
    }

    /** A path the job must write cannot be written; the message is one line with the path, the cause and the fix. */
    public static final class StorageUnavailableException extends IllegalStateException {
        private static final long serialVersionUID = 1L;
        private final Cause reason;

        StorageUnavailableException(String message, Cause reason, Throwable cause) {
            super(message, cause);
            this.reason = reason;
        }

        public Cause reason() {
            return reason;
        }
    }

    private StorageCheck() {
    }

    /**
     * Creates {@code uri} if needed and writes and deletes a probe file in it.
     *
     * On S3 the probe is written with a conditional PUT, twice: a store that lets the second one
     * overwrite the first ignores {@code If-None-Match}, on which Delta's commits and the stream's
     * lease rely there, and is refused.
     *
     * @param setting the setting that names the path (lakehouse, stream.checkpoint), for the message
     * @param hadoop  the session's Hadoop configuration (an object store's endpoint and credentials)
     * @throws StorageUnavailableException the path cannot be written
     */
    public static void requireWritable(String uri, String setting, Configuration hadoop) {
        if (uri.contains("://") && !uri.startsWith("file:")) {
            requireWritableHadoop(uri, setting, hadoop);
            return;
        }
        Path dir = uri.startsWith("file:") ? Path.of(URI.create(uri)) : Path.of(uri).toAbsolutePath().normalize();
        for (Path p = dir; p != null; p = p.getParent()) {
            if (Files.exists(p)) {
                if (!Files.isDirectory(p)) {
                    throw unavailable(setting, dir, Cause.NOT_A_DIRECTORY, p + " is a regular file", null);
                }
                break;
            }
        }
        Path probe = dir.resolve(".tidemark-write-probe-" + UUID.randomUUID());
        try {
            Files.createDirectories(dir);
            Files.write(probe, new byte[] {1});
            Files.delete(probe);
        } catch (IOException e) {
            throw unavailable(setting, dir, Cause.of(e), e.getMessage(), e);
        }
    }

    private static void requireWritableHadoop(String uri, String setting, Configuration hadoop) {
        org.apache.hadoop.fs.Path dir = new org.apache.hadoop.fs.Path(uri);
        org.apache.hadoop.fs.Path probe = new org.apache.hadoop.fs.Path(dir, ".tidemark-write-probe-" + UUID.randomUUID());
        try {
            FileSystem fs = dir.getFileSystem(hadoop);
            if (ObjectStorage.isS3(uri)) {
                ObjectStorage.createIfAbsent(fs, probe, new byte[] {1});
                boolean overwritten;
                try {
                    ObjectStorage.createIfAbsent(fs, probe, new byte[] {2});
                    overwritten = true;
                } catch (IOException e) {
                    if (!ObjectStorage.refusedAsExisting(e)) {
                        throw e;
                    }
                    overwritten = false;
                }
                fs.delete(probe, false);
                if (overwritten) {
                    throw new StorageUnavailableException("cannot write " + setting + " " + uri + " safely: its store ignores conditional PUTs "
                            + "(If-None-Match: *), on which Delta's commits and the stream's lease rely on S3; use a store that honours them "
                            + "(AWS S3 and most S3-compatible stores do since 2024; docs/object-storage.md)", Cause.OTHER, null);
                }
                return;
            }
            fs.mkdirs(dir);
            try (OutputStream out = fs.create(probe, true)) {
                out.write(1);
            }
            fs.delete(probe, false);
        } catch (IOException e) {
            throw unavailable(setting, uri, Cause.of(e), e.getMessage(), e);
        }
    }

    private static StorageUnavailableException unavailable(String setting, Object path, Cause cause, String detail, Throwable e) {
        boolean saysNothingMore = detail == null || detail.equalsIgnoreCase(cause.what);
        return new StorageUnavailableException("cannot write " + setting + " " + path + ": " + cause.what
                + (saysNothingMore ? "" : " (" + detail + ")") + "; " + cause.hint, cause, e);
    }
}
