"""The drift check over reconcile_report: package tidemark_airflow directly, on a hand-written report.

No Airflow run, no Spark: deltalake writes reconcile_report with the table's columns (sql/tables.sql).
Run: .venv/bin/python -m pytest python/tests/test_drift.py   (~2 s)
"""

from __future__ import annotations

import datetime as dt
import decimal
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # python/: tidemark_airflow

from tidemark_airflow import drift  # noqa: E402
from tidemark_airflow.run_ids import attempt_run_id  # noqa: E402

TASKS = ("reconcile_selection", "reconcile_dirty")
DAG_RUN = "manual__2026-11-29T01:00:00+00:00"
SEL_1 = attempt_run_id(DAG_RUN, "reconcile_selection", 1)
SEL_2 = attempt_run_id(DAG_RUN, "reconcile_selection", 2)
DIRTY_1 = attempt_run_id(DAG_RUN, "reconcile_dirty", 1)
OTHER = attempt_run_id("manual__2026-11-28T01:00:00+00:00", "reconcile_selection", 1)  # another DAG run


def write_report(lakehouse: Path, rows: list[dict]) -> None:
    """reconcile_report with the table's column names and types (sql/tables.sql)."""
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
    gb_drift = round(batch_gb - stream_gb, 9)
    return dict(run_id=run, run_started_at=started, row_kind="summary", event_date=day, stream_count=stream_count,
                batch_count=batch_count, stream_gb=stream_gb, batch_gb=batch_gb, gb_drift=gb_drift,
                gb_drift_rel=None if batch_gb == 0 else gb_drift / batch_gb, late_records=late, windows_changed=changed)


def window_row(run, day, cell, drift_gb, batch_gb, late, started="2026-11-29T01:00:00+00:00"):
    return dict(run_id=run, run_started_at=started, row_kind="window", event_date=day, cell_site_id=cell,
                stream_count=10, batch_count=10 + late, stream_gb=batch_gb - drift_gb, batch_gb=batch_gb,
                gb_drift=drift_gb, late_records=late)


def summary(lakehouse: Path, threshold: float, expected=(), dag_run=DAG_RUN):
    return drift.drift_summary(str(lakehouse), threshold, dag_run_id=dag_run, task_ids=TASKS, expected_days=expected)


def test_days_over_the_threshold_with_their_worst_cells(tmp_path):
    write_report(tmp_path, [
        summary_row(SEL_1, "2026-11-26", 1000, 1000, 50.0, 50.0, 0, 0),
        summary_row(SEL_1, "2026-11-27", 900, 1000, 45.0, 50.0, 100, 30),        # 10 % drift
        window_row(SEL_1, "2026-11-27", "cell-a", 1.0, 5.0, 20),
        window_row(SEL_1, "2026-11-27", "cell-a", 2.0, 6.0, 30),
        window_row(SEL_1, "2026-11-27", "cell-b", 0.5, 4.0, 10),
        window_row(SEL_1, "2026-11-27", "cell-c", -0.1, 4.0, 0),
        window_row(OTHER, "2026-11-27", "cell-z", 9.0, 9.0, 9),
        summary_row(OTHER, "2026-11-27", 1000, 1000, 50.0, 50.0, 100, 0, "2026-11-28T02:00:00+00:00"),
    ])
    # The range asked for the 25th (no raw data: the job writes no row) to the 28th (no row either).
    s = summary(tmp_path, 0.05, ["2026-11-25", "2026-11-26", "2026-11-27", "2026-11-28"])
    assert [d["day"] for d in s["days"]] == ["2026-11-26", "2026-11-27"]  # OTHER is not this DAG run's
    assert s["run_ids"] == [SEL_1]
    d26, d27 = s["days"]
    assert d26["drift"] == 0 and not d26["over_threshold"] and "worst_cells" not in d26
    assert d26["task"] == "reconcile_selection" and d26["attempt"] == 1
    assert d27["drift"] == pytest.approx(0.1) and d27["over_threshold"]
    assert [c["cell_site_id"] for c in d27["worst_cells"]] == ["cell-a", "cell-b", "cell-c"]
    assert d27["worst_cells"][0]["gb_drift"] == pytest.approx(3.0) and d27["worst_cells"][0]["late_records"] == 50
    assert d27["worst_cells"][0]["share_of_drift"] == pytest.approx(0.6)
    assert s["over_threshold"] == ["2026-11-27"] and not s["ok"]
    assert s["no_summary_days"] == ["2026-11-25", "2026-11-28"]
    text = drift.describe_drift(s)
    assert "2026-11-27: drift +10.000%" in text and "OVER THRESHOLD" in text and "cell cell-a: +3.000000 GB" in text
    assert "2026-11-28: no data or not reconciled (no summary row in reconcile_report)" in text
    assert drift.failure(s) == ("drift over 5.000% on 1 day(s): 2026-11-27 +10.000% (worst cells: cell-a +3.000000 GB, "
                                "cell-b +0.500000 GB, cell-c -0.100000 GB)")

    nothing = summary(tmp_path, 0.05, dag_run="manual__never")
    assert nothing["days"] == [] and nothing["ok"] and drift.failure(nothing) is None
    assert "no day was reconciled" in drift.describe_drift(nothing)


