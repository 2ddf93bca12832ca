package io.tidemark.operations;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;
import io.tidemark.lakehouse.Lakehouse;
import io.tidemark.lakehouse.TidemarkConfig;

/** The catalog settings and the persistent views' derivation, without Spark (SharedCatalogTest runs it for real). */
class CatalogRegistrationTest {

    private static TidemarkConfig metastore(String value) {
        return TidemarkConfig.builder().set(TidemarkConfig.Key.CATALOG_METASTORE, value).build();
    }

    @Test
    void anEmptyMetastoreLeavesSparksOwnConfiguration() {
        assertThat(TidemarkConfig.defaults().metastore()).isEqualTo(new TidemarkConfig.SparkDefault());
        assertThat(CatalogRegistration.sparkConfs(TidemarkConfig.defaults())).isEmpty();
    }

    @Test
    void aDirectoryIsAnEmbeddedDerbyMetastoreWithItsWarehouseBesideIt() {
        assertThat(metastore("/srv/tidemark/metastore/").metastore())
                .isEqualTo(new TidemarkConfig.DerbyDirectory(Path.of("/srv/tidemark/metastore")));
        assertThat(metastore("data/metastore").metastore())
                .isEqualTo(new TidemarkConfig.DerbyDirectory(Path.of("data/metastore").toAbsolutePath().normalize()));
        assertThat(CatalogRegistration.sparkConfs(metastore("/srv/ms"))).containsExactlyInAnyOrderEntriesOf(Map.of(
                "spark.sql.catalogImplementation", "hive",
                "spark.hadoop.javax.jdo.option.ConnectionURL", "jdbc:derby:;databaseName=/srv/ms/metastore_db;create=true",
                "spark.sql.warehouse.dir", "/srv/ms/warehouse",
                "spark.hadoop.hive.hmshandler.retry.attempts", "1"));
    }

    @Test
    void thriftUrisArePassedToHiveUnchanged() {
        assertThat(metastore("thrift://hms-1.example.com:9083, thrift://hms-2.example.com:9083").metastore())
                .isEqualTo(new TidemarkConfig.ThriftUris("thrift://hms-1.example.com:9083,thrift://hms-2.example.com:9083"));
        Map<String, String> confs = CatalogRegistration.sparkConfs(metastore("thrift://10.0.0.7:9083"));
        assertThat(confs).containsExactlyInAnyOrderEntriesOf(Map.of(
                "spark.sql.catalogImplementation", "hive",
                "spark.hadoop.hive.metastore.uris", "thrift://10.0.0.7:9083"));
    }

    @Test
    void malformedMetastoresAreRefusedWhenTheSettingsAreBuilt() {
        for (String bad : List.of("http://hms:9083", "thrift://hms", "thrift://hms:0", "thrift://hms:9083/db", "thrift://:9083",
                "thrift://hms:9083,http://x:1", "s3a://bucket/metastore")) {
            assertThatThrownBy(() -> metastore(bad)).as(bad).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("catalog.metastore").hasMessageContaining("thrift://host:port");
        }
        for (String bad : List.of("/tmp/a;create=false", "/tmp/a:b")) {
            assertThatThrownBy(() -> metastore(bad)).as(bad).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("catalog.metastore").hasMessageContaining("must not contain");
        }
    }

    @Test
    void thePersistentViewsAreTheTemporaryStatementsOfViewsSql() {
        List<CatalogRegistration.View> views = new CatalogRegistration(TidemarkConfig.defaults()).views();
        assertThat(views).extracting(CatalogRegistration.View::name)
                .containsExactly("kpi_final", "kpi_hourly", "kpi_daily", "late_by_day", "late_by_cell_day", "late_by_table_day", "drift_by_day");
        List<String> temporary = Lakehouse.of(TidemarkConfig.defaults()).viewStatements();
        for (int i = 0; i < views.size(); i++) {
            CatalogRegistration.View v = views.get(i);
            assertThat(temporary.get(i)).isEqualTo("CREATE OR REPLACE TEMPORARY VIEW " + v.name() + " AS\n" + v.query());
            assertThat(v.createStatement()).isEqualTo("CREATE OR REPLACE VIEW tidemark." + v.name() + " AS\n" + v.query());
            // Persistent views may name no temporary object: every table they read is qualified.
            assertThat(v.query()).contains("FROM tidemark.").doesNotContain("TEMPORARY");
        }
    }

    @Test
    void catalogLocationsCompareWithLakehousePaths() {
        assertThat(CatalogRegistration.normalize("file:/data/lakehouse/kpi_5m")).isEqualTo("/data/lakehouse/kpi_5m");
        assertThat(CatalogRegistration.normalize("file:///data/lakehouse/kpi_5m/")).isEqualTo("/data/lakehouse/kpi_5m");
        assertThat(CatalogRegistration.normalize("s3a://bucket/lakehouse/kpi_5m")).isEqualTo("s3a://bucket/lakehouse/kpi_5m");
        assertThat(new CatalogRegistration(TidemarkConfig.builder().set(TidemarkConfig.Key.LAKEHOUSE, "s3a://bucket/lh").build())
                .databaseLocation()).isEqualTo("s3a://bucket/lh/_tidemark/tidemark.db");
    }
}
