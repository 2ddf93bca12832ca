"""The reconcile DAG on a real Airflow, without Spark: it imports, its shape, the params schema, dag.test
refusing an open day, a short vacuum retention and the removed drift_threshold, the pipeline passed to
every job, and spark-submit (a stand-in script) refusing the
request with exit status 2, for reconcile and for maintain.

Planning and the drift check are tested on the package itself: test_reconcile_plan.py, test_drift.py.
Run: .venv/bin/python -m pytest python/tests/test_airflow_dag.py   (~55 s; five dag.test runs that fail fast)
"""

from __future__ import annotations

import datetime as dt
import json
import os
import sys
import zipfile
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # python/: tidemark_airflow

import testing  # noqa: E402

# Airflow reads its configuration when first imported: point it at a throwaway home first.
testing.isolate_airflow_in_process()
sys.path.insert(0, str(testing.DAGS))

import tidemark_reconcile as dagmod  # noqa: E402
from test_reconcile_plan import write_stream_progress  # noqa: E402

from tidemark_airflow import reconcile_submit  # noqa: E402

UTC = dt.timezone.utc
OPENS = "--add-opens=java.base/java.lang=ALL-UNNAMED\n  --add-opens=java.base/sun.nio.ch=ALL-UNNAMED -Dx=y\n"


# ------------------------------------------------------------------------------------------------
# Import and shape
# ------------------------------------------------------------------------------------------------

def test_dag_folder_imports_without_errors():
    from airflow.dag_processing.dagbag import DagBag
    from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator

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
    assert dag.get_task("reconcile_selection").downstream_task_ids == {"reconcile_dirty", "check_drift", "maintain", "report"}
    assert dag.get_task("reconcile_dirty").downstream_task_ids == {"check_drift", "maintain", "report"}
    # maintain and report beside check_drift, not after it: a drift failure stops neither
    assert dag.get_task("check_drift").downstream_task_ids == set() == dag.get_task("maintain").downstream_task_ids
    assert dag.get_task("report").downstream_task_ids == set()
    report = dag.get_task("report")
    assert isinstance(report, reconcile_submit.ReportSubmitOperator) and report.plan_task == "validate_params"
    assert report.trigger_rule == "none_failed_min_one_success" and report.retries == 1
    for tid, selection in (("reconcile_selection", "selection"), ("reconcile_dirty", "dirty")):
        t = dag.get_task(tid)
        assert isinstance(t, SparkSubmitOperator) and isinstance(t, reconcile_submit.ReconcileSubmitOperator)
        assert t.selection == selection and t.plan_task == "validate_params"
    maintain = dag.get_task("maintain")
    assert isinstance(maintain, SparkSubmitOperator) and isinstance(maintain, reconcile_submit.MaintainSubmitOperator)
    assert maintain.plan_task == "validate_params"
    for tid in ("reconcile_selection", "reconcile_dirty", "maintain"):
        t = dag.get_task(tid)
        assert isinstance(t, reconcile_submit.BatchJobSubmitOperator)  # one shared spark-submit path
        assert t.retries == 2 and t.retry_delay == dt.timedelta(minutes=5)
        assert t.execution_timeout == dt.timedelta(hours=3)
        assert t.max_active_tis_per_dag == 1
    # (the connection, the main class and the conf are checked on the real spark-submit command line below)
    assert dag.get_task("check_drift").trigger_rule == "none_failed_min_one_success"
    assert maintain.trigger_rule == "none_failed_min_one_success"
    assert set(dag.params) == {"from_date", "to_date", "recent_days", "include_dirty", "pipeline", "lakehouse",
                               "maintain", "vacuum", "vacuum_retention_hours", "report"}
    assert dag.params["recent_days"] == 3 and dag.params["include_dirty"] is True
    assert dag.params["pipeline"] is None  # the jobs' pipeline setting; the drift threshold is the pipeline's
    assert dag.params["maintain"] is True and dag.params["vacuum"] is True
    assert dag.params["vacuum_retention_hours"] == 168 and dag.params["report"] is True


