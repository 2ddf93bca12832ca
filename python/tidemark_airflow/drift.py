"""How far the stream drifted from the truth on the days one DAG run reconciled (from reconcile_report).

There is one drift rule, the pipeline's (DriftRule in Java, with the drift_threshold option of the
pipeline's event table, default 0.01): reconcile applies it and writes its verdict with every summary
row (over_threshold, beside the drift_threshold it used). This module only reads that verdict: a day
is over the threshold when any of its summary rows (one per KPI table and measure) is.

What it reports per day: the largest relative drift |batch - stream| / batch among the measures the
stream keeps exactly (a sketch estimate, estimate = true, is shown but never counts), undefined (None)
when the truth of such a measure is zero and the stream's was not; the measures over the threshold;
each measure's figures; and, for a day over the threshold, the dimension values (cells, ...) that
drifted most in each measure over it.

Which rows count: the summary rows whose run id is one of this DAG run's attempts (run_ids). When a
task ran more than once and a day has summaries from several of its attempts, the first attempt's
counts: it compared the truth with the stream's KPIs, a later attempt only with what the first one
had already written.
"""

from __future__ import annotations

import json
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
        return 0.0 if drift == 0 else None  # None: undefined (the base is zero, the drift is not)
    return drift / base


def measure_name(m: Mapping[str, Any]) -> str:
    """kpi.measure, e.g. kpi_5m.total_gb."""
    return f"{m['kpi']}.{m['measure']}"


