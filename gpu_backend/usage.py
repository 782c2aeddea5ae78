"""Accounting: the usage log on disk, and the live per-user figures the pool shows.

The front door owns one :class:`UsageLog` and calls it from its loop: when a
session opens, with every usage report of a worker (cumulative counters), and
when a session ends. The log is JSON lines, one per report, holding the
*increase* since the session's previous line (docs/fair-share.md,
"Accounting"), appended and flushed at least every second: a ``kill -9`` of
the pool loses at most the last second, and a restarted pool appends to the
same file. :func:`read_usage` sums a log for ``gpuwb-backend usage``.

In memory the log also keeps each user's device time per second and device
for the last ten minutes: the shares that ``%gpu status`` and ``%gpu share``
show. ``UsageLog(None)`` keeps only those (the embedded pool writes no file).
"""

from __future__ import annotations

import json
import math
import os
import re
import time
from collections import defaultdict
from datetime import datetime
from pathlib import Path
from typing import Any, Iterable

__all__ = ["UsageLog", "read_usage", "parse_since", "default_log_path", "COUNTERS"]

#: Cumulative counters a worker reports; all are summed except ``peak`` (a maximum).
COUNTERS = ("device_s", "ops", "bytes_in", "bytes_out", "peak")
#: Seconds of per-user device time history kept in memory, in 1-s buckets.
HISTORY_SECONDS = 600
FLUSH_SECONDS = 1.0


def default_log_path() -> Path:
    """``$XDG_STATE_HOME/gpuwb/usage.jsonl`` (``~/.local/state/...`` without it)."""
    state = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(state) / "gpuwb" / "usage.jsonl"


class UsageLog:
    def __init__(self, path: str | os.PathLike | None) -> None:
        self.path = Path(path) if path is not None else None
        self._file = None
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            self._file = os.fdopen(fd, "a", encoding="utf-8")
        self._buffer: list[str] = []
        self._flushed = time.monotonic()
        self._last: dict[str, dict[str, float]] = {}    # session -> counters last logged
        self._who: dict[str, tuple[str, str]] = {}       # session -> (user, device)
        #: device -> user -> {second: device seconds}
        self._history: dict[str, dict[str, dict[int, float]]] = defaultdict(lambda: defaultdict(dict))
        self.totals: dict[str, dict[str, float]] = defaultdict(lambda: dict.fromkeys(COUNTERS, 0))

    # ------------------------------------------------------------ the door's calls
    def open_session(self, session: str, user: str, device: str, client: str = "",
                     now: float | None = None) -> None:
        self._who[session] = (user, device)
        self._last[session] = dict.fromkeys(COUNTERS, 0)
        self._write({"t": "open", "ts": _ts(now), "session": session, "user": user,
                     "device": device, "client": client})

    def report(self, session: str, counters: dict[str, Any], now: float | None = None) -> None:
        """A worker's cumulative *counters* for *session*: log and count what increased."""
        who = self._who.get(session)
        if who is None:
            return
        user, device = who
        last = self._last[session]
        line: dict[str, Any] = {}
        for key in COUNTERS:
            value = counters.get(key)
            if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value):
                continue
            if key == "peak":
                if value > last["peak"]:
                    line["peak"] = last["peak"] = value
            elif value > last[key]:
                line[key] = value - last[key]
                last[key] = value
        if not line:
            return
        ts = _ts(now)
        total = self.totals[user]
        for key, value in line.items():
            total[key] = max(total[key], value) if key == "peak" else total[key] + value
        if "device_s" in line:
            bucket = self._history[device][user]
            second = int(ts)
            bucket[second] = bucket.get(second, 0.0) + line["device_s"]
            for old in [s for s in bucket if s < second - HISTORY_SECONDS]:
                del bucket[old]
        self._write({"t": "use", "ts": ts, "session": session, "user": user, "device": device,
                     **line})

    def close_session(self, session: str, reason: str, counters: dict | None = None,
                      now: float | None = None) -> None:
        if counters:
            self.report(session, counters, now)
        who = self._who.pop(session, None)
        self._last.pop(session, None)
        if who is not None:
            self._write({"t": "close", "ts": _ts(now), "session": session, "user": who[0],
                         "device": who[1], "reason": reason})

    def _write(self, record: dict) -> None:
        if self._file is not None:
            self._buffer.append(json.dumps(record, separators=(",", ":")) + "\n")

    def maybe_flush(self, now: float | None = None) -> None:
        """Called every turn of the door's loop: flush if a second has passed."""
        now = time.monotonic() if now is None else now
        if now - self._flushed >= FLUSH_SECONDS:
            self.flush()
            self._flushed = now

    def flush(self) -> None:
        if self._file is not None and self._buffer:
            self._file.write("".join(self._buffer))
            self._file.flush()   # in the OS's hands: survives a kill of this process
            self._buffer.clear()

    def close(self) -> None:
        self.flush()
        if self._file is not None:
            self._file.close()
            self._file = None

    # ------------------------------------------------------------ live figures
    def share(self, window: float = 10.0, device: str | None = None,
              now: float | None = None) -> dict[str, float]:
        """Each user's fraction of the device time used in the last *window* seconds."""
        used = self.used(window, device, now)
        total = sum(used.values())
        return {user: seconds / total for user, seconds in used.items()} if total > 0 else {}

    def used(self, window: float = 10.0, device: str | None = None,
             now: float | None = None) -> dict[str, float]:
        """Each user's device seconds in the last *window* seconds (all devices: summed)."""
        start = _ts(now) - window
        out: dict[str, float] = defaultdict(float)
        for dev, users in self._history.items():
            if device is not None and dev != device:
                continue
            for user, buckets in users.items():
                out[user] += sum(v for s, v in buckets.items() if s >= start)
        return dict(out)

    def history(self, seconds: float = 300, device: str | None = None,
                now: float | None = None, step: float = 1.0) -> dict[str, Any]:
        """Per user, device seconds in each *step*-second bucket over the last *seconds*."""
        end = int(_ts(now))
        n = max(1, int(seconds / step))
        t0 = end - n * step
        users: dict[str, list[float]] = {}
        for dev, per_user in self._history.items():
            if device is not None and dev != device:
                continue
            for user, buckets in per_user.items():
                row = users.setdefault(user, [0.0] * n)
                for second, value in buckets.items():
                    i = int((second - t0) // step)
                    if 0 <= i < n:
                        row[i] += value
        return {"t0": t0, "step": step, "device": device, "users": users}


def _ts(now: float | None) -> float:
    return round(time.time() if now is None else now, 3)


# ---------------------------------------------------------------- reading a log

_SPAN = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhd])\s*$")


