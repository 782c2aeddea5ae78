"""A swapped session's file (worker/swap.py's file tier), written and read in pieces at
their offsets by several threads at once; the same code for a GPU (devices/cupy_swap_copies.py
hands it pinned buffers) and for the NumPy device (its arrays' own memory), so CI tests it.

Why threads: one thread reads a file from the page cache at ~6 GB/s and writes one at
3-4 GB/s on the H200 host (10 GiB took 2.1-3.2 s in and 2.5-3.6 s out through one thread),
against the 0.19 s of the device's own copy. Reading, 8 threads go at 30-35 GB/s there.
Writing, measured (docs/swap.md, benchmarks/swap.py ``--file-io``), no way below writes one
file faster than 3-4 GB/s on that host, whatever the threads: the swap-out's target is
missed by the file's writes, not by the device's copies.

**Writing** (:class:`SwapFile`): the file is created ``O_EXCL``, mode 0600, in a directory
made 0700, and sized first (``ftruncate``: sparse, nothing allocated yet). Each piece is
then copied by a thread into a shared mapping of its own span of the file, after
``MADV_POPULATE_WRITE`` has faulted that span's pages in. Why a mapping and not
``pwrite``: a filesystem's buffered write holds the file's inode lock for its whole copy
(ext4, XFS and tmpfs alike), so ``pwrite`` calls to one file never overlap, however many
threads make them; page faults into a mapping take no such lock (on the H200 host they
went no faster even so, but were the faster of the two into a tmpfs). Why populate first:
a store into a mapped page the filesystem has no room for kills the process (SIGBUS),
where ``madvise`` returns the error (a full disk: :data:`errno.ENOSPC`, the swap-out fails
and nothing is lost). Why a mapping per piece and not one of the whole file: each thread
unmaps its own pages (one thread unmapping a 4 GiB tmpfs mapping took 0.15 s on a 2-core
VM); whether the per-piece ``mmap``/``munmap``, which take the process's memory-map lock
for writing, is what holds the writes back is not measured. Where the kernel has no
``MADV_POPULATE_WRITE`` (before Linux 5.14) or the file cannot be mapped, ``pwrite``
(:data:`METHODS`; ``method=`` and ``reserve=`` for benchmarks/swap.py, which measures each).

**Reading** (:class:`SwapFileReader`): ``preadv`` at each piece's offset straight into the
buffer it fills (pinned memory on a GPU, the new allocation itself on the NumPy device),
several at once: a buffered read takes no exclusive lock. The pieces are counted back in
the order the caller collects them, and *progress* told the bytes back so far, on the
collecting thread (the worker's own: its notices go out on its sockets).
"""

from __future__ import annotations

import ctypes
import errno
import mmap
import os
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor, wait
from pathlib import Path
from typing import Any, Callable

import numpy as np

__all__ = ["PIECE", "THREADS", "METHODS", "SwapFile", "SwapFileReader", "write_private"]

