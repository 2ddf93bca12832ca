package io.tidemark.pipeline;

import static org.apache.spark.sql.functions.udf;

import org.apache.spark.sql.Column;
import org.apache.spark.sql.api.java.UDF0;
import org.apache.spark.sql.types.DataTypes;

/**
 * A value that changes with every micro-batch (its id, its watermark) as a Spark column that keeps
 * the value out of the code Spark generates.
 *
 * <p>Spark writes a numeric literal into the Java source of each whole-stage-codegen stage that uses
 * it, and caches compiled stages by their source: a literal that differs per batch makes every batch
 * compile (Janino) and warm up (JIT) those stages anew. This column is a call of a function Spark
 * holds as a reference object, so the generated source, and with it the compiled and JIT-ed code, is
 * the same for every batch. It is not foldable, so the optimizer cannot turn it back into a literal;
 * the cost is one call per row.
 */
public final class BatchConstant {
    private BatchConstant() {
    }

    /** {@code value} as a BIGINT column. */
    public static Column of(long value) {
        return udf((UDF0<Long>) () -> value, DataTypes.LongType).asNonNullable().apply();
    }
}
