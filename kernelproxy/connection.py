"""Talking to the pool's front door: the hello, heartbeats and status.

The hello returns the session's worker port and key. A daemon thread then
heartbeats on its own socket (ZeroMQ sockets are not shared between threads)
and flags the session as lost when the pool says it is gone or stops
answering, so a thread waiting on a reply can give up with a clear error.

With a pinned server key (``server_key``, see :mod:`gpu_backend.security`)
every socket is a CURVE client of that key. A failed CurveZMQ handshake is
silent in ZeroMQ (the message is simply never delivered), so the hello's
first request, the ``ping``, watches its socket's handshake events and turns
a failure into :class:`AuthenticationError` at once.
"""

from __future__ import annotations

import getpass
import itertools
import os
import sys
import threading
import time
from typing import Any

import zmq
from zmq.utils.monitor import recv_monitor_message

from gpu_backend.protocol import PROTOCOL_VERSION
from gpu_backend.protocol.addresses import allow_ipv6
from gpu_backend.protocol.codec import packb, unpackb
from gpu_backend.protocol.errors import (AuthenticationError, ProtocolError, SessionLostError,
                                         SignInThrottledError, error_class)
from gpu_backend.protocol.curve import secure_client

__all__ = ["door_request", "signed_in_request", "hello", "session_label", "Heartbeat",
           "process_context"]

#: How long to wait for any answer from a pool before saying there is none.
PING_TIMEOUT = 5.0


#: Handshake events of libzmq 4.3.5, as a client socket (DEALER) sees them, per case
#: (measured with client and server in separate processes or I/O threads):
#:
#: - plain client -> CURVE server: ``EVENT_HANDSHAKE_FAILED_PROTOCOL`` with value
#:   ``PROTOCOL_ERROR_ZMTP_MECHANISM_MISMATCH`` when the client reads the server's greeting
#:   before the server hangs up; when the server is quicker (a third to a half of the tries
#:   on a busy 2-core host), ``EVENT_HANDSHAKE_FAILED_NO_DETAIL`` (value EPIPE) and a
#:   reconnect, which again ends in one of the two. After the mismatch event libzmq ends the
#:   connection for good (no reconnect). The server sees the mismatch every time.
#: - CURVE client with a wrong server key -> CURVE server: ``EVENT_HANDSHAKE_FAILED_NO_DETAIL``
#:   (value EPIPE) every time, repeated at every reconnect: the server cannot open the
#:   client's HELLO (it sees ``PROTOCOL_ERROR_ZMTP_CRYPTOGRAPHIC``) and hangs up, and the
#:   client learns nothing more than that.
#: - CURVE client -> plain server: as the first case, ``PROTOCOL_ERROR_ZMTP_MECHANISM_MISMATCH``
#:   or, when the server hangs up first, ``EVENT_HANDSHAKE_FAILED_NO_DETAIL``.
#: - success: ``EVENT_HANDSHAKE_SUCCEEDED``. Nothing listening: no handshake event at all
#:   (only connect retries), so the ping's timeout reports it.
#:
#: So a mismatch event is told apart by what the client asked for (a pinned key or none).
#: A bare hang-up (NO_DETAIL) is ambiguous: for a plain client it means the pool wants
#: encryption (a plain pool does not hang up on a plain client); for a client with a pinned
#: key it is a wrong key or a plain pool, which a plain probe connection (a handshake only,
#: no message) tells apart.
HANDSHAKE_EVENTS = (zmq.EVENT_HANDSHAKE_SUCCEEDED | zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL
                    | zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL | zmq.EVENT_HANDSHAKE_FAILED_AUTH)
#: A plain client gives up after this many bare hang-ups in a row.
PLAIN_HANGUPS = 2
#: How long the plain probe waits for its handshake to end.
PROBE_TIMEOUT = 2.0
_monitors = itertools.count()


class NoAnswer(SessionLostError):
    """The front door did not answer in time (it may be restarting: kernelproxy.relink asks
    again)."""


