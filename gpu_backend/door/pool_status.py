"""The pool's status as clients see it: devices, users and their shares, sessions.

Built by the front door for a ``status`` request (``%gpu status``, ``gpuwb
status``) and for an embedding process (``LocalPool.door.status()``, read from
another thread: hence copies of the tables the door's loop changes). Per user
and device: weight, *target* share (weight over the weights of the users with
work on that device; over all its users when none has), the share *measured*
over the last 10 s (of the device time used there), sessions waiting for the
device, memory against quota. Per session, what opened it (its hello's label), how long
since it last ran an op (``idle``: the forgotten notebook) and since it last ran out of
memory; per user of the pool (``accounts``), their weight and quotas whether or not they
have a session.
"""

from __future__ import annotations

import os
import time
from typing import Any

__all__ = ["build_status", "note_activity", "seen_by", "SHARE_WINDOW"]

#: The window of the measured share, seconds.
SHARE_WINDOW = 10.0


def build_status(door: Any) -> dict[str, Any]:
    now = time.monotonic()
    workers = list(door.hosts.workers.values())
    live = list(door.sessions.values())
    registry = door.accounts.registry
    snapshot = door.hosts.arbiter_snapshot()
    devices, users = [], []
    own = door.host   # (None across hosts)
    # grouped by device in one pass each (a pool across hosts has hundreds of devices)
    sessions_on: dict[str, list] = {}
    for s in live:
        sessions_on.setdefault(s.worker.device, []).append(s)
    info_of: dict[str, dict] = {}
    spares: dict[str, int] = {}
    for w in workers:
        if w.info and w.device not in info_of:
            info_of[w.device] = w.info
        if w.port is not None and w.session is None and not w.given_up:
            spares[w.device] = spares.get(w.device, 0) + 1
    shares = door.usage.shares(SHARE_WINDOW)
    waits = door.usage.waits(SHARE_WINDOW)
    for spec in door.devices:
        here = sessions_on.get(spec, [])
        host = door.hosts.of(spec)
        devices.append({
            "device": spec, "host": getattr(host, "name", None) or None,
            "info": info_of.get(spec, {}), "sessions": sum(not s.closing for s in here),
            "memory_used": sum(s.usage.get("memory") or 0 for s in here),
            "spares_ready": spares.get(spec, 0),
        })
        users.extend(_user_rows(spec, here, registry, snapshot.get(spec, {}).get("users", {}),
                                shares.get(spec, {}), waits.get(spec, {})))
    sessions = [{
        "session": s.sid, "user": s.user, "client": s.client, "label": s.label,
        "device": s.worker.device,
        "memory_used": s.usage.get("memory") or 0, "memory_limit": s.memory_limit,
        "memory_granted": s.grant, "arrays": s.usage.get("arrays") or 0,
        "ops": s.usage.get("ops") or 0, "device_seconds": s.usage.get("device_s") or 0.0,
        "swapped": s.usage.get("swapped") or 0, "swapped_host": s.usage.get("swapped_host") or 0,
        "swaps": s.usage.get("swaps_out") or 0,
        "swap_seconds": s.usage.get("swap_seconds") or 0.0,
        "parked": s.worker.session is not s,
        "idle": round(now - s.last_work, 3), "heartbeat": round(now - s.last_seen, 3),
        "oom_ago": None if s.oom_at is None else round(now - s.oom_at, 3),
        "age": round(time.time() - s.created, 3),
    } for s in live if not s.closing]   # (closed by its client: its worker is finishing)
    return {"address": door.address, "local_address": door.local_address, "policy": door.settings.policy,
            "users_mode": registry.mode, "devices": devices, "users": users,
            "accounts": _accounts(registry, sessions),
            "sessions": sessions, "ended": list(door.ended),
            "lease_timeout": door.settings.lease_timeout, "pid": os.getpid(),
            # how many workers may keep polling after a message, and for how long
            "spin": {"slots": own.spin_slots[1] if own is not None and own.spin_slots else 0,
                     "window_ms": door.settings.worker_spin_ms},
            "uptime": round(time.time() - door.started, 3),
            "hosts": door.cluster.status() if door.cluster is not None else None}


def _accounts(registry: Any, sessions: list[dict]) -> list[dict]:
    """Every user of the pool: the Lab's status item shows the weight and quota of a user
    who has no session yet from here (the ``users`` rows are only those with work)."""
    rows = []
    by_user: dict[str, list[dict]] = {}
    for s in sessions:
        by_user.setdefault(s["user"], []).append(s)
    for name, user in sorted(registry.users.items()):
        mine = by_user.get(name, [])
        ooms = [s["oom_ago"] for s in mine if s["oom_ago"] is not None]
        rows.append({"user": name, "weight": user.weight, "memory_quota": user.memory,
                     "sessions_quota": user.sessions, "sessions": len(mine),
                     "memory_used": sum(s["memory_used"] for s in mine),
                     "oom_ago": min(ooms) if ooms else None})
    return rows


def note_activity(session: Any, report: dict, now: float | None = None) -> None:
    """Before a worker's usage *report* is taken into *session*: it ran ops since the last
    (its idle time starts again), or an op ran out of memory (the Lab's warning)."""
    now = time.monotonic() if now is None else now
    if _count(report.get("ops")) > _count(session.usage.get("ops")):
        session.last_work = now
        idle = report.get("idle")   # (the worker's own count: a report sent late, or read
        if type(idle) in (int, float) and 0 <= idle < 1e9:   # late, does not restart it)
            session.last_work = now - idle
    if _count(report.get("oom")) > _count(session.usage.get("oom")):
        session.oom_at = now


def _count(value: object) -> int:
    return value if type(value) is int else 0


def seen_by(status: dict[str, Any], user: str) -> dict[str, Any]:
    """*status* as *user* is shown it: another user's session labels (a notebook's path
    names its directories) are blanked."""
    sessions = [s if s["user"] == user else {**s, "label": ""} for s in status["sessions"]]
    return {**status, "sessions": sessions}


def _user_rows(device: str, here: list, registry: Any, arbiter_users: dict,
               measured: dict[str, float], waited: dict[str, float]) -> list[dict]:
    names = sorted({s.user for s in here} | {u for u, v in measured.items() if v > 0})
    if not names:
        return []
    weights = {}
    for name in names:
        user = registry.get(name)
        weights[name] = user.weight if user is not None else 1.0
    active = [n for n in names if arbiter_users.get(n, {}).get("runnable")]
    pool = active or [n for n in names if any(s.user == n for s in here)] or names
    total = sum(weights[n] for n in pool)
    rows = []
    for name in names:
        mine = [s for s in here if s.user == name]
        user = registry.get(name)
        seen = arbiter_users.get(name, {})
        rows.append({
            "user": name, "device": device, "weight": weights[name],
            "target_share": weights[name] / total if name in pool and total else 0.0,
            "share": measured.get(name, 0.0),
            # the users' side: of the time its batches spent in the pool, the part they
            # waited for others' turns (None: no batch in the window)
            "waited": waited.get(name),
            "sessions": len(mine), "waiting": seen.get("waiting", 0),
            "holding": bool(seen.get("holding")),
            "memory_used": sum(s.usage.get("memory") or 0 for s in mine),
            "memory_quota": user.memory if user is not None else None,
            "memory_granted": sum(s.grant or 0 for s in mine) if user and user.memory else None,
        })
    return rows
