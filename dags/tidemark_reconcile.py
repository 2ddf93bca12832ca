"""
### tidemark_reconcile: the batch layer of Tidemark, daily and on demand

Recomputes closed UTC days from `raw_events` with the reconcile Spark job
(`io.tidemark.reconcile.ReconcileJob` in `tidemark-spark-jobs.jar`, run by `SparkSubmitOperator`),
replaces those days' `kpi_5m` partitions (`source = batch`) and fails the run when the stream's
answer drifted from the truth by more than `drift_threshold` on any day.

Tasks, in order:

1. `validate_params`: checks the request beyond the JSON schema (both dates or none, end not before
   start, every day closed: day D is closed iff D+1 00:00 UTC <= the `next_watermark` of the
   `stream_progress` row with the highest `batch_id`, read with `deltalake`), that the lakehouse
   and the jar exist and that the `spark_default` connection is set. Bad input fails at once,
   without retries, with a one-line reason.
2. `reconcile_selection`: `spark-submit` of the job for the range (`--from/--to`), else for the
   `recent_days` most recent closed days (`--recent N`).
3. `reconcile_dirty`: a second `spark-submit` with `--dirty` (closed days that received late
   records since they were last reconciled); skipped when `include_dirty` is false.
4. `check_drift`: reads this run's summary rows of `reconcile_report` (by the reconcile run ids
   the job printed), pushes them as XCom `drift_summary` and fails naming the days over
   the threshold and their worst cells. Relative drift of a day = the larger of
   |volume drift| / batch volume and |record-count drift| / batch count.

Reconciles never overlap: `max_active_runs=1`, each Spark task has `max_active_tis_per_dag=1`
and the two run one after the other. (The job itself also retries Delta commit conflicts with
the stream, so a `tidemark reconcile` started by hand at the same time stays correct.)

#### Setup (once)

* `spark-submit` on the PATH of the workers (Spark 4.2; `pip install pyspark==4.2.0` carries one;
  if `SPARK_HOME` is unset the task derives it from an installed `pyspark`).
* Connection `spark_default`, e.g. local mode:
  `AIRFLOW_CONN_SPARK_DEFAULT='{"conn_type":"spark","host":"local[*]"}'`
  (without it the Spark provider silently falls back to master `yarn`: this DAG refuses to run).
  For a cluster: host `spark://master`, `yarn` or `k8s://...`.
* Where the lakehouse is (an absolute path or a URI that both Spark and `deltalake` can read):
  Variable `tidemark_lakehouse`, else env `TIDEMARK_LAKEHOUSE`; the `lakehouse` param wins over both.
* The jar: Variable `tidemark_jobs_jar`, else env `TIDEMARK_JOBS_JAR`, else
  `<repo>/spark-submit-jar/target/tidemark-spark-jobs.jar` (build: `mvn -B -q install -DskipTests`).
* Optional: Variable `tidemark_spark_conf`, a JSON object of extra `--conf` settings
  (e.g. `{"spark.executor.memory": "4g"}`); env `TIDEMARK_RECONCILE_SCHEDULE` (a cron
  expression, or `none` for manual runs only; default `30 1 * * *`, read when the file is parsed).

#### Running it

* Daily at 01:30 UTC with the defaults: the 3 most recent closed days, then the dirty ones.
* A range, from the CLI: `airflow dags trigger tidemark_reconcile -c
  '{"from_date": "2026-11-27", "to_date": "2026-11-28", "include_dirty": false}'`,
  or from the "Trigger" form, or with `python -m tidemark_airflow trigger --from D1 --to D2 --wait`
  (python/tidemark_airflow: triggers, follows and prints the drift summary).
* Params: `from_date`/`to_date` (yyyy-mm-dd, UTC, both included, both or neither), `recent_days`
  (default 3), `include_dirty` (default true), `drift_threshold` (relative, default 0.05;
  0 fails on any drift), `lakehouse`.
* A failed `check_drift` is not retried: the tables are already reconciled, the failure is the
  alarm. Look at its log or at the `drift_by_day` view (`tidemark sql`).
"""

from __future__ import annotations

import datetime as dt
import json
import math
import os
import re
import shutil
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.sdk import Param, dag, task
from airflow.sdk.exceptions import AirflowException, AirflowFailException, AirflowSkipException

