"""A swapped session's bytes between a GPU and host memory or a file (worker/swap.py), for
cupy_device.py, which hands CuPy in (this module imports none of it: CuPy stays in the
device modules).

**Host tier**, two ways (``GPUWB_SWAP_HOST_COPY``, worker/settings.py; benchmarks/swap.py
measures both beside the pinned copy rate):

- ``staged`` (the default): the bytes land in ordinary (pageable) host memory, through a
  ring of pinned ``STAGE``-byte buffers: the GPU copies the next chunks into the ring while
  threads copy the earlier ones out (and, coming back, in). Why: new host memory costs the
  first touch of each page (the kernel zeroes it), which one thread does at a few GB/s; here
  up to ``THREADS`` threads touch pages at once while the PCIe copy runs. Nothing is pinned
  beyond the ring (freed after each swap), so a swapped session's memory is ordinary memory
  the kernel may page out, and no large pinning is paid per swap.
- ``pinned``: one ``cudaHostAlloc`` buffer for the whole swap and one asynchronous copy per
  allocation at the PCIe's full rate (55 GB/s on an H200); the driver's pinning of every
  page (one thread) is paid at each swap-out, and the memory is locked while swapped.

Which is faster depends on the host (its page-fault rate, its cores): the benchmark says,
and the default follows what it measured.

**File tier**: each allocation's bytes through a ring of ``FILE_RING`` pinned buffers (of
CuPy's pinned pool, kept between swaps), which the swap file's threads write from and read
into at their offsets, several at once (devices/swap_file_io.py: why threads, and how),
while the GPU copies the next pieces: out, the GPU fills the ring ahead and a buffer is
filled again once its piece's write is done; in, the threads read ahead and each piece
goes to the device as soon as it is in.
"""

from __future__ import annotations

import ctypes
import os
from collections import deque
from concurrent.futures import ThreadPoolExecutor, wait
from typing import Any, Iterator

import numpy as np

from .host_bytes import HostBytes
from .swap_file_io import THREADS as FILE_THREADS

__all__ = ["HOST_COPIES", "STAGE", "THREADS", "FILE_RING", "to_host", "from_host", "chunks_out",
           "block_in"]

