"""The drift check over reconcile_report: package tidemark_airflow directly, on a hand-written report.

No Airflow run, no Spark: deltalake writes reconcile_report with the table's columns, read from its
definition in sql/tables.sql (long form: one row per measure). The verdict (over_threshold) and the
threshold (drift_threshold) are written in the rows as ReconcileJob writes them (the pipeline's drift
rule); Python only reads them.
Run: .venv/bin/python -m pytest python/tests/test_drift.py   (~2 s)
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # python/: tidemark_airflow

from tidemark_airflow import drift  # noqa: E402
from tidemark_airflow.run_ids import attempt_run_id  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
TASKS = ("reconcile_selection", "reconcile_dirty")
DAG_RUN = "manual__2026-11-29T01:00:00+00:00"
SEL_1 = attempt_run_id(DAG_RUN, "reconcile_selection", 1)
SEL_2 = attempt_run_id(DAG_RUN, "reconcile_selection", 2)
DIRTY_1 = attempt_run_id(DAG_RUN, "reconcile_dirty", 1)
OTHER = attempt_run_id("manual__2026-11-28T01:00:00+00:00", "reconcile_selection", 1)  # another DAG run
STARTED = "2026-11-29T01:00:00+00:00"
ESTIMATES = {"subscribers"}  # kpi_5m's sketch measure (approx_count_distinct)


def report_schema(table: str = "reconcile_report"):
    """The table's columns and types from its CREATE TABLE in sql/tables.sql, as a pyarrow schema."""
    import pyarrow as pa

    ddl = (REPO / "sql" / "tables.sql").read_text()
    body = re.search(rf"CREATE TABLE IF NOT EXISTS tidemark\.{table} \((.*?)\n\) USING delta", ddl, re.S).group(1)
    types = {"STRING": pa.string(), "TIMESTAMP": pa.timestamp("us", tz="UTC"), "DOUBLE": pa.float64(),
             "BOOLEAN": pa.bool_(), "BIGINT": pa.int64(), "INT": pa.int32(), "DATE": pa.date32()}
    fields = []
    for line in body.strip().splitlines():
        m = re.match(r"\s*(\w+)\s+(DECIMAL\((\d+),\s*(\d+)\)|\w+)(\s+NOT NULL)?", line)
        kind = pa.decimal128(int(m.group(3)), int(m.group(4))) if m.group(3) else types[m.group(2)]
        fields.append(pa.field(m.group(1), kind, nullable=not m.group(5)))
    return pa.schema(fields)


def test_the_schema_is_the_long_form():
    names = report_schema().names
    assert names[:3] == ["run_id", "run_started_at", "row_kind"] and names[-1] == "event_date"
    assert {"kpi", "measure", "dimensions", "stream_value", "batch_value", "drift", "drift_rel", "estimate",
            "drift_threshold", "over_threshold", "late_records", "windows_changed"} <= set(names)
    assert not {"stream_count", "gb_drift", "cell_site_id"} & set(names)


def write_report(lakehouse: Path, rows: list[dict], schema=None) -> None:
    """Appends rows to reconcile_report (columns they lack are null)."""
    import pyarrow as pa
    from deltalake import write_deltalake

    schema = schema or report_schema()
    q = lambda x: None if x is None else decimal.Decimal(str(x)).quantize(decimal.Decimal("0.000000001"))  # noqa: E731
    full = []
    for r in rows:
        row = {f.name: None for f in schema}
        row.update(r)
        for f in schema:
            if pa.types.is_decimal(f.type):
                row[f.name] = q(row[f.name])
            elif pa.types.is_timestamp(f.type) and isinstance(row[f.name], str):
                row[f.name] = dt.datetime.fromisoformat(row[f.name])
        row["event_date"] = dt.date.fromisoformat(row["event_date"])
        full.append(row)
    write_deltalake(str(lakehouse / "reconcile_report"), pa.Table.from_pylist(full, schema=schema),
                    partition_by=["event_date"], mode="append")


def java_rule(stream: float, batch: float, estimate: bool, threshold: float) -> bool:
    """What DriftRule.over writes, for realistic rows; drift.py never applies it (see the test below)."""
    if estimate:
        return False
    if batch == 0:
        return stream != 0
    return abs((batch - stream) / batch) > threshold