DAG_ID = "tidemark_reconcile"
JOB_CLASS = "io.tidemark.reconcile.ReconcileJob"
REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_JAR = REPO_ROOT / "spark-submit-jar" / "target" / "tidemark-spark-jobs.jar"
DEFAULT_SCHEDULE = "30 1 * * *"
DEFAULT_DRIFT_THRESHOLD = 0.05
PLAN_TASK = "validate_params"
RECONCILE_TASKS = ("reconcile_selection", "reconcile_dirty")
DRIFT_XCOM_KEY = "drift_summary"

# Spark 4.2 on Java 17: the same list as the root pom's property spark.jvm.opens (a test keeps them equal).
SPARK_JVM_OPENS = " ".join(
    [f"--add-opens=java.base/{pkg}=ALL-UNNAMED" for pkg in (
        "java.lang", "java.lang.invoke", "java.lang.reflect", "java.io", "java.net", "java.nio", "java.util",
        "java.util.concurrent", "java.util.concurrent.atomic", "sun.nio.ch", "sun.nio.cs", "sun.security.action",
        "sun.util.calendar")]
    + ["-Djdk.reflect.useDirectMethodHandle=false"]
)

_DAY = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_RUN_LINE = re.compile(r"^reconcile (reconcile-\d{8}T\d{6}Z-[0-9a-f]{8}): (.*)$")
_DAY_LINE = re.compile(r"^reconcile (\d{4}-\d{2}-\d{2}) \[(\d+)/(\d+)\]: (.*)$")
_RUN_ID = re.compile(r"^reconcile-\d{8}T\d{6}Z-[0-9a-f]{8}$")


# --------------------------------------------------------------------------------------------
# Request validation (pure functions: tested directly)
# --------------------------------------------------------------------------------------------

class ReconcileRequestError(ValueError):
    """A reconcile request that must not run; the message is one line meant for the operator."""


class StreamProgress(NamedTuple):
    """The stream_progress row with the highest batch id: what decides which days are closed."""

    batch_id: int
    watermark: dt.datetime  # aware, UTC


def day_end(day: dt.date) -> dt.datetime:
    """Midnight UTC after ``day``: the watermark must reach it for the day to be closed."""
    return dt.datetime.combine(day + dt.timedelta(days=1), dt.time(0), tzinfo=dt.timezone.utc)


def is_closed(day: dt.date, progress: StreamProgress | None) -> bool:
    return progress is not None and day_end(day) <= progress.watermark


def last_closed_day(progress: StreamProgress | None) -> dt.date | None:
    if progress is None:
        return None
    return progress.watermark.astimezone(dt.timezone.utc).date() - dt.timedelta(days=1)


def parse_day(name: str, value: Any) -> dt.date:
    if not isinstance(value, str) or not _DAY.match(value.strip()):
        raise ReconcileRequestError(f"{name} {value!r} is not a date: expected yyyy-mm-dd (a UTC day)")
    try:
        return dt.date.fromisoformat(value.strip())
    except ValueError:
        raise ReconcileRequestError(f"{name} {value!r} is not a valid calendar date (yyyy-mm-dd)") from None


def _number(name: str, value: Any, *, integer: bool, minimum: float) -> float:
    ok = (not isinstance(value, bool) and isinstance(value, (int, float)) and math.isfinite(float(value))
          and value >= minimum and (not integer or float(value).is_integer()))
    if not ok:
        raise ReconcileRequestError(f"{name} {value!r} must be {'a whole number' if integer else 'a number'} >= {minimum:g}")
    return value