def door_request(ctx: zmq.Context, address: str, msg: dict, timeout: float = 30.0, *,
                 server_key: bytes | None = None, check_handshake: bool = False) -> dict:
    """One request to the front door on a fresh socket; raises the pool's error class.

    *server_key*: the pool's pinned public key (Z85), or None for a plain connection.
    *check_handshake*: watch the connection's handshake and raise
    :class:`AuthenticationError` as soon as it fails (else a failure is a timeout).
    """
    sock = ctx.socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    allow_ipv6(sock, address)
    # a connection whose handshake failed is dropped by libzmq for good; a send would then
    # wait for a peer forever
    sock.setsockopt(zmq.SNDTIMEO, int(timeout * 1000))
    if server_key is not None:
        secure_client(sock, server_key)
    monitor = _watch(sock) if check_handshake else None
    try:
        sock.connect(address)
        try:
            sock.send(packb(msg), zmq.NOBLOCK if monitor is not None else 0)
        except zmq.Again:
            if monitor is None:
                raise NoAnswer(f"the pool at {address} took no request within {timeout:g} s"
                               ) from None
            # the handshake failed before the send: the monitor has the reason
        if monitor is not None:
            answered = _wait_watching_handshake(sock, monitor, address, server_key, timeout)
        else:
            answered = sock.poll(int(timeout * 1000))
        if not answered:
            raise NoAnswer(f"the pool at {address} did not answer within {timeout:g} s")
        reply = unpackb(sock.recv())
    finally:
        if monitor is not None:
            sock.disable_monitor()
            monitor.close(linger=0)
        sock.close()
    if not isinstance(reply, dict) or not reply.get("ok"):
        name, text = (reply.get("error") if isinstance(reply, dict) else None) or ("RemoteError", "bad reply")
        exc = error_class(name)(text)
        if isinstance(exc, SignInThrottledError) and isinstance(reply.get("retry_after"), (int, float)):
            exc.retry_after = float(reply["retry_after"])
        raise exc
    return reply


def _watch(sock: zmq.Socket) -> zmq.Socket:
    """A monitor of *sock*'s handshakes (before connect). The endpoint is named uniquely:
    pyzmq's default names it by file descriptor, which a later socket may reuse."""
    return sock.get_monitor_socket(HANDSHAKE_EVENTS,
                                   addr=f"inproc://kernelproxy.handshake.{next(_monitors)}")


def _wait_watching_handshake(sock: zmq.Socket, monitor: zmq.Socket, address: str,
                             server_key: bytes | None, timeout: float) -> bool:
    """Wait for a reply on *sock*; True when one is there. A failed handshake raises."""
    poller = zmq.Poller()
    poller.register(sock, zmq.POLLIN)
    poller.register(monitor, zmq.POLLIN)
    deadline = time.monotonic() + timeout
    hangups = 0
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        events = dict(poller.poll(left * 1000))
        if sock in events:
            return True
        if monitor not in events:
            continue
        event = recv_monitor_message(monitor)
        kind, value = int(event["event"]), int(event["value"])
        hangups = hangups + 1 if kind == zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL else 0
        problem = _handshake_problem(kind, value, address, server_key)
        if problem is None and hangups and server_key is not None:
            problem = _after_hangup(sock.context, address, min(PROBE_TIMEOUT, left))
        elif problem is None and hangups >= PLAIN_HANGUPS:
            problem = AuthenticationError(
                f"the pool at {address} hung up during the handshake {hangups} times: it requires "
                f"encryption, most likely: {PIN_IT}")
        if problem is not None:
            raise problem


PIN_IT = "pin its public key (server_key=..., GPUWB_SERVER_KEY or known_pools)"


def _handshake_problem(kind: int, value: int, address: str,
                       server_key: bytes | None) -> Exception | None:
    """The error a handshake event means by itself, or None (success, or a bare hang-up)."""
    if kind == zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL:
        if value == zmq.PROTOCOL_ERROR_ZMTP_MECHANISM_MISMATCH:
            if server_key is None:
                return AuthenticationError(f"the pool at {address} requires encryption: {PIN_IT}")
            return AuthenticationError(_PLAIN_POOL.format(address=address))
        if server_key is None:  # not a ZeroMQ peer that speaks our ZMTP, most likely
            return ProtocolError(f"the handshake with {address} failed ({_protocol_error(value)}): "
                                 "is a gpu-workbench pool listening there?")
        return AuthenticationError(f"the pool at {address} did not prove the pinned key: refusing it "
                                   f"(handshake error {_protocol_error(value)})")
    if kind == zmq.EVENT_HANDSHAKE_FAILED_AUTH:
        return AuthenticationError(f"the pool at {address} refused this client in the handshake "
                                   f"(status {value})")
    return None


_PLAIN_POOL = ("the pool at {address} does not use encryption, but a key is pinned for it: "
               "refusing to send it anything (check the address, or the pool's --key-file)")


