"""Issue 52: an idle session's arrays swapped out of device memory and back, bitwise, with
the same handles; views share memory again; the swap file is private and goes away; a swap
that cannot be written loses nothing. A real pool on the NumPy device (on a GPU with
``GPUWB_TEST_DEVICES=0``), real workers."""

from __future__ import annotations

import os
import stat
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import kernelproxy
from gpu_backend.pool import LocalPool
from kernelproxy.modules import module_for
from tests.differential import TEST_DEVICES

IDLE = 0.3          # seconds idle before a swap-out (the pool's --swap-idle)
PATIENCE = 60.0     # how long a test waits for the worker to act (never a timing assertion)


def _row(session) -> dict:
    return next(r for r in session.status()["sessions"] if r["session"] == session.id)


def _swapped_clean(session, most: int = 0):
    """A predicate for :func:`_wait`: *session*'s row once it is swapped out with at most
    *most* bytes left on the device (else False); the last row read is kept in its
    ``last`` for the failure's message."""
    def check():
        check.last = row = _row(session)
        return row["swapped"] and row["memory_used"] <= most and row
    check.last = None
    return check


def _wait(predicate, what: str):
    deadline = time.monotonic() + PATIENCE
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"waited {PATIENCE} s for {what}")


def _files(directory: Path) -> list[Path]:
    return sorted(p for p in directory.rglob("*") if p.is_file()) if directory.exists() else []


@pytest.fixture
def swap_pool(tmp_path):
    """A pool that swaps idle sessions to files only (no host budget: the file tier; the host
    tier has its own tests, test_swap_host_tier.py)."""
    with LocalPool(devices=TEST_DEVICES, swap_idle=IDLE, swap_dir=tmp_path / "swap", lease_timeout=30,
                   memory_limit=256 << 20, swap_host_memory=0) as pool:
        yield pool, tmp_path / "swap"


def test_an_idle_session_is_swapped_out_and_its_arrays_come_back_bitwise(swap_pool):
    pool, swap_dir = swap_pool
    s = kernelproxy.connect(pool.address, pool.token)
    try:
        cp = module_for(s)
        rng = np.random.default_rng(52)
        host = rng.standard_normal((300, 200)).astype(np.float32)
        x = cp.asarray(host)
        row = x[5]                     # views of x's memory
        rev = x[::-1, ::3]
        t = x.T
        ints = cp.arange(1000, dtype=cp.int64) * 7
        cplx = (cp.arange(64, dtype=cp.complex128) + 1j) ** 2
        flags = ints % 3 == 0
        empty = cp.zeros((0, 4), dtype=cp.float16)
        parts = cp.split(cp.arange(12.0), 3)      # arrays the worker numbered itself
        scalar = cp.asarray(np.float64(2.5))
        expect = {name: a.get() for name, a in [("x", x), ("row", row), ("rev", rev), ("t", t),
                                                 ("ints", ints), ("cplx", cplx), ("flags", flags),
                                                 ("empty", empty), ("scalar", scalar)]}
        swapped = _wait(lambda: _row(s)["swapped"], "the idle session to be swapped out")
        assert swapped >= host.nbytes + ints.nbytes
        assert _row(s)["memory_used"] < 4096   # its device memory given back
        files = _files(swap_dir)
        assert len(files) == 1
        assert stat.S_IMODE(files[0].stat().st_mode) == 0o600
        assert stat.S_IMODE(swap_dir.stat().st_mode) == 0o700

        # the next op brings everything back under the same handles, bitwise
        got = {"x": x.get(), "row": row.get(), "rev": rev.get(), "t": t.get(),
               "ints": ints.get(), "cplx": cplx.get(), "flags": flags.get(),
               "empty": empty.get(), "scalar": scalar.get()}
        for name, value in expect.items():
            assert value.dtype == got[name].dtype and value.shape == got[name].shape, name
            assert value.tobytes() == got[name].tobytes(), name
        assert [p.get().tolist() for p in parts] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]]
        assert _files(swap_dir) == []          # the file went with the swap-in
        _wait(lambda: _row(s)["swapped"] == 0, "the pool to hear of the swap-in")

        # views share their base's memory again: a write through x shows through row and rev
        x[5, :] = 42.0
        assert float(row[0]) == 42.0 and float(rev[294, 0]) == 42.0
        assert float(t[0, 5]) == 42.0
    finally:
        s.close()


