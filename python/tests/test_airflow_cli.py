"""tidemark-airflow without a server: bad input, credentials, secrets kept out of the output.

Run: .venv/bin/python -m pytest python/tests/test_airflow_cli.py   (~10 s)
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

PYTHON_DIR = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PYTHON_DIR))

from tidemark_airflow import testing  # noqa: E402
from tidemark_airflow.cli import Output, build_parser, drift_lines, main, trigger_conf  # noqa: E402
from tidemark_airflow.credentials import UsageError, load_credentials  # noqa: E402

SECRET = "s3cr3t-Pa55word-never-printed"


def cli(*args: str, env: dict[str, str] | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    """The real entry point, python -m tidemark_airflow, in a child process."""
    full = {k: v for k, v in os.environ.items() if not k.startswith("TIDEMARK_AIRFLOW_")}
    full["PYTHONPATH"] = str(PYTHON_DIR)
    full.update(env or {})
    return subprocess.run([sys.executable, "-m", "tidemark_airflow", *args], env=full, capture_output=True, text=True,
                          timeout=timeout)


def test_trigger_conf_sets_maintain_only_when_asked():
    conf = lambda *a: trigger_conf(build_parser().parse_args(["trigger", *a]))  # noqa: E731
    assert "maintain" not in conf("--from", "2026-11-27")  # the DAG's default
    assert conf("--from", "2026-11-27", "--no-maintain")["maintain"] is False
    assert conf("--recent", "2", "--maintain") == {"recent_days": 2, "maintain": True}


@pytest.mark.parametrize("args, message", [
    (["trigger", "--from", "2026-13-01", "--to", "2026-13-02"], "'2026-13-01' is not a valid calendar date"),
    (["trigger", "--from", "2026-1-1"], "'2026-1-1' is not a date: expected yyyy-mm-dd"),
    (["trigger", "--from", "2026-11-28", "--to", "2026-11-27"], "--to 2026-11-27 is before --from 2026-11-28"),
    (["trigger", "--to", "2026-11-27"], "--to needs --from"),
    (["trigger", "--from", "2026-11-27", "--recent", "3"], "either a range (--from/--to) or --recent N"),
    (["trigger", "--from", "2026-11-27", "--threshold", "-1"], "argument --threshold: '-1' must be >= 0"),
    (["trigger", "--threshold", "lots"], "'lots' is not a number"),
    (["trigger", "--recent", "0"], "'0' must be at least 1"),
    (["follow"], "the following arguments are required: run_id"),
    (["frobnicate"], "invalid choice: 'frobnicate'"),
])
def test_bad_input_exits_2_with_one_line(args, message, capsys):
    env_before = dict(os.environ)
    os.environ.update(TIDEMARK_AIRFLOW_USER="admin", TIDEMARK_AIRFLOW_PASSWORD=SECRET,
                      TIDEMARK_AIRFLOW_URL="http://127.0.0.1:9")  # never contacted: input is checked first
    try:
        assert main(args) == 2
    finally:
        os.environ.clear()
        os.environ.update(env_before)
    out, err = capsys.readouterr()
    assert message in err
    assert len(err.strip().splitlines()) == 1 and out == ""


def test_missing_credentials_exit_2():
    r = cli("trigger", "--from", "2026-11-27")
    assert r.returncode == 2
    assert "no Airflow user given: set TIDEMARK_AIRFLOW_USER / TIDEMARK_AIRFLOW_PASSWORD" in r.stderr


def test_unreachable_server_is_a_clear_error_without_the_password(tmp_path):
    port = testing.free_port()  # nothing listens there
    r = cli("trigger", "--from", "2026-11-27", env={"TIDEMARK_AIRFLOW_URL": f"http://127.0.0.1:{port}",
                                                   "TIDEMARK_AIRFLOW_USER": "admin",
                                                   "TIDEMARK_AIRFLOW_PASSWORD": SECRET})
    assert r.returncode == 3
    assert f"cannot reach Airflow at http://127.0.0.1:{port}" in r.stderr
    assert SECRET not in r.stdout + r.stderr
    assert "Traceback" not in r.stderr


def test_credentials_from_json_and_ini_files(tmp_path):
    j = tmp_path / "c.json"
    j.write_text(json.dumps({"url": "http://af:8080/", "username": "ops", "password": SECRET}))
    j.chmod(0o600)
    c = load_credentials(j, env={})
    assert (c.url, c.username, c.password, c.warnings) == ("http://af:8080", "ops", SECRET, ())
    assert SECRET not in repr(c) and SECRET not in str(c)
    i = tmp_path / "c.ini"
    i.write_text(f"[airflow]\nurl = http://af2:8080/api/v2\nuser = ops2\npassword = {SECRET}\n")
    i.chmod(0o644)
    c = load_credentials(i, env={"TIDEMARK_AIRFLOW_URL": "http://ignored"})
    assert (c.url, c.username) == ("http://af2:8080", "ops2")
    assert c.warnings and "readable by other users" in c.warnings[0]
    bare = tmp_path / "bare.ini"
    bare.write_text(f"username=ops3\npassword={SECRET}\n")
    c = load_credentials(bare, url="http://cli:1", env={"TIDEMARK_AIRFLOW_URL": "http://env:2"})
    assert (c.url, c.username) == ("http://cli:1", "ops3")
    env = {"TIDEMARK_AIRFLOW_URL": "http://env:2", "TIDEMARK_AIRFLOW_USER": "u", "TIDEMARK_AIRFLOW_PASSWORD": SECRET}
    assert load_credentials(None, env=env).url == "http://env:2"


def test_broken_credentials_files_never_echo_their_content(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"username": "ops", "password": "%s",,}' % SECRET)
    with pytest.raises(UsageError) as e:
        load_credentials(bad, env={})
    assert "is not valid JSON (line 1" in str(e.value) and SECRET not in str(e.value)
    nopw = tmp_path / "nopw.json"
    nopw.write_text(json.dumps({"username": "ops"}))
    with pytest.raises(UsageError, match="no Airflow password given"):
        load_credentials(nopw, env={})
    with pytest.raises(UsageError, match="cannot read the credentials file"):
        load_credentials(tmp_path / "absent.json", env={})
    with pytest.raises(UsageError, match="must start with http"):
        load_credentials(None, url="ftp://x", env={"TIDEMARK_AIRFLOW_USER": "u", "TIDEMARK_AIRFLOW_PASSWORD": "p"})


def test_output_redacts_secrets(capsys):
    out = Output()
    out.secrets.append(SECRET)
    out.out(f"a {SECRET} b")
    out.err(f"c {SECRET}")
    o, e = capsys.readouterr()
    assert o == "a *** b\n" and e == "c ***\n"


def test_drift_lines_name_the_days_and_cells():
    summary = {
        "threshold": 0.05, "run_ids": ["manual__2026-11-29T15:50:55+00:00.reconcile_selection.1"],
        "no_summary_days": ["2026-11-25"],
        "days": [
            {"day": "2026-11-26", "drift": 0.01, "gb_drift_rel": 0.01, "stream_count": 990, "batch_count": 1000,
             "late_records": 10, "windows_changed": 7, "over_threshold": False},
            {"day": "2026-11-27", "drift": 0.2723, "gb_drift_rel": 0.2723, "stream_count": 904, "batch_count": 1231,
             "late_records": 327, "windows_changed": 288, "over_threshold": True,
             "worst_cells": [{"cell_site_id": "cell-0006", "gb_drift": 2.6195, "share_of_drift": 0.22, "windows": 53,
                              "late_records": 61}]},
        ],
    }
    text = "\n".join(drift_lines(summary))
    assert "threshold 5.000%" in text
    assert re.search(r"2026-11-26 +\+1\.000% +\+1\.000% +990 -> 1,000 +10 +7 +ok", text), text
    assert re.search(r"2026-11-27 +\+27\.230% .* +OVER THRESHOLD", text), text
    assert "worst cell cell-0006: +2.619500 GB (22% of the day's drift), 53 windows changed, 61 late records" in text
    assert "2026-11-25  no data or not reconciled (no summary row in reconcile_report)" in text


def test_wrapper_script_help():
    r = subprocess.run([str(PYTHON_DIR / "tidemark-airflow"), "trigger", "--help"], capture_output=True, text=True,
                       timeout=120, env={**os.environ, "TIDEMARK_PYTHON": sys.executable})
    assert r.returncode == 0
    assert "--from DAY" in r.stdout and "--threshold X" in r.stdout and "TIDEMARK_AIRFLOW_PASSWORD" in r.stdout
