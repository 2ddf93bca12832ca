"""Request validation and planning, the closed days as the stream records them, reconcile run ids.

Package tidemark_airflow directly: no Airflow run, no Spark (deltalake writes a small stream_progress).
Run: .venv/bin/python -m pytest python/tests/test_reconcile_plan.py   (~2 s)
"""

from __future__ import annotations

import datetime as dt
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # python/: tidemark_airflow

from tidemark_airflow import lakehouse  # noqa: E402
from tidemark_airflow.reconcile_plan import (  # noqa: E402
    MIN_VACUUM_RETENTION_HOURS, ReconcileRequestError, StreamProgress, check_lakehouse_location, check_pipeline,
    days_between, plan_maintain, plan_reconcile)
from tidemark_airflow.run_ids import RUN_ID, attempt_run_id, dag_run_prefix, parse_attempt  # noqa: E402

UTC = dt.timezone.utc
LATEST = StreamProgress(7, dt.date(2026, 11, 28))


def plan(**params):
    return plan_reconcile(params, LATEST)


# ------------------------------------------------------------------------------------------------
# Planning
# ------------------------------------------------------------------------------------------------

def test_a_day_is_closed_iff_it_is_at_most_the_recorded_last_closed_day():
    assert LATEST.is_closed(dt.date(2026, 11, 28)) and LATEST.is_closed(dt.date(1970, 1, 1))
    assert not LATEST.is_closed(dt.date(2026, 11, 29))
    assert not StreamProgress(3, None).is_closed(dt.date(1969, 12, 31))  # null: no day closed
    assert not StreamProgress(3, None, recorded=False).is_closed(dt.date(2000, 1, 1))


def test_range_plan_and_arguments():
    p = plan(from_date="2026-11-27", to_date="2026-11-28", recent_days=3, include_dirty=False,
             pipeline="/srv/tidemark/network.sql")
    assert p["mode"] == "range"
    assert p["selection_args"] == ["--from", "2026-11-27", "--to", "2026-11-28"]
    assert p["dirty_args"] is None and p["pipeline"] == "/srv/tidemark/network.sql"
    assert "drift_threshold" not in p  # the pipeline's: the job writes it with its verdict
    assert p["last_closed_day"] == "2026-11-28" and p["progress_batch_id"] == 7
    assert days_between(p["from_date"], p["to_date"]) == ["2026-11-27", "2026-11-28"]


def test_recent_plan_and_dirty():
    p = plan(recent_days=5, include_dirty=True)
    assert p["mode"] == "recent" and p["selection_args"] == ["--recent", "5"] and p["dirty_args"] == ["--dirty"]
    assert p["pipeline"] is None  # the jobs' own pipeline setting
    assert plan(from_date="", to_date=None)["mode"] == "recent"  # empty form fields mean "no range"


def test_recent_days_are_left_to_the_job_even_without_a_recorded_decision():
    """The job picks the most recent closed days itself and refuses (exit 2) when it cannot."""
    for progress in (None, StreamProgress(3, None), StreamProgress(3, None, recorded=False)):
        p = plan_reconcile({"recent_days": 2}, progress)
        assert p["selection_args"] == ["--recent", "2"] and p["last_closed_day"] is None


@pytest.mark.parametrize("params, message", [
    ({"from_date": "2026-11-28", "to_date": "2026-11-27"}, "to_date 2026-11-27 is before from_date 2026-11-28"),
    ({"from_date": "2026-11-28", "to_date": "2026-11-29"}, "day 2026-11-29 is not closed yet: the last closed day is "
                                                           "2026-11-28 (stream_progress batch 7)"),
    ({"from_date": "2026-11-29", "to_date": "2026-12-02"}, "days 2026-11-29..2026-12-02 (4 days) are not closed yet"),
    ({"from_date": "2026-11-2", "to_date": "2026-11-28"}, "from_date '2026-11-2' is not a date: expected yyyy-mm-dd"),
    ({"from_date": "2026-11-27", "to_date": "2026-02-30"}, "to_date '2026-02-30' is not a valid calendar date"),
    ({"from_date": "27.11.2026", "to_date": "2026-11-28"}, "from_date '27.11.2026' is not a date"),
    ({"from_date": "2026-11-27"}, "from_date needs to_date too"),
    ({"to_date": "2026-11-27"}, "to_date needs from_date too"),
    ({"recent_days": 0}, "recent_days 0 must be a whole number >= 1"),
    ({"recent_days": True}, "recent_days True must be a whole number >= 1"),
    ({"pipeline": "pipelines/network.sql"}, "pipeline 'pipelines/network.sql' is relative: give an absolute path"),
    ({"pipeline": 3}, "pipeline 3 must be a pipeline file or a shipped pipeline's name"),
    ({"include_dirty": "yes"}, "include_dirty 'yes' must be true or false"),
])
def test_bad_requests_are_refused_with_a_clear_message(params, message):
    with pytest.raises(ReconcileRequestError) as e:
        plan(**params)
    assert message in str(e.value)
    assert "\n" not in str(e.value)