def _after_hangup(ctx: zmq.Context, address: str, timeout: float) -> Exception | None:
    """A pool hung up on our CURVE handshake: a wrong key, or a plain pool? Ask it plainly
    (a handshake on a probe socket that sends nothing); None if the probe learns nothing."""
    probe = ctx.socket(zmq.DEALER)
    probe.setsockopt(zmq.LINGER, 0)
    allow_ipv6(probe, address)
    monitor = _watch(probe)
    try:
        probe.connect(address)
        if not monitor.poll(int(timeout * 1000)):
            return None
        plain = int(recv_monitor_message(monitor)["event"]) == zmq.EVENT_HANDSHAKE_SUCCEEDED
    finally:
        probe.disable_monitor()
        monitor.close(linger=0)
        probe.close()
    if plain:
        return AuthenticationError(_PLAIN_POOL.format(address=address))
    return AuthenticationError(
        f"the pool at {address} did not prove the pinned key: refusing it (its key changed, or "
        "this is not the pool you pinned)")


_PROTOCOL_ERRORS = {int(v): n for n, v in vars(zmq).items() if n.startswith("PROTOCOL_ERROR_")}


def _protocol_error(value: int) -> str:
    return _PROTOCOL_ERRORS.get(value, hex(value))


def hello(ctx: zmq.Context, address: str, token: str, user: str | None = None,
          memory_limit: int | None = None, timeout: float = 150.0, *,
          server_key: bytes | None = None, apart_from: list[str] | None = None,
          label: str | None = None) -> dict:
    # a quick ping first: a missing pool (or a failed handshake) is reported in seconds,
    # not after the hello's wait, and before the token is sent
    door_request(ctx, address, {"t": "ping"}, timeout=min(timeout, PING_TIMEOUT),
                 server_key=server_key, check_handshake=True)
    msg: dict[str, Any] = {"t": "hello", "v": PROTOCOL_VERSION, "token": token,
                           "user": user or _user()}
    if memory_limit is not None:
        msg["memory_limit"] = int(memory_limit)
    if apart_from:   # this client's other sessions: this one goes on a device none of them has
        msg["apart_from"] = list(apart_from)
    if label:
        msg["label"] = str(label)
    return signed_in_request(ctx, address, msg, timeout, server_key=server_key)


def signed_in_request(ctx: zmq.Context, address: str, msg: dict, timeout: float, *,
                      server_key: bytes | None = None) -> dict:
    """A request that carries the token: when the pool asks us to wait before it checks
    the token (:class:`SignInThrottledError`, its sign-in back-off), wait and ask again,
    until *timeout*."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return door_request(ctx, address, msg, max(0.1, deadline - time.monotonic()),
                                server_key=server_key)
        except SignInThrottledError as exc:
            wait = min(max(exc.retry_after, 0.01), 5.0)
            if time.monotonic() + wait >= deadline:
                raise
            time.sleep(wait)


def session_label(label: str | None, notebook: str | None) -> str:
    """What a session says opened it (the pool shows it to its user, beside its idle time):
    *label* if given, else the *notebook*'s path Jupyter gave the kernel
    (``JPY_SESSION_NAME``), else the script's name (``sys.argv[0]``; "python" for
    ``python -c`` and the interactive prompt). A kernel started without a notebook
    (nbclient, a console) is "Jupyter kernel": its argv[0] is the kernel's own module."""
    if label:
        return label
    if notebook:
        return notebook
    if "ipykernel" in sys.modules:   # (looked up, never imported: kernelproxy needs no Jupyter)
        return "Jupyter kernel"
    script = sys.argv[0] if sys.argv else ""
    return script if script and script != "-c" else "python"


def _user() -> str:
    try:
        return getpass.getuser()
    except Exception:  # no passwd entry in some containers
        return "anonymous"


#: A session's heartbeat asks the pool at least this often (seconds) whether the session
#: lives: a worker that died is known to its pool at once (its control channel closes),
#: so a client learns of it within this long, also over tcp, where nothing else tells it.
BEAT_SECONDS = 0.5
_process_context: zmq.Context | None = None
_process_context_lock = threading.Lock()


def process_context() -> zmq.Context:
    """The process's context for sockets that live apart from any session's: heartbeats,
    and requests any thread may make while the session closes (``Session.status``). A
    session lost or dropped ends its own context at once (its finaliser may run in any
    thread), never waiting for its heartbeat thread to close a socket (a context's
    termination blocks while any of its sockets is open), and never closing a socket
    another thread still uses (which libzmq may answer with an abort)."""
    global _process_context
    with _process_context_lock:
        if _process_context is None:
            _process_context = zmq.Context()
        return _process_context


