"""
### tidemark_reconcile: the batch layer of Tidemark, daily and on demand

Recomputes closed UTC days from `raw_events` with `io.tidemark.reconcile.ReconcileJob`
(spark-submit of `tidemark-spark-jobs.jar`), replaces their KPI partitions (`source = batch`)
and fails the run when a day is over the pipeline's drift threshold (the `drift_threshold` option of
its event table, default 0.01: the job's verdict, `over_threshold`); then compacts the closed days and
vacuums (`io.tidemark.operations.Maintenance`). The jobs run the pipeline the lakehouse records (its stream's).

1. `validate_params`: refuses, without retries and with a one-line reason, bad dates, an empty range,
   a day the stream has not closed (`stream_progress.last_closed_day`), a `vacuum_retention_hours` below
   168 (Delta's safety minimum), a `drift_threshold` (the pipeline's now), a missing lakehouse/jar/connection.
2. `reconcile_selection`: the range (`--from/--to`), else the `recent_days` most recent closed days.
3. `reconcile_dirty`: `--dirty` (closed days with late records since their last reconcile); skipped
   when `include_dirty` is false.
4. `check_drift`: this run's summary rows of `reconcile_report` (run ids `<dag run>.<task>.<try>`),
   pushed as XCom `drift_summary`; fails naming the days over the threshold, their measures and worst dimensions.
5. `maintain`, beside `check_drift` after the reconciles (so it compacts the days they rewrote and
   never contends with them): compacts the closed days, then vacuums files older than
   `vacuum_retention_hours` (`--no-vacuum` when `vacuum` is false); skipped when `maintain` is false.
   A drift failure does not stop it: drift is about the numbers, maintenance about the files.
6. `report`, beside them (so also when the drift check fails): `HealthReport`, one HTML page per run in
   Variable `tidemark_reports_dir` (else env `TIDEMARK_REPORTS_DIR`, else `$AIRFLOW_HOME/tidemark-reports`);
   its `file://` URL is XCom `report_url` and the task log's last line. Skipped when `report` is false.

Reconciles never overlap: `max_active_runs=1`, one Spark task at a time. Setup (the `tidemark_airflow`
package, the jar: Variable `tidemark_jobs_jar`, env `TIDEMARK_JOBS_JAR` or `$AIRFLOW_HOME/tidemark-spark-jobs.jar`,
connection, Variables) and params: `docs/operations.md`, section "Scheduling reconcile with Airflow".
"""

from __future__ import annotations

import datetime as dt
import json
import os

from airflow.sdk import Param, dag, task
from airflow.sdk.exceptions import AirflowFailException

try:
    from tidemark_airflow import CHECK_TASK, DAG_ID, DRIFT_XCOM_KEY, drift, lakehouse, settings
    from tidemark_airflow.reconcile_plan import (MIN_VACUUM_RETENTION_HOURS, ReconcileRequestError, days_between,
                                                 plan_maintain, plan_reconcile, plan_report)
    from tidemark_airflow.reconcile_submit import MaintainSubmitOperator, ReconcileSubmitOperator, ReportSubmitOperator
except ModuleNotFoundError as e:  # say what to do instead of a bare import error in the Airflow UI
    if not (e.name or "").startswith("tidemark_airflow"):
        raise
    raise ImportError("package tidemark_airflow not found: put <repo>/python on the PYTHONPATH of every Airflow "
                      "process, or pip install '<repo>/python[dag]' into their venv; see docs/operations.md") from e

DEFAULT_SCHEDULE = "30 1 * * *"
PLAN_TASK = "validate_params"
RECONCILE_TASKS = ("reconcile_selection", "reconcile_dirty")
MAINTAIN_TASK = "maintain"
_DATE = r"^\d{4}-\d{2}-\d{2}$"