def plan_reconcile(params: Mapping[str, Any], progress: StreamProgress | None) -> dict[str, Any]:
    """Checks a request against the closed days and turns it into spark-submit arguments.

    :param params: the DAG run's params (from_date, to_date, recent_days, include_dirty, drift_threshold)
    :param progress: the stream's latest progress row, None when the stream has recorded nothing
    :raises ReconcileRequestError: the request must not run (the message says why, in one line)
    """
    raw_from, raw_to = params.get("from_date"), params.get("to_date")
    raw_from = None if raw_from in (None, "") else raw_from
    raw_to = None if raw_to in (None, "") else raw_to
    recent = int(_number("recent_days", params.get("recent_days", 3), integer=True, minimum=1))
    threshold = float(_number("drift_threshold", params.get("drift_threshold", DEFAULT_DRIFT_THRESHOLD),
                              integer=False, minimum=0))
    include_dirty = params.get("include_dirty", True)
    if not isinstance(include_dirty, bool):
        raise ReconcileRequestError(f"include_dirty {include_dirty!r} must be true or false")

    plan: dict[str, Any] = {
        "include_dirty": include_dirty,
        "drift_threshold": threshold,
        "watermark": progress.watermark.isoformat() if progress else None,
        "watermark_batch_id": progress.batch_id if progress else None,
        "last_closed_day": (d.isoformat() if (d := last_closed_day(progress)) else None),
        "dirty_args": ["--dirty"] if include_dirty else None,
    }
    if raw_from is None and raw_to is None:
        plan.update(mode="recent", recent_days=recent, from_date=None, to_date=None,
                    selection_args=["--recent", str(recent)])
        return plan
    if raw_from is None or raw_to is None:
        given, missing = ("from_date", "to_date") if raw_to is None else ("to_date", "from_date")
        raise ReconcileRequestError(f"{given} needs {missing} too (for one day give the same date to both)")
    start, end = parse_day("from_date", raw_from), parse_day("to_date", raw_to)
    if end < start:
        raise ReconcileRequestError(f"to_date {end} is before from_date {start}: the range is empty")
    open_days = [start + dt.timedelta(days=i) for i in range((end - start).days + 1)
                 if not is_closed(start + dt.timedelta(days=i), progress)]
    if open_days:
        which = (f"day {open_days[0]} is" if len(open_days) == 1
                 else f"days {open_days[0]}..{open_days[-1]} ({len(open_days)} days) are")
        if progress is None:
            why = "the stream has not recorded any micro-batch yet (stream_progress is empty), so no day is closed"
        else:
            why = (f"the stream's watermark is {progress.watermark.isoformat()} (batch {progress.batch_id}); "
                   f"a day closes when it reaches the next midnight UTC, the last closed day is {last_closed_day(progress)}")
        raise ReconcileRequestError(f"{which} not closed yet: {why}. Reconcile closed days only.")
    plan.update(mode="range", recent_days=None, from_date=start.isoformat(), to_date=end.isoformat(),
                selection_args=["--from", start.isoformat(), "--to", end.isoformat()])
    return plan


# --------------------------------------------------------------------------------------------
# Lakehouse reads (deltalake, imported lazily: the DAG file stays cheap to parse)
# --------------------------------------------------------------------------------------------

def table_uri(lakehouse: str, table: str) -> str:
    return lakehouse.rstrip("/") + "/" + table


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


def _query(lakehouse: str, sql: str, **tables: str) -> list[dict[str, Any]]:
    """Runs SQL over Delta tables with deltalake's QueryBuilder (which also reads deletion vectors)."""
    import pyarrow as pa
    from deltalake import DeltaTable, QueryBuilder
    from deltalake.exceptions import TableNotFoundError

    qb = QueryBuilder()
    for alias, name in tables.items():
        uri = table_uri(lakehouse, name)
        try:
            qb.register(alias, DeltaTable(uri))
        except TableNotFoundError:
            raise ReconcileRequestError(
                f"no Delta table at {uri}: is {lakehouse!r} the root of a Tidemark lakehouse "
                "(the stream's lakehouse= setting)?") from None
    return pa.table(qb.execute(sql).read_all()).to_pylist()


def read_stream_progress(lakehouse: str) -> StreamProgress | None:
    """The stream_progress row with the highest batch_id (newest finished_at on a tie), None if empty."""
    # next_watermark: what the stream will use from its next batch on, the same rule as ReconcileJob's ClosedDays
    rows = _query(lakehouse, "SELECT batch_id, next_watermark FROM sp ORDER BY batch_id DESC, finished_at DESC LIMIT 1",
                  sp="stream_progress")
    if not rows:
        return None
    wm = rows[0]["next_watermark"]
    wm = wm.replace(tzinfo=dt.timezone.utc) if wm.tzinfo is None else wm.astimezone(dt.timezone.utc)
    return StreamProgress(int(rows[0]["batch_id"]), wm)


def _float(v: Any) -> float | None:
    return None if v is None else float(v)


def _rel(drift: float | None, base: float | None) -> float | None:
    if drift is None or base is None:
        return None
    if base == 0:
        return 0.0 if drift == 0 else None  # None: undefined (truth is zero, the stream was not)
    return drift / base