#: the ways of the host tier (the first is the default)
HOST_COPIES = ("staged", "pinned")
#: bytes of one buffer of the staged ring
STAGE = 16 << 20
#: threads copying between the ring and host memory (the host's other workers share its cores)
THREADS = min(8, max(2, (os.cpu_count() or 2) // 2))
#: buffers in the ring: each thread busy, and the GPU a copy ahead
RING = THREADS + 2

#: the file tier's pinned buffers: one per thread of the swap file, and the GPU's copies
#: a piece ahead
FILE_RING = FILE_THREADS + 2

_D2H, _H2D = 2, 1   # cudaMemcpyDeviceToHost, cudaMemcpyHostToDevice


def _host_view(ptr: int, size: int) -> np.ndarray:
    return np.ctypeslib.as_array((ctypes.c_uint8 * size).from_address(ptr)) if size else \
        np.empty(0, np.uint8)


class _Pinned:
    """Pinned host memory of *size* bytes (``cudaHostAlloc``), as a NumPy view; MemoryError
    where CUDA cannot give it."""

    def __init__(self, cupy: Any, size: int) -> None:
        rt = cupy.cuda.runtime
        try:
            self.ptr = rt.hostAlloc(max(size, 1), 0)
        except rt.CUDARuntimeError as exc:
            raise MemoryError(f"{size} bytes of pinned host memory: {exc}") from None
        self._free = rt.freeHost
        self.view = _host_view(self.ptr, size)

    def free(self) -> None:
        if self.ptr:
            ptr, self.ptr = self.ptr, 0
            self.view = None
            self._free(ptr)


class _Pooled:
    """*size* bytes of CuPy's pinned memory pool (the file tier's ring: kept by the pool
    between swaps, as the worker's other staging buffers are, so a session of many
    allocations pays no ``cudaHostAlloc`` for each; always a whole piece, so that the pool
    hands the same buffers back whatever the allocations' sizes)."""

    def __init__(self, cupy: Any, size: int) -> None:
        self._memory = cupy.cuda.alloc_pinned_memory(size)
        self.ptr = int(self._memory.ptr)
        self.view = np.frombuffer(self._memory, np.uint8, size)

    def free(self) -> None:
        self.view = self._memory = None


def _pieces(spans: list[tuple[int, int]], at: int = 0) -> Iterator[tuple[int, int, int]]:
    """(device address, host offset, bytes) of each STAGE-sized piece of the allocations
    *spans* (start, size), laid one after another in host memory from *at*."""
    for start, size in spans:
        for done in range(0, size, STAGE):
            n = min(STAGE, size - done)
            yield start + done, at + done, n
        at += size


def to_host(cupy: Any, stream: Any, spans: list[tuple[int, int]], how: str) -> HostBytes:
    """The bytes of the device allocations *spans* (start, size), one after another, in new
    host memory, copied on *stream* the way *how* says (``HOST_COPIES``)."""
    total = sum(size for _start, size in spans)
    rt = cupy.cuda.runtime
    if how == "pinned":
        pinned = _Pinned(cupy, total)
        try:
            at = 0
            for start, size in spans:
                rt.memcpyAsync(pinned.ptr + at, start, size, _D2H, stream.ptr)
                at += size
            stream.synchronize()
        except BaseException:
            pinned.free()
            raise
        return HostBytes(pinned.view, pinned.free, pinned=True)
    host = np.empty(total, np.uint8)   # (pages not touched yet: the threads do it)
    _staged(cupy, stream, list(_pieces(spans)), host, _D2H)
    return HostBytes(host)


def from_host(cupy: Any, stream: Any, copy: HostBytes, sizes: list[int]) -> list:
    """New device allocations of *sizes* filled from *copy*, in order."""
    blocks = [cupy.empty(size, cupy.uint8) for size in sizes]
    spans = [(int(b.data.ptr), size) for b, size in zip(blocks, sizes)]
    if copy.pinned:   # pinned: one copy each, at the PCIe's rate
        rt, at = cupy.cuda.runtime, 0
        base = copy.array.ctypes.data
        for start, size in spans:
            rt.memcpyAsync(start, base + at, size, _H2D, stream.ptr)
            at += size
        stream.synchronize()
        return blocks
    _staged(cupy, stream, list(_pieces(spans)), copy.array, _H2D)
    return blocks


def _staged(cupy: Any, stream: Any, pieces: list, host: np.ndarray, kind: int) -> None:
    """Copy *pieces* between the device and *host* through a ring of pinned buffers: the
    GPU's copy of one piece overlaps the threads' copies of others between the ring and
    *host*. Every buffer is freed, every copy waited for, before it returns or raises."""
    if not pieces:
        return
    rt = cupy.cuda.runtime
    slots = min(RING, len(pieces))
    ring: list[_Pinned] = []
    events = [cupy.cuda.Event(block=False, disable_timing=True) for _ in range(slots)]
    try:
        for _ in range(slots):
            ring.append(_Pinned(cupy, STAGE))
        # (each thread makes the session's device its own current one first: a thread's
        # CUDA calls otherwise go to device 0, whose context it would create in a worker of
        # another GPU, hundreds of MiB there counted nowhere)
        with ThreadPoolExecutor(max_workers=min(THREADS, slots), initializer=rt.setDevice,
                                initargs=(rt.getDevice(),)) as threads:
            if kind == _D2H:
                _out(rt, stream, pieces, host, ring, events, threads)
            else:
                _in(rt, stream, pieces, host, ring, events, threads)
        stream.synchronize()
    finally:
        stream.synchronize()   # (no copy may still use a buffer freed here)
        for buffer in ring:
            buffer.free()


def _out(rt, stream, pieces, host, ring, events, threads) -> None:
    """Device → ring (the GPU, in order) → host (the threads, as each piece lands)."""
    def drain(slot: int, at: int, n: int) -> None:
        events[slot].synchronize()
        np.copyto(host[at:at + n], ring[slot].view[:n])

    pending: deque = deque()
    for i, (dev, at, n) in enumerate(pieces):
        slot = i % len(ring)
        if len(pending) == len(ring):   # the slot's last piece must be out of it first
            pending.popleft().result()
        rt.memcpyAsync(ring[slot].ptr, dev, n, _D2H, stream.ptr)
        events[slot].record(stream)
        pending.append(threads.submit(drain, slot, at, n))
    for job in pending:
        job.result()


def _in(rt, stream, pieces, host, ring, events, threads) -> None:
    """Host → ring (the threads, ahead) → device (the GPU, in order)."""
    def fill(slot: int, at: int, n: int) -> None:
        events[slot].synchronize()   # (the slot's last piece has gone to the device)
        np.copyto(ring[slot].view[:n], host[at:at + n])

    filled: deque = deque()
    ahead = len(ring)
    for i in range(min(ahead, len(pieces))):
        _dev, at, n = pieces[i]
        filled.append(threads.submit(fill, i % ahead, at, n))
    for i, (dev, _at, n) in enumerate(pieces):
        slot = i % ahead
        filled.popleft().result()
        rt.memcpyAsync(dev, ring[slot].ptr, n, _H2D, stream.ptr)
        events[slot].record(stream)
        if i + ahead < len(pieces):
            _dev2, at2, n2 = pieces[i + ahead]
            filled.append(threads.submit(fill, slot, at2, n2))


def _pieces_of(size: int, chunk: int) -> list[tuple[int, int]]:
    return [(at, min(chunk, size - at)) for at in range(0, size, chunk)]


def chunks_out(cupy: Any, stream: Any, start: int, size: int, chunk: int) -> Iterator[np.ndarray]:
    """The file tier's writes: the allocation at *start*'s bytes as pinned host buffers of
    at most *chunk* bytes, in order, through a ring of ``FILE_RING`` buffers, the GPU's copy
    of the next piece on its way while the caller writes this one. The caller may send back
    (``send``), for each buffer, a ``concurrent.futures.Future`` done once it is done with
    it: the buffer is filled again only then, so the caller may hold several at once (the
    swap file's threads, worker/swap.py). A caller that sends nothing is done with each
    buffer when it asks for the next. Every buffer's future is waited for before this
    returns or raises, and the ring goes back to CuPy's pinned pool."""
    pieces = _pieces_of(size, chunk)
    if not pieces:
        return
    rt = cupy.cuda.runtime
    slots = min(FILE_RING, len(pieces))
    ring: list[_Pooled] = []
    events = [cupy.cuda.Event(block=False, disable_timing=True) for _ in range(slots)]
    held: list[Any] = [None] * slots   # each buffer's caller's future
    try:
        for _ in range(slots):
            ring.append(_Pooled(cupy, chunk))

        def issue(i: int) -> None:
            slot, (at, n) = i % slots, pieces[i]
            if held[slot] is not None:   # (its last piece is still being written)
                wait([held[slot]])
                held[slot] = None
            rt.memcpyAsync(ring[slot].ptr, start + at, n, _D2H, stream.ptr)
            events[slot].record(stream)

        issue(0)
        for i, (_at, n) in enumerate(pieces):
            if i + 1 < len(pieces):
                issue(i + 1)
            events[i % slots].synchronize()
            held[i % slots] = yield ring[i % slots].view[:n]
    finally:
        wait([job for job in held if job is not None])   # (no thread may still read one)
        stream.synchronize()
        for b in ring:
            b.free()


def block_in(cupy: Any, stream: Any, f: Any, size: int, chunk: int) -> Any:
    """The file tier's reads: a new allocation of *size* bytes filled from the swap file
    *f* (a :class:`~.swap_file_io.SwapFileReader`, at its next bytes) through a ring of
    ``FILE_RING`` pinned buffers: its threads read the next pieces into the ring while the
    device copies each piece in as soon as it is there, in order (*f* counts them back)."""
    block = cupy.empty(size, cupy.uint8)
    pieces = _pieces_of(size, chunk)
    if not pieces:
        return block
    rt = cupy.cuda.runtime
    slots = min(FILE_RING, len(pieces))
    ring: list[_Pooled] = []
    events = [cupy.cuda.Event(block=False, disable_timing=True) for _ in range(slots)]
    reads: list[Any] = [None] * slots   # the read under way into each buffer
    try:
        for _ in range(slots):
            ring.append(_Pooled(cupy, chunk))
        for i in range(slots):
            reads[i] = f.read(ring[i].view[:pieces[i][1]])
        for i, (at, n) in enumerate(pieces):
            slot = i % slots
            job, reads[slot] = reads[slot], None
            f.collect(job)
            rt.memcpyAsync(int(block.data.ptr) + at, ring[slot].ptr, n, _H2D, stream.ptr)
            events[slot].record(stream)
            # the buffer of the piece before (its copy in is done by now, or nearly) reads
            # the next piece not yet asked for: the file is read in order, all threads busy
            j = i - 1 + slots
            if i >= 1 and j < len(pieces):
                before = (i - 1) % slots
                events[before].synchronize()
                reads[before] = f.read(ring[before].view[:pieces[j][1]])
        stream.synchronize()
    finally:
        wait([job for job in reads if job is not None])   # (no thread may still fill one)
        stream.synchronize()
        for b in ring:
            b.free()
    return block
