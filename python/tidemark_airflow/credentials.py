"""Where the Airflow URL and the means to authenticate come from: a pre-issued API token, or a user and password.

A token (a JWT the api-server issued, POST /auth/token): --token-file FILE, else `token` in the
--credentials file, else TIDEMARK_AIRFLOW_TOKEN (unless the credentials file names a user or a
password). Without a token: username and password from the --credentials file (JSON or ini), else
TIDEMARK_AIRFLOW_USER / TIDEMARK_AIRFLOW_PASSWORD. The URL: --url, else the file's, else
TIDEMARK_AIRFLOW_URL, else http://127.0.0.1:8080.

The password and the token are kept out of every repr, message and traceback this package produces.
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
ENV_TOKEN = "TIDEMARK_AIRFLOW_TOKEN"
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
    token: str = field(default="", repr=False)  # a pre-issued API token: sent as is, no username/password needed
    token_setting: str = ""  # where the token came from, named in messages: e.g. "TIDEMARK_AIRFLOW_TOKEN"

    def __repr__(self) -> str:  # never the password nor the token
        if self.token:
            return f"Credentials(url={self.url!r}, token=*** from {self.token_setting})"
        return f"Credentials(url={self.url!r}, username={self.username!r}, password=***, source={self.source!r})"

    __str__ = __repr__


def _read(path: Path, what: str) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise UsageError(f"cannot read the {what} {path}: {getattr(e, 'strerror', None) or type(e).__name__}") from None


def _private(path: Path, what: str) -> list[str]:
    try:
        if path.stat().st_mode & (stat.S_IRGRP | stat.S_IROTH):
            return [f"the {what} {path} is readable by other users (chmod 600 it)"]
    except OSError:
        pass
    return []


def clean_token(value: str, where: str) -> str:
    """The token as sent after "Bearer ": stripped (also of a pasted "Bearer " prefix), one printable ASCII word."""
    token = value.strip()
    if token[:7].lower() == "bearer " or token.lower() == "bearer":
        token = token[7:].strip()
    if not token:
        raise UsageError(f"the token from {where} is empty")
    if not token.isascii() or not token.isprintable() or any(c.isspace() for c in token):
        raise UsageError(f"the token from {where} is not a single word of printable ASCII (expected the "
                         "access_token that POST /auth/token answers)")
    return token


def _token_file(path: Path) -> str:
    """A file holding the token alone, or the JSON answer of POST /auth/token ({"access_token": ...})."""
    text = _read(path, "token file")
    if text.lstrip().startswith("{"):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise UsageError(f"the token file {path} is not valid JSON (line {e.lineno}, column {e.colno})") from None
        text = str(data.get("access_token") or data.get("token") or "") if isinstance(data, dict) else ""
        if not text:
            raise UsageError(f"the token file {path} holds JSON without an access_token")
    return clean_token(text, f"the token file {path}")


def _from_file(path: Path) -> dict[str, str]:
    text = _read(path, "credentials file")
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
        "token": values.get("token") or values.get("access_token") or "",
    }


def load_credentials(file: str | os.PathLike | None = None, *, url: str | None = None,
                     token_file: str | os.PathLike | None = None, env: Mapping[str, str] | None = None) -> Credentials:
    """``--url`` beats the file, the file beats the environment (TIDEMARK_AIRFLOW_URL/_USER/_PASSWORD).

    A token wins over a user and password: ``--token-file``, else the file's ``token``, else
    TIDEMARK_AIRFLOW_TOKEN when the file names neither a user nor a password."""
    env = os.environ if env is None else env
    warnings: list[str] = []
    if file is not None:
        path = Path(file).expanduser()
        values = _from_file(path)
        source = f"file {path}"
        warnings += _private(path, "credentials file")
    else:
        values = {"url": "", "username": "", "password": "", "token": ""}
        source = "environment"
    final_url = (url or values["url"] or env.get(ENV_URL) or DEFAULT_URL).strip().rstrip("/")
    if final_url.endswith("/api/v2"):
        final_url = final_url[: -len("/api/v2")]
    if not final_url.startswith(("http://", "https://")):
        raise UsageError(f"the Airflow URL {final_url!r} must start with http:// or https://")
    token = setting = ""
    if token_file is not None:
        tpath = Path(token_file).expanduser()
        token, setting = _token_file(tpath), f"--token-file {tpath}"
        warnings += _private(tpath, "token file")
    elif values["token"]:
        setting = f"the credentials file {path}"
        token = clean_token(values["token"], setting)
    elif not (values["username"] or values["password"]) and env.get(ENV_TOKEN, "").strip():
        token, setting = clean_token(env[ENV_TOKEN], ENV_TOKEN), ENV_TOKEN
    if token:
        return Credentials(final_url, "", "", setting, tuple(warnings), token, setting)
    username = values["username"] or env.get(ENV_USER, "")
    password = values["password"] or env.get(ENV_PASSWORD, "")
    if not username or not password:
        where = f"the credentials file {file}" if file is not None else f"{ENV_USER} / {ENV_PASSWORD}"
        raise UsageError(f"no Airflow {'user' if not username else 'password'} given: set {where} "
                         f"(or pass --credentials FILE with url, username and password; or a token: {ENV_TOKEN} "
                         "or --token-file FILE)")
    return Credentials(final_url, username, password, source, tuple(warnings))
