package io.tidemark.lakehouse;

import java.io.IOException;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Map;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.ChecksumFs;
import org.apache.hadoop.fs.DelegateToFileSystem;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FsServerDefaults;
import org.apache.hadoop.fs.LocalFileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;
import org.apache.hadoop.fs.local.LocalConfigKeys;
import org.apache.hadoop.fs.permission.FsPermission;
import org.apache.hadoop.io.nativeio.NativeIO;

/**
 * Hadoop's local file system ({@code file:}) without a process per file. Without Hadoop's native
 * library (which Spark's jars do not carry), {@link RawLocalFileSystem} runs {@code chmod} for every
 * file it creates and {@code readlink} for every path whose link status it is asked for, and Delta
 * asks that of about eight paths per commit (the log entry, its temporary file and their checksums).
 * A profile of the writer driven batch by batch showed 2,785 such processes in 150 s. Here the same
 * two answers come from {@link java.nio.file.Files}; a path that is a symbolic link, a permission with
 * the sticky bit, or a machine with the native library still take Hadoop's own way.
 *
 * <p>{@link SparkSessions} registers both faces when Spark runs on one machine ({@code local} masters):
 * {@link FileSystem} for {@code fs.file.impl} (Spark's and Parquet's writes) and {@link Fs} for
 * {@code fs.AbstractFileSystem.file.impl} (the {@code FileContext} Delta's log store commits through).
 */
public final class LocalDisk {
    private LocalDisk() {
    }

    /** The Spark settings that route {@code file:} through this class. */
    public static Map<String, String> sparkSettings() {
        return Map.of("spark.hadoop.fs.file.impl", FileSystem.class.getName(),
                "spark.hadoop.fs.AbstractFileSystem.file.impl", Fs.class.getName());
    }

    /** The raw local file system, with {@code chmod} and {@code readlink} answered in the JVM. */
    public static class Raw extends RawLocalFileSystem {
        @Override
        public void setPermission(Path p, FsPermission permission) throws IOException {
            if (NativeIO.isAvailable() || permission.getStickyBit()) {
                super.setPermission(p, permission);
                return;
            }
            // Without the sticky bit, FsPermission prints the nine bits as chmod and ls write them ("rw-r--r--").
            Files.setPosixFilePermissions(pathToFile(p).toPath(), PosixFilePermissions.fromString(permission.toString()));
        }

        @Override
        public FileStatus getFileLinkStatus(Path f) throws IOException {
            if (!NativeIO.isAvailable() && !Files.isSymbolicLink(pathToFile(f).toPath())) {
                // Hadoop's answer for a path that is no link: its file status (FileNotFoundException when absent).
                return getFileStatus(f);
            }
            return super.getFileLinkStatus(f);
        }
    }

    /** {@code fs.file.impl}: Hadoop's checksummed local file system over {@link Raw}. */
    public static final class FileSystem extends LocalFileSystem {
        public FileSystem() {
            super(new Raw());
        }
    }

    /** {@code fs.AbstractFileSystem.file.impl}: the {@code FileContext} face, as Hadoop's {@code LocalFs} over {@link Raw}. */
    public static final class Fs extends ChecksumFs {
        public Fs(URI uri, Configuration conf) throws IOException, URISyntaxException {
            super(new RawFs(uri, conf));
        }
    }

    /** As Hadoop's {@code RawLocalFs}, delegating to {@link Raw}. */
    static final class RawFs extends DelegateToFileSystem {
        RawFs(URI uri, Configuration conf) throws IOException, URISyntaxException {
            super(uri, new Raw(), conf, "file", false);
        }

        @Override
        public int getUriDefaultPort() {
            return -1; // file:/// has no port
        }

        @Override
        public FsServerDefaults getServerDefaults(Path f) throws IOException {
            return LocalConfigKeys.getServerDefaults();
        }

        @Override
        @Deprecated
        public FsServerDefaults getServerDefaults() throws IOException {
            return LocalConfigKeys.getServerDefaults();
        }

        @Override
        public boolean isValidName(String src) {
            return true; // any name the local disk takes
        }
    }
}
