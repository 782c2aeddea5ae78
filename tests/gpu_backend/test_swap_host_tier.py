"""Issue 52's host-memory tier: a swapped session's arrays go to host memory while its
host's budget (the pool's ``swap_host_memory``) allows, and beyond it to the swap
directory; the front door decides, and its count of the budget comes back when a session
swaps in, ends, or loses its worker. Bitwise, same handles, views sharing again, as the
file tier (test_swap.py). And many cycles through both tiers leave no descriptor, file or
budget behind. A real pool on the NumPy device (on a GPU with ``GPUWB_TEST_DEVICES=0``),
real workers; no timing is asserted."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import numpy as np
import pytest

import kernelproxy
from gpu_backend.pool import LocalPool
from kernelproxy.modules import module_for
from tests.differential import TEST_DEVICES
from tests.gpu_backend.test_swap import IDLE, _files, _row, _wait

MIB = 1 << 20


def _worker_of(pool: LocalPool, session: kernelproxy.Session):
    return next(w for w in list(pool.door.host.workers.values())
                if w.session is not None and w.session.sid == session.id)


def _held(pool: LocalPool) -> int:
    """The door's count of its host's budget in use (every session on the one host)."""
    sessions = list(pool.door.sessions.values())
    return pool.door.swaps.host_held(sessions[0]) if sessions else 0


def _fill(cp, mib: int, seed: int):
    """An array of *mib* MiB of distinct bits, and those bits."""
    host = np.random.default_rng(seed).integers(0, 2**63, mib * MIB // 8, dtype=np.int64)
    return cp.asarray(host), host


def _pool(tmp_path: Path, budget: int | None, idle: float = IDLE, **more) -> LocalPool:
    return LocalPool(devices=TEST_DEVICES, swap_idle=idle, swap_dir=tmp_path / "swap",
                     lease_timeout=30, memory_limit=256 << 20, swap_host_memory=budget, **more)


def test_within_the_budget_a_session_goes_to_host_memory_and_comes_back_bitwise(tmp_path):
    with _pool(tmp_path, 64 * MIB) as pool:
        s = kernelproxy.connect(pool.address, pool.token)
        try:
            cp = module_for(s)
            x, host = _fill(cp, 2, 1)
            row, rev = x[7:], x[::-3]                       # views of x's memory
            m = cp.asarray(host.reshape(512, 512).view(np.float64)).T
            empty = cp.zeros((0, 3), dtype=cp.int8)
            expect = {"x": host, "row": host[7:], "rev": host[::-3], "m": m.get(), "empty": empty.get()}
            swapped = _wait(lambda: _row(s)["swapped"], "the idle session's swap-out")
            r = _row(s)
            assert swapped >= 2 * host.nbytes and r["swapped_host"] == swapped
            assert _files(tmp_path / "swap") == []          # nothing on disk
            assert r["memory_used"] < 4096
            _wait(lambda: _held(pool) == swapped, "the door's count")   # (its report first)
            got = {"x": x.get(), "row": row.get(), "rev": rev.get(), "m": m.get(), "empty": empty.get()}
            for name, value in expect.items():
                assert value.dtype == got[name].dtype and value.shape == got[name].shape, name
                assert value.tobytes() == got[name].tobytes(), name
            _wait(lambda: _row(s)["swapped"] == 0, "the pool to hear of the swap-in")
            assert _held(pool) == 0                         # the budget is back
            x[7] = -1                                       # views share x's memory again
            assert int(row[0]) == -1
        finally:
            s.close()


def test_beyond_the_budget_the_rest_goes_to_the_swap_file(tmp_path):
    """A budget of 3 MiB and a session of two 2 MiB arrays: the first in host memory, the
    second in the file; both back bitwise, the file gone."""
    with _pool(tmp_path, 3 * MIB) as pool:
        s = kernelproxy.connect(pool.address, pool.token)
        try:
            cp = module_for(s)
            a, host_a = _fill(cp, 2, 2)
            b, host_b = _fill(cp, 2, 3)
            a[:1].get()
            r = _wait(lambda: (r := _row(s))["swapped"] and r, "the swap-out")
            assert r["swapped"] == 4 * MIB and r["swapped_host"] == 2 * MIB
            (path,) = _files(tmp_path / "swap")
            assert path.stat().st_size == 2 * MIB
            assert a.get().tobytes() == host_a.tobytes() and b.get().tobytes() == host_b.tobytes()
            assert _files(tmp_path / "swap") == []
            _wait(lambda: _row(s)["swapped"] == 0, "the pool to hear of the swap-in")
            assert _held(pool) == 0
        finally:
            s.close()


def test_the_budget_is_the_hosts_shared_by_its_sessions_and_comes_back_after_a_swap_in(tmp_path):
    """Budget 3 MiB: a swapped in host memory (2 MiB), then b (2 MiB) finds only 1 MiB left
    and goes to disk; a comes back and goes out again: to host memory again."""
    with _pool(tmp_path, 3 * MIB) as pool:
        sa = kernelproxy.connect(pool.address, pool.token)
        sb = kernelproxy.connect(pool.address, pool.token)
        try:
            a, host_a = _fill(module_for(sa), 2, 4)
            a[:1].get()
            assert _wait(lambda: _row(sa)["swapped_host"], "a's swap-out") == 2 * MIB
            b, host_b = _fill(module_for(sb), 2, 5)
            b[:1].get()
            rb = _wait(lambda: (r := _row(sb))["swapped"] and r, "b's swap-out")
            assert rb["swapped_host"] == 0 and len(_files(tmp_path / "swap")) == 1
            # (b's report can reach the status before its "swapped" does: until then the
            # 1 MiB it was let go in host memory still counts, so the count is waited for)
            _wait(lambda: _held(pool) == 2 * MIB, "the door to hear b went to disk")
            assert a.get().tobytes() == host_a.tobytes()           # a back ...
            _wait(lambda: _row(sa)["swapped"] == 0, "a's swap-in")
            assert _wait(lambda: _row(sa)["swapped_host"], "a's next swap-out") == 2 * MIB
            assert b.get().tobytes() == host_b.tobytes()
        finally:
            sa.close()
            sb.close()


@pytest.mark.parametrize("how", ["closed", "killed"])
def test_a_session_that_ends_or_loses_its_worker_gives_its_budget_back(tmp_path, how):
    """Budget 3 MiB: a holds 2 MiB of it in host memory; a ends (closed by its client, or
    its worker killed); b's 2 MiB then fit in host memory: nothing of a's share leaked."""
    with _pool(tmp_path, 3 * MIB) as pool:
        sa = kernelproxy.connect(pool.address, pool.token)
        sb = kernelproxy.connect(pool.address, pool.token)
        try:
            a, _ = _fill(module_for(sa), 2, 6)
            a[:1].get()
            assert _wait(lambda: _row(sa)["swapped_host"], "a's swap-out") == 2 * MIB
            if how == "closed":
                sa.close()
            else:
                os.kill(_worker_of(pool, sa).process.pid, signal.SIGKILL)
            # (a closed session counts until its worker has ended: it holds the memory till then)
            _wait(lambda: sa.id not in pool.door.sessions, "a's end")
            assert _held(pool) == 0
            b, host_b = _fill(module_for(sb), 2, 7)
            b[:1].get()
            assert _wait(lambda: _row(sb)["swapped"], "b's swap-out") == 2 * MIB
            assert _row(sb)["swapped_host"] == 2 * MIB and _files(tmp_path / "swap") == []
            assert b.get().tobytes() == host_b.tobytes()
        finally:
            sa.close()
            sb.close()


def test_a_budget_of_zero_swaps_to_files_only(tmp_path):
    with _pool(tmp_path, 0) as pool:
        s = kernelproxy.connect(pool.address, pool.token)
        try:
            a, host_a = _fill(module_for(s), 1, 8)
            a[:1].get()
            r = _wait(lambda: (r := _row(s))["swapped"] and r, "the swap-out")
            assert r["swapped_host"] == 0 and len(_files(tmp_path / "swap")) == 1
            assert a.get().tobytes() == host_a.tobytes()
        finally:
            s.close()


def test_the_default_budget_is_a_quarter_of_the_hosts_memory(tmp_path):
    from gpu_backend.worker.swap import host_memory

    with _pool(tmp_path, None) as pool:
        s = kernelproxy.connect(pool.address, pool.token)
        try:
            a, _ = _fill(module_for(s), 1, 9)
            a[:1].get()
            session = pool.door.sessions[s.id]
            assert pool.door.swaps.host_budget(session) == host_memory() // 4 > 0
            assert _wait(lambda: _row(s)["swapped_host"], "the swap-out") == MIB
        finally:
            s.close()


def test_status_says_where_a_swapped_sessions_bytes_are(tmp_path):
    from workbench.pool_views import sessions_view
    from workbench.views import to_text

    with _pool(tmp_path, 3 * MIB) as pool:
        s = kernelproxy.connect(pool.address, pool.token)
        try:
            cp = module_for(s)
            a, _ = _fill(cp, 2, 10)
            a[:1].get()
            _wait(lambda: _row(s)["swapped"], "the swap-out")
            text = to_text(sessions_view(s.status(), s.id), width=300)
            assert "2.0 MiB swapped out (in host memory)" in text, text
            b, _ = _fill(cp, 2, 11)                          # 4 MiB now: 3 fit the budget
            c, _ = _fill(cp, 2, 12)
            c[:1].get()
            _wait(lambda: _row(s)["swapped"] >= 6 * MIB, "the next swap-out")
            text = to_text(sessions_view(s.status(), s.id), width=300)
            assert "in host memory" in text and "on disk" in text, text
        finally:
            s.close()


def _fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="counts descriptors in /proc")
def test_many_cycles_through_both_tiers_leave_nothing_behind(tmp_path):
    """50 swap-out and swap-in cycles of a session half in host memory, half on disk: after
    them, swapped out once more, the worker holds the descriptors it held after the first,
    the swap directory one file, the door's budget that session's share; once the session
    ends, no file and no budget. The bits are the last ones written. (Each cycle is counted
    by the session's swaps: back in, it goes out again soon after, 50 ms idle.)"""
    cycles = 50
    with _pool(tmp_path, MIB, idle=0.05) as pool:
        s = kernelproxy.connect(pool.address, pool.token)
        try:
            cp = module_for(s)
            a = cp.zeros(MIB // 8, dtype=cp.int64)                  # 1 MiB: host memory
            b = cp.zeros(MIB // 8, dtype=cp.int64)                  # 1 MiB more: the file
            a[:1].get()
            pid = _worker_of(pool, s).process.pid
            fds = None
            for cycle in range(1, cycles + 1):
                r = _wait(lambda: (r := _row(s))["swaps"] >= cycle and r["swapped"] and r,
                          f"swap-out {cycle}")
                assert r["swapped_host"] == MIB and r["swapped"] >= 2 * MIB
                fds = _fds(pid) if fds is None else fds             # (swapped out, as below)
                a += 1                                               # (brings both back)
                b -= 1
                int(a[0])
            assert int(a.sum()) == cycles * MIB // 8 and int(b.sum()) == -cycles * MIB // 8
            r = _wait(lambda: (r := _row(s))["swaps"] > cycles and r["swapped"] and r, "the last swap-out")
            assert r["swapped_host"] == MIB and len(_files(tmp_path / "swap")) == 1
            _wait(lambda: _held(pool) == MIB, "the door's count")   # (its report first)
            assert _fds(pid) == fds
        finally:
            s.close()
        _wait(lambda: not pool.door.sessions, "the session's end")
        assert _files(tmp_path / "swap") == [] and _held(pool) == 0