REMOVED_THRESHOLD = ("drift_threshold is no longer a DAG parameter: the threshold is the pipeline's (the "
                     "drift_threshold option of its event table, default 0.01); set it in the pipeline file "
                     "(the DAG param pipeline names it)")


@pytest.mark.parametrize("value", [0.05, 0, None, "0.2", -1])
def test_the_removed_drift_threshold_is_refused_naming_the_pipeline_option(value):
    """One drift rule, the pipeline's: a run that still passes drift_threshold (any value) is refused, before
    anything else is checked."""
    for params in ({"drift_threshold": value}, {"drift_threshold": value, "from_date": "2026-11-29", "to_date": "x"}):
        with pytest.raises(ReconcileRequestError) as e:
            plan(**params)
        assert str(e.value) == REMOVED_THRESHOLD


def test_the_pipeline_is_a_shipped_name_or_an_absolute_file():
    assert check_pipeline(None) is check_pipeline("") is check_pipeline("  ") is None
    assert check_pipeline("network") == "network"
    assert check_pipeline(" /srv/p.sql ") == "/srv/p.sql"
    assert check_pipeline("s3://bucket/p.sql") == "s3://bucket/p.sql"
    for relative in ("p.sql", "./p.sql", "pipelines/network"):
        with pytest.raises(ReconcileRequestError, match="is relative"):
            check_pipeline(relative)


@pytest.mark.parametrize("progress, message", [
    (None, "the stream has not recorded any micro-batch yet (stream_progress is empty)"),
    (StreamProgress(3, None), "the stream's latest batch (3) records no closed day (last_closed_day is null); "
                              "if days should be closed by now, the stream must run one more batch"),
    (StreamProgress(3, None, recorded=False), "stream_progress has no last_closed_day column (the lakehouse was "
                                              "written by an older stream): the stream must run one more batch"),
])
def test_a_range_is_refused_until_the_stream_has_recorded_a_closed_day(progress, message):
    with pytest.raises(ReconcileRequestError) as e:
        plan_reconcile({"from_date": "1970-01-01", "to_date": "1970-01-01"}, progress)
    assert str(e.value).startswith("day 1970-01-01 is not closed yet: ") and message in str(e.value)


def test_maintain_plan_and_arguments():
    assert MIN_VACUUM_RETENTION_HOURS == 168  # Delta's 7 days; the DAG never passes --force
    assert plan_maintain({}) == {"maintain": True, "vacuum": True, "vacuum_retention_hours": 168,
                                 "maintain_args": ["maintain.vacuum-retention=168 hours"]}
    assert plan_maintain({"vacuum_retention_hours": 720})["maintain_args"] == ["maintain.vacuum-retention=720 hours"]
    assert plan_maintain({"vacuum": False})["maintain_args"] == ["--no-vacuum"]
    off = plan_maintain({"maintain": False, "vacuum_retention_hours": 336})
    assert off["maintain_args"] is None and off["maintain"] is False  # the task skips
    for params in ({}, {"vacuum": False}, {"vacuum_retention_hours": 10_000}):
        assert "--force" not in plan_maintain(params)["maintain_args"]


@pytest.mark.parametrize("params, message", [
    ({"vacuum_retention_hours": 167}, "vacuum_retention_hours 167 is below Delta's safety minimum of 168 hours (7 days)"),
    ({"vacuum_retention_hours": 1, "vacuum": False}, "vacuum_retention_hours 1 is below Delta's safety minimum of 168"),
    ({"vacuum_retention_hours": 0}, "vacuum_retention_hours 0 must be a whole number >= 1"),
    ({"vacuum_retention_hours": 168.5}, "vacuum_retention_hours 168.5 must be a whole number >= 1"),
    ({"vacuum_retention_hours": True}, "vacuum_retention_hours True must be a whole number >= 1"),
    ({"maintain": "yes"}, "maintain 'yes' must be true or false"),
    ({"vacuum": 0}, "vacuum 0 must be true or false"),
])
def test_bad_maintain_requests_are_refused_with_a_clear_message(params, message):
    with pytest.raises(ReconcileRequestError) as e:
        plan_maintain(params)
    assert message in str(e.value)
    assert "\n" not in str(e.value)


