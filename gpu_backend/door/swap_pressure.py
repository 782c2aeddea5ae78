"""Which sessions go out to swap when a device's memory is full (issue 52).

A session whose allocation fails for lack of *device* memory (never for lack of its quota)
asks the front door for room. The door picks, on the same device, the sessions that hold
memory and have been idle longest — at least ``PRESSURE_IDLE`` seconds, so never one with
ops in flight or in the middle of its loop — until what they hold covers the need; tells
each to swap out (``swap``; its worker does it at its serving loop, between batches) and
answers the asker once they all have (``swapped``), or after ``SWAP_WAIT``. Where none is
idle that long yet but one holding memory there would be soon (users taking turns: the last
one's op ended a moment ago), the asker waits for it (:func:`soon_idle`), up to
``ROOM_PATIENCE`` in all, rather than fail at once; one that keeps working is never taken.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

__all__ = ["PRESSURE_IDLE", "SWAP_WAIT", "ROOM_PATIENCE", "swap_candidates", "soon_idle"]

#: the least idle time of a session swapped out for another's memory (seconds)
PRESSURE_IDLE = 1.0
#: how long a session that asked for room waits for the swap-outs (10 GiB take ~1.5 s)
SWAP_WAIT = 30.0
#: how long a session that asked for room may wait for another to become idle enough
ROOM_PATIENCE = 10.0


def _holding(sessions: Iterable[Any], asker: Any) -> list[Any]:
    """The sessions of *asker*'s device that hold device memory (open, not swapped)."""
    device = asker.worker.device
    return [s for s in sessions
            if s is not asker and not s.closing and s.worker.device == device
            and s.moving is None   # (a session moving is lent or parked: not swappable)
            and (s.usage.get("memory") or 0) > 0 and not s.usage.get("swapped")]


def soon_idle(sessions: Iterable[Any], asker: Any, now: float | None = None) -> float | None:
    """Seconds until the first session of *asker*'s device that holds memory, or has worked
    too lately for its worker's report of it to have come, has been idle PRESSURE_IDLE (if
    it does no more work meanwhile); None where there is none."""
    now = time.monotonic() if now is None else now
    device = asker.worker.device
    waits = [PRESSURE_IDLE - (now - s.last_work) for s in sessions
             if s is not asker and not s.closing and s.worker.device == device
             and s.moving is None and not s.usage.get("swapped")
             and ((s.usage.get("memory") or 0) > 0 or now - s.last_work < PRESSURE_IDLE)]
    return max(0.0, min(waits)) if waits else None


def swap_candidates(sessions: Iterable[Any], asker: Any, want: int,
                    now: float | None = None) -> list[Any]:
    """The sessions to swap out for *asker*: on its device, open, holding memory, not
    swapped, idle ≥ PRESSURE_IDLE, least recently active first, until they hold *want*
    bytes (all that qualify when *want* is 0 or more than they hold)."""
    now = time.monotonic() if now is None else now
    idle = sorted((s for s in _holding(sessions, asker) if now - s.last_work >= PRESSURE_IDLE),
                  key=lambda s: s.last_work)
    chosen, held = [], 0
    for session in idle:
        chosen.append(session)
        held += session.usage.get("memory") or 0
        if want and held >= want:
            break
    return chosen