def _forget_process_context() -> None:
    """In a forked child: the parent's context has no I/O threads here (a request on it
    would wait for ever); the child makes its own when it first needs one."""
    global _process_context, _process_context_lock
    _process_context, _process_context_lock = None, threading.Lock()


os.register_at_fork(after_in_child=_forget_process_context)


class Heartbeat(threading.Thread):
    """Keeps the session's lease; sets :attr:`lost` to a reason when it ends. It beats every
    BEAT_SECONDS at most when it also watches the worker (the lease needs one per
    *interval*), and gives the pool up when nothing answered for three intervals."""

    def __init__(self, address: str, session: str, key: bytes, interval: float,
                 server_key: bytes | None = None, watch_worker: bool = True) -> None:
        super().__init__(name="kernelproxy-heartbeat", daemon=True)
        self.address, self.session, self.key = address, session, key
        self.server_key = server_key
        # (a session whose worker link tells it of the worker's end itself, the same-host
        # Unix socket, needs the beat only for its lease: *watch_worker* False)
        self.interval = min(interval, BEAT_SECONDS) if watch_worker else interval
        self.give_up = 3 * interval
        self.lost: str | None = None
        #: how often the pool has moved the session to another worker, as its last answer
        #: said (the session relinks when this differs from its own count: kernelproxy.relink)
        self.moves = 0
        self._stopping = threading.Event()

    def run(self) -> None:
        sock = process_context().socket(zmq.DEALER)
        sock.setsockopt(zmq.LINGER, 0)
        allow_ipv6(sock, self.address)
        sock.setsockopt(zmq.SNDTIMEO, int(self.interval * 1000))
        if self.server_key is not None:
            secure_client(sock, self.server_key)
        sock.connect(self.address)
        answered_at = time.monotonic()
        refused = None   # (the door's last refusal of a beat since its last answer)
        try:
            while not self._stopping.wait(self.interval):
                try:
                    sock.send(packb({"t": "hb", "session": self.session, "key": self.key}))
                    answered = sock.poll(int(self.interval * 1000))
                except zmq.Again:  # no connection took it (SNDTIMEO): a missed beat
                    answered = False
                if answered:
                    lost, refusal = self.answer(sock.recv())
                    if lost is not None:
                        self.lost = lost
                        return
                    if refusal is None:
                        answered_at, refused = time.monotonic(), None
                        continue
                    if refusal != refused:   # (said once: a beat refused says nothing of
                        print(f"kernelproxy: the pool refused a heartbeat: {refusal}",   # the
                              file=sys.stderr)   # session, so it counts as a missed beat)
                    refused = refusal
                if time.monotonic() - answered_at >= self.give_up:
                    self.lost = (f"the pool at {self.address} refused this session's heartbeats: "
                                 f"{refused}" if refused is not None else
                                 f"the pool at {self.address} stopped answering")
                    return
        except Exception as exc:   # (a socket's error, or a bug: said, not a thread that
            if not self._stopping.is_set():   # dies quietly and leaves the session waiting)
                self.lost = f"heartbeat failed: {exc!r}"
        finally:
            sock.close()

    def answer(self, data: bytes) -> tuple[str | None, str | None]:
        """What the door's answer *data* to a beat says: (why, None) where the pool ended
        the session; (None, the refusal) where the door refused the beat itself (``ok``
        false: a beat it could not decode, say), which says nothing of the session; (None,
        None) where the session lives (the count of its moves kept: :attr:`moves`). A
        refusal was read as "not alive" and reported the session lost for no reason
        (docs/fair-share.md, "The lost session found")."""
        try:
            reply = unpackb(data)
        except ValueError as exc:
            return None, f"an answer that could not be decoded ({exc})"[:300]
        if not isinstance(reply, dict):
            return None, "an answer that is not a map"
        if reply.get("ok") is False:
            error = reply.get("error")
            text = ": ".join(str(part) for part in error[:2]) if isinstance(error, list) else str(error)
            return None, text[:300]
        if type(reply.get("moves")) is int:
            self.moves = reply["moves"]
        if reply.get("alive"):
            return None, None
        why = reply.get("reason")
        return (f"the pool ended this session: {why[:300]}" if isinstance(why, str) and why
                else "the pool ended this session (lease expired or worker stopped)"), None

    def stop(self) -> None:
        self._stopping.set()
