"""A session's link to its worker: one small interface, its implementations chosen by the
worker address's scheme.

A session sends messages (lists of frames: a batch's header and ops, then its arrays) and
receives replies the same way, whatever carries them. :class:`WorkerLink` is that
interface; :func:`open_link` picks its implementation by the address's scheme, in one
place (as httpx's transports and dask's comm registry are chosen):

- ``tcp://host:port``: :class:`ZmqLink`, a ZeroMQ DEALER to the worker's ROUTER (CurveZMQ
  with the pool's pinned key off loopback): a remote client;
- ``unix:///path``: :class:`UnixLink`, a plain Unix-domain socket: a client on the pool's
  host, which reached the pool through its same-host ``ipc://`` door. No ZeroMQ I/O
  thread to wake (see :mod:`gpu_backend.protocol.framing` for the wire format and why),
  large transfers through a shared-memory ring (:mod:`gpu_backend.protocol.staging`), and
  the worker's end closing is seen at once.

:func:`worker_address` says which address a session's hello reply gives it. A new way to
reach a worker is a class here and a line in ``_LINKS``.
"""

from __future__ import annotations

import os
import select
import socket
from typing import Any, Callable, NoReturn, Sequence

import zmq

from gpu_backend.protocol import codec
from gpu_backend.protocol.addresses import allow_ipv6
from gpu_backend.protocol.curve import secure_client
from gpu_backend.protocol.errors import ProtocolError
from gpu_backend.protocol.framing import MessageReader, byte_view, read_message_with_fds, send_all
from gpu_backend.protocol.staging import StagingRing

__all__ = ["WorkerLink", "ZmqLink", "UnixLink", "open_link", "worker_address"]


class WorkerLink:
    """Messages to and from one session worker. Called by the session holding its lock."""

    #: whether the link itself shows the worker's end (a Unix socket closes with it; a
    #: ZeroMQ socket reconnects silently, so the session's heartbeat must ask the pool)
    tells_of_loss = False
    #: the shared-memory ring for large transfers, where the link has one (open_staging)
    staging: StagingRing | None = None

    def send(self, frames: Sequence[Any], track: bool = False) -> list:
        """Send one message. With *track*, objects whose ``wait()`` returns once the frames'
        memory may be reused (the payload is sent without a copy)."""
        raise NotImplementedError

    def poll(self, timeout_ms: int | None = 0) -> bool:
        """Whether a message is waiting (within *timeout_ms*; None: for ever)."""
        raise NotImplementedError

    def recv(self) -> list:
        """The next message's frames (each with ``.bytes`` and ``.buffer``)."""
        raise NotImplementedError

    def recv_into(self, view: memoryview) -> int:
        """The next message, of one frame, straight into *view*; its length."""
        raise NotImplementedError

    def open_staging(self, key: bytes) -> StagingRing | None:
        """Ask the worker for a shared-memory ring (before any batch); None: none here."""
        return None

    @property
    def closed(self) -> bool:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError


class ZmqLink(WorkerLink):
    """A ZeroMQ DEALER to the worker's ROUTER (``tcp://``)."""

    def __init__(self, address: str, ctx: zmq.Context, server_key: bytes | None = None) -> None:
        self.sock = ctx.socket(zmq.DEALER)
        self.sock.setsockopt(zmq.LINGER, 0)
        allow_ipv6(self.sock, address)
        if server_key is not None:   # the worker serves with the pool's key pair
            secure_client(self.sock, server_key)
        self.sock.connect(address)

    def send(self, frames: Sequence[Any], track: bool = False) -> list:
        sock = self.sock
        last = len(frames) - 1
        if not last:   # the common batch: one frame of header and ops
            sock.send(frames[0])
            return []
        sock.send(frames[0], zmq.SNDMORE)   # (small: copied; the arrays after it are not)
        trackers = []
        for i in range(1, last + 1):
            tracker = sock.send(frames[i], zmq.SNDMORE if i < last else 0, copy=False, track=track)
            if track:
                trackers.append(tracker)
        return trackers

    def poll(self, timeout_ms: int | None = 0) -> bool:
        return bool(self.sock.poll(timeout_ms))

    def recv(self) -> list:
        return self.sock.recv_multipart(copy=False)

    def recv_into(self, view: memoryview) -> int:
        return self.sock.recv_into(view)

    @property
    def closed(self) -> bool:
        return self.sock.closed

    def close(self) -> None:
        self.sock.close(linger=0)


#: The send buffer asked for (as the worker does for its replies).
SEND_BUFFER = 4 << 20


class _Sent:
    """What ``send(..., track=True)`` returns over a Unix socket: the data is the kernel's
    once ``send`` returns."""

    done = True

    def wait(self, timeout: float | None = None) -> None:
        return None


_SENT = _Sent()


