"""Where the reconcile DAG finds its lakehouse, jar and Spark connection (Airflow Variables, then env).

See docs/operations.md for the setup these read.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tidemark_airflow.reconcile_plan import ReconcileRequestError, check_lakehouse_location

JAR_NAME = "tidemark-spark-jobs.jar"  # as the build names it: spark-submit-jar/target/tidemark-spark-jobs.jar
SPARK_CONN_ID = "spark_default"


def airflow_home(env: Mapping[str, str] | None = None) -> Path:
    """$AIRFLOW_HOME, else ~/airflow (Airflow's own default)."""
    env = os.environ if env is None else env
    return Path(env.get("AIRFLOW_HOME") or Path.home() / "airflow").expanduser()


def setting(variable: str, env: str, default: str | None = None) -> str | None:
    """Airflow Variable ``variable``, else environment variable ``env``, else ``default``."""
    from airflow.sdk import Variable

    value = Variable.get(variable, default=None)
    return value if value else os.environ.get(env) or default


def lakehouse(param: Any) -> str:
    """The lakehouse param, else Variable tidemark_lakehouse, else env TIDEMARK_LAKEHOUSE (absolute or a URI)."""
    return check_lakehouse_location(param or setting("tidemark_lakehouse", "TIDEMARK_LAKEHOUSE"))


def jobs_jar() -> str:
    """Variable tidemark_jobs_jar, else env TIDEMARK_JOBS_JAR, else $AIRFLOW_HOME/tidemark-spark-jobs.jar."""
    from airflow.sdk import Variable

    return resolve_jobs_jar(Variable.get("tidemark_jobs_jar", default=None), os.environ)


def resolve_jobs_jar(variable: str | None, env: Mapping[str, str]) -> str:
    """The jar rule, given the Variable's value and the environment of the worker: the Variable
    tidemark_jobs_jar, else env TIDEMARK_JOBS_JAR, else tidemark-spark-jobs.jar in $AIRFLOW_HOME (~/airflow
    without it). Not the DAGs folder: the dag-processor takes every zip file there, so a jar too, for a
    zipped DAG bundle and reads all of it on each refresh. A URI is passed to spark-submit as is."""
    default = airflow_home(env) / JAR_NAME
    if variable:
        jar, source = variable, "from the Variable tidemark_jobs_jar"
    elif env.get("TIDEMARK_JOBS_JAR"):
        jar, source = env["TIDEMARK_JOBS_JAR"], "from env TIDEMARK_JOBS_JAR"
    else:
        jar, source = str(default), "neither the Variable tidemark_jobs_jar nor env TIDEMARK_JOBS_JAR is set"
    if "://" in jar or Path(jar).is_file():
        return jar
    raise ReconcileRequestError(
        f"the reconcile jar {jar} does not exist ({source}); the jar is the Variable tidemark_jobs_jar, else env "
        f"TIDEMARK_JOBS_JAR, else $AIRFLOW_HOME/{JAR_NAME} (here {default}); the build writes "
        f"spark-submit-jar/target/{JAR_NAME}")


def reports_dir() -> str:
    """Variable tidemark_reports_dir, else env TIDEMARK_REPORTS_DIR, else $AIRFLOW_HOME/tidemark-reports: where
    the report task writes one HTML page per DAG run (a local path of the worker that runs it)."""
    default = str(airflow_home() / "tidemark-reports")
    value = setting("tidemark_reports_dir", "TIDEMARK_REPORTS_DIR", default)
    if "://" in value:
        raise ReconcileRequestError(f"the reports directory {value} must be a local path (the report is one file "
                                    "written by the worker), not a URI")
    return str(Path(value).expanduser().resolve())


def require_spark_connection() -> None:
    from airflow.sdk import Connection

    try:
        Connection.get(SPARK_CONN_ID)
    except Exception:
        raise ReconcileRequestError(
            f"the Airflow connection {SPARK_CONN_ID} is not set (the Spark provider would silently use master yarn): "
            "e.g. AIRFLOW_CONN_SPARK_DEFAULT='{\"conn_type\":\"spark\",\"host\":\"local[*]\"}'") from None
