"""How far the stream drifted from the truth on the days one DAG run reconciled (from reconcile_report).

Relative drift of a day = the larger of |volume drift| / batch volume and |record-count drift| / batch
count; undefined (and over any threshold) when the truth is zero and the stream was not. A day is over
the threshold when its drift exceeds it (equal is fine).

Which rows count: the summary rows whose run id is one of this DAG run's attempts (run_ids). When a
task ran more than once and a day has summaries from several of its attempts, the first attempt's
counts: it compared the truth with the stream's KPIs, a later attempt only with what the first one
had already written.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from tidemark_airflow import lakehouse as lh
from tidemark_airflow.run_ids import dag_run_prefix, parse_attempt


def _float(v: Any) -> float | None:
    return None if v is None else float(v)


def _rel(drift: float | None, base: float | None) -> float | None:
    if drift is None or base is None:
        return None
    if base == 0:
        return 0.0 if drift == 0 else None  # None: undefined (truth is zero, the stream was not)
    return drift / base


def day_drift(row: Mapping[str, Any], threshold: float) -> dict[str, Any]:
    """One reconcile_report summary row with its relative drifts and verdict."""
    count_drift = None if row["batch_count"] is None else row["batch_count"] - (row["stream_count"] or 0)
    gb_rel = _float(row.get("gb_drift_rel"))
    if gb_rel is None:
        gb_rel = _rel(_float(row["gb_drift"]), _float(row["batch_gb"]))
    count_rel = _rel(_float(count_drift), _float(row["batch_count"]))
    undefined = (gb_rel is None and row["gb_drift"] not in (None, 0)) or (count_rel is None and count_drift not in (None, 0))
    drift = None if undefined else max(abs(gb_rel or 0.0), abs(count_rel or 0.0))
    return {
        "day": row["day"], "run_id": row["run_id"],
        "stream_count": row["stream_count"], "batch_count": row["batch_count"], "count_drift": count_drift,
        "count_drift_rel": count_rel,
        "stream_gb": _float(row["stream_gb"]), "batch_gb": _float(row["batch_gb"]),
        "gb_drift": _float(row["gb_drift"]), "gb_drift_rel": gb_rel,
        "stream_subscribers": row.get("stream_subscribers"), "batch_subscribers": row.get("batch_subscribers"),
        "subscribers_drift_rel": _float(row.get("subscribers_drift_rel")),
        "late_records": row["late_records"], "windows_changed": row["windows_changed"],
        "drift": drift, "over_threshold": drift is None or drift > threshold,
    }


def summarize(rows: Iterable[Mapping[str, Any]], threshold: float, *, dag_run_id: str, task_ids: tuple[str, ...],
              expected_days: Iterable[str] = ()) -> dict[str, Any]:
    """The drift summary of one DAG run from reconcile_report summary rows (pure).

    :param rows: summary rows (any run ids: those not of this DAG run's attempts are ignored)
    :param task_ids: the reconcile tasks, in the order they run
    :param expected_days: days the request named (a range); those without a summary row are listed as
        no data or not reconciled (the job writes no row for a day without raw data)
    """
    prefix = dag_run_prefix(dag_run_id)
    first: dict[tuple[str, str], tuple[int, Mapping[str, Any]]] = {}  # (task, day) -> (try, row)
    attempts: dict[tuple[str, str], set[int]] = {}
    for row in rows:
        parsed = parse_attempt(row["run_id"], prefix, task_ids)
        if parsed is None:
            continue
        task, attempt = parsed
        attempts.setdefault((task, row["day"]), set()).add(attempt)
        if (task, row["day"]) not in first or attempt < first[(task, row["day"])][0]:
            first[(task, row["day"])] = (attempt, row)
    days, notes = [], []
    for (task, day), (attempt, row) in sorted(first.items(), key=lambda kv: (kv[0][1], task_ids.index(kv[0][0]))):
        days.append({**day_drift(row, threshold), "task": task, "attempt": attempt})
        if len(attempts[(task, day)]) > 1:
            notes.append(f"{day}: reconciled by attempts {', '.join(map(str, sorted(attempts[(task, day)])))} of {task}; "
                         f"the drift is attempt {attempt}'s (later ones compared with its output, not the stream's)")
    seen = {d["day"] for d in days}
    over = [d for d in days if d["over_threshold"]]
    return {
        "threshold": threshold, "run_ids": sorted({d["run_id"] for d in days}), "days": days,
        "no_summary_days": sorted(set(expected_days) - seen),
        "over_threshold": sorted({d["day"] for d in over}), "ok": not over, "notes": notes,
    }


def drift_summary(lakehouse: str, threshold: float, *, dag_run_id: str, task_ids: tuple[str, ...],
                  expected_days: Iterable[str] = (), top_cells: int = 5) -> dict[str, Any]:
    """summarize() over the lakehouse's reconcile_report, with the worst cells of each day over the threshold."""
    summary = summarize(lh.read_summaries(lakehouse, dag_run_prefix(dag_run_id)), threshold, dag_run_id=dag_run_id,
                        task_ids=task_ids, expected_days=expected_days)
    for d in summary["days"]:
        if d["over_threshold"]:
            d["worst_cells"] = lh.read_worst_cells(lakehouse, d["run_id"], d["day"], top_cells)
            for c in d["worst_cells"]:  # share of the day's volume drift (its changed windows only hold a part of it)
                c["share_of_drift"] = _rel(c["gb_drift"], d["gb_drift"])
    return summary


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{x * 100:+.3f}%"


def describe_drift(summary: Mapping[str, Any]) -> str:
    """A short text table of a drift summary, for logs."""
    lines = [f"drift threshold {summary['threshold'] * 100:.3f}%; reconcile runs: {', '.join(summary['run_ids']) or 'none'}"]
    if not summary["days"]:
        lines.append("no day was reconciled")
    for d in summary["days"]:
        lines.append(
            f"  {d['day']}: drift {_pct(d['drift'])} (volume {_pct(d['gb_drift_rel'])}, records {_pct(d['count_drift_rel'])}: "
            f"{d['stream_count']} -> {d['batch_count']}), {d['late_records']} late records, "
            f"{d['windows_changed']} windows changed{'  OVER THRESHOLD' if d['over_threshold'] else ''}")
        for c in d.get("worst_cells", []):
            share = "" if c.get("share_of_drift") is None else f", {c['share_of_drift'] * 100:.0f}% of the day's drift"
            lines.append(f"      cell {c['cell_site_id']}: {c['gb_drift']:+.6f} GB{share}, {c['windows']} windows changed, "
                         f"{c['late_records']} late records")
    lines.extend(f"  {day}: no data or not reconciled (no summary row in reconcile_report)"
                 for day in summary["no_summary_days"])
    lines.extend(f"  note: {n}" for n in summary.get("notes", []))
    return "\n".join(lines)


def failure(summary: Mapping[str, Any]) -> str | None:
    """The one-line reason to fail the run (days over the threshold with their worst cells), else None."""
    if not summary["over_threshold"]:
        return None
    worst = "; ".join(
        f"{d['day']} {_pct(d['drift'])} (worst cells: "
        + (", ".join(f"{c['cell_site_id']} {c['gb_drift']:+.6f} GB" for c in d.get("worst_cells", [])[:3]) or "none")
        + ")" for d in summary["days"] if d["over_threshold"])
    return f"drift over {summary['threshold'] * 100:.3f}% on {len(summary['over_threshold'])} day(s): {worst}"
