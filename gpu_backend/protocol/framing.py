"""Multi-frame messages over a Unix-domain stream socket (the same-host session link).

ZeroMQ moves every message through an I/O thread on each side; after a few
milliseconds of idle those threads sleep, and a round trip pays four thread
wake-ups (measured: ~300 µs after 10 ms idle against ~15 µs for a plain Unix
socket on the same host). A session whose client is on the pool's host
therefore talks to its worker over a plain Unix-domain socket, with the same
messages as over ZeroMQ: a list of frames.

On the wire a message is ``<count: u32> <length: u64> * count`` followed by the
frames' bytes. Writes gather the frames with ``sendmsg`` (no joining copy);
reads go through a :class:`MessageReader`: one ``recv`` brings a small message
whole (its count, lengths and frames) into a buffer kept for the connection, where
reading the parts one by one took three system calls (and a socket with a timeout
polls before each); a large frame's bytes beyond what the buffer holds land straight
in its own memory (a download's chunk in its final array).
"""

from __future__ import annotations

import mmap
import os
import socket
import struct
from typing import Any, Sequence

import numpy as np

from .errors import ProtocolError

__all__ = ["MAX_FRAMES", "MAX_MESSAGE_BYTES", "Frame", "IOV_MAX", "MessageReader", "byte_view", "consume",
           "message_views", "read_exact", "read_lengths", "read_message", "read_message_with_fds", "send_all"]

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
    if len(frames) == 1:   # (the common message, a reply or a batch alone: no generators)
        view = byte_view(frames[0])
        head = memoryview(_COUNT.pack(1) + _LENGTH.pack(view.nbytes))
        return [head, view] if view.nbytes else [head]
    views = [byte_view(f) for f in frames]
    head = _COUNT.pack(len(views)) + b"".join(_LENGTH.pack(v.nbytes) for v in views)
    return [memoryview(head)] + [v for v in views if v.nbytes]


#: a message of one frame: its header (the frame count, then the frame's length)
_ONE_FRAME = struct.Struct("<IQ")
#: a message of one bytes frame up to this size is sent as one buffer, header and frame joined
_JOINED_BYTES = 1 << 16


def send_all(sock: socket.socket, frames: Sequence[Any]) -> None:
    """Write one message, blocking until the socket has taken all of it. The commonest, one
    small frame of bytes (a batch of a held loop), goes as one joined buffer: the same bytes
    as the views would send, without building them."""
    if len(frames) == 1 and type(frames[0]) is bytes and len(frames[0]) < _JOINED_BYTES:
        frame = frames[0]
        sock.sendall(_ONE_FRAME.pack(1, len(frame)) + frame)
        return
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


def _check_count(count: int) -> None:
    if not 0 < count <= MAX_FRAMES:
        raise ProtocolError(f"a message of {count} frames")


def _check_lengths(lengths: list[int]) -> None:
    if sum(lengths) > MAX_MESSAGE_BYTES:
        raise ProtocolError("a message larger than the link allows")


#: A large received frame's memory: an anonymous mapping (its pages are the kernel's zeros
#: until written, where bytearray(n) writes n zeros first). Not NumPy's: an array the worker
#: makes over an upload's frame is told from a view of a session's array by it, and owns
#: its data, as CuPy's asarray of host data does (worker/result_meta.py).
ReceivedBytes = mmap.mmap


def _frame_buffer(length: int) -> memoryview:
    """Memory for a received frame."""
    return memoryview(bytearray(length) if length < _UNFILLED_FROM
                      else mmap.mmap(-1, length)).cast("B")


