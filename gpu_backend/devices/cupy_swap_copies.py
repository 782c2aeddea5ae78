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

**File tier**: each allocation's bytes through two pinned buffers (of CuPy's pinned pool),
so the GPU's copy of one chunk overlaps the file's write (or read) of the other.
"""

from __future__ import annotations

import ctypes
import os
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Iterator

import numpy as np

from .host_bytes import HostBytes

__all__ = ["HOST_COPIES", "STAGE", "THREADS", "to_host", "from_host", "chunks_out", "block_in"]

#: the ways of the host tier (the first is the default)
HOST_COPIES = ("staged", "pinned")
#: bytes of one buffer of the staged ring
STAGE = 16 << 20
#: threads copying between the ring and host memory (the host's other workers share its cores)
THREADS = min(8, max(2, (os.cpu_count() or 2) // 2))
#: buffers in the ring: each thread busy, and the GPU a copy ahead
RING = THREADS + 2

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
    """*size* bytes of CuPy's pinned memory pool (the file tier's two buffers: kept by the
    pool between swaps, as the worker's other staging buffers are, so a session of many
    allocations pays no ``cudaHostAlloc`` for each)."""

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


def chunks_out(cupy: Any, stream: Any, start: int, size: int, chunk: int) -> Iterator[np.ndarray]:
    """The file tier's writes: the allocation at *start*'s bytes as host buffers of at most
    *chunk* bytes, in order, through two pinned buffers: the next chunk is on its way from
    the device while the caller writes this one (each buffer yielded is valid until the
    next is asked for)."""
    if size == 0:
        return
    rt = cupy.cuda.runtime
    n0 = min(size, chunk)
    bufs = [_Pooled(cupy, n0), _Pooled(cupy, n0) if size > chunk else None]
    events = [cupy.cuda.Event(block=False, disable_timing=True) for _ in range(2)]
    offsets = list(range(0, size, chunk))
    try:
        def issue(i: int) -> None:
            at = offsets[i]
            rt.memcpyAsync(bufs[i % 2].ptr, start + at, min(chunk, size - at), _D2H, stream.ptr)
            events[i % 2].record(stream)

        issue(0)
        for i, at in enumerate(offsets):
            if i + 1 < len(offsets):
                issue(i + 1)   # (its buffer was the one written before this: done)
            events[i % 2].synchronize()
            yield bufs[i % 2].view[:min(chunk, size - at)]
    finally:
        stream.synchronize()
        for b in bufs:
            if b is not None:
                b.free()


def block_in(cupy: Any, stream: Any, f: Any, size: int, chunk: int) -> Any:
    """The file tier's reads: a new allocation of *size* bytes filled from the binary file
    *f*, through two pinned buffers: the file's read of one chunk overlaps the device's
    copy of the other."""
    block = cupy.empty(size, cupy.uint8)
    if size == 0:
        return block
    rt = cupy.cuda.runtime
    n0 = min(size, chunk)
    bufs = [_Pooled(cupy, n0), _Pooled(cupy, n0) if size > chunk else None]
    events = [cupy.cuda.Event(block=False, disable_timing=True) for _ in range(2)]
    try:
        for i, at in enumerate(range(0, size, chunk)):
            n = min(chunk, size - at)
            buf = bufs[i % 2]
            events[i % 2].synchronize()   # (its last chunk has reached the device)
            view, got = memoryview(buf.view)[:n], 0
            while got < n:
                read = f.readinto(view[got:])
                if not read:
                    raise EOFError("the swap file ended early")
                got += read
            rt.memcpyAsync(int(block.data.ptr) + at, buf.ptr, n, _H2D, stream.ptr)
            events[i % 2].record(stream)
        stream.synchronize()
    finally:
        stream.synchronize()
        for b in bufs:
            if b is not None:
                b.free()
    return block
