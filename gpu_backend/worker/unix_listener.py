"""A session worker's Unix-domain listener: the link of clients on the pool's own host.

A client that reached the pool through its same-host ``ipc://`` door talks to its worker
over a plain Unix-domain socket (see :mod:`gpu_backend.protocol.framing` for why not
ZeroMQ's ``ipc://``), with the same messages as over ZeroMQ: lists of frames. A message's
*ident* is the :class:`UnixPeer` it came from.

Replies to a peer never block the worker against its client: while the socket is full the
worker reads what the client sends meanwhile (kept, in order, for later), so a client
writing a large upload and a worker writing a large reply always progress. A connection
that breaks the framing or stalls mid-message is closed; the others go on.

Any local user can connect to the socket (its path is in the system's table of Unix
sockets, /proc/net/unix). Every batch carries the session key, so such a peer reaches
nothing; but a peer that sent half a message would hold the worker in its read. So a peer
is *untrusted* until its first message, a small ``{"t": "auth", "k": key}``, has arrived
whole and named the session's key: until then the worker only takes what has arrived, never
waits for the rest, and drops the peer if it sends anything else, more than AUTH_BYTES, or
takes longer than AUTH_SECONDS. When the worker has MAX_PEERS connections, a new one
pushes out the oldest untrusted one, so a crowd of idle connections cannot lock the
session's client out.
"""

from __future__ import annotations

import array
import hmac
import os
import select
import socket
import time
from collections import deque

import zmq

from ..protocol.codec import unpackb
from ..protocol.errors import ProtocolError
from ..protocol.framing import IOV_MAX, MessageReader, consume, message_views

__all__ = ["UnixListener", "UnixPeer", "STALL_SECONDS", "MAX_PEERS"]

#: A Unix peer that stops mid-message (or stops reading a reply) for this long is dropped.
STALL_SECONDS = 60.0
#: Connections accepted at once (the session's client needs one).
MAX_PEERS = 8
#: The send buffer asked for on a peer's connection.
SEND_BUFFER = 4 << 20
#: An untrusted peer's first message (the key) is at most this large...
AUTH_BYTES = 4096
#: ... and arrives within this many seconds of its connection, or the peer is dropped.
AUTH_SECONDS = 5.0


class UnixPeer:
    __slots__ = ("sock", "fd", "staging", "reader", "trusted", "since")

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock   # non-blocking: a read or write that would block waits in a poll
        self.fd = sock.fileno()
        #: whether it has proved the session key (only then does a read wait for it)
        self.trusted = False
        self.since = time.monotonic()
        #: the connection's messages, read through one buffer (a small one in one recv)
        self.reader = MessageReader(sock, self._wait_readable)
        #: the shared-memory ring for large transfers, once the client asked for one
        #: (:mod:`gpu_backend.worker.staged`)
        self.staging = None

    def _wait_readable(self) -> None:
        """The rest of a message is due: wait for it, at most STALL_SECONDS."""
        poller = select.poll()
        poller.register(self.fd, select.POLLIN)
        if not poller.poll(STALL_SECONDS * 1000):
            raise TimeoutError(f"the client stopped mid-message for {STALL_SECONDS:g} s")

    def hung_up(self) -> bool:
        """Whether the client's end of the connection is closed (never blocks)."""
        poller = select.poll()
        poller.register(self.fd, 0)   # POLLHUP and POLLERR are always reported
        return any(mask & (select.POLLHUP | select.POLLERR) for _fd, mask in poller.poll(0))


