"""``gpuwb-backend usage``: the usage log summed per user or session."""

from __future__ import annotations

import argparse
import json
import os
import sys
from datetime import datetime

__all__ = ["register"]


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "usage", help="device time, ops and bytes per user from the pool's usage log",
        description="Sum the pool's usage log (JSON lines) per user or per session. The "
                    "log survives restarts: a running pool appends to it every second.")
    parser.add_argument("--log", help="the log (default: $GPUWB_USAGE_LOG, else "
                                      "$XDG_STATE_HOME/gpuwb/usage.jsonl)")
    parser.add_argument("--since", help="2026-11-22, 2026-11-22T10:00, or a span: 90s, 30m, 1h, 2d")
    parser.add_argument("--user", help="only this user")
    parser.add_argument("--by", choices=("user", "session"), default="user")
    parser.add_argument("--json", action="store_true", help="JSON instead of a table")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from .usage import default_log_path, parse_since, read_usage
    path = args.log or os.environ.get("GPUWB_USAGE_LOG") or str(default_log_path())
    try:
        since = parse_since(args.since) if args.since else None
        rows, bad = read_usage(path, since=since, user=args.user, by=args.by)
    except FileNotFoundError:
        print(f"gpuwb-backend usage: no usage log at {path} (--log FILE)", file=sys.stderr)
        return 2
    except (OSError, ValueError) as exc:
        print(f"gpuwb-backend usage: {exc}", file=sys.stderr)
        return 2
    if bad:
        print(f"gpuwb-backend usage: skipped {bad} unreadable line{'s' if bad != 1 else ''} "
              "(a line cut short when the pool was killed is one)", file=sys.stderr)
    if args.json:
        json.dump(rows, sys.stdout, indent=1)
        print()
        return 0
    _print_table(rows, args.by)
    return 0


def _print_table(rows: list[dict], by: str) -> None:
    from rich.console import Console
    from rich.table import Table

    from .users import format_size

    table = Table(title="Usage" + (" by session" if by == "session" else ""))
    columns = ["User"] + (["Session", "Device"] if by == "session" else ["Sessions"]) + [
        "Device time", "Ops", "Uploaded", "Downloaded", "Peak memory", "From", "To"]
    for name in columns:
        table.add_column(name, justify="left" if name in ("User", "Session", "Device") else "right")
    for row in rows:
        who = [str(row["user"])] + ([str(row["session"]), str(row["device"])] if by == "session"
                                    else [str(row["sessions"])])
        table.add_row(*who, _seconds(row["device_s"]), f"{int(row['ops']):,}",
                      format_size(int(row["bytes_in"])), format_size(int(row["bytes_out"])),
                      format_size(int(row["peak"])), _when(row["first"]), _when(row["last"]))
    Console().print(table)


def _seconds(s: float) -> str:
    if s < 60:
        return f"{s:.3f} s"
    if s < 3600:
        return f"{s / 60:.1f} min"
    return f"{s / 3600:.2f} h"


def _when(ts: float) -> str:
    return datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M:%S")
