"""Where a session worker's client messages come from: its links, one interface.

A worker serves one session but does not know beforehand how its client will come: a
remote client over ZeroMQ (``tcp://``: a ROUTER socket, CurveZMQ off loopback), a client
on the pool's host over a Unix-domain socket (``unix://``:
:mod:`gpu_backend.worker.unix_listener`). :func:`open_links` opens those the pool asks for,
by address scheme, in one place; :class:`ClientLinks` gives the server one way to wait,
read and reply over all of them. A message's *ident* says where the answer goes: bytes for
a ROUTER peer, a :class:`UnixPeer` for a Unix connection. (The client's side of the same
links is :mod:`kernelproxy.links`.)
"""

from __future__ import annotations

import time
from typing import Any

import zmq

from ..protocol.addresses import allow_ipv6
from ..security import load_server_keys, secure_server
from .presence import ClientPresence
from .unix_listener import STALL_SECONDS, UnixListener, UnixPeer

__all__ = ["ClientLinks", "UnixPeer", "open_links", "STALL_SECONDS"]

#: A client that reads nothing for this long while the worker sends to it is given up on.
SEND_TIMEOUT = 60.0
_RCVMORE = zmq.RCVMORE
# plain ints: `int & zmq.POLLIN` goes through the enum's __and__ (a microsecond, per look)
_EVENTS, _POLLIN = int(zmq.EVENTS), int(zmq.POLLIN)


def open_links(ctx: zmq.Context, bind_host: str, key_file: str | None = None,
               unix_path: str | None = None) -> "ClientLinks":
    """The worker's links: a ROUTER on a free port of *bind_host* (a CURVE server with the
    pool's key pair when *key_file* is given), and a Unix socket at *unix_path* if any."""
    router = ctx.socket(zmq.ROUTER)
    router.setsockopt(zmq.LINGER, 0)
    # A ROUTER silently drops what exceeds its high-water mark; streamed
    # downloads can be thousands of messages, so block instead (bounded).
    router.setsockopt(zmq.ROUTER_MANDATORY, 1)
    router.setsockopt(zmq.SNDTIMEO, int(SEND_TIMEOUT * 1000))
    if key_file:  # the pool's key pair: a CURVE server, set up once, before bind
        secure_server(router, load_server_keys(key_file))
    allow_ipv6(router, bind_host)
    port = router.bind_to_random_port(f"tcp://{bind_host}")
    return ClientLinks(router, port, UnixListener(unix_path) if unix_path else None)


