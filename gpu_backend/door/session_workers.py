"""Which worker serves a session, and where its client finds it: the front door's part of
assigning a worker (a new session's, or a moved one's: door/moves.py), of letting a parked
session's worker go, and of answering a client's ``where`` (kernelproxy/relink.py).

A part of :class:`~gpu_backend.door.frontdoor.FrontDoor` (which it is mixed into), kept
apart so that the loop's module stays the loop; it uses the door's tables (``sessions``,
``hosts``, ``spares``, ``accounts``, ``settings``, ``moves``, ``ended``) and replies.
"""

from __future__ import annotations

from typing import Any

from gpu_backend.door.session_records import Session
from gpu_backend.hosts.pool_workers import Worker
from gpu_backend.multihost.remote_host import RemoteWorker
from gpu_backend.protocol.errors import SessionLostError
from gpu_backend.worker.grants import grant_step

__all__ = ["SessionWorkers", "MAX_WHERE_WAITING"]

#: How many ``where`` requests may wait for one session's move (its client asks one at a
#: time, asking again every few seconds on a new socket: kernelproxy/relink.py; the oldest
#: go first).
MAX_WHERE_WAITING = 64


class SessionWorkers:
    """The front door's methods that bind sessions and workers (see the module)."""

    def detach_worker(self, session: Session) -> None:
        """*session*'s worker has parked it and is ending (moves.py): it no longer serves
        the session, and its exit no longer ends it."""
        worker = session.worker
        arbiter = self.hosts.arbiter_of(worker.device)
        if arbiter is not None:
            arbiter.detach(worker.lease_id)
        worker.session = None
        worker.given_up = True   # (no spare: it is ending, and must serve nobody else)

    def reattach_worker(self, session: Session, worker: Worker) -> None:
        """*worker*, which lent *session* for a move that failed (moves.py), serves it
        again: it still holds every array (its adopter, if any, is detached first)."""
        if session.worker is not worker:
            self.detach_worker(session)
        worker.given_up = False
        self._attach(session, worker)

    def _attach(self, session: Session, worker: Worker, account: Any = None) -> Any:
        """*worker* and *session* each other's; the device's arbiter told (the user's
        weight). The user's account."""
        account = account or self.accounts.registry.get(session.user)
        session.worker, worker.session = worker, session
        self.spares.changed()
        arbiter = self.hosts.arbiter_of(worker.device)
        if arbiter is not None:
            arbiter.attach(worker.lease_id, worker.device, session.sid, session.user,
                           account.weight if account is not None else 1.0)
        return account

    def assign_worker(self, session: Session, worker: Worker, account: Any = None,
                      adopt: str | bytes | None = None, adopt_from: str | None = None) -> None:
        """*worker* serves *session* from now on: a new session's, or (*adopt*: the manifest
        its last worker parked or lent it in, a path or its bytes; *adopt_from*: where that
        worker streams its arrays from) one moved here (moves.py)."""
        account = self._attach(session, worker, account)
        quota = account.memory if account is not None else None
        worker.tell({
            "t": "assign", "session": session.sid, "user": session.user, "key": session.key,
            "memory_limit": session.memory_limit, "grant": session.grant,
            "grant_step": grant_step(quota) if quota else None,
            "quota": quota, "swap_idle": self.settings.swap_idle,
            "device_memory": self.settings.numpy_device_memory,
            "device_turns": self.settings.numpy_device_turns,
            "swap_dir": str(self.settings.swap_dir) if self.settings.swap_dir else None,
            **({"adopt": adopt} if adopt else {}),
            **({"adopt_from": adopt_from} if adopt_from else {})})

    def host_address(self, worker: Worker) -> str:
        """Where other hosts reach *worker*'s host: an agent's address, or the door's own
        host for a worker of the door's host."""
        if isinstance(worker, RemoteWorker):
            return worker.host.address
        return self.settings.host

    def _worker_fields(self, session: Session) -> dict:
        """Where the client finds *session*'s worker (a hello's reply, a ``where``'s)."""
        worker = session.worker
        fields = {"worker_port": worker.port, "worker_ipc": worker.ipc, "device": worker.info,
                  "runtime": worker.runtime}
        if isinstance(worker, RemoteWorker):   # (on another host: its address)
            fields["worker_host"] = worker.host.address
        return fields

    def _where(self, ident: bytes, msg: dict, source: str | None) -> None:
        """A client asks where its session's worker is (its link ended, or its heartbeat
        said the session moved): answered once any move under way is done (moves.py)."""
        session = self._session(msg)
        if session is None:
            why = self.ended.reason_for(msg.get("session"), msg.get("key"))
            raise SessionLostError(f"the pool ended this session: {why}" if why else
                                   "the pool has no such session (it ended, or the pool restarted)")
        if session.moving is not None:
            waiting = session.moving.waiting
            if ident not in waiting:   # (its client asks again every few seconds, each time
                if len(waiting) >= MAX_WHERE_WAITING:   # on a new socket: the oldest asks,
                    del waiting[0]                      # given up by now, are dropped)
                waiting.append(ident)
            self.moves.called_back(session)   # (parked until asked for: asked for now)
            return
        self.reply_where(ident, session)

    def reply_where(self, ident: bytes, session: Session) -> None:
        if self.sessions.get(session.sid) is not session:
            why = self.ended.reason_for(session.sid, session.key) or "it ended"
            self._error(ident, SessionLostError(f"the pool ended this session: {why}"))
            return
        self._reply(ident, {"ok": True, **self._worker_fields(session), "moves": session.moves,
                            "ran": session.ran, "refused": session.move_refused})
