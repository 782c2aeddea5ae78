"""The usage log: what each session used, one JSON line per usage report.

The pool's front door owns one :class:`UsageLog` and calls it from its single
thread: ``open_session`` when a session starts, ``report`` with each usage report
a worker sends (cumulative counters), ``close_session`` when the session ends and
``maybe_flush`` every loop turn. The log appends the *increase* since the
session's previous line (the format is in ``docs/fair-share.md``, "Accounting")
and writes at least every second, so a ``kill -9`` of the pool loses at most the
last second. The same object keeps the in-memory figures the pool shows live
(``totals``, ``history``, ``share``); the embedded pool uses ``UsageLog(None)``,
which keeps those and writes nothing.

``gpuwb-backend usage`` (:mod:`gpu_backend.cli_usage`) sums a log file with
:func:`read_usage`.
"""

from __future__ import annotations

import json
import logging
import math
import os
import re
import time
from collections import OrderedDict
from datetime import datetime
from pathlib import Path
from typing import Literal

__all__ = ["UsageLog", "UsageRows", "read_usage", "parse_since", "default_log_path",
           "COUNTERS", "FLUSH_SECONDS", "HISTORY_SECONDS"]

log = logging.getLogger("gpu_backend.accounting.usage")

#: Counters that add up; ``peak`` (bytes) is a maximum and is kept beside them.
COUNTERS = ("device_s", "ops", "bytes_in", "bytes_out", "errors", "waited_s", "worked_s")
#: Counters that logs written before them lack (read as 0).
_LATER_COUNTERS = ("errors", "waited_s", "worked_s")
#: Counters in seconds (floats, kept to the microsecond); the others count.
_SECONDS = frozenset(("device_s", "waited_s", "worked_s"))
#: ``maybe_flush`` writes when this many seconds passed since it last did.
FLUSH_SECONDS = 1.0
#: Seconds of 1-s device-time buckets kept for ``history``, ``share`` and ``totals(since)``.
HISTORY_SECONDS = 600
#: Closed sessions remembered so that a late report is not counted a second time.
_REMEMBER_CLOSED = 10_000
#: Unwritten bytes kept while the disk refuses them (full, gone); beyond this they are dropped.
_MAX_PENDING = 16 << 20


def default_log_path() -> Path:
    """``$XDG_STATE_HOME/gpuwb/usage.jsonl``, else ``~/.local/state/gpuwb/usage.jsonl``
    (a relative XDG_STATE_HOME is ignored, as the XDG specification asks)."""
    state = os.environ.get("XDG_STATE_HOME")
    base = Path(state) if state and os.path.isabs(state) else Path.home() / ".local" / "state"
    return base / "gpuwb" / "usage.jsonl"


_PEAK, _SEEN = len(COUNTERS), len(COUNTERS) + 1   # positions in a sums list


def _sums(session: str | None = None, line: dict | None = None) -> list:
    """Running sums of one user (or one user on one device in one second): the COUNTERS,
    then the largest peak, then the set of session ids seen."""
    values = [line.get(k, 0) for k in (*COUNTERS, "peak")] if line else [0.0, *[0] * len(COUNTERS)]
    return values + [{session} if session else set()]


def _merge(into: list, sums: list) -> None:
    for i in range(len(COUNTERS)):
        into[i] += sums[i]
    into[_PEAK] = max(into[_PEAK], sums[_PEAK])
    into[_SEEN] |= sums[_SEEN]


def _as_row(sums: list) -> dict:
    row = {"sessions": len(sums[_SEEN]), **dict(zip(COUNTERS, sums)), "peak": sums[_PEAK]}
    for key in _SECONDS:
        row[key] = round(row[key], 6)
    return row