def test_a_swapped_session_that_ends_leaves_no_file(swap_pool):
    pool, swap_dir = swap_pool
    s = kernelproxy.connect(pool.address, pool.token)
    cp = module_for(s)
    a = cp.ones(100_000, dtype=cp.float64)
    a[:1].get()   # (the ops go out at a sync)
    _wait(lambda: _row(s)["swapped"], "the swap-out")
    assert len(_files(swap_dir)) == 1
    s.close()
    del a
    _wait(lambda: not _files(swap_dir), "the ended session's swap file to go")


def test_swap_cycles_leave_nothing_behind(swap_pool):
    """Each cycle: idle (out), an op (in). No file, descriptor or array is left over."""
    pool, swap_dir = swap_pool
    s = kernelproxy.connect(pool.address, pool.token)
    try:
        cp = module_for(s)
        a = cp.arange(50_000, dtype=cp.float32)
        a[:1].get()
        total = 0.0
        for cycle in range(8):
            swapped = _wait(lambda: _row(s)["swapped"], "a swap-out")
            assert swapped >= 50_000 * 4   # (a, and views of it the client still frees)
            a += 1
            total = float(a.sum())
            _wait(lambda: _row(s)["swapped"] == 0, "the pool to hear of the swap-in")
        assert total == float((np.arange(50_000, dtype=np.float32) + 8).sum())
        _wait(lambda: _row(s)["swapped"], "the last swap-out")
        assert len(_files(swap_dir)) == 1
        a += 0
        a[:1].get()
        assert len(_files(swap_dir)) == 0
    finally:
        s.close()


def test_a_swap_that_cannot_be_written_loses_nothing(tmp_path):
    blocked = tmp_path / "not-a-directory"
    blocked.write_text("a file where the swap directory should be")
    with LocalPool(devices="cpu", swap_idle=IDLE, swap_dir=blocked, lease_timeout=30,
                   swap_host_memory=0) as pool:
        s = kernelproxy.connect(pool.address, pool.token)
        try:
            cp = module_for(s)
            a = cp.arange(10_000, dtype=cp.int32)
            a[:1].get()
            time.sleep(IDLE * 4)   # (idle past the swap time: the worker tries, and fails)
            _wait(lambda: _row(s)["swapped"] == 0, "the pool to hear of the swap-in")
            assert int(a.sum()) == sum(range(10_000))
        finally:
            s.close()


def test_a_pool_without_swapping_keeps_arrays_in_place(tmp_path):
    with LocalPool(devices="cpu", swap_idle=None, swap_dir=tmp_path / "swap") as pool:
        s = kernelproxy.connect(pool.address, pool.token)
        try:
            cp = module_for(s)
            a = cp.ones(1000)
            a[:1].get()
            time.sleep(IDLE * 3)
            assert _row(s)["swapped"] == 0 and _files(tmp_path / "swap") == []
            assert float(a.sum()) == 1000.0
        finally:
            s.close()


def test_the_swap_file_is_only_its_users(swap_pool):
    pool, swap_dir = swap_pool
    s = kernelproxy.connect(pool.address, pool.token)
    try:
        cp = module_for(s)
        a = cp.full(4096, 7, dtype=cp.uint8)
        a[:1].get()
        _wait(lambda: _row(s)["swapped"], "the swap-out")
        (path,) = _files(swap_dir)
        st = path.stat()
        assert st.st_uid == os.getuid()
        assert stat.S_IMODE(st.st_mode) & 0o077 == 0
        assert int(a[0]) == 7
    finally:
        s.close()


