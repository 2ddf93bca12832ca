package io.tidemark.tests;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Iterator;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;

import io.delta.storage.CloseableIterator;
import io.delta.storage.LogStore;

/**
 * A test hook around a real Delta log store (the one under test, named by {@code
 * tidemark.test.gate.delegate}): before this JVM's k-th commit it waits until the other racing JVM
 * has reached its k-th commit too, so that both send their commit file for the same version within
 * moments of each other; then the real store writes it. Every outcome is recorded in the gate
 * directory ({@code written.<writer>}: "path ok" or "path refused") for the test to check. Reads and
 * listings are the real store's.
 */
public final class GatedLogStore extends LogStore {
    private final LogStore delegate;
    private final Path gate;
    private final String writer;
    private final String peer;
    private int round;

    public GatedLogStore(Configuration hadoop) throws Exception {
        super(hadoop);
        delegate = (LogStore) Class.forName(hadoop.get("tidemark.test.gate.delegate")).getConstructor(Configuration.class).newInstance(hadoop);
        gate = Path.of(hadoop.get("tidemark.test.gate.dir"));
        writer = hadoop.get("tidemark.test.gate.writer");
        peer = hadoop.get("tidemark.test.gate.peer");
    }

    @Override
    public void write(org.apache.hadoop.fs.Path path, Iterator<String> actions, Boolean overwrite, Configuration hadoop) throws IOException {
        if (overwrite || !path.getName().matches("\\d{20}\\.json")) {
            delegate.write(path, actions, overwrite, hadoop);
            return;
        }
        synchronized (this) {
            Path mine = gate.resolve(round + "." + writer);
            if (!Files.exists(mine)) { // a retry of the round (after a refusal) is not held back
                Files.createFile(mine);
                long deadline = System.currentTimeMillis() + 60_000;
                while (!Files.exists(gate.resolve(round + "." + peer)) && !Files.exists(gate.resolve("done." + peer))
                        && System.currentTimeMillis() < deadline) {
                    try {
                        Thread.sleep(1);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                        throw new IOException(e);
                    }
                }
            }
            try {
                delegate.write(path, actions, false, hadoop);
            } catch (java.nio.file.FileAlreadyExistsException e) {
                record(path + " refused");
                throw e;
            }
            record(path + " ok");
            round++;
        }
    }

    private void record(String line) throws IOException {
        Files.writeString(gate.resolve("written." + writer), line + "\n", StandardCharsets.UTF_8, StandardOpenOption.CREATE, StandardOpenOption.APPEND);
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
