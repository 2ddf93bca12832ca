"""A reconcile request checked and turned into spark-submit arguments (pure: no Airflow, no I/O);
the same for the maintenance that follows it (plan_maintain).

Which days are closed is the stream's decision, not this module's: every stream_progress row records
``last_closed_day`` (every day up to it is closed; null: none yet). A range is accepted only when all
its days are at most the ``last_closed_day`` of the latest row. The most recent days (``--recent N``)
and the dirty days are chosen by ReconcileJob itself, which refuses (exit 2) when it cannot.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Mapping
from typing import Any, NamedTuple

DEFAULT_RECENT_DAYS = 3
# The drift threshold is the pipeline's (the drift_threshold option of its event table), not a DAG param.
REMOVED_PARAMS = {
    "drift_threshold": "drift_threshold is no longer a DAG parameter: the threshold is the pipeline's (the "
                       "drift_threshold option of its event table, default 0.01); set it in the pipeline file "
                       "(the DAG param pipeline names it)",
}
# Delta's safety minimum for vacuum, which Maintenance enforces too: the DAG never passes --force.
MIN_VACUUM_RETENTION_HOURS = 168
_DAY = re.compile(r"^\d{4}-\d{2}-\d{2}$")


class ReconcileRequestError(ValueError):
    """A reconcile request that must not run; the message is one line meant for the operator."""


class StreamProgress(NamedTuple):
    """The stream_progress row with the highest batch_id (newest finished_at on a tie)."""

    batch_id: int
    last_closed_day: dt.date | None  # every day <= it is closed; None: no day closed (or no decision recorded)
    recorded: bool = True  # False: stream_progress predates the last_closed_day column

    def is_closed(self, day: dt.date) -> bool:
        return self.last_closed_day is not None and day <= self.last_closed_day


def parse_day(name: str, value: Any) -> dt.date:
    if not isinstance(value, str) or not _DAY.match(value.strip()):
        raise ReconcileRequestError(f"{name} {value!r} is not a date: expected yyyy-mm-dd (a UTC day)")
    try:
        return dt.date.fromisoformat(value.strip())
    except ValueError:
        raise ReconcileRequestError(f"{name} {value!r} is not a valid calendar date (yyyy-mm-dd)") from None


def days_between(start: str, end: str) -> list[str]:
    """Every day from start to end, both included, as yyyy-mm-dd."""
    first, last = dt.date.fromisoformat(start), dt.date.fromisoformat(end)
    return [(first + dt.timedelta(days=i)).isoformat() for i in range((last - first).days + 1)]


def check_lakehouse_location(lakehouse: Any) -> str:
    if not isinstance(lakehouse, str) or not lakehouse.strip():
        raise ReconcileRequestError(
            "no lakehouse given: pass the lakehouse param, or set the Variable tidemark_lakehouse "
            "or the environment variable TIDEMARK_LAKEHOUSE")
    lakehouse = lakehouse.strip()
    if "://" not in lakehouse and not lakehouse.startswith("/"):
        raise ReconcileRequestError(
            f"lakehouse {lakehouse!r} is relative: give an absolute path or a URI (Spark and this check may run "
            "in different directories)")
    return lakehouse


def _number(name: str, value: Any, *, integer: bool, minimum: float) -> float:
    ok = (not isinstance(value, bool) and isinstance(value, (int, float)) and math.isfinite(float(value))
          and value >= minimum and (not integer or float(value).is_integer()))
    if not ok:
        raise ReconcileRequestError(f"{name} {value!r} must be {'a whole number' if integer else 'a number'} >= {minimum:g}")
    return value


def check_pipeline(pipeline: Any) -> str | None:
    """The pipeline param: None (empty: the job's default, its pipeline setting), a shipped pipeline's
    name (``network``) or an absolute path or URI of a pipeline file (``.sql``)."""
    if pipeline is None or (isinstance(pipeline, str) and not pipeline.strip()):
        return None
    if not isinstance(pipeline, str):
        raise ReconcileRequestError(f"pipeline {pipeline!r} must be a pipeline file or a shipped pipeline's name")
    pipeline = pipeline.strip()
    is_file = "/" in pipeline or pipeline.endswith(".sql")
    if is_file and "://" not in pipeline and not pipeline.startswith("/"):
        raise ReconcileRequestError(
            f"pipeline {pipeline!r} is relative: give an absolute path or a URI (Spark and this check may run "
            "in different directories)")
    return pipeline


def _not_closed_why(progress: StreamProgress | None) -> str:
    if progress is None:
        return "the stream has not recorded any micro-batch yet (stream_progress is empty), so no day is closed"
    if not progress.recorded:
        return ("stream_progress has no last_closed_day column (the lakehouse was written by an older stream): "
                "the stream must run one more batch to record which days are closed")
    if progress.last_closed_day is None:
        return (f"the stream's latest batch ({progress.batch_id}) records no closed day (last_closed_day is null); "
                "if days should be closed by now, the stream must run one more batch to record them")
    return f"the last closed day is {progress.last_closed_day} (stream_progress batch {progress.batch_id})"


def plan_reconcile(params: Mapping[str, Any], progress: StreamProgress | None) -> dict[str, Any]:
    """Checks a request against the stream's closed days and turns it into spark-submit arguments.

    :param params: the DAG run's params (from_date, to_date, recent_days, include_dirty, pipeline)
    :param progress: the stream's latest progress row, None when the stream has recorded nothing
    :raises ReconcileRequestError: the request must not run (the message says why, in one line)
    """
    for name, why in REMOVED_PARAMS.items():
        if name in params:
            raise ReconcileRequestError(why)
    raw_from, raw_to = params.get("from_date"), params.get("to_date")
    raw_from = None if raw_from in (None, "") else raw_from
    raw_to = None if raw_to in (None, "") else raw_to
    recent = int(_number("recent_days", params.get("recent_days", DEFAULT_RECENT_DAYS), integer=True, minimum=1))
    pipeline = check_pipeline(params.get("pipeline"))
    include_dirty = params.get("include_dirty", True)
    if not isinstance(include_dirty, bool):
        raise ReconcileRequestError(f"include_dirty {include_dirty!r} must be true or false")

    last = progress.last_closed_day if progress else None
    plan: dict[str, Any] = {
        "include_dirty": include_dirty,
        "pipeline": pipeline,
        "last_closed_day": last.isoformat() if last else None,
        "progress_batch_id": progress.batch_id if progress else None,
        "dirty_args": ["--dirty"] if include_dirty else None,
    }
    if raw_from is None and raw_to is None:
        # The job picks the days (and refuses when the stream has recorded no decision).
        plan.update(mode="recent", recent_days=recent, from_date=None, to_date=None,
                    selection_args=["--recent", str(recent)])
        return plan
    if raw_from is None or raw_to is None:
        given, missing = ("from_date", "to_date") if raw_to is None else ("to_date", "from_date")
        raise ReconcileRequestError(f"{given} needs {missing} too (for one day give the same date to both)")
    start, end = parse_day("from_date", raw_from), parse_day("to_date", raw_to)
    if end < start:
        raise ReconcileRequestError(f"to_date {end} is before from_date {start}: the range is empty")
    open_days = [d for d in map(dt.date.fromisoformat, days_between(start.isoformat(), end.isoformat()))
                 if progress is None or not progress.is_closed(d)]
    if open_days:
        which = (f"day {open_days[0]} is" if len(open_days) == 1
                 else f"days {open_days[0]}..{open_days[-1]} ({len(open_days)} days) are")
        raise ReconcileRequestError(f"{which} not closed yet: {_not_closed_why(progress)}. Reconcile closed days only.")
    plan.update(mode="range", recent_days=None, from_date=start.isoformat(), to_date=end.isoformat(),
                selection_args=["--from", start.isoformat(), "--to", end.isoformat()])
    return plan


def _flag(name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise ReconcileRequestError(f"{name} {value!r} must be true or false")
    return value


def plan_maintain(params: Mapping[str, Any]) -> dict[str, Any]:
    """Checks the maintenance params and turns them into Maintenance's spark-submit arguments.

    :param params: the DAG run's params (maintain, vacuum, vacuum_retention_hours)
    :return: maintain, vacuum, vacuum_retention_hours and maintain_args (None: no maintenance)
    :raises ReconcileRequestError: the request must not run (the message says why, in one line)
    """
    maintain = _flag("maintain", params.get("maintain", True))
    vacuum = _flag("vacuum", params.get("vacuum", True))
    hours = int(_number("vacuum_retention_hours", params.get("vacuum_retention_hours", MIN_VACUUM_RETENTION_HOURS),
                        integer=True, minimum=1))
    if hours < MIN_VACUUM_RETENTION_HOURS:
        raise ReconcileRequestError(
            f"vacuum_retention_hours {hours} is below Delta's safety minimum of {MIN_VACUUM_RETENTION_HOURS} hours "
            "(7 days): a stream replaying a batch, a reconcile or a query on an older table version may still read "
            f"those files. Give at least {MIN_VACUUM_RETENTION_HOURS} (the DAG never forces a shorter one)")
    args = [f"maintain.vacuum-retention={hours} hours"] if vacuum else ["--no-vacuum"]
    return {"maintain": maintain, "vacuum": vacuum, "vacuum_retention_hours": hours,
            "maintain_args": args if maintain else None}


def plan_report(params: Mapping[str, Any]) -> bool:
    """Whether the run writes the drift and health report (param report, default true)."""
    return _flag("report", params.get("report", True))