class MessageReader:
    """Whole messages from a stream socket, read through one buffer kept for the connection.

    A small message, and whatever the peer wrote after it, arrives in one ``recv``; the
    bytes beyond the message stay buffered for the next read. So a poll of the socket no
    longer tells all: :attr:`buffered` says whether bytes of a next message are already
    here. *wait* is called when a non-blocking socket has nothing yet (it waits until the
    socket is readable, or raises); a blocking socket needs none.
    """

    def __init__(self, sock: socket.socket, wait: Any = None, size: int = 1 << 16) -> None:
        self.sock = sock
        self._wait = wait
        self._buf = bytearray(size)
        self._view = memoryview(self._buf)
        self._start = 0
        self._end = 0

    @property
    def buffered(self) -> int:
        """Bytes read from the socket and not yet taken (the start of a next message)."""
        return self._end - self._start

    def _recv(self, view: memoryview) -> int:
        while True:
            try:
                n = self.sock.recv_into(view)
            except (BlockingIOError, InterruptedError):
                self._wait()
                continue
            if not n:
                raise EOFError("the peer closed the connection")
            return n

    def _fill(self, need: int) -> None:
        """Have at least *need* bytes buffered."""
        if self._end - self._start >= need:
            return
        if self._start + need > len(self._buf):   # move what is left to the front
            left = self._end - self._start
            if need > len(self._buf):   # a header of many frames: a larger buffer
                larger = bytearray(need)
                larger[:left] = self._view[self._start:self._end]
                self._view.release()
                self._buf, self._view = larger, memoryview(larger)
            else:
                self._buf[:left] = self._buf[self._start:self._end]
            self._start, self._end = 0, left
        while self._end - self._start < need:
            self._end += self._recv(self._view[self._end:])

    def read_lengths(self) -> list[int]:
        """The next message's header: its frames' lengths (checked against the limits)."""
        self._fill(_COUNT.size)
        (count,) = _COUNT.unpack_from(self._buf, self._start)
        _check_count(count)
        size = _COUNT.size + _LENGTH.size * count
        self._fill(size)
        start = self._start + _COUNT.size
        lengths = [v for (v,) in _LENGTH.iter_unpack(self._view[start:self._start + size])]
        self._start += size
        _check_lengths(lengths)
        return lengths

    def read_exact(self, view: memoryview) -> None:
        """Fill *view*: the buffered bytes first, the rest straight from the socket."""
        size = view.nbytes
        take = min(self._end - self._start, size)
        if take:
            view[:take] = self._view[self._start:self._start + take]
            self._start += take
        if self._start == self._end:
            self._start = self._end = 0
        got = take
        while got < size:
            got += self._recv(view[got:])

    def read_buffered_message(self, limit: int) -> list[Frame] | None:
        """A whole message if the peer has sent all of it, never waiting: None while part
        of it is still to come (what arrived stays buffered). For a peer not yet trusted,
        whose half-sent message must not hold the reader up. EOFError at the peer's end;
        ProtocolError if the message is larger than *limit* bytes (at most the buffer's)."""
        limit = min(limit, len(self._buf))
        if self._start and self._end - self._start < limit:   # room for *limit* bytes
            left = self._end - self._start
            self._buf[:left] = self._buf[self._start:self._end]
            self._start, self._end = 0, left
        while self._end < len(self._buf):
            try:
                n = self.sock.recv_into(self._view[self._end:])
            except (BlockingIOError, InterruptedError):
                break
            if not n:
                raise EOFError("the peer closed the connection")
            self._end += n
        have = self._end - self._start
        if have < _COUNT.size:
            return None
        (count,) = _COUNT.unpack_from(self._buf, self._start)
        _check_count(count)
        head = _COUNT.size + _LENGTH.size * count
        if head > limit:
            raise ProtocolError(f"a first message of more than {limit} bytes")
        if have < head:
            return None
        start = self._start + _COUNT.size
        total = head + sum(v for (v,) in _LENGTH.iter_unpack(self._view[start:self._start + head]))
        if total > limit:
            raise ProtocolError(f"a first message of more than {limit} bytes")
        if have < total:
            return None
        return self.read_message()   # all of it is buffered: nothing waits

    def read_message(self) -> list[Frame]:
        """One whole message: its frames, each in a buffer of its own. The commonest, one
        frame already whole in the buffer (one ``recv`` brings a small message whole), is
        sliced out at once (a held loop reads one an iteration); the buffer is left as the
        general read leaves it."""
        self._fill(_COUNT.size)   # (as read_lengths does first)
        if _COUNT.unpack_from(self._buf, self._start)[0] == 1:
            self._fill(_ONE_FRAME.size)
            start, end = self._start, self._end
            length = _ONE_FRAME.unpack_from(self._buf, start)[1]
            begin = start + _ONE_FRAME.size
            if end - begin >= length:
                _check_lengths([length])
                stop = begin + length
                data = bytes(self._view[begin:stop])
                self._start, self._end = (0, 0) if stop == end else (stop, end)
                return [Frame(data)]
        frames = []
        for length in self.read_lengths():
            buffer = _frame_buffer(length)
            if length:
                self.read_exact(buffer)
            frames.append(Frame(buffer))
        return frames


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
    _check_count(count)
    raw = bytearray(_LENGTH.size * count)
    read_exact(sock, memoryview(raw))
    lengths = [v for (v,) in _LENGTH.iter_unpack(raw)]
    _check_lengths(lengths)
    return lengths


def read_message(sock: socket.socket, head: bytearray | None = None) -> list[Frame]:
    """One whole message: its frames, each in a buffer of its own."""
    frames = []
    for length in read_lengths(sock, head):
        buffer = _frame_buffer(length)
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
