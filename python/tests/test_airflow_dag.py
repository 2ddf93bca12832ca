"""The reconcile DAG without Spark: it imports cleanly, its shape, and its request validation.

Run: .venv/bin/python -m pytest python/tests/test_airflow_dag.py   (~30 s; one dag.test that fails fast)
"""

from __future__ import annotations

import datetime as dt
import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # python/: tidemark_airflow

from tidemark_airflow import testing  # noqa: E402

# Airflow reads its configuration when first imported: point it at a throwaway home first.
testing.isolate_airflow_in_process()
sys.path.insert(0, str(testing.DAGS))

import tidemark_reconcile as dagmod  # noqa: E402

UTC = dt.timezone.utc


def progress(watermark: str, batch_id: int = 7) -> dagmod.StreamProgress:
    return dagmod.StreamProgress(batch_id, dt.datetime.fromisoformat(watermark).replace(tzinfo=UTC))


# ------------------------------------------------------------------------------------------------
# Import and shape
# ------------------------------------------------------------------------------------------------

def test_dag_folder_imports_without_errors():
    from airflow.dag_processing.dagbag import DagBag

    # (Airflow 3.3's DagBag has no include_examples argument any more: examples are off by
    # AIRFLOW__CORE__LOAD_EXAMPLES=False, set by isolate_airflow_in_process.)
    bag = DagBag(dag_folder=str(testing.DAGS))
    assert bag.import_errors == {}
    assert list(bag.dags) == ["tidemark_reconcile"]
    dag = bag.dags["tidemark_reconcile"]
    assert dag.catchup is False and dag.max_active_runs == 1
    # TIDEMARK_RECONCILE_SCHEDULE=none in the tests; the default is daily at 01:30 UTC
    assert dagmod.DEFAULT_SCHEDULE == "30 1 * * *"
    assert dag.start_date == dt.datetime(2026, 1, 1, tzinfo=UTC)
    assert dag.get_task("validate_params").downstream_task_ids == {"reconcile_selection"}
    assert dag.get_task("reconcile_selection").downstream_task_ids == {"reconcile_dirty", "check_drift"}
    assert dag.get_task("reconcile_dirty").downstream_task_ids == {"check_drift"}
    for tid in ("reconcile_selection", "reconcile_dirty"):
        t = dag.get_task(tid)
        assert isinstance(t, dagmod.SparkSubmitOperator)
        assert t.retries == 2 and t.retry_delay == dt.timedelta(minutes=5)
        assert t.execution_timeout == dt.timedelta(hours=3)
        assert t.max_active_tis_per_dag == 1
        assert t._conn_id == "spark_default" and t._java_class == "io.tidemark.reconcile.ReconcileJob"
    assert dag.get_task("check_drift").trigger_rule == "none_failed_min_one_success"
    assert set(dag.params) == {"from_date", "to_date", "recent_days", "include_dirty", "drift_threshold", "lakehouse"}
    assert dag.params["recent_days"] == 3 and dag.params["include_dirty"] is True
    assert dag.params["drift_threshold"] == 0.05


def test_dag_file_top_level_is_cheap(tmp_path):
    """Parsing imports neither pyspark nor deltalake nor pyarrow (they load inside tasks)."""
    code = ("import sys; sys.path.insert(0, %r); import tidemark_reconcile; "
            "bad = [m for m in ('pyspark', 'deltalake', 'pyarrow', 'py4j') if m in sys.modules]; "
            "print('HEAVY', bad)") % str(testing.DAGS)
    env = testing.airflow_base_env(tmp_path)
    out = testing.run([sys.executable, "-c", code], env=env, timeout=300).stdout
    assert "HEAVY []" in out


