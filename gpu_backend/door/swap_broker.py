"""The front door's swap decisions (issue 52, docs/swap.md): which session goes out to swap,
idle or for another's memory, within each user's swap cap; and where to, host memory within
its host's budget or the swap directory.

A worker idle for the pool's ``swap_idle`` proposes its swap-out (``swap_due``); a worker
whose allocation found the device full asks for room (``room``). The broker tells sessions
to go (``swap``) only where their user's cap (``swap_cap``) has room for what they hold,
counting what each session has been let go and has not yet reported (its worker's
``swapped``), and answers a room request (``roomed``) once the sessions asked have gone, or
after SWAP_WAIT, through the door's reclaims' wait.

The tier: each ``swap`` says how many bytes the session may keep in its host's memory
(``host``), what is left of the host's budget (``swap_host_memory``; by default a quarter of
the memory the host's workers report) after what its swapped sessions hold there and what
sessions let go meanwhile may take; the worker puts its allocations there while they fit and
the rest in its file. Nothing is counted but what the open sessions' own reports say
(``swapped_host``, and each one's ``swap_host_allowed`` until its ``swapped``), so a session
that comes back, ends or loses its worker gives its share back by being what it is: no
counter to leak.
"""

from __future__ import annotations

import logging
import time
from typing import Any, Callable

from gpu_backend.door.swap_pressure import (PRESSURE_IDLE, ROOM_PATIENCE, SWAP_WAIT, soon_idle,
                                           swap_candidates)

__all__ = ["HOST_SHARE", "SwapBroker"]

#: the default host budget is the host's memory divided by this
HOST_SHARE = 4

log = logging.getLogger("gpu_backend.door.frontdoor")