def test_status_shows_a_swapped_session(swap_pool):
    from workbench.pool_views import sessions_view
    from workbench.views import to_text

    pool, _swap_dir = swap_pool
    s = kernelproxy.connect(pool.address, pool.token)
    try:
        cp = module_for(s)
        a = cp.zeros(1 << 18, dtype=cp.float32)
        a[:1].get()
        _wait(lambda: _row(s)["swapped"], "the swap-out")
        text = to_text(sessions_view(s.status(), s.id), width=300)
        assert "swapped out" in text and "come back at its next op" in text
        float(a.sum())
        _wait(lambda: _row(s)["swapped"] == 0, "the swap-in")
        assert "swapped out" not in to_text(sessions_view(s.status(), s.id), width=300)
    finally:
        s.close()


# ------------------------------------------------------------------ pressure: a full device
MIB = 1 << 20


def _idle_for(session, seconds: float) -> None:
    """Wait until the pool counts *session* idle for *seconds*, knowing what it holds (its
    worker's report of its last ops has come: before it, a new session looks idle since it
    opened and empty)."""
    _wait(lambda: (r := _row(session))["idle"] >= seconds and r["ops"] > 0
          and (r["memory_used"] > 0 or r["swapped"]), f"{seconds} s of idle time")


@pytest.fixture
def full_pool(tmp_path):
    """A NumPy device of 64 MiB shared by its sessions, no swapping by idle time."""
    with LocalPool(devices="cpu", numpy_device_memory=64 * MIB, memory_limit=48 * MIB,
                   swap_idle=None, swap_dir=tmp_path / "swap", lease_timeout=60) as pool:
        yield pool


def test_a_full_device_swaps_the_idle_session_out_for_the_next_one(full_pool, monkeypatch):
    import gpu_backend.door.swap_broker as swap_broker
    from gpu_backend.door.swap_pressure import PRESSURE_IDLE
    from kernelproxy import OutOfMemoryError

    monkeypatch.setattr(swap_broker, "ROOM_PATIENCE", 0.2)   # (b's next idle moment is later)

    a = kernelproxy.connect(full_pool.address, full_pool.token)
    b = kernelproxy.connect(full_pool.address, full_pool.token)
    try:
        # (creation calls go to the active session: module_for makes it so)
        xa = module_for(a).arange(5 * MIB, dtype=np.float64)        # 40 MiB of the 64
        expect = float(xa.sum())
        _idle_for(a, PRESSURE_IDLE + 0.2)
        xb = module_for(b).ones(5 * MIB, dtype=np.float64)   # 40 more: a goes out to make room
        assert float(xb.sum()) == 5 * MIB
        assert _wait(lambda: _row(a)["swapped"], "a's swap-out") >= 40 * MIB
        assert _row(b)["swapped"] == 0

        # a comes back while b is busy (a loop of ops): no room, and a clear error; nothing lost
        stop = threading.Event()
        busy = threading.Thread(target=lambda: [float(xb[0]) for _ in iter(stop.is_set, True)])
        busy.start()
        try:
            _wait(lambda: _row(b)["idle"] < 0.3 and _row(b)["ops"] > 3, "b's loop")
            with pytest.raises(OutOfMemoryError, match="device's memory is full"):
                float(xa.sum())
        finally:
            stop.set()
            busy.join()
        assert _row(a)["swapped"] >= 40 * MIB
        # once b has been idle, a's next op swaps b out and a's arrays are back, bitwise
        _idle_for(b, PRESSURE_IDLE + 0.2)
        assert float(xa.sum()) == expect
        assert _wait(lambda: _row(b)["swapped"], "b's swap-out") >= 40 * MIB
    finally:
        a.close()
        b.close()