class ClientLinks:
    """A worker's ROUTER and, for same-host clients, its Unix listener, read as one."""

    def __init__(self, router: zmq.Socket, port: int, unix: UnixListener | None = None) -> None:
        self.router = router
        #: the ROUTER's port, and the Unix socket's address: what ``ready`` tells the pool
        self.port = port
        self.unix = unix
        self.unix_path = unix.path if unix is not None else None
        self.ipc = f"unix://{unix.path}" if unix is not None else None
        #: whether the session's client is still connected (it may vanish without a word)
        self.presence = ClientPresence(router, unix)
        #: look at the Unix peers before ZeroMQ's socket, polling and reading: the last
        #: message came from one, or the last poll found one ready (ZeroMQ's look,
        #: getsockopt(EVENTS), is a system call of its own, ~3.5 µs on the development VM
        #: against ~1 µs for the peers' poll: a same-host session's worker paid it at every
        #: look for the next message, its spins included)
        self._unix_first = False

    @property
    def key(self) -> bytes:
        return self.unix.key if self.unix is not None else b""

    @key.setter
    def key(self, key: bytes) -> None:
        """The session's key, once assigned: what a Unix peer's first message must carry."""
        if self.unix is not None:
            self.unix.key = key

    # ------------------------------------------------------------ waiting
    def register(self, poller: zmq.Poller) -> None:
        """Put every source in the server's poller (peers accepted later join it too)."""
        poller.register(self.router, zmq.POLLIN)
        poller.register(self.presence.monitor, zmq.POLLIN)   # (a connection's end wakes us)
        if self.unix is not None:
            self.unix.register(poller)

    def mine(self, events: dict) -> bool:
        """Whether the server's poll *events* include one of ours."""
        if self.router in events:
            return True
        unix = self.unix
        if unix is None:
            return False
        for fd in unix.fds():   # (a loop: no generator at every message)
            if fd in events:
                return True
        return unix.buffered()

    def poll(self, timeout_ms: int = 0) -> bool:
        """Whether a client message is waiting (within *timeout_ms*). The link the last
        message came by is looked at first (which one a message is read from when both
        have one is no promise: a session's client sends by one link)."""
        unix = self.unix
        if unix is not None:
            if unix.ready:
                return True
            if self._unix_first and unix.ready_peer() is not None:
                return True
        if self.router.get(_EVENTS) & _POLLIN:
            return True
        if unix is None:
            return bool(self.router.poll(timeout_ms))
        if not self._unix_first and unix.ready_peer() is not None:
            self._unix_first = True
            return True
        if not timeout_ms:
            return False
        deadline = time.monotonic() + timeout_ms / 1000
        while True:   # both kinds: ZeroMQ's socket and ours, in one wait
            poller = zmq.Poller()
            poller.register(self.router, zmq.POLLIN)
            for fd in unix.fds():
                poller.register(fd, zmq.POLLIN)
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            events = dict(poller.poll(left * 1000))
            if self.router in events:
                return True
            if events and unix.ready_peer() is not None:
                self._unix_first = True
                return True

    # ------------------------------------------------------------ reading
    def recv_message(self) -> tuple[Any, list] | None:
        """The next client message as (ident, frames), or None if what woke us was no
        message (a new connection, a peer that closed or broke the framing)."""
        unix = self.unix
        if unix is not None and unix.ready:
            self._unix_first = True
            return unix.ready.popleft()
        if self._unix_first:
            got = unix.next_message()
            if got is not None:
                return got
        if self.router.get(_EVENTS) & _POLLIN:
            self._unix_first = False
            return self._recv_router()
        if unix is None or self._unix_first:   # (its peers looked at just now)
            return None
        got = unix.next_message()
        if got is not None:
            self._unix_first = True
        return got

    def _recv_router(self) -> tuple[bytes, list]:
        sock = self.router
        more = sock.getsockopt   # not sock.rcvmore: its attribute lookup costs a microsecond
        ident = sock.recv()
        frames: list = []
        if more(_RCVMORE):
            frames.append(sock.recv())
        while more(_RCVMORE):
            frames.append(sock.recv(copy=False))
        return ident, frames

    # ------------------------------------------------------------ writing
    def send_message(self, ident: Any, frames: list, timeout: float = STALL_SECONDS,
                     fds: tuple = ()) -> None:
        """Send *frames* to the peer *ident* (zero-copy where the frames allow); *fds*, file
        descriptors that go with the message, only to a Unix peer."""
        if type(ident) is not UnixPeer:
            sock = self.router
            sock.send(ident, zmq.SNDMORE)
            last = len(frames) - 1
            for i, frame in enumerate(frames):
                sock.send(frame, zmq.SNDMORE if i < last else 0, copy=False)
            return
        if ident.fd not in self.unix.peers:
            raise zmq.ZMQError(zmq.EHOSTUNREACH, "the client's connection is closed")
        self.unix.write(ident, frames, timeout, fds)

    def drop(self, peer: UnixPeer) -> None:
        """Close a Unix peer's connection (the others go on)."""
        self.unix.drop(peer)

    def close(self, linger_ms: int = 0) -> None:
        """Close every link; *linger_ms*: how long tcp replies still queued may take to go
        (a worker that parked its session, worker/handover.py)."""
        if self.unix is not None:
            self.unix.close()
        self.presence.close()
        self.router.close(linger=linger_ms)

