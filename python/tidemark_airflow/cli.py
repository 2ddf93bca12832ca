"""tidemark-airflow: trigger, follow and inspect runs of the tidemark_reconcile DAG from a terminal."""

from __future__ import annotations

import argparse
import datetime as dt
import os
import re
import sys
import traceback
from collections.abc import Sequence
from typing import Any

from tidemark_airflow import DAG_ID
from tidemark_airflow.credentials import (ENV_PASSWORD, ENV_TOKEN, ENV_URL, ENV_USER, Credentials, UsageError,
                                         load_credentials)
from tidemark_airflow.reconcile_plan import ReconcileRequestError, check_pipeline

OK, FAILED, BAD_INPUT, AIRFLOW_TROUBLE, NOT_FINISHED = 0, 1, 2, 3, 4
_DAY = re.compile(r"^\d{4}-\d{2}-\d{2}$")

EPILOG = f"""\
credentials: a pre-issued API token (the access_token of the api-server's POST /auth/token), sent
as "Authorization: Bearer": --token-file FILE (the token alone, or that JSON answer), else "token"
in the --credentials file, else {ENV_TOKEN}. Without a token, a user and password:
--credentials FILE (JSON {{"url": ..., "username": ..., "password": ...}} or ini lines
url = ..., username = ..., password = ..., optionally under [airflow]), else the environment:
{ENV_USER}, {ENV_PASSWORD}. The URL: --url, else the file's, else {ENV_URL}
(default http://127.0.0.1:8080). The password and the token are never printed.

exit status: 0 the run succeeded; 1 the run failed (drift over the pipeline's threshold, a refused
day or param, a Spark failure); 2 bad input (dates, options, params Airflow refused, unknown run); 3
Airflow unreachable, credentials refused or API error; 4 (status, follow --max-wait) not finished yet.

The drift threshold is the pipeline's (the drift_threshold option of its event table, default 0.01):
reconcile writes its verdict with every day's summary; --pipeline FILE names the pipeline file.
"""


class Output:
    """Prints to stdout/stderr with every known secret replaced by ***."""

    def __init__(self) -> None:
        self.secrets: list[str] = []

    def redact(self, text: str) -> str:
        for s in self.secrets:
            if s:
                text = text.replace(s, "***")
        return text

    def out(self, text: str = "") -> None:
        print(self.redact(text), flush=True)

    def err(self, text: str) -> None:
        print(self.redact(text), file=sys.stderr, flush=True)


