"""A same-host session's staging ring: large transfers through shared memory.

Over the Unix link a streamed upload used to cost three copies on the host (the
client's ``sendmsg`` into the kernel, the worker's ``recv`` into fresh memory,
CuPy's copy of that pageable memory into the driver's staging buffer) before the
DMA; a download, likewise in reverse. Client and worker share a host, so they can
share memory instead: the worker makes a few chunk-sized *slots* in a ``memfd``,
passes the file descriptor to its client over the Unix socket (``SCM_RIGHTS``: no
name in the file system, so a client of another OS user can map it and no one else
can; the file's size is sealed, so the client cannot shrink it under the worker), and
pins the slots for the GPU's DMA on first use. An upload chunk is then
one copy by the client into a slot and one DMA from it; a download chunk one DMA
into a slot and one copy by the client out of it. The chunk messages still go over
the socket, without their bytes: they name the slot.

Who may reuse a slot is said by two counters in the ring's header, each written by
one side only: the worker's count of upload chunks it is done with, and the
client's count of download chunks it is done with. Chunk *g* of a direction (counted
over the session's life) lives in slot ``g % slots``; its producer writes it only once
the consumer is done with chunk ``g - slots``. The worker never trusts the counters
or a chunk message for memory safety (slot and length are checked against the ring;
the client can at worst garble its own data) and waits for the client's counter with
a deadline.

This module is the ring's layout, used by both sides (``kernelproxy`` may import
``gpu_backend.protocol``); the worker's and client's logic is beside their links.
"""

from __future__ import annotations

import fcntl
import mmap
import os
import struct
import time
from typing import Callable

from . import spinning

__all__ = ["StagingRing", "HEADER_BYTES", "SLOTS", "available"]

#: The header: the worker's upload counter, then the client's download counter (u64 each),
#: padded to a cache line so that the slots start aligned.
HEADER_BYTES = 64
_UPLOADS_DONE, _DOWNLOADS_DONE = 0, 8
_COUNTER = struct.Struct("<Q")
#: Slots of a ring: two would double-buffer; four leave slack for the side that is late.
SLOTS = 4
#: A waiter spins this long before it starts to sleep between looks (seconds).
_SPIN_SECONDS = 200e-6


def available() -> bool:
    """Whether this host can make a ring (Linux's ``memfd_create`` and file seals)."""
    return hasattr(os, "memfd_create") and hasattr(fcntl, "F_ADD_SEALS")


class StagingRing:
    """A mapped ring. ``StagingRing.create(slot_bytes)`` on the worker; ``StagingRing(fd,
    slot_bytes, slots)`` on the client with the descriptor it was passed (which it owns)."""

    def __init__(self, fd: int, slot_bytes: int, slots: int = SLOTS) -> None:
        if slot_bytes <= 0 or not 0 < slots <= 64:
            raise ValueError("a staging ring needs positive slot sizes and 1-64 slots")
        self.fd = fd
        self.slot_bytes = slot_bytes
        self.slots = slots
        self.nbytes = HEADER_BYTES + slots * slot_bytes
        if os.fstat(fd).st_size != self.nbytes:
            raise ValueError("the staging ring's file has the wrong size")
        self._map = mmap.mmap(fd, self.nbytes, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        self.view = memoryview(self._map)
        #: what its spinning waits call at each turn (protocol/spinning.py; this side's
        #: settings may set another)
        self.pause = spinning.pause
        #: chunks of each direction this side has handled so far: the worker's uploads taken
        #: and downloads put in, the client's uploads put in and downloads taken out (the
        #: next chunk's number on this side)
        self.uploads_sent = 0
        self.downloads_sent = 0

    @classmethod
    def create(cls, slot_bytes: int, slots: int = SLOTS) -> "StagingRing":
        """A new ring whose size is sealed: a client that could shrink the file would make
        the worker's next access to a slot a SIGBUS."""
        fd = os.memfd_create("gpuwb-staging", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
        try:
            os.ftruncate(fd, HEADER_BYTES + slots * slot_bytes)
            fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL)
            return cls(fd, slot_bytes, slots)
        except BaseException:
            os.close(fd)
            raise

    # ------------------------------------------------------------ slots
    def slot_of(self, chunk: int) -> int:
        return chunk % self.slots

    def slot(self, index: int, nbytes: int | None = None) -> memoryview:
        """Slot *index*'s memory (its first *nbytes*); ValueError if they are not the ring's."""
        if type(index) is not int or not 0 <= index < self.slots:
            raise ValueError(f"no staging slot {index!r}")
        size = self.slot_bytes if nbytes is None else nbytes
        if type(size) is not int or not 0 < size <= self.slot_bytes:
            raise ValueError(f"a staging chunk of {size!r} bytes (slots hold {self.slot_bytes})")
        start = HEADER_BYTES + index * self.slot_bytes
        return self.view[start:start + size]

    def slots_view(self) -> memoryview:
        """All the slots, as one region (what the worker pins)."""
        return self.view[HEADER_BYTES:]

    # ------------------------------------------------------------ counters
    @property
    def uploads_done(self) -> int:
        return _COUNTER.unpack_from(self._map, _UPLOADS_DONE)[0]

    @property
    def downloads_done(self) -> int:
        return _COUNTER.unpack_from(self._map, _DOWNLOADS_DONE)[0]

    def upload_done(self, chunk: int) -> None:
        """The worker is done with upload chunk *chunk* (and every one before it)."""
        if chunk + 1 > self.uploads_done:
            _COUNTER.pack_into(self._map, _UPLOADS_DONE, chunk + 1)

    def download_done(self, chunk: int) -> None:
        """The client is done with download chunk *chunk* (and every one before it)."""
        if chunk + 1 > self.downloads_done:
            _COUNTER.pack_into(self._map, _DOWNLOADS_DONE, chunk + 1)

    def wait_free(self, chunk: int, done: Callable[[], int], check: Callable[[], None],
                  deadline: float | None = None) -> bool:
        """Wait until chunk *chunk*'s slot is free (its consumer's *done* count has passed
        chunk ``chunk - slots``): spin briefly, then sleep in growing steps, calling *check*
        (which may raise) every few milliseconds. False past *deadline* (monotonic)."""
        need = chunk - self.slots + 1
        if done() >= need:
            return True
        began = time.perf_counter()
        nap, checked = 20e-6, began
        while done() < need:
            now = time.perf_counter()
            if now - began < _SPIN_SECONDS:
                self.pause()   # (the other side, if it shares this CPU, runs meanwhile)
                continue
            if now - checked > 0.005:
                checked = now
                check()
                if deadline is not None and time.monotonic() > deadline:
                    return False
            time.sleep(nap)
            nap = min(nap * 2, 0.001)
        return True

    def close(self) -> None:
        """Unmap and close; a second call does nothing. (Its descriptor's number is free
        once closed, and another thread's next socket, pipe or libzmq's own eventfd may get
        it at once: a second ``os.close`` of it closed that instead, and libzmq aborted in
        its I/O thread when it next used the number.)"""
        fd, self.fd = self.fd, -1
        if fd < 0:
            return
        try:
            self.view.release()
            self._map.close()
        except BufferError:   # a view of a slot is still alive somewhere: the map goes with it
            pass
        os.close(fd)
