package io.tidemark.stream;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileAlreadyExistsException;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.ObjectMapper;

import io.tidemark.lakehouse.ObjectStorage;

/**
 * One stream per lakehouse and per checkpoint: the lease a running stream holds on each.
 *
 * <p>A lease is a file {@code _tidemark/stream-lease-<n>.json} under the directory it guards; the
 * holder is the file with the highest {@code n}, and it says who holds it (host, pid, application,
 * since when). The holder keeps it alive by touching the file (its modification time is the
 * heartbeat) every {@link #HEARTBEAT_EVERY} of the timeout. To take a lease, a stream creates the
 * file {@code n+1} with create-if-absent, which exactly one of several concurrent starters
 * achieves; it may do so only when there is no lease, or when the current one is dead:
 * <ul>
 *   <li>its heartbeat is older than the timeout (a stream on another host that died or hangs), or</li>
 *   <li>it was taken on this host by a process that is gone (a kill -9: restarting works at once,
 *       without waiting for the timeout and without manual cleanup).</li>
 * </ul>
 * A live lease refuses the start with a message naming the holder. A holder that finds a higher
 * lease than its own (taken over after it stopped heartbeating for the whole timeout) has lost it:
 * {@link #requireHeld()} then fails the next batch before it writes anything. A clean stop deletes
 * the file.
 *
 * <p>The guarantees rely on an atomic create-if-absent and on a modification time the holder can
 * renew. A local disk has both (an exclusive create, {@code setTimes}); HDFS creates without
 * overwrite atomically. On S3 the file is created with a conditional PUT ({@code If-None-Match: *})
 * and the heartbeat writes the file again (S3 cannot touch an object: its time is that of its last
 * PUT, taken by the store's clock).
 */
