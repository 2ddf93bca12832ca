package io.tidemark.generate;

import java.time.Duration;
import java.time.InstantSource;
import java.util.function.Consumer;
import java.util.function.LongSupplier;

/**
 * Runs a {@link TrafficSpec} into a {@link MessageSink}: generation, pacing, the count and duration
 * bounds, progress ticks and the final {@link GenerationReport}. Sink-agnostic, so it is tested
 * without Kafka.
 */
public final class TrafficRunner {

    public static final Duration PROGRESS_INTERVAL = Duration.ofSeconds(1);

    private final LongSupplier nanoTime;
    private final RatePacer.Sleeper sleeper;
    private final InstantSource wallClock;
    private volatile boolean stopRequested;

    public TrafficRunner() {
        this(System::nanoTime, RatePacer.Sleeper.THREAD_SLEEP, InstantSource.system());
    }

    TrafficRunner(LongSupplier nanoTime, RatePacer.Sleeper sleeper, InstantSource wallClock) {
        this.nanoTime = nanoTime;
        this.sleeper = sleeper;
        this.wallClock = wallClock;
    }

    /**
     * Asks a running {@link #run} to stop after the current message (e.g. from a shutdown hook); it
     * then flushes and returns a report with {@code stoppedEarly = true}. Interrupting the running
     * thread has the same effect. A stop requested before a run starts ends that run at once.
     */
    public void requestStop() {
        stopRequested = true;
    }

    /**
     * Generates and sends until the spec's count or duration is reached or a stop is requested,
     * then flushes the sink.
     *
     * @param progress called on the running thread about once per {@link #PROGRESS_INTERVAL}; may be null
     * @throws RuntimeException whatever the sink throws; nothing is retried
     */
    public GenerationReport run(TrafficSpec spec, MessageSink sink, Consumer<Progress> progress) {
        TrafficGenerator generator = new TrafficGenerator(spec, wallClock);
        RatePacer pacer = spec.isPaced() ? new RatePacer(spec.ratePerSecond(), nanoTime, sleeper) : null;
        GenerationReport.Tally tally = new GenerationReport.Tally(spec.profile());
        long start = nanoTime.getAsLong();
        long deadline = spec.duration() == null ? Long.MAX_VALUE : start + spec.duration().toNanos();
        long intervalNanos = PROGRESS_INTERVAL.toNanos();
        long nextTick = start + intervalNanos;
        long lastTickTime = start;
        long lastTickCount = 0;
        boolean stoppedEarly = false;
        boolean interrupted = false;
        while (generator.hasNext()) {
            if (Thread.interrupted()) {
                // Cleared so the sink can still flush; restored before returning.
                interrupted = true;
            }
            if (stopRequested || interrupted) {
                stoppedEarly = true;
                break;
            }
            if (pacer != null) {
                try {
                    pacer.acquire();
                } catch (InterruptedException e) {
                    interrupted = true;
                    stoppedEarly = true;
                    break;
                }
            }
            long now = nanoTime.getAsLong();
            if (now >= deadline) {
                break;
            }
            GeneratedMessage message = generator.next();
            sink.send(spec.topic(), message);
            tally.add(message);
            if (progress != null && now >= nextTick) {
                double recent = (tally.messages() - lastTickCount) * 1e9 / Math.max(1, now - lastTickTime);
                double average = tally.messages() * 1e9 / Math.max(1, now - start);
                progress.accept(new Progress(tally.messages(), tally.bytes(), Duration.ofNanos(now - start), recent, average));
                lastTickTime = now;
                lastTickCount = tally.messages();
                nextTick = now + intervalNanos;
            }
        }
        sink.flush();
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
        // A stop ends this run only; the runner can run again.
        stopRequested = false;
        return tally.report(spec.topic(), Duration.ofNanos(nanoTime.getAsLong() - start), stoppedEarly);
    }
}
