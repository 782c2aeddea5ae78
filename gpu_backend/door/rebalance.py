"""Idle sessions moved on the pool's own initiative to even out its devices (issue 52:
"placement may rebalance by moving an idle session").

Why: placement counts sessions at each hello (door/placement.py), but sessions end in any
order, so one device of a host can end up serving several sessions while another serves
none, and every session of the first shares one GPU's time and memory while the second
idles. A move within a host lends the arrays and copies them device to device (0.3 s for a
10 GiB session on an H200 host, docs/swap.md), which a session idle for minutes does not
notice, so the pool evens its devices out, one move at a time:

- looked at every :data:`LOOK` seconds, per host over its devices not draining, then (no
  host needing it) over the whole pool's: a move between hosts streams the arrays;
- only where the most loaded device holds at least two sessions more than the least
  loaded (placement's count: open sessions, moves on their way counted where they go), so
  that a move makes the pool more even and never just trades places;
- the session moved is the longest idle of the most loaded device: idle (no op) for at
  least ``--rebalance-idle`` seconds, in device memory (a swapped one holds none there, and
  returns to the least-loaded device by itself once parked), not moving or closing, not
  refused a move since it last worked, and its user has no other session on the target
  (a client holding several devices keeps them apart);
- to that least loaded device (a lent move: never through the disk).
"""

from __future__ import annotations

import time
from typing import Any

from gpu_backend.door.placement import device_loads, devices_kept_apart

__all__ = ["Rebalancer", "LOOK"]

#: seconds between two looks at the devices' loads
LOOK = 2.0


def _candidate(sessions: list, device: str, target: str, idle: float, now: float) -> Any:
    """The longest-idle session of *device* that may move to *target*, or None."""
    users_there = {s.user for s in sessions if s.worker.device == target and not s.closing}
    ready = [s for s in sessions
             if s.worker.device == device and s.moving is None and not s.closing
             and s.worker.session is s and not s.usage.get("swapped")
             and now - s.last_work >= idle and s.park_refused_at != s.last_work
             and s.user not in users_there and target not in devices_kept_apart(sessions, s)]
    return min(ready, key=lambda s: s.last_work, default=None)


class Rebalancer:
    """The front door's rebalancing (see the module): :meth:`maybe` each turn of its loop."""

    def __init__(self, door: Any, idle: float) -> None:
        self.door = door
        self.idle = idle
        self.started = 0   # moves started so far
        self._next_look = 0.0

    def maybe(self, now: float | None = None) -> str | None:
        """Start at most one move that evens out a host's devices, at most every LOOK
        seconds; the moved session's id, or None."""
        now = time.monotonic() if now is None else now
        if now < self._next_look:
            return None
        self._next_look = now + LOOK
        door = self.door
        if any(s.moving.device is not None for s in door.moves.moving.values()):
            return None   # (one at a time: what is moving changes the counts)
        sessions = list(door.sessions.values())
        load = device_loads(sessions)
        by_host: dict[int, list[str]] = {}
        for device in door.devices:   # (nor one whose workers fail to start: spares.py)
            if device not in door.moves.draining and door.spares.resting(device) is None:
                by_host.setdefault(id(door.hosts.of(device)), []).append(device)
        # (within a host first, device to device; then across the pool's hosts, streamed)
        groups = [*by_host.values(), [d for devices in by_host.values() for d in devices]]
        for devices in groups:
            if len(devices) < 2:
                continue
            fullest, emptiest = max(devices, key=load), min(devices, key=load)
            if load(fullest)[0] - load(emptiest)[0] < 2:
                continue
            session = _candidate(sessions, fullest, emptiest, self.idle, now)
            if session is None:
                continue
            why = door.moves.start(session, emptiest, f"rebalanced: idle {now - session.last_work:.0f} s "
                                                      f"on {fullest}, a fuller device")
            if why is None:
                self.started += 1
                return session.sid
            session.park_refused_at = session.last_work   # (not tried again until it works)
        return None