def day_drift(rows: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """The summary rows of one run and day (one per KPI table and measure) as one entry.

    over_threshold is the rows' verdict (any of them), never recomputed here. drift is the largest
    |drift_rel| of the exact measures (estimate false), drift_measure the measure it belongs to; None
    when such a measure's relative drift is undefined (truth zero, stream not), or the day has no exact
    measure. late_records is the day's (the same on each row); windows_changed is the largest of the
    measures' counts (a window counts in each measure whose value changed, so it is the least number of
    windows that changed at all; measures[*].windows_changed has each measure's own).
    """
    rows = list(rows)
    if not rows:
        raise ValueError("day_drift needs at least one summary row")
    measures = [{
        "kpi": r["kpi"], "measure": r["measure"], "stream_value": _float(r["stream_value"]),
        "batch_value": _float(r["batch_value"]), "drift": _float(r["drift"]), "drift_rel": _float(r["drift_rel"]),
        "estimate": bool(r["estimate"]), "over_threshold": bool(r["over_threshold"]),
        "windows_changed": r.get("windows_changed"),
    } for r in rows]
    drift, drift_measure = 0.0, None
    exact = [m for m in measures if not m["estimate"]]
    undefined = [m for m in exact if m["drift_rel"] is None and m["drift"] not in (None, 0)]
    if undefined:
        drift, drift_measure = None, measure_name(undefined[0])
    elif not exact:
        drift = None
    else:
        largest = max(exact, key=lambda m: abs(m["drift_rel"] or 0.0))  # the first on a tie: the rows' order
        drift, drift_measure = abs(largest["drift_rel"] or 0.0), measure_name(largest)
    thresholds = sorted({float(r["drift_threshold"]) for r in rows if r.get("drift_threshold") is not None})
    changed = [m["windows_changed"] for m in measures if m["windows_changed"] is not None]
    late = [r["late_records"] for r in rows if r.get("late_records") is not None]
    return {
        "day": rows[0]["day"], "run_id": rows[0]["run_id"],
        "drift": drift, "drift_measure": drift_measure,
        "threshold": thresholds[-1] if len(thresholds) == 1 else None,  # one reconcile run: one pipeline, one threshold
        "over_threshold": any(m["over_threshold"] for m in measures),
        "measures_over": [measure_name(m) for m in measures if m["over_threshold"]],
        "late_records": max(late) if late else None,
        "windows_changed": max(changed) if changed else None,
        "measures": measures,
    }


def summarize(rows: Iterable[Mapping[str, Any]], *, dag_run_id: str, task_ids: tuple[str, ...],
              expected_days: Iterable[str] = ()) -> dict[str, Any]:
    """The drift summary of one DAG run from reconcile_report summary rows (pure).

    :param rows: summary rows, one per run, day, KPI table and measure (any run ids: those not of this
        DAG run's attempts are ignored)
    :param task_ids: the reconcile tasks, in the order they run
    :param expected_days: days the request named (a range); those without a summary row are listed as
        no data or not reconciled (the job writes no row for a day without raw data)
    :return: days (one entry per task and day, see day_drift, plus task and attempt), threshold (the
        pipeline's, as the rows give it; None without rows, or when they give several), thresholds,
        over_threshold (the days over it), ok, run_ids, no_summary_days, notes
    """
    prefix = dag_run_prefix(dag_run_id)
    by_run_day: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    first: dict[tuple[str, str], tuple[int, str]] = {}  # (task, day) -> (try, run id)
    attempts: dict[tuple[str, str], set[int]] = {}
    for row in rows:
        parsed = parse_attempt(row["run_id"], prefix, task_ids)
        if parsed is None:
            continue
        task, attempt = parsed
        by_run_day.setdefault((row["run_id"], row["day"]), []).append(row)
        attempts.setdefault((task, row["day"]), set()).add(attempt)
        if (task, row["day"]) not in first or attempt < first[(task, row["day"])][0]:
            first[(task, row["day"])] = (attempt, row["run_id"])
    days, notes = [], []
    for (task, day), (attempt, run_id) in sorted(first.items(), key=lambda kv: (kv[0][1], task_ids.index(kv[0][0]))):
        days.append({**day_drift(by_run_day[(run_id, day)]), "task": task, "attempt": attempt})
        if len(attempts[(task, day)]) > 1:
            notes.append(f"{day}: reconciled by attempts {', '.join(map(str, sorted(attempts[(task, day)])))} of {task}; "
                         f"the drift is attempt {attempt}'s (later ones compared with its output, not the stream's)")
    seen = {d["day"] for d in days}
    over = [d for d in days if d["over_threshold"]]
    thresholds = sorted({m for d in days for m in ([d["threshold"]] if d["threshold"] is not None else [])})
    return {
        "threshold": thresholds[0] if len(thresholds) == 1 else None, "thresholds": thresholds,
        "run_ids": sorted({d["run_id"] for d in days}), "days": days,
        "no_summary_days": sorted(set(expected_days) - seen),
        "over_threshold": sorted({d["day"] for d in over}), "ok": not over, "notes": notes,
    }


def drift_summary(lakehouse: str, *, dag_run_id: str, task_ids: tuple[str, ...], expected_days: Iterable[str] = (),
                  top_dimensions: int = 5) -> dict[str, Any]:
    """summarize() over the lakehouse's reconcile_report, with, for each day over the threshold, the worst
    dimension values of each measure over it (``worst``: kpi, measure, dimensions as a dict, windows,
    drift, late_records, share_of_drift: the part of that measure's drift of the day)."""
    summary = summarize(lh.read_summaries(lakehouse, dag_run_prefix(dag_run_id)), dag_run_id=dag_run_id,
                        task_ids=task_ids, expected_days=expected_days)
    for d in summary["days"]:
        if not d["over_threshold"]:
            continue
        over = {(m["kpi"], m["measure"]): m for m in d["measures"] if m["over_threshold"]}
        d["worst"] = lh.read_worst_dimensions(lakehouse, d["run_id"], d["day"], list(over), top_dimensions)
        for w in d["worst"]:  # its changed windows hold a part of the measure's drift of the day
            w["dimensions"] = json.loads(w["dimensions"]) if w.get("dimensions") else {}
            w["share_of_drift"] = _rel(w["drift"], over[(w["kpi"], w["measure"])]["drift"])
    return summary


def pct(x: float | None) -> str:
    return "n/a" if x is None else f"{x * 100:+.3f}%"


def value(x: float | None, signed: bool = True) -> str:
    """A measure's value or drift (signed), in its own unit (GB, records, ...)."""
    return "n/a" if x is None else f"{x:{'+' if signed else ''},.15g}"


def dimensions_text(dimensions: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in dimensions.items()) or "(no dimensions)"


def threshold_text(summary: Mapping[str, Any]) -> str:
    """The threshold the rows were judged by: one value, several (runs of different pipelines), or none yet."""
    thresholds = summary.get("thresholds") or ([summary["threshold"]] if summary.get("threshold") is not None else [])
    if not thresholds:
        return "the pipeline's drift_threshold"
    return "/".join(f"{t * 100:g}%" for t in thresholds)


def over_text(d: Mapping[str, Any]) -> str:
    """The measures of a day over the threshold with their relative drifts, e.g. kpi_5m.total_gb +10.000%."""
    return ", ".join(f"{measure_name(m)} {pct(m['drift_rel'])}" for m in d.get("measures", []) if m["over_threshold"])


def worst_text(w: Mapping[str, Any]) -> str:
    share = "" if w.get("share_of_drift") is None else f" ({w['share_of_drift'] * 100:.0f}% of its drift of the day)"
    return (f"{w['kpi']}.{w['measure']} {dimensions_text(w['dimensions'])}: {value(w['drift'])}{share}, "
            f"{w['windows']} windows changed, {w['late_records']} late records")


def describe_drift(summary: Mapping[str, Any]) -> str:
    """A short text table of a drift summary, for logs."""
    lines = [f"drift threshold {threshold_text(summary)} (the pipeline's); "
             f"reconcile runs: {', '.join(summary['run_ids']) or 'none'}"]
    if not summary["days"]:
        lines.append("no day was reconciled")
    for d in summary["days"]:
        largest = f" ({d['drift_measure']})" if d.get("drift_measure") else ""
        verdict = f"  OVER THRESHOLD {threshold_text(d)}: {over_text(d)}" if d["over_threshold"] else ""
        lines.append(f"  {d['day']}: drift {pct(d['drift'])}{largest}, {d['late_records']} late records, "
                     f"{d['windows_changed']} windows changed{verdict}")
        for m in d["measures"]:
            lines.append(f"      {measure_name(m)}: {value(m['stream_value'], False)} -> {value(m['batch_value'], False)}, drift "
                         f"{value(m['drift'])} ({pct(m['drift_rel'])}){', estimate' if m['estimate'] else ''}"
                         f"{'  over' if m['over_threshold'] else ''}")
        for w in d.get("worst", []):
            lines.append(f"      worst {worst_text(w)}")
    lines.extend(f"  {day}: no data or not reconciled (no summary row in reconcile_report)"
                 for day in summary["no_summary_days"])
    lines.extend(f"  note: {n}" for n in summary.get("notes", []))
    return "\n".join(lines)


def failure(summary: Mapping[str, Any]) -> str | None:
    """The one-line reason to fail the run (days over the threshold, their measures over it, each with its three
    worst dimension values), else None."""
    if not summary["over_threshold"]:
        return None

    def measures(d: Mapping[str, Any]) -> str:
        out = []
        for m in d["measures"]:
            if m["over_threshold"]:
                worst = [w for w in d.get("worst", []) if (w["kpi"], w["measure"]) == (m["kpi"], m["measure"])][:3]
                out.append(f"{measure_name(m)} {pct(m['drift_rel'])} (worst: "
                           + (", ".join(f"{dimensions_text(w['dimensions'])} {value(w['drift'])}" for w in worst) or "none")
                           + ")")
        return ", ".join(out)

    days = "; ".join(f"{d['day']} {measures(d)}" for d in summary["days"] if d["over_threshold"])
    return f"drift over {threshold_text(summary)} on {len(summary['over_threshold'])} day(s): {days}"