class UnixLink(WorkerLink):
    """A plain Unix-domain socket to the worker (``unix://``). *lost(reason)* is called (and
    must raise) when the worker's end is gone: the session then ends, as when its heartbeat
    is lost. *key*, the session's key, is the connection's first message: the worker waits
    for nothing else from a peer until it has it (gpu_backend.worker.links). Writes block
    until the kernel has taken the message (the worker always reads while it writes, so the
    two cannot block each other); a reply wakes the waiting thread directly."""

    tells_of_loss = True

    def __init__(self, path: str, lost: Callable[[str], NoReturn], key: bytes) -> None:
        self._lost = lost
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:   # a large upload in fewer, larger writes (the kernel caps it at net.core.wmem_max)
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SEND_BUFFER)
        except OSError:
            pass
        self.sock.connect(path)
        self._poller = select.poll()
        self._poller.register(self.sock.fileno(), select.POLLIN)
        #: the worker's messages, through one buffer (a small reply in one recv); bytes of
        #: the next one may wait there, so poll() looks at it first
        self._reader = MessageReader(self.sock)
        self.staging = None
        self.send([codec.packb({"t": "auth", "k": key})])

    def send(self, frames: Sequence[Any], track: bool = False) -> list:
        try:
            send_all(self.sock, frames)
        except OSError as exc:   # the worker is gone (its process ended)
            self._lost(f"the session's worker closed its connection ({exc})")
        return [_SENT] if track else []

    def poll(self, timeout_ms: int | None = 0) -> bool:
        if self._reader.buffered:
            return True
        return bool(self._poller.poll(timeout_ms))

    def recv(self) -> list:
        try:
            return self._reader.read_message()
        except (EOFError, OSError) as exc:
            self._lost(f"the session's worker closed its connection ({exc})")

    def recv_into(self, view: memoryview) -> int:
        view = byte_view(view)
        try:
            lengths = self._reader.read_lengths()
            if len(lengths) != 1 or lengths[0] > view.nbytes:
                raise ProtocolError("a download chunk that does not fit its array")
            self._reader.read_exact(view[:lengths[0]])
        except (EOFError, OSError) as exc:
            self._lost(f"the session's worker closed its connection ({exc})")
        return lengths[0]

    def open_staging(self, key: bytes) -> StagingRing | None:
        """Ask the worker for a shared-memory staging ring. Called once, before the session's
        first batch, so the answer is the next message (its descriptor comes with its first
        bytes, so nothing may have been read ahead)."""
        if self._reader.buffered:
            raise ProtocolError("a staging ring is asked for before any other message")
        self.send([codec.packb({"k": key, "t": "staging"})])
        try:
            frames, fds = read_message_with_fds(self.sock)
        except (EOFError, OSError) as exc:
            self._lost(f"the session's worker closed its connection ({exc})")
        answer = codec.unpackb(frames[0].bytes) if frames else None
        spec = answer.get("staging") if isinstance(answer, dict) else None
        if not isinstance(spec, dict) or len(fds) != 1:
            for fd in fds:
                os.close(fd)
            if isinstance(answer, dict) and "staging" in answer:
                return None
            raise ProtocolError(f"the worker answered a staging request with {answer!r}")
        try:
            self.staging = StagingRing(fds[0], int(spec["slot_bytes"]), int(spec["slots"]))
        except (KeyError, TypeError, ValueError, OSError) as exc:
            os.close(fds[0])
            raise ProtocolError(f"an unusable staging ring: {exc}") from None
        return self.staging

    @property
    def closed(self) -> bool:
        return self.sock.fileno() == -1

    def close(self) -> None:
        self.sock.close()
        if self.staging is not None:
            self.staging.close()
            self.staging = None


def worker_address(door: str, hello: dict) -> str:
    """The address of the session's worker, from the hello's reply: its Unix socket for a
    client that came through the pool's same-host ``ipc://`` door (where the worker has
    one), else its port on its own host (a pool across hosts names it: ``worker_host``),
    else on the door's tcp host."""
    local = hello.get("worker_ipc") if door.startswith("ipc://") else None
    if isinstance(local, str) and local.startswith("unix://"):
        return local
    host = hello.get("worker_host")
    if isinstance(host, str) and host:
        return f"tcp://{host}:{hello['worker_port']}"
    return f"{door.rsplit(':', 1)[0]}:{hello['worker_port']}"


#: How each scheme's link is opened: (address, ctx, key, server_key, lost) -> WorkerLink
_LINKS: dict[str, Callable[..., WorkerLink]] = {
    "tcp": lambda address, ctx, key, server_key, lost: ZmqLink(address, ctx, server_key),
    "unix": lambda address, ctx, key, server_key, lost: UnixLink(address[len("unix://"):], lost, key),
}


def open_link(address: str, *, ctx: zmq.Context, key: bytes, server_key: bytes | None,
              lost: Callable[[str], NoReturn]) -> WorkerLink:
    """The link to the worker at *address*, by its scheme (``tcp://``, ``unix://``)."""
    scheme = address.partition("://")[0]
    opener = _LINKS.get(scheme)
    if opener is None:
        raise ProtocolError(f"no way to reach a worker at {address!r} (schemes: {', '.join(_LINKS)})")
    return opener(address, ctx, key, server_key, lost)