def drift_summary(lakehouse: str, runs: list[Mapping[str, Any]], threshold: float, *, top_cells: int = 5) -> dict[str, Any]:
    """This DAG run's drift, per reconciled day, from reconcile_report.

    :param runs: what the reconcile tasks returned (run ids, reconciled and empty days)
    """
    run_ids = sorted({r for run in runs for r in run.get("run_ids", [])})
    notes = []
    for run in runs:
        if run.get("run_ids") or not run.get("started") or not run.get("finished"):
            continue
        # The job's lines did not reach spark-submit's output (e.g. a driver in cluster deploy mode):
        # take the report's runs that started while the task ran (2 minutes of slack for clock skew).
        start = (dt.datetime.fromisoformat(run["started"]) - dt.timedelta(minutes=2)).isoformat()
        end = (dt.datetime.fromisoformat(run["finished"]) + dt.timedelta(minutes=2)).isoformat()
        found = [row["run_id"] for row in _query(lakehouse, f"""
            SELECT DISTINCT run_id FROM rr WHERE row_kind = 'summary'
            AND run_started_at BETWEEN to_timestamp('{start}') AND to_timestamp('{end}')""", rr="reconcile_report")]
        notes.append(f"{run.get('selection')}: no run id in the job's output; by start time: {', '.join(found) or 'none'}")
        run_ids = sorted(set(run_ids) | set(found))
    for r in run_ids:
        if not _RUN_ID.match(r):  # they go into SQL below
            raise ValueError(f"unexpected reconcile run id {r!r}")
    reconciled = {(d["run_id"], d["day"]) for run in runs for d in run.get("days", []) if d.get("status") == "reconciled"}
    no_data = sorted({d["day"] for run in runs for d in run.get("days", []) if d.get("status") == "no data"})
    rows: list[dict[str, Any]] = []
    if run_ids:
        ids = ", ".join(f"'{r}'" for r in run_ids)
        rows = _query(lakehouse, f"""
            SELECT run_id, CAST(event_date AS VARCHAR) AS day, stream_count, batch_count,
                   CAST(stream_gb AS DOUBLE) AS stream_gb, CAST(batch_gb AS DOUBLE) AS batch_gb,
                   CAST(gb_drift AS DOUBLE) AS gb_drift, gb_drift_rel, stream_subscribers, batch_subscribers,
                   subscribers_drift_rel, late_records, windows_changed
            FROM rr WHERE row_kind = 'summary' AND run_id IN ({ids})
            ORDER BY day, run_started_at""", rr="reconcile_report")
    days = []
    for row in rows:
        count_drift = None if row["batch_count"] is None else row["batch_count"] - (row["stream_count"] or 0)
        gb_rel = _float(row["gb_drift_rel"])
        if gb_rel is None:
            gb_rel = _rel(_float(row["gb_drift"]), _float(row["batch_gb"]))
        count_rel = _rel(_float(count_drift), _float(row["batch_count"]))
        undefined = (gb_rel is None and row["gb_drift"] not in (None, 0)) or (count_rel is None and count_drift not in (None, 0))
        drift = None if undefined else max(abs(gb_rel or 0.0), abs(count_rel or 0.0))
        days.append({
            "day": row["day"], "run_id": row["run_id"],
            "stream_count": row["stream_count"], "batch_count": row["batch_count"], "count_drift": count_drift,
            "count_drift_rel": count_rel,
            "stream_gb": _float(row["stream_gb"]), "batch_gb": _float(row["batch_gb"]),
            "gb_drift": _float(row["gb_drift"]), "gb_drift_rel": gb_rel,
            "stream_subscribers": row["stream_subscribers"], "batch_subscribers": row["batch_subscribers"],
            "subscribers_drift_rel": _float(row["subscribers_drift_rel"]),
            "late_records": row["late_records"], "windows_changed": row["windows_changed"],
            "drift": drift, "over_threshold": drift is None or drift > threshold,
        })
    missing = sorted(reconciled - {(d["run_id"], d["day"]) for d in days})
    over = [d for d in days if d["over_threshold"]]
    for d in over:
        d["worst_cells"] = _query(lakehouse, f"""
            SELECT * FROM (
              SELECT cell_site_id, count(*) AS windows, sum(stream_count) AS stream_count,
                     sum(batch_count) AS batch_count, CAST(sum(gb_drift) AS DOUBLE) AS gb_drift,
                     CAST(sum(batch_gb) AS DOUBLE) AS batch_gb, sum(late_records) AS late_records
              FROM rr WHERE row_kind = 'window' AND run_id = '{d["run_id"]}' AND event_date = DATE '{d["day"]}'
              GROUP BY cell_site_id) AS cells
            ORDER BY abs(gb_drift) DESC, cell_site_id LIMIT {int(top_cells)}""", rr="reconcile_report")
        for c in d["worst_cells"]:  # share of the day's volume drift (its changed windows only hold a part of the day)
            c["share_of_drift"] = _rel(c["gb_drift"], d["gb_drift"])
    return {
        "threshold": threshold, "run_ids": run_ids, "days": days, "no_data_days": no_data,
        "missing_report": [{"run_id": r, "day": d} for r, d in missing],
        "over_threshold": [d["day"] for d in over],
        "ok": not over and not missing, "notes": notes,
    }


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{x * 100:+.3f}%"