class SwapBroker:
    """The door's part that decides swaps: the pool's *settings* (``swap_cap``,
    ``swap_host_memory``), its open *sessions* (by id: read), its *reclaims* (a room request
    waits there), *host_of* (a device's host: the budget is per host) and *leaving* (a
    device's workers about to end and free what they hold, by id, with those bytes: a moved
    session's lender, door/moves.py)."""

    def __init__(self, settings: Any, sessions: dict, reclaims: Any,
                 host_of: Callable[[str], Any] = lambda device: None,
                 leaving: Callable[[str], dict[str, int]] = lambda device: {}) -> None:
        self.settings, self.sessions, self.reclaims = settings, sessions, reclaims
        #: allocations waiting for a session of their device to be idle enough to swap out:
        #: (when to ask again, the worker, the bytes it wants, when it first asked)
        self.waiting_rooms: list[tuple[float, Any, int, float]] = []
        self.host_of = host_of
        self.leaving = leaving

    def retry_rooms(self, now: float | None = None) -> None:
        """Ask again for each session waiting for another to become idle enough (its
        worker still has it: its allocation still waits)."""
        now = time.monotonic() if now is None else now
        due = [w for w in self.waiting_rooms if w[0] <= now]
        self.waiting_rooms = [w for w in self.waiting_rooms if w[0] > now]
        for _due, worker, want, since in due:
            if worker.session is not None:
                self.make_room(worker, want, since)

    def host_budget(self, session: Any) -> int:
        """Bytes of host memory the swapped sessions of *session*'s host may hold: the
        pool's setting, or a quarter of what the host's workers report it has."""
        setting = getattr(self.settings, "swap_host_memory", None)
        if setting is not None:
            return int(setting)
        memory = getattr(session.worker, "host_memory", 0)
        return int(memory) // HOST_SHARE if type(memory) is int and memory > 0 else 0

    def host_held(self, session: Any) -> int:
        """Bytes of host memory the swapped sessions of *session*'s host hold (their
        reports) or may take (let go, not yet reported)."""
        host = self.host_of(session.worker.device)
        # (a session let go is never swapped already, and its worker reports what it put
        # where just before it says ``swapped``: between the two the larger is the one)
        return sum(max(s.usage.get("swapped_host") or 0, s.swap_host_allowed)
                   for s in self.sessions.values() if self.host_of(s.worker.device) is host)

    def host_room(self, session: Any) -> int:
        """Bytes of its host's budget *session* may swap into host memory now."""
        return max(0, self.host_budget(session) - self.host_held(session))

    def room_of(self, user: str) -> int | None:
        """Bytes *user* may still swap out (None: no cap): the cap less what their sessions
        have swapped and have been let go meanwhile."""
        cap = self.settings.swap_cap
        if cap is None:
            return None
        held = sum(max(s.usage.get("swapped") or 0, s.swap_allowed)   # (as host_held)
                   for s in self.sessions.values() if s.user == user)
        return cap - held

    def let_go(self, session: Any, nbytes: int, idle: float | None = None) -> bool:
        """Tell *session* to swap out its *nbytes* if its user's cap has room; whether it
        was told (an idle session's proposal, or one chosen for another's memory: then
        *idle*, the idle time its reports showed, which its worker checks against its own
        clock, staying where it has worked since: ``swapped`` with ``busy``). A session
        told already, whose ``swapped`` has not come, is going: it is not told again (a second
        order's host share, worked out against its own first reservation, would be smaller
        than what its worker is putting in host memory, and the budget would be overrun)."""
        if session.swap_allowed or session.swap_host_allowed:
            return True
        room = self.room_of(session.user)
        if room is not None and nbytes > room:
            log.info("session %s stays on its device: user %s's swap cap (%d bytes) is reached",
                     session.sid, session.user, self.settings.swap_cap)
            return False
        host = min(max(0, nbytes), self.host_room(session))
        order = {"t": "swap", "host": host}
        if idle is not None:
            order["idle"] = idle
        if not session.worker.tell(order):
            return False
        session.swap_allowed, session.swap_host_allowed = nbytes, host
        session.swap_busy = False
        return True

    def swapped(self, session: Any, msg: dict) -> None:
        """Its worker says it went (or why not): what it holds is in its reports now."""
        session.swap_allowed = session.swap_host_allowed = 0
        if isinstance(msg.get("error"), str):   # (its arrays stayed on the device)
            log.warning("session %s could not be swapped out: %s", session.sid, msg["error"][:200])
            session.swap_busy = True   # (nothing freed: what it held stays)
            return
        if type(msg.get("busy")) in (int, float):   # (asked as idle, it had worked since)
            log.info("session %s stays on its device: its last batch was %.3f s ago",
                     session.sid, float(msg["busy"]))
            session.swap_busy = True
            return
        # (its usage report, which counts what it swapped where, came just before this)
        nbytes = msg.get("bytes") if type(msg.get("bytes")) is int else 0
        host = msg.get("host") if type(msg.get("host")) is int else 0
        log.info("session %s swapped out: %d bytes (%d in host memory) in %.3f s", session.sid,
                 nbytes, host, float(msg.get("seconds") or 0.0))

    def make_room(self, worker: Any, want: int, since: float | None = None) -> None:
        """*worker*'s allocation found its device's memory full: swap the device's idle
        sessions out within their users' caps (swap_pressure.py), then tell it how many
        bytes they held; where none is idle enough yet but one will be soon, ask again
        then (:meth:`retry_rooms`), up to ROOM_PATIENCE since the first ask (*since*).
        Where workers of the device are ending that hold what it wants (a moved session's
        old worker, ``leaving``), or where nothing else can make room, it waits for them
        instead (nobody is swapped out for memory about to come free)."""
        session = worker.session
        now = time.monotonic()
        since = now if since is None else since
        going = self.leaving(worker.device)
        if going and sum(going.values()) >= want:   # (what a moved session's old worker
            self._wait_for(worker, going)          # frees as it ends: nobody swapped for it)
            return
        memory = lambda s: s.usage.get("memory") or 0   # noqa: E731
        fits = [s for s in self.sessions.values()
                if (room := self.room_of(s.user)) is None or memory(s) <= room]
        chosen = [s for s in swap_candidates(fits, session, want)
                  if self.let_go(s, memory(s), PRESSURE_IDLE)]
        soon = soon_idle(fits, session, now) if not chosen else None
        if soon is not None and now + soon - since <= ROOM_PATIENCE:
            self.waiting_rooms.append((now + soon, worker, want, since))
            return
        if not chosen:
            if going:   # (less than it wants, but all there is to wait for)
                self._wait_for(worker, going)
                return
            log.info("device %s is full and no session of it can be swapped out (session %s "
                     "asked for %d bytes)", worker.device, session.sid, want)
            worker.tell({"t": "roomed", "freed": 0})
            return
        log.info("device %s is full: swapping out %d idle session(s) for session %s",
                 worker.device, len(chosen), session.sid)
        held = {s.sid: memory(s) for s in chosen}   # (before their reports say it went)
        self.reclaims.wait({s.worker.wid for s in chosen},
                           lambda: worker.tell({"t": "roomed", "freed": sum(
                               held[s.sid] for s in chosen if not s.swap_busy)}),
                           seconds=SWAP_WAIT)

    def _wait_for(self, worker: Any, going: dict[str, int]) -> None:
        """*worker*'s room request waits for the workers *going* to end (SWAP_WAIT at most)."""
        log.info("device %s is full: session %s waits for %d worker(s) ending there",
                 worker.device, worker.session.sid, len(going))
        self.reclaims.wait(set(going), lambda: self._roomed_by(worker, going), seconds=SWAP_WAIT)

    def _roomed_by(self, worker: Any, going: dict[str, int]) -> None:
        """The wait for the ending workers *going* is over: *worker* is told the bytes of
        those that have ended (its allocation is tried again if any), none if all still run."""
        still = self.leaving(worker.device)
        freed = sum(max(1, held) for wid, held in going.items() if wid not in still)
        worker.tell({"t": "roomed", "freed": freed})