def _day(value: str) -> str:
    if not _DAY.match(value or ""):
        raise argparse.ArgumentTypeError(f"{value!r} is not a date: expected yyyy-mm-dd (a UTC day)")
    try:
        dt.date.fromisoformat(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a valid calendar date") from None
    return value


def _removed_threshold(value: str) -> float:
    raise argparse.ArgumentTypeError(
        "--threshold is no longer an option: the threshold is the pipeline's (the drift_threshold option of its "
        "event table, default 0.01); set it in the pipeline file (--pipeline FILE)")


def _pipeline(value: str) -> str:
    try:
        return check_pipeline(value) or ""
    except ReconcileRequestError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _positive_int(value: str) -> int:
    try:
        n = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a whole number") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"{value!r} must be at least 1")
    return n


def _seconds(value: str) -> float:
    try:
        x = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number of seconds") from None
    if x <= 0:
        raise argparse.ArgumentTypeError(f"{value!r} must be > 0")
    return x


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # argparse exits 2 too, but with the usage block: one line is enough
        raise UsageError(f"{message} (see {self.prog} --help)")


def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--credentials", metavar="FILE", help="JSON or ini file: url, and token or username, password")
    common.add_argument("--token-file", metavar="FILE",
                        help=f"file with a pre-issued API token (wins over --credentials and ${ENV_TOKEN})")
    common.add_argument("--url", help=f"Airflow base URL (default: ${ENV_URL}, else http://127.0.0.1:8080)")
    common.add_argument("--dag-id", default=DAG_ID, help=f"the reconcile DAG (default: {DAG_ID})")
    common.add_argument("--timeout", type=_seconds, default=30.0, metavar="S", help="HTTP timeout per request (30)")
    follow = argparse.ArgumentParser(add_help=False)
    follow.add_argument("--interval", type=_seconds, default=3.0, metavar="S", help="poll interval (default 3 s)")
    follow.add_argument("--max-wait", type=_seconds, metavar="S", help="give up following after S seconds (exit 4)")

    p = _Parser(prog="tidemark-airflow", description=__doc__, epilog=EPILOG,
                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    t = sub.add_parser("trigger", parents=[common, follow], epilog=EPILOG,
                       formatter_class=argparse.RawDescriptionHelpFormatter,
                       help="trigger a reconcile run (unpausing the DAG if needed)",
                       description="Trigger a reconcile run for a range of closed UTC days (or the most recent "
                                   "closed days), optionally following it to the end.")
    t.add_argument("--from", dest="from_date", type=_day, metavar="DAY", help="first day, yyyy-mm-dd (UTC)")
    t.add_argument("--to", dest="to_date", type=_day, metavar="DAY", help="last day, included (default: --from)")
    t.add_argument("--recent", type=_positive_int, metavar="N", help="without a range: the N most recent closed days")
    t.add_argument("--threshold", type=_removed_threshold, help=argparse.SUPPRESS)  # refused with the reason
    t.add_argument("--pipeline", type=_pipeline, metavar="FILE",
                   help="the pipeline file the jobs run (absolute path), whose drift_threshold judges the drift "
                        "(default: the DAG's, the jobs' pipeline setting)")
    t.add_argument("--dirty", dest="include_dirty", action=argparse.BooleanOptionalAction, default=None,
                   help="also reconcile dirty closed days (default: no with a range, the DAG's default otherwise)")
    t.add_argument("--maintain", action=argparse.BooleanOptionalAction, default=None,
                   help="afterwards compact the closed days and vacuum (default: the DAG's, yes)")
    t.add_argument("--report", action=argparse.BooleanOptionalAction, default=None,
                   help="afterwards write the drift and health report, linked from the run (default: the DAG's, yes)")
    t.add_argument("--lakehouse", help="lakehouse root as Spark sees it (default: the DAG's Variable/env)")
    t.add_argument("--wait", action="store_true", help="follow the run until it ends; exit 0 success, 1 failed")
    f = sub.add_parser("follow", parents=[common, follow], epilog=EPILOG,
                       formatter_class=argparse.RawDescriptionHelpFormatter,
                       help="follow a run until it ends, a line per state change, then the drift summary")
    f.add_argument("run_id")
    s = sub.add_parser("status", parents=[common], epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter,
                       help="the state of a run, its tasks and, once checked, its drift summary")
    s.add_argument("run_id")
    return p


# ------------------------------------------------------------------------------------------------
# Output
# ------------------------------------------------------------------------------------------------

def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).strftime("%H:%M:%S")


def progress_line(state) -> str:
    tasks = ", ".join(f"{t.task_id} {t.state}" + (f" (try {t.try_number})" if t.try_number > 1 else "")
                      for t in state.tasks)
    return f"{_now()} run {state.state}" + (f" | {tasks}" if tasks else "")


def _pct(x: Any) -> str:
    return "n/a" if x is None else f"{float(x) * 100:+.3f}%"


def _num(x: Any) -> str:
    return "?" if x is None else f"{x:,}"


def _value(x: Any, signed: bool = True) -> str:
    return "n/a" if x is None else f"{float(x):{'+' if signed else ''},.15g}"


def _threshold_text(s: dict[str, Any]) -> str:
    thresholds = s.get("thresholds") or ([s["threshold"]] if s.get("threshold") is not None else [])
    return "/".join(f"{t * 100:g}%" for t in thresholds) or "?"


def _measures_over(d: dict[str, Any]) -> str:
    return ", ".join(f"{m['kpi']}.{m['measure']} {_pct(m.get('drift_rel'))}"
                     for m in d.get("measures") or [] if m.get("over_threshold"))


def drift_lines(summary: dict[str, Any]) -> list[str]:
    lines = [f"drift per day (threshold {_threshold_text(summary)}, the pipeline's drift_threshold; reconcile runs: "
             f"{', '.join(summary.get('run_ids') or []) or 'none'}):"]
    days = summary.get("days") or []
    if not days:
        lines.append("  no day was reconciled")
    else:
        lines.append(f"  {'day':<10}  {'drift':>9}  {'largest in':<24}  {'late':>6}  {'windows':>7}  verdict")
    for d in days:
        verdict = f"OVER THRESHOLD {_threshold_text(d)}: {_measures_over(d)}" if d.get("over_threshold") else "ok"
        lines.append(f"  {d['day']:<10}  {_pct(d.get('drift')):>9}  {d.get('drift_measure') or '-':<24}  "
                     f"{_num(d.get('late_records')):>6}  {_num(d.get('windows_changed')):>7}  {verdict}")
        for m in d.get("measures") or []:
            lines.append(f"      {m['kpi']}.{m['measure']}: {_value(m.get('stream_value'), False)} -> "
                         f"{_value(m.get('batch_value'), False)}, drift {_value(m.get('drift'))} "
                         f"({_pct(m.get('drift_rel'))}){', estimate' if m.get('estimate') else ''}"
                         f"{'  over' if m.get('over_threshold') else ''}")
        for w in d.get("worst") or []:
            dims = ", ".join(f"{k}={v}" for k, v in (w.get("dimensions") or {}).items()) or "(no dimensions)"
            share = "" if w.get("share_of_drift") is None else f" ({w['share_of_drift'] * 100:.0f}% of its drift of the day)"
            lines.append(f"      worst {w['kpi']}.{w['measure']} {dims}: {_value(w.get('drift'))}{share}, {w['windows']} "
                         f"windows changed, {_num(w.get('late_records'))} late records")
    for day in summary.get("no_summary_days") or []:
        lines.append(f"  {day:<10}  no data or not reconciled (no summary row in reconcile_report)")
    lines.extend(f"  note: {n}" for n in summary.get("notes") or [])
    return lines


def report_end(af, state, out: Output) -> int:
    summary = af.drift_summary(state.run_id)
    if summary:
        for line in drift_lines(summary):
            out.out(line)
    if state.state == "success":
        out.out(f"result: run {state.run_id} succeeded")
        return OK
    failed = [t for t in state.tasks if t.state in ("failed", "upstream_failed")]
    out.out(f"result: run {state.run_id} {state.state}")
    for t in failed:
        if t.state == "failed":
            reasons = af.failure_reason(state.run_id, t.task_id, t.try_number)
            out.out(f"  {t.task_id} failed" + (": " + reasons[-1] if reasons else ""))
            for r in reasons[:-1]:
                out.out(f"    {r}")
    return FAILED


def follow_run(af, run_id: str, args, out: Output) -> int:
    try:
        state = af.follow(run_id, lambda s: out.out(progress_line(s)), interval=args.interval, timeout=args.max_wait)
    except TimeoutError as e:
        out.err(f"tidemark-airflow: {e}; follow it later with: tidemark-airflow follow {run_id}")
        return NOT_FINISHED
    return report_end(af, state, out)


# ------------------------------------------------------------------------------------------------
# Commands
# ------------------------------------------------------------------------------------------------

def trigger_conf(args) -> dict[str, Any]:
    if args.to_date and not args.from_date:
        raise UsageError("--to needs --from (for one day give --from only, or the same date to both)")
    if args.from_date and args.recent:
        raise UsageError("give either a range (--from/--to) or --recent N, not both")
    conf: dict[str, Any] = {}
    if args.from_date:
        to_date = args.to_date or args.from_date
        if to_date < args.from_date:
            raise UsageError(f"--to {to_date} is before --from {args.from_date}: the range is empty")
        conf.update(from_date=args.from_date, to_date=to_date)
        conf["include_dirty"] = bool(args.include_dirty)
    else:
        if args.recent:
            conf["recent_days"] = args.recent
        if args.include_dirty is not None:
            conf["include_dirty"] = args.include_dirty
    if args.pipeline:
        conf["pipeline"] = args.pipeline
    if args.maintain is not None:
        conf["maintain"] = args.maintain
    if args.report is not None:
        conf["report"] = args.report
    if args.lakehouse:
        conf["lakehouse"] = args.lakehouse
    return conf


def _connect(args, out: Output):
    from tidemark_airflow.client import Airflow

    creds: Credentials = load_credentials(args.credentials, url=args.url, token_file=args.token_file)
    out.secrets.extend([creds.password, creds.token])
    for w in creds.warnings:
        out.err(f"tidemark-airflow: warning: {w}")
    af = Airflow(creds, dag_id=args.dag_id, timeout=args.timeout)
    af.login()
    out.secrets.append(af._token or "")
    return af


def cmd_trigger(args, out: Output) -> int:
    conf = trigger_conf(args)  # before any network: bad input is exit 2 without a server
    af = _connect(args, out)
    if af.ensure_unpaused():
        out.out(f"unpaused DAG {args.dag_id}")
    run_id = af.trigger(conf, note="triggered by tidemark-airflow")
    what = (f"days {conf['from_date']}..{conf['to_date']}" if "from_date" in conf
            else f"the {conf.get('recent_days', 'default number of')} most recent closed days")
    out.out(f"triggered {args.dag_id} run {run_id}: {what}; conf {conf}")
    if not args.wait:
        out.out(f"follow it with: tidemark-airflow follow '{run_id}'")
        return OK
    return follow_run(af, run_id, args, out)


def cmd_follow(args, out: Output) -> int:
    af = _connect(args, out)
    return follow_run(af, args.run_id, args, out)


def cmd_status(args, out: Output) -> int:
    af = _connect(args, out)
    state = af.run_state(args.run_id)
    out.out(progress_line(state))
    if state.conf:
        out.out(f"conf: {state.conf}")
    if not state.finished:
        return NOT_FINISHED
    return report_end(af, state, out)


def main(argv: Sequence[str] | None = None) -> int:
    from tidemark_airflow.client import AirflowError, NotFound

    out = Output()
    for name in (ENV_PASSWORD, ENV_TOKEN):
        if os.environ.get(name):
            out.secrets.append(os.environ[name])
    try:
        args = build_parser().parse_args(argv)
        if not args.command:
            build_parser().print_help()
            return BAD_INPUT
        return {"trigger": cmd_trigger, "follow": cmd_follow, "status": cmd_status}[args.command](args, out)
    except UsageError as e:
        out.err(f"tidemark-airflow: {e}")
        return BAD_INPUT
    except NotFound as e:
        out.err(f"tidemark-airflow: {e}")
        return BAD_INPUT
    except AirflowError as e:
        out.err(f"tidemark-airflow: {e}")
        return AIRFLOW_TROUBLE
    except KeyboardInterrupt:
        out.err("tidemark-airflow: interrupted (the run goes on in Airflow)")
        return 130
    except Exception as e:  # noqa: BLE001 - last resort: one redacted line, a redacted traceback on request
        if os.environ.get("TIDEMARK_AIRFLOW_DEBUG"):
            out.err(traceback.format_exc())
        out.err(f"tidemark-airflow: unexpected error: {type(e).__name__}: {e} (TIDEMARK_AIRFLOW_DEBUG=1 for details)")
        return AIRFLOW_TROUBLE
