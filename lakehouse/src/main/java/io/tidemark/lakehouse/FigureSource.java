package io.tidemark.lakehouse;

import java.util.List;
import java.util.Map;
import java.util.ServiceLoader;
import java.util.function.DoubleSupplier;
import java.util.function.Supplier;

import org.apache.spark.sql.SparkSession;

/**
 * Figures the stream's metrics endpoint shows that the stream does not make itself: the operations
 * module contributes the last reconcile's drift, read from {@code reconcile_report}. Sources are
 * found with {@link ServiceLoader} ({@code META-INF/services}), so the speed layer serves them
 * without depending on the module that reads them; with no source on the classpath it serves its
 * own figures only.
 */
public interface FigureSource extends AutoCloseable {

    /**
     * One gauge, with labels or without.
     *
     * @param name       its Prometheus name
     * @param help       its help text
     * @param labelNames its labels' names (empty for a gauge of one sample)
     * @param samples    its current samples, by label values in {@code labelNames} order; a NaN or a missing sample is left out
     */
    record Figure(String name, String help, List<String> labelNames, Supplier<Map<List<String>, Double>> samples) {
        public Figure {
            labelNames = List.copyOf(labelNames);
        }

        /** A gauge of one sample; NaN while not known, when the endpoint leaves the sample out. */
        public static Figure of(String name, String help, DoubleSupplier value) {
            return new Figure(name, help, List.of(), () -> Map.of(List.of(), value.getAsDouble()));
        }
    }

    /** The gauges this source keeps; their values are NaN until {@link #watch} has read something. */
    List<Figure> figures();

    /** Starts keeping the figures current for the lakehouse the stream writes (in the background). */
    void watch(SparkSession spark, Lakehouse lakehouse);

    /** Stops watching. */
    @Override
    void close();

    /** Every source on the classpath, each a new instance. */
    static List<FigureSource> load() {
        return ServiceLoader.load(FigureSource.class).stream().map(ServiceLoader.Provider::get).toList();
    }
}
