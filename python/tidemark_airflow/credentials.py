"""Where the Airflow URL, user and password come from: a --credentials file (JSON or ini), else the environment.

The password is kept out of every repr, message and traceback this package produces.
"""

from __future__ import annotations

import configparser
import json
import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

ENV_URL = "TIDEMARK_AIRFLOW_URL"
ENV_USER = "TIDEMARK_AIRFLOW_USER"
ENV_PASSWORD = "TIDEMARK_AIRFLOW_PASSWORD"
DEFAULT_URL = "http://127.0.0.1:8080"


class UsageError(Exception):
    """Bad input from the user (exit status 2)."""


@dataclass(frozen=True)
class Credentials:
    url: str
    username: str
    password: str = field(repr=False)
    source: str = "environment"
    warnings: tuple[str, ...] = ()

    def __repr__(self) -> str:  # never the password
        return f"Credentials(url={self.url!r}, username={self.username!r}, password=***, source={self.source!r})"

    __str__ = __repr__


def _from_file(path: Path) -> dict[str, str]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise UsageError(f"cannot read the credentials file {path}: {e.strerror or e}") from None
    values: dict[str, str] = {}
    if text.lstrip().startswith("{"):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            # Only the position: the message of a JSON error may quote the file's content.
            raise UsageError(f"the credentials file {path} is not valid JSON (line {e.lineno}, column {e.colno})") from None
        if isinstance(data, dict) and isinstance(data.get("airflow"), dict):
            data = data["airflow"]
        if not isinstance(data, dict):
            raise UsageError(f"the credentials file {path} must hold a JSON object")
        values = {str(k).lower(): str(v) for k, v in data.items() if v is not None}
    else:
        parser = configparser.ConfigParser(interpolation=None)
        try:
            parser.read_string(text if text.lstrip().startswith("[") else "[airflow]\n" + text, source=str(path))
        except configparser.Error:
            raise UsageError(f"the credentials file {path} is neither JSON nor ini (key = value lines, "
                             "optionally under [airflow])") from None
        section = "airflow" if parser.has_section("airflow") else (parser.sections() or [None])[0]
        if section is not None:
            values = {k.lower(): v for k, v in parser.items(section)}
    return {
        "url": values.get("url") or values.get("host") or "",
        "username": values.get("username") or values.get("user") or "",
        "password": values.get("password") or "",
    }


def load_credentials(file: str | os.PathLike | None = None, *, url: str | None = None,
                     env: Mapping[str, str] | None = None) -> Credentials:
    """``--url`` beats the file, the file beats the environment (TIDEMARK_AIRFLOW_URL/_USER/_PASSWORD)."""
    env = os.environ if env is None else env
    warnings: list[str] = []
    if file is not None:
        path = Path(file).expanduser()
        values = _from_file(path)
        source = f"file {path}"
        try:
            if path.stat().st_mode & (stat.S_IRGRP | stat.S_IROTH):
                warnings.append(f"the credentials file {path} is readable by other users (chmod 600 it)")
        except OSError:
            pass
    else:
        values = {"url": "", "username": "", "password": ""}
        source = "environment"
    final_url = (url or values["url"] or env.get(ENV_URL) or DEFAULT_URL).strip().rstrip("/")
    if final_url.endswith("/api/v2"):
        final_url = final_url[: -len("/api/v2")]
    if not final_url.startswith(("http://", "https://")):
        raise UsageError(f"the Airflow URL {final_url!r} must start with http:// or https://")
    username = values["username"] or env.get(ENV_USER, "")
    password = values["password"] or env.get(ENV_PASSWORD, "")
    if not username or not password:
        where = f"the credentials file {file}" if file is not None else f"{ENV_USER} / {ENV_PASSWORD}"
        raise UsageError(f"no Airflow {'user' if not username else 'password'} given: set {where} "
                         "(or pass --credentials FILE with url, username and password)")
    return Credentials(final_url, username, password, source, tuple(warnings))
