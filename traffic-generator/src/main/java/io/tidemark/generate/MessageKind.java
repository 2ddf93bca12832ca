package io.tidemark.generate;

import java.util.Arrays;
import java.util.List;

/**
 * What a generated message is, in the terms of the {@link TrafficProfile} that made it: the network
 * profile's {@link GeneratedMessage.Kind} or the payments profile's {@link PaymentKind}. Each profile
 * has its own enum because their invalid messages differ (the network's CHECKs are about
 * {@code volume_gb} and blank ids, the payments' about amount, status and country).
 */
public sealed interface MessageKind permits GeneratedMessage.Kind, PaymentKind {

    /** The kind's name, e.g. {@code ON_TIME}, {@code TRUNCATED_JSON}. */
    String name();

    /** Its position in {@link TrafficProfile#kinds()} of its profile. */
    int ordinal();

    /** The profile whose messages this kind describes. */
    TrafficProfile profile();

    /** Relative frequency among the profile's invalid messages (0 for valid kinds). */
    double invalidWeight();

    /** Whether a correct pipeline must accept this message into raw_events: on time or late. */
    default boolean isValid() {
        return this == profile().onTime() || isLate();
    }

    /** Valid, but generated behind the event clock by the late delay: meant to miss the watermark. */
    default boolean isLate() {
        return this == profile().late();
    }

    /** This kind's expected share of its profile's invalid messages written in {@code format}; 0 for a kind the format does not have. */
    default double shareOfInvalid(EventFormat format) {
        if (!format.writes(this)) {
            return 0;
        }
        double total = 0;
        for (MessageKind k : profile().kinds()) {
            total += format.writes(k) ? k.invalidWeight() : 0;
        }
        return invalidWeight() / total;
    }

    /** The invalid ones of {@code kinds} that {@code format} writes, in their order. */
    static <K extends MessageKind> List<K> invalid(K[] kinds, EventFormat format) {
        return Arrays.stream(kinds).filter(k -> !k.isValid() && format.writes(k)).toList();
    }
}
