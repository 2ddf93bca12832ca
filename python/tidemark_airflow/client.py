"""A thin layer over apache-airflow-client for the reconcile DAG: token, trigger, follow, drift summary.

Authentication: a pre-issued token is sent as is (Authorization: Bearer ...); with a user and
password, a token is asked for first (POST /auth/token) and asked for again once when it expires.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import requests

from tidemark_airflow import CHECK_TASK, DAG_ID, DRIFT_XCOM_KEY
from tidemark_airflow.credentials import Credentials, UsageError

T = TypeVar("T")
FINISHED = {"success", "failed"}


class AirflowError(Exception):
    """Could not talk to Airflow as needed (exit status 3): unreachable, refused credentials, API error."""


class AuthError(AirflowError):
    pass


class Unreachable(AirflowError):
    pass


class NotFound(AirflowError):
    pass


@dataclass(frozen=True)
class TaskState:
    task_id: str
    state: str
    try_number: int


@dataclass(frozen=True)
class RunState:
    run_id: str
    state: str
    conf: dict
    tasks: tuple[TaskState, ...]

    @property
    def finished(self) -> bool:
        return self.state in FINISHED


def _detail(e: Exception) -> str:
    """One line from an API error: the server's 'detail', never headers (they are not ours to print)."""
    import json

    body = getattr(e, "body", None)
    if body:
        try:
            detail = json.loads(body).get("detail", body)
        except (ValueError, AttributeError):
            detail = body
        if isinstance(detail, list):  # FastAPI validation errors
            detail = "; ".join(f"{'.'.join(map(str, d.get('loc', [])))}: {d.get('msg')}" if isinstance(d, dict) else str(d)
                               for d in detail)
        elif isinstance(detail, dict):
            detail = detail.get("message") or detail.get("reason") or json.dumps(detail)
        return " ".join(str(detail).split())[:500]
    return f"HTTP {getattr(e, 'status', '?')} {getattr(e, 'reason', '') or ''}".strip()