def test_dag_file_is_short_and_its_top_level_cheap(tmp_path):
    """Parsing imports neither pyspark nor deltalake nor pyarrow (they load inside tasks); the DAG finds
    tidemark_airflow on PYTHONPATH (testing.airflow_base_env sets it, as an Airflow deployment must)."""
    code = ("import sys; sys.path.insert(0, %r); import tidemark_reconcile; "
            "bad = [m for m in ('pyspark', 'deltalake', 'pyarrow', 'py4j') if m in sys.modules]; "
            "print('HEAVY', bad)") % str(testing.DAGS)
    env = testing.airflow_base_env(tmp_path)
    out = testing.run([sys.executable, "-c", code], env=env, timeout=300).stdout
    assert "HEAVY []" in out
    del env["PYTHONPATH"]
    r = testing.run([sys.executable, "-c", code], env=env, timeout=300, check=False)
    assert "package tidemark_airflow not found: put <repo>/python on the PYTHONPATH" in r.stderr
    assert len((testing.DAGS / "tidemark_reconcile.py").read_text().splitlines()) < 150


def test_params_schema_rejects_malformed_dates():
    """The JSON schema (checked by Airflow when a run is triggered) already refuses malformed input."""
    from airflow.sdk.exceptions import ParamValidationError

    dag = dagmod.tidemark_reconcile()  # a fresh DAG object from the decorated function
    bad = [("from_date", "2026-1-05", "is not a .date."), ("to_date", "2026-02-30", "is not a 'date'"),
           ("to_date", 20261128, "is not of type"), ("recent_days", 0, "less than the minimum"),
           ("pipeline", 3, "is not of type"), ("include_dirty", "no", "is not of type 'boolean'"),
           ("maintain", "no", "is not of type 'boolean'"), ("vacuum", 0, "is not of type 'boolean'"),
           ("vacuum_retention_hours", 1.5, "is not of type 'integer'"),
           ("vacuum_retention_hours", 0, "less than the minimum")]
    for name, value, why in bad:
        with pytest.raises(ParamValidationError, match=why):
            dag.params.get_param(name).resolve(value)
    # a retention below 168 passes the schema: validate_params refuses it with the reason (test below)
    for name, value in (("from_date", "2026-11-27"), ("to_date", None), ("pipeline", "/p.sql"), ("recent_days", 7),
                        ("maintain", False), ("vacuum_retention_hours", 24)):
        assert dag.params.get_param(name).resolve(value) == value


# ------------------------------------------------------------------------------------------------
# JVM options: from the jar that is submitted
# ------------------------------------------------------------------------------------------------

def fake_jar(path: Path, options: str | None = OPENS) -> Path:
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("io/tidemark/reconcile/ReconcileJob.class", b"")
        if options is not None:
            z.writestr(reconcile_submit.JVM_OPTIONS_RESOURCE, options)
    return path


def test_jvm_options_come_from_the_jar(tmp_path):
    from airflow.sdk.exceptions import AirflowFailException

    opts = reconcile_submit.jvm_options(fake_jar(tmp_path / "a.jar"))
    assert opts == "--add-opens=java.base/java.lang=ALL-UNNAMED --add-opens=java.base/sun.nio.ch=ALL-UNNAMED -Dx=y"
    conf = reconcile_submit.spark_conf(opts, {"spark.executor.memory": "2g"})
    assert conf["spark.driver.extraJavaOptions"] == conf["spark.executor.extraJavaOptions"] == opts
    assert conf["spark.executor.memory"] == "2g"
    assert "spark.driver.extraJavaOptions" not in reconcile_submit.spark_conf(reconcile_submit.jvm_options("s3://b/j.jar"))
    with pytest.raises(AirflowFailException, match="cannot read tidemark/jvm.options from the jobs jar .*b.jar"):
        reconcile_submit.jvm_options(fake_jar(tmp_path / "b.jar", None))
    assert reconcile_submit.spark_env()["SPARK_LOCAL_IP"] == os.environ.get("SPARK_LOCAL_IP", "127.0.0.1")


def test_the_built_jar_carries_the_jvm_options():
    testing.require_build()
    opts = reconcile_submit.jvm_options(testing.JOBS_JAR).split()
    assert "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED" in opts and all(o.startswith("-") for o in opts)


# ------------------------------------------------------------------------------------------------
# Exit status 2 from the hook's public exception
# ------------------------------------------------------------------------------------------------

def fake_spark_submit(bindir: Path, log: Path, status: int) -> Path:
    """A spark-submit stand-in: records its arguments, prints like ReconcileJob refusing, exits ``status``."""
    bindir.mkdir(parents=True, exist_ok=True)
    script = bindir / "spark-submit"
    script.write_text(f"""#!{sys.executable}
import json, sys
with open({str(log)!r}, "a") as f:
    f.write(json.dumps(sys.argv[1:]) + "\\n")
print("Spark noise", flush=True)
print("tidemark reconcile: day 2026-11-28 is not closed yet (stand-in)", file=sys.stderr, flush=True)
sys.exit({status})
""")
    script.chmod(0o755)
    return script


