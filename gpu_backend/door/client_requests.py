"""The front door's answers to its clients' requests (mixed into
:class:`~gpu_backend.door.frontdoor.FrontDoor`): each request read from the clients'
socket (a map of one frame; anything else is refused with a clear error, and the door
keeps serving everyone else), handed to its handler by its type (``hello``, ``hb``,
``status``, ``close``, ``end``, ``ping``, ``where``), the ones that need a user's token
after the gate has checked it (auth_gate.py), and every refusal answered, a throttled
sign-in's held in the tarpit.

What it uses of the door: ``clients``, ``auth``, ``held``, ``sessions``, ``ended``,
``moves``, ``usage``, ``samples``, ``devices``, ``request_counts`` and ``error_counts``,
and its methods ``_hello_as`` (a session placed and opened), ``_where`` (session_workers.py),
``_end`` and ``_end_and_stop``.
"""

from __future__ import annotations

import hmac
import time
from typing import Any

import zmq

from gpu_backend.accounting.users import User
from gpu_backend.door.pool_status import seen_by
from gpu_backend.door.session_end import own_session
from gpu_backend.door.session_records import Session
from gpu_backend.protocol import PROTOCOL_VERSION
from gpu_backend.protocol.codec import packb, unpackb
from gpu_backend.protocol.errors import ProtocolError, VersionMismatchError, error_name

__all__ = ["ClientRequests", "MalformedLog"]


class MalformedLog:
    """The front door's refusals of malformed requests (a ``ProtocolError``: undecodable,
    not a map, of no known type) since the last line in the log: one line at most every
    ``every`` seconds, their count and the first's text, whatever their number (a flood
    fills no log). A client told of one refusal kept it to itself: a heartbeat refused so
    was once read as a session lost, with nothing on the pool's side
    (docs/fair-share.md, "The lost session found")."""

    def __init__(self, clock: Any = time.monotonic, every: float = 10.0) -> None:
        self.clock, self.every = clock, every
        self.count, self.first = 0, ""
        self._logged_at = clock()

    def note(self, exc: BaseException) -> None:
        if not self.count:
            self.first = repr(str(exc)[:120])
        self.count += 1

    def line(self) -> str | None:
        """The line due now, if any (then counted afresh)."""
        now = self.clock()
        if not self.count or now - self._logged_at < self.every:
            return None
        line = (f"refused {self.count} malformed requests in the last {now - self._logged_at:.0f} s "
                f"(the first: {self.first})")
        self.count, self._logged_at = 0, now
        return line