def test_a_session_the_pool_thinks_idle_but_that_worked_since_stays_on_its_device(
        full_pool, monkeypatch):
    """The pool judges idleness from its workers' usage reports, which lag a worker under
    load: one asked out for another's memory checks its own clock, stays where it has
    worked within the idle time the pool counted on, and says so; nothing is freed, and the
    asker gets the device-full error, its memory and b's arrays intact. (The pool's view is
    made stale here, and the idle time raised to 30 s, so that no machine's speed decides.)"""
    import gpu_backend.door.swap_broker as swap_broker
    import gpu_backend.door.swap_pressure as swap_pressure
    from kernelproxy import OutOfMemoryError

    monkeypatch.setattr(swap_pressure, "PRESSURE_IDLE", 30.0)
    monkeypatch.setattr(swap_broker, "PRESSURE_IDLE", 30.0)
    a = kernelproxy.connect(full_pool.address, full_pool.token)
    b = kernelproxy.connect(full_pool.address, full_pool.token)
    try:
        xb = module_for(b).ones(5 * MIB, dtype=np.float64)          # 40 MiB of the 64
        assert float(xb.sum()) == 5 * MIB
        _wait(lambda: _row(b)["memory_used"] >= 40 * MIB, "b's report of its memory")
        full_pool.door.sessions[b.id].last_work -= 100.0   # (its reports, seen as stale)
        with pytest.raises(OutOfMemoryError, match="device's memory is full"):
            float(module_for(a).ones(5 * MIB, dtype=np.float64).sum())
        assert _row(b)["swapped"] == 0
        assert float(xb.sum()) == 5 * MIB
    finally:
        a.close()
        b.close()


def test_the_next_user_waits_for_the_last_ones_op_to_be_a_moment_old(full_pool):
    """Users in turn: b's allocation finds the device full while a's last op ended a moment
    ago (not yet idle for PRESSURE_IDLE): it waits for a to be, and a is swapped out for it,
    rather than b failing at once; and back again."""
    a = kernelproxy.connect(full_pool.address, full_pool.token)
    b = kernelproxy.connect(full_pool.address, full_pool.token)
    try:
        xa = module_for(a).arange(5 * MIB, dtype=np.float64)        # 40 MiB of the 64
        expect = float(xa.sum())
        xb = module_for(b).ones(5 * MIB, dtype=np.float64)          # 40 more, at once
        assert float(xb.sum()) == 5 * MIB
        assert _wait(lambda: _row(a)["swapped"], "a's swap-out") >= 40 * MIB
        assert float(xa.sum()) == expect                             # a's turn again
        assert _wait(lambda: _row(b)["swapped"], "b's swap-out") >= 40 * MIB
    finally:
        a.close()
        b.close()


def test_the_pool_knows_a_sessions_memory_before_its_client_has_the_reply(full_pool):
    """A worker reports memory grown (by REPORT_GROWTH at least) before its reply, whatever
    its report interval: once a client holds the reply to a batch that allocated, the pool
    counts that memory (a session asking for room next never finds this one empty and idle
    since it opened: the moment-old test above failed once under a loaded machine's
    scheduling, the report sent after the reply, or held back by the interval)."""
    s = kernelproxy.connect(full_pool.address, full_pool.token)
    try:
        cp = module_for(s)
        float(cp.ones(4, dtype=np.float64).sum())   # (its worker's first reports)
        x = cp.ones(2 * MIB, dtype=np.float64)      # 16 MiB, within the report interval
        assert float(x.sum()) == 2 * MIB
        row = _row(s)
        assert row["memory_used"] >= 16 * MIB and row["ops"] > 0
    finally:
        s.close()


def test_a_session_past_its_own_limit_swaps_nobody_out(full_pool):
    from gpu_backend.door.swap_pressure import PRESSURE_IDLE
    from kernelproxy import OutOfMemoryError

    a = kernelproxy.connect(full_pool.address, full_pool.token)
    b = kernelproxy.connect(full_pool.address, full_pool.token)
    try:
        xa = module_for(a).ones(2 * MIB, dtype=np.float64)          # 16 MiB
        float(xa.sum())
        _idle_for(a, PRESSURE_IDLE + 0.2)
        with pytest.raises(OutOfMemoryError):
            module_for(b).ones(7 * MIB, dtype=np.float64).sum().get()   # 56 MiB: past b's limit
        time.sleep(0.3)
        assert _row(a)["swapped"] == 0
        assert float(xa.sum()) == 2 * MIB
    finally:
        a.close()
        b.close()