@pytest.mark.parametrize("status", [1, 2])
def test_exit_status_is_read_from_the_hooks_exception(tmp_path, status):
    from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook
    from airflow.sdk.exceptions import AirflowException

    fake_spark_submit(tmp_path / "bin", tmp_path / "argv.jsonl", status)
    hook = SparkSubmitHook(conn_id="spark_default", java_class=reconcile_submit.JOB_CLASS, application_args=["--x"],
                           env_vars={"PATH": f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}"})
    with pytest.raises(AirflowException) as e:
        hook.submit("app.jar")
    assert reconcile_submit.exit_status(e.value) == status
    assert reconcile_submit.job_message(e.value) == "tidemark reconcile: day 2026-11-28 is not closed yet (stand-in)"
    assert reconcile_submit.exit_status(AirflowException("something else")) is None
    assert reconcile_submit.job_message(e.value, "maintain") is None


def test_report_goes_to_the_reports_dir_per_run_and_is_skipped_when_off(tmp_path):
    from airflow.sdk.exceptions import AirflowSkipException

    op = reconcile_submit.ReportSubmitOperator(task_id="r", plan_task="p")
    assert op.job_args({"report_dir": str(tmp_path)}, {"run_id": "manual__2026-12-02T07:00:00+00:00"}) == [
        "--out", str(tmp_path / "manual__2026-12-02T07_00_00+00_00.html")]
    with pytest.raises(AirflowSkipException, match="report is false"):
        op.job_args({"report_dir": None}, {"run_id": "r"})


def test_maintain_is_skipped_when_the_plan_has_none():
    from airflow.sdk.exceptions import AirflowSkipException

    op = reconcile_submit.MaintainSubmitOperator(task_id="m", plan_task="p")
    assert op.job_args({"maintain_args": ["--no-vacuum"]}, {}) == ["--no-vacuum"]
    with pytest.raises(AirflowSkipException, match="maintain is false"):
        op.job_args({"maintain_args": None}, {})


# ------------------------------------------------------------------------------------------------
# dag.test
# ------------------------------------------------------------------------------------------------

def dag_env(tmp_path: Path, jar: Path) -> dict[str, str]:
    home = tmp_path / "airflow"
    home.mkdir()
    env = testing.airflow_base_env(home)
    env["TIDEMARK_JOBS_JAR"] = str(jar)
    testing.migrate_db(env)
    return env


def test_dag_test_refuses_an_open_day_before_any_spark(tmp_path):
    write_stream_progress(tmp_path / "lake", [(4, "2026-11-28T20:00:00", "2026-11-27")])
    jar = tmp_path / "jobs.jar"
    jar.write_bytes(b"not used: the run stops before spark-submit")
    result = testing.dag_test(dag_env(tmp_path, jar), {"from_date": "2026-11-27", "to_date": "2026-11-28",
                                                        "lakehouse": str(tmp_path / "lake")}, timeout=600)
    assert result.state == "failed", result.output[-4000:]
    assert result.tasks["validate_params"] == "failed"
    assert result.tasks["reconcile_selection"] == "upstream_failed"
    assert "refused: day 2026-11-28 is not closed yet: the last closed day is 2026-11-27 (stream_progress batch 4)" \
        in result.output
    assert "spark-submit" not in result.output.replace("spark-submit-jar", "")


def test_dag_test_refuses_a_vacuum_retention_below_168(tmp_path):
    write_stream_progress(tmp_path / "lake", [(4, "2026-11-29T01:00:00", "2026-11-28")])
    jar = tmp_path / "jobs.jar"
    jar.write_bytes(b"not used: the run stops before spark-submit")
    result = testing.dag_test(dag_env(tmp_path, jar), {"vacuum_retention_hours": 167,
                                                        "lakehouse": str(tmp_path / "lake")}, timeout=600)
    assert result.state == "failed", result.output[-4000:]
    assert result.tasks["validate_params"] == "failed"
    assert result.tasks["maintain"] == result.tasks["reconcile_selection"] == "upstream_failed"
    assert "refused: vacuum_retention_hours 167 is below Delta's safety minimum of 168 hours (7 days)" in result.output
    assert "spark-submit" not in result.output.replace("spark-submit-jar", "")


def test_dag_test_refuses_the_removed_drift_threshold(tmp_path):
    """A run conf that still passes drift_threshold (the threshold is the pipeline's now) is refused with the reason."""
    write_stream_progress(tmp_path / "lake", [(4, "2026-11-29T01:00:00", "2026-11-28")])
    jar = tmp_path / "jobs.jar"
    jar.write_bytes(b"not used: the run stops before spark-submit")
    result = testing.dag_test(dag_env(tmp_path, jar), {"drift_threshold": 0.2, "lakehouse": str(tmp_path / "lake")},
                              timeout=600)
    assert result.state == "failed", result.output[-4000:]
    assert result.tasks["validate_params"] == "failed"
    assert result.tasks["reconcile_selection"] == "upstream_failed"
    assert ("refused: drift_threshold is no longer a DAG parameter: the threshold is the pipeline's (the "
            "drift_threshold option of its event table, default 0.01); set it in the pipeline file") in result.output
    assert "spark-submit" not in result.output.replace("spark-submit-jar", "")


def test_dag_test_exit_status_2_fails_without_retries(tmp_path):
    """spark-submit of the planned command; the job's refusal (exit 2) fails the task on its first try."""
    write_stream_progress(tmp_path / "lake", [(4, "2026-11-29T01:00:00", "2026-11-28")])
    argv_log = tmp_path / "argv.jsonl"
    fake_spark_submit(tmp_path / "bin", argv_log, 2)
    env = dag_env(tmp_path, fake_jar(tmp_path / "jobs.jar"))
    env["PATH"] = f"{tmp_path / 'bin'}{os.pathsep}{env['PATH']}"
    result = testing.dag_test(env, {"from_date": "2026-11-27", "to_date": "2026-11-28", "include_dirty": False,
                                    "lakehouse": str(tmp_path / "lake")}, timeout=600)
    assert result.state == "failed", result.output[-4000:]
    assert result.tasks == {"validate_params": "success", "reconcile_selection": "failed",
                            "reconcile_dirty": "upstream_failed", "check_drift": "upstream_failed",
                            "maintain": "upstream_failed", "report": "upstream_failed"}
    assert "the reconcile job refused the request (exit 2): tidemark reconcile: day 2026-11-28 is not closed yet " \
           "(stand-in)" in result.output
    calls = [json.loads(line) for line in argv_log.read_text().splitlines()]
    assert len(calls) == 1, calls  # no retry
    argv = calls[0]
    opts = " ".join(OPENS.split())
    assert argv[argv.index("--master") + 1] == "local[2]"  # the spark_default connection
    assert argv[argv.index("--class") + 1] == "io.tidemark.reconcile.ReconcileJob"
    assert f"spark.driver.extraJavaOptions={opts}" in argv and f"spark.executor.extraJavaOptions={opts}" in argv
    app = argv.index(str(tmp_path / "jobs.jar"))
    assert argv[app + 1:] == ["--from", "2026-11-27", "--to", "2026-11-28",
                              "--run-id", f"{result.run_id}.reconcile_selection.1", f"lakehouse={tmp_path / 'lake'}"]


def fake_jobs_spark_submit(bindir: Path, log: Path) -> Path:
    """A spark-submit stand-in for the jobs: ReconcileJob writes summary rows 10 % off for its run id, over the
    threshold 0.05 (check_drift fails on them), HealthReport writes its page, Maintenance refuses like the real job (exit 2)."""
    bindir.mkdir(parents=True, exist_ok=True)
    script = bindir / "spark-submit"
    script.write_text(f"""#!{sys.executable}
import json, sys
from pathlib import Path
sys.path.insert(0, {str(Path(__file__).resolve().parent)!r})
argv = sys.argv[1:]
with open({str(log)!r}, "a") as f:
    f.write(json.dumps(argv) + "\\n")
lake = Path(next(a for a in argv if a.startswith("lakehouse=")).split("=", 1)[1])
if argv[argv.index("--class") + 1] == "io.tidemark.reconcile.ReconcileJob":
    from test_drift import measures_of, summary_rows, write_report
    write_report(lake, summary_rows(argv[argv.index("--run-id") + 1], "2026-11-28", measures_of((90, 100), (9.0, 10.0)),
                                    10, 5))
    sys.exit(0)
if argv[argv.index("--class") + 1] == "io.tidemark.operations.HealthReport":
    Path(argv[argv.index("--out") + 1]).parent.mkdir(parents=True, exist_ok=True)
    Path(argv[argv.index("--out") + 1]).write_text("<html>stand-in report</html>")
    sys.exit(0)
print("tidemark maintain: a vacuum retention of 1 hours is below Delta's safety minimum (stand-in)", file=sys.stderr)
sys.exit(2)
""")
    script.chmod(0o755)
    return script


def test_dag_test_maintain_runs_beside_a_failed_drift_check_and_exit_2_fails_it_without_retries(tmp_path):
    """check_drift fails (10 % drift), maintain runs all the same: its command line, and its exit 2 fails it
    on the first try. The param pipeline goes to every job as the setting pipeline=FILE."""
    lake = tmp_path / "lake"
    write_stream_progress(lake, [(4, "2026-11-29T01:00:00", "2026-11-28")])
    argv_log = tmp_path / "argv.jsonl"
    fake_jobs_spark_submit(tmp_path / "bin", argv_log)
    env = dag_env(tmp_path, fake_jar(tmp_path / "jobs.jar"))
    env["PATH"] = f"{tmp_path / 'bin'}{os.pathsep}{env['PATH']}"
    pipeline = tmp_path / "network-5pct.sql"  # never read by the stand-in
    result = testing.dag_test(env, {"from_date": "2026-11-28", "to_date": "2026-11-28", "include_dirty": False,
                                    "vacuum_retention_hours": 200, "pipeline": str(pipeline), "lakehouse": str(lake)},
                              timeout=600)
    assert result.state == "failed", result.output[-4000:]
    assert result.tasks == {"validate_params": "success", "reconcile_selection": "success",
                            "reconcile_dirty": "skipped", "check_drift": "failed", "maintain": "failed",
                            "report": "success"}
    assert "drift over 5% on 1 day(s): 2026-11-28 kpi_5m.record_count +10.000% (worst: none), " \
           "kpi_5m.total_gb +10.000% (worst: none)" in result.output
    summary = result.xcom["check_drift.drift_summary"]
    assert summary["threshold"] == 0.05 and summary["over_threshold"] == ["2026-11-28"]
    assert summary["days"][0]["measures_over"] == ["kpi_5m.record_count", "kpi_5m.total_gb"]
    assert "the maintain job refused the request (exit 2): tidemark maintain: a vacuum retention of 1 hours is " \
           "below Delta's safety minimum (stand-in)" in result.output
    plan = result.xcom["validate_params.return_value"]
    assert plan["maintain_args"] == ["maintain.vacuum-retention=200 hours"] and plan["vacuum_retention_hours"] == 200
    assert plan["pipeline"] == str(pipeline)
    calls = [json.loads(line) for line in argv_log.read_text().splitlines()]
    classes = [argv[argv.index("--class") + 1] for argv in calls]
    assert classes[0] == "io.tidemark.reconcile.ReconcileJob", calls  # no retry of maintain; the report beside it
    assert sorted(classes[1:]) == ["io.tidemark.operations.HealthReport", "io.tidemark.operations.Maintenance"], calls
    # The report runs although the drift check failed: its page, linked from the run
    report_argv = next(a for a in calls if a[a.index("--class") + 1] == "io.tidemark.operations.HealthReport")
    page = Path(report_argv[report_argv.index("--out") + 1])
    assert page.read_text() == "<html>stand-in report</html>"
    assert page.parent == tmp_path / "airflow" / "tidemark-reports"
    assert result.xcom["report.report_url"] == page.as_uri()
    assert f"drift and health report: {page.as_uri()}" in result.output
    argv = next(a for a in calls if a[a.index("--class") + 1] == "io.tidemark.operations.Maintenance")
    opts = " ".join(OPENS.split())
    assert argv[argv.index("--master") + 1] == "local[2]"
    assert argv[argv.index("--name") + 1] == "tidemark-maintain"
    assert f"spark.driver.extraJavaOptions={opts}" in argv and f"spark.executor.extraJavaOptions={opts}" in argv
    app = argv.index(str(tmp_path / "jobs.jar"))
    assert argv[app + 1:] == ["maintain.vacuum-retention=200 hours", f"pipeline={pipeline}", f"lakehouse={lake}"]
    for job in calls:  # the reconcile and the report too
        assert job[-2:] == [f"pipeline={pipeline}", f"lakehouse={lake}"], job
    assert "--force" not in argv
