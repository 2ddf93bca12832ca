package io.tidemark.lakehouse;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.Map;

import org.junit.jupiter.api.Test;

/** The log store and checkpoint manager a lakehouse on S3 runs with, and the configurations refused. */
class ObjectStorageTest {
    private static final String OURS = ConditionalPutLogStore.class.getName();

    private static TidemarkConfig at(String lakehouse, String checkpoint) {
        return TidemarkConfig.builder().set(TidemarkConfig.Key.LAKEHOUSE, lakehouse).set(TidemarkConfig.Key.CHECKPOINT, checkpoint).build();
    }

    @Test
    void anS3LakehouseGetsTheConditionalPutStoreAndAnS3CheckpointSparksObjectStoreManager() {
        Map<String, String> s = SparkSessions.settings(at("s3a://lake/house", "s3a://lake/checkpoints/stream"), Map.of(), "local[2]", false);
        assertThat(s).containsEntry("spark.delta.logStore.s3a.impl", OURS)
                .containsEntry("spark.sql.streaming.checkpointFileManagerClass", ObjectStorage.CHECKPOINT_MANAGER);
        // a local checkpoint beside an S3 lakehouse keeps Spark's own manager
        assertThat(SparkSessions.settings(at("s3a://lake/house", "/var/tidemark/checkpoint"), Map.of(), "local[2]", false))
                .containsEntry("spark.delta.logStore.s3a.impl", OURS).doesNotContainKey("spark.sql.streaming.checkpointFileManagerClass");
        // local and HDFS paths: nothing of it
        assertThat(SparkSessions.settings(at("/data/lh", "hdfs://nn/cp"), Map.of(), "local[2]", false))
                .doesNotContainKeys("spark.delta.logStore.s3a.impl", "spark.sql.streaming.checkpointFileManagerClass");
    }

    @Test
    void aStoreSafeForTwoWritersThatTheUserNamesIsKept() {
        Map<String, String> dynamo = Map.of("spark.delta.logStore.s3a.impl", "io.delta.storage.S3DynamoDBLogStore",
                "spark.sql.streaming.checkpointFileManagerClass", "com.example.Manager");
        Map<String, String> s = SparkSessions.settings(at("s3a://lake/house", "s3a://lake/cp"), dynamo, "yarn", true);
        assertThat(s).doesNotContainKeys("spark.delta.logStore.s3a.impl", "spark.sql.streaming.checkpointFileManagerClass");
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
                        + ", conditional PUTs) or set it to io.delta.storage.S3DynamoDBLogStore");
        assertThatThrownBy(() -> SparkSessions.settings(at("s3a://lake/house", "/cp"),
                Map.of("spark.delta.logStore.class", "io.delta.storage.HDFSLogStore"), "local[2]", false))
                .isInstanceOf(RequestRefusedException.class).hasMessageContaining("spark.delta.logStore.class=io.delta.storage.HDFSLogStore is not safe");
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