def parse_since(text: str, now: float | None = None) -> float:
    """``2026-11-22``, ``2026-11-22T10:00`` (local time), or ``90s``, ``30m``, ``1h``, ``2d`` ago."""
    now = time.time() if now is None else now
    match = _SPAN.match(text)
    if match:
        return now - float(match.group(1)) * {"s": 1, "m": 60, "h": 3600, "d": 86400}[match.group(2)]
    try:
        return datetime.fromisoformat(text.strip()).timestamp()
    except ValueError:
        raise ValueError(f"--since {text!r}: give a date (2026-11-22), a time "
                         "(2026-11-22T10:00) or a span (90s, 30m, 1h, 2d)") from None


def _records(lines: Iterable[str]) -> tuple[list[dict], int]:
    records, bad = [], 0
    for line in lines:
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError:   # a line cut short by a kill, or not ours
            bad += 1
            continue
        if isinstance(record, dict) and isinstance(record.get("ts"), (int, float)):
            records.append(record)
        else:
            bad += 1
    return records, bad


def read_usage(path: str | os.PathLike, since: float | None = None, user: str | None = None,
               by: str = "user") -> tuple[list[dict], int]:
    """Sum a usage log per user (or per session, ``by="session"``). Returns the rows and the
    number of lines skipped as unreadable."""
    if by not in ("user", "session"):
        raise ValueError("by is 'user' or 'session'")
    with open(path, encoding="utf-8", errors="replace") as fh:
        records, bad = _records(fh)
    rows: dict[str, dict] = {}
    sessions: dict[str, set] = defaultdict(set)
    for r in records:
        if since is not None and r["ts"] < since:
            continue
        if user is not None and r.get("user") != user:
            continue
        key = str(r.get("user") if by == "user" else r.get("session"))
        row = rows.get(key)
        if row is None:
            row = rows[key] = {"user": r.get("user"), **({"session": r.get("session"),
                                                           "device": r.get("device")}
                                                          if by == "session" else {}),
                               "sessions": 0, **dict.fromkeys(COUNTERS, 0),
                               "first": r["ts"], "last": r["ts"]}
        row["first"], row["last"] = min(row["first"], r["ts"]), max(row["last"], r["ts"])
        if r.get("session") is not None:
            sessions[key].add(r["session"])
        if r.get("t") == "use":
            for k in COUNTERS:
                v = r.get(k)
                if isinstance(v, (int, float)) and not isinstance(v, bool):
                    row[k] = max(row[k], v) if k == "peak" else row[k] + v
    for key, row in rows.items():
        row["sessions"] = len(sessions[key])
    return sorted(rows.values(), key=lambda row: (-row["device_s"], str(row["user"]))), bad
