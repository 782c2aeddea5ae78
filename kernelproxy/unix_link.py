"""The session's socket to its worker when both are on one host: a Unix-domain socket.

It offers the few calls of a ZeroMQ DEALER socket that :class:`~kernelproxy.session.Session`
makes (``send`` with ``SNDMORE``, ``poll``, ``recv_multipart``, ``recv_into``, ``close``),
so the session runs unchanged over either. Writes block until the kernel has taken the
message (the worker always reads while it writes, so the two cannot block each other);
there is no I/O thread, so a reply wakes the waiting thread directly. See
:mod:`gpu_backend.protocol.framing` for the wire format and why.
"""

from __future__ import annotations

import os
import select
import socket
from typing import Any, Callable, NoReturn

import zmq

from gpu_backend.protocol import codec
from gpu_backend.protocol.errors import ProtocolError
from gpu_backend.protocol.framing import MessageReader, byte_view, read_message_with_fds, send_all
from gpu_backend.protocol.staging import StagingRing

__all__ = ["UnixDealer"]

#: The send buffer asked for (as the worker does for its replies).
SEND_BUFFER = 4 << 20


class _Sent:
    """What ``send(..., track=True)`` returns: the data is the kernel's once send returns."""

    done = True

    def wait(self, timeout: float | None = None) -> None:
        return None


_SENT = _Sent()


class UnixDealer:
    """*lost(reason)* is called (and must raise) when the worker's end is gone: the session
    then closes itself, as it does when its heartbeat is lost. *key*, the session's key, is
    the connection's first message: the worker waits for nothing else from a peer until
    it has it (gpu_backend.worker.links)."""

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
        self._parts: list[Any] = []
        #: the shared-memory ring for large transfers (open_staging), if the worker gave one
        self.staging: StagingRing | None = None
        self.send(codec.packb({"t": "auth", "k": key}))

    # ------------------------------------------------------------ the DEALER calls used
    def send(self, data: Any, flags: int = 0, copy: bool = True, track: bool = False) -> Any:
        self._parts.append(data)
        if not flags & zmq.SNDMORE:
            parts, self._parts = self._parts, []
            try:
                send_all(self.sock, parts)
            except OSError as exc:   # the worker is gone (its process ended)
                self._lost(f"the session's worker closed its connection ({exc})")
        return _SENT if track else None

    def poll(self, timeout: int | None = None) -> int:
        if self._reader.buffered:
            return 1
        return 1 if self._poller.poll(timeout) else 0

    def recv_multipart(self, copy: bool = True) -> list:
        try:
            frames = self._reader.read_message()
        except (EOFError, OSError) as exc:
            self._lost(f"the session's worker closed its connection ({exc})")
        return frames if not copy else [f.bytes for f in frames]

    def recv_into(self, view: memoryview) -> int:
        """One single-frame message straight into *view*; returns its length."""
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
        """Ask the worker for a shared-memory staging ring (see
        :mod:`gpu_backend.protocol.staging`); None where it has none to give. Called once,
        before the session's first batch, so the answer is the next message (its descriptor
        comes with its first bytes, so nothing may have been read ahead)."""
        if self._reader.buffered:
            raise ProtocolError("a staging ring is asked for before any other message")
        self.send(codec.packb({"k": key, "t": "staging"}))
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

    def setsockopt(self, option: int, value: Any) -> None:
        return None   # LINGER and the like: nothing to set on a Unix socket

    def close(self, linger: int | None = None) -> None:
        self.sock.close()
        if self.staging is not None:
            self.staging.close()
            self.staging = None


