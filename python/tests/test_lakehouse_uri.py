"""Which URI the DAG's reader hands to delta-rs for a lakehouse the JVM jobs write (pure, no Spark)."""

from tidemark_airflow.lakehouse import delta_rs_uri, table_uri


def test_an_s3a_lakehouse_is_read_as_s3():
    assert delta_rs_uri(table_uri("s3a://analytics/tidemark/lakehouse/", "raw_events")) == "s3://analytics/tidemark/lakehouse/raw_events"
    assert delta_rs_uri("S3A://b/p") == "s3://b/p"


def test_other_uris_are_read_as_they_are():
    for uri in ["/data/lakehouse/raw_events", "file:///data/lh/raw_events", "s3://b/p", "gs://b/p", "abfss://c@a.dfs.core.windows.net/p"]:
        assert delta_rs_uri(uri) == uri
