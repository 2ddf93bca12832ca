"""The reconcile DAG and tidemark-airflow for real: Kafka broker, speed layer, spark-submit, Airflow.

Needs the Maven build (the jar and the launcher; run-tests builds them first). One lakehouse is
made per module by the real speed layer (broker + two generated phases + `tidemark stream
--available-now`); each test reconciles its own copy of it. Airflow runs as api-server, scheduler
and dag-processor (LocalExecutor, SQLite, SimpleAuthManager, loopback). Everything started here
is stopped by process group, also when a test fails. The client also runs as `pip install ./python`
installs it, into a fresh venv without Airflow, authenticated by a pre-issued token.

Run: .venv/bin/python -m pytest python/tests/test_airflow_integration.py   (~7 min unloaded; one real maintain)
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest
import requests

PYTHON_DIR = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PYTHON_DIR))

from tidemark_airflow import lakehouse as lh  # noqa: E402
import testing  # noqa: E402

testing.isolate_airflow_in_process()

THRESHOLD_OK = 0.2  # the test data drifts ~2 % per closed day (5 % of phase 2 late, see build_lakehouse)


def pipeline_file(path: Path, threshold: float | str) -> Path:
    """pipelines/network.sql with drift_threshold set in its event table's OPTIONS: the one drift rule's
    threshold is the pipeline's (the DAG param pipeline, the client's --pipeline)."""
    text = (testing.REPO / "pipelines" / "network.sql").read_text()
    anchor = "  lateness '10 minutes'\n);"
    assert anchor in text, "pipelines/network.sql changed: update pipeline_file"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text.replace(anchor, f"  lateness '10 minutes',\n  drift_threshold '{threshold}'\n);"))
    return path


# ------------------------------------------------------------------------------------------------
# Fixtures
# ------------------------------------------------------------------------------------------------

class World:
    def __init__(self, root: Path, lakehouse: Path) -> None:
        self.root = root
        self.lakehouse = lakehouse
        self.jar = testing.private_jar(root / "jar")  # immune to rebuilds of the tree while the tests run
        self._copies = 0
        progress = lh.read_stream_progress(str(lakehouse))
        assert progress is not None, "the speed layer recorded no batch"
        assert progress.recorded, "stream_progress has no last_closed_day column"
        self.progress = progress
        counts = testing.query(lakehouse, "SELECT CAST(event_date AS VARCHAR) AS day, count(*) AS n, "
                                          "sum(CASE WHEN is_late THEN 1 ELSE 0 END) AS late "
                                          "FROM r GROUP BY event_date ORDER BY day", r="raw_events")
        self.raw = {row["day"]: row for row in counts}
        self.closed = [d for d in self.raw if progress.is_closed(dt.date.fromisoformat(d))]  # the stream's decision
        self.open = [d for d in self.raw if d not in self.closed]
        self.today = max(self.raw)  # the day of the newest events: open by any rule
        self.pipeline_ok = pipeline_file(root / "pipelines" / "network-ok.sql", THRESHOLD_OK)
        self.pipeline_tiny = pipeline_file(root / "pipelines" / "network-tiny.sql", "0.000001")  # any drift is over

    def copy(self) -> Path:
        self._copies += 1
        return testing.copy_lakehouse(self.lakehouse, self.root / f"lakehouse-{self._copies}")

    def best_closed_day(self) -> str:
        """The closed day with the most late records (see build_lakehouse: there are always some)."""
        return max(self.closed, key=lambda d: (self.raw[d]["late"], self.raw[d]["n"]))


@pytest.fixture(scope="module")
def world(tmp_path_factory, speed_layer) -> World:
    root = tmp_path_factory.mktemp("tidemark-world")
    w = World(root, testing.copy_lakehouse(speed_layer.lakehouse, root / "speed-layer" / "lakehouse"))
    print(f"last closed day {w.progress.last_closed_day} (batch {w.progress.batch_id}); closed {w.closed}; "
          f"open {w.open}; raw {w.raw}")
    assert w.closed, f"no closed day with data: {w.raw}, {w.progress}"
    assert w.today in w.open
    assert w.today == speed_layer.base.date().isoformat()  # the event clock ended on the base time's day
    assert w.raw[w.best_closed_day()]["late"] > 0, f"the closed days should hold late records: {w.raw}"
    return w


@pytest.fixture(scope="module")
def airflow(tmp_path_factory, world):
    with testing.airflow_stack(tmp_path_factory.mktemp("airflow-home"),
                               extra_env={"TIDEMARK_JOBS_JAR": str(world.jar)}) as stack:
        yield stack


def run_cli(stack: testing.AirflowStack, *args: str, password: str | None = None,
            timeout: float = 1200) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TIDEMARK_AIRFLOW_")}
    env.update(PYTHONPATH=str(PYTHON_DIR), TIDEMARK_AIRFLOW_URL=stack.url, TIDEMARK_AIRFLOW_USER=stack.username,
               TIDEMARK_AIRFLOW_PASSWORD=password if password is not None else stack.password)
    t0 = time.monotonic()
    r = testing.run([sys.executable, "-m", "tidemark_airflow", *args], env=env, timeout=timeout, check=False)
    print(f"$ tidemark-airflow {' '.join(args)}  -> exit {r.returncode} in {time.monotonic() - t0:.0f} s\n"
          f"{r.stdout}{r.stderr}")
    return r


@pytest.fixture(scope="module")
def installed_client(tmp_path_factory) -> Path:
    """A fresh venv with `pip install ./python` (pinned by constraints.txt): the tidemark-airflow command."""
    t0 = time.monotonic()
    venv = testing.install_client_venv(tmp_path_factory.mktemp("pip-install"))
    print(f"\npip install ./python into a fresh venv: {time.monotonic() - t0:.0f} s")
    return venv


def run_installed(venv: Path, stack: testing.AirflowStack, *args: str, env: dict[str, str],
                  timeout: float = 600) -> subprocess.CompletedProcess:
    """The installed command, from outside the repository: no PYTHONPATH, none of the caller's TIDEMARK_AIRFLOW_*."""
    full = {k: v for k, v in os.environ.items()
            if not k.startswith("TIDEMARK_AIRFLOW_") and k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    full.update(TIDEMARK_AIRFLOW_URL=stack.url, **env)
    t0 = time.monotonic()
    r = testing.run([str(venv / "bin" / "tidemark-airflow"), *args], env=full, cwd=venv.parent, timeout=timeout,
                    check=False)
    print(f"$ {venv}/bin/tidemark-airflow {' '.join(args)}  -> exit {r.returncode} in {time.monotonic() - t0:.0f} s\n"
          f"{r.stdout}{r.stderr}")
    return r


def forged_tokens(token: str, secret: str) -> tuple[str, str]:
    """The api-server's own token re-signed: expired (with its secret), and valid but signed with another secret."""
    import jwt

    claims = jwt.decode(token, options={"verify_signature": False})
    header = {k: v for k, v in jwt.get_unverified_header(token).items() if k not in ("alg", "typ")}
    now = int(time.time())
    expired = jwt.encode({**claims, "iat": now - 7200, "nbf": now - 7200, "exp": now - 3600}, secret,
                         algorithm="HS512", headers=header)
    other = jwt.encode(claims, "another-api-server-" + secret, algorithm="HS512", headers=header)
    return expired, other


def kpi_sources(lakehouse: Path) -> dict[str, set[str]]:
    rows = testing.query(lakehouse, "SELECT DISTINCT CAST(event_date AS VARCHAR) AS day, source FROM k", k="kpi_5m")
    out: dict[str, set[str]] = {}
    for r in rows:
        out.setdefault(r["day"], set()).add(r["source"])
    return out


def files_per_day(lakehouse: Path, table: str) -> dict[str, int]:
    from deltalake import DeltaTable

    out: dict[str, int] = {}
    for f in DeltaTable(str(lakehouse / table)).file_uris():
        day = re.search(r"event_date=(\d{4}-\d{2}-\d{2})", f).group(1)
        out[day] = out.get(day, 0) + 1
    return out


def summary_rows(lakehouse: Path) -> list[dict]:
    """The record_count summary rows of reconcile_report (long form: one summary row per day and measure)."""
    return testing.query(lakehouse, "SELECT run_id, CAST(event_date AS VARCHAR) AS day, "
                                    "CAST(stream_value AS BIGINT) AS stream_count, CAST(batch_value AS BIGINT) AS batch_count, "
                                    "late_records, drift_threshold, over_threshold FROM rr "
                                    "WHERE row_kind = 'summary' AND kpi = 'kpi_5m' AND measure = 'record_count' "
                                    "ORDER BY day", rr="reconcile_report")


# ------------------------------------------------------------------------------------------------
# dag.test: the DAG end to end, in process, with spark-submit for real
# ------------------------------------------------------------------------------------------------

def test_dag_test_reconciles_the_closed_days_then_maintains(world, tmp_path):
    lakehouse = world.copy()
    raw_files_before = files_per_day(lakehouse, "raw_events")
    home = tmp_path / "airflow"
    home.mkdir()
    env = testing.airflow_base_env(home)
    env["TIDEMARK_JOBS_JAR"] = str(world.jar)
    testing.migrate_db(env)
    result = testing.dag_test(env, {"recent_days": 3, "include_dirty": True, "pipeline": str(world.pipeline_ok),
                                    "lakehouse": str(lakehouse)})
    print(f"dag.test: {result.state} {result.tasks} in {result.seconds:.0f} s")
    assert result.state == "success", result.output[-8000:]
    assert result.tasks == {"validate_params": "success", "reconcile_selection": "success",
                            "reconcile_dirty": "success", "check_drift": "success", "maintain": "success",
                            "report": "success"}

    plan = result.xcom["validate_params.return_value"]
    assert plan["jar"] == str(world.jar) and plan["lakehouse"] == str(lakehouse)
    assert plan["selection_args"] == ["--recent", "3"] and plan["dirty_args"] == ["--dirty"]
    assert plan["last_closed_day"] == world.progress.last_closed_day.isoformat()
    recent = result.xcom["reconcile_selection.return_value"]
    assert recent["run_id"] == f"{result.run_id}.reconcile_selection.1"
    assert recent["args"] == ["--recent", "3", "--run-id", recent["run_id"], f"pipeline={world.pipeline_ok}",
                              f"lakehouse={lakehouse}"]
    # reconcile_report: a summary row per reconciled day of this run, under the run id the DAG gave;
    # the job picks the recent days by the same recorded decision the DAG reads (stream_progress.last_closed_day),
    # and the backlog's closed days are all among the 3 most recent ones.
    rows = [r for r in summary_rows(lakehouse) if r["run_id"] == recent["run_id"]]
    reconciled = {r["day"] for r in rows}
    assert reconciled == set(world.closed) and world.today not in reconciled

    # kpi_5m: every reconciled day is wholly source=batch with the raw log's exact count; today is the stream's.
    sources = kpi_sources(lakehouse)
    for day in reconciled:
        assert sources[day] == {"batch"}, (day, sources)
    assert sources[world.today] == {"stream"}, sources
    counts = {r["day"]: r["n"] for r in testing.query(
        lakehouse, "SELECT CAST(event_date AS VARCHAR) AS day, sum(record_count) AS n FROM k GROUP BY event_date",
        k="kpi_5m")}
    for day in reconciled:
        assert counts[day] == world.raw[day]["n"], day

    # late records folded in
    for r in rows:
        assert r["batch_count"] == world.raw[r["day"]]["n"]
        assert r["late_records"] == r["batch_count"] - r["stream_count"] == world.raw[r["day"]]["late"]
        assert r["drift_threshold"] == THRESHOLD_OK and r["over_threshold"] is False  # the pipeline file's rule

    summary = result.xcom["check_drift.drift_summary"]
    assert summary["ok"] and summary["over_threshold"] == [] and summary["threshold"] == THRESHOLD_OK
    assert summary["run_ids"] == [recent["run_id"]] and summary["no_summary_days"] == []
    assert sorted(d["day"] for d in summary["days"]) == sorted(reconciled)
    for d in summary["days"]:
        assert d["drift"] <= THRESHOLD_OK and (d["drift"] > 0) == (world.raw[d["day"]]["late"] > 0), d
        assert {m["measure"] for m in d["measures"]} == {"record_count", "total_gb", "subscribers"}, d
        assert d["measures_over"] == [] and "worst" not in d
    # the dirty pass ran after the recent one and found nothing left (all late records are folded in now)
    dirty = result.xcom["reconcile_dirty.return_value"]
    assert dirty["args"][0] == "--dirty" and dirty["run_id"] == f"{result.run_id}.reconcile_dirty.1"
    assert [r for r in summary_rows(lakehouse) if r["run_id"] == dirty["run_id"]] == []
    # reconcile_report has no deletion vectors (so DeltaTable.to_pandas/to_pyarrow would also work on it)
    from deltalake import DeltaTable

    assert "deletionVectors" not in (DeltaTable(str(lakehouse / "reconcile_report")).protocol().reader_features or [])

    # maintain ran Maintenance for real, after the reconciles: each closed day of raw_events is one file now
    assert result.xcom["maintain.return_value"]["args"] == ["maintain.vacuum-retention=168 hours",
                                                            f"pipeline={world.pipeline_ok}", f"lakehouse={lakehouse}"]
    assert re.search(r"maintain raw_events +compacted \d+ closed days? \(", result.output), result.output[-8000:]
    raw_files = files_per_day(lakehouse, "raw_events")
    print(f"raw_events files per day: before {raw_files_before}, after {raw_files}")
    assert any(raw_files_before[d] > 1 for d in world.closed), raw_files_before
    assert {d: raw_files[d] for d in world.closed} == {d: 1 for d in world.closed}
    assert raw_files[world.today] == raw_files_before[world.today]  # an open day is left alone

    # report ran HealthReport for real: one page per run under $AIRFLOW_HOME/tidemark-reports, linked from the run,
    # with a row per reconciled day in its drift table
    url = result.xcom["report.report_url"]
    page = Path(unquote(urlparse(url).path))
    assert page.parent == home / "tidemark-reports" and page.name.endswith(".html"), url
    html = page.read_text()
    assert f"drift and health report: {url}" in result.output
    for day in reconciled:
        assert f'<td data-value="{day}">{day}</td>' in html, day
    assert html.count('<svg class="chart"') == 5


# ------------------------------------------------------------------------------------------------
# A second Delta implementation: deltalake (delta-rs) reads the same numbers as Spark
# ------------------------------------------------------------------------------------------------

def test_dag_submits_reconcile_to_a_standalone_cluster(world, tmp_path):
    """The spark_default connection names a spark:// master: the DAG's reconcile runs on a real standalone
    cluster (ops/spark-cluster: a master and two workers, each its own JVM) and replaces the day exactly."""
    lakehouse = world.copy()
    day = world.best_closed_day()
    cluster_dir = tmp_path / "cluster"
    port, ui_port = testing.free_port(), testing.free_port()
    script = str(testing.REPO / "ops" / "spark-cluster")
    started = testing.run([script, "start", "--dir", str(cluster_dir), "--workers", "2", "--cores", "1", "--memory", "1g",
                           "--port", str(port), "--ui-port", str(ui_port)], env=dict(os.environ), timeout=180)
    assert f"spark://127.0.0.1:{port} up with 2 workers" in started.stdout
    try:
        home = tmp_path / "airflow"
        home.mkdir()
        env = testing.airflow_base_env(home)
        env["TIDEMARK_JOBS_JAR"] = str(world.jar)
        env["AIRFLOW_CONN_SPARK_DEFAULT"] = json.dumps({"conn_type": "spark", "host": "spark://127.0.0.1", "port": port})
        testing.migrate_db(env)
        result = testing.dag_test(env, {"from_date": day, "to_date": day, "include_dirty": False, "maintain": False,
                                        "report": False, "pipeline": str(world.pipeline_ok),
                                        "lakehouse": str(lakehouse)})
        print(f"dag.test on the cluster: {result.state} {result.tasks} in {result.seconds:.0f} s")
        assert result.state == "success", result.output[-8000:]
        assert result.tasks["reconcile_selection"] == "success" and result.tasks["check_drift"] == "success", result.tasks
        master = requests.get(f"http://127.0.0.1:{ui_port}/json/", timeout=10).json()
    finally:
        testing.run([script, "stop", "--dir", str(cluster_dir)], env=dict(os.environ), timeout=120, check=False)
    # The master ran it: one finished application, the reconcile, on executors of its workers, under the name the
    # operator gives spark-submit (--name wins over Tidemark's default, tidemark-reconcile).
    assert [(a["name"], a["state"]) for a in master["completedapps"]] == [("tidemark-reconcile-selection", "FINISHED")], master
    assert master["activeapps"] == []
    run_id = result.xcom["reconcile_selection.return_value"]["run_id"]
    rows = [r for r in summary_rows(lakehouse) if r["run_id"] == run_id]
    assert [r["day"] for r in rows] == [day]
    assert rows[0]["batch_count"] == world.raw[day]["n"]
    assert rows[0]["late_records"] == rows[0]["batch_count"] - rows[0]["stream_count"] == world.raw[day]["late"] > 0
    assert kpi_sources(lakehouse)[day] == {"batch"}
    counts = {r["day"]: r["n"] for r in testing.query(
        lakehouse, "SELECT CAST(event_date AS VARCHAR) AS day, sum(record_count) AS n FROM k GROUP BY event_date",
        k="kpi_5m")}
    assert counts[day] == world.raw[day]["n"]


def test_deltalake_and_spark_read_the_same_numbers(world, tmp_path):
    """kpi_5m per (day, source, is_final) and raw_events per day, from deltalake and from Spark
    (`tidemark sql`), on a lakehouse with stream rows, one reconciled day and late records."""
    from deltalake import DeltaTable

    lakehouse = world.copy()
    day = world.best_closed_day()
    kpi_before = DeltaTable(str(lakehouse / "kpi_5m")).version()
    raw_version = DeltaTable(str(lakehouse / "raw_events")).version()
    env = dict(os.environ)
    env.update(TIDEMARK_SKIP_BUILD="1", TIDEMARK_LAKEHOUSE=str(lakehouse), TIDEMARK_JAVA_OPTS=testing.TEST_JAVA_OPTS,
               SPARK_LOCAL_IP="127.0.0.1")
    r = testing.run([str(testing.LAUNCHER), "reconcile", "--from", day, "--to", day], env=env, cwd=tmp_path, timeout=900)
    print(r.stdout + r.stderr)
    assert DeltaTable(str(lakehouse / "kpi_5m")).version() > kpi_before

    spark = testing.spark_figures(lakehouse, tmp_path / "spark")
    delta = testing.deltalake_figures(lakehouse)
    for name in ("kpi_5m", "raw_events"):
        print(f"{name}: reader features {DeltaTable(str(lakehouse / name)).protocol().reader_features}")
    print("kpi_5m (deltalake):", json.dumps({str(k): {f: str(v) for f, v in fig.items()} for k, fig in delta.kpi.items()},
                                           indent=1))
    print("raw_events (deltalake):", delta.raw)

    # The lakehouse holds what the comparison is about: batch and stream rows, final and open
    # windows, late records both folded in (the reconciled day) and not (the other closed days).
    assert {k[1] for k in delta.kpi} == {"batch", "stream"}
    assert {k[2] for k in delta.kpi} == {True, False}
    assert [k for k in delta.kpi if k[0] == day] == [(day, "batch", True)]
    assert delta.raw[day]["late"] == world.raw[day]["late"] > 0
    assert delta.raw[day]["n_is_late"] == delta.raw[day]["n"] == world.raw[day]["n"]
    assert delta.kpi[(day, "batch", True)]["records"] == world.raw[day]["n"]  # late records folded in
    stream_days_with_late = [d for d in world.closed if d != day and world.raw[d]["late"] > 0]
    for d in stream_days_with_late:  # not reconciled: the stream's KPIs leave the late records out
        assert sum(f["records"] for k, f in delta.kpi.items() if k[0] == d) == world.raw[d]["n"] - world.raw[d]["late"]
    assert set(delta.raw) == set(world.raw)

    assert testing.figure_differences(delta, spark) == []

    # The comparison can fail: it sees kpi_5m read before the reconcile commit, raw_events one
    # append behind, and one byte (1e-9 GB) of difference in one group.
    older = testing.deltalake_figures(lakehouse, kpi_version=kpi_before)
    diffs = testing.figure_differences(older, spark)
    assert f"kpi_5m ('{day}', 'stream', True): only deltalake has this group" in "\n".join(diffs), diffs
    assert f"kpi_5m ('{day}', 'batch', True): only Spark has this group" in "\n".join(diffs), diffs
    behind = testing.deltalake_figures(lakehouse, raw_version=raw_version - 1)
    assert any(d.startswith("raw_events") for d in testing.figure_differences(behind, spark))
    from decimal import Decimal

    nudged = testing.TableFigures({k: dict(v) for k, v in spark.kpi.items()}, spark.raw)
    nudged.kpi[(day, "batch", True)]["total_gb"] += Decimal("0.000000001")
    assert testing.figure_differences(delta, nudged) == [
        f"kpi_5m ('{day}', 'batch', True) total_gb: deltalake {delta.kpi[(day, 'batch', True)]['total_gb']} "
        f"!= Spark {nudged.kpi[(day, 'batch', True)]['total_gb']}"]


# ------------------------------------------------------------------------------------------------
# tidemark-airflow against a real Airflow
# ------------------------------------------------------------------------------------------------

def test_client_triggers_a_range_and_follows_it_to_success(airflow, world):
    lakehouse = world.copy()
    day = world.best_closed_day()
    # --no-maintain --no-report: a real maintain and report run in test_dag_test_reconciles_the_closed_days_then_maintains
    r = run_cli(airflow, "trigger", "--from", day, "--to", day, "--pipeline", str(world.pipeline_ok), "--no-maintain",
                "--no-report", "--lakehouse", str(lakehouse), "--wait", "--interval", "2")
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    assert airflow.password not in out
    assert "unpaused DAG tidemark_reconcile" in out  # a new DAG starts paused
    run_id = re.search(r"triggered tidemark_reconcile run (\S+):", out).group(1)
    assert f"days {day}..{day}" in out
    assert re.search(r"run running \| validate_params success, reconcile_selection running", out), out
    assert re.search(r"run success \| validate_params success, reconcile_selection success, "
                     r"reconcile_dirty skipped, check_drift success, maintain skipped, report skipped", out), out
    line = next(ln for ln in out.splitlines() if ln.strip().startswith(day))
    assert line.rstrip().endswith("ok") and f" {world.raw[day]['late']:,} " in line, line
    assert f"threshold {THRESHOLD_OK * 100:g}%, the pipeline's drift_threshold" in out
    n, late = world.raw[day]["n"], world.raw[day]["late"]
    assert f"kpi_5m.record_count: {n - late:,} -> {n:,}, drift +{late:,} (" in out
    assert f"result: run {run_id} succeeded" in out
    assert kpi_sources(lakehouse)[day] == {"batch"}

    status = run_cli(airflow, "status", run_id)
    assert status.returncode == 0 and "run success" in status.stdout and day in status.stdout


def test_client_run_over_the_drift_threshold_exits_1(airflow, world):
    lakehouse = world.copy()
    day = world.best_closed_day()
    # --no-maintain --no-report: a real maintain and report run in test_dag_test_reconciles_the_closed_days_then_maintains;
    # that they run beside a failed check_drift is test_airflow_dag's (a stand-in spark-submit, much faster)
    # the pipeline file's drift_threshold is 1e-6 (it must be > 0): any drift of an exact measure is over (an
    # estimate never is)
    r = run_cli(airflow, "trigger", "--from", day, "--pipeline", str(world.pipeline_tiny), "--no-maintain",
                "--no-report", "--lakehouse", str(lakehouse), "--wait", "--interval", "2")
    out = r.stdout + r.stderr
    assert r.returncode == 1, out
    assert re.search(rf"{day} +\+\d+\.\d+% .*OVER THRESHOLD 0\.0001%: .*kpi_5m\.record_count \+\d", out), out
    assert re.search(r"worst kpi_5m\.record_count cell_site_id=cell-\d+: \+", out), out
    assert "kpi_5m.subscribers" not in out.split("OVER THRESHOLD")[1].splitlines()[0]
    assert re.search(rf"check_drift failed: .*drift over 0\.0001% on 1 day\(s\): {day}", out), out
    assert kpi_sources(lakehouse)[day] == {"batch"}  # reconciled all the same: the failure is the alarm
    assert airflow.password not in out


def test_client_refused_requests_exit_1_with_the_reason(airflow, world, tmp_path):
    today = world.today  # the newest day of the lakehouse: open
    r = run_cli(airflow, "trigger", "--from", today, "--lakehouse", str(world.lakehouse), "--wait", "--interval", "2")
    assert r.returncode == 1, r.stdout + r.stderr
    assert re.search(rf"validate_params failed: .*refused: day {today} is not closed yet", r.stdout), r.stdout
    assert "reconcile_selection upstream_failed" in r.stdout

    r = run_cli(airflow, "trigger", "--recent", "2", "--lakehouse", str(tmp_path / "no-such-lakehouse"), "--wait",
                "--interval", "2")
    assert r.returncode == 1
    assert re.search(r"validate_params failed: .*no Delta table at .*no-such-lakehouse/stream_progress", r.stdout)

    # Params the DAG's schema refuses never become a run: Airflow answers 400/422, the tool exits 2.
    r = run_cli(airflow, "trigger", "--recent", "5000", "--lakehouse", str(world.lakehouse))
    assert r.returncode == 2, r.stdout + r.stderr
    assert "Airflow refused the request" in r.stderr and "recent_days" in r.stderr
    r = run_cli(airflow, "status", "no-such-run")
    assert r.returncode == 2 and "no run 'no-such-run'" in r.stderr


def test_wrong_credentials_are_a_clear_error_and_never_printed(airflow, tmp_path):
    wrong = "wrong-" + airflow.password[::-1]
    r = run_cli(airflow, "status", "whatever", password=wrong)
    assert r.returncode == 3
    assert f"Airflow at {airflow.url} refused the credentials of user 'admin' (HTTP 401)" in r.stderr
    assert wrong not in r.stdout + r.stderr and airflow.password not in r.stdout + r.stderr
    assert "Traceback" not in r.stderr

    creds = tmp_path / "airflow.json"
    creds.write_text(json.dumps({"url": airflow.url, "username": "admin", "password": wrong}))
    creds.chmod(0o600)
    r = run_cli(airflow, "status", "whatever", "--credentials", str(creds), password="")
    assert r.returncode == 3 and "refused the credentials" in r.stderr and f"file {creds}" in r.stderr
    assert wrong not in r.stdout + r.stderr
    creds.write_text(f"[airflow]\nurl = {airflow.url}\nusername = admin\npassword = {airflow.password}\n")
    r = run_cli(airflow, "status", "no-such-run", "--credentials", str(creds), password="")
    assert r.returncode == 2 and "no run 'no-such-run'" in r.stderr  # logged in: the run is what is unknown
    assert airflow.password not in r.stdout + r.stderr


def test_pip_installed_client_with_a_pre_issued_token(airflow, world, installed_client, tmp_path):
    venv = installed_client
    site = venv / "lib" / "python3.11" / "site-packages"
    # what pip install ./python gave: the package and the command, without Airflow, deltalake or pyspark
    r = testing.run([str(venv / "bin" / "python"), "-c",
                     "import importlib.util as u, tidemark_airflow.cli as c; "
                     "print(c.__file__, [m for m in ('airflow', 'deltalake', 'pyspark') if u.find_spec(m)])"],
                    env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"}, cwd=tmp_path, timeout=120)
    assert r.stdout == f"{site}/tidemark_airflow/cli.py []\n"

    # The token is issued beforehand (as an operator would, POST /auth/token) and given as TIDEMARK_AIRFLOW_TOKEN.
    # A wrong password beside it is never used: the client asks for no token of its own.
    token = airflow.token()
    wrong = "wrong-" + airflow.password[::-1]
    with_token = {"TIDEMARK_AIRFLOW_TOKEN": token, "TIDEMARK_AIRFLOW_USER": "admin", "TIDEMARK_AIRFLOW_PASSWORD": wrong}
    today = world.today  # the newest day of the lakehouse: open
    r = run_installed(venv, airflow, "trigger", "--from", today, "--lakehouse", str(world.lakehouse), "--wait",
                      "--interval", "2", env=with_token)
    assert (r.returncode, r.stderr) == (1, ""), r.stdout + r.stderr
    assert token not in r.stdout and wrong not in r.stdout
    lines = r.stdout.splitlines()
    if lines[0] == "unpaused DAG tidemark_reconcile":  # only when no earlier test has triggered it
        lines.pop(0)
    run_id = re.fullmatch(r"triggered tidemark_reconcile run (\S+): .*", lines[0]).group(1)
    conf = {"from_date": today, "to_date": today, "include_dirty": False, "lakehouse": str(world.lakehouse)}
    assert lines[0] == f"triggered tidemark_reconcile run {run_id}: days {today}..{today}; conf {conf}"
    refused = (f"  validate_params failed: refused: day {today} is not closed yet: the last closed day is "
               f"{world.progress.last_closed_day} (stream_progress batch {world.progress.batch_id}). "
               "Reconcile closed days only.")
    ended = ("run failed | validate_params failed, reconcile_selection upstream_failed, reconcile_dirty upstream_failed, "
             "check_drift upstream_failed, maintain upstream_failed, report upstream_failed")
    assert [ln[9:] for ln in lines[-3:-2]] == [ended] and lines[-2:] == [f"result: run {run_id} failed", refused]
    for ln in lines[1:-2]:  # one line per state change, each stamped HH:MM:SS
        assert re.fullmatch(r"\d\d:\d\d:\d\d run (queued|running|failed)( \| .+)?", ln), ln

    # status with the token from a file holding POST /auth/token's JSON answer, exactly as the server gave it
    answer = requests.post(f"{airflow.url}/auth/token", json={"username": "admin", "password": airflow.password},
                           timeout=30)
    assert answer.status_code == 201
    token_file = tmp_path / "airflow-token.json"
    token_file.write_text(answer.text)
    token_file.chmod(0o600)
    r = run_installed(venv, airflow, "status", run_id, "--token-file", str(token_file), env={})
    assert (r.returncode, r.stderr) == (1, "")
    status = r.stdout.splitlines()
    assert [status[0][9:]] + status[1:] == [ended, f"conf: {conf}", f"result: run {run_id} failed", refused]

    # Refused tokens: exit 3, naming where the token came from, never printing it.
    expired, foreign = forged_tokens(token, airflow.env["AIRFLOW__API_AUTH__JWT_SECRET"])
    advice = (f"get a new one with POST {airflow.url}/auth/token (a token expires after [api_auth] "
              "jwt_expiration_time, 24 h by default, and holds only on api-servers with the same jwt_secret)")
    r = run_installed(venv, airflow, "status", run_id, env={**with_token, "TIDEMARK_AIRFLOW_TOKEN": expired})
    assert (r.returncode, r.stdout) == (3, "")
    assert r.stderr == (f"tidemark-airflow: Airflow at {airflow.url} refused the token from TIDEMARK_AIRFLOW_TOKEN "
                        f"(HTTP 401: Token Expired); {advice}\n")
    foreign_file = tmp_path / "foreign-token"
    foreign_file.write_text(foreign + "\n")
    foreign_file.chmod(0o600)
    r = run_installed(venv, airflow, "trigger", "--recent", "1", "--token-file", str(foreign_file), env=with_token)
    assert (r.returncode, r.stdout) == (3, "")
    assert r.stderr == (f"tidemark-airflow: Airflow at {airflow.url} refused the token from --token-file "
                        f"{foreign_file} (HTTP 403: Invalid JWT token); {advice}\n")
