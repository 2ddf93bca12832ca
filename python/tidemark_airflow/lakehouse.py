"""Reads of the Tidemark lakehouse with deltalake (no Spark), for the reconcile DAG.

SQL runs through deltalake's QueryBuilder (DataFusion), the one reader of deltalake 1.6 that honours
deletion vectors. deltalake and pyarrow are imported inside the functions: the DAG file that imports
this module stays cheap to parse.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable
from typing import Any

from tidemark_airflow.reconcile_plan import ReconcileRequestError, StreamProgress
from tidemark_airflow.run_ids import RUN_ID


def table_uri(lakehouse: str, table: str) -> str:
    return lakehouse.rstrip("/") + "/" + table


def delta_rs_uri(uri: str) -> str:
    """The URI delta-rs reads: the JVM jobs write S3 as s3a://, delta-rs names it s3:// (its endpoint and
    credentials come from the AWS_* environment: AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID, ...)."""
    return "s3://" + uri[len("s3a://"):] if uri.lower().startswith("s3a://") else uri


def _table(lakehouse: str, name: str):
    from deltalake import DeltaTable
    from deltalake.exceptions import TableNotFoundError

    uri = table_uri(lakehouse, name)
    try:
        return DeltaTable(delta_rs_uri(uri))
    except TableNotFoundError:
        raise ReconcileRequestError(
            f"no Delta table at {uri}: is {lakehouse!r} the root of a Tidemark lakehouse "
            "(the stream's lakehouse= setting)?") from None


def query(lakehouse: str, sql: str, **tables: str) -> list[dict[str, Any]]:
    """Runs SQL over the named tables (alias=table name) and returns the rows as dicts."""
    import pyarrow as pa
    from deltalake import QueryBuilder

    qb = QueryBuilder()
    for alias, name in tables.items():
        qb.register(alias, _table(lakehouse, name))
    return pa.table(qb.execute(sql).read_all()).to_pylist()


def read_stream_progress(lakehouse: str) -> StreamProgress | None:
    """The stream_progress row with the highest batch_id (newest finished_at on a tie); None if empty."""
    columns = {f.name for f in _table(lakehouse, "stream_progress").schema().fields}
    recorded = "last_closed_day" in columns
    rows = query(lakehouse, f"SELECT batch_id, {'last_closed_day' if recorded else 'NULL'} AS last_closed_day "
                            "FROM sp ORDER BY batch_id DESC, finished_at DESC LIMIT 1", sp="stream_progress")
    if not rows:
        return None
    day = rows[0]["last_closed_day"]
    if isinstance(day, dt.datetime):
        day = day.date()
    return StreamProgress(int(rows[0]["batch_id"]), day, recorded)


_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")  # a KPI table or measure name: it goes into SQL


def read_summaries(lakehouse: str, run_id_prefix: str) -> list[dict[str, Any]]:
    """The reconcile_report summary rows of every run id starting with ``<run_id_prefix>.``: one per run,
    day, KPI table and measure, with the verdict of the pipeline's drift rule (over_threshold).

    Rows without a measure (written before reconcile_report was long) are left out; so is everything
    when the table has no measure column yet (no reconcile since the long form).
    """
    if not RUN_ID.match(run_id_prefix):  # it goes into SQL below
        raise ValueError(f"unexpected reconcile run id prefix {run_id_prefix!r}")
    if "measure" not in {f.name for f in _table(lakehouse, "reconcile_report").schema().fields}:
        return []
    return query(lakehouse, f"""
        SELECT run_id, run_started_at, CAST(event_date AS VARCHAR) AS day, kpi, measure,
               CAST(stream_value AS DOUBLE) AS stream_value, CAST(batch_value AS DOUBLE) AS batch_value,
               CAST(drift AS DOUBLE) AS drift, drift_rel, estimate, drift_threshold, over_threshold,
               late_records, windows_changed
        FROM rr WHERE row_kind = 'summary' AND measure IS NOT NULL AND starts_with(run_id, '{run_id_prefix}.')
        ORDER BY day, run_started_at, run_id, kpi, measure""", rr="reconcile_report")


def read_worst_dimensions(lakehouse: str, run_id: str, day: str, measures: Iterable[tuple[str, str]],
                          top: int) -> list[dict[str, Any]]:
    """For each (kpi, measure) of ``measures``: the ``top`` dimension values of one run and day with the
    largest |drift|, summed over that measure's window rows (the windows whose value of it changed).

    :return: rows kpi, measure, dimensions (the JSON object string), windows, drift, late_records,
        in the order of ``measures``, the largest |drift| first
    """
    if not RUN_ID.match(run_id):
        raise ValueError(f"unexpected reconcile run id {run_id!r}")
    measures = list(dict.fromkeys(measures))
    for kpi, measure in measures:
        if not (_NAME.match(kpi or "") and _NAME.match(measure or "")):
            raise ValueError(f"unexpected KPI table or measure name {kpi!r}.{measure!r}")
    if not measures:
        return []
    which = " OR ".join(f"(kpi = '{k}' AND measure = '{m}')" for k, m in measures)
    rows = query(lakehouse, f"""
        SELECT kpi, measure, dimensions, windows, CAST(drift AS DOUBLE) AS drift, late_records FROM (
          SELECT *, row_number() OVER (PARTITION BY kpi, measure ORDER BY abs(drift) DESC, dimensions) AS rank FROM (
            SELECT kpi, measure, dimensions, count(*) AS windows, sum(drift) AS drift,
                   coalesce(sum(late_records), 0) AS late_records
            FROM rr WHERE row_kind = 'window' AND run_id = '{run_id}'
              AND event_date = DATE '{dt.date.fromisoformat(day)}' AND ({which})
            GROUP BY kpi, measure, dimensions) AS per_dimensions) AS ranked
        WHERE rank <= {int(top)}
        ORDER BY kpi, measure, rank""", rr="reconcile_report")
    order = {km: i for i, km in enumerate(measures)}
    return sorted(rows, key=lambda r: order[(r["kpi"], r["measure"])])  # stable: the rank order within a measure
