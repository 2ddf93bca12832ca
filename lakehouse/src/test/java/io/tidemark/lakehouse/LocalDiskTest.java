package io.tidemark.lakehouse;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.FileNotFoundException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.EnumSet;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.CreateFlag;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileContext;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Options;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;
import org.apache.hadoop.fs.permission.FsPermission;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link LocalDisk} answers what Hadoop's local file system answers, without its processes: the
 * permissions a file gets, the link status of files, directories, missing paths and links, and a
 * commit as Delta's log store makes it (a temporary file renamed through {@code FileContext}).
 */
class LocalDiskTest {
    @TempDir
    java.nio.file.Path dir;

    private static Configuration conf() {
        Configuration conf = new Configuration(false);
        LocalDisk.sparkSettings().forEach((k, v) -> conf.set(k.substring("spark.hadoop.".length()), v));
        conf.setBoolean("fs.file.impl.disable.cache", true);
        return conf;
    }

    private static RawLocalFileSystem initialized(RawLocalFileSystem fs) throws java.io.IOException {
        fs.initialize(java.net.URI.create("file:///"), new Configuration(false));
        return fs;
    }

    private Path path(String name) {
        return new Path(dir.resolve(name).toUri());
    }

    @Test
    void permissionsAreTheModesHadoopWouldSet() throws Exception {
        RawLocalFileSystem hadoop = initialized(new RawLocalFileSystem());
        RawLocalFileSystem ours = initialized(new LocalDisk.Raw());
        for (String mode : new String[] {"644", "755", "600", "700", "777", "640", "444", "000", "751"}) {
            Files.writeString(dir.resolve("h" + mode), "x");
            Files.writeString(dir.resolve("o" + mode), "x");
            hadoop.setPermission(path("h" + mode), new FsPermission(mode));
            ours.setPermission(path("o" + mode), new FsPermission(mode));
            assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(dir.resolve("o" + mode))))
                    .as("mode %s", mode).isEqualTo(PosixFilePermissions.toString(Files.getPosixFilePermissions(dir.resolve("h" + mode))));
        }
        assertThatThrownBy(() -> ours.setPermission(path("missing"), new FsPermission("644"))).isInstanceOf(java.io.IOException.class);
    }

    @Test
    void linkStatusIsHadoopsForFilesDirectoriesMissingPathsAndLinks() throws Exception {
        RawLocalFileSystem hadoop = initialized(new RawLocalFileSystem());
        RawLocalFileSystem ours = initialized(new LocalDisk.Raw());
        Files.writeString(dir.resolve("file"), "12345");
        Files.createDirectory(dir.resolve("sub"));
        Files.createSymbolicLink(dir.resolve("link"), dir.resolve("file"));
        for (String name : new String[] {"file", "sub", "link"}) {
            FileStatus h = hadoop.getFileLinkStatus(path(name));
            FileStatus o = ours.getFileLinkStatus(path(name));
            assertThat(o.getPath()).as(name).isEqualTo(h.getPath());
            assertThat(o.isFile()).as(name).isEqualTo(h.isFile());
            assertThat(o.isDirectory()).as(name).isEqualTo(h.isDirectory());
            assertThat(o.isSymlink()).as(name).isEqualTo(h.isSymlink());
            assertThat(o.getLen()).as(name).isEqualTo(h.getLen());
            assertThat(o.getModificationTime()).as(name).isEqualTo(h.getModificationTime());
        }
        // Hadoop runs readlink on the path's URI string ("file:/..."), which names no file: a link given
        // as a file: URI is reported as the file it points to. A link takes Hadoop's own way here, so the same.
        assertThat(ours.getFileLinkStatus(path("link")).isSymlink()).isFalse();
        assertThatThrownBy(() -> ours.getFileLinkStatus(path("missing"))).isInstanceOf(FileNotFoundException.class);
    }

    @Test
    void sparkSettingsRouteBothApisHereAndACommitRenameWorksAsBefore() throws Exception {
        Configuration conf = conf();
        FileSystem fs = FileSystem.get(java.net.URI.create("file:///"), conf);
        assertThat(fs).isInstanceOf(LocalDisk.FileSystem.class);
        FileContext fc = FileContext.getFileContext(java.net.URI.create("file:///"), conf);
        assertThat(fc.getDefaultFileSystem()).isInstanceOf(LocalDisk.Fs.class);

        // As Delta's HDFS log store commits: write a temporary file, rename it without overwrite.
        Path log = path("_delta_log");
        fs.mkdirs(log);
        Path tmp = new Path(log, ".00000000000000000000.json.tmp");
        Path entry = new Path(log, "00000000000000000000.json");
        try (FSDataOutputStream out = fc.create(tmp, EnumSet.of(CreateFlag.CREATE), Options.CreateOpts.checksumParam(Options.ChecksumOpt.createDisabled()))) {
            out.write("{\"commitInfo\":{}}\n".getBytes(StandardCharsets.UTF_8));
        }
        fc.rename(tmp, entry, Options.Rename.NONE);
        assertThat(Files.readString(dir.resolve("_delta_log/00000000000000000000.json"))).isEqualTo("{\"commitInfo\":{}}\n");
        assertThat(fs.exists(tmp)).isFalse();
        // A second writer of the same version loses: the entry exists.
        Path tmp2 = new Path(log, ".00000000000000000000.json.tmp2");
        try (FSDataOutputStream out = fc.create(tmp2, EnumSet.of(CreateFlag.CREATE))) {
            out.write('x');
        }
        assertThatThrownBy(() -> fc.rename(tmp2, entry, Options.Rename.NONE)).isInstanceOf(org.apache.hadoop.fs.FileAlreadyExistsException.class);
        assertThat(Files.readString(dir.resolve("_delta_log/00000000000000000000.json"))).isEqualTo("{\"commitInfo\":{}}\n");

        // A file written through FileSystem gets the default permissions, less the umask.
        try (FSDataOutputStream out = fs.create(path("data.parquet"))) {
            out.write('x');
        }
        assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(dir.resolve("data.parquet")))).isEqualTo("rw-r--r--");
    }
}
