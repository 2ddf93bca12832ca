package io.tidemark.tests;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.Iterator;
import java.util.List;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;

import io.delta.storage.CloseableIterator;
import io.delta.storage.LogStore;

/**
 * A test hook around a real Delta log store (the one under test, named by {@code
 * tidemark.test.gate.delegate}) that puts two JVMs' commits to one table onto the same version at the
 * same moment. The follower (reconcile), about to write version N of the gated table's log, asks for
 * a race ({@code want.N} in the gate directory) and waits; the leader (the stream), about to write
 * version N, sees the request and answers ({@code go.N}); the follower acknowledges ({@code ack.N}) and
 * both send their commit file within a millisecond or two. A follower whose version N is already
 * written (its snapshot was older) goes on at once, is refused, and waits at N+1; a commit that lost
 * its race is retried by Delta without being held back (it would lose to the stream's next commit
 * again and again, which no real timing does). Every
 * outcome is recorded in {@code written.<writer>}: "path ok sha256" or "path refused"; each race in
 * {@code races.<writer>}. Reads and listings are the real store's.
 */
public final class GatedLogStore extends LogStore {
    private static final long FOLLOWER_WAIT_MS = 90_000;
    private static final long LEADER_WAIT_MS = 5_000;
    private final LogStore delegate;
    private final Path gate;
    private final String writer;
    private final boolean leader;
    private final String table;
    /** The follower's commit was refused and Delta retries it at the next version: that attempt is not held back. */
    private boolean retrying;

    public GatedLogStore(Configuration hadoop) throws Exception {
        super(hadoop);
        delegate = (LogStore) Class.forName(hadoop.get("tidemark.test.gate.delegate")).getConstructor(Configuration.class).newInstance(hadoop);
        gate = Path.of(hadoop.get("tidemark.test.gate.dir"));
        writer = hadoop.get("tidemark.test.gate.writer");
        leader = hadoop.getBoolean("tidemark.test.gate.leader", false);
        table = hadoop.get("tidemark.test.gate.table");
    }

    @Override
    public void write(org.apache.hadoop.fs.Path path, Iterator<String> actions, Boolean overwrite, Configuration hadoop) throws IOException {
        if (overwrite || !path.getName().matches("\\d{20}\\.json") || !path.getParent().getParent().getName().equals(table)) {
            delegate.write(path, actions, overwrite, hadoop);
            return;
        }
        List<String> lines = new ArrayList<>();
        actions.forEachRemaining(lines::add);
        long version = Long.parseLong(path.getName().substring(0, 20));
        synchronized (this) {
            boolean raced = false;
            if (leader) {
                lead(version);
            } else if (!retrying) {
                raced = follow(version, path, hadoop);
            }
            try {
                delegate.write(path, lines.iterator(), false, hadoop);
            } catch (java.nio.file.FileAlreadyExistsException e) {
                retrying = raced;
                record("written", path + " refused");
                throw e;
            }
            retrying = false;
            record("written", path + " ok " + sha256(lines));
        }
    }

    /** The leader answers a follower waiting at this version, and goes when it has acknowledged. */
    private void lead(long version) throws IOException {
        if (!Files.exists(gate.resolve("want." + version)) || !create("go." + version)) {
            return;
        }
        long deadline = System.currentTimeMillis() + LEADER_WAIT_MS;
        while (!Files.exists(gate.resolve("ack." + version)) && System.currentTimeMillis() < deadline) {
            pause();
        }
    }

    /** The follower waits for the leader at this version unless the version is written already; whether they raced. */
    private boolean follow(long version, org.apache.hadoop.fs.Path path, Configuration hadoop) throws IOException {
        if (path.getFileSystem(hadoop).exists(path)) {
            return false;
        }
        create("want." + version);
        long deadline = System.currentTimeMillis() + FOLLOWER_WAIT_MS;
        long checked = 0;
        while (System.currentTimeMillis() < deadline) {
            if (Files.exists(gate.resolve("go." + version))) {
                create("ack." + version);
                record("races", String.valueOf(version));
                return true;
            }
            if (System.currentTimeMillis() - checked > 500) { // the leader wrote the version before it saw the request
                checked = System.currentTimeMillis();
                if (path.getFileSystem(hadoop).exists(path)) {
                    return false;
                }
            }
            pause();
        }
        return false;
    }

    private boolean create(String name) throws IOException {
        try {
            Files.createFile(gate.resolve(name));
            return true;
        } catch (FileAlreadyExistsException e) {
            return false;
        }
    }

    private static void pause() throws IOException {
        try {
            Thread.sleep(1);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException(e);
        }
    }

    private static String sha256(List<String> lines) throws IOException {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(String.join("\n", lines).getBytes(StandardCharsets.UTF_8)));
        } catch (java.security.NoSuchAlgorithmException e) {
            throw new IOException(e);
        }
    }

    private synchronized void record(String file, String line) throws IOException {
        Files.writeString(gate.resolve(file + "." + writer), line + "\n", StandardCharsets.UTF_8, StandardOpenOption.CREATE, StandardOpenOption.APPEND);
    }

    @Override
    public CloseableIterator<String> read(org.apache.hadoop.fs.Path path, Configuration hadoop) throws IOException {
        return delegate.read(path, hadoop);
    }

    @Override
    public Iterator<FileStatus> listFrom(org.apache.hadoop.fs.Path path, Configuration hadoop) throws IOException {
        return delegate.listFrom(path, hadoop);
    }

    @Override
    public org.apache.hadoop.fs.Path resolvePathOnPhysicalStorage(org.apache.hadoop.fs.Path path, Configuration hadoop) throws IOException {
        return delegate.resolvePathOnPhysicalStorage(path, hadoop);
    }

    @Override
    public Boolean isPartialWriteVisible(org.apache.hadoop.fs.Path path, Configuration hadoop) throws IOException {
        return delegate.isPartialWriteVisible(path, hadoop);
    }
}
