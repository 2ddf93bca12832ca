"""Smoke tests of the pinned Python environment (python/setup-venv).

Run: .venv/bin/pytest python/tests  (about 15 s: one Airflow api-server start).
They pin what the rest of the project relies on: Airflow CLI + metadata DB on SQLite, the api-server
with SimpleAuthManager tokens, the generated REST client, spark-submit 4.2.0 and deltalake.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

VENV_BIN = Path(sys.executable).parent


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def airflow_env(tmp_path_factory) -> dict[str, str]:
    home = tmp_path_factory.mktemp("airflow_home")
    (home / "dags").mkdir()
    passwords = home / "passwords.json"
    passwords.write_text(json.dumps({"admin": "admin"}))
    env = dict(os.environ)
    env.update(
        PATH=f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}",
        AIRFLOW_HOME=str(home),
        AIRFLOW__CORE__DAGS_FOLDER=str(home / "dags"),
        AIRFLOW__CORE__LOAD_EXAMPLES="False",
        AIRFLOW__DATABASE__SQL_ALCHEMY_CONN=f"sqlite:///{home}/airflow.db",  # home is absolute: 4 slashes
        AIRFLOW__CORE__EXECUTOR="LocalExecutor",
        AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS="admin:admin",
        AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE=str(passwords),
        AIRFLOW__API__HOST="127.0.0.1",
        # >= 64 bytes, or PyJWT warns about a short HS512 key
        AIRFLOW__API_AUTH__JWT_SECRET="tidemark-smoke-test-" + "0" * 48,
    )
    subprocess.run([VENV_BIN / "airflow", "db", "migrate"], env=env, check=True,
                   capture_output=True, timeout=300)
    return env


@pytest.fixture(scope="module")
def api_server(airflow_env):
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    log = open(Path(airflow_env["AIRFLOW_HOME"]) / "api-server.log", "wb")
    proc = subprocess.Popen(
        [VENV_BIN / "airflow", "api-server", "--host", "127.0.0.1", "--port", str(port)],
        env=airflow_env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 120
        while True:
            assert proc.poll() is None, "api-server exited, see " + log.name
            try:
                if requests.get(base + "/api/v2/monitor/health", timeout=2).status_code == 200:
                    break
            except requests.ConnectionError:
                pass
            assert time.monotonic() < deadline, "api-server not up in 120 s, see " + log.name
            time.sleep(0.5)
        yield base
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        log.close()


def _token(base: str, password: str = "admin") -> requests.Response:
    return requests.post(base + "/auth/token", json={"username": "admin", "password": password}, timeout=10)


def test_api_server_health_version_and_auth(api_server):
    health = requests.get(api_server + "/api/v2/monitor/health", timeout=10).json()
    assert health["metadatabase"]["status"] == "healthy"
    assert requests.get(api_server + "/api/v2/version", timeout=10).json()["version"] == "3.3.2"
    assert requests.get(api_server + "/api/v2/dags", timeout=10).status_code == 401
    assert _token(api_server, "wrong").status_code == 401
    resp = _token(api_server)
    assert resp.status_code == 201
    token = resp.json()["access_token"]
    dags = requests.get(api_server + "/api/v2/dags", headers={"Authorization": f"Bearer {token}"}, timeout=10)
    assert dags.status_code == 200 and dags.json()["total_entries"] == 0


def test_rest_client(api_server):
    import airflow_client.client as client
    from airflow_client.client.api.dag_api import DAGApi
    from airflow_client.client.api.version_api import VersionApi

    config = client.Configuration(host=api_server, access_token=_token(api_server).json()["access_token"])
    with client.ApiClient(config) as api:
        assert VersionApi(api).get_version().version == "3.3.2"
        assert DAGApi(api).get_dags().total_entries == 0


def test_spark_submit_is_4_2_0():
    # spark-submit finds SPARK_HOME by running `python3` from PATH: the venv's bin must come first
    # (or set SPARK_HOME=<venv>/lib/python3.11/site-packages/pyspark).
    env = dict(os.environ, PATH=f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    out = subprocess.run([VENV_BIN / "spark-submit", "--version"], env=env, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "version 4.2.0" in out.stdout + out.stderr


def test_imports():
    import deltalake
    import pyspark
    from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator  # noqa: F401
    from airflow.sdk import Param, dag, task  # noqa: F401

    assert deltalake.__version__ == "1.6.6"
    assert pyspark.__version__ == "4.2.0"
