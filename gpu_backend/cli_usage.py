"""``gpuwb-backend usage``: the usage log summed per user or per session.

Reads the log a pool appends to (``--usage-log``; see ``docs/fair-share.md``,
"Accounting") with :func:`gpu_backend.accounting.usage.read_usage`; it never talks to a
pool, so it works on a log copied elsewhere and while the pool is running.
Lines cut short by a killed pool are left out, with a warning on stderr.
Errors (no log, a --since it cannot read) print one line on stderr and exit 2.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from datetime import datetime
from pathlib import Path

from gpu_backend.accounting.usage import COUNTERS, default_log_path, parse_since, read_usage

__all__ = ["register", "format_seconds", "format_bytes"]


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``usage`` to ``gpuwb-backend``."""
    parser = subparsers.add_parser(
        "usage", help="the usage log, summed per user or session",
        description="Sum a pool's usage log: device time, ops, bytes moved and peak memory.",
        epilog="The log is the pool's --usage-log; default $GPUWB_USAGE_LOG, else "
               f"{default_log_path()}. Peak memory is the most any one session held (not a sum over "
               "sessions at once).")
    parser.add_argument("--log", metavar="F", help="the usage log (JSON lines)")
    parser.add_argument("--since", metavar="S",
                        help="only usage from then on: 2026-11-22, 2026-11-22T10:00 (local time), "
                             "or an age such as 90s, 30m, 1h, 2d")
    parser.add_argument("--user", metavar="U", help="only this user")
    parser.add_argument("--by", choices=("user", "session"), default="user",
                        help="one row per user (default) or per session")
    parser.add_argument("--json", action="store_true", help="a JSON list instead of a table")
    parser.set_defaults(func=usage)


def usage(args: argparse.Namespace) -> int:
    path = Path(args.log or os.environ.get("GPUWB_USAGE_LOG") or default_log_path())
    try:
        since = parse_since(args.since) if args.since else None
    except ValueError as exc:
        return _fail(f"--since: {exc}")
    try:
        rows = read_usage(path, since=since, user=args.user, by=args.by)
    except FileNotFoundError:
        return _fail(f"no usage log at {path} (a pool writes one with --usage-log; "
                     "pass --log or set GPUWB_USAGE_LOG)")
    except OSError as exc:
        return _fail(f"cannot read {path}: {exc.strerror or exc}")
    if rows.skipped:
        cut = [n for n, why in rows.skipped if why == "cut short"]
        bad = [n for n, why in rows.skipped if why != "cut short"]
        if cut:
            print(f"gpuwb-backend usage: warning: line {cut[0]} of {path} is cut short "
                  "(a pool killed while writing?); left out", file=sys.stderr)
        if bad:
            print(f"gpuwb-backend usage: warning: {len(bad)} malformed line(s) in {path} left out "
                  f"(line{'s' if len(bad) > 1 else ''} {', '.join(map(str, bad[:10]))}"
                  f"{', …' if len(bad) > 10 else ''})", file=sys.stderr)
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    _print_table(rows, args, path, since)
    return 0


def _fail(message: str) -> int:
    print(f"gpuwb-backend usage: error: {message}", file=sys.stderr)
    return 2


def _print_table(rows: list[dict], args: argparse.Namespace, path: Path, since: float | None) -> None:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    title = f"usage in {path}" + (f" since {_when(since)}" if since is not None else "")
    if args.user:
        title += f" of {args.user}"
    table = Table(title=Text(title), title_justify="left")
    if args.by == "user":
        names = [("user", "left"), ("sessions", "right")]
    else:
        names = [("session", "left"), ("user", "left"), ("device", "left"), ("client", "left"),
                 ("opened", "left")]
    for name, justify in (*names, ("device time", "right"), ("ops", "right"), ("errors", "right"),
                          ("bytes in", "right"), ("bytes out", "right"), ("peak memory", "right")):
        table.add_column(name, justify=justify)
    for row in rows:
        if args.by == "user":
            first = [row["user"], str(row["sessions"])]
        else:
            first = [row["session"], row["user"], row["device"], row["client"] or "—",
                     _when(row["opened"]) if row["opened"] is not None else "—"]
        table.add_row(*(Text(cell) for cell in first), *_figures(row))
    if len(rows) > 1:
        total = {k: sum(r[k] for r in rows) for k in COUNTERS}
        total["peak"] = max(r["peak"] for r in rows)
        blank = [""] * (len(names) - 1)
        if args.by == "user":
            blank = [str(sum(r["sessions"] for r in rows))]
        table.add_section()
        table.add_row(Text("total"), *blank, *_figures(total))
    if not rows:
        table.caption = "no usage in this period" if since is not None or args.user else "no usage"
    Console(highlight=False).print(table)


def _figures(row: dict) -> list[str]:
    return [format_seconds(row["device_s"]), f"{row['ops']:,}", f"{row['errors']:,}",
            format_bytes(row["bytes_in"]),
            format_bytes(row["bytes_out"]), format_bytes(row["peak"])]


def _when(ts: float) -> str:
    return datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M:%S")


def format_seconds(seconds: float) -> str:
    """``0 s``, ``512 ms``, ``12.35 s``, ``3m 05s``, ``2h 03m``: device time for people."""
    if seconds == 0:
        return "0 s"
    if seconds * 1000 < 999.5:
        return f"{seconds * 1000:.3g} ms"
    if round(seconds, 2) < 60:
        return f"{seconds:.2f} s"
    minutes, secs = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes}m {secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m"


def format_bytes(n: int) -> str:
    """``0 B``, ``512 B``, ``4.0 KiB``, ``1.5 GiB``: binary units, one decimal."""
    if n < 1024:
        return f"{n} B"
    value = float(n)
    for unit in ("KiB", "MiB", "GiB", "TiB", "PiB"):
        value /= 1024
        if round(value, 1) < 1024 or unit == "PiB":
            return f"{value:.1f} {unit}"
    raise AssertionError("unreachable")
