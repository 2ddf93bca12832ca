package io.tidemark.generate;

/** Producing generated traffic failed; the message names the target, how far it got, and the cause. */
public class TrafficProductionException extends RuntimeException {

    public TrafficProductionException(String message, Throwable cause) {
        super(message, cause);
    }
}
