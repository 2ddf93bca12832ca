package io.tidemark.stream;

import java.nio.file.FileStore;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;

import io.tidemark.lakehouse.IncompatibleQueryException;
import io.tidemark.lakehouse.StorageCheck;
import io.tidemark.lakehouse.StorageCheck.StorageUnavailableException;
import io.tidemark.lakehouse.TidemarkConfig;

/**
 * A failure of the stream that an operator can act on, as one line naming the cause and the way to
 * recover; the original exception is the cause, for the log (DEBUG) or {@code TIDEMARK_DEBUG}.
 *
 * <p>One static method per family of causes maps a Throwable (anywhere in its cause chain, or in
 * the text Spark quotes when a task failed) to a StreamFailure, or to empty when the failure is not
 * of that family: unrelated errors are never swallowed, the entry points rethrow them.
 */
public final class StreamFailure extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /** Exit status: 2 = the settings are wrong for this checkpoint/lakehouse, 1 = the run failed. */
    private final int exitCode;

    private StreamFailure(String message, int exitCode, Throwable cause) {
        super(message, cause);
        this.exitCode = exitCode;
    }

    public int exitCode() {
        return exitCode;
    }

    /** Every family in turn; empty when none applies. */
    public static Optional<StreamFailure> explain(Throwable t, TidemarkConfig config) {
        if (t instanceof StreamFailure f) {
            return Optional.of(f);
        }
        return incompatibleDefinition(t).or(() -> storage(t, config));
    }

    /** The query definition changed incompatibly ({@link io.tidemark.lakehouse.QueryDefinition}). */
    public static Optional<StreamFailure> incompatibleDefinition(Throwable t) {
        for (Throwable c = t; c != null; c = next(c)) {
            if (c instanceof IncompatibleQueryException e) {
                return Optional.of(new StreamFailure(e.getMessage(), 2, t));
            }
        }
        return Optional.empty();
    }

    /**
     * The lakehouse or checkpoint cannot be written: disk full, read-only, access denied, a path
     * through a regular file. At start-up the {@link StorageCheck} says which path; in a batch the
     * cause is an I/O error inside a Spark task (Hadoop's local file system wraps it in an FSError).
     */
    public static Optional<StreamFailure> storage(Throwable t, TidemarkConfig config) {
        for (Throwable c = t; c != null; c = next(c)) {
            if (c instanceof StorageUnavailableException e) {
                return Optional.of(new StreamFailure(e.getMessage(), 1, t));
            }
        }
        StorageCheck.Cause cause = null;
        String file = null;
        for (Throwable c = t; c != null; c = next(c)) {
            if (!(c instanceof java.io.IOException || c instanceof org.apache.hadoop.fs.FSError)) {
                continue;
            }
            StorageCheck.Cause k = StorageCheck.Cause.of(c);
            if (k != StorageCheck.Cause.OTHER) {
                cause = k;
                if (c instanceof java.nio.file.FileSystemException f) {
                    file = f.getFile();
                }
                break;
            }
        }
        if (cause == null) {
            // A failed task reaches the driver as a SparkException quoting the executor's error.
            for (Throwable c = t; c != null && cause == null; c = next(c)) {
                String m = String.valueOf(c.getMessage());
                if (m.contains("IOException") || m.contains("FSError") || m.contains("FileSystemException")) {
                    StorageCheck.Cause k = StorageCheck.Cause.of(new java.io.IOException(m));
                    cause = k == StorageCheck.Cause.OTHER ? null : k;
                }
            }
        }
        if (cause == null) {
            return Optional.empty();
        }
        // Only a failure of our own paths: an unreadable keystore or a full Spark scratch disk is someone else's story.
        String text = chainText(t);
        boolean checkpoint = (file != null && file.startsWith(config.checkpointUri())) || text.contains(config.checkpointUri());
        boolean lakehouse = (file != null && file.startsWith(config.lakehouseUri())) || text.contains(config.lakehouseUri());
        if (!checkpoint && !lakehouse && !(cause == StorageCheck.Cause.NO_SPACE && nearlyFull(config))) {
            return Optional.empty();
        }
        String where = checkpoint && !lakehouse ? "the checkpoint " + config.checkpointUri()
                : lakehouse && !checkpoint ? "the lakehouse " + config.lakehouseUri()
                : culprit(config, cause);
        if (cause == StorageCheck.Cause.NO_SPACE && !where.contains(" free now") && !where.contains(" or ")) {
            long free = usable(where.startsWith("the checkpoint") ? config.checkpointUri() : config.lakehouseUri());
            where = free >= 0 ? where + " (" + mb(free) + " free now)" : where;
        }
        if (file != null) {
            where = where + ", file " + file;
        }
        String message = cause.what + " writing " + where + "; " + cause.hint + ", then start the stream again: nothing is lost, "
                + "the checkpoint did not advance past the failed batch and the restart replays it exactly once";
        return Optional.of(new StreamFailure(message, 1, t));
    }

    private static String chainText(Throwable t) {
        StringBuilder sb = new StringBuilder();
        for (Throwable c = t; c != null; c = next(c)) {
            sb.append(c.getMessage()).append('\n');
        }
        return sb.toString();
    }

    /** The lakehouse's or the checkpoint's file system has less than 16 MB left. */
    private static boolean nearlyFull(TidemarkConfig config) {
        long lh = usable(config.lakehouseUri());
        long cp = usable(config.checkpointUri());
        return (lh >= 0 && lh < 16_000_000) || (cp >= 0 && cp < 16_000_000);
    }

    /** Which of the two paths it was: for a full disk the one with (almost) no space left. */
    private static String culprit(TidemarkConfig config, StorageCheck.Cause cause) {
        String lakehouse = "the lakehouse " + config.lakehouseUri();
        String checkpoint = "the checkpoint " + config.checkpointUri();
        if (cause == StorageCheck.Cause.NO_SPACE) {
            long lh = usable(config.lakehouseUri());
            long cp = usable(config.checkpointUri());
            if (lh >= 0 && cp >= 0 && lh != cp) {
                return lh < cp ? lakehouse + " (" + mb(lh) + " free now)" : checkpoint + " (" + mb(cp) + " free now)";
            }
        }
        return lakehouse + " or " + checkpoint;
    }

    private static String mb(long bytes) {
        return String.format("%.1f MB", bytes / 1e6);
    }

    /** Usable bytes on the local file system holding {@code uri}, -1 when unknown or not local. */
    private static long usable(String uri) {
        if (uri.contains("://")) {
            return -1;
        }
        try {
            Path p = Path.of(uri);
            while (p != null && !Files.exists(p)) {
                p = p.getParent();
            }
            if (p == null) {
                return -1;
            }
            FileStore store = Files.getFileStore(p);
            return store.getUsableSpace();
        } catch (Exception e) {
            return -1;
        }
    }

    private static Throwable next(Throwable c) {
        return c.getCause() == c ? null : c.getCause();
    }
}