def test_an_array_dropped_while_swapped_out_does_not_come_back(swap_pool):
    pool, swap_dir = swap_pool
    s = kernelproxy.connect(pool.address, pool.token)
    try:
        cp = module_for(s)
        keep = cp.arange(1000, dtype=cp.int32)
        drop = cp.ones(250_000, dtype=cp.float64)
        float(drop.sum())
        _wait(lambda: _row(s)["swapped"] >= drop.nbytes, "the swap-out")
        del drop                      # its free goes out with the next batch, before the swap-in
        assert int(keep.sum()) == sum(range(1000))
        row = _wait(lambda: (r := _row(s))["swapped"] == 0 and r, "the swap-in")
        assert row["memory_used"] < 250_000 * 8   # (the dropped array stayed behind)
    finally:
        s.close()


def test_a_session_holding_a_captured_cuda_graph_is_not_swapped(swap_pool):
    """A graph captured with CuPy's graph API holds its arrays' addresses: moved, a launch
    would write where they no longer are. Its session keeps its arrays in place."""
    pool, swap_dir = swap_pool
    s = kernelproxy.connect(pool.address, pool.token)
    try:
        cp = module_for(s)
        a = cp.arange(1000, dtype=cp.float32)
        stream = cp.cuda.Stream(non_blocking=True)
        with stream:
            stream.begin_capture()
            b = a * 2 + 1
            graph = stream.end_capture()
        stream.synchronize()
        time.sleep(IDLE * 5)   # (idle past its swap time several times over)
        assert _row(s)["swapped"] == 0 and _files(swap_dir) == []
        with stream:
            a += 1
            graph.launch()
        stream.synchronize()
        assert b.get().tolist() == ((np.arange(1000, dtype=np.float32) + 1) * 2 + 1).tolist()
    finally:
        s.close()


# ------------------------------------------------------------------ the swap cap
def test_a_session_past_its_users_swap_cap_stays_on_its_device(tmp_path):
    """The pool's swap cap (bytes each user may have swapped out): a session that would pass
    it keeps its arrays on the device, one that fits goes; each user's figure counts."""
    with LocalPool(devices="cpu", swap_idle=IDLE, swap_dir=tmp_path / "swap",
                   swap_cap=1 * MIB, lease_timeout=30) as pool:
        big = kernelproxy.connect(pool.address, pool.token)
        small = kernelproxy.connect(pool.address, pool.token)
        try:
            a = module_for(big).ones(4 * MIB // 8, dtype=np.float64)     # 4 MiB: over the cap
            a[:1].get()
            b = module_for(small).ones(64 * 1024 // 8, dtype=np.float64)  # 64 KiB: within it
            b[:1].get()
            assert _wait(lambda: _row(small)["swapped"], "the small session's swap-out") >= 64 * 1024
            _idle_for(big, IDLE * 6)   # (idle well past its swap time: asked, and refused)
            assert _row(big)["swapped"] == 0
            assert float(a.sum()) == 4 * MIB // 8 and float(b.sum()) == 64 * 1024 // 8
        finally:
            big.close()
            small.close()


def test_a_full_device_swaps_nobody_past_the_swap_cap(tmp_path):
    from gpu_backend.door.swap_pressure import PRESSURE_IDLE
    from kernelproxy import OutOfMemoryError

    with LocalPool(devices="cpu", numpy_device_memory=64 * MIB, memory_limit=48 * MIB,
                   swap_idle=None, swap_dir=tmp_path / "swap", swap_cap=0, lease_timeout=60) as pool:
        a = kernelproxy.connect(pool.address, pool.token)
        b = kernelproxy.connect(pool.address, pool.token)
        try:
            xa = module_for(a).ones(5 * MIB, dtype=np.float64)          # 40 MiB of the 64
            float(xa.sum())
            _idle_for(a, PRESSURE_IDLE + 0.2)
            with pytest.raises(OutOfMemoryError, match="swap cap"):
                module_for(b).ones(5 * MIB, dtype=np.float64).sum().get()
            assert _row(a)["swapped"] == 0 and float(xa.sum()) == 5 * MIB
        finally:
            a.close()
            b.close()
