package io.tidemark.tests;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;

import io.tidemark.tests.KafkaFixtures.Message;

/**
 * A two-partition topic whose event clocks run at different speeds: partition 1's advances
 * {@code slowdown} times slower than partition 0's (its records are closer together in event time),
 * the same number of records each. Records are in
 * event-time order within their partition unless {@code ownLateEvery} puts every n-th one 20 minutes
 * behind its partition's clock; {@code invalidEvery} makes every n-th one unparsable. Deterministic.
 *
 * @param perPartition records per partition
 * @param step event time between consecutive records of partition 0
 */
record SkewedTopic(int perPartition, Instant start, Duration step, int slowdown, int ownLateEvery, int invalidEvery) {

    static final Duration OWN_LATENESS = Duration.ofMinutes(20);

    /** The records of {@code partition}, in the order they are sent. */
    List<Message> partition(int partition) {
        List<Message> out = new ArrayList<>();
        long stepMs = stepMs(partition);
        for (int i = 0; i < perPartition; i++) {
            Instant clock = start.plusMillis(stepMs * i);
            Instant ingest = clock.plusSeconds(1);
            if (invalidEvery > 0 && i % invalidEvery == invalidEvery - 1) {
                out.add(new Message("not json " + partition + "/" + i, ingest));
                continue;
            }
            Instant event = ownLateEvery > 0 && i % ownLateEvery == ownLateEvery - 1 ? clock.minus(OWN_LATENESS) : clock;
            out.add(new Message(KafkaFixtures.event("s" + (i * 7 + partition) % 300, "c" + (i + partition) % 12, event.toString(),
                    (i % 7 + 1) * 0.125), ingest));
        }
        return out;
    }

    /** Event time between consecutive records of {@code partition}. */
    long stepMs(int partition) {
        return partition == 0 ? step.toMillis() : step.toMillis() / slowdown;
    }

    /** Creates the topic with two partitions and sends both partitions' records. */
    void produce(SharedInfrastructure infra, String topic) throws Exception {
        infra.broker.createTopic(topic, 2);
        for (int p = 0; p < 2; p++) {
            KafkaFixtures.send(infra.broker.bootstrapServers(), topic, p, partition(p));
        }
    }

    long records() {
        return 2L * perPartition;
    }

    long invalid() {
        return invalidEvery == 0 ? 0 : 2L * (perPartition / invalidEvery);
    }
}
