"""Which sessions go out to swap when a device's memory is full (issue 52).

A session whose allocation fails for lack of *device* memory (never for lack of its quota)
asks the front door for room. The door picks, on the same device, the sessions that hold
memory and have been idle longest — at least ``PRESSURE_IDLE`` seconds, so never one with
ops in flight or in the middle of its loop — until what they hold covers the need; tells
each to swap out (``swap``; its worker does it at its serving loop, between batches) and
answers the asker once they all have (``swapped``), or after ``SWAP_WAIT``.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

__all__ = ["PRESSURE_IDLE", "SWAP_WAIT", "swap_candidates"]

#: the least idle time of a session swapped out for another's memory (seconds)
PRESSURE_IDLE = 1.0
#: how long a session that asked for room waits for the swap-outs (10 GiB take ~1.5 s)
SWAP_WAIT = 30.0


def swap_candidates(sessions: Iterable[Any], asker: Any, want: int,
                    now: float | None = None) -> list[Any]:
    """The sessions to swap out for *asker*: on its device, open, holding memory, not
    swapped, idle ≥ PRESSURE_IDLE, least recently active first, until they hold *want*
    bytes (all that qualify when *want* is 0 or more than they hold)."""
    now = time.monotonic() if now is None else now
    device = asker.worker.device
    idle = sorted((s for s in sessions
                   if s is not asker and not s.closing and s.worker.device == device
                   and (s.usage.get("memory") or 0) > 0 and not s.usage.get("swapped")
                   and now - s.last_work >= PRESSURE_IDLE),
                  key=lambda s: s.last_work)
    chosen, held = [], 0
    for session in idle:
        chosen.append(session)
        held += session.usage.get("memory") or 0
        if want and held >= want:
            break
    return chosen