def summary_rows(run, day, measures: dict, late, changed, threshold=0.05, over=None, started=STARTED):
    """One summary row per measure, as ReconcileJob writes them: measures maps a kpi_5m measure to
    (stream, batch); changed: windows changed per measure (a dict) or the same for each; over: the
    verdict per measure, else java_rule's."""
    rows = []
    for name, (stream, batch) in measures.items():
        d = round(batch - stream, 9)
        estimate = name in ESTIMATES
        rows.append(dict(
            run_id=run, run_started_at=started, row_kind="summary", kpi="kpi_5m", measure=name, event_date=day,
            stream_value=stream, batch_value=batch, drift=d, drift_rel=None if batch == 0 else d / batch,
            estimate=estimate, drift_threshold=threshold, late_records=late,
            over_threshold=(over or {}).get(name, java_rule(stream, batch, estimate, threshold)),
            windows_changed=changed.get(name, 0) if isinstance(changed, dict) else changed))
    return rows


def measures_of(records, gb, subscribers=None):
    m = {"record_count": records, "total_gb": gb}
    if subscribers:
        m["subscribers"] = subscribers
    return m


def window_row(run, day, measure, cell, drift_value, batch, late, minute=0, started=STARTED):
    start = dt.datetime.fromisoformat(f"{day}T00:00:00+00:00") + dt.timedelta(minutes=minute)
    return dict(run_id=run, run_started_at=started, row_kind="window", kpi="kpi_5m", measure=measure, event_date=day,
                window_start=start, window_end=start + dt.timedelta(minutes=5),
                dimensions=json.dumps({"cell_site_id": cell}), stream_value=batch - drift_value, batch_value=batch,
                drift=drift_value, drift_rel=drift_value / batch, estimate=measure in ESTIMATES, late_records=late)


def summary(lakehouse: Path, expected=(), dag_run=DAG_RUN):
    return drift.drift_summary(str(lakehouse), dag_run_id=dag_run, task_ids=TASKS, expected_days=expected)


