"""Where the reconcile DAG finds its lakehouse, jar and Spark connection (Airflow Variables, then env).

See docs/operations.md for the setup these read.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tidemark_airflow.reconcile_plan import ReconcileRequestError, check_lakehouse_location

REPO = Path(__file__).resolve().parents[2]
DEFAULT_JAR = REPO / "spark-submit-jar" / "target" / "tidemark-spark-jobs.jar"
SPARK_CONN_ID = "spark_default"


def setting(variable: str, env: str, default: str | None = None) -> str | None:
    """Airflow Variable ``variable``, else environment variable ``env``, else ``default``."""
    import os

    from airflow.sdk import Variable

    value = Variable.get(variable, default=None)
    return value if value else os.environ.get(env) or default


def lakehouse(param: Any) -> str:
    """The lakehouse param, else Variable tidemark_lakehouse, else env TIDEMARK_LAKEHOUSE (absolute or a URI)."""
    return check_lakehouse_location(param or setting("tidemark_lakehouse", "TIDEMARK_LAKEHOUSE"))


def jobs_jar() -> str:
    """Variable tidemark_jobs_jar, else env TIDEMARK_JOBS_JAR, else the jar of this repository's build."""
    jar = setting("tidemark_jobs_jar", "TIDEMARK_JOBS_JAR", str(DEFAULT_JAR))
    if "://" not in jar and not Path(jar).is_file():
        raise ReconcileRequestError(
            f"the reconcile jar {jar} does not exist: build it (mvn -B -q package -DskipTests) or set the "
            "Variable tidemark_jobs_jar / env TIDEMARK_JOBS_JAR")
    return jar


def reports_dir() -> str:
    """Variable tidemark_reports_dir, else env TIDEMARK_REPORTS_DIR, else $AIRFLOW_HOME/tidemark-reports: where
    the report task writes one HTML page per DAG run (a local path of the worker that runs it)."""
    import os

    default = str(Path(os.environ.get("AIRFLOW_HOME", str(Path.home() / "airflow"))) / "tidemark-reports")
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
