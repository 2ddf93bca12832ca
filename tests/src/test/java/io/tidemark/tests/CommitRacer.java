package io.tidemark.tests;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Collectors;

import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;

/**
 * One of the two JVMs of {@link ObjectStoreCommitRaceTest}: commits {@code rounds} times to a Delta
 * table on S3, each commit gated against the other JVM's ({@link GatedLogStore}). Writer {@code a}
 * appends a row per round to its partition, as the stream appends; writer {@code b} replaces its
 * partition with the round's row, as reconcile replaces a day. Each commit carries its writer and
 * round as Delta's transaction id ({@code txnAppId}/{@code txnVersion}), so the log says which
 * commits it holds. Prints "committed W R" after each commit; {@code a} then prints the table's rows.
 * Spark settings (S3A, the log store) arrive as {@code spark.*} system properties.
 */
public final class CommitRacer {
    public static void main(String[] args) throws Exception {
        String table = args[0];
        String writer = args[1];
        int rounds = Integer.parseInt(args[2]);
        Path gate = Path.of(args[3]);
        SparkSession spark = SparkSession.builder().master("local[1]").appName("commit-racer-" + writer)
                .config("spark.ui.enabled", "false").config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
                .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
                .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
                .config("spark.sql.shuffle.partitions", "1").config("spark.databricks.delta.snapshotPartitions", "1")
                .getOrCreate();
        for (int round = 0; round < rounds; round++) {
            var row = spark.sql("SELECT '" + writer + "' AS writer, " + round + " AS round").write().format("delta")
                    .option("txnAppId", writer).option("txnVersion", String.valueOf(round));
            if (writer.equals("a")) {
                row.mode("append").save(table);
            } else {
                row.mode("overwrite").option("replaceWhere", "writer = '" + writer + "'").save(table);
            }
            System.out.println("committed " + writer + " " + round);
        }
        Files.createFile(gate.resolve("done." + writer));
        if (writer.equals("a")) {
            while (!Files.exists(gate.resolve("done.b"))) {
                Thread.sleep(50);
            }
            List<Row> rows = spark.read().format("delta").load(table).orderBy("writer", "round").collectAsList();
            System.out.println("table " + rows.stream().map(r -> r.getString(0) + r.getInt(1)).collect(Collectors.joining(",")));
        }
        spark.stop();
    }
}
