package io.tidemark.lakehouse;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.Map;

import org.junit.jupiter.api.Test;
import io.tidemark.testing.LocalSpark;

/** The log store and checkpoint manager a lakehouse on S3 runs with, and the configurations refused. */
class ObjectStorageTest {
    private static final String OURS = ConditionalPutLogStore.class.getName();

    private static TidemarkConfig at(String lakehouse, String checkpoint) {
        return TidemarkConfig.builder().set(TidemarkConfig.Key.LAKEHOUSE, lakehouse).set(TidemarkConfig.Key.CHECKPOINT, checkpoint).build();
    }

    @Test
    void s3TablesGetTheConditionalPutStoreWhereverTheLakehouseIs() {
        assertThat(SparkSessions.settings(at("s3a://lake/house", "s3a://lake/checkpoints/stream"), Map.of(), "local[2]", false))
                .containsEntry("spark.delta.logStore.s3a.impl", OURS);
        // a session of a local lakehouse that reads or writes an S3 table on the side: the same store
        assertThat(SparkSessions.settings(at("/data/lh", "hdfs://nn/cp"), Map.of(), "local[2]", false))
                .containsEntry("spark.delta.logStore.s3a.impl", OURS);
        // beside a local lakehouse, a store the user names is theirs to choose
        assertThat(SparkSessions.settings(at("/data/lh", "/cp"), Map.of("spark.delta.logStore.s3a.impl", "io.delta.storage.S3SingleDriverLogStore"),
                "yarn", true)).doesNotContainKey("spark.delta.logStore.s3a.impl");
    }

    @Test
    void aStreamOnAnS3CheckpointRunsWithSparksObjectStoreCheckpointManager() {
        org.apache.spark.sql.SparkSession spark = LocalSpark.builder("cp").getOrCreate();
        try {
            String key = "spark.sql.streaming.checkpointFileManagerClass";
            ObjectStorage.applyCheckpointManager(spark.conf(), "s3a://lake/cp");
            assertThat(spark.conf().get(key)).isEqualTo(ObjectStorage.CHECKPOINT_MANAGER);
            // the next stream of the session, on a local checkpoint: Spark's default again
            ObjectStorage.applyCheckpointManager(spark.conf(), "/data/cp");
            assertThat(spark.conf().getOption(key).isDefined()).isFalse();
            // a manager the user set is left alone, on S3 and elsewhere
            spark.conf().set(key, "com.example.Manager");
            ObjectStorage.applyCheckpointManager(spark.conf(), "s3a://lake/cp");
            ObjectStorage.applyCheckpointManager(spark.conf(), "/data/cp");
            assertThat(spark.conf().get(key)).isEqualTo("com.example.Manager");
        } finally {
            spark.stop();
        }
    }

    @Test
    void aStoreSafeForTwoWritersThatTheUserNamesIsKept() {
        Map<String, String> dynamo = Map.of("spark.delta.logStore.s3a.impl", "io.delta.storage.S3DynamoDBLogStore");
        assertThat(SparkSessions.settings(at("s3a://lake/house", "s3a://lake/cp"), dynamo, "yarn", true)).doesNotContainKey("spark.delta.logStore.s3a.impl");
        assertThat(SparkSessions.settings(at("s3a://lake/house", "s3a://lake/cp"), Map.of("spark.delta.logStore.class", OURS), "yarn", true))
                .doesNotContainKeys("spark.delta.logStore.s3a.impl", "spark.delta.logStore.class");
    }

    @Test
    void aStoreUnsafeForTwoWritersIsRefusedNamingTheSetting() {
        assertThatThrownBy(() -> SparkSessions.settings(at("s3a://lake/house", "s3a://lake/cp"),
                Map.of("spark.delta.logStore.s3a.impl", "io.delta.storage.S3SingleDriverLogStore"), "yarn", true))
                .isInstanceOf(RequestRefusedException.class)
                .hasMessage("the lakehouse s3a://lake/house is on S3, where the stream and reconcile commit to the same Delta tables from two "
                        + "JVMs, and spark.delta.logStore.s3a.impl=io.delta.storage.S3SingleDriverLogStore is not safe for that (one of two "
                        + "racing commits can be lost without an error): remove the setting (Tidemark then uses " + OURS
                        + ", conditional PUTs) or set it to io.delta.storage.S3DynamoDBLogStore (a store you know to be safe: name it in "
                        + "storage.trusted-log-stores)");
        assertThatThrownBy(() -> SparkSessions.settings(at("s3a://lake/house", "/cp"),
                Map.of("spark.delta.logStore.class", "io.delta.storage.HDFSLogStore"), "local[2]", false))
                .isInstanceOf(RequestRefusedException.class).hasMessageContaining("spark.delta.logStore.class=io.delta.storage.HDFSLogStore is not safe");
    }

    @Test
    void aStoreTheOperatorVouchesForIsAccepted() {
        Map<String, String> given = Map.of("spark.delta.logStore.s3a.impl", "com.example.CommitServiceLogStore");
        TidemarkConfig trusting = TidemarkConfig.builder().set(TidemarkConfig.Key.LAKEHOUSE, "s3a://lake/house")
                .set(TidemarkConfig.Key.TRUSTED_LOG_STORES, "com.example.Other, com.example.CommitServiceLogStore").build();
        assertThat(SparkSessions.settings(trusting, given, "yarn", true)).doesNotContainKey("spark.delta.logStore.s3a.impl");
        TidemarkConfig other = TidemarkConfig.builder().set(TidemarkConfig.Key.LAKEHOUSE, "s3a://lake/house")
                .set(TidemarkConfig.Key.TRUSTED_LOG_STORES, "com.example.Other").build();
        assertThatThrownBy(() -> SparkSessions.settings(other, given, "yarn", true))
                .isInstanceOf(RequestRefusedException.class).hasMessageContaining("CommitServiceLogStore is not safe");
    }

    @Test
    void s3SchemesOtherThanS3aAreRefusedUnlessMappedToS3a() {
        assertThatThrownBy(() -> SparkSessions.settings(at("s3://lake/house", "/cp"), Map.of(), "local[2]", false))
                .isInstanceOf(RequestRefusedException.class)
                .hasMessage("'lakehouse' is s3://lake/house: Tidemark writes S3 through Hadoop's S3A, write s3a://lake/house (or map the scheme "
                        + "to S3A: spark.hadoop.fs.s3.impl=org.apache.hadoop.fs.s3a.S3AFileSystem)");
        assertThatThrownBy(() -> SparkSessions.settings(at("/lh", "s3n://lake/cp"), Map.of(), "local[2]", false))
                .isInstanceOf(RequestRefusedException.class).hasMessageStartingWith("'stream.checkpoint' is s3n://lake/cp:");
        assertThat(SparkSessions.settings(at("s3://lake/house", "/cp"), Map.of("spark.hadoop.fs.s3.impl", "org.apache.hadoop.fs.s3a.S3AFileSystem"),
                "local[2]", false)).containsEntry("spark.delta.logStore.s3.impl", OURS);
    }

    @Test
    void schemes() {
        assertThat(ObjectStorage.scheme("S3A://b/p")).isEqualTo("s3a");
        assertThat(ObjectStorage.scheme("/data/lakehouse")).isEqualTo("file");
        assertThat(ObjectStorage.isS3("s3a://b/p")).isTrue();
        assertThat(ObjectStorage.isS3("file:///tmp/x")).isFalse();
        assertThat(ObjectStorage.isS3("gs://b/p")).isFalse();
    }
}
