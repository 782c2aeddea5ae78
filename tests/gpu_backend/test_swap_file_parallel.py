"""Issue 52's swap file tier, written and read by several threads at once
(gpu_backend/devices/swap_file_io.py): pieces at their offsets come back bitwise, by each
way of writing; an error in a writer thread surfaces and removes the file; a full
filesystem (a small tmpfs, where a user namespace may mount one) fails the swap-out with
every array kept; a GPU's ring of pinned buffers (cupy_swap_copies.chunks_out, block_in)
hands its buffers to the threads and back in order, run here over host memory through a
stand-in for CuPy's copies; and a real pool swaps a session of many pieces through the file
and back. No timing is asserted."""

from __future__ import annotations

import ctypes
import errno
import os
import shutil
import stat
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

import kernelproxy
from gpu_backend.devices import cupy_swap_copies
from gpu_backend.devices.swap_file_io import METHODS, PIECE, SwapFile, SwapFileReader
from gpu_backend.pool import LocalPool
from gpu_backend.worker.swap import write_allocation
from kernelproxy.modules import module_for
from tests.differential import TEST_DEVICES
from tests.paths import PROJECT_ROOT

MIB = 1 << 20


def _pieces(data: np.ndarray, sizes: list[int]) -> list[tuple[int, np.ndarray]]:
    """(offset, view) of *data* cut in pieces of *sizes*, in turn, to its end."""
    out, at, i = [], 0, 0
    while at < data.size:
        n = min(sizes[i % len(sizes)], data.size - at)
        out.append((at, data[at:at + n]))
        at, i = at + n, i + 1
    return out


@pytest.mark.parametrize("method", METHODS)
def test_pieces_written_by_several_threads_come_back_bitwise(tmp_path, method):
    data = np.random.default_rng(52).integers(0, 256, 3 * MIB + 12_345, dtype=np.uint8)
    pieces = _pieces(data, [MIB + 7, 4093, 300_001])          # (offsets off the page size)
    out = SwapFile(tmp_path / "swap", "swap-a-1", data.size, threads=4, method=method)
    for at, view in reversed(pieces):                           # (any order: at their offsets)
        out.put(at, view)
    out.finish()
    st = out.path.stat()
    assert stat.S_IMODE(st.st_mode) == 0o600 and st.st_size == data.size
    assert stat.S_IMODE((tmp_path / "swap").stat().st_mode) == 0o700
    told: list[int] = []
    reader = SwapFileReader(out.path, done=100, progress=told.append, threads=3)
    back = np.empty_like(data)
    try:
        reader.fill(back[:2 * MIB], 65_536 + 1)
        reader.fill(back[2 * MIB:], 1000)
    finally:
        reader.close()
    assert np.array_equal(back, data)
    assert told == sorted(told) and told[-1] == 100 + data.size   # (in order of bytes back)


def test_the_file_is_made_new_and_private(tmp_path):
    SwapFile(tmp_path, "swap-b-1", 10).finish()
    with pytest.raises(FileExistsError):   # (O_EXCL: never over another file)
        SwapFile(tmp_path, "swap-b-1", 10)
    assert (tmp_path / "swap-b-1").exists()


def test_an_error_in_a_writer_thread_surfaces_and_removes_the_file(tmp_path):
    out = SwapFile(tmp_path, "swap-c-1", 4 * MIB, threads=2)
    data = np.ones(MIB, np.uint8)
    out.put(0, data)
    out.put(4 * MIB - 10, data)            # (past the file's end: the thread refuses it)
    with pytest.raises(ValueError, match="outside the swap file"):
        for at in range(MIB, 3 * MIB, MIB):
            out.put(at, data)
        out.finish()
    out.abort()
    assert list(tmp_path.iterdir()) == []


def test_a_short_file_fails_its_read(tmp_path):
    (tmp_path / "short").write_bytes(b"x" * 1000)
    reader = SwapFileReader(tmp_path / "short")
    try:
        with pytest.raises(EOFError):
            reader.fill(np.empty(5000, np.uint8), 512)
    finally:
        reader.close()


def _in_a_small_tmpfs(tmp_path: Path, mib: int, *args: str) -> subprocess.CompletedProcess:
    """``python -m`` this module with *args*, in a user namespace where *tmp_path*/mnt is a
    tmpfs of *mib* MiB (a filesystem that fills, with no root needed); skipped where this
    host allows no such namespace."""
    unshare = shutil.which("unshare")
    if unshare is None:
        pytest.skip("no unshare(1) here")
    mount = tmp_path / "mnt"
    mount.mkdir()
    probe = subprocess.run([unshare, "-Urm", "sh", "-c", f"mount -t tmpfs -o size={mib}m none {mount}"],
                           capture_output=True, text=True, timeout=60)
    if probe.returncode != 0:
        pytest.skip(f"no user namespace with its own tmpfs here: {probe.stderr.strip()}")
    command = f'mount -t tmpfs -o size={mib}m none "$1" && shift && exec "$@"'
    return subprocess.run([unshare, "-Urm", "sh", "-c", command, "sh", str(mount), sys.executable,
                           "-m", "tests.gpu_backend.test_swap_file_parallel", str(mount), *args],
                          cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=240)


def test_a_full_filesystem_fails_the_write_and_leaves_no_file(tmp_path):
    done = _in_a_small_tmpfs(tmp_path, 2, "write")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert done.stdout.split() == [f"{m}:ENOSPC" for m in METHODS]


def test_a_full_swap_directory_keeps_every_array_on_the_device(tmp_path):
    done = _in_a_small_tmpfs(tmp_path, 4, "pool")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "kept bitwise" in done.stdout


