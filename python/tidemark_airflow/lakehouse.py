"""Reads of the Tidemark lakehouse with deltalake (no Spark), for the reconcile DAG.

SQL runs through deltalake's QueryBuilder (DataFusion), the one reader of deltalake 1.6 that honours
deletion vectors. deltalake and pyarrow are imported inside the functions: the DAG file that imports
this module stays cheap to parse.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from tidemark_airflow.reconcile_plan import ReconcileRequestError, StreamProgress
from tidemark_airflow.run_ids import RUN_ID


def table_uri(lakehouse: str, table: str) -> str:
    return lakehouse.rstrip("/") + "/" + table


def _table(lakehouse: str, name: str):
    from deltalake import DeltaTable
    from deltalake.exceptions import TableNotFoundError

    uri = table_uri(lakehouse, name)
    try:
        return DeltaTable(uri)
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


def read_summaries(lakehouse: str, run_id_prefix: str) -> list[dict[str, Any]]:
    """The reconcile_report summary rows of every run id starting with ``<run_id_prefix>.``."""
    if not RUN_ID.match(run_id_prefix):  # it goes into SQL below
        raise ValueError(f"unexpected reconcile run id prefix {run_id_prefix!r}")
    return query(lakehouse, f"""
        SELECT run_id, run_started_at, CAST(event_date AS VARCHAR) AS day, stream_count, batch_count,
               CAST(stream_gb AS DOUBLE) AS stream_gb, CAST(batch_gb AS DOUBLE) AS batch_gb,
               CAST(gb_drift AS DOUBLE) AS gb_drift, gb_drift_rel, stream_subscribers, batch_subscribers,
               subscribers_drift_rel, late_records, windows_changed
        FROM rr WHERE row_kind = 'summary' AND starts_with(run_id, '{run_id_prefix}.')
        ORDER BY day, run_started_at, run_id""", rr="reconcile_report")


def read_worst_cells(lakehouse: str, run_id: str, day: str, top: int) -> list[dict[str, Any]]:
    """The ``top`` cells of one run and day with the largest |volume drift|, summed over their windows."""
    if not RUN_ID.match(run_id):
        raise ValueError(f"unexpected reconcile run id {run_id!r}")
    return query(lakehouse, f"""
        SELECT * FROM (
          SELECT cell_site_id, count(*) AS windows, sum(stream_count) AS stream_count,
                 sum(batch_count) AS batch_count, CAST(sum(gb_drift) AS DOUBLE) AS gb_drift,
                 CAST(sum(batch_gb) AS DOUBLE) AS batch_gb, sum(late_records) AS late_records
          FROM rr WHERE row_kind = 'window' AND run_id = '{run_id}' AND event_date = DATE '{dt.date.fromisoformat(day)}'
          GROUP BY cell_site_id) AS cells
        ORDER BY abs(gb_drift) DESC, cell_site_id LIMIT {int(top)}""", rr="reconcile_report")
