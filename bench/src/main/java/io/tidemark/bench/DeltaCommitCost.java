package io.tidemark.bench;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;

import io.tidemark.lakehouse.SparkSessions;
import io.tidemark.lakehouse.TidemarkConfig;

/**
 * What one Delta commit costs on this machine, by kind of write: the fixed cost that dominates a
 * micro-batch. Each kind runs {@code n} times on its own table; prints the median and p90.
 *
 * <p>{@code bench/run commit-cost [n] [snapshotPartitions]}
 */
public final class DeltaCommitCost {
    public static void main(String[] args) throws Exception {
        int n = args.length > 0 ? Integer.parseInt(args[0]) : 20;
        Path dir = Files.createTempDirectory("delta-commit-cost");
        SparkSession spark = SparkSessions.create(TidemarkConfig.defaults(), "delta-commit-cost");
        if (args.length > 1) {
            spark.conf().set("spark.databricks.delta.snapshotPartitions", args[1]);
        }
        System.out.println("snapshotPartitions = " + spark.conf().get("spark.databricks.delta.snapshotPartitions"));
        Dataset<Row> one = spark.sql("SELECT 1L AS id, current_timestamp() AS ts");
        Dataset<Row> thousand = spark.sql("SELECT id, CAST(id % 50 AS INT) AS w, repeat('x', 100) AS payload FROM range(1000)");

        time("append, 1 row, blind", n, i -> one.write().format("delta").mode("append").save(dir.resolve("a").toString()));
        time("append, 1 row, txnAppId/txnVersion", n, i -> one.write().format("delta").mode("append")
                .option("txnAppId", "bench").option("txnVersion", i).save(dir.resolve("b").toString()));
        thousand.write().format("delta").partitionBy("w").save(dir.resolve("c").toString());
        time("replaceWhere overwrite of 1000 rows (data column)", n, i -> thousand.write().format("delta").mode("overwrite")
                .option("replaceWhere", "id < 1000").option("txnAppId", "bench").option("txnVersion", i).save(dir.resolve("c").toString()));
        thousand.write().format("delta").save(dir.resolve("d").toString());
        thousand.createOrReplaceTempView("src");
        time("MERGE upsert of 1000 rows", n, i -> spark.sql("MERGE INTO delta.`" + dir.resolve("d") + "` t USING src s ON t.id = s.id "
                + "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"));
        spark.stop();
    }

    interface Body {
        void run(int i) throws Exception;
    }

    static void time(String what, int n, Body body) throws Exception {
        List<Long> ms = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            long t0 = System.nanoTime();
            body.run(i);
            ms.add((System.nanoTime() - t0) / 1_000_000);
        }
        List<Long> sorted = new ArrayList<>(ms);
        sorted.sort(null);
        System.out.printf("%-55s median %5d ms  p90 %5d ms  (first %d ms)%n", what, sorted.get(n / 2), sorted.get((int) (n * 0.9)), ms.get(0));
    }
}
