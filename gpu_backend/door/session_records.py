"""What the front door keeps of each session: open (:class:`Session`), waiting for a worker
(:class:`PendingHello`), and ended (:class:`EndedSessions`).

An ended session leaves two traces: a summary in the pool's status (``ended``: the last 50,
for everyone who asks), and why it ended, for its own client's next heartbeat (the last
200, each kept with its key's SHA-256: the reason goes only to a client that holds the
key). Both come from :meth:`EndedSessions.add`, called once per session as it ends.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import time
from dataclasses import dataclass, field
from typing import Any, Iterator

from gpu_backend.accounting.users import User

__all__ = ["Session", "PendingHello", "EndedSessions", "UNKNOWN_NOTED"]

log = logging.getLogger("gpu_backend.door.frontdoor")

#: the most sessions the door notes in its log for a heartbeat it can answer only "not
#: alive, no reason" (:meth:`EndedSessions.note_unknown`): a client sending made-up ids is
#: noted no more than this
UNKNOWN_NOTED = 32


@dataclass
class Session:
    sid: str
    key: bytes
    user: str          # the authenticated user (docs/fair-share.md, "Users")
    worker: Any        # its pool_workers.Worker (or remote_host.RemoteWorker)
    memory_limit: int
    client: str = ""   # what the client calls itself (user@host): a label, not an identity
    grant: int | None = None   # device memory granted under the user's quota (None: no quota)
    closing: bool = False      # the client closed it; the worker is finishing
    label: str = ""    # what opened it (a notebook's path, a script): shown to its user
    #: the sessions its hello named in ``apart_from`` (its client's others, on other
    #: devices): moves keep it apart from them (placement.devices_kept_apart)
    apart: tuple = ()
    last_seen: float = field(default_factory=time.monotonic)
    last_work: float = field(default_factory=time.monotonic)   # its last op (pool_status)
    oom_at: float | None = None   # when an op of it last ran out of memory
    created: float = field(default_factory=time.time)
    usage: dict = field(default_factory=dict)
    #: bytes the door told it to swap out and it has not yet said it did (the swap cap)
    swap_allowed: int = 0
    #: of them, bytes it may keep in its host's memory (the host budget, door/swap_broker.py)
    swap_host_allowed: int = 0
    #: its last swap order left it on its device (its worker had worked since the pool
    #: judged it idle, or the swap failed): nothing of it was freed for the room asked
    swap_busy: bool = False
    #: a move under way (door/moves.py: its Move), how often it has moved, the last batch
    #: its previous worker ran, the usage its earlier workers counted, why a move left it
    moving: Any = None
    moves: int = 0
    ran: int = 0
    carried: dict = field(default_factory=dict)
    move_refused: str | None = None
    moved_how: str | None = None     # (its last move: "lent" within a host, or "files")
    park_refused_at: float | None = None


@dataclass
class PendingHello:
    """A hello waiting for a worker: it counts towards its user's sessions and holds its grant."""
    ident: bytes
    account: User
    client: str
    memory_limit: int
    grant: int | None
    device: str
    since: float = field(default_factory=time.monotonic)
    closing: bool = False
    label: str = ""
    apart: tuple = ()   # (the session ids its apart_from named)

    @property
    def user(self) -> str:
        return self.account.name


class EndedSessions:
    """The last *shown* ended sessions' summaries (iterate: ``EndedSession`` rows, oldest
    first), and why each of the last *kept* ended."""

    def __init__(self, shown: int = 50, kept: int = 200) -> None:
        self._shown, self._kept = shown, kept
        self._summaries: list[dict] = []
        self._reasons: dict[str, tuple[bytes, str]] = {}   # session id -> (key's SHA-256, reason)
        self._unknown: set[str] = set()   # ids noted by note_unknown

    def add(self, session: Session, reason: str) -> None:
        self._reasons[session.sid] = (hashlib.sha256(session.key).digest(), reason)
        while len(self._reasons) > self._kept:
            del self._reasons[next(iter(self._reasons))]
        summary = {
            "session": session.sid, "user": session.user, "device": session.worker.device,
            "ops": session.usage.get("ops") or 0, "memory_used": session.usage.get("memory") or 0,
            "age": round(time.time() - session.created, 3), "reason": reason}
        # (replaced whole, never changed in place: a status may be read from another thread)
        self._summaries = [*self._summaries[1 - self._shown:], summary]

    def reason_for(self, sid: Any, key: Any) -> str | None:
        """Why session *sid* ended, to a client that proves its *key* (both untrusted)."""
        known = self._reasons.get(sid) if isinstance(sid, str) else None
        if known is None or not isinstance(key, bytes) or \
                not hmac.compare_digest(hashlib.sha256(key).digest(), known[0]):
            return None
        return known[1]

    def note_unknown(self, sid: Any, held: bool) -> None:
        """A heartbeat named session *sid*, which the pool ended with no reason it may tell
        (*held*: the pool holds it, under another key; else it neither holds it nor knows
        its end): its client hears "the pool ended this session" with no reason, so the
        pool's log says which it was, once a session, for at most UNKNOWN_NOTED. (Fairness
        runs 86 and 89 lost a session so, with nothing in the pool's log to say why.)"""
        if type(sid) is not str or sid in self._unknown or len(self._unknown) >= UNKNOWN_NOTED:
            return
        self._unknown.add(sid)
        log.warning("a heartbeat for session %.40r, which this pool %s, was answered 'not "
                    "alive'", sid, "holds under another key" if held else
                    "neither holds nor knows to have ended" if sid not in self._reasons else
                    "ended, under another key")

    def __iter__(self) -> Iterator[dict]:
        return iter(self._summaries)

    def __len__(self) -> int:
        return len(self._summaries)