class UsageLog:
    """The pool's accounting: the append-only log file and the live per-user figures.

    Not thread-safe: the front door's loop is its only caller. ``path=None`` keeps
    the figures in memory and writes nothing (the embedded pool). ``now`` arguments
    are wall-clock seconds (``time.time()``) and exist so tests need not sleep.
    """

    def __init__(self, path: str | os.PathLike | None) -> None:
        self.path = Path(path) if path is not None else None
        self._fd = _open_append(self.path) if self.path is not None else None
        self._pending: list[bytes] = []
        self._last_flush: float | None = None
        self._failing = False
        self._sessions: dict[str, dict] = {}          # open session -> user, device, counters sent
        self._closed: OrderedDict[str, None] = OrderedDict()
        self._lifetime: dict[str, list] = {}          # user -> sums since this log started
        self._device_seconds: dict[str, float] = {}   # device -> device time since then
        self._buckets: dict[int, dict[tuple[str, str], list]] = {}   # second -> (device, user) -> sums
        self._first: float | None = None
        self._latest = -math.inf

    # -- what the front door calls ----------------------------------------------------------

    def open_session(self, session: str, user: str, device: str, client: str = "",
                     *, now: float | None = None) -> None:
        """A session started (the door answered its hello). A second open is ignored."""
        if session in self._sessions:
            return
        now = time.time() if now is None else now
        self._closed.pop(session, None)
        self._start(session, user, device)
        self._note(now, device, user, session, None)
        self._emit(now, "open", session, user, device, {"client": client})

    def report(self, session: str, user: str, device: str, counters: dict,
               *, now: float | None = None) -> None:
        """A worker's usage report: *counters* are the session's cumulative ``device_s``,
        ``ops``, ``bytes_in``, ``bytes_out`` and ``peak`` (absent ones unchanged).

        Writes a ``use`` line with the increase since the session's previous line, or
        nothing if nothing increased. Counters never go backwards: a smaller value counts
        as no increase. A session reported without ``open_session`` starts from zero; a
        report after ``close_session`` is ignored (already counted).
        """
        if session in self._closed:
            return
        now = time.time() if now is None else now
        state = self._sessions.get(session) or self._start(session, user, device)
        line = _increase(state["sent"], counters)
        if line is not None:
            self._note(now, device, user, session, line)
            self._emit(now, "use", session, user, device, line)

    def close_session(self, session: str, reason: str, counters: dict | None = None,
                      *, now: float | None = None) -> None:
        """A session ended: its final counters (a last ``use`` line if they increased),
        then the ``close`` line; the session is forgotten. Unknown sessions write nothing."""
        state = self._sessions.get(session)
        if state is None:
            return
        now = time.time() if now is None else now
        if counters:
            self.report(session, state["user"], state["device"], counters, now=now)
        del self._sessions[session]
        self._closed[session] = None
        if len(self._closed) > _REMEMBER_CLOSED:
            self._closed.popitem(last=False)
        self._emit(now, "close", session, state["user"], state["device"], {"reason": reason})

    def maybe_flush(self, now: float | None = None) -> None:
        """Flush if ``FLUSH_SECONDS`` passed since the last time this did; the door calls it
        every loop turn with ``time.monotonic()`` (any clock, the same on every call)."""
        now = time.monotonic() if now is None else now
        if self._last_flush is None or now - self._last_flush >= FLUSH_SECONDS:
            self._last_flush = now
            self.flush()

    def flush(self) -> None:
        """Write the buffered lines with one ``write``. No fsync: what a killed process wrote
        is in the page cache and reaches the file. A refused write is kept and retried
        (up to 16 MiB, then dropped with an error in the log); it never raises."""
        if not self._pending or self._fd is None:
            self._pending.clear()
            return
        data = memoryview(b"".join(self._pending))
        self._pending.clear()
        try:
            while data:
                data = data[os.write(self._fd, data):]
        except OSError as exc:
            if len(data) > _MAX_PENDING:
                log.error("usage log %s: dropped %d bytes that could not be written: %s",
                          self.path, len(data), exc)
            else:
                self._pending.append(bytes(data))
            if not self._failing:
                log.warning("usage log %s: cannot write (%s); retrying every second", self.path, exc)
            self._failing = True
            return
        if self._failing:
            log.warning("usage log %s: writing again", self.path)
        self._failing = False

    def close(self) -> None:
        """Flush and close the file; afterwards the figures are still kept, lines are not."""
        self.flush()
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> "UsageLog":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- what the pool's status shows -------------------------------------------------------

    def totals(self, since: float | None = None) -> dict[str, dict]:
        """Per user: sessions, device_s, ops, bytes_in, bytes_out, peak (the largest session
        peak), over this log's lifetime or from *since* (rounded down to its second). A
        *since* before the last ``HISTORY_SECONDS`` (and after the first report) is a
        ValueError: only the log file goes further back."""
        if since is None or self._first is None or since <= self._first:
            return {user: _as_row(sums) for user, sums in sorted(self._lifetime.items())}
        start = math.floor(since)
        if start < math.floor(self._latest) - HISTORY_SECONDS:
            raise ValueError(f"only the last {HISTORY_SECONDS} s are kept in memory; "
                             "read the usage log for earlier periods")
        per_user: dict[str, list] = {}
        for second, bucket in self._buckets.items():
            for (_, user), sums in bucket.items() if second >= start else ():
                _merge(per_user.setdefault(user, _sums()), sums)
        return {user: _as_row(sums) for user, sums in sorted(per_user.items())}

    def device_seconds(self) -> dict[str, float]:
        """Device time per device (all users) over this log's lifetime."""
        return {device: round(v, 6) for device, v in sorted(self._device_seconds.items())}

    def history(self, seconds: int = 300, device: str | None = None,
                now: float | None = None) -> dict:
        """Device seconds per user in each whole second of the last *seconds* (at most
        ``HISTORY_SECONDS``; the current, unfinished second is left out), by the time
        of the report: ``{"t0": first second, "step": 1.0, "users": {user: [...]},
        "devices": {device: {user: [...]}}, "waited": {user: [...]}, "worked": {user:
        [...]}}`` (the last two: wall seconds its batches waited for others' turns, and took
        in all: :meth:`waits`'s parts); *device* keeps one device only."""
        n = max(1, min(int(seconds), HISTORY_SECONDS))
        end = math.floor(time.time() if now is None else now)
        t0 = end - n
        devices: dict[str, dict[str, list]] = {}
        users: dict[str, list] = {}
        sides: dict[str, dict[str, list]] = {"waited": {}, "worked": {}}
        at = {"waited": COUNTERS.index("waited_s"), "worked": COUNTERS.index("worked_s")}
        for second in range(t0, end):
            for (dev, user), sums in self._buckets.get(second, {}).items():
                if device is None or dev == device:
                    for series in (devices.setdefault(dev, {}).setdefault(user, [0.0] * n),
                                   users.setdefault(user, [0.0] * n)):
                        series[second - t0] = round(series[second - t0] + sums[0], 6)
                    for side, series_of in sides.items():   # (the users' side of sharing)
                        series = series_of.setdefault(user, [0.0] * n)
                        series[second - t0] = round(series[second - t0] + sums[at[side]], 6)
        return {"t0": float(t0), "step": 1.0, "users": dict(sorted(users.items())),
                "devices": {d: dict(sorted(per.items())) for d, per in sorted(devices.items())},
                **{side: dict(sorted(per.items())) for side, per in sides.items()}}

    def share(self, window: float = 10.0, device: str | None = None,
              now: float | None = None) -> dict[str, float]:
        """Each user's fraction of the device time used in the last *window* seconds (whole
        seconds, as :meth:`history`); empty when no device time was used."""
        return _fractions(self.history(math.ceil(window), device, now)["users"])

    def waits(self, window: float = 10.0, now: float | None = None) -> dict[str, dict[str, float]]:
        """Per device and user, the fraction of their batches' time in the last *window*
        seconds (whole seconds, as :meth:`history`) spent waiting for the device while
        others held it: sharing as the user sees it (0: never kept waiting; 0.6: its work
        waited 60 % of the time it spent in the pool). Users whose batches took no
        measurable time are left out."""
        n = max(1, min(math.ceil(window), HISTORY_SECONDS))
        end = math.floor(time.time() if now is None else now)
        waited, worked = COUNTERS.index("waited_s"), COUNTERS.index("worked_s")
        sums: dict[tuple[str, str], list[float]] = {}
        for second in range(end - n, end):
            for key, bucket in self._buckets.get(second, {}).items():
                pair = sums.setdefault(key, [0.0, 0.0])
                pair[0] += bucket[waited]
                pair[1] += bucket[worked]
        out: dict[str, dict[str, float]] = {}
        for (device, user), (w, total) in sorted(sums.items()):
            if total > 0:
                out.setdefault(device, {})[user] = min(1.0, w / total)
        return out

    def shares(self, window: float = 10.0, now: float | None = None) -> dict[str, dict[str, float]]:
        """:meth:`share` of every device, from one :meth:`history` (a status of a pool with
        hundreds of devices asks for all of them)."""
        return {device: _fractions(per_user) for device, per_user
                in self.history(math.ceil(window), None, now)["devices"].items()}

    # -- inside -----------------------------------------------------------------------------

    def _start(self, session: str, user: str, device: str) -> dict:
        state = {"user": user, "device": device, "sent": dict.fromkeys((*COUNTERS, "peak"), 0)}
        self._sessions[session] = state
        return state

    def _note(self, now: float, device: str, user: str, session: str, line: dict | None) -> None:
        """Add to the lifetime sums and to the 1-s bucket of *now*, dropping old buckets."""
        self._first = now if self._first is None else min(self._first, now)
        self._latest = max(self._latest, now)
        sums = _sums(session, line)
        _merge(self._lifetime.setdefault(user, _sums()), sums)
        if line is not None:
            self._device_seconds[device] = self._device_seconds.get(device, 0.0) + line["device_s"]
        second = math.floor(now)
        bucket = self._buckets.get(second)
        if bucket is None:
            for old in [s for s in self._buckets if s < second - HISTORY_SECONDS]:
                del self._buckets[old]
            bucket = self._buckets[second] = {}
        _merge(bucket.setdefault((device, user), _sums()), sums)

    def _emit(self, now: float, kind: str, session: str, user: str, device: str,
              fields: dict) -> None:
        if self._fd is not None:
            record = {"t": kind, "ts": round(now, 3), "session": session, "user": user,
                      "device": device, **fields}
            self._pending.append((json.dumps(record) + "\n").encode())