def _full_write(mount: Path) -> None:
    """(In the namespace) 8 MiB into a 2 MiB tmpfs, by each way of writing."""
    for method in METHODS:
        out = SwapFile(mount / "swap", "swap-d-1", 8 * MIB, threads=3, method=method)
        data = np.ones(PIECE, np.uint8)
        try:
            for at in range(0, 8 * MIB, MIB):
                out.put(at, data[:MIB])
            out.finish()
        except OSError as exc:
            out.abort()
            print(f"{method}:{errno.errorcode.get(exc.errno)}")
        assert list((mount / "swap").iterdir()) == []


def _full_pool(mount: Path) -> None:
    """(In the namespace) a session of 12 MiB swapped to a 4 MiB tmpfs: the swap-out fails,
    its file goes, every array stays and comes back bitwise."""
    import logging
    failures: list[str] = []

    class Heard(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if "could not be swapped out" in record.getMessage():
                failures.append(record.getMessage())

    logging.getLogger("gpu_backend").addHandler(Heard())
    logging.getLogger("gpu_backend").setLevel(logging.INFO)
    with LocalPool(devices="cpu", swap_idle=0.3, swap_dir=mount / "swap", lease_timeout=30,
                   swap_host_memory=0) as pool:
        s = kernelproxy.connect(pool.address, pool.token)
        cp = module_for(s)
        a = cp.arange(2 * MIB, dtype=cp.int32)       # 8 MiB
        b = cp.full(MIB, 3, dtype=cp.int32)          # 4 MiB
        int(a[0])
        deadline = time.monotonic() + 60
        while not failures and time.monotonic() < deadline:
            time.sleep(0.05)
        assert failures, "no swap-out was tried"
        assert "No space left" in failures[0] or "no room" in failures[0], failures[0]
        files = [p for p in (mount / "swap").rglob("*") if p.is_file()]
        assert files == [], files
        assert int(a.sum()) == sum(range(2 * MIB)) and int(b.sum()) == 3 * MIB
        s.close()
    print("kept bitwise")


class _StandInCupy:
    """CuPy as cupy_swap_copies' file tier uses it, over host memory: copies are memmoves
    (done at once), events always done, the pinned pool plain memory, ``empty`` a NumPy
    array whose ``data.ptr`` is its address. What it tests is the ring's hand-offs: which
    buffer a thread reads or fills while the "device" copies the next."""

    uint8 = np.uint8

    class _Memory(np.ndarray):
        @property
        def ptr(self) -> int:
            return self.ctypes.data

    class _Array(np.ndarray):
        @property
        def data(self):   # (CuPy's MemoryPointer: its .ptr)
            return SimpleNamespace(ptr=self.ctypes.data)

    class _Event:
        def __init__(self, **_: object) -> None:
            pass

        def record(self, _stream: object) -> None:
            pass

        def synchronize(self) -> None:
            pass

    def __init__(self) -> None:
        runtime = SimpleNamespace(memcpyAsync=lambda dst, src, n, _kind, _s: ctypes.memmove(dst, src, n))
        self.cuda = SimpleNamespace(runtime=runtime, Event=self._Event,
                                    alloc_pinned_memory=lambda n: np.empty(n, np.uint8).view(self._Memory))

    def empty(self, size: int, dtype: object) -> np.ndarray:
        return np.empty(size, dtype).view(self._Array)


def test_a_gpu_s_ring_of_buffers_hands_pieces_to_the_threads_in_order(tmp_path):
    cp, stream = _StandInCupy(), SimpleNamespace(ptr=0, synchronize=lambda: None)
    chunk = 4096 + 8
    rng = np.random.default_rng(7)
    blocks = [rng.integers(0, 256, n, dtype=np.uint8)
              for n in (200 * chunk + 5, chunk, 17, 1, 3 * cupy_swap_copies.FILE_RING * chunk)]
    out = SwapFile(tmp_path, "swap-e-1", sum(b.size for b in blocks), threads=3)
    at = 0
    for b in blocks:
        at = write_allocation(out, cupy_swap_copies.chunks_out(cp, stream, b.ctypes.data, b.size, chunk), at)
    out.finish()
    told: list[int] = []
    reader = SwapFileReader(out.path, progress=told.append, threads=3)
    try:
        back = [cupy_swap_copies.block_in(cp, stream, reader, b.size, chunk) for b in blocks]
    finally:
        reader.close()
    assert all(np.array_equal(x, y) for x, y in zip(back, blocks))
    assert told == sorted(told) and told[-1] == at


def test_a_session_of_many_pieces_swaps_through_the_file_and_back(tmp_path):
    with LocalPool(devices=TEST_DEVICES, swap_idle=0.3, swap_dir=tmp_path / "swap", lease_timeout=30,
                   memory_limit=256 * MIB, swap_host_memory=0) as pool:
        s = kernelproxy.connect(pool.address, pool.token)
        try:
            cp = module_for(s)
            host = np.random.default_rng(3).standard_normal(5 * PIECE // 8 + 3)
            x = cp.asarray(host)                         # several pieces, an odd size
            y = cp.arange(PIECE // 4 + 1, dtype=cp.int32)[1:]   # a view, one piece and a bit
            z = cp.full(1001, 7, dtype=cp.uint8)
            float(x[0])
            row = None
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                row = next(r for r in s.status()["sessions"] if r["session"] == s.id)
                if row["swapped"]:
                    break
                time.sleep(0.05)
            assert row["swapped"] and row["swapped_host"] == 0
            assert np.array_equal(x.get(), host)
            assert int(y[0]) == 1 and int(y[-1]) == PIECE // 4 and int(z.sum()) == 7007
        finally:
            s.close()


if __name__ == "__main__":   # (run in a user namespace by the tests above)
    os.umask(0o022)
    {"write": _full_write, "pool": _full_pool}[sys.argv[2]](Path(sys.argv[1]))