def test_jvm_options_match_the_pom():
    pom = (testing.REPO / "pom.xml").read_text()
    opens = re.search(r"<spark\.jvm\.opens>(.*?)</spark\.jvm\.opens>", pom, re.S).group(1).split()
    assert dagmod.SPARK_JVM_OPENS.split() == opens
    conf = dagmod.spark_conf({"spark.executor.memory": "2g"})
    assert conf["spark.driver.extraJavaOptions"] == conf["spark.executor.extraJavaOptions"] == dagmod.SPARK_JVM_OPENS
    assert conf["spark.executor.memory"] == "2g"
    assert dagmod.spark_env()["SPARK_LOCAL_IP"] == "127.0.0.1" or "SPARK_LOCAL_IP" in __import__("os").environ


# ------------------------------------------------------------------------------------------------
# Validation beyond the schema (plan_reconcile)
# ------------------------------------------------------------------------------------------------

def plan(**params):
    return dagmod.plan_reconcile(params, progress("2026-11-29T05:00:00"))


def test_closed_day_rule_is_the_watermark_of_the_latest_batch():
    # day D is closed iff D+1 00:00 UTC <= watermark
    p = progress("2026-11-29T00:00:00")
    assert dagmod.is_closed(dt.date(2026, 11, 28), p)
    assert not dagmod.is_closed(dt.date(2026, 11, 29), p)
    p = progress("2026-11-28T23:59:59.999999")
    assert not dagmod.is_closed(dt.date(2026, 11, 28), p) and dagmod.is_closed(dt.date(2026, 11, 27), p)
    assert not dagmod.is_closed(dt.date(2020, 1, 1), None)
    assert dagmod.last_closed_day(progress("2026-11-29T05:00:00")) == dt.date(2026, 11, 28)


def test_range_plan_and_arguments():
    p = plan(from_date="2026-11-27", to_date="2026-11-28", recent_days=3, include_dirty=False, drift_threshold=0.1)
    assert p["mode"] == "range"
    assert p["selection_args"] == ["--from", "2026-11-27", "--to", "2026-11-28"]
    assert p["dirty_args"] is None and p["drift_threshold"] == 0.1
    assert p["last_closed_day"] == "2026-11-28"


def test_recent_plan_and_dirty():
    p = plan(recent_days=5, include_dirty=True, drift_threshold=0)
    assert p["mode"] == "recent" and p["selection_args"] == ["--recent", "5"] and p["dirty_args"] == ["--dirty"]
    assert plan(from_date="", to_date=None)["mode"] == "recent"  # empty form fields mean "no range"


@pytest.mark.parametrize("params, message", [
    ({"from_date": "2026-11-28", "to_date": "2026-11-27"}, "to_date 2026-11-27 is before from_date 2026-11-28"),
    ({"from_date": "2026-11-28", "to_date": "2026-11-29"}, "day 2026-11-29 is not closed yet: the stream's watermark is "
                                                           "2026-11-29T05:00:00+00:00 (batch 7)"),
    ({"from_date": "2026-11-29", "to_date": "2026-12-02"}, "days 2026-11-29..2026-12-02 (4 days) are not closed yet"),
    ({"from_date": "2026-11-2", "to_date": "2026-11-28"}, "from_date '2026-11-2' is not a date: expected yyyy-mm-dd"),
    ({"from_date": "2026-11-27", "to_date": "2026-02-30"}, "to_date '2026-02-30' is not a valid calendar date"),
    ({"from_date": "27.11.2026", "to_date": "2026-11-28"}, "from_date '27.11.2026' is not a date"),
    ({"from_date": "2026-11-27"}, "from_date needs to_date too"),
    ({"to_date": "2026-11-27"}, "to_date needs from_date too"),
    ({"recent_days": 0}, "recent_days 0 must be a whole number >= 1"),
    ({"recent_days": True}, "recent_days True must be a whole number >= 1"),
    ({"drift_threshold": -0.1}, "drift_threshold -0.1 must be a number >= 0"),
    ({"drift_threshold": float("nan")}, "drift_threshold nan must be a number >= 0"),
    ({"include_dirty": "yes"}, "include_dirty 'yes' must be true or false"),
])
def test_bad_requests_are_refused_with_a_clear_message(params, message):
    with pytest.raises(dagmod.ReconcileRequestError) as e:
        plan(**params)
    assert message in str(e.value)
    assert "\n" not in str(e.value)