public final class StreamLease implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(StreamLease.class);
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Pattern FILE = Pattern.compile("stream-lease-(\\d+)\\.json");
    /** The directory, under the guarded one, that holds the lease files. */
    public static final String DIR = "_tidemark";
    /** Heartbeats per timeout. */
    static final int HEARTBEAT_EVERY = 4;

    private final FileSystem fs;
    private final Path dir;
    private final String what;
    private final Path mine;
    private final long number;
    private final Duration timeout;
    /** The lease file's content, written again by each heartbeat where a time cannot be touched. */
    private final byte[] content;
    private final ScheduledExecutorService heartbeat;
    private volatile String lost;

    private StreamLease(FileSystem fs, Path dir, String what, Path mine, long number, Duration timeout, byte[] content) {
        this.fs = fs;
        this.content = content;
        this.dir = dir;
        this.what = what;
        this.mine = mine;
        this.number = number;
        this.timeout = timeout;
        this.heartbeat = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "tidemark-lease-" + what);
            t.setDaemon(true);
            return t;
        });
        long every = Math.max(1, timeout.toMillis() / HEARTBEAT_EVERY);
        heartbeat.scheduleWithFixedDelay(this::beat, every, every, TimeUnit.MILLISECONDS);
    }

    /** Who holds a lease, as its file says. */
    public record Holder(String host, long pid, String processStart, String application, String startedAt) {
        String describe() {
            return "pid " + pid + " on " + host + (application == null || application.isEmpty() ? "" : " (" + application + ")")
                    + ", since " + startedAt;
        }
    }

    /** A start refused because another stream holds the lease. */
    public static final class HeldElsewhereException extends IllegalStateException {
        private static final long serialVersionUID = 1L;

        HeldElsewhereException(String message) {
            super(message);
        }
    }

    /**
     * Takes the lease on {@code guarded} (the lakehouse root or the checkpoint directory).
     *
     * @param what        how messages name the directory, e.g. "the lakehouse /data/lh"
     * @param application Spark's application id, shown to whoever is refused
     * @throws HeldElsewhereException another live stream holds it; nothing was written
     */
    public static StreamLease acquire(String guarded, String what, String application, Duration timeout, Configuration hadoop) {
        try {
            Path dir = new Path(new Path(guarded), DIR);
            FileSystem fs = dir.getFileSystem(hadoop);
            for (int attempt = 0; attempt < 5; attempt++) {
                Optional<FileStatus> current = highest(fs, dir);
                long next = 1;
                if (current.isPresent()) {
                    FileStatus s = current.get();
                    Optional<Holder> holder = read(fs, s.getPath());
                    String dead = deadBecause(s, holder.orElse(null), timeout);
                    if (dead == null) {
                        throw new HeldElsewhereException(what + " is being written by another stream: "
                                + holder.map(Holder::describe).orElse("(lease file " + s.getPath() + ")")
                                + ", last heartbeat " + Instant.ofEpochMilli(s.getModificationTime()) + ". One stream writes a lakehouse and "
                                + "a checkpoint: stop that one first (or, if it is gone, its lease expires " + timeout.toSeconds()
                                + " s after its last heartbeat).");
                    }
                    LOG.info("taking over the lease of {} from {}: {}", what, holder.map(Holder::describe).orElse("an unreadable lease"), dead);
                    next = number(s.getPath()) + 1;
                }
                Path mine = new Path(dir, "stream-lease-" + next + ".json");
                byte[] content = JSON.writerWithDefaultPrettyPrinter().writeValueAsBytes(self(application));
                if (!createIfAbsent(fs, mine, content)) {
                    continue; // another starter took this number first: look again
                }
                StreamLease lease = new StreamLease(fs, dir, what, mine, next, timeout, content);
                lease.deleteOlder();
                return lease;
            }
            throw new HeldElsewhereException(what + ": several streams are starting at the same time; try again");
        } catch (IOException e) {
            throw new UncheckedIOException("cannot take the stream lease of " + what + ": " + e.getMessage(), e);
        }
    }

    /**
     * Creates the file only if it does not exist, atomically: false when it exists. Hadoop's local
     * file system and S3A check and create in two steps, so local paths use the operating system's
     * exclusive create and S3 a conditional PUT; HDFS's create without overwrite is atomic on its own.
     */
    private static boolean createIfAbsent(FileSystem fs, Path file, byte[] content) throws IOException {
        if (ObjectStorage.isS3(fs.getUri().toString())) {
            try {
                ObjectStorage.createIfAbsent(fs, file, content);
                return true;
            } catch (IOException e) {
                if (ObjectStorage.refusedAsExisting(e)) {
                    return false; // another starter's PUT came first (HTTP 412)
                }
                throw e;
            }
        }
        if ("file".equals(fs.getUri().getScheme())) {
            java.nio.file.Path local = java.nio.file.Path.of(fs.makeQualified(file).toUri());
            Files.createDirectories(local.getParent());
            try {
                Files.write(local, content, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE);
                return true;
            } catch (java.nio.file.FileAlreadyExistsException e) {
                return false;
            }
        }
        try (OutputStream out = fs.create(file, false)) {
            out.write(content);
            return true;
        } catch (FileAlreadyExistsException e) {
            return false;
        } catch (IOException e) {
            if (fs.exists(file)) {
                return false; // the same race, reported as a plain IOException by some file systems
            }
            throw e;
        }
    }

    /** Fails when the lease was taken over: a batch must not write then. */
    public void requireHeld() {
        if (lost != null) {
            throw new HeldElsewhereException(lost);
        }
    }

    /** Stops the heartbeat and removes the lease (a clean stop: the next start needs no waiting). */
    @Override
    public void close() {
        heartbeat.shutdownNow();
        try {
            if (lost == null) {
                fs.delete(mine, false);
            }
        } catch (IOException e) {
            LOG.warn("could not remove the stream lease {}: {}; the next start takes it over", mine, e.toString());
        }
    }

    /** One heartbeat: renews the lease, or finds it taken over (package-private for tests). */
    void beat() {
        try {
            Optional<FileStatus> highest = highest(fs, dir);
            if (highest.isEmpty() || number(highest.get().getPath()) != number) {
                Optional<Holder> other = highest.flatMap(s -> read(fs, s.getPath()));
                lost = "the lease of " + what + " was taken over by " + other.map(Holder::describe).orElse("another stream")
                        + " after this stream's heartbeat stopped for " + timeout.toSeconds() + " s; this stream stops writing";
                LOG.error(lost);
                heartbeat.shutdown();
                return;
            }
            if (ObjectStorage.isS3(fs.getUri().toString())) {
                try (OutputStream out = fs.create(mine, true)) {
                    out.write(content);
                }
            } else {
                fs.setTimes(mine, System.currentTimeMillis(), -1);
            }
        } catch (IOException | RuntimeException e) {
            LOG.warn("stream lease heartbeat of {} failed: {}", what, e.toString());
        }
    }

    private void deleteOlder() throws IOException {
        for (FileStatus s : leases(fs, dir)) {
            if (number(s.getPath()) < number) {
                fs.delete(s.getPath(), false);
            }
        }
    }

    /** Null when the holder is alive; else why it is dead. */
    static String deadBecause(FileStatus lease, Holder holder, Duration timeout) {
        long silent = System.currentTimeMillis() - lease.getModificationTime();
        if (silent > timeout.toMillis()) {
            return "no heartbeat for " + silent / 1000 + " s";
        }
        if (holder != null && holder.host().equals(hostName())) {
            Optional<ProcessHandle> p = ProcessHandle.of(holder.pid());
            if (p.isEmpty() || !p.get().isAlive()) {
                return "its process " + holder.pid() + " is gone";
            }
            String start = p.get().info().startInstant().map(Instant::toString).orElse("");
            if (holder.processStart() != null && !holder.processStart().isEmpty() && !start.isEmpty() && !start.equals(holder.processStart())) {
                return "its process " + holder.pid() + " is gone (the pid now belongs to another process)";
            }
        }
        return null;
    }

    private static Map<String, Object> self(String application) {
        ProcessHandle me = ProcessHandle.current();
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("host", hostName());
        m.put("pid", me.pid());
        m.put("processStart", me.info().startInstant().map(Instant::toString).orElse(""));
        m.put("application", application == null ? "" : application);
        m.put("startedAt", Instant.now().toString());
        return m;
    }

    static String hostName() {
        try {
            return InetAddress.getLocalHost().getHostName();
        } catch (IOException e) {
            return "unknown-host";
        }
    }

    private static Optional<Holder> read(FileSystem fs, Path p) {
        try (InputStream in = fs.open(p)) {
            Map<String, Object> m = JSON.readValue(in, new TypeReference<Map<String, Object>>() { });
            return Optional.of(new Holder(String.valueOf(m.get("host")), ((Number) m.get("pid")).longValue(),
                    String.valueOf(m.getOrDefault("processStart", "")), String.valueOf(m.getOrDefault("application", "")),
                    String.valueOf(m.get("startedAt"))));
        } catch (FileNotFoundException e) {
            return Optional.empty();
        } catch (IOException | RuntimeException e) {
            return Optional.empty(); // being written right now, or damaged: judged by its heartbeat alone
        }
    }

    private static Optional<FileStatus> highest(FileSystem fs, Path dir) throws IOException {
        FileStatus best = null;
        for (FileStatus s : leases(fs, dir)) {
            if (best == null || number(s.getPath()) > number(best.getPath())) {
                best = s;
            }
        }
        return Optional.ofNullable(best);
    }

    private static List<FileStatus> leases(FileSystem fs, Path dir) throws IOException {
        List<FileStatus> out = new ArrayList<>();
        FileStatus[] all;
        try {
            all = fs.listStatus(dir);
        } catch (FileNotFoundException e) {
            return out; // no lease yet; on S3 also when the last lease was removed a moment ago (a directory is its objects)
        }
        for (FileStatus s : all) {
            if (FILE.matcher(s.getPath().getName()).matches()) {
                out.add(s);
            }
        }
        return out;
    }

    private static long number(Path p) {
        Matcher m = FILE.matcher(p.getName());
        if (!m.matches()) {
            throw new IllegalArgumentException(p + " is not a lease file");
        }
        return Long.parseLong(m.group(1));
    }
}
