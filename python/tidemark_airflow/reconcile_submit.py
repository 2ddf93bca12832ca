"""spark-submit of the batch jobs (ReconcileJob, Maintenance, HealthReport) from Airflow, through the Spark provider's
public API only.

The JVM options Spark 4.2 needs on Java 17 (--add-opens ...) are read from the jar being submitted
(resource tidemark/jvm.options, written by the Maven build): the build is their one source.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.sdk.exceptions import AirflowException, AirflowFailException, AirflowSkipException

from tidemark_airflow.run_ids import attempt_run_id

JOB_CLASS = "io.tidemark.reconcile.ReconcileJob"
MAINTAIN_CLASS = "io.tidemark.operations.Maintenance"
REPORT_CLASS = "io.tidemark.operations.HealthReport"
REPORT_XCOM_KEY = "report_url"
JVM_OPTIONS_RESOURCE = "tidemark/jvm.options"
REFUSED = 2  # the batch jobs' exit status for a request they will not run (bad arguments, an open day)
# How SparkSubmitHook.submit reports a non-zero exit (its message also ends with spark-submit's last lines).
_EXIT_STATUS = re.compile(r"Error code is: (\d+)")


def jvm_options(jar: str | Path) -> str | None:
    """The JVM options of the jobs jar (resource tidemark/jvm.options, whitespace-separated), as one string;
    None for a jar given as a URI (then tidemark_spark_conf must set spark.*.extraJavaOptions)."""
    if "://" in str(jar):
        return None
    try:
        with zipfile.ZipFile(jar) as z:
            text = z.read(JVM_OPTIONS_RESOURCE).decode()
    except (OSError, KeyError, zipfile.BadZipFile) as e:
        raise AirflowFailException(
            f"cannot read {JVM_OPTIONS_RESOURCE} from the jobs jar {jar} ({e}): rebuild it "
            "(mvn -B -q package -DskipTests -pl spark-submit-jar -am)") from None
    return " ".join(text.split())


def spark_conf(java_options: str | None, extra: Mapping[str, Any] | None = None) -> dict[str, str]:
    conf = {} if java_options is None else {
        "spark.driver.extraJavaOptions": java_options, "spark.executor.extraJavaOptions": java_options}
    conf.update({
        "spark.ui.showConsoleProgress": "false",
        # Spark's INFO chatter would be thousands of lines in the task log; the job's own lines are stdout.
        "spark.log.level": "WARN",
    })
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


def exit_status(error: BaseException) -> int | None:
    """spark-submit's exit status from the hook's exception message, None if it names none."""
    m = _EXIT_STATUS.search(str(error))
    return int(m.group(1)) if m else None


def job_message(error: BaseException, command: str = "reconcile") -> str | None:
    """The job's last 'tidemark <command>: ...' line, if spark-submit's output tail in the message holds one."""
    lines = [ln.strip() for ln in str(error).splitlines() if ln.strip().startswith(f"tidemark {command}:")]
    return lines[-1] if lines else None


def job_settings(plan: Mapping[str, Any]) -> list[str]:
    """The settings every batch job gets, last on its command line: ``pipeline=FILE`` when the plan names a
    pipeline (the DAG param pipeline; else the job's own setting), then ``lakehouse=...``."""
    pipeline = plan.get("pipeline")
    return [*([f"pipeline={pipeline}"] if pipeline else []), f"lakehouse={plan['lakehouse']}"]


class BatchJobSubmitOperator(SparkSubmitOperator):
    """spark-submit of one batch job of the jobs jar, with arguments from the plan that ``plan_task`` returned.

    The jar, the arguments, the pipeline and the lakehouse (``pipeline=...``, ``lakehouse=...``, last) come
    from the plan (XCom); the JVM options from the jar; extra ``--conf`` from the Variable
    ``spark_conf_variable``. Exit status 2
    (the job refused the request) fails without retries. Subclasses say what to run (``job_args``).
    """

    job_command = ""  # the job's name in its last line, 'tidemark <command>: ...'

    def __init__(self, *, java_class: str, plan_task: str, spark_conf_variable: str = "tidemark_spark_conf",
                 **kwargs: Any) -> None:
        super().__init__(application="", java_class=java_class, **kwargs)
        self.plan_task = plan_task
        self.spark_conf_variable = spark_conf_variable

    def job_args(self, plan: Mapping[str, Any], context) -> list[str]:
        """The job's arguments before ``lakehouse=...``; raises AirflowSkipException when there is nothing to run."""
        raise NotImplementedError

    def execute(self, context) -> dict[str, Any]:
        plan = context["ti"].xcom_pull(task_ids=self.plan_task)
        args = self.job_args(plan or {}, context)
        self.application = plan["jar"]
        self.application_args = [*args, *job_settings(plan)]
        self.conf = spark_conf(jvm_options(plan["jar"]), {**(self.conf or {}), **self._extra_conf()})
        self.env_vars = {**spark_env(), **(self.env_vars or {})}
        try:
            super().execute(context)
        except AirflowException as e:
            status, reason = exit_status(e), job_message(e, self.job_command)
            if status == REFUSED:
                raise AirflowFailException(f"the {self.job_command} job refused the request (exit 2): {reason or e}") from None
            if reason:
                raise AirflowException(f"the {self.job_command} job failed (exit {status}): {reason}") from e
            raise
        return {"args": list(self.application_args)}

    def _extra_conf(self) -> dict[str, Any]:
        import json

        from airflow.sdk import Variable

        extra = Variable.get(self.spark_conf_variable, default=None)
        try:
            extra = json.loads(extra) if extra else {}
            if not isinstance(extra, dict):
                raise ValueError
        except ValueError:
            raise AirflowFailException(
                f"the Variable {self.spark_conf_variable} must be a JSON object of Spark settings") from None
        return extra


class ReconcileSubmitOperator(BatchJobSubmitOperator):
    """spark-submit of ReconcileJob for one selection of the plan that ``plan_task`` returned.

    Each attempt passes ``--run-id <dag run>.<task>.<try>`` (reconcile_report.run_id); exit status 2
    (the job refused the request) fails without retries.
    """

    job_command = "reconcile"

    def __init__(self, *, selection: str, plan_task: str, **kwargs: Any) -> None:
        kwargs.setdefault("name", f"tidemark-reconcile-{selection}")
        super().__init__(java_class=JOB_CLASS, plan_task=plan_task, **kwargs)
        self.selection = selection

    def job_args(self, plan: Mapping[str, Any], context) -> list[str]:
        args = plan.get(f"{self.selection}_args")
        if not args:
            raise AirflowSkipException(f"nothing to run for {self.selection} (include_dirty is false)")
        self._attempt_run_id = attempt_run_id(context["run_id"], self.task_id, context["ti"].try_number)
        return [*args, "--run-id", self._attempt_run_id]

    def execute(self, context) -> dict[str, Any]:
        result = super().execute(context)
        return {"selection": self.selection, "run_id": self._attempt_run_id, **result}


class MaintainSubmitOperator(BatchJobSubmitOperator):
    """spark-submit of Maintenance (compact the closed days, vacuum) with the plan's ``maintain_args``;
    skipped when the plan has none (param maintain false). Never ``--force``: the plan refuses a vacuum
    retention below Delta's safety minimum, and the job would refuse it too (exit 2)."""

    job_command = "maintain"

    def __init__(self, *, plan_task: str, **kwargs: Any) -> None:
        kwargs.setdefault("name", "tidemark-maintain")
        super().__init__(java_class=MAINTAIN_CLASS, plan_task=plan_task, **kwargs)

    def job_args(self, plan: Mapping[str, Any], context) -> list[str]:
        args = plan.get("maintain_args")
        if args is None:
            raise AirflowSkipException("maintenance is off for this run (maintain is false)")
        return list(args)


class ReportSubmitOperator(BatchJobSubmitOperator):
    """spark-submit of HealthReport: the drift and health report of the lakehouse, one HTML page written to
    ``<plan report_dir>/<dag run id>.html``; its ``file://`` URL is XCom ``report_url`` and the task log's
    last line. Skipped when the plan has no report_dir (param report false) or there is no plan."""

    job_command = "report"

    def __init__(self, *, plan_task: str, **kwargs: Any) -> None:
        kwargs.setdefault("name", "tidemark-report")
        super().__init__(java_class=REPORT_CLASS, plan_task=plan_task, **kwargs)
        self._out: Path | None = None

    def job_args(self, plan: Mapping[str, Any], context) -> list[str]:
        if not plan.get("report_dir"):
            raise AirflowSkipException("no report for this run (report is false)")
        safe = re.sub(r"[^A-Za-z0-9_.+-]", "_", str(context["run_id"]))
        self._out = Path(plan["report_dir"]) / f"{safe}.html"
        return ["--out", str(self._out)]

    def execute(self, context) -> dict[str, Any]:
        result = super().execute(context)
        url = self._out.resolve().as_uri()
        context["ti"].xcom_push(key=REPORT_XCOM_KEY, value=url)
        print(f"drift and health report: {url}")
        return {"report": str(self._out), "report_url": url, **result}