def test_nothing_is_closed_before_the_stream_ran():
    with pytest.raises(dagmod.ReconcileRequestError, match="stream_progress is empty"):
        dagmod.plan_reconcile({"from_date": "2026-11-27", "to_date": "2026-11-27"}, None)


def test_lakehouse_location_must_be_absolute():
    with pytest.raises(dagmod.ReconcileRequestError, match="no lakehouse given"):
        dagmod.check_lakehouse_location(None)
    with pytest.raises(dagmod.ReconcileRequestError, match="is relative"):
        dagmod.check_lakehouse_location("data/lakehouse")
    assert dagmod.check_lakehouse_location(" /x/lake/ ") == "/x/lake/"
    assert dagmod.check_lakehouse_location("s3://bucket/lake") == "s3://bucket/lake"


def test_params_schema_rejects_malformed_dates():
    """The JSON schema (checked by Airflow when a run is triggered) already refuses malformed input."""
    from airflow.sdk.exceptions import ParamValidationError

    dag = dagmod.tidemark_reconcile()  # a fresh DAG object from the decorated function
    bad = [("from_date", "2026-1-05", "is not a .date."), ("to_date", "2026-02-30", "is not a 'date'"),
           ("to_date", 20261128, "is not of type"), ("recent_days", 0, "less than the minimum"),
           ("drift_threshold", -1, "less than the minimum"), ("include_dirty", "no", "is not of type 'boolean'")]
    for name, value, why in bad:
        with pytest.raises(ParamValidationError, match=why):
            dag.params.get_param(name).resolve(value)
    for name, value in (("from_date", "2026-11-27"), ("to_date", None), ("drift_threshold", 0), ("recent_days", 7)):
        assert dag.params.get_param(name).resolve(value) == value


# ------------------------------------------------------------------------------------------------
# Reading the closed-day boundary with deltalake; dag.test refusing an open day
# ------------------------------------------------------------------------------------------------

def write_stream_progress(lakehouse: Path, rows: list[tuple[int, str, str]]) -> None:
    """A stream_progress table with the columns the check reads (batch_id, watermark, next_watermark, finished_at)."""
    import pyarrow as pa
    from deltalake import write_deltalake

    ts = pa.timestamp("us", tz="UTC")
    parse = lambda s: dt.datetime.fromisoformat(s).replace(tzinfo=UTC)  # noqa: E731
    table = pa.table({
        "batch_id": pa.array([r[0] for r in rows], pa.int64()),
        "watermark": pa.array([parse(r[1]) for r in rows], ts),
        "next_watermark": pa.array([parse(r[2]) for r in rows], ts),
        "finished_at": pa.array([parse(r[2]) for r in rows], ts),
    })
    write_deltalake(str(lakehouse / "stream_progress"), table, mode="append")


def test_watermark_is_read_from_the_highest_batch(tmp_path):
    # Appended out of order; batch 12 is the latest. Its next_watermark (the rule ReconcileJob uses too)
    # closes the 28th; its watermark alone would close only up to the 27th.
    write_stream_progress(tmp_path, [(12, "2026-11-28T20:00:00", "2026-11-29T01:00:00"),
                                     (3, "2026-11-20T00:00:00", "2026-11-21T00:00:00"),
                                     (11, "2026-11-28T10:00:00", "2026-11-28T20:00:00")])
    p = dagmod.read_stream_progress(str(tmp_path))
    assert p == dagmod.StreamProgress(12, dt.datetime(2026, 11, 29, 1, tzinfo=UTC))
    assert dagmod.last_closed_day(p) == dt.date(2026, 11, 28)
    with pytest.raises(dagmod.ReconcileRequestError, match="no Delta table at .*/nothing/stream_progress"):
        dagmod.read_stream_progress(str(tmp_path / "nothing"))