class Airflow:
    """An authenticated session with one Airflow api-server."""

    def __init__(self, credentials: Credentials, *, dag_id: str = DAG_ID, timeout: float = 30.0) -> None:
        self.credentials = credentials
        self.dag_id = dag_id
        self.timeout = timeout
        self._api = None
        self._token: str | None = None

    # -- authentication ---------------------------------------------------------------------
    def login(self) -> None:
        if self.credentials.token:  # pre-issued: nothing to ask for; the first API call shows whether it is valid
            self._connect(self.credentials.token)
            return
        url = f"{self.credentials.url}/auth/token"
        try:
            r = requests.post(url, json={"username": self.credentials.username, "password": self.credentials.password},
                              timeout=self.timeout)
        except requests.exceptions.SSLError:
            raise Unreachable(f"TLS error talking to Airflow at {self.credentials.url}") from None
        except requests.exceptions.Timeout:
            raise Unreachable(f"Airflow at {self.credentials.url} did not answer within {self.timeout:.0f} s") from None
        except requests.exceptions.ConnectionError:
            raise Unreachable(f"cannot reach Airflow at {self.credentials.url} (connection refused or host unknown); "
                              "is the api-server running? (TIDEMARK_AIRFLOW_URL / --url)") from None
        if r.status_code in (401, 403):
            raise AuthError(f"Airflow at {self.credentials.url} refused the credentials of user "
                            f"{self.credentials.username!r} (HTTP {r.status_code}); check the password "
                            f"({self.credentials.source})")
        if r.status_code == 404:
            raise Unreachable(f"{self.credentials.url} has no /auth/token endpoint (HTTP 404): is it an Airflow 3 "
                              "api-server? Give its base URL, without /api/v2")
        if r.status_code not in (200, 201):
            raise AirflowError(f"token request to {self.credentials.url} failed: HTTP {r.status_code}")
        try:
            token = r.json()["access_token"]
        except (ValueError, KeyError, TypeError):
            raise AirflowError(f"{self.credentials.url}/auth/token answered without an access_token") from None
        self._connect(token)

    def _connect(self, token: str) -> None:
        from airflow_client.client import ApiClient, Configuration

        self._token = token
        config = Configuration(host=self.credentials.url, access_token=token)
        config.retries = 2
        self._api = ApiClient(config)

    def _refused(self, e: Exception) -> AuthError:
        """The api-server refused the token: 401 "Token Expired" (or none sent), 403 "Invalid JWT token"."""
        c = self.credentials
        why = f"HTTP {getattr(e, 'status', '?')}: {_detail(e)}"
        if c.token:
            return AuthError(f"Airflow at {c.url} refused the token from {c.token_setting} ({why}); get a new one "
                             f"with POST {c.url}/auth/token (a token expires after [api_auth] jwt_expiration_time, "
                             "24 h by default, and holds only on api-servers with the same jwt_secret)")
        return AuthError(f"Airflow at {c.url} refused the token it issued to user {c.username!r} ({why})")

    def _call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        from airflow_client.client.exceptions import ApiException, NotFoundException, UnauthorizedException
        from urllib3.exceptions import HTTPError, MaxRetryError, NewConnectionError

        if self._api is None:
            self.login()
        for attempt in (1, 2):
            try:
                return fn(*args, _request_timeout=self.timeout, **kwargs)
            except UnauthorizedException as e:
                if attempt == 2 or self.credentials.token:  # a pre-issued token cannot be renewed here
                    raise self._refused(e) from None
                self.login()  # the token expired: a new one, once
            except NotFoundException as e:
                raise NotFound(_detail(e)) from None
            except ApiException as e:
                if e.status in (400, 409, 422):
                    raise UsageError(f"Airflow refused the request: {_detail(e)}") from None
                if e.status == 403 and _detail(e) == "Invalid JWT token":  # a bad signature, not a permission
                    raise self._refused(e) from None
                if e.status == 403:
                    who = (f"the token from {self.credentials.token_setting}" if self.credentials.token
                           else f"user {self.credentials.username!r}")
                    raise AuthError(f"{who} may not do this (HTTP 403): {_detail(e)}") from None
                raise AirflowError(f"Airflow API error (HTTP {e.status}): {_detail(e)}") from None
            except HTTPError as e:
                if isinstance(e, MaxRetryError) and isinstance(e.reason, NewConnectionError):
                    # (with a pre-issued token, the first API call is the first contact)
                    raise Unreachable(f"cannot reach Airflow at {self.credentials.url} (connection refused or host "
                                      "unknown); is the api-server running? (TIDEMARK_AIRFLOW_URL / --url)") from None
                raise Unreachable(f"lost contact with Airflow at {self.credentials.url}: {type(e).__name__}") from None
        raise AssertionError("unreachable")

    def _apis(self):
        from airflow_client.client.api.dag_api import DAGApi
        from airflow_client.client.api.dag_run_api import DagRunApi
        from airflow_client.client.api.import_error_api import ImportErrorApi
        from airflow_client.client.api.task_instance_api import TaskInstanceApi
        from airflow_client.client.api.x_com_api import XComApi

        if self._api is None:
            self.login()
        return (DAGApi(self._api), DagRunApi(self._api), TaskInstanceApi(self._api), XComApi(self._api),
                ImportErrorApi(self._api))

    # -- DAG and runs -------------------------------------------------------------------------
    def ensure_unpaused(self) -> bool:
        """Unpauses the DAG if it is paused; True when it was. Explains a DAG Airflow does not know."""
        from airflow_client.client.models.dag_patch_body import DAGPatchBody

        dags, *_ , import_errors = self._apis()
        try:
            dag = self._call(dags.get_dag, self.dag_id)
        except NotFound:
            hint = ""
            try:
                errs = self._call(import_errors.get_import_errors, filename_pattern="tidemark")
                if errs.import_errors:
                    first = errs.import_errors[0]
                    last = (first.stack_trace or "").strip().splitlines()[-1:] or [""]
                    hint = f"; import error in {first.filename}: {last[0]}"
            except AirflowError:
                pass
            raise NotFound(f"Airflow does not know the DAG {self.dag_id} (is dags/ its DAGs folder, has the "
                           f"dag-processor parsed it?){hint}") from None
        if dag.is_paused:
            self._call(dags.patch_dag, self.dag_id, DAGPatchBody(is_paused=False), update_mask=["is_paused"])
            return True
        return False

    def trigger(self, conf: dict[str, Any], note: str | None = None) -> str:
        from airflow_client.client.models.trigger_dag_run_post_body import TriggerDAGRunPostBody

        _, runs, *_ = self._apis()
        body = TriggerDAGRunPostBody(conf=conf, logical_date=None, note=note)
        return self._call(runs.trigger_dag_run, self.dag_id, body).dag_run_id

    def run_state(self, run_id: str) -> RunState:
        _, runs, tis, *_ = self._apis()
        try:
            run = self._call(runs.get_dag_run, self.dag_id, run_id)
        except NotFound:
            raise NotFound(f"no run {run_id!r} of DAG {self.dag_id}") from None
        tasks = self._call(tis.get_task_instances, self.dag_id, run_id, limit=100)
        states = tuple(sorted(
            (TaskState(t.task_id, _state(t.state), t.try_number or 0) for t in tasks.task_instances),
            key=lambda t: (t.task_id != "validate_params", t.task_id != "reconcile_selection",
                           t.task_id != "reconcile_dirty", t.task_id)))
        return RunState(run.dag_run_id, _state(run.state), dict(run.conf or {}), states)

    def follow(self, run_id: str, on_change: Callable[[RunState], None], *, interval: float = 3.0,
               timeout: float | None = None) -> RunState:
        """Polls the run until it ends; calls ``on_change`` whenever the run's or a task's state changes."""
        deadline = None if timeout is None else time.monotonic() + timeout
        last = None
        while True:
            state = self.run_state(run_id)
            key = (state.state, tuple((t.task_id, t.state, t.try_number) for t in state.tasks))
            if key != last:
                on_change(state)
                last = key
            if state.finished:
                return state
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError(f"run {run_id} still {state.state} after {timeout:.0f} s")
            time.sleep(interval)

    def drift_summary(self, run_id: str) -> dict | None:
        """The drift summary the check task pushed (also when it failed the run), None if there is none."""
        *_, xcoms, _ = self._apis()
        try:
            entry = self._call(xcoms.get_xcom_entry, self.dag_id, CHECK_TASK, run_id, DRIFT_XCOM_KEY, deserialize=True)
        except NotFound:
            return None
        value = getattr(entry.actual_instance, "value", None) if hasattr(entry, "actual_instance") else entry.value
        if isinstance(value, str):
            import json

            try:
                value = json.loads(value)
            except ValueError:
                return None
        return value if isinstance(value, dict) else None

    def failure_reason(self, run_id: str, task_id: str, try_number: int, *, lines: int = 3) -> list[str]:
        """The last error lines of a task's log: above all the message of the exception that failed it."""
        import json

        _, _, tis, *_ = self._apis()
        try:
            # Raw JSON: the generated model of the log content drops the structured fields
            # (level, error_detail) that hold the exception.
            resp = self._call(tis.get_log_without_preload_content, self.dag_id, run_id, task_id, max(try_number, 1),
                              full_content=True, accept="application/json")
            if resp.status != 200:
                return []
            entries = json.loads(resp.data).get("content") or []
        except (AirflowError, ValueError, AttributeError):
            return []
        errors: list[str] = []
        for entry in entries:
            if not isinstance(entry, dict):
                continue
            for detail in entry.get("error_detail") or []:
                if isinstance(detail, dict) and detail.get("exc_value"):
                    errors.append(str(detail["exc_value"]))
            text, level = str(entry.get("event") or ""), str(entry.get("level") or "").lower()
            if level in ("error", "critical") and text and text != "Task failed with exception":
                errors.append(text)
        seen: list[str] = []
        for e in errors:
            e = " ".join(e.split())
            if e in seen:
                seen.remove(e)
            seen.append(e)
        return seen[-lines:]


def _state(value: Any) -> str:
    if value is None:
        return "none"
    return str(getattr(value, "value", value)).lower()
