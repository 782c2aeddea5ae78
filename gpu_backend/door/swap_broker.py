"""The front door's swap decisions (issue 52, docs/swap.md): which session goes out to swap,
idle or for another's memory, within each user's swap cap.

A worker idle for the pool's ``swap_idle`` proposes its swap-out (``swap_due``); a worker
whose allocation found the device full asks for room (``room``). The broker tells sessions
to go (``swap``) only where their user's cap (``swap_cap``) has room for what they hold,
counting what each session has been let go and has not yet reported (its worker's
``swapped``), and answers a room request (``roomed``) once the sessions asked have gone, or
after SWAP_WAIT, through the door's reclaims' wait.
"""

from __future__ import annotations

import logging
from typing import Any

from gpu_backend.door.swap_pressure import SWAP_WAIT, swap_candidates

__all__ = ["SwapBroker"]

log = logging.getLogger("gpu_backend.door.frontdoor")


class SwapBroker:
    """The door's part that decides swaps: the pool's *settings* (``swap_cap``), its open
    *sessions* (by id: read) and its *reclaims* (a room request waits there)."""

    def __init__(self, settings: Any, sessions: dict, reclaims: Any) -> None:
        self.settings, self.sessions, self.reclaims = settings, sessions, reclaims

    def room_of(self, user: str) -> int | None:
        """Bytes *user* may still swap out (None: no cap): the cap less what their sessions
        have swapped and have been let go meanwhile."""
        cap = self.settings.swap_cap
        if cap is None:
            return None
        held = sum((s.usage.get("swapped") or 0) + s.swap_allowed
                   for s in self.sessions.values() if s.user == user)
        return cap - held

    def let_go(self, session: Any, nbytes: int) -> bool:
        """Tell *session* to swap out its *nbytes* if its user's cap has room; whether it
        was told (an idle session's proposal, or one chosen for another's memory)."""
        room = self.room_of(session.user)
        if room is not None and nbytes > room:
            log.info("session %s stays on its device: user %s's swap cap (%d bytes) is reached",
                     session.sid, session.user, self.settings.swap_cap)
            return False
        if not session.worker.tell({"t": "swap"}):
            return False
        session.swap_allowed = nbytes
        return True

    def swapped(self, session: Any, msg: dict) -> None:
        """Its worker says it went (or why not): what it holds is in its reports now."""
        session.swap_allowed = 0
        if isinstance(msg.get("error"), str):   # (its arrays stayed on the device)
            log.warning("session %s could not be swapped out: %s", session.sid, msg["error"][:200])
        else:
            log.info("session %s swapped out: %d bytes in %.3f s", session.sid,
                     int(msg.get("bytes") or 0), float(msg.get("seconds") or 0.0))

    def make_room(self, worker: Any, want: int) -> None:
        """*worker*'s allocation found its device's memory full: swap the device's idle
        sessions out within their users' caps (swap_pressure.py), then tell it how many
        bytes they held."""
        session = worker.session
        memory = lambda s: s.usage.get("memory") or 0   # noqa: E731
        fits = [s for s in self.sessions.values()
                if (room := self.room_of(s.user)) is None or memory(s) <= room]
        chosen = [s for s in swap_candidates(fits, session, want) if self.let_go(s, memory(s))]
        if not chosen:
            log.info("device %s is full and no session of it can be swapped out (session %s "
                     "asked for %d bytes)", worker.device, session.sid, want)
            worker.tell({"t": "roomed", "freed": 0})
            return
        log.info("device %s is full: swapping out %d idle session(s) for session %s",
                 worker.device, len(chosen), session.sid)
        freed = sum(memory(s) for s in chosen)
        self.reclaims.wait({s.worker.wid for s in chosen},
                           lambda: worker.tell({"t": "roomed", "freed": freed}), seconds=SWAP_WAIT)