def test_days_over_the_threshold_with_their_worst_dimensions(tmp_path):
    write_report(tmp_path, [
        *summary_rows(SEL_1, "2026-11-26", measures_of((1000, 1000), (50.0, 50.0), (300, 300)), 0, 0),
        # 8 % of the records and 10 % of the volume late; the subscriber estimate 20 % off, but an estimate
        *summary_rows(SEL_1, "2026-11-27", measures_of((920, 1000), (45.0, 50.0), (240, 300)), 100,
                      {"record_count": 30, "total_gb": 28, "subscribers": 31}),
        window_row(SEL_1, "2026-11-27", "total_gb", "cell-a", 1.0, 5.0, 20, 0),
        window_row(SEL_1, "2026-11-27", "total_gb", "cell-a", 2.0, 6.0, 30, 5),
        window_row(SEL_1, "2026-11-27", "total_gb", "cell-b", 0.5, 4.0, 10, 0),
        window_row(SEL_1, "2026-11-27", "total_gb", "cell-c", -0.1, 4.0, 0, 0),
        window_row(SEL_1, "2026-11-27", "record_count", "cell-b", 60, 200, 60, 0),
        window_row(SEL_1, "2026-11-27", "record_count", "cell-a", 20, 100, 20, 0),
        window_row(SEL_1, "2026-11-27", "record_count", "cell-a", 20, 100, 20, 5),
        window_row(SEL_1, "2026-11-27", "subscribers", "cell-z", 50, 60, 0, 0),  # an estimate: never over
        window_row(OTHER, "2026-11-27", "total_gb", "cell-z", 9.0, 9.0, 9),
        *summary_rows(OTHER, "2026-11-27", measures_of((1000, 1000), (50.0, 50.0)), 100, 0,
                      started="2026-11-28T02:00:00+00:00"),
    ])
    # The range asked for the 25th (no raw data: the job writes no row) to the 28th (no row either).
    s = summary(tmp_path, ["2026-11-25", "2026-11-26", "2026-11-27", "2026-11-28"])
    assert [d["day"] for d in s["days"]] == ["2026-11-26", "2026-11-27"]  # OTHER is not this DAG run's
    assert s["run_ids"] == [SEL_1]
    assert s["threshold"] == 0.05 and s["thresholds"] == [0.05]  # the rows' (the pipeline's)
    d26, d27 = s["days"]
    assert d26["drift"] == 0 and not d26["over_threshold"] and "worst" not in d26 and d26["measures_over"] == []
    assert d26["task"] == "reconcile_selection" and d26["attempt"] == 1 and d26["threshold"] == 0.05
    assert d27["drift"] == pytest.approx(0.1) and d27["drift_measure"] == "kpi_5m.total_gb" and d27["over_threshold"]
    assert d27["measures_over"] == ["kpi_5m.record_count", "kpi_5m.total_gb"]
    assert d27["late_records"] == 100 and d27["windows_changed"] == 31  # the largest of the measures' counts
    by_name = {m["measure"]: m for m in d27["measures"]}
    assert by_name["record_count"] == {"kpi": "kpi_5m", "measure": "record_count", "stream_value": 920.0,
                                       "batch_value": 1000.0, "drift": 80.0, "drift_rel": pytest.approx(0.08),
                                       "estimate": False, "over_threshold": True, "windows_changed": 30}
    assert by_name["subscribers"]["estimate"] and not by_name["subscribers"]["over_threshold"]
    assert by_name["subscribers"]["drift_rel"] == pytest.approx(0.2)  # shown, but not the day's drift
    # the worst dimension values of each measure over the threshold, largest |drift| first
    worst = [(w["measure"], w["dimensions"]) for w in d27["worst"]]
    assert worst == [("record_count", {"cell_site_id": "cell-b"}), ("record_count", {"cell_site_id": "cell-a"}),
                     ("total_gb", {"cell_site_id": "cell-a"}), ("total_gb", {"cell_site_id": "cell-b"}),
                     ("total_gb", {"cell_site_id": "cell-c"})]
    a_gb = d27["worst"][2]
    assert a_gb["drift"] == pytest.approx(3.0) and a_gb["late_records"] == 50 and a_gb["windows"] == 2
    assert a_gb["share_of_drift"] == pytest.approx(0.6) and a_gb["kpi"] == "kpi_5m"
    assert d27["worst"][0]["share_of_drift"] == pytest.approx(0.75) and d27["worst"][1]["windows"] == 2
    assert s["over_threshold"] == ["2026-11-27"] and not s["ok"]
    assert s["no_summary_days"] == ["2026-11-25", "2026-11-28"]
    text = drift.describe_drift(s)
    assert "drift threshold 5% (the pipeline's)" in text
    assert "2026-11-27: drift +10.000% (kpi_5m.total_gb), 100 late records, 31 windows changed  OVER THRESHOLD 5%: " \
           "kpi_5m.record_count +8.000%, kpi_5m.total_gb +10.000%" in text
    assert "kpi_5m.subscribers: 240 -> 300, drift +60 (+20.000%), estimate\n" in text
    assert "kpi_5m.record_count: 920 -> 1,000, drift +80 (+8.000%)  over\n" in text
    assert "worst kpi_5m.total_gb cell_site_id=cell-a: +3 (60% of its drift of the day), 2 windows changed, " \
           "50 late records" in text
    assert "2026-11-28: no data or not reconciled (no summary row in reconcile_report)" in text
    assert drift.failure(s) == (
        "drift over 5% on 1 day(s): 2026-11-27 kpi_5m.record_count +8.000% (worst: cell_site_id=cell-b +60, "
        "cell_site_id=cell-a +40), kpi_5m.total_gb +10.000% (worst: cell_site_id=cell-a +3, cell_site_id=cell-b +0.5, "
        "cell_site_id=cell-c -0.1)")

    nothing = summary(tmp_path, dag_run="manual__never")
    assert nothing["days"] == [] and nothing["ok"] and drift.failure(nothing) is None
    assert nothing["threshold"] is None and nothing["thresholds"] == []
    assert "no day was reconciled" in drift.describe_drift(nothing)