def _schedule() -> str | None:
    value = os.environ.get("TIDEMARK_RECONCILE_SCHEDULE", DEFAULT_SCHEDULE).strip()
    return None if value.lower() in ("", "none", "manual") else value


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
        "from_date": Param(None, type=["null", "string"], format="date", pattern=_DATE, title="From (UTC day)",
                           description="First day of a range, yyyy-mm-dd; empty: the most recent closed days."),
        "to_date": Param(None, type=["null", "string"], format="date", pattern=_DATE,
                         title="To (UTC day, included)", description="Last day of the range; needs from_date."),
        "recent_days": Param(3, type="integer", minimum=1, maximum=3660,
                             description="Without a range: reconcile this many most recent closed days."),
        "include_dirty": Param(True, type="boolean",
                               description="Afterwards also reconcile every dirty closed day (late records since "
                                           "its last reconcile)."),
        "pipeline": Param(None, type=["null", "string"],
                          description="Pipeline file (absolute path) every job runs, with its drift_threshold; "
                                      "empty: the one the lakehouse records (its stream's), else network."),
        "lakehouse": Param(None, type=["null", "string"],
                           description="Lakehouse root (absolute path or URI); empty: Variable tidemark_lakehouse, "
                                       "else env TIDEMARK_LAKEHOUSE."),
        "maintain": Param(True, type="boolean", description="After the reconciles, compact the closed days and "
                                                              "vacuum (tidemark maintain)."),
        "vacuum": Param(True, type="boolean", description="Maintenance also vacuums; false: compact only."),
        "report": Param(True, type="boolean", description="Write the drift and health report (XCom report_url)."),
        "vacuum_retention_hours": Param(MIN_VACUUM_RETENTION_HOURS, type="integer", minimum=1,
                                        description="Vacuum files no table version of the last this many hours "
                                                    "needs; at least 168 (7 days, Delta's safety minimum)."),
    },
)
def tidemark_reconcile():
    @task(task_id=PLAN_TASK, retries=1, execution_timeout=dt.timedelta(minutes=10))
    def validate_params(**context) -> dict:
        """Refuses bad requests (bad dates, empty range, open days, short vacuum retention, missing
        lakehouse/jar/connection)."""
        params = context["params"]
        try:
            lake, jar = settings.lakehouse(params.get("lakehouse")), settings.jobs_jar()
            settings.require_spark_connection()
            plan = {**plan_reconcile(params, lakehouse.read_stream_progress(lake)), **plan_maintain(params),
                    "report_dir": settings.reports_dir() if plan_report(params) else None}
        except ReconcileRequestError as e:
            raise AirflowFailException(f"refused: {e}") from None
        plan.update(lakehouse=lake, jar=jar)
        print(f"plan: {json.dumps(plan, indent=2)}")
        return plan

    reconcile_selection = ReconcileSubmitOperator(task_id=RECONCILE_TASKS[0], selection="selection", plan_task=PLAN_TASK,
                                                  conn_id=settings.SPARK_CONN_ID, max_active_tis_per_dag=1)
    reconcile_dirty = ReconcileSubmitOperator(task_id=RECONCILE_TASKS[1], selection="dirty", plan_task=PLAN_TASK,
                                              conn_id=settings.SPARK_CONN_ID, max_active_tis_per_dag=1)
    report = ReportSubmitOperator(task_id="report", plan_task=PLAN_TASK, conn_id=settings.SPARK_CONN_ID, retries=1,
                                  trigger_rule="none_failed_min_one_success", max_active_tis_per_dag=1)
    maintain = MaintainSubmitOperator(task_id=MAINTAIN_TASK, plan_task=PLAN_TASK, conn_id=settings.SPARK_CONN_ID,
                                      trigger_rule="none_failed_min_one_success", max_active_tis_per_dag=1)

    @task(task_id=CHECK_TASK, trigger_rule="none_failed_min_one_success", retries=1,
          execution_timeout=dt.timedelta(minutes=15))
    def check_drift(**context) -> None:
        """Fails when a reconciled day is over the pipeline's threshold; the summary is XCom drift_summary."""
        plan = context["ti"].xcom_pull(task_ids=PLAN_TASK)
        expected = days_between(plan["from_date"], plan["to_date"]) if plan["mode"] == "range" else []
        summary = drift.drift_summary(plan["lakehouse"], dag_run_id=context["run_id"], task_ids=RECONCILE_TASKS,
                                      expected_days=expected)
        context["ti"].xcom_push(key=DRIFT_XCOM_KEY, value=summary)
        print(drift.describe_drift(summary))
        if reason := drift.failure(summary):
            raise AirflowFailException(reason)

    check = check_drift()
    validate_params() >> reconcile_selection >> reconcile_dirty >> [check, maintain, report]
    # Also directly: with reconcile_dirty skipped, "min one success" must still see reconcile_selection.
    reconcile_selection >> [check, maintain, report]


tidemark_reconcile()