def _increase(sent: dict, counters: dict) -> dict | None:
    """The ``use`` fields for *counters* against what was *sent* (updated), or None if
    nothing increased. device_s is rounded to the microsecond and *sent* advances by the
    rounded amount, so the logged increases never drift from the cumulative figure."""
    line: dict = {}
    for key in COUNTERS:
        value = counters.get(key)
        if key in _SECONDS:
            step = round(float(value) - sent[key], 6) if value is not None else 0.0
        else:
            step = int(value) - sent[key] if value is not None else 0
        line[key] = max(step, 0)
        sent[key] += line[key]
    peak = max(sent["peak"], int(counters.get("peak") or 0))
    if not any(line.values()) and peak == sent["peak"]:
        return None
    for key in _SECONDS:
        line[key] = float(line[key])
    line["peak"] = sent["peak"] = peak
    return line


def _open_append(path: Path) -> int:
    """Open *path* for appending (mode 0600 if new, its directory 0700 if new). If a killed
    writer left a cut-short last line, end it with a newline so that the next line stays whole."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        size = os.fstat(fd).st_size
        if size and os.pread(fd, 1, size - 1) != b"\n":
            os.write(fd, b"\n")
    except OSError:
        os.close(fd)
        raise
    return fd


# -- reading a log --------------------------------------------------------------------------

class UsageRows(list):
    """:func:`read_usage`'s rows (dicts), with ``skipped``: (line number, why) for each line
    that was cut short or malformed and left out of the sums."""

    def __init__(self, rows=(), skipped=()) -> None:
        super().__init__(rows)
        self.skipped: list[tuple[int, str]] = list(skipped)


def _valid(record) -> bool:
    """A usage line: a known kind, the names as strings, numbers where numbers belong."""
    number = lambda v, kind=(int, float): isinstance(v, kind) and not isinstance(v, bool)  # noqa: E731
    if not isinstance(record, dict) or record.get("t") not in ("open", "use", "close") \
            or not all(isinstance(record.get(k), str) for k in ("session", "user", "device")) \
            or not number(record.get("ts")):
        return False
    return record["t"] != "use" or all(
        (k in _LATER_COUNTERS and k not in record)
        or (number(record.get(k), (int, float) if k in _SECONDS else int) and record[k] >= 0)
        for k in (*COUNTERS, "peak"))


def read_usage(path: str | os.PathLike, since: float | None = None, user: str | None = None,
               by: Literal["user", "session"] = "user") -> UsageRows:
    """Sum a usage log per user (``user``, ``sessions``, the COUNTERS, ``peak``: the largest
    session peak, ``first``/``last``: timestamps) or per session (``session``, ``user``,
    ``device``, ``client``, ``opened``, ``closed``, ``reason``, the sums, ``first``/``last``).

    Only lines at or after *since* (a timestamp) and of *user* count; a session counts for
    a user if it has such a line. Cut-short and malformed lines are skipped and listed in
    the result's ``skipped``. Called by ``gpuwb-backend usage``; reads the file as it is,
    also while a pool appends to it.
    """
    if by not in ("user", "session"):
        raise ValueError(f"by must be 'user' or 'session', not {by!r}")
    rows: dict[str, dict] = {}
    meta: dict[str, dict] = {}
    skipped: list[tuple[int, str]] = []
    with open(path, "rb") as file:
        for number, raw in enumerate(file, 1):
            if not raw.strip():
                continue
            try:
                record = json.loads(raw)
            except ValueError:
                record = None
            if not _valid(record):
                skipped.append((number, "malformed" if raw.endswith(b"\n") else "cut short"))
                continue
            sid, ts = record["session"], float(record["ts"])
            info = meta.setdefault(sid, {"client": None, "opened": None, "closed": None,
                                         "reason": None})
            if record["t"] == "open":
                info.update(client=record.get("client"), opened=ts)
            elif record["t"] == "close":
                info.update(closed=ts, reason=record.get("reason"))
            if (user is not None and record["user"] != user) or (since is not None and ts < since):
                continue
            key = record["user"] if by == "user" else sid
            row = rows.get(key)
            if row is None:
                row = rows[key] = ({"user": record["user"], "sessions": set()} if by == "user" else
                                   {"session": sid, "user": record["user"], "device": record["device"]})
                row.update(dict.fromkeys(COUNTERS, 0), **dict.fromkeys(_SECONDS, 0.0), peak=0,
                           first=ts, last=ts)
            if by == "user":
                row["sessions"].add(sid)
            row["first"], row["last"] = min(row["first"], ts), max(row["last"], ts)
            if record["t"] == "use":
                for k in COUNTERS:
                    row[k] += record.get(k, 0)
                row["peak"] = max(row["peak"], record["peak"])
    result = []
    for key, row in rows.items():
        for k in _SECONDS:
            row[k] = round(float(row[k]), 6)
        if by == "user":
            row["sessions"] = len(row["sessions"])
        else:
            row.update(meta[key])
        result.append(row)
    result.sort(key=(lambda r: r["user"]) if by == "user" else (lambda r: (r["first"], r["session"])))
    return UsageRows(result, skipped)


_AGES = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_since(text: str, now: float | None = None) -> float:
    """A ``--since`` value as a timestamp: an age before *now* (``90s``, ``30m``, ``1h``,
    ``2d``, ``1w``; decimals allowed) or an ISO date or time (``2026-11-22``,
    ``2026-11-22T10:00``; local time unless it names an offset)."""
    text = text.strip()
    age = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([smhdw])", text)
    if age:
        return (time.time() if now is None else now) - float(age[1]) * _AGES[age[2]]
    try:
        return datetime.fromisoformat(text).timestamp()
    except ValueError:
        raise ValueError(f"cannot read {text!r} as a time: give a date (2026-11-22), a local "
                         "time (2026-11-22T10:00) or an age (90s, 30m, 1h, 2d)") from None


def _fractions(series_by_user: dict[str, list[float]]) -> dict[str, float]:
    """Each user's part of the device seconds summed over their series (empty: none used)."""
    used = {user: sum(series) for user, series in series_by_user.items()}
    total = sum(used.values())
    return {user: v / total for user, v in used.items() if v > 0} if total > 0 else {}
