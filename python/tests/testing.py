"""Test support: a real Kafka broker, a small lakehouse from the real speed layer, a real Airflow.

Used by python/tests/test_airflow_*.py. Every process is started in its own session (process
group) and torn down with SIGTERM, then SIGKILL, by its group id only.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import zipfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import requests

REPO = Path(__file__).resolve().parents[2]
VENV_BIN = Path(sys.executable).parent
LAUNCHER = REPO / "tidemark"
JOBS_JAR = REPO / "spark-submit-jar" / "target" / "tidemark-spark-jobs.jar"
# The launcher JVMs a test starts live for seconds to minutes: C1 only, as C2's compilations cost about
# half of such a JVM's CPU and are never paid back (docs/testing.md). The code they run is the same.
# The code cache is the size a tiered JVM gets: C1 alone gets 48 MB, which Spark's generated classes
# fill, and a JVM with a full code cache stops compiling. The parallel collector costs these JVMs
# about 5 % less CPU than G1 (docs/testing.md).
TEST_JAVA_OPTS = "-Xmx1g -XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=256m -XX:+UseParallelGC"
DAGS = REPO / "dags"
PYTHON_DIR = REPO / "python"  # the tidemark_airflow package, which the DAG imports
DAG_ID = "tidemark_reconcile"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def require_build() -> None:
    """The jar and the launcher come from the Maven build (run-tests builds before the Python tests)."""
    missing = [str(p) for p in (JOBS_JAR, LAUNCHER, REPO / "launcher" / "target" / "classpath.txt") if not p.exists()]
    if missing:
        raise RuntimeError(f"missing {', '.join(missing)}: build first with `cd {REPO} && mvn -B -q install -DskipTests`")


def airflow_base_env(home: Path, *, dags_folder: Path = DAGS) -> dict[str, str]:
    """Environment of an isolated Airflow (fresh AIRFLOW_HOME, SQLite, LocalExecutor, loopback)."""
    env = dict(os.environ)
    for key in list(env):  # nothing from the caller's Airflow may leak in
        if key.startswith("AIRFLOW__") or key.startswith("AIRFLOW_CONN_") or key.startswith("AIRFLOW_VAR_"):
            del env[key]
    env.update(
        PATH=f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        # Every Airflow process that parses the DAG imports tidemark_airflow from here (docs/operations.md).
        PYTHONPATH=os.pathsep.join([str(PYTHON_DIR), *filter(None, [os.environ.get("PYTHONPATH")])]),
        AIRFLOW_HOME=str(home),
        AIRFLOW__CORE__DAGS_FOLDER=str(dags_folder),
        AIRFLOW__CORE__LOAD_EXAMPLES="False",
        AIRFLOW__DATABASE__SQL_ALCHEMY_CONN=f"sqlite:///{home}/airflow.db",
        AIRFLOW__CORE__EXECUTOR="LocalExecutor",
        AIRFLOW__CORE__PARALLELISM="4",
        AIRFLOW_CONN_SPARK_DEFAULT=json.dumps({"conn_type": "spark", "host": "local[2]"}),
        TIDEMARK_RECONCILE_SCHEDULE="none",
        SPARK_LOCAL_IP="127.0.0.1",
        PYTHONUNBUFFERED="1",
    )
    return env


def isolate_airflow_in_process() -> None:
    """Points this (pytest) process at a throwaway AIRFLOW_HOME before anything imports airflow."""
    if "airflow" in sys.modules:
        return
    import atexit
    import tempfile

    home = Path(tempfile.mkdtemp(prefix="tidemark-airflow-home-"))
    atexit.register(shutil.rmtree, home, True)
    for key, value in airflow_base_env(home).items():
        if key.startswith("AIRFLOW") or key == "TIDEMARK_RECONCILE_SCHEDULE":
            os.environ[key] = value


def migrate_db(env: Mapping[str, str]) -> None:
    subprocess.run([str(VENV_BIN / "airflow"), "db", "migrate"], env=dict(env), check=True, capture_output=True,
                   timeout=600)


# ---------------------------------------------------------------------------------------------
# Processes
# ---------------------------------------------------------------------------------------------

@dataclass
class Service:
    name: str
    proc: subprocess.Popen
    log: Path

    def alive(self) -> bool:
        return self.proc.poll() is None

    def tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""


def start_service(name: str, argv: Sequence[str], env: Mapping[str, str], logdir: Path, cwd: Path | None = None) -> Service:
    log = logdir / f"{name}.log"
    with open(log, "ab") as out:
        proc = subprocess.Popen(list(argv), env=dict(env), cwd=cwd, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
    return Service(name, proc, log)


def stop_group(proc: subprocess.Popen, *, grace: float = 20.0) -> None:
    """SIGTERM to the process group this process leads, SIGKILL after ``grace`` seconds."""
    if proc.poll() is None or _group_alive(proc.pid):
        for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 10.0)):
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                break
            deadline = time.monotonic() + wait
            while time.monotonic() < deadline and (proc.poll() is None or _group_alive(proc.pid)):
                time.sleep(0.2)
            if proc.poll() is not None and not _group_alive(proc.pid):
                break
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        pass


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


def run(argv: Sequence[str], *, env: Mapping[str, str], cwd: Path | None = None, timeout: float,
        check: bool = True) -> subprocess.CompletedProcess:
    """Runs a command in its own process group; the whole group is killed on timeout."""
    proc = subprocess.Popen(list(argv), env=dict(env), cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        stop_group(proc, grace=5)
        out, err = proc.communicate()
        raise RuntimeError(f"{' '.join(map(str, argv))} timed out after {timeout:.0f} s\n{out[-3000:]}\n{err[-3000:]}") from None
    except BaseException:
        stop_group(proc, grace=5)
        raise
    result = subprocess.CompletedProcess(list(argv), proc.returncode, out, err)
    if check and proc.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, argv))} exited {proc.returncode}\n{out[-3000:]}\n{err[-3000:]}")
    return result


# ---------------------------------------------------------------------------------------------
# A lakehouse from the real speed layer
# ---------------------------------------------------------------------------------------------

@dataclass
class LakehouseBuild:
    lakehouse: Path
    seconds: float
    output: str
    base: dt.datetime  # where the generated event clock ended


# The time of day (UTC) the test traffic's event clock ends at: any fixed one does; the figures of
# other times of day are compared in test_read_without_spark.py (OTHER_BASES).
BASE_TIME_OF_DAY = dt.time(21, 7, 31)


def base_time(time_of_day: dt.time = BASE_TIME_OF_DAY) -> dt.datetime:
    """An explicit base time for generated traffic: ``time_of_day`` (UTC) of yesterday.

    What the tests assert depends on where the records fall relative to UTC day and window
    boundaries, so it must not depend on the hour a suite starts: with a fixed time of day the
    traffic, the windows, the days and every figure are the same on any date (only the dates move).
    Yesterday keeps every event in the past (no clock-skew refusal), today open, and the data recent."""
    yesterday = dt.datetime.now(dt.timezone.utc).date() - dt.timedelta(days=1)
    return dt.datetime.combine(yesterday, time_of_day, tzinfo=dt.timezone.utc)


def build_lakehouse(workdir: Path, *, base: dt.datetime | None = None, timeout: float = 900) -> LakehouseBuild:
    """Broker, two generated phases, one drain of the speed layer: a lakehouse with closed days and late records.

    Both phases end their event clock at ``base`` (default: base_time()), so the lakehouse is the same
    whatever the date and hour it is built at.
    Phase 1: 20,000 on-time records over the 60 hours before base, read in two micro-batches of ~10,000
    (the speed layer's watermark lags two batches: batch 2 is the first with a real one, ~base - 30 h).
    Phase 2: 4,000 records, 5 % of them 31-60 h behind the event clock; they arrive in batch 2,
    behind its watermark, i.e. in late_events and not in the streaming KPIs (~2 % drift per day).
    Afterwards the watermark of the last batch (~base - 30 h) closes at least the UTC day holding
    base - 60 h (and at least 5.8 h of late records in it, whatever the time of day); base's day is open.
    """
    base = base or base_time()
    end = base.astimezone(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    require_build()
    t0 = time.monotonic()
    workdir.mkdir(parents=True, exist_ok=True)
    port = free_port()
    env = dict(os.environ)
    env.update(
        TIDEMARK_SKIP_BUILD="1",  # run-tests has just built; never rebuild under a test
        TIDEMARK_KAFKA_BOOTSTRAP_SERVERS=f"127.0.0.1:{port}",
        TIDEMARK_LAKEHOUSE=str(workdir / "lakehouse"),
        TIDEMARK_STREAM_CHECKPOINT=str(workdir / "checkpoint"),
        TIDEMARK_JAVA_OPTS=TEST_JAVA_OPTS,
        TIDEMARK_METRICS_PORT="0",  # no Prometheus endpoint: 9464 may be another stream's on this machine
        SPARK_LOCAL_IP="127.0.0.1",
    )
    tm = str(LAUNCHER)
    broker = workdir / "broker"
    out: list[str] = []
    started = False
    try:
        r = run([tm, "broker", "start", "--dir", str(broker), "--port", str(port)], env=env, cwd=workdir, timeout=240)
        started = True
        out.append(r.stdout + r.stderr)
        common = ["--cells", "12", "--subscribers", "400", "--invalid-fraction", "0"]
        r = run([tm, "generate", "--backlog-hours", "60", "--backlog-end", end, "--count", "20000", "--late-fraction", "0",
                 "--seed", "11", *common], env=env, cwd=workdir, timeout=240)
        out.append(r.stdout + r.stderr)
        r = run([tm, "generate", "--backlog-hours", "0.05", "--backlog-end", end, "--count", "4000", "--late-fraction", "0.05",
                 "--late-delay-min", "31h", "--late-delay-max", "60h", "--seed", "12", *common],
                env=env, cwd=workdir, timeout=240)
        out.append(r.stdout + r.stderr)
        # 10,050 per batch: two batches of phase 1, the rest (phase 2) in one third batch, no stray fourth one.
        r = run([tm, "stream", "--available-now", "--max-records-per-batch", "10050"], env=env, cwd=workdir,
                timeout=timeout)
        out.append(r.stdout + r.stderr)
    finally:
        if started:
            run([tm, "broker", "stop", "--dir", str(broker)], env=env, cwd=workdir, timeout=120, check=False)
    return LakehouseBuild(workdir / "lakehouse", time.monotonic() - t0, "\n".join(out), base)


def private_jar(dst_dir: Path) -> Path:
    """A copy of the jobs jar: other builds in the same tree replace the original while tests run."""
    require_build()
    dst_dir.mkdir(parents=True, exist_ok=True)
    dst = dst_dir / JOBS_JAR.name
    for _ in range(5):
        try:
            shutil.copyfile(JOBS_JAR, dst)
            with zipfile.ZipFile(dst) as z:  # a copy taken mid-rewrite would not be a valid zip
                z.getinfo("io/tidemark/reconcile/ReconcileJob.class")
            return dst
        except (OSError, KeyError, zipfile.BadZipFile):
            time.sleep(5)
    raise RuntimeError(f"could not take a consistent copy of {JOBS_JAR}")


def install_client_venv(workdir: Path, *, timeout: float = 900) -> Path:
    """`pip install ./python -c python/constraints.txt` into a fresh venv (python3.11 -m venv), as a user
    installs the client; returns the venv. The install runs from a copy of python/ in ``workdir``:
    setuptools builds in the source tree (build/, *.egg-info), which must not race other runs in this tree."""
    workdir.mkdir(parents=True, exist_ok=True)
    shutil.copytree(PYTHON_DIR, workdir / "python",
                    ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__", ".pytest_cache"))
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PIP_USER")}
    venv = workdir / "venv"
    run([shutil.which("python3.11") or sys.executable, "-m", "venv", str(venv)], env=env, cwd=workdir, timeout=300)
    run([str(venv / "bin" / "pip"), "install", "-q", "./python", "-c", "python/constraints.txt"], env=env,
        cwd=workdir, timeout=timeout)
    return venv


def copy_lakehouse(src: Path, dst: Path) -> Path:
    """Delta tables keep relative file paths: a copied directory is an independent lakehouse."""
    shutil.copytree(src, dst)
    return dst


def query(lakehouse: Path | str, sql: str, **tables: str) -> list[dict]:
    import pyarrow as pa
    from deltalake import DeltaTable, QueryBuilder

    qb = QueryBuilder()
    for alias, name in tables.items():
        qb.register(alias, DeltaTable(f"{lakehouse}/{name}"))
    return pa.table(qb.execute(sql).read_all()).to_pylist()


# ---------------------------------------------------------------------------------------------
# A real Airflow: api-server, scheduler, dag-processor
# ---------------------------------------------------------------------------------------------

@dataclass
class AirflowStack:
    home: Path
    url: str
    username: str
    password: str
    env: dict[str, str]
    services: list[Service] = field(default_factory=list)

    def token(self) -> str:
        r = requests.post(f"{self.url}/auth/token", json={"username": self.username, "password": self.password},
                          timeout=30)
        r.raise_for_status()
        return r.json()["access_token"]

    def logs(self) -> str:
        return "\n".join(f"--- {s.name} ({'running' if s.alive() else 'exited'})\n{s.tail()}" for s in self.services)

    def stop(self) -> None:
        for s in self.services:  # all at once (each by its own group id), then wait for each
            try:
                os.killpg(s.proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        for s in reversed(self.services):
            stop_group(s.proc)


@contextmanager
def airflow_stack(home: Path, *, extra_env: Mapping[str, str] | None = None, dag_id: str = DAG_ID,
                  timeout: float = 300) -> Iterator[AirflowStack]:
    """api-server + scheduler + dag-processor on loopback; yields once ``dag_id`` is parsed and visible."""
    home.mkdir(parents=True, exist_ok=True)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    password = "pw-" + secrets.token_urlsafe(12)
    passwords = home / "passwords.json"
    passwords.write_text(json.dumps({"admin": password}))
    env = airflow_base_env(home)
    env.update(
        AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS="admin:admin",
        AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE=str(passwords),
        AIRFLOW__API__HOST="127.0.0.1",
        AIRFLOW__API__PORT=str(port),
        AIRFLOW__API__BASE_URL=url,
        AIRFLOW__CORE__EXECUTION_API_SERVER_URL=f"{url}/execution/",
        AIRFLOW__API_AUTH__JWT_SECRET=secrets.token_hex(48),  # 96 bytes, one for every process
        AIRFLOW__API__SECRET_KEY=secrets.token_hex(32),
        AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL="5",
        AIRFLOW__SCHEDULER__MIN_FILE_PROCESS_INTERVAL="5",
        AIRFLOW__DAG_PROCESSOR__MIN_FILE_PROCESS_INTERVAL="5",
        AIRFLOW__LOGGING__LOGGING_LEVEL="INFO",
    )
    env.update(extra_env or {})
    migrate_db(env)
    stack = AirflowStack(home, url, "admin", password, env)
    airflow = str(VENV_BIN / "airflow")
    try:
        stack.services.append(start_service("api-server", [airflow, "api-server", "--host", "127.0.0.1", "--port",
                                                           str(port)], env, home))
        stack.services.append(start_service("scheduler", [airflow, "scheduler"], env, home))
        stack.services.append(start_service("dag-processor", [airflow, "dag-processor"], env, home))
        deadline = time.monotonic() + timeout
        token = None
        while True:
            dead = [s.name for s in stack.services if not s.alive()]
            if dead:
                raise RuntimeError(f"{', '.join(dead)} exited during start-up\n{stack.logs()}")
            try:
                if token is None:
                    if requests.get(f"{url}/api/v2/monitor/health", timeout=5).status_code == 200:
                        token = stack.token()
                if token is not None:
                    r = requests.get(f"{url}/api/v2/dags/{dag_id}", headers={"Authorization": f"Bearer {token}"},
                                     timeout=10)
                    if r.status_code == 200:
                        break
            except requests.RequestException:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"Airflow not ready with DAG {dag_id} after {timeout:.0f} s\n{stack.logs()}")
            time.sleep(1)
        yield stack
    finally:
        stack.stop()


# ---------------------------------------------------------------------------------------------
# dag.test() in a child process (own AIRFLOW_HOME, killable as a group)
# ---------------------------------------------------------------------------------------------

DAG_TEST_DRIVER = r"""
import json, sys
from airflow.dag_processing.dagbag import DagBag

folder, dag_id, conf = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
bag = DagBag(dag_folder=folder)
if bag.import_errors:
    raise SystemExit(f"import errors: {bag.import_errors}")
dag = bag.dags[dag_id]
dr = dag.test(run_conf=conf)
tis = dr.get_task_instances()
result = {"state": str(getattr(dr.state, "value", dr.state)), "run_id": dr.run_id,
          "tasks": {ti.task_id: str(getattr(ti.state, "value", ti.state)) for ti in tis}, "xcom": {}}
for ti in tis:
    for key in ("return_value", "drift_summary", "report_url"):
        value = ti.xcom_pull(task_ids=ti.task_id, key=key)
        if value is not None:
            result["xcom"][f"{ti.task_id}.{key}"] = value
print("DAG_TEST_RESULT " + json.dumps(result, default=str), flush=True)
"""


@dataclass
class DagTestResult:
    state: str
    run_id: str
    tasks: dict[str, str]
    xcom: dict[str, object]
    output: str
    seconds: float


def dag_test(env: Mapping[str, str], conf: Mapping[str, object], *, dag_id: str = DAG_ID, dags_folder: Path = DAGS,
             timeout: float = 1200) -> DagTestResult:
    t0 = time.monotonic()
    r = run([sys.executable, "-c", DAG_TEST_DRIVER, str(dags_folder), dag_id, json.dumps(dict(conf))], env=env,
            timeout=timeout, check=False)
    output = r.stdout + "\n" + r.stderr
    line = next((ln for ln in r.stdout.splitlines() if ln.startswith("DAG_TEST_RESULT ")), None)
    if line is None:
        raise RuntimeError(f"dag.test produced no result (exit {r.returncode}):\n{output[-6000:]}")
    data = json.loads(line[len("DAG_TEST_RESULT "):])
    return DagTestResult(data["state"], data["run_id"], data["tasks"], data["xcom"], output, time.monotonic() - t0)


# ---------------------------------------------------------------------------------------------
# Cross-check: the same per-table figures from deltalake (delta-rs) and from Spark
# ---------------------------------------------------------------------------------------------

UNIT_ROUNDOFF = 2.0 ** -53  # double precision

# The figures compared, per group; SQL that both DataFusion (deltalake's QueryBuilder) and Spark run
# ({string}: VARCHAR for DataFusion, STRING for Spark).
KPI_FIGURES_SQL = ("SELECT CAST(event_date AS {string}) AS day, source, is_final, count(*) AS n_rows, "
                   "sum(record_count) AS records, CAST(sum(total_gb) AS {string}) AS total_gb, "
                   "sum(subscribers) AS subscribers FROM {kpi} GROUP BY event_date, source, is_final")
RAW_FIGURES_SQL = ("SELECT CAST(event_date AS {string}) AS day, count(*) AS n, count(is_late) AS n_is_late, "
                   "sum(CASE WHEN is_late THEN 1 ELSE 0 END) AS late, sum(volume_gb) AS volume_gb, "
                   "count(DISTINCT subscriber_id) AS subscribers, min(kafka_offset) AS min_offset, "
                   "max(kafka_offset) AS max_offset FROM {raw} GROUP BY event_date")


@dataclass
class TableFigures:
    """Per-group figures of kpi_5m (key: day, source, is_final) and raw_events (key: day)."""
    kpi: dict[tuple, dict]
    raw: dict[str, dict]
    exact_volume: dict[str, float] = field(default_factory=dict)  # math.fsum of volume_gb per day (deltalake only)


def _kpi_figures(rows: list[dict]) -> dict[tuple, dict]:
    from decimal import Decimal

    out = {}
    for r in rows:
        out[(r["day"], r["source"], bool(r["is_final"]))] = {
            "n_rows": int(r["n_rows"]), "records": int(r["records"]),
            "total_gb": Decimal(r["total_gb"]), "subscribers": int(r["subscribers"])}
    return out


def _raw_figures(rows: list[dict]) -> dict[str, dict]:
    keys = ("n", "n_is_late", "late", "subscribers", "min_offset", "max_offset")
    return {r["day"]: {**{k: int(r[k]) for k in keys}, "volume_gb": float(r["volume_gb"])} for r in rows}


def deltalake_figures(lakehouse: Path | str, *, kpi_version: int | None = None,
                      raw_version: int | None = None) -> TableFigures:
    """The figures as deltalake (DataFusion) computes them, optionally at given table versions."""
    import pyarrow as pa
    from deltalake import DeltaTable, QueryBuilder

    kpi = DeltaTable(f"{lakehouse}/kpi_5m", version=kpi_version)
    raw = DeltaTable(f"{lakehouse}/raw_events", version=raw_version)
    qb = QueryBuilder().register("k", kpi).register("r", raw)
    kpi_rows = pa.table(qb.execute(KPI_FIGURES_SQL.format(kpi="k", string="VARCHAR")).read_all()).to_pylist()
    raw_rows = pa.table(qb.execute(RAW_FIGURES_SQL.format(raw="r", string="VARCHAR")).read_all()).to_pylist()
    volumes: dict[str, list[float]] = {}
    for r in pa.table(qb.execute("SELECT CAST(event_date AS VARCHAR) AS day, volume_gb FROM r").read_all()).to_pylist():
        volumes.setdefault(r["day"], []).append(r["volume_gb"])
    return TableFigures(_kpi_figures(kpi_rows), _raw_figures(raw_rows),
                        {day: math.fsum(v) for day, v in volumes.items()})


def spark_figures(lakehouse: Path, workdir: Path, *, timeout: float = 600) -> TableFigures:
    """The figures as Spark computes them, through `tidemark sql` (the analysts' path): each query is
    written as JSON by INSERT OVERWRITE DIRECTORY and read back (decimals as strings, doubles as
    JSON numbers, which round-trip exactly)."""
    require_build()
    workdir.mkdir(parents=True, exist_ok=True)
    out_kpi, out_raw = workdir / "spark-kpi", workdir / "spark-raw"
    sql = (f"INSERT OVERWRITE DIRECTORY '{out_kpi}' USING json {KPI_FIGURES_SQL.format(kpi='kpi_5m', string='STRING')}; "
           f"INSERT OVERWRITE DIRECTORY '{out_raw}' USING json {RAW_FIGURES_SQL.format(raw='raw_events', string='STRING')}")
    env = dict(os.environ)
    env.update(TIDEMARK_SKIP_BUILD="1", TIDEMARK_LAKEHOUSE=str(lakehouse), TIDEMARK_JAVA_OPTS=TEST_JAVA_OPTS,
               SPARK_LOCAL_IP="127.0.0.1")
    run([str(LAUNCHER), "sql", sql], env=env, cwd=workdir, timeout=timeout)

    def rows(d: Path) -> list[dict]:
        files = sorted(d.glob("part-*"))
        assert files, f"Spark wrote no result into {d}"
        return [json.loads(line) for f in files for line in f.read_text().splitlines() if line.strip()]

    return TableFigures(_kpi_figures(rows(out_kpi)), _raw_figures(rows(out_raw)))


def volume_tolerance(n: int, exact_sum: float) -> float:
    """How far any order of summing n non-negative doubles may land from their exact sum:
    gamma_(n-1) * sum (Higham, recursive and pairwise summation alike), plus one ulp for the
    rounding of the reference (math.fsum is correctly rounded)."""
    gamma = (n - 1) * UNIT_ROUNDOFF / (1 - (n - 1) * UNIT_ROUNDOFF)
    return gamma * exact_sum + math.ulp(exact_sum)


def figure_differences(delta: TableFigures, spark: TableFigures) -> list[str]:
    """Every difference between the two readers' figures, one line each; empty when they agree.

    Everything is compared exactly (decimals as Decimal) except sum(volume_gb), a DOUBLE sum whose
    last bits depend on the order of summation: both readers' sums must lie within
    volume_tolerance of the exact sum (math.fsum of the values deltalake read)."""
    out = []
    for name, a, b in (("kpi_5m", delta.kpi, spark.kpi), ("raw_events", delta.raw, spark.raw)):
        for key in sorted(set(a) | set(b), key=str):
            if key not in b:
                out.append(f"{name} {key}: only deltalake has this group: {a[key]}")
                continue
            if key not in a:
                out.append(f"{name} {key}: only Spark has this group: {b[key]}")
                continue
            for figure in a[key]:
                va, vb = a[key][figure], b[key][figure]
                if figure == "volume_gb":
                    exact = delta.exact_volume.get(key)
                    if exact is None:
                        out.append(f"{name} {key}: no exact volume sum from deltalake")
                        continue
                    tol = volume_tolerance(a[key]["n"], exact)
                    for who, v in (("deltalake", va), ("Spark", vb)):
                        if abs(v - exact) > tol:
                            out.append(f"{name} {key} volume_gb: {who} {v!r} is {abs(v - exact):.3g} from the exact "
                                       f"sum {exact!r} (tolerance {tol:.3g})")
                elif va != vb:
                    out.append(f"{name} {key} {figure}: deltalake {va} != Spark {vb}")
    return out