def test_a_retried_task_counts_its_first_attempt(tmp_path):
    """Attempt 1 replaced the 27th, then failed on the 28th; attempt 2 redid both. Only attempt 1
    compared the 27th with the stream (attempt 2 saw attempt 1's batch rows: no drift)."""
    t1, t2 = "2026-11-29T01:10:00+00:00", "2026-11-29T01:20:00+00:00"
    write_report(tmp_path, [
        *summary_rows(SEL_1, "2026-11-27", measures_of((900, 1000), (45.0, 50.0)), 100, 30),
        *summary_rows(SEL_2, "2026-11-27", measures_of((1000, 1000), (50.0, 50.0)), 0, 0, started=t1),
        *summary_rows(SEL_2, "2026-11-28", measures_of((990, 1000), (49.5, 50.0)), 10, 3, started=t1),
        # the dirty pass found late records of the 27th that arrived meanwhile: its own entry
        *summary_rows(DIRTY_1, "2026-11-27", measures_of((1000, 1002), (50.0, 50.1)), 2, 1, started=t2),
    ])
    s = summary(tmp_path)
    got = [(d["day"], d["task"], d["attempt"], d["run_id"]) for d in s["days"]]
    assert got == [("2026-11-27", "reconcile_selection", 1, SEL_1), ("2026-11-27", "reconcile_dirty", 1, DIRTY_1),
                   ("2026-11-28", "reconcile_selection", 2, SEL_2)]
    assert s["days"][0]["drift"] == pytest.approx(0.1) and s["over_threshold"] == ["2026-11-27"]
    assert [m["stream_value"] for m in s["days"][0]["measures"]] == [900, 45.0]  # attempt 1's rows only
    assert s["days"][2]["drift"] == pytest.approx(0.01) and not s["days"][2]["over_threshold"]
    assert s["run_ids"] == sorted([SEL_1, SEL_2, DIRTY_1])
    assert s["notes"] == ["2026-11-27: reconciled by attempts 1, 2 of reconcile_selection; the drift is attempt 1's "
                          "(later ones compared with its output, not the stream's)"]
    assert "  note: 2026-11-27: reconciled by attempts 1, 2 of reconcile_selection" in drift.describe_drift(s)


def test_edge_cases(tmp_path):
    write_report(tmp_path, [
        # truth is empty, the stream was not: undefined (the rule says over)
        *summary_rows(SEL_1, "2026-11-27", measures_of((5, 0), (1.0, 0.0)), 0, 1),
        *summary_rows(SEL_1, "2026-11-28", measures_of((950, 1000), (50.0, 50.0)), 50, 5),  # records 5 % off
    ])
    s = summary(tmp_path)
    d27, d28 = s["days"]
    assert d27["drift"] is None and d27["over_threshold"] and d27["drift_measure"] == "kpi_5m.record_count"
    assert d28["drift"] == pytest.approx(0.05) and not d28["over_threshold"]  # exceeds, not equals
    assert "n/a" in drift.describe_drift(s)
    assert "2026-11-27: drift n/a (kpi_5m.record_count)" in drift.describe_drift(s)
    # the same drift judged by a pipeline with a lower threshold (another run, another lakehouse)
    lower = tmp_path / "lower"
    write_report(lower, [
        *summary_rows(SEL_1, "2026-11-27", measures_of((5, 0), (1.0, 0.0)), 0, 1, threshold=0.049),
        *summary_rows(SEL_1, "2026-11-28", measures_of((950, 1000), (50.0, 50.0)), 50, 5, threshold=0.049),
    ])
    s = summary(lower)
    assert s["over_threshold"] == ["2026-11-27", "2026-11-28"] and s["threshold"] == 0.049
    assert s["days"][1]["measures_over"] == ["kpi_5m.record_count"]
    assert drift.failure(s).startswith("drift over 4.9% on 2 day(s): 2026-11-27 kpi_5m.record_count n/a (worst: none)")