def test_lakehouse_location_must_be_absolute():
    with pytest.raises(ReconcileRequestError, match="no lakehouse given"):
        check_lakehouse_location(None)
    with pytest.raises(ReconcileRequestError, match="is relative"):
        check_lakehouse_location("data/lakehouse")
    assert check_lakehouse_location(" /x/lake/ ") == "/x/lake/"
    assert check_lakehouse_location("s3://bucket/lake") == "s3://bucket/lake"


# ------------------------------------------------------------------------------------------------
# Reading the stream's decision with deltalake
# ------------------------------------------------------------------------------------------------

def write_stream_progress(lake: Path, rows: list[tuple], *, with_last_closed_day: bool = True) -> None:
    """stream_progress with the columns the DAG reads: (batch_id, finished_at[, last_closed_day])."""
    import pyarrow as pa
    from deltalake import write_deltalake

    columns = {
        "batch_id": pa.array([r[0] for r in rows], pa.int64()),
        "finished_at": pa.array([dt.datetime.fromisoformat(r[1]).replace(tzinfo=UTC) for r in rows],
                                pa.timestamp("us", tz="UTC")),
    }
    if with_last_closed_day:
        columns["last_closed_day"] = pa.array([None if r[2] is None else dt.date.fromisoformat(r[2]) for r in rows],
                                              pa.date32())
    write_deltalake(str(lake / "stream_progress"), pa.table(columns), mode="append")


def test_the_decision_is_read_from_the_highest_batch(tmp_path):
    # Appended out of order; batch 12 is the latest, and of its two rows (a batch retried after a crash,
    # say) the one that finished last counts.
    write_stream_progress(tmp_path, [(12, "2026-11-29T01:00:00", "2026-11-27"), (3, "2026-11-21T00:00:00", None),
                                     (12, "2026-11-29T01:05:00", "2026-11-28"), (11, "2026-11-28T20:00:00", "2026-11-27")])
    assert lakehouse.read_stream_progress(str(tmp_path)) == StreamProgress(12, dt.date(2026, 11, 28), True)
    with pytest.raises(ReconcileRequestError, match="no Delta table at .*/nothing/stream_progress"):
        lakehouse.read_stream_progress(str(tmp_path / "nothing"))


def test_null_and_missing_last_closed_day(tmp_path):
    write_stream_progress(tmp_path / "null", [(1, "2026-11-29T01:00:00", None)])
    assert lakehouse.read_stream_progress(str(tmp_path / "null")) == StreamProgress(1, None, True)
    write_stream_progress(tmp_path / "old", [(5, "2026-11-29T01:00:00")], with_last_closed_day=False)
    assert lakehouse.read_stream_progress(str(tmp_path / "old")) == StreamProgress(5, None, False)


# ------------------------------------------------------------------------------------------------
# Reconcile run ids (ReconcileJob --run-id)
# ------------------------------------------------------------------------------------------------

TASKS = ("reconcile_selection", "reconcile_dirty")


def test_run_ids_are_the_dag_run_task_and_try():
    dag_run = "manual__2026-11-29T16:00:51.492567+00:00"
    rid = attempt_run_id(dag_run, "reconcile_selection", 2)
    assert rid == f"{dag_run}.reconcile_selection.2" and RUN_ID.match(rid)
    assert parse_attempt(rid, dag_run_prefix(dag_run), TASKS) == ("reconcile_selection", 2)
    assert parse_attempt(attempt_run_id("manual__other", "reconcile_dirty", 1), dag_run_prefix(dag_run), TASKS) is None
    # a DAG run whose id extends this one's is not one of its attempts
    assert parse_attempt(attempt_run_id(dag_run + ".reconcile_dirty", "reconcile_dirty", 1), dag_run, TASKS) is None


@pytest.mark.parametrize("dag_run", ["my run/with spaces & 'quotes'", "_leading", "x" * 400, "ünïcode", "a'b", "a b"])
def test_unsafe_dag_run_ids_are_made_safe_and_stay_distinct(dag_run):
    rid = attempt_run_id(dag_run, "reconcile_dirty", 13)
    assert RUN_ID.match(rid) and len(rid) <= 200 and rid.endswith(".reconcile_dirty.13")
    assert parse_attempt(rid, dag_run_prefix(dag_run), TASKS) == ("reconcile_dirty", 13)
    # a'b, a b and a_b would all read a_b: the hash of the original keeps them apart
    assert len({attempt_run_id(r, "t", 1) for r in ("a'b", "a b", "a_b")}) == 3