class UnixListener:
    """The worker's Unix socket at *path* (mode 0666: other local users reach it as they
    reach loopback TCP; the session key guards every message) and its peers."""

    def __init__(self, path: str) -> None:
        self.path = path
        #: the session's key, once assigned: what a peer's first message must carry
        self.key = b""
        self.peers: dict[int, UnixPeer] = {}
        #: complete messages read from peers ahead of time (while writing, or peeking)
        self.ready: deque = deque()
        #: whether a peer has proved the session key (the client came: worker.presence)
        self.had_client = False
        self._poller = select.poll()   # the listener's fd and each peer's
        self._zmq_poller: zmq.Poller | None = None
        #: the peer the last poll found readable (or hung up), not read since: a look for
        #: work (``ClientLinks.poll``) and the read after it polled twice for one message,
        #: a system call of 3-5 µs on an H200 host at every message of a pushed loop
        #: (issue 50); only this worker reads the socket, so what a poll saw stays until
        #: the peer is read (:meth:`recv`) or dropped
        self._seen: UnixPeer | None = None
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        if os.path.exists(path):
            os.unlink(path)
        self.listener.bind(path)
        os.chmod(path, 0o666)
        self.listener.listen(MAX_PEERS)
        self.listener.setblocking(False)
        self._poller.register(self.listener.fileno(), select.POLLIN)

    def register(self, poller: zmq.Poller) -> None:
        """Put the listener and every peer in the server's poller (later peers join it)."""
        self._zmq_poller = poller
        poller.register(self.listener.fileno(), zmq.POLLIN)
        for peer in self.peers.values():
            poller.register(peer.fd, zmq.POLLIN)

    def fds(self) -> list[int]:
        return [*self.peers, self.listener.fileno()]

    def trusted_peers(self) -> bool:
        """Whether a connection that proved the session key is still open."""
        return any(peer.trusted for peer in self.peers.values())

    def buffered(self) -> bool:
        """Whether a message (or part of one from a trusted peer) is already read here."""
        return bool(self.ready) or any(peer.reader.buffered and peer.trusted
                                       for peer in self.peers.values())

    def ready_peer(self, timeout_ms: int = 0) -> UnixPeer | None:
        """A peer with data to read (already buffered, or on its socket), or that hung up
        (reading says so), accepting the connections met on the way; None if there is none."""
        for peer in self.peers.values():
            if peer.reader.buffered and peer.trusted:   # (an untrusted one's half message waits)
                return peer
        if self._seen is not None:   # (found by the last poll, not read since)
            return self._seen
        for fd, _event in self._poller.poll(timeout_ms):
            if fd == self.listener.fileno():
                self._accept()
            elif fd in self.peers:
                peer = self._seen = self.peers[fd]
                return peer
        return None

    def next_message(self) -> tuple[UnixPeer, list] | None:
        """A message read ahead, or one waiting on a peer's socket; None if none was there
        (or what was there was no message: a connection, a peer leaving)."""
        if self.ready:
            return self.ready.popleft()
        peer = self.ready_peer()
        return self.recv(peer) if peer is not None else None

    def _accept(self) -> None:
        try:
            conn, _ = self.listener.accept()
        except (BlockingIOError, InterruptedError):
            return
        if len(self.peers) >= MAX_PEERS:   # make room: the closed ones, else an untrusted one
            for peer in [p for p in self.peers.values() if p.hung_up() and not p.reader.buffered]:
                self.drop(peer)
        if len(self.peers) >= MAX_PEERS:
            untrusted = [p for p in self.peers.values() if not p.trusted]
            if not untrusted:
                conn.close()
                return
            self.drop(min(untrusted, key=lambda p: p.since))
        # non-blocking, not a timeout: a socket with a timeout polls before every call
        conn.setblocking(False)
        try:   # fewer wake-ups per large reply (the kernel caps it at net.core.wmem_max)
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SEND_BUFFER)
        except OSError:
            pass
        peer = UnixPeer(conn)
        self.peers[peer.fd] = peer
        self._poller.register(peer.fd, select.POLLIN)
        if self._zmq_poller is not None:
            self._zmq_poller.register(peer.fd, zmq.POLLIN)
        self._authenticate(peer)   # its key is often here already

    def _authenticate(self, peer: UnixPeer) -> None:
        """Take what an untrusted peer has sent, without waiting; trust it once its first
        message has come whole with the session's key, drop it at anything else."""
        try:
            frames = peer.reader.read_buffered_message(AUTH_BYTES)
            if frames is None:
                if time.monotonic() - peer.since > AUTH_SECONDS:
                    raise ProtocolError("no key in time")
                return
            msg = unpackb(frames[0].bytes) if len(frames) == 1 else None
            key = msg.get("k") if isinstance(msg, dict) and msg.get("t") == "auth" else None
            if not (self.key and isinstance(key, bytes) and hmac.compare_digest(key, self.key)):
                raise ProtocolError("the first message did not carry the session key")
        except (EOFError, OSError, ValueError, ProtocolError):   # (the codec's are ValueErrors)
            self.drop(peer)
            return
        peer.trusted = self.had_client = True

    def drop(self, peer: UnixPeer) -> None:
        if self._seen is peer:
            self._seen = None
        self.peers.pop(peer.fd, None)
        for poller in (self._poller, self._zmq_poller):
            if poller is not None:
                try:
                    poller.unregister(peer.fd)
                except (KeyError, ValueError):
                    pass
        peer.sock.close()
        if peer.staging is not None:
            peer.staging.close()
            peer.staging = None

    def recv(self, peer: UnixPeer) -> tuple[UnixPeer, list] | None:
        if self._seen is peer:   # (read now: a poll must look again)
            self._seen = None
        if not peer.trusted:
            self._authenticate(peer)
            return None
        try:
            frames = peer.reader.read_message()
        except (EOFError, OSError, ProtocolError):   # closed, stalled or not our framing
            self.drop(peer)
            return None
        # the executor reads the first frame as bytes, array payloads as buffers
        return peer, [frames[0].bytes, *frames[1:]] if frames else []

    def write(self, peer: UnixPeer, frames: list, timeout: float, fds: tuple = ()) -> None:
        views = message_views(frames)
        ancillary = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))] if fds else []
        poller = None   # most replies fit the socket's buffer at once: no poll needed
        while views:
            try:
                consume(views, peer.sock.sendmsg(views[:IOV_MAX], ancillary, socket.MSG_DONTWAIT))
                ancillary = []
                continue
            except (BlockingIOError, InterruptedError):
                pass
            except OSError as exc:
                self.drop(peer)
                raise zmq.ZMQError(zmq.EHOSTUNREACH, f"the client's connection broke: {exc}") from None
            if poller is None:
                poller = select.poll()
                poller.register(peer.fd, select.POLLIN | select.POLLOUT)
                deadline = time.monotonic() + timeout
            events = poller.poll(max(0.0, deadline - time.monotonic()) * 1000)
            if not events:
                self.drop(peer)
                raise zmq.ZMQError(zmq.EAGAIN, "the client stopped reading")
            mask = events[0][1]
            if mask & select.POLLIN:   # read what the client sends meanwhile: no deadlock
                got = self.recv(peer)
                if got is None:
                    raise zmq.ZMQError(zmq.EHOSTUNREACH, "the client's connection is closed")
                self.ready.append(got)
            elif mask & (select.POLLERR | select.POLLHUP):
                self.drop(peer)
                raise zmq.ZMQError(zmq.EHOSTUNREACH, "the client's connection is closed")

    def close(self) -> None:
        for peer in list(self.peers.values()):
            self.drop(peer)
        self.listener.close()
        if os.path.exists(self.path):
            os.unlink(self.path)
