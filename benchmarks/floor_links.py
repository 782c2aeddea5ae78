"""The two ways sync_floor.py's client and server talk: length-prefixed messages on a Unix
socket (the ``ipc://`` transport's kind of link, each end spinning a moment before it blocks)
and a shared-memory mailbox both ends spin on (its ``shm-`` modes)."""

from __future__ import annotations

import os
import socket
import struct
import time

_LEN = struct.Struct("<I")


def send(sock: socket.socket, payload: bytes) -> None:
    sock.sendall(_LEN.pack(len(payload)) + payload)


def recv(sock: socket.socket, spin: float) -> bytes:
    """One message; spins up to *spin* seconds on a non-blocking read before blocking."""
    head = b""
    if spin:
        until = time.perf_counter() + spin
        while True:
            try:
                head = sock.recv(4, socket.MSG_DONTWAIT)
                break
            except BlockingIOError:
                if time.perf_counter() > until:
                    break
    while len(head) < 4:
        more = sock.recv(4 - len(head))
        if not more:
            raise EOFError
        head += more
    (length,) = _LEN.unpack(head)
    body = bytearray(length)
    view, got = memoryview(body), 0
    while got < length:
        n = sock.recv_into(view[got:])
        if not n:
            raise EOFError
        got += n
    return bytes(body)


# ------------------------------------------------------------------ shared memory
class Mailbox:
    """One request and one reply at a time in a shared file mapping: each side writes its
    message, then bumps its counter; the other spins on that counter. No system call on the
    way (a Unix socket's send and receive are four), so this shows what the socket's calls
    cost and what they do to the code run after them (``shm-*`` modes)."""

    SIZE, REPLY_AT = 1 << 20, 1 << 19
    _COUNT = struct.Struct("<Q")

    def __init__(self, path: str, create: bool) -> None:
        import mmap
        fd = os.open(path, os.O_RDWR | (os.O_CREAT if create else 0), 0o600)
        if create:
            os.ftruncate(fd, self.SIZE)
        self.map = mmap.mmap(fd, self.SIZE)
        os.close(fd)
        self.sent = self.seen = 0

    def _put(self, at: int, counter: int, payload: bytes) -> None:
        self.map[at:at + 4] = _LEN.pack(len(payload))
        self.map[at + 4:at + 4 + len(payload)] = payload
        self.sent += 1
        self._COUNT.pack_into(self.map, counter, self.sent)   # (x86 keeps stores in order)

    def _take(self, at: int, counter: int, parent: int | None = None) -> bytes:
        unpack, mem, want = self._COUNT.unpack_from, self.map, self.seen + 1
        spins = 0
        while unpack(mem, counter)[0] != want:
            spins += 1
            if parent is not None and not spins & 0xFFFF and os.getppid() != parent:
                raise EOFError   # the client has gone: stop spinning
        self.seen = want
        (length,) = _LEN.unpack_from(mem, at)
        return mem[at + 4:at + 4 + length]

    def request(self, payload: bytes) -> bytes:
        self._put(64, 0, payload)
        return self._take(self.REPLY_AT, 8)

    def next_request(self, parent: int) -> bytes:
        return self._take(64, 0, parent)

    def reply(self, payload: bytes) -> None:
        self._put(self.REPLY_AT, 8, payload)
