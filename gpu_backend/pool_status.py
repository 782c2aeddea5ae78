"""The pool's status as clients see it: devices, users and their shares, sessions.

Built by the front door for a ``status`` request (``%gpu status``, ``gpuwb
status``) and for an embedding process (``LocalPool.door.status()``, read from
another thread: hence copies of the tables the door's loop changes). Per user
and device: weight, *target* share (weight over the weights of the users with
work on that device; over all its users when none has), the share *measured*
over the last 10 s (of the device time used there), sessions waiting for the
device, memory against quota.
"""

from __future__ import annotations

import os
import time
from typing import Any

__all__ = ["build_status", "SHARE_WINDOW"]

#: The window of the measured share, seconds.
SHARE_WINDOW = 10.0


def build_status(door: Any) -> dict[str, Any]:
    now = time.monotonic()
    workers = list(door.workers.values())
    live = list(door.sessions.values())
    registry = door.accounts.registry
    snapshot = door.arbiter.snapshot if door.arbiter is not None else {}
    devices, users = [], []
    for spec in door.devices:
        here = [s for s in live if s.worker.device == spec]
        info = next((w.info for w in workers if w.device == spec and w.info), {})
        devices.append({
            "device": spec, "info": info, "sessions": sum(not s.closing for s in here),
            "memory_used": sum(s.usage.get("memory") or 0 for s in here),
            "spares_ready": sum(w.port is not None and w.session is None and w.device == spec
                                for w in workers),
        })
        users.extend(_user_rows(spec, here, registry, snapshot.get(spec, {}).get("users", {}),
                                door.usage.share(SHARE_WINDOW, device=spec)))
    sessions = [{
        "session": s.sid, "user": s.user, "client": s.client, "device": s.worker.device,
        "memory_used": s.usage.get("memory") or 0, "memory_limit": s.memory_limit,
        "memory_granted": s.grant, "arrays": s.usage.get("arrays") or 0,
        "ops": s.usage.get("ops") or 0, "device_seconds": s.usage.get("device_s") or 0.0,
        "idle": round(now - s.last_seen, 3), "age": round(time.time() - s.created, 3),
    } for s in live if not s.closing]   # (closed by its client: its worker is finishing)
    return {"address": door.address, "local_address": door.local_address, "policy": door.settings.policy,
            "users_mode": registry.mode, "devices": devices, "users": users,
            "sessions": sessions, "ended": list(door.ended),
            "lease_timeout": door.settings.lease_timeout, "pid": os.getpid(),
            # how many workers may keep polling after a message, and for how long
            "spin": {"slots": door.spin_slots[1] if door.spin_slots else 0,
                     "window_ms": door.settings.worker_spin_ms},
            "uptime": round(time.time() - door.started, 3)}


def _user_rows(device: str, here: list, registry: Any, arbiter_users: dict,
               measured: dict[str, float]) -> list[dict]:
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
            "sessions": len(mine), "waiting": seen.get("waiting", 0),
            "holding": bool(seen.get("holding")),
            "memory_used": sum(s.usage.get("memory") or 0 for s in mine),
            "memory_quota": user.memory if user is not None else None,
            "memory_granted": sum(s.grant or 0 for s in mine) if user and user.memory else None,
        })
    return rows
