package io.tidemark.launcher;

import org.apache.spark.util.ShutdownHookManager;

import scala.runtime.BoxedUnit;

/**
 * Shutdown work that must run before Spark stops its context: registered with Spark's own
 * shutdown-hook manager, which runs hooks by priority (higher first) and stops the SparkContext at
 * priority 50. A plain JVM hook would race with it and see the context die under a running batch.
 */
final class SparkShutdown {
    /** Above SparkContext's 50, so the query stops while Spark still runs. */
    static final int BEFORE_SPARK_CONTEXT = 75;

    private SparkShutdown() {
    }

    static Object register(Runnable hook) {
        return ShutdownHookManager.addShutdownHook(BEFORE_SPARK_CONTEXT, () -> {
            hook.run();
            return BoxedUnit.UNIT;
        });
    }

    static void unregister(Object ref) {
        ShutdownHookManager.removeShutdownHook(ref);
    }
}