def describe_drift(summary: Mapping[str, Any]) -> str:
    """A short text table of a drift summary, for logs and exception messages."""
    lines = [f"drift threshold {summary['threshold'] * 100:.3f}%; reconcile runs: {', '.join(summary['run_ids']) or 'none'}"]
    if not summary["days"]:
        lines.append("no day was reconciled" + (f" (no data: {', '.join(summary['no_data_days'])})"
                                                 if summary["no_data_days"] else ""))
    for d in summary["days"]:
        lines.append(
            f"  {d['day']}: drift {_pct(d['drift'])} (volume {_pct(d['gb_drift_rel'])}, records {_pct(d['count_drift_rel'])}: "
            f"{d['stream_count']} -> {d['batch_count']}), {d['late_records']} late records, "
            f"{d['windows_changed']} windows changed{'  OVER THRESHOLD' if d['over_threshold'] else ''}")
        for c in d.get("worst_cells", []):
            share = "" if c.get("share_of_drift") is None else f", {c['share_of_drift'] * 100:.0f}% of the day's drift"
            lines.append(f"      cell {c['cell_site_id']}: {c['gb_drift']:+.6f} GB{share}, {c['windows']} windows changed, "
                         f"{c['late_records']} late records")
    for m in summary["missing_report"]:
        lines.append(f"  {m['day']}: reconciled by {m['run_id']} but reconcile_report has no summary row for it")
    lines.extend(f"  note: {n}" for n in summary.get("notes", []))
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------
# Spark submission
# --------------------------------------------------------------------------------------------

def spark_conf(extra: Mapping[str, Any] | None = None) -> dict[str, str]:
    conf = {
        "spark.driver.extraJavaOptions": SPARK_JVM_OPENS,
        "spark.executor.extraJavaOptions": SPARK_JVM_OPENS,
        "spark.ui.showConsoleProgress": "false",
        # Spark's INFO chatter would be thousands of lines in the task log; the job's own lines are stdout.
        "spark.log.level": "WARN",
    }
    conf.update({str(k): str(v) for k, v in (extra or {}).items()})
    return conf


def spark_env() -> dict[str, str]:
    """Environment for spark-submit: loopback, and SPARK_HOME / PATH when Spark comes from pip's pyspark."""
    env = {"SPARK_LOCAL_IP": os.environ.get("SPARK_LOCAL_IP", "127.0.0.1")}
    if not os.environ.get("SPARK_HOME"):
        import importlib.util

        spec = importlib.util.find_spec("pyspark")  # locates, does not import
        if spec and spec.origin:
            env["SPARK_HOME"] = str(Path(spec.origin).parent)
    if shutil.which("spark-submit") is None and (Path(sys.executable).parent / "spark-submit").exists():
        env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    return env


