"""A session's device memory lent to another worker process of the same host for a move
(issue 52, worker/handover.py): CUDA IPC.

Why: a move through the swap directory copies the session's bytes out over PCIe, through
the file system and back (~4.5 s for 10 GiB on an H200 host), where two workers of one host
can share the memory itself. The old worker exports each allocation with
``cudaIpcGetMemHandle`` and keeps it; the new one maps it (``cudaIpcOpenMemHandle``, peer
access enabled lazily), copies it device to device into its own memory (inside one GPU, or
between two over NVLink or PCIe peer to peer: ``cudaMemcpyDefault`` lets the driver pick),
and unmaps it; only then is the old worker told to end.

CUDA IPC names a whole ``cudaMalloc`` allocation, and CuPy's memory pool hands out pieces
of larger ones: each block is named by the handle of the allocation it lies in (found with
the driver's ``cuMemGetAddressRange``, which CuPy does not wrap) and its offset there, and
each allocation is opened once (a process may not open one handle twice).
"""

from __future__ import annotations

import ctypes
from contextlib import contextmanager
from typing import Any, Iterator

__all__ = ["lend", "borrowed", "copy_block"]

_address_range: Any = None
_MEMCPY_DEFAULT = 4   # cudaMemcpyDefault: the driver tells host, device and peer apart (UVA)


def _allocation_of(ptr: int) -> int:
    """The start of the ``cudaMalloc`` allocation *ptr* lies in (the current context's)."""
    global _address_range
    if _address_range is None:
        fn = ctypes.CDLL("libcuda.so.1").cuMemGetAddressRange_v2
        fn.argtypes = (ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(ctypes.c_size_t),
                       ctypes.c_uint64)
        fn.restype = ctypes.c_int
        _address_range = fn
    base, size = ctypes.c_uint64(), ctypes.c_size_t()
    status = _address_range(ctypes.byref(base), ctypes.byref(size), ctypes.c_uint64(ptr))
    if status != 0:
        raise RuntimeError(f"cuMemGetAddressRange failed (CUresult {status})")
    return int(base.value)


def lend(cupy: Any, spans: list[tuple[int, int]]) -> list:
    """A loan of the allocations at *spans* (start, size): per block, the IPC handle of the
    allocation it lies in (64 bytes), its offset there and its size. The memory must stay
    allocated until the borrower has unmapped it (the lender keeps the arrays)."""
    rt = cupy.cuda.runtime
    handles: dict[int, bytes] = {}
    loan = []
    for start, size in spans:
        base = _allocation_of(start)
        handle = handles.get(base)
        if handle is None:
            handle = handles[base] = bytes(rt.ipcGetMemHandle(base))
        loan.append([handle, start - base, int(size)])
    return loan


@contextmanager
def borrowed(cupy: Any, loan: list) -> Iterator[list]:
    """1-d uint8 arrays over a loan's blocks, mapped into this process (its current
    device); unmapped at the end, after every copy on the device has finished."""
    rt = cupy.cuda.runtime
    opened: dict[bytes, int] = {}
    try:
        blocks = []
        for handle, offset, size in loan:
            ptr = opened.get(handle)
            if ptr is None:
                ptr = opened[handle] = rt.ipcOpenMemHandle(handle)
            memory = cupy.cuda.UnownedMemory(ptr + offset, size, None)
            blocks.append(cupy.ndarray((size,), cupy.uint8, cupy.cuda.MemoryPointer(memory, 0)))
        yield blocks
    finally:
        blocks = []
        rt.deviceSynchronize()   # (no copy may still read the mapping when it goes)
        for ptr in opened.values():
            rt.ipcCloseMemHandle(ptr)


def copy_block(cupy: Any, stream: Any, block: Any) -> Any:
    """A new allocation of this device with *block*'s bytes (a borrowed one: a peer copy,
    asynchronous on *stream*)."""
    new = cupy.empty(block.size, cupy.uint8)
    cupy.cuda.runtime.memcpyAsync(new.data.ptr, block.data.ptr, block.size, _MEMCPY_DEFAULT,
                                  stream.ptr)
    return new
