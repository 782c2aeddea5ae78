"""The swap file tier's own rates, no device (benchmarks/swap.py ``--file-io``): how fast
gpu_backend/devices/swap_file_io.py writes and reads a file in each directory, by each way
of writing (a mapping per piece, the file reserved first or not; ``pwrite``) and thread
count, the bytes coming from and going to a ring of 16 MiB buffers as a GPU's pinned ones
would (its copies are not here).
Why beside the sessions: a session's swap time is this plus the device's copies (0.19 s for
10 GiB on an H200) and the pool's own steps, so this says which part a missed target is,
and which way of writing and thread count the default should be."""

from __future__ import annotations

import tempfile
import time
from collections import deque
from pathlib import Path

import numpy as np

from gpu_backend.devices.swap_file_io import METHODS, PIECE, THREADS, SwapFile, SwapFileReader

__all__ = ["file_rates", "print_rates"]

#: buffers in the ring (the file tier's on a GPU: devices/cupy_swap_copies.FILE_RING)
RING = THREADS + 2
#: the ways of writing measured: (SwapFile's method, reserve), the default first
WAYS = ((METHODS[0], False), (METHODS[0], True), *((m, False) for m in METHODS[1:]))


def _write(where: Path, nbytes: int, ring: list, method: str, threads: int,
           reserve: bool) -> tuple[float, bool]:
    started = time.perf_counter()
    out = SwapFile(where, "rates", nbytes, threads=threads, method=method, reserve=reserve)
    held: deque = deque()
    for i, at in enumerate(range(0, nbytes, PIECE)):
        if len(held) == len(ring):   # (a buffer is used again once its write is done)
            held.popleft().result()
        held.append(out.put(at, ring[i % len(ring)][:min(PIECE, nbytes - at)]))
    out.finish()
    return time.perf_counter() - started, out.mapped


def _read(path: Path, nbytes: int, ring: list, threads: int) -> float:
    started = time.perf_counter()
    reader = SwapFileReader(path, threads=threads)
    reads: deque = deque()
    try:
        for i, at in enumerate(range(0, nbytes, PIECE)):
            if len(reads) == len(ring):
                reader.collect(reads.popleft())
            reads.append(reader.read(ring[i % len(ring)][:min(PIECE, nbytes - at)]))
        while reads:
            reader.collect(reads.popleft())
    finally:
        reader.close()
    return time.perf_counter() - started


def file_rates(dirs: list, nbytes: int, threads: tuple = (1, 4, THREADS)) -> list[dict]:
    """One row per directory, way of writing and thread count: *nbytes* written (the file
    new, as a swap-out's is) and, after the default way's write, read back (from the page
    cache, as a swap-in finds it). Seconds; ``mapped``: the mapping was used (False where
    the kernel has no MADV_POPULATE_WRITE, or for ``pwrite``)."""
    ring = [np.full(PIECE, i, np.uint8) for i in range(RING)]   # (pages touched first)
    rows = []
    for d in dirs:
        for method, reserve in WAYS:
            for n in sorted(set(threads)):
                with tempfile.TemporaryDirectory(dir=d) as tmp:
                    where = Path(tmp) / "swap"
                    seconds, mapped = _write(where, nbytes, ring, method, n, reserve)
                    row = {"dir": str(d) if d else tempfile.gettempdir(), "method": method,
                           "reserve": reserve, "threads": n, "bytes": nbytes,
                           "write_s": seconds, "mapped": mapped}
                    if (method, reserve) == WAYS[0]:
                        row["read_s"] = _read(where / "rates", nbytes, ring, n)
                    rows.append(row)
    return rows


def print_rates(rows: list[dict], gb: float) -> None:
    """The rows as a table, with what *gb* GB would take at each rate."""
    if not rows:
        return
    print(f"the swap file's own rates ({rows[0]['bytes'] / (1 << 30):g} GiB, no device; "
          f"s for {gb:.2f} GB at that rate):")
    print(f"  {'directory':<12} {'write by':<12} {'threads':>7} {'write GB/s':>10} {'s':>6} "
          f"{'read GB/s':>9} {'s':>6}")
    for r in rows:
        w = r["bytes"] / r["write_s"] / 1e9
        how = r["method"] + ("+reserve" if r["reserve"] else "")
        how += "" if r["mapped"] or r["method"] != "map" else "(!)"   # (fell back to pwrite)
        line = f"  {r['dir']:<12} {how:<12} {r['threads']:>7} {w:>10.2f} {gb / w:>6.2f}"
        if "read_s" in r:
            rd = r["bytes"] / r["read_s"] / 1e9
            line += f" {rd:>9.2f} {gb / rd:>6.2f}"
        print(line)