def test_dag_test_refuses_an_open_day_before_any_spark(tmp_path):
    write_stream_progress(tmp_path / "lake", [(4, "2026-11-28T15:00:00", "2026-11-28T20:00:00")])
    jar = tmp_path / "jobs.jar"
    jar.write_bytes(b"not used: the run stops before spark-submit")
    home = tmp_path / "airflow"
    home.mkdir()
    env = testing.airflow_base_env(home)
    env["TIDEMARK_JOBS_JAR"] = str(jar)
    testing.migrate_db(env)
    result = testing.dag_test(env, {"from_date": "2026-11-27", "to_date": "2026-11-28",
                                    "lakehouse": str(tmp_path / "lake")}, timeout=600)
    assert result.state == "failed", result.output[-4000:]
    assert result.tasks["validate_params"] == "failed"
    assert result.tasks["reconcile_selection"] == "upstream_failed"
    assert "refused: day 2026-11-28 is not closed yet: the stream's watermark is 2026-11-28T20:00:00+00:00 (batch 4)" \
        in result.output
    assert "spark-submit" not in result.output.replace("spark-submit-jar", "")


# ------------------------------------------------------------------------------------------------
# The drift check over reconcile_report (a hand-written report table: no Spark)
# ------------------------------------------------------------------------------------------------

RUN_A = "reconcile-20261129T010000Z-0000000a"
RUN_B = "reconcile-20261129T020000Z-0000000b"


def write_report(lakehouse: Path, rows: list[dict]) -> None:
    """reconcile_report with the table's column names and types (sql/tables.sql)."""
    import decimal

    import pyarrow as pa
    from deltalake import write_deltalake

    gb = pa.decimal128(38, 9)
    schema = pa.schema([
        ("run_id", pa.string()), ("run_started_at", pa.timestamp("us", tz="UTC")), ("row_kind", pa.string()),
        ("window_start", pa.timestamp("us", tz="UTC")), ("window_end", pa.timestamp("us", tz="UTC")),
        ("cell_site_id", pa.string()), ("stream_count", pa.int64()), ("batch_count", pa.int64()),
        ("stream_gb", gb), ("batch_gb", gb), ("gb_drift", gb), ("gb_drift_rel", pa.float64()),
        ("stream_subscribers", pa.int64()), ("batch_subscribers", pa.int64()), ("subscribers_drift", pa.int64()),
        ("subscribers_drift_rel", pa.float64()), ("late_records", pa.int64()), ("windows_changed", pa.int64()),
        ("event_date", pa.date32()),
    ])
    q = lambda x: None if x is None else decimal.Decimal(str(x)).quantize(decimal.Decimal("0.000000001"))  # noqa: E731
    full = []
    for r in rows:
        row = {f.name: None for f in schema}
        row.update(r)
        for k in ("stream_gb", "batch_gb", "gb_drift"):
            row[k] = q(row[k])
        row["run_started_at"] = dt.datetime.fromisoformat(row["run_started_at"])
        row["event_date"] = dt.date.fromisoformat(row["event_date"])
        full.append(row)
    write_deltalake(str(lakehouse / "reconcile_report"), pa.Table.from_pylist(full, schema=schema),
                    partition_by=["event_date"], mode="append")


def summary_row(run, day, stream_count, batch_count, stream_gb, batch_gb, late, changed, started="2026-11-29T01:00:00+00:00"):
    drift = round(batch_gb - stream_gb, 9)
    return dict(run_id=run, run_started_at=started, row_kind="summary", event_date=day, stream_count=stream_count,
                batch_count=batch_count, stream_gb=stream_gb, batch_gb=batch_gb, gb_drift=drift,
                gb_drift_rel=None if batch_gb == 0 else drift / batch_gb, late_records=late, windows_changed=changed)


def window_row(run, day, cell, drift_gb, batch_gb, late, started="2026-11-29T01:00:00+00:00"):
    return dict(run_id=run, run_started_at=started, row_kind="window", event_date=day, cell_site_id=cell,
                stream_count=10, batch_count=10 + late, stream_gb=batch_gb - drift_gb, batch_gb=batch_gb,
                gb_drift=drift_gb, late_records=late)


