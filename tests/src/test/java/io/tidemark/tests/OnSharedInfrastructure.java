package io.tidemark.tests;

import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A test class on the run's one broker and Spark session ({@link SharedInfrastructure}): {@link #infra}
 * is set before any of its {@code @BeforeAll} methods run.
 */
abstract class OnSharedInfrastructure {
    static SharedInfrastructure infra;

    @RegisterExtension
    static final BeforeAllCallback SHARED = c -> infra = SharedInfrastructure.get(c);
}