class ReconcileSubmitOperator(SparkSubmitOperator):
    """spark-submit of ReconcileJob for one selection of the plan made by ``validate_params``.

    Reads the jar, lakehouse and arguments from the plan at run time, keeps the job's progress lines
    (run id, one line per day) and returns them as XCom; exit status 2 (the job refused the input)
    fails without retries.
    """

    def __init__(self, *, selection: str, **kwargs: Any) -> None:
        kwargs.setdefault("conn_id", "spark_default")
        kwargs.setdefault("name", f"tidemark-reconcile-{selection}")
        super().__init__(application="", java_class=JOB_CLASS, **kwargs)
        self.selection = selection
        self._job_lines: list[str] = []

    def _get_hook(self):
        hook = super()._get_hook()
        process = getattr(hook, "_process_spark_submit_log", None)
        if process is not None:  # keep the job's own lines while the hook logs them as usual
            def tee(itr):
                for line in itr:
                    text = line.strip()
                    if text.startswith("reconcile ") or text.startswith("tidemark reconcile:"):
                        self._job_lines.append(text)
                    yield line

            hook._process_spark_submit_log = lambda itr: process(tee(itr))
        return hook

    def execute(self, context):
        plan = context["ti"].xcom_pull(task_ids=PLAN_TASK)
        args = plan.get(f"{self.selection}_args") if plan else None
        if not args:
            raise AirflowSkipException(f"nothing to run for {self.selection} (include_dirty is false)")
        from airflow.sdk import Variable

        self.application = plan["jar"]
        self.application_args = [*args, f"lakehouse={plan['lakehouse']}"]
        extra = Variable.get("tidemark_spark_conf", default=None)
        try:
            extra = json.loads(extra) if extra else {}
            if not isinstance(extra, dict):
                raise ValueError
        except ValueError:
            raise AirflowFailException("the Variable tidemark_spark_conf must be a JSON object of Spark settings") from None
        self.conf = spark_conf({**(self.conf or {}), **extra})
        self.env_vars = {**spark_env(), **(self.env_vars or {})}
        self._job_lines = []
        started = dt.datetime.now(dt.timezone.utc)
        try:
            super().execute(context)
        except Exception as e:
            sp = getattr(self._hook, "_submit_sp", None)
            code = sp.returncode if sp is not None else None
            reason = next((ln for ln in reversed(self._job_lines) if ln.startswith("tidemark reconcile:")), None)
            if code == 2:
                raise AirflowFailException(f"the reconcile job refused the request (exit 2): {reason or e}") from None
            if reason:
                raise AirflowException(f"the reconcile job failed (exit {code}): {reason}") from e
            raise
        return self._result(started)

    def _result(self, started: dt.datetime) -> dict[str, Any]:
        run_ids, days, run_id = [], [], None
        for line in self._job_lines:
            if m := _RUN_LINE.match(line):
                run_id = m.group(1)
                run_ids.append(run_id)
            elif (m := _DAY_LINE.match(line)) and run_id:
                text = m.group(4)
                status = "no data" if text.startswith("no data") else "dry run" if "dry run" in text else "reconciled"
                days.append({"run_id": run_id, "day": m.group(1), "status": status, "line": text})
        return {"selection": self.selection, "args": list(self.application_args), "run_ids": run_ids, "days": days,
                "started": started.isoformat(), "finished": dt.datetime.now(dt.timezone.utc).isoformat()}


# --------------------------------------------------------------------------------------------
# The DAG
# --------------------------------------------------------------------------------------------

def _schedule() -> str | None:
    value = os.environ.get("TIDEMARK_RECONCILE_SCHEDULE", DEFAULT_SCHEDULE).strip()
    return None if value.lower() in ("", "none", "manual") else value


def _setting(variable: str, env: str, default: str | None = None) -> str | None:
    from airflow.sdk import Variable

    value = Variable.get(variable, default=None)
    return value if value else os.environ.get(env) or default


