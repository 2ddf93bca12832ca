"""Tidemark's Airflow side: the reconcile DAG's logic and a terminal client for it.

The DAG (dags/tidemark_reconcile.py) imports reconcile_plan, lakehouse, drift, reconcile_submit and
settings; <repo>/python must be on the PYTHONPATH of the Airflow processes (docs/operations.md).
The client (apache-airflow-client) triggers and follows runs:

    python -m tidemark_airflow trigger --from 2026-11-27 --to 2026-11-28 --wait
    python -m tidemark_airflow follow RUN_ID
    python -m tidemark_airflow status RUN_ID

See ``python -m tidemark_airflow --help``.
"""

DAG_ID = "tidemark_reconcile"
CHECK_TASK = "check_drift"
DRIFT_XCOM_KEY = "drift_summary"

__all__ = ["CHECK_TASK", "DAG_ID", "DRIFT_XCOM_KEY"]