#: bytes of one piece: what one thread writes or reads at a time (and a GPU's pinned
#: buffers' size): large enough that a piece's system calls cost nothing beside its copy
PIECE = 16 << 20
#: threads writing or reading one swap file (the host's other workers share its cores;
#: the host tier's staged copies use as many): reads from the page cache went at 35 GB/s
#: with 8 on the H200 host and no faster with 16
THREADS = min(8, max(2, len(os.sched_getaffinity(0)) // 2 if hasattr(os, "sched_getaffinity")
                        else (os.cpu_count() or 2) // 2))
#: the ways of writing a piece, the first the default
METHODS = ("map", "pwrite")

_MADV_POPULATE_WRITE = 23   # (Linux 5.14; Python's mmap module names it from 3.13 only)
_PAGE = mmap.ALLOCATIONGRANULARITY
_libc = ctypes.CDLL(None, use_errno=True)   # (ctypes lets the GIL go during the call)
_madvise = _libc.madvise
_madvise.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
_madvise.restype = ctypes.c_int


def _pwrite_all(fd: int, data: memoryview, at: int) -> None:
    while data:
        done = os.pwrite(fd, data, at)
        data, at = data[done:], at + done


def _pread_all(fd: int, into: Any, at: int) -> int:
    view = memoryview(into).cast("B")
    got = 0
    while got < len(view):
        n = os.preadv(fd, [view[got:]], at + got)
        if not n:
            raise EOFError("the swap file ended early")
        got += n
    return got



def write_private(path: Any, data: Any) -> None:
    """Write *data* (a buffer) to a new file at *path*, 0600, never over an existing one;
    on an error the file is not left half written (a parked session's manifest, a lent
    allocation, a restart's records)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        view = memoryview(data).cast("B")
        while view:
            view = view[os.write(fd, view):]
    except BaseException:
        os.close(fd)
        os.unlink(path)
        raise
    os.close(fd)

class SwapFile:
    """A new swap file of *size* bytes at *directory*/*name*, private to the pool's user,
    filled by :meth:`put` (pieces at their offsets, *threads* at once) and completed by
    :meth:`finish`; :meth:`abort` removes it. The caller keeps each piece's buffer as it is
    until that piece's future is done. *reserve*: allocate the whole file first
    (``posix_fallocate``; off by default: on a tmpfs that is one thread allocating every
    page, and on the H200 host it made no write faster: benchmarks/swap.py measures it)."""

    def __init__(self, directory: Path, name: str, size: int, threads: int = THREADS,
                 method: str = METHODS[0], reserve: bool = False) -> None:
        if method not in METHODS:
            raise ValueError(f"no way of writing {method!r}: {METHODS}")
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.chmod(directory, 0o700)
        self.path = directory / name
        self.size = int(size)
        self._mapped = method == "map"
        self._jobs: deque[Future] = deque()
        self._threads: ThreadPoolExecutor | None = None
        self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.ftruncate(self._fd, self.size)
            if reserve and self.size:   # (every block at once: a full disk fails here)
                os.posix_fallocate(self._fd, 0, self.size)
            self._threads = ThreadPoolExecutor(max_workers=max(1, threads),
                                               thread_name_prefix="swap-file")
        except BaseException:
            self.abort()
            raise

    @property
    def mapped(self) -> bool:
        """Whether the pieces go through mappings (False: ``pwrite``, chosen or fallen back to)."""
        return self._mapped

    def put(self, at: int, data: Any) -> Future:
        """Copy *data* (a contiguous buffer) into the file at offset *at*, in a thread; the
        future is done once it is there. The error of a piece that failed before is raised
        here, so a full disk stops the swap-out at once."""
        while self._jobs and self._jobs[0].done():
            self._jobs.popleft().result()
        job = self._threads.submit(self._write, at, data)
        self._jobs.append(job)
        return job

    def _write(self, at: int, data: Any) -> None:
        src = np.frombuffer(data, np.uint8)
        n = src.size
        if at < 0 or at + n > self.size:
            raise ValueError(f"a piece of {n} bytes at {at} is outside the swap file's {self.size}")
        if n and not (self._mapped and self._write_mapped(at, src)):
            _pwrite_all(self._fd, memoryview(src), at)

    def _write_mapped(self, at: int, src: np.ndarray) -> bool:
        """*src* into the file at *at* through a mapping of its pages; False where mapping
        cannot be used here (then :attr:`_mapped` is off for every later piece)."""
        start = at - at % _PAGE
        try:
            span = mmap.mmap(self._fd, at + src.size - start, offset=start)
        except OSError:
            self._mapped = False
            return False
        try:
            dest = np.frombuffer(span, np.uint8)
            if _madvise(dest.ctypes.data, dest.size, _MADV_POPULATE_WRITE) != 0:
                code = ctypes.get_errno()
                if code == errno.EINVAL:   # (a kernel before 5.14)
                    self._mapped = False
                    return False
                if code == errno.EFAULT:   # (a store would have been a SIGBUS: no room)
                    raise OSError(errno.ENOSPC, "no room for the swap file's pages "
                                  "(its filesystem is full)", str(self.path))
                raise OSError(code, os.strerror(code), str(self.path))
            np.copyto(dest[at - start:], src)
        finally:
            dest = None
            span.close()
        return True

    def finish(self) -> None:
        """Every piece is in the file (waited for): the first piece's error raised, if one
        failed (then :meth:`abort`); the file closed, and its threads ended."""
        jobs, self._jobs = list(self._jobs), deque()
        wait(jobs)
        for job in jobs:
            job.result()
        self._close()

    def abort(self) -> None:
        """The swap-out failed: wait for the pieces under way (none may still read its
        buffer), then close and remove the file."""
        wait(list(self._jobs))
        self._jobs.clear()
        self._close()
        self.path.unlink(missing_ok=True)

    def _close(self) -> None:
        if self._threads is not None:
            self._threads.shutdown(wait=True)
            self._threads = None
        if self._fd >= 0:
            fd, self._fd = self._fd, -1
            os.close(fd)


class SwapFileReader:
    """The swap file at *path* read in the order its allocations lie in it: :meth:`read`
    asks for the next bytes into a buffer (a thread reads them, *threads* at once), and
    :meth:`collect` waits for one and counts it. *progress*, if given, is told the bytes
    back so far (*done* before the file's: those from host memory) after each collected
    piece, in the collecting thread."""

    def __init__(self, path: Path, done: int = 0, progress: Callable[[int], None] | None = None,
                 threads: int = THREADS) -> None:
        self.offset = 0          # where the next read begins
        self.done = int(done)
        self._progress = progress
        self._fd = os.open(path, os.O_RDONLY)
        self._threads = ThreadPoolExecutor(max_workers=max(1, threads),
                                           thread_name_prefix="swap-file")

    def read(self, into: Any) -> Future:
        """Fill the writable buffer *into* with the file's next bytes, in a thread."""
        at = self.offset
        self.offset += memoryview(into).nbytes
        return self._threads.submit(_pread_all, self._fd, into, at)

    def collect(self, job: Future) -> None:
        """Wait for the read *job* (its error raised) and count its bytes back."""
        self.done += job.result()
        if self._progress is not None:
            self._progress(self.done)

    def fill(self, into: np.ndarray, piece: int = PIECE) -> None:
        """Fill the host buffer *into* with the file's next bytes, *piece* bytes per read,
        all at once (the NumPy device's allocations: read straight into their memory)."""
        reads = [self.read(into[at:at + piece]) for at in range(0, into.nbytes, piece)]
        try:
            for job in reads:
                self.collect(job)
        finally:
            wait(reads)   # (an error: nothing may still write into *into*)

    def close(self) -> None:
        """Reads not begun are dropped, those under way waited for; the file closed."""
        self._threads.shutdown(wait=True, cancel_futures=True)
        fd, self._fd = self._fd, -1   # (a second call closes nothing: see StagingRing.close)
        if fd >= 0:
            os.close(fd)