def test_a_retried_task_counts_its_first_attempt(tmp_path):
    """Attempt 1 replaced the 27th, then failed on the 28th; attempt 2 redid both. Only attempt 1
    compared the 27th with the stream (attempt 2 saw attempt 1's batch rows: no drift)."""
    write_report(tmp_path, [
        summary_row(SEL_1, "2026-11-27", 900, 1000, 45.0, 50.0, 100, 30),
        summary_row(SEL_2, "2026-11-27", 1000, 1000, 50.0, 50.0, 0, 0, "2026-11-29T01:10:00+00:00"),
        summary_row(SEL_2, "2026-11-28", 990, 1000, 49.5, 50.0, 10, 3, "2026-11-29T01:10:00+00:00"),
        # the dirty pass found late records of the 27th that arrived meanwhile: its own entry
        summary_row(DIRTY_1, "2026-11-27", 1000, 1002, 50.0, 50.1, 2, 1, "2026-11-29T01:20:00+00:00"),
    ])
    s = summary(tmp_path, 0.05)
    got = [(d["day"], d["task"], d["attempt"], d["run_id"]) for d in s["days"]]
    assert got == [("2026-11-27", "reconcile_selection", 1, SEL_1), ("2026-11-27", "reconcile_dirty", 1, DIRTY_1),
                   ("2026-11-28", "reconcile_selection", 2, SEL_2)]
    assert s["days"][0]["drift"] == pytest.approx(0.1) and s["over_threshold"] == ["2026-11-27"]
    assert s["run_ids"] == sorted([SEL_1, SEL_2, DIRTY_1])
    assert s["notes"] == ["2026-11-27: reconciled by attempts 1, 2 of reconcile_selection; the drift is attempt 1's "
                          "(later ones compared with its output, not the stream's)"]


def test_edge_cases(tmp_path):
    write_report(tmp_path, [
        summary_row(SEL_1, "2026-11-27", 5, 0, 1.0, 0.0, 0, 1),   # truth is empty, the stream was not: undefined
        summary_row(SEL_1, "2026-11-28", 950, 1000, 50.0, 50.0, 50, 5),  # volume equal, records 5 % off
    ])
    s = summary(tmp_path, 0.05)
    d27, d28 = s["days"]
    assert d27["drift"] is None and d27["over_threshold"]
    assert d28["drift"] == pytest.approx(0.05) and not d28["over_threshold"]  # exceeds, not equals
    assert summary(tmp_path, 0.049)["over_threshold"] == ["2026-11-27", "2026-11-28"]
    assert "n/a" in drift.describe_drift(s)


def test_summarize_is_pure():
    row = dict(run_id=SEL_1, day="2026-11-27", stream_count=90, batch_count=100, stream_gb=9.0, batch_gb=10.0,
               gb_drift=1.0, gb_drift_rel=None, late_records=10, windows_changed=2)
    s = drift.summarize([row, {**row, "run_id": "reconcile-20261129T010000Z-0000000a"}], 0.2, dag_run_id=DAG_RUN,
                        task_ids=TASKS, expected_days=["2026-11-27"])
    assert len(s["days"]) == 1 and s["days"][0]["gb_drift_rel"] == pytest.approx(0.1) and s["ok"]
    assert s["no_summary_days"] == []