def test_drift_summary_flags_days_over_the_threshold_with_their_worst_cells(tmp_path):
    write_report(tmp_path, [
        summary_row(RUN_A, "2026-11-26", 1000, 1000, 50.0, 50.0, 0, 0),
        summary_row(RUN_A, "2026-11-27", 900, 1000, 45.0, 50.0, 100, 30),        # 10 % drift
        window_row(RUN_A, "2026-11-27", "cell-a", 1.0, 5.0, 20),
        window_row(RUN_A, "2026-11-27", "cell-a", 2.0, 6.0, 30),
        window_row(RUN_A, "2026-11-27", "cell-b", 0.5, 4.0, 10),
        window_row(RUN_A, "2026-11-27", "cell-c", -0.1, 4.0, 0),
        summary_row(RUN_B, "2026-11-27", 1000, 1000, 50.0, 50.0, 100, 0, "2026-11-29T02:00:00+00:00"),  # other run
    ])
    runs = [{"selection": "selection", "run_ids": [RUN_A], "days": [
        {"run_id": RUN_A, "day": "2026-11-25", "status": "no data"},
        {"run_id": RUN_A, "day": "2026-11-26", "status": "reconciled"},
        {"run_id": RUN_A, "day": "2026-11-27", "status": "reconciled"},
        {"run_id": RUN_A, "day": "2026-11-28", "status": "reconciled"}]}]
    s = dagmod.drift_summary(str(tmp_path), runs, 0.05)
    assert [d["day"] for d in s["days"]] == ["2026-11-26", "2026-11-27"]  # RUN_B is not this DAG run's
    d26, d27 = s["days"]
    assert d26["drift"] == 0 and not d26["over_threshold"] and "worst_cells" not in d26
    assert d27["drift"] == pytest.approx(0.1) and d27["over_threshold"]
    assert [c["cell_site_id"] for c in d27["worst_cells"]] == ["cell-a", "cell-b", "cell-c"]
    assert d27["worst_cells"][0]["gb_drift"] == pytest.approx(3.0) and d27["worst_cells"][0]["late_records"] == 50
    assert d27["worst_cells"][0]["share_of_drift"] == pytest.approx(0.6)
    assert s["over_threshold"] == ["2026-11-27"] and s["no_data_days"] == ["2026-11-25"]
    assert s["missing_report"] == [{"run_id": RUN_A, "day": "2026-11-28"}] and not s["ok"]
    text = dagmod.describe_drift(s)
    assert "2026-11-27: drift +10.000%" in text and "OVER THRESHOLD" in text and "cell cell-a: +3.000000 GB" in text
    assert "2026-11-28: reconciled by " + RUN_A + " but reconcile_report has no summary row" in text

    assert dagmod.drift_summary(str(tmp_path), runs[:0], 0.05)["days"] == []
    with pytest.raises(ValueError, match="unexpected reconcile run id"):
        dagmod.drift_summary(str(tmp_path), [{"run_ids": ["x' OR '1'='1"]}], 0.05)


def test_drift_summary_edge_cases(tmp_path):
    write_report(tmp_path, [
        summary_row(RUN_A, "2026-11-27", 5, 0, 1.0, 0.0, 0, 1),   # truth is empty, the stream was not: undefined
        summary_row(RUN_A, "2026-11-28", 950, 1000, 50.0, 50.0, 50, 5),  # volume equal, records 5 % off
    ])
    runs = [{"selection": "selection", "run_ids": [], "days": [],  # no run id seen: found by start time
             "started": "2026-11-29T00:59:00+00:00", "finished": "2026-11-29T01:05:00+00:00"}]
    s = dagmod.drift_summary(str(tmp_path), runs, 0.05)
    assert s["run_ids"] == [RUN_A] and "by start time" in s["notes"][0]
    d27, d28 = s["days"]
    assert d27["drift"] is None and d27["over_threshold"]
    assert d28["drift"] == pytest.approx(0.05) and not d28["over_threshold"]  # exceeds, not equals
    assert dagmod.drift_summary(str(tmp_path), runs, 0.049)["over_threshold"] == ["2026-11-27", "2026-11-28"]
