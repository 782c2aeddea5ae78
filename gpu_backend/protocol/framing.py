"""Multi-frame messages over a Unix-domain stream socket (the same-host session link).

ZeroMQ moves every message through an I/O thread on each side; after a few
milliseconds of idle those threads sleep, and a round trip pays four thread
wake-ups (measured: ~300 µs after 10 ms idle against ~15 µs for a plain Unix
socket on the same host). A session whose client is on the pool's host
therefore talks to its worker over a plain Unix-domain socket, with the same
messages as over ZeroMQ: a list of frames.

On the wire a message is ``<count: u32> <length: u64> * count`` followed by the
frames' bytes. Writes gather the frames with ``sendmsg`` (no joining copy);
reads fill one buffer per frame with ``recv_into`` (a download's chunk lands
straight in its final array).
"""

from __future__ import annotations

import os
import socket
import struct
from typing import Any, Sequence

import numpy as np

from .errors import ProtocolError

__all__ = ["MAX_FRAMES", "MAX_MESSAGE_BYTES", "Frame", "IOV_MAX", "byte_view", "consume", "message_views", "read_exact",
           "read_lengths", "read_message", "read_message_with_fds", "send_all"]

_COUNT = struct.Struct("<I")
_LENGTH = struct.Struct("<Q")
#: A header announcing more frames or bytes than this is refused (the link is closed).
MAX_FRAMES = 1 << 16
MAX_MESSAGE_BYTES = 1 << 40
#: Frames this large are read into memory that is not cleared first.
_UNFILLED_FROM = 1 << 16
#: Buffers one sendmsg may gather (the usual IOV_MAX).
IOV_MAX = 1024


class Frame:
    """A received frame, read as ZeroMQ's ``Frame`` is: ``.bytes`` or ``.buffer``."""

    __slots__ = ("buffer",)

    def __init__(self, buffer: Any) -> None:
        self.buffer = buffer

    @property
    def bytes(self) -> bytes:
        return bytes(self.buffer)


def byte_view(frame: Any) -> memoryview:
    """A frame (bytes, an array, a ZeroMQ frame) as a flat byte view, without copying."""
    view = memoryview(frame)
    if not view.nbytes:
        return memoryview(b"")
    return view if view.format == "B" and view.ndim == 1 else view.cast("B")


def message_views(frames: Sequence[Any]) -> list[memoryview]:
    """What goes on the wire for *frames*: the header, then each non-empty frame."""
    views = [byte_view(f) for f in frames]
    head = _COUNT.pack(len(views)) + b"".join(_LENGTH.pack(v.nbytes) for v in views)
    return [memoryview(head)] + [v for v in views if v.nbytes]


def send_all(sock: socket.socket, frames: Sequence[Any]) -> None:
    """Write one message, blocking until the socket has taken all of it."""
    views = message_views(frames)
    while views:
        consume(views, sock.sendmsg(views[:IOV_MAX]))


def consume(views: list[memoryview], sent: int) -> None:
    """Take the *sent* bytes off the front of *views* (after a partial ``sendmsg``)."""
    while sent and views:
        first = views[0]
        if sent >= first.nbytes:
            sent -= first.nbytes
            views.pop(0)
        else:
            views[0] = first[sent:]
            sent = 0


def read_exact(sock: socket.socket, view: memoryview) -> None:
    """Fill *view* from *sock*; EOFError if the peer closed first."""
    got, size = 0, view.nbytes
    while got < size:
        n = sock.recv_into(view[got:], size - got)
        if n == 0:
            raise EOFError("the peer closed the connection")
        got += n


def read_lengths(sock: socket.socket, head: bytearray | None = None) -> list[int]:
    """A message's header: its frames' lengths (checked against the limits). *head*: its
    first bytes, already read (read_message_with_fds)."""
    if head is None:
        head = bytearray(_COUNT.size)
        read_exact(sock, memoryview(head))
    (count,) = _COUNT.unpack(head)
    if not 0 < count <= MAX_FRAMES:
        raise ProtocolError(f"a message of {count} frames")
    raw = bytearray(_LENGTH.size * count)
    read_exact(sock, memoryview(raw))
    lengths = [v for (v,) in _LENGTH.iter_unpack(raw)]
    if sum(lengths) > MAX_MESSAGE_BYTES:
        raise ProtocolError("a message larger than the link allows")
    return lengths


def read_message(sock: socket.socket, head: bytearray | None = None) -> list[Frame]:
    """One whole message: its frames, each in a buffer of its own."""
    frames = []
    for length in read_lengths(sock, head):
        # a large frame in memory that is not zeroed first (bytearray(n) writes n zeros)
        buffer = memoryview(bytearray(length) if length < _UNFILLED_FROM
                            else np.empty(length, np.uint8)).cast("B")
        if length:
            read_exact(sock, buffer)
        frames.append(Frame(buffer))
    return frames


def read_message_with_fds(sock: socket.socket, max_fds: int = 1) -> tuple[list[Frame], list[int]]:
    """One whole message and the file descriptors sent with it (at most *max_fds*; the
    caller owns them). The descriptors arrive with the message's first bytes."""
    head = bytearray(_COUNT.size)
    got, fds, _flags, _addr = socket.recv_fds(sock, _COUNT.size, max_fds)
    if not got:
        for fd in fds:
            os.close(fd)
        raise EOFError("the peer closed the connection")
    head[:len(got)] = got
    try:
        if len(got) < _COUNT.size:
            read_exact(sock, memoryview(head)[len(got):])
        return read_message(sock, head), list(fds)
    except BaseException:
        for fd in fds:
            os.close(fd)
        raise