def test_the_verdict_is_the_rows_never_recomputed(tmp_path):
    """The one drift rule is the pipeline's, applied by reconcile: a row over 50 % but with over_threshold
    false is not over; a row without drift but with over_threshold true is; an undefined drift is not over
    unless its row says so; an estimate's drift is never the day's."""
    write_report(tmp_path, [
        *summary_rows(SEL_1, "2026-11-25", measures_of((50, 100), (10.0, 10.0)), 50, 9,
                      over={"record_count": False}),                      # drift_rel 0.5, not over
        *summary_rows(SEL_1, "2026-11-26", measures_of((100, 100), (10.0, 10.0)), 0, 0,
                      over={"total_gb": True}),                           # no drift, over
        *summary_rows(SEL_1, "2026-11-27", measures_of((7, 0), (10.0, 10.0)), 0, 1,
                      over={"record_count": False}),                      # undefined, not over
        *summary_rows(SEL_1, "2026-11-28", measures_of((100, 100), (10.0, 10.0), (10, 1000)), 0, 0,
                      over={"subscribers": True}),                        # an estimate the row says is over
    ])
    s = summary(tmp_path)
    d25, d26, d27, d28 = s["days"]
    assert d25["drift"] == pytest.approx(0.5) and not d25["over_threshold"] and d25["measures_over"] == []
    assert d26["drift"] == 0 and d26["over_threshold"] and d26["measures_over"] == ["kpi_5m.total_gb"]
    assert d27["drift"] is None and not d27["over_threshold"]
    assert d28["drift"] == 0 and d28["drift_measure"] == "kpi_5m.record_count" and d28["over_threshold"]
    assert s["over_threshold"] == ["2026-11-26", "2026-11-28"]
    # windows_changed of a day with measures that changed in different windows: the largest count
    assert d25["windows_changed"] == 9


def test_reports_written_before_the_long_form_are_left_out(tmp_path):
    import pyarrow as pa

    old_columns = pa.schema([("run_id", pa.string()), ("run_started_at", pa.timestamp("us", tz="UTC")),
                             ("row_kind", pa.string()), ("stream_count", pa.int64()), ("batch_count", pa.int64()),
                             ("late_records", pa.int64()), ("windows_changed", pa.int64()),
                             ("event_date", pa.date32())])
    old = dict(run_id=SEL_1, run_started_at=STARTED, row_kind="summary", stream_count=900, batch_count=1000,
               late_records=100, windows_changed=30, event_date="2026-11-27")
    write_report(tmp_path / "old", [old], old_columns)  # no measure column at all
    s = summary(tmp_path / "old", ["2026-11-27"])
    assert s["days"] == [] and s["no_summary_days"] == ["2026-11-27"] and s["ok"]
    # a lakehouse with both: the old rows have no measure (null), the new ones one per measure
    both = pa.schema([*report_schema(), *(f for f in old_columns if f.name not in report_schema().names)])
    write_report(tmp_path / "both", [old, *summary_rows(SEL_1, "2026-11-28", measures_of((90, 100), (9.0, 10.0)), 10, 2)],
                 both)
    s = summary(tmp_path / "both", ["2026-11-27", "2026-11-28"])
    assert [d["day"] for d in s["days"]] == ["2026-11-28"] and s["no_summary_days"] == ["2026-11-27"]
    assert s["days"][0]["drift"] == pytest.approx(0.1) and s["over_threshold"] == ["2026-11-28"]


def test_summarize_is_pure():
    rows = [dict(run_id=SEL_1, day="2026-11-27", kpi="kpi_5m", measure="total_gb", stream_value=9.0, batch_value=10.0,
                 drift=1.0, drift_rel=0.1, estimate=False, drift_threshold=0.2, over_threshold=False, late_records=10,
                 windows_changed=2),
            dict(run_id=SEL_1, day="2026-11-27", kpi="kpi_5m", measure="record_count", stream_value=95, batch_value=100,
                 drift=5, drift_rel=0.05, estimate=False, drift_threshold=0.2, over_threshold=False, late_records=10,
                 windows_changed=1)]
    s = drift.summarize([*rows, *({**r, "run_id": "reconcile-20261129T010000Z-0000000a"} for r in rows)],
                        dag_run_id=DAG_RUN, task_ids=TASKS, expected_days=["2026-11-27"])
    assert len(s["days"]) == 1 and s["days"][0]["drift"] == pytest.approx(0.1) and s["ok"]
    assert len(s["days"][0]["measures"]) == 2 and s["days"][0]["windows_changed"] == 2
    assert s["no_summary_days"] == [] and s["threshold"] == 0.2
