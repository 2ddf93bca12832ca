"""tidemark-airflow without a server: bad input, credentials and tokens, secrets kept out of the output;
and the DAG's rule for the jobs jar.

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

import testing  # noqa: E402
from tidemark_airflow import settings  # noqa: E402
from tidemark_airflow.cli import Output, build_parser, drift_lines, main, trigger_conf  # noqa: E402
from tidemark_airflow.credentials import UsageError, load_credentials  # noqa: E402
from tidemark_airflow.reconcile_plan import ReconcileRequestError  # noqa: E402

SECRET = "s3cr3t-Pa55word-never-printed"
TOKEN = "eyJhbGciOiJIUzUxMiJ9.eyJzdWIiOiJhZG1pbiJ9.t0ken-never-printed"
OTHER_TOKEN = "eyJhbGciOiJIUzUxMiJ9.eyJzdWIiOiJvcHMifQ.other-t0ken"


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
    assert "report" not in conf("--from", "2026-11-27")  # the DAG's default
    assert conf("--recent", "2", "--no-report") == {"recent_days": 2, "report": False}
    assert conf("--recent", "2", "--report", "--no-maintain") == {"recent_days": 2, "report": True, "maintain": False}


def test_trigger_conf_names_the_pipeline_and_never_a_threshold():
    conf = lambda *a: trigger_conf(build_parser().parse_args(["trigger", *a]))  # noqa: E731
    assert conf("--recent", "1", "--pipeline", "/srv/p.sql") == {"recent_days": 1, "pipeline": "/srv/p.sql"}
    assert "pipeline" not in conf("--recent", "1") and "pipeline" not in conf("--recent", "1", "--pipeline", "")
    assert conf("--from", "2026-11-27", "--pipeline", "network")["pipeline"] == "network"
    assert all("drift_threshold" not in conf(*a) for a in (["--recent", "1"], ["--from", "2026-11-27"]))


@pytest.mark.parametrize("args, message", [
    (["trigger", "--from", "2026-13-01", "--to", "2026-13-02"], "'2026-13-01' is not a valid calendar date"),
    (["trigger", "--from", "2026-1-1"], "'2026-1-1' is not a date: expected yyyy-mm-dd"),
    (["trigger", "--from", "2026-11-28", "--to", "2026-11-27"], "--to 2026-11-27 is before --from 2026-11-28"),
    (["trigger", "--to", "2026-11-27"], "--to needs --from"),
    (["trigger", "--from", "2026-11-27", "--recent", "3"], "either a range (--from/--to) or --recent N"),
    (["trigger", "--from", "2026-11-27", "--threshold", "0.05"],
     "argument --threshold: --threshold is no longer an option: the threshold is the pipeline's (the drift_threshold "
     "option of its event table, default 0.01); set it in the pipeline file (--pipeline FILE)"),
    (["trigger", "--threshold", "5%", "--wait"], "--threshold is no longer an option: the threshold is the pipeline's"),
    (["trigger", "--recent", "1", "--pipeline", "pipelines/network.sql"],
     "argument --pipeline: pipeline 'pipelines/network.sql' is relative: give an absolute path"),
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


def measure(name, drift_rel, over, estimate=False):
    return {"kpi": "kpi_5m", "measure": name, "stream_value": 9040.0, "batch_value": 12310.0, "drift": 3270.0,
            "drift_rel": drift_rel, "estimate": estimate, "over_threshold": over, "windows_changed": 1}


def test_drift_lines_name_the_days_measures_and_dimensions():
    summary = {
        "threshold": 0.05, "thresholds": [0.05], "run_ids": ["manual__2026-11-29T15:50:55+00:00.reconcile_selection.1"],
        "no_summary_days": ["2026-11-25"],
        "days": [
            {"day": "2026-11-26", "drift": 0.01, "drift_measure": "kpi_5m.total_gb", "threshold": 0.05,
             "late_records": 1000, "windows_changed": 7, "over_threshold": False,
             "measures": [measure("record_count", 0.01, False), measure("total_gb", 0.01, False)]},
            {"day": "2026-11-27", "drift": 0.2723, "drift_measure": "kpi_5m.total_gb", "threshold": 0.05,
             "late_records": 327, "windows_changed": 288, "over_threshold": True,
             "measures": [measure("record_count", 0.2656, True), measure("subscribers", -0.4, False, True),
                          measure("total_gb", 0.2723, True)],
             "worst": [{"kpi": "kpi_5m", "measure": "total_gb", "dimensions": {"cell_site_id": "cell-0006"},
                        "drift": 2.6195, "share_of_drift": 0.22, "windows": 53, "late_records": 61}]},
            {"day": "2026-11-28", "drift": None, "drift_measure": "kpi_5m.record_count", "threshold": 0.05,
             "late_records": 0, "windows_changed": 1, "over_threshold": True,
             "measures": [measure("record_count", None, True)], "worst": []},
        ],
    }
    text = "\n".join(drift_lines(summary))
    assert "threshold 5%, the pipeline's drift_threshold" in text
    assert re.search(r"2026-11-26 +\+1\.000% +kpi_5m\.total_gb +1,000 +7 +ok$", text, re.M), text
    assert re.search(r"2026-11-27 +\+27\.230% +kpi_5m\.total_gb +327 +288 +OVER THRESHOLD 5%: "
                     r"kpi_5m\.record_count \+26\.560%, kpi_5m\.total_gb \+27\.230%$", text, re.M), text
    assert "OVER THRESHOLD 5%: kpi_5m.record_count +26.560%, kpi_5m.total_gb +27.230%\n" in text
    assert "      kpi_5m.subscribers: 9,040 -> 12,310, drift +3,270 (-40.000%), estimate\n" in text
    assert "      kpi_5m.total_gb: 9,040 -> 12,310, drift +3,270 (+27.230%)  over\n" in text
    assert re.search(r"2026-11-28 +n/a +kpi_5m\.record_count .* OVER THRESHOLD 5%: kpi_5m\.record_count n/a$",
                     text, re.M), text
    assert "worst kpi_5m.total_gb cell_site_id=cell-0006: +2.6195 (22% of its drift of the day), 53 windows changed, " \
           "61 late records" in text
    assert "2026-11-25  no data or not reconciled (no summary row in reconcile_report)" in text
    assert "no day was reconciled" in "\n".join(drift_lines({"threshold": None, "run_ids": [], "days": []}))


def test_wrapper_script_help():
    r = subprocess.run([str(PYTHON_DIR / "tidemark-airflow"), "trigger", "--help"], capture_output=True, text=True,
                       timeout=120, env={**os.environ, "TIDEMARK_PYTHON": sys.executable})
    assert r.returncode == 0
    assert "--from DAY" in r.stdout and "--pipeline FILE" in r.stdout and "TIDEMARK_AIRFLOW_PASSWORD" in r.stdout
    assert "--threshold" not in r.stdout and "drift_threshold option of its event table" in r.stdout
    assert "--token-file FILE" in r.stdout and "TIDEMARK_AIRFLOW_TOKEN" in r.stdout


def test_the_client_imports_without_airflow():
    """What pip install ./python gives needs no apache-airflow: the DAG-side modules are not imported."""
    code = ("import sys; import tidemark_airflow.cli, tidemark_airflow.client, tidemark_airflow.credentials; "
            "print(sorted({m.split('.')[0] for m in sys.modules} & {'airflow', 'deltalake', 'pyarrow', 'pyspark'}))")
    r = subprocess.run([sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": str(PYTHON_DIR)},
                       capture_output=True, text=True, timeout=120)
    assert (r.returncode, r.stdout, r.stderr) == (0, "[]\n", "")


def test_a_token_wins_over_user_and_password_and_names_its_setting(tmp_path):
    env = {"TIDEMARK_AIRFLOW_TOKEN": f" Bearer {TOKEN}\n", "TIDEMARK_AIRFLOW_USER": "u",
           "TIDEMARK_AIRFLOW_PASSWORD": SECRET, "TIDEMARK_AIRFLOW_URL": "http://env:2"}
    c = load_credentials(None, env=env)
    assert (c.url, c.token, c.token_setting, c.username, c.password) == (
        "http://env:2", TOKEN, "TIDEMARK_AIRFLOW_TOKEN", "", "")
    assert repr(c) == str(c) == "Credentials(url='http://env:2', token=*** from TIDEMARK_AIRFLOW_TOKEN)"

    # --token-file: the token alone or the JSON answer of POST /auth/token; it wins over the environment
    f = tmp_path / "token.json"
    f.write_text(json.dumps({"access_token": OTHER_TOKEN, "token_type": "bearer"}))
    f.chmod(0o600)
    c = load_credentials(None, token_file=f, env=env)
    assert (c.token, c.token_setting, c.warnings) == (OTHER_TOKEN, f"--token-file {f}", ())
    f.write_text(OTHER_TOKEN + "\n")
    f.chmod(0o644)
    c = load_credentials(None, token_file=f, env=env)
    assert c.token == OTHER_TOKEN and c.warnings == (f"the token file {f} is readable by other users (chmod 600 it)",)

    # the credentials file: its token wins over the environment's; a user or password in it keeps the env's token out
    j = tmp_path / "c.json"
    j.write_text(json.dumps({"url": "http://af:8080", "token": OTHER_TOKEN}))
    j.chmod(0o600)
    c = load_credentials(j, env=env)
    assert (c.url, c.token, c.token_setting) == ("http://af:8080", OTHER_TOKEN, f"the credentials file {j}")
    j.write_text(json.dumps({"url": "http://af:8080", "username": "ops", "password": SECRET}))
    c = load_credentials(j, env=env)
    assert (c.token, c.token_setting, c.username, c.password) == ("", "", "ops", SECRET)
    i = tmp_path / "c.ini"
    i.write_text(f"[airflow]\nurl = http://af2:8080\ntoken = {TOKEN}\n")
    c = load_credentials(i, url="http://cli:1", env={})
    assert (c.url, c.token, c.token_setting) == ("http://cli:1", TOKEN, f"the credentials file {i}")


@pytest.mark.parametrize("content, message", [
    ("", "the token from the token file {f} is empty"),
    ("Bearer  \n", "the token from the token file {f} is empty"),
    (f"{TOKEN} {TOKEN}", "the token from the token file {f} is not a single word of printable ASCII"),
    ('{"token_type": "bearer"}', "the token file {f} holds JSON without an access_token"),
    ('{"access_token": ', "the token file {f} is not valid JSON (line 1, column 18)"),
])
def test_bad_token_files_exit_2_without_echoing_them(tmp_path, content, message, capsys):
    f = tmp_path / "token"
    f.write_text(content)
    with pytest.raises(UsageError) as e:
        load_credentials(None, token_file=f, env={})
    assert message.format(f=f) in str(e.value) and TOKEN not in str(e.value)
    assert main(["status", "r", "--token-file", str(f)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err == f"tidemark-airflow: {e.value}\n"
    assert main(["status", "r", "--token-file", str(tmp_path / "absent")]) == 2
    assert f"cannot read the token file {tmp_path / 'absent'}: No such file or directory" in capsys.readouterr().err


def test_a_token_for_an_unreachable_server_is_a_clear_error_and_never_printed(tmp_path):
    port = testing.free_port()  # nothing listens there
    r = cli("status", "r", env={"TIDEMARK_AIRFLOW_URL": f"http://127.0.0.1:{port}", "TIDEMARK_AIRFLOW_TOKEN": TOKEN})
    assert (r.returncode, r.stdout) == (3, "")
    assert r.stderr == (f"tidemark-airflow: cannot reach Airflow at http://127.0.0.1:{port} (connection refused or "
                        "host unknown); is the api-server running? (TIDEMARK_AIRFLOW_URL / --url)\n")


def test_jobs_jar_is_the_variable_else_the_env_else_airflow_home(tmp_path):
    """settings.jobs_jar() passes the Variable tidemark_jobs_jar to this rule; nothing depends on where the
    DAG file or this package lie."""
    home, var_jar, env_jar = tmp_path / "airflow-home", tmp_path / "var.jar", tmp_path / "env.jar"
    home.mkdir()
    var_jar.write_bytes(b"PK")
    env_jar.write_bytes(b"PK")
    env = {"AIRFLOW_HOME": str(home), "TIDEMARK_JOBS_JAR": str(env_jar)}
    assert settings.resolve_jobs_jar(str(var_jar), env) == str(var_jar)
    assert settings.resolve_jobs_jar(None, env) == settings.resolve_jobs_jar("", env) == str(env_jar)
    assert settings.resolve_jobs_jar("s3://bucket/jobs.jar", env) == "s3://bucket/jobs.jar"  # as is, for spark-submit
    rule = ("the jar is the Variable tidemark_jobs_jar, else env TIDEMARK_JOBS_JAR, else "
            f"$AIRFLOW_HOME/tidemark-spark-jobs.jar (here {home}/tidemark-spark-jobs.jar); the build writes "
            "spark-submit-jar/target/tidemark-spark-jobs.jar")
    with pytest.raises(ReconcileRequestError) as e:
        settings.resolve_jobs_jar(None, {"AIRFLOW_HOME": str(home)})
    assert str(e.value) == (f"the reconcile jar {home}/tidemark-spark-jobs.jar does not exist (neither the Variable "
                            f"tidemark_jobs_jar nor env TIDEMARK_JOBS_JAR is set); {rule}")
    (home / "tidemark-spark-jobs.jar").write_bytes(b"PK")
    assert settings.resolve_jobs_jar(None, {"AIRFLOW_HOME": str(home)}) == f"{home}/tidemark-spark-jobs.jar"
    with pytest.raises(ReconcileRequestError) as e:  # a Variable or env naming a missing jar: no fallback
        settings.resolve_jobs_jar(str(tmp_path / "gone.jar"), env)
    assert str(e.value) == f"the reconcile jar {tmp_path}/gone.jar does not exist (from the Variable tidemark_jobs_jar); {rule}"
    with pytest.raises(ReconcileRequestError) as e:
        settings.resolve_jobs_jar(None, {**env, "TIDEMARK_JOBS_JAR": str(tmp_path / "gone.jar")})
    assert str(e.value) == f"the reconcile jar {tmp_path}/gone.jar does not exist (from env TIDEMARK_JOBS_JAR); {rule}"
    assert settings.airflow_home({}) == Path.home() / "airflow"  # Airflow's own default