class ClientRequests:
    """The clients' requests, read and answered (the module's doc)."""

    def _reply(self, ident: bytes, msg: dict) -> None:
        self.clients.send_multipart([ident, packb(msg)])

    def _error(self, ident: bytes, exc: BaseException) -> None:
        name = error_name(exc)
        self.error_counts[name] = self.error_counts.get(name, 0) + 1
        if isinstance(exc, ProtocolError):   # (said in the log: MalformedLog)
            self.malformed.note(exc)
        reply: dict = {"ok": False, "error": [name, str(exc)]}
        retry_after = getattr(exc, "retry_after", None)
        if isinstance(retry_after, (int, float)):   # a throttled sign-in: the tarpit holds it
            if self.held.hold(ident, reply, float(retry_after)):
                return
            reply["retry_after"] = float(retry_after)
        self._reply(ident, reply)

    def _signed_in(self, ident: bytes, msg: dict, source: str | None, then: Any) -> None:
        """Go on with ``then(ident, msg, user)`` once *msg*'s token is checked: at once when
        the gate can tell, else when its threads have hashed it (``_on_signed_in``)."""
        checked = self.auth.check(msg.get("token"), source, (ident, msg, then))
        if isinstance(checked, User):
            then(ident, msg, checked)

    def _on_signed_in(self) -> None:
        """Checks the gate's threads have finished: each request goes on, or is refused."""
        for pending in self.auth.finished():
            ident, msg, then = pending.context
            try:
                if isinstance(pending.outcome, User):
                    then(ident, msg, pending.outcome)
                else:
                    raise pending.outcome
            except Exception as exc:  # as for any request: answer, keep serving
                self._error(ident, exc)

    def _on_client(self) -> None:
        frames = self.clients.recv_multipart(copy=False)
        ident = frames[0].bytes
        try:
            if len(frames) != 2:
                raise ProtocolError("front-door messages have exactly one frame")
            source = _source_of(frames[1])
            try:
                msg = unpackb(frames[1].bytes)
            except ValueError as exc:  # msgpack's errors and CodecError
                raise ProtocolError(f"undecodable message: {exc}") from None
            if not isinstance(msg, dict):
                raise ProtocolError("front-door messages are maps")
            kind = msg.get("t")
            handler = {"hello": self._hello, "hb": self._heartbeat, "status": self._status,
                       "close": self._close, "end": self._end_request,
                       "ping": self._ping, "where": self._where}.get(kind) if isinstance(kind, str) else None
            if handler is None:
                raise ProtocolError(f"unknown message type {kind!r:.40}")
            self.request_counts[kind] = self.request_counts.get(kind, 0) + 1
            handler(ident, msg, source)
        except Exception as exc:  # anything a client sends: answer, keep serving
            self._error(ident, exc)

    def _hello(self, ident: bytes, msg: dict, source: str | None) -> None:
        version = msg.get("v")
        if type(version) is not int or version != PROTOCOL_VERSION:  # not True, not 1.0
            raise VersionMismatchError(
                f"client speaks protocol version {version!r}, this pool speaks {PROTOCOL_VERSION}; "
                "install matching versions of gpu-workbench"
            )
        self._signed_in(ident, msg, source, self._hello_as)

    def _session(self, msg: dict) -> Session | None:
        session = self.sessions.get(msg.get("session")) if isinstance(msg.get("session"), str) else None
        key = msg.get("key")
        if session is None or not isinstance(key, bytes) or not hmac.compare_digest(key, session.key):
            return None
        return session

    def _ping(self, ident: bytes, msg: dict, source: str | None) -> None:
        """Is a pool here? Answered at once (a hello may wait for a worker to warm up)."""
        self._reply(ident, {"ok": True, "v": PROTOCOL_VERSION})

    def _heartbeat(self, ident: bytes, msg: dict, source: str | None) -> None:
        session = self._session(msg)
        if session is not None:
            session.last_seen = time.monotonic()
            self._reply(ident, {"ok": True, "alive": True,
                                "moves": self.moves.reported_moves(session)})
            return
        reply = {"ok": True, "alive": False}
        sid = msg.get("session")
        why = self.ended.reason_for(sid, msg.get("key"))
        if why is not None:   # (only to the session's own client: it has the key)
            reply["reason"] = why
        else:
            self.ended.note_unknown(sid, type(sid) is str and sid in self.sessions)
        self._reply(ident, reply)

    def _close(self, ident: bytes, msg: dict, source: str | None) -> None:
        session = self._session(msg)
        if session is not None:
            session.closing = True   # no longer one of the user's open sessions
            # the worker reports its last figures as it exits; _reap then ends the session
            if session.worker.session is not session:   # (parked: no worker to end it)
                self._end(session, "closed by the client")
            elif not session.worker.tell({"t": "stop"}):
                session.worker.end()
        self._reply(ident, {"ok": True})

    def _end_request(self, ident: bytes, msg: dict, source: str | None) -> None:
        self._signed_in(ident, msg, source, self._end_for)

    def _end_for(self, ident: bytes, msg: dict, user: User) -> None:
        """A user ends one of their own sessions by token (the Lab panel; session_end.py)."""
        session = own_session(self.sessions, msg.get("session"), user.name)
        if session is not None:
            self._end_and_stop(session, f"ended by its user ({user.name})")
        self._reply(ident, {"ok": True, "ended": session is not None})

    def _status(self, ident: bytes, msg: dict, source: str | None) -> None:
        self._signed_in(ident, msg, source, self._status_for)

    def _status_for(self, ident: bytes, msg: dict, user: User) -> None:
        reply = {"ok": True, **seen_by(self.status(), user.name), "you": user.name}
        seconds = msg.get("history")
        if type(seconds) in (int, float) and 0 < seconds <= 600:
            reply["history"] = {d: self.usage.history(seconds, device=d) for d in self.devices}
            reply["device_history"] = self.samples.history(seconds)
        self._reply(ident, reply)


def _source_of(frame: zmq.Frame) -> str | None:
    """Who sent *frame*, as far as the back-off cares: the peer's IP address (tcp), or
    ``uid:N``, the local user of a same-host peer (libzmq reports an ipc peer as
    ``localhost:UID:GID:PID``); None if libzmq does not say."""
    try:
        address = frame.get("Peer-Address")
    except zmq.ZMQError:
        return None
    if not isinstance(address, str) or not address:
        return None
    if address.startswith("localhost:") and address.count(":") == 3:
        return "uid:" + address.split(":")[1]
    return address
