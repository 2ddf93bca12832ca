"""The reconcile run id the DAG gives each spark-submit attempt (ReconcileJob --run-id).

ReconcileJob writes the id verbatim to reconcile_report.run_id, so the drift check finds exactly its
own rows: ``<dag run>.<task>.<try>``, the DAG run id made safe for the job's allowed characters.
"""

from __future__ import annotations

import hashlib
import re

# What ReconcileJob accepts for --run-id.
RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:+@-]{0,199}$")
_UNSAFE = re.compile(r"[^A-Za-z0-9_.:+@-]")
_MAX_PREFIX = 150  # leaves room for ".<task id>.<try>" within the job's 200 characters


def dag_run_prefix(dag_run_id: str) -> str:
    """The DAG run's part of its reconcile run ids: the id itself when it is safe, else a safe form of it
    with a hash of the original (two DAG runs never share a prefix)."""
    safe = _UNSAFE.sub("_", dag_run_id)
    if safe == dag_run_id and safe[:1].isascii() and safe[:1].isalnum() and len(safe) <= _MAX_PREFIX:
        return safe
    digest = hashlib.sha256(dag_run_id.encode()).hexdigest()[:12]
    return f"r{safe[:_MAX_PREFIX - 14]}-{digest}"


def attempt_run_id(dag_run_id: str, task_id: str, try_number: int) -> str:
    """The run id of one try of one reconcile task: unique per DAG run, task and attempt."""
    run_id = f"{dag_run_prefix(dag_run_id)}.{_UNSAFE.sub('_', task_id)}.{int(try_number)}"
    if not RUN_ID.match(run_id):
        raise ValueError(f"run id {run_id!r} does not match {RUN_ID.pattern}")
    return run_id


def parse_attempt(run_id: str, prefix: str, task_ids: tuple[str, ...]) -> tuple[str, int] | None:
    """(task id, try number) of a run id made by attempt_run_id for this prefix, else None."""
    if not run_id.startswith(prefix + "."):
        return None
    task, _, attempt = run_id[len(prefix) + 1:].rpartition(".")
    return (task, int(attempt)) if task in task_ids and attempt.isdigit() else None