@dag(
    dag_id=DAG_ID,
    schedule=_schedule(),
    start_date=dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc),
    catchup=False,
    max_active_runs=1,
    dagrun_timeout=dt.timedelta(hours=8),
    default_args={
        "owner": "tidemark",
        "retries": 2,
        "retry_delay": dt.timedelta(minutes=5),
        "retry_exponential_backoff": True,
        "execution_timeout": dt.timedelta(hours=3),
    },
    tags=["tidemark", "reconcile", "spark"],
    doc_md=__doc__,
    params={
        "from_date": Param(None, type=["null", "string"], format="date", pattern=r"^\d{4}-\d{2}-\d{2}$",
                           title="From (UTC day)",
                           description="First day of a range, yyyy-mm-dd; empty: the most recent closed days."),
        "to_date": Param(None, type=["null", "string"], format="date", pattern=r"^\d{4}-\d{2}-\d{2}$",
                         title="To (UTC day, included)", description="Last day of the range; needs from_date."),
        "recent_days": Param(3, type="integer", minimum=1, maximum=3660,
                             description="Without a range: reconcile this many most recent closed days."),
        "include_dirty": Param(True, type="boolean",
                               description="Afterwards also reconcile every dirty closed day (late records since "
                                           "its last reconcile)."),
        "drift_threshold": Param(DEFAULT_DRIFT_THRESHOLD, type="number", minimum=0,
                                 description="Fail the run when a day's relative drift (stream vs truth) exceeds "
                                             "this, e.g. 0.05 = 5%."),
        "lakehouse": Param(None, type=["null", "string"],
                           description="Lakehouse root (absolute path or URI); empty: Variable tidemark_lakehouse, "
                                       "else env TIDEMARK_LAKEHOUSE."),
    },
)
def tidemark_reconcile():
    @task(task_id=PLAN_TASK, retries=1, execution_timeout=dt.timedelta(minutes=10))
    def validate_params(**context) -> dict[str, Any]:
        """Refuses bad requests (bad dates, empty range, open days, missing lakehouse/jar/connection)."""
        params = context["params"]
        try:
            lakehouse = check_lakehouse_location(params.get("lakehouse") or _setting("tidemark_lakehouse", "TIDEMARK_LAKEHOUSE"))
            jar = _setting("tidemark_jobs_jar", "TIDEMARK_JOBS_JAR", str(DEFAULT_JAR))
            if "://" not in jar and not Path(jar).is_file():
                raise ReconcileRequestError(
                    f"the reconcile jar {jar} does not exist: build it (mvn -B -q install -DskipTests) or set the "
                    "Variable tidemark_jobs_jar / env TIDEMARK_JOBS_JAR")
            _require_spark_connection()
            plan = plan_reconcile(params, read_stream_progress(lakehouse))
        except ReconcileRequestError as e:
            raise AirflowFailException(f"refused: {e}") from None
        plan.update(lakehouse=lakehouse, jar=jar)
        print(f"plan: {json.dumps(plan, indent=2)}")
        return plan

    reconcile_selection = ReconcileSubmitOperator(
        task_id=RECONCILE_TASKS[0], selection="selection", max_active_tis_per_dag=1)
    reconcile_dirty = ReconcileSubmitOperator(
        task_id=RECONCILE_TASKS[1], selection="dirty", max_active_tis_per_dag=1)

    @task(task_id="check_drift", trigger_rule="none_failed_min_one_success", retries=1,
          execution_timeout=dt.timedelta(minutes=15))
    def check_drift(**context) -> None:
        """Fails when a reconciled day drifted more than drift_threshold; the summary is XCom drift_summary."""
        ti = context["ti"]
        plan = ti.xcom_pull(task_ids=PLAN_TASK)
        runs = [r for r in (ti.xcom_pull(task_ids=t) for t in RECONCILE_TASKS) if r]
        summary = drift_summary(plan["lakehouse"], runs, float(plan["drift_threshold"]))
        ti.xcom_push(key=DRIFT_XCOM_KEY, value=summary)
        text = describe_drift(summary)
        print(text)
        if summary["over_threshold"]:
            worst = "; ".join(
                f"{d['day']} {_pct(d['drift'])} (worst cells: "
                + (", ".join(f"{c['cell_site_id']} {c['gb_drift']:+.6f} GB" for c in d.get("worst_cells", [])[:3]) or "none")
                + ")" for d in summary["days"] if d["over_threshold"])
            raise AirflowFailException(
                f"drift over {summary['threshold'] * 100:.3f}% on {len(summary['over_threshold'])} day(s): {worst}")
        if summary["missing_report"]:
            raise AirflowFailException("reconcile_report lacks summary rows: "
                                       + ", ".join(f"{m['day']} ({m['run_id']})" for m in summary["missing_report"]))

    check = check_drift()
    validate_params() >> reconcile_selection >> reconcile_dirty >> check
    # Also directly: with reconcile_dirty skipped, "min one success" must still see reconcile_selection.
    reconcile_selection >> check


def _require_spark_connection() -> None:
    from airflow.sdk import Connection

    try:
        Connection.get("spark_default")
    except Exception:
        raise ReconcileRequestError(
            "the Airflow connection spark_default is not set (the Spark provider would silently use master yarn): "
            "e.g. AIRFLOW_CONN_SPARK_DEFAULT='{\"conn_type\":\"spark\",\"host\":\"local[*]\"}'") from None


tidemark_reconcile()
