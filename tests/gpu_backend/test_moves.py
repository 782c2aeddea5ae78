"""Issue 52: sessions moved between the devices of a running pool without losing an array
(``gpuwb-backend drain``/``move``; door/moves.py, worker/handover.py, kernelproxy/relink.py).
A real pool with two devices (two NumPy devices in CI; ``GPUWB_TEST_MOVE_DEVICES=0,1`` on
a host with two GPUs), real workers, the administration socket the command uses."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import kernelproxy
from gpu_backend.cli_moves import admin_request
from gpu_backend.pool import LocalPool
from kernelproxy.modules import module_for
from kernelproxy.session import Session
from kernelproxy.settings import SessionSettings
from workbench.pool_views import sessions_view

from tests.gpu_backend.test_swap import MIB, PATIENCE, _idle_for, _row, _wait

DEVICES = os.environ.get("GPUWB_TEST_MOVE_DEVICES", "cpu,cpu")


def _where(pool, session) -> dict:
    rows = admin_request(pool.door.admin.address, {"t": "moves"})["sessions"]
    return next(r for r in rows if r["session"] == session.id)


def _other(pool, device: str) -> str:
    return next(d for d in pool.door.devices if d != device)


def _move(pool, session) -> str:
    """Move *session* to the pool's other device, and wait until it is there."""
    start = _where(pool, session)["device"]
    target = _other(pool, start)
    reply = admin_request(pool.door.admin.address,
                          {"t": "move", "session": session.id, "device": target})
    assert reply["ok"], reply
    _wait(lambda: _where(pool, session)["device"] == target and not _where(pool, session)["moving"],
          "the session to move")
    return target


def _worked(session, ops: int):
    """*ops* ops run by *session* on an array, read; the array and the ops its worker's
    usage report counts (waited for)."""
    x = module_for(session).ones(100)
    for _ in range(ops):
        x = x + 1
    float(x[0])
    counted = _wait(lambda: (r := _row(session)) and (r.get("ops") or 0) >= ops and r["ops"],
                    "usage")
    return x, counted


def _one_lone(pool, sessions: list, size: int) -> tuple[list, int, list]:
    """Each of three *sessions* given an array of *size* (session k's full of k + 1) and
    read; the arrays, the session alone on its device and the two sharing one."""
    arrays = []
    for k, s in enumerate(sessions):
        arrays.append(module_for(s).full(size, float(k + 1)))
        float(arrays[-1][0])
    devices = [_where(pool, s)["device"] for s in sessions]
    lone = next(i for i, d in enumerate(devices) if devices.count(d) == 1)
    return arrays, lone, [i for i in range(3) if i != lone]


@pytest.fixture
def pool(tmp_path):
    with LocalPool(devices=DEVICES, swap_dir=tmp_path / "swap", lease_timeout=30,
                   memory_limit=256 << 20) as pool:
        yield pool


@pytest.mark.parametrize("transport", ["same-host", "tcp"])
def test_a_moved_session_keeps_every_array_bitwise_with_views_sharing_memory(pool, transport):
    address = pool.address if transport == "same-host" else pool.tcp_address
    s = kernelproxy.connect(address, pool.token)
    try:
        cp = module_for(s)
        rng = np.random.default_rng(52)
        host = rng.standard_normal((200, 300)).astype(np.float32)
        x = cp.asarray(host)
        row, rev = x[7], x[::-1, ::2]
        ints = cp.arange(999, dtype=cp.int64) * 3
        empty = cp.zeros((0, 5), dtype=cp.float16)
        expect = {"x": host, "row": host[7], "rev": host[::-1, ::2], "ints": np.arange(999) * 3}
        before = s.device.get("name"), s.moves
        target = _move(pool, s)
        assert float(x.sum()) == pytest.approx(float(host.sum()), rel=1e-5)
        assert s.moves == before[1] + 1   # (the client followed its session)
        for name, array in (("x", x), ("row", row), ("rev", rev), ("ints", ints)):
            assert np.array_equal(array.get(), expect[name]), name
        assert empty.shape == (0, 5)
        row[0] = 123.0                    # a view still shares its base's memory
        assert float(x[7, 0]) == 123.0
        assert _where(pool, s)["device"] == target
    finally:
        s.close()


def test_batches_in_flight_during_a_move_run_once_and_in_order(pool):
    """A loop keeps issuing ops (and syncing) while its session moves: every op runs exactly
    once, in order, on one device or the other."""
    s = kernelproxy.connect(pool.address, pool.token)
    try:
        cp = module_for(s)
        acc = cp.zeros(64, dtype=cp.float64)
        done = threading.Event()
        moved: list[str] = []

        def move_soon():
            time.sleep(0.05)
            moved.append(_move(pool, s))
            done.set()

        mover = threading.Thread(target=move_soon)
        mover.start()
        count = 0
        while not done.is_set() or count < 300:
            acc = acc + 1.0
            acc *= 1.0
            count += 1
            if count % 7 == 0:
                assert float(acc[3]) == count
        mover.join()
        assert np.array_equal(acc.get(), np.full(64, float(count)))
        assert moved and s.moves == 1
    finally:
        s.close()


def test_held_stretches_replay_on_the_new_worker(pool):
    # (held whatever the machine's load: not judged by how much replay saves)
    s = Session(pool.address, pool.token, settings=SessionSettings(replay_measured=False))
    try:
        cp = module_for(s)
        x = cp.arange(32, dtype=cp.float32)

        def step(v):
            return (v * 0.5 + 1.0) * 2.0 - 2.0   # = v: a stretch that repeats

        for _ in range(20):
            x = step(x)
            float(x[1])
            time.sleep(0.001)   # (the worker runs the next replay ahead meanwhile)
        assert s.memory_info()["stretches"]["held"] >= 1
        for _ in range(3):
            x = step(x)
            float(x[1])
            time.sleep(0.001)
        _move(pool, s)   # (with a replay run ahead, likely: its results stay behind)
        assert s.memory_info()["arrays"] == 1
        for _ in range(20):
            x = step(x)
            assert float(x[1]) == 1.0
        x = step(x)
        e = x[1]            # (the same stretch: its element kept past it)
        assert float(e) == 1.0
        figures = s.memory_info()["stretches"]   # (the new worker's own counts)
        x[1] = 7.0          # a 0-d view of x, as in CuPy: the write is seen through it
        assert float(e) == 7.0
        x[1] = 1.0
        assert np.array_equal(x.get(), np.arange(32, dtype=np.float32))
        # the stretch came with the session: replayed at once, never offered again, and
        # through graphs (its kept element ``x[1]``, a 0-d view of ``x``, made again on the
        # new worker as on the old: worker/kept_views.py, carried with the stretch)
        assert figures["held"] >= 1 and figures["replays"] >= 15 and figures["refused"] == 0
        assert figures["graphed"] >= 15, figures
    finally:
        s.close()


def test_a_move_while_replays_go_early_loses_nothing(pool):
    """The session moves (another thread asks the pool) while its loop's replays are sent
    early (kernelproxy/early_replay.py): the batches in flight, early ones among them, go to
    the new worker, and every value read is the loop's own. (Early all along: not sent whole
    for the lane's pushes, whose moves test_pushed_replies.py tests.)"""
    s = Session(pool.address, pool.token,
                settings=SessionSettings(replay_measured=False, lane_over_early=False))
    try:
        cp = module_for(s)
        x = cp.arange(32, dtype=cp.float32)

        def step(v):
            return ((v * 0.5 + 1.0) * 2.0 - 2.0) * 1.0 + 0.0   # = v: a stretch that repeats

        for _ in range(12):
            x = step(x)
            assert float(x[1]) == 1.0
        assert s.stretches.figures()["early"] >= 1
        moved: list = []
        mover = threading.Thread(target=lambda: moved.append(_move(pool, s)))
        mover.start()
        for _ in range(400):   # (replays go early on while the pool moves the session:
            x = step(x)        # 140-170 iterations on the 2-core development machine)
            assert float(x[1]) == 1.0
            if moved:
                break
        mover.join(60)
        assert moved and _where(pool, s)["device"] == moved[0]
        for _ in range(10):
            x = step(x)
            assert float(x[1]) == 1.0
        assert np.array_equal(x.get(), np.arange(32, dtype=np.float32))
    finally:
        s.close()


def test_a_session_that_cannot_move_is_told_why_and_goes_on(pool):
    s = kernelproxy.connect(pool.address, pool.token)
    try:
        cp = module_for(s)
        rs = cp.random.RandomState(7)   # a remote object: moves carry arrays only
        x = rs.standard_normal(100)
        total = float(x.sum())          # (the object is the worker's once this returns)
        start = _where(pool, s)["device"]
        reply = admin_request(pool.door.admin.address,
                              {"t": "move", "session": s.id, "device": _other(pool, start)})
        assert reply["ok"]
        row = _wait(lambda: (r := _where(pool, s))["refused"] and r, "the refusal")
        assert "RandomState" in row["refused"] and row["device"] == start
        assert float(x.sum()) == total   # the session goes on where it was
        assert s.moves == 0
    finally:
        s.close()


def test_drain_moves_every_session_off_a_device_and_places_none_there(pool):
    sessions = [kernelproxy.connect(pool.address, pool.token) for _ in range(3)]
    try:
        arrays = []
        for k, s in enumerate(sessions):   # (arrays made from the main thread: module_for)
            arrays.append(module_for(s).full(10, float(k)))
        drained = _where(pool, sessions[0])["device"]
        reply = admin_request(pool.door.admin.address, {"t": "drain", "devices": [drained]})
        assert reply["ok"] and reply["draining"] == [drained]
        _wait(lambda: all(_where(pool, s)["device"] != drained and not _where(pool, s)["moving"]
                          for s in sessions), "every session off the drained device")
        for k, (s, a) in enumerate(zip(sessions, arrays)):
            assert float(a.sum()) == 10.0 * k
        late = kernelproxy.connect(pool.address, pool.token)
        sessions.append(late)
        assert _where(pool, late)["device"] != drained   # nothing placed there meanwhile
        admin_request(pool.door.admin.address, {"t": "undrain", "devices": [drained]})
        assert admin_request(pool.door.admin.address, {"t": "moves"})["draining"] == []
    finally:
        for s in sessions:
            s.close()


def test_the_usage_a_moved_session_counted_is_carried(pool):
    s = kernelproxy.connect(pool.address, pool.token)
    try:
        x, ops = _worked(s, 50)
        _move(pool, s)
        float((x + 1)[0])
        assert _wait(lambda: (_row(s).get("ops") or 0) > ops, "the new worker's usage")
    finally:
        s.close()


def test_bad_administration_requests_are_refused_and_the_pool_serves_on(pool):
    address = pool.door.admin.address
    for bad in ({"t": "drain"}, {"t": "drain", "devices": ["cuda:99"]}, {"t": "nothing"},
                {"t": "move", "session": "nope", "device": "cpu:0"}, [1, 2], "text"):
        reply = admin_request(address, bad)
        assert reply["ok"] is False and reply["error"], bad
    assert os.stat(address[len("ipc://"):]).st_mode & 0o777 == 0o600
    s = kernelproxy.connect(pool.address, pool.token)
    try:
        assert float(module_for(s).arange(4).sum()) == 6.0
    finally:
        s.close()


def test_the_drain_command_moves_the_sessions_and_says_where(pool):
    s = kernelproxy.connect(pool.address, pool.token)
    try:
        x = module_for(s).arange(10.0)
        start = _where(pool, s)["device"]
        out = subprocess.run([sys.executable, "-m", "gpu_backend.cli", "drain", start, "--admin",
                              pool.door.admin.address, "--wait", str(PATIENCE)],
                             capture_output=True, text=True, timeout=PATIENCE + 30)
        assert out.returncode == 0, out.stderr + out.stdout
        assert f"draining {start}: 1 of 1 sessions moved" in out.stdout
        assert float(x.sum()) == 45.0
        assert _where(pool, s)["device"] != start
    finally:
        s.close()


@pytest.mark.parametrize("transport", ["same-host", "tcp"])
def test_an_idle_swapped_session_gives_its_worker_back_and_returns_at_its_next_op(tmp_path,
                                                                               transport):
    """--park-idle: a session swapped out and idle that long is parked (its worker exits,
    giving back its process and device context); its next op brings a worker back."""
    with LocalPool(devices="cpu", swap_dir=tmp_path / "swap", swap_idle=0.2, park_idle=0.4,
                   lease_timeout=30, swap_host_memory=1 << 20) as pool:
        address = pool.address if transport == "same-host" else pool.tcp_address
        s = kernelproxy.connect(address, pool.token)
        try:
            cp = module_for(s)
            host = np.arange(300_000, dtype=np.float64)
            x = cp.asarray(host)
            small = cp.full(10, 7, dtype=cp.int16)   # (in host memory: written out when parked)
            row = _wait(lambda: (r := _row(s))["parked"] and r, "the session to be parked")
            assert row["swapped"] >= host.nbytes and row["swapped_host"] == 0
            workers = [w for w in pool.door.hosts.workers.values() if w.session is not None]
            assert workers == []   # no worker serves it now
            view = sessions_view(s.status(), s.id)   # (what %gpu status and gpuwb status show)
            assert "parked" in view.rows[0][5] and "parked:" in view.caption
            assert np.array_equal(x.get(), host)    # its next op: a worker takes it back
            assert np.array_equal(small.get(), np.full(10, 7, dtype=np.int16))
            assert s.moves == 1 and not _row(s)["parked"]
        finally:
            s.close()
        _wait(lambda: not [p for p in (tmp_path / "swap").rglob("*") if p.is_file()],
              "the session's files to go")


def test_a_parked_session_closed_by_its_client_ends_and_leaves_no_file(tmp_path):
    with LocalPool(devices="cpu", swap_dir=tmp_path / "swap", swap_idle=0.2, park_idle=0.4,
                   lease_timeout=30, swap_host_memory=0) as pool:
        s = kernelproxy.connect(pool.address, pool.token)
        x = module_for(s).ones(50_000)
        assert float(x[0]) == 1.0   # (sent: the worker holds it)
        _wait(lambda: _row(s)["parked"], "the session to be parked")
        sid = s.id
        s.close()
        _wait(lambda: sid not in pool.door.sessions, "the session to end")
        _wait(lambda: not [p for p in (tmp_path / "swap").rglob("*") if p.is_file()],
              "its files to go")
        del x


def test_a_session_moved_twice_counts_its_use_once(pool):
    s = kernelproxy.connect(pool.address, pool.token)
    try:
        x, first = _worked(s, 40)
        _move(pool, s)
        float((x + 1)[0])
        _move(pool, s)
        float((x + 1)[0])
        _wait(lambda: _where(pool, s)["moves"] == 2, "two moves")
        ops = _wait(lambda: (r := _row(s)) and (r.get("ops") or 0) > first and r["ops"], "usage")
        assert ops < 2 * first   # (the first worker's count is carried once, not again)
    finally:
        s.close()


def test_two_sessions_trading_devices_both_arrive(pool):
    a = kernelproxy.connect(pool.address, pool.token)
    xa = module_for(a).full(1000, 3.0)
    b = kernelproxy.connect(pool.address, pool.token)
    xb = module_for(b).full(1000, 5.0)
    try:
        float(xa[0]), float(xb[0])
        da, db = _where(pool, a)["device"], _where(pool, b)["device"]
        assert da != db   # (placement spreads them)
        admin = pool.door.admin.address
        assert admin_request(admin, {"t": "move", "session": a.id, "device": db})["ok"]
        assert admin_request(admin, {"t": "move", "session": b.id, "device": da})["ok"]
        _wait(lambda: _where(pool, a)["device"] == db and _where(pool, b)["device"] == da
              and not _where(pool, a)["moving"] and not _where(pool, b)["moving"], "the trade")
        assert float(xa.sum()) == 3000.0 and float(xb.sum()) == 5000.0
    finally:
        a.close()
        b.close()


def test_a_move_given_up_leaves_the_session_where_it_was(pool, monkeypatch):
    """A worker busy with a long batch does not park in time: the move is given up, the
    worker told, and the session goes on where it was (never parked later, never lost)."""
    import gpu_backend.door.moves as moves
    monkeypatch.setattr(moves, "MOVE_WAIT", 0.3)
    s = kernelproxy.connect(pool.address, pool.token)
    try:
        cp = module_for(s)
        a = cp.ones((1500, 1500))
        float(a[0, 0])
        start = _where(pool, s)["device"]
        busy = a
        for _ in range(6):   # one batch of long ops
            busy = busy @ a / 1500.0
        admin_request(pool.door.admin.address,
                      {"t": "move", "session": s.id, "device": _other(pool, start)})
        assert float(busy[0, 0]) == 1.0
        row = _wait(lambda: (r := _where(pool, s))["refused"] and r, "the move to be given up")
        assert "did not park" in row["refused"] and row["device"] == start
        time.sleep(0.5)   # (its loop idle since: it would have parked by now)
        assert float(a.sum()) == 1500.0 * 1500.0
        assert _where(pool, s)["device"] == start and s.moves == 0
    finally:
        s.close()


def test_an_upload_over_tcp_right_after_a_move_goes_to_the_new_worker(pool):
    s = kernelproxy.connect(pool.tcp_address, pool.token)
    try:
        cp = module_for(s)
        float(cp.ones(10)[0])
        start = _where(pool, s)["device"]
        admin_request(pool.door.admin.address,
                      {"t": "move", "session": s.id, "device": _other(pool, start)})
        _wait(lambda: _where(pool, s)["device"] != start and not _where(pool, s)["moving"], "the move")
        host = np.arange(200_000, dtype=np.float32)   # (large: sent without a copy, waited for)
        x = cp.asarray(host)
        assert np.array_equal(x.get(), host) and s.moves == 1
    finally:
        s.close()


def test_an_embedded_pool_refuses_a_restart_that_nothing_would_follow(pool):
    reply = admin_request(pool.door.admin.address, {"t": "restart"})
    assert reply["ok"] is False and "embedded" in reply["error"]
    s = kernelproxy.connect(pool.address, pool.token)   # (it serves on)
    try:
        assert float(module_for(s).arange(3).sum()) == 3.0
    finally:
        s.close()


def test_a_parked_session_returns_to_the_least_loaded_device(tmp_path):
    """Returning is where the pool rebalances: a parked session's arrays wait in files any
    device of the host reads, so its next op brings it back on the least-loaded device."""
    with LocalPool(devices=DEVICES, swap_dir=tmp_path / "swap", swap_idle=0.2, park_idle=0.4,
                   lease_timeout=30) as pool:
        admin = pool.door.admin.address
        parked = kernelproxy.connect(pool.address, pool.token)
        others = []
        try:
            x = module_for(parked).full(1000, 2.0)
            assert float(x[0]) == 2.0
            home = _where(pool, parked)["device"]
            elsewhere = _other(pool, home)
            _wait(lambda: _row(parked)["parked"], "the session to be parked")
            admin_request(admin, {"t": "drain", "devices": [elsewhere]})
            others = [kernelproxy.connect(pool.address, pool.token) for _ in range(2)]
            assert all(_where(pool, s)["device"] == home for s in others)
            admin_request(admin, {"t": "undrain", "devices": [elsewhere]})
            assert float(x.sum()) == 2000.0   # back, on the device with no session
            assert _where(pool, parked)["device"] == elsewhere and parked.moves == 1
        finally:
            for s in [parked, *others]:
                s.close()


def _swap_files(pool) -> list[str]:
    folder = pool.door.settings.swap_dir
    return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []


def test_a_move_within_the_host_lends_the_arrays_and_leaves_no_file(pool):
    """Within one host the old worker lends its arrays (a GPU: CUDA IPC; the NumPy device:
    files it deletes) and ends only once the new worker has copied them: the move goes
    device to device, and nothing of it stays behind."""
    s = kernelproxy.connect(pool.address, pool.token)
    try:
        cp = module_for(s)
        host = np.random.default_rng(7).standard_normal((300, 200))
        x = cp.asarray(host)
        view = x[::3, 1:]
        float(x[0, 0])
        _move(pool, s)
        assert _where(pool, s)["how"] == "lent"
        assert not _row(s).get("swapped")   # (copied into the new device's memory at once)
        assert np.array_equal(x.get(), host) and np.array_equal(view.get(), host[::3, 1:])
        _wait(lambda: not [n for n in _swap_files(pool) if "-lent-" in n or "manifest" in n],
              "the lender to delete what it lent")
    finally:
        s.close()


def test_a_move_to_its_own_device_gives_the_session_a_fresh_worker(pool):
    s = kernelproxy.connect(pool.address, pool.token)
    try:
        x = module_for(s).arange(1000.0)
        float(x[0])
        here = _where(pool, s)["device"]
        first = pool.door.sessions[s.id].worker
        reply = admin_request(pool.door.admin.address,
                              {"t": "move", "session": s.id, "device": here})
        assert reply["ok"], reply
        _wait(lambda: _where(pool, s)["moves"] == 1 and not _where(pool, s)["moving"], "the move")
        assert float(x.sum()) == 499500.0
        assert _where(pool, s)["device"] == here and pool.door.sessions[s.id].worker is not first
    finally:
        s.close()


def test_a_session_that_does_not_fit_its_new_device_arrives_swapped_and_loses_nothing(tmp_path):
    """The adopter's device is full (the session there may not be swapped: swap cap 0): the
    moved arrays go to the swap directory instead, and come back at an op once there is
    room; while no device has room for them (the one it left is full now too) that op
    fails with the device's out-of-memory error, nothing lost."""
    with LocalPool(devices="cpu,cpu", numpy_device_memory=64 * MIB, memory_limit=48 * MIB,
                   swap_idle=None, swap_dir=tmp_path / "swap", swap_cap=0,
                   lease_timeout=60) as pool:
        a = kernelproxy.connect(pool.address, pool.token)
        b = kernelproxy.connect(pool.address, pool.token)
        c = None
        try:
            cpa = module_for(a)
            host = np.arange(5 * MIB, dtype=np.float64)   # 40 MiB
            xa = cpa.asarray(host)
            float(xa[0])
            cpb = module_for(b)
            xb = cpb.full(5 * MIB, 1.0)
            float(xb[0])
            da, db = _where(pool, a)["device"], _where(pool, b)["device"]
            assert da != db
            assert admin_request(pool.door.admin.address,
                                 {"t": "move", "session": a.id, "device": db})["ok"]
            _wait(lambda: _where(pool, a)["device"] == db and not _where(pool, a)["moving"],
                  "the move")
            assert _wait(lambda: _row(a).get("swapped"), "the session to arrive swapped") >= 40 * MIB
            c = kernelproxy.connect(pool.address, pool.token)   # (placed where a was)
            xc = module_for(c).full(5 * MIB, 2.0)
            float(xc[0])
            assert _where(pool, c)["device"] == da
            with pytest.raises(MemoryError, match="full"):   # (moved once for it at most)
                float(xa[1])
            b.close()
            assert np.array_equal(xa.get(), host)
        finally:
            a.close()
            b.close()
            if c is not None:
                c.close()


def test_an_allocation_where_a_moved_session_was_waits_for_its_lender_to_end(tmp_path, monkeypatch):
    """The worker a session moved away from (its lender) frees what it held as it ends, a
    moment after the move: a session placed on that device meanwhile, whose allocation finds
    the device full of the lender's arrays, waits for the lender to end (the door's
    ``leaving``: door/moves.py, swap_broker.py) instead of failing out of memory (it did,
    once, on a loaded machine). To make the moment last, the lender is stopped (SIGSTOP)
    just before the door tells it to release (the door's own ``_release``, wrapped: it runs
    as ever after the signal), and let go once the allocation is seen waiting."""
    import signal
    with LocalPool(devices="cpu,cpu", numpy_device_memory=64 * MIB, memory_limit=48 * MIB,
                   swap_idle=None, swap_dir=tmp_path / "swap", swap_cap=0,
                   lease_timeout=60) as pool:
        stopped: list[int] = []
        release = pool.door.moves._release

        def stop_then_release(move):
            stopped.append(move.lender.process.pid)
            os.kill(stopped[-1], signal.SIGSTOP)   # (it waits for this word: alive)
            return release(move)
        monkeypatch.setattr(pool.door.moves, "_release", stop_then_release)
        a = kernelproxy.connect(pool.address, pool.token)
        c = None
        try:
            xa = module_for(a).full(5 * MIB, 3.0)   # 40 MiB of the device's 64
            float(xa[0])
            left = _where(pool, a)["device"]
            _move(pool, a)
            assert len(stopped) == 1
            c = kernelproxy.connect(pool.address, pool.token)   # (placed where a was)
            assert _where(pool, c)["device"] == left
            outcome: dict = {}

            def allocate():
                try:
                    outcome["value"] = float(module_for(c).full(5 * MIB, 2.0)[0])
                except Exception as exc:   # noqa: BLE001 (the test says which)
                    outcome["error"] = exc
            thread = threading.Thread(target=allocate)
            thread.start()
            _wait(lambda: pool.door.reclaims or outcome, "the allocation to ask for room")
            assert not outcome and thread.is_alive()   # (waiting for the lender, not failed)
            os.kill(stopped.pop(), signal.SIGCONT)
            thread.join(PATIENCE)
            assert outcome == {"value": 2.0}
            assert np.array_equal(xa.get(), np.full(5 * MIB, 3.0))   # (a lost nothing)
        finally:
            for pid in stopped:
                os.kill(pid, signal.SIGCONT)
            for s in (a, c):
                if s is not None:
                    s.close()


def test_a_lent_move_with_no_worker_to_take_it_leaves_the_session_serving_where_it_was(
        tmp_path, monkeypatch):
    """No spare of the target device is ready in time (none kept: spare_workers 0, and the
    one started for the move is not ready when the lender answers): the move is undone, the
    lender serves on with every array, and its client never had to follow it."""
    import gpu_backend.door.moves as moves
    monkeypatch.setattr(moves, "SPARE_WAIT", 0.0)
    with LocalPool(devices="cpu,cpu", swap_dir=tmp_path / "swap", spare_workers=0,
                   lease_timeout=30) as pool:
        s = kernelproxy.connect(pool.address, pool.token)
        try:
            x = module_for(s).arange(100.0)
            float(x[0])
            start = _where(pool, s)["device"]
            lender = pool.door.sessions[s.id].worker
            admin_request(pool.door.admin.address,
                          {"t": "move", "session": s.id, "device": _other(pool, start)})
            row = _wait(lambda: (r := _where(pool, s))["refused"] and r, "the move to be undone")
            assert "ready" in row["refused"] and row["device"] == start and row["moves"] == 0
            assert float((x * 2).sum()) == 9900.0 and s.moves == 0
            assert pool.door.sessions[s.id].worker is lender
            _wait(lambda: not [n for n in _swap_files(pool) if "-lent-" in n or "manifest" in n],
                  "the loan's files to go")
        finally:
            s.close()


def test_the_pool_moves_an_idle_session_to_even_out_its_devices(tmp_path, monkeypatch):
    """--rebalance-idle: sessions ended so that one device serves two while the other
    serves none; once idle, one of the two moves over (lent), its arrays intact; a
    difference of one session is left alone."""
    import gpu_backend.door.rebalance as rebalance
    monkeypatch.setattr(rebalance, "LOOK", 0.05)
    with LocalPool(devices="cpu,cpu", swap_dir=tmp_path / "swap", rebalance_idle=0.3,
                   lease_timeout=30) as pool:
        sessions = [kernelproxy.connect(pool.address, pool.token) for _ in range(3)]
        try:
            arrays, lone, pair = _one_lone(pool, sessions, 1000)
            time.sleep(0.6)   # (idle long enough, two devices at 2 and 1: nothing moves)
            assert all(_where(pool, s)["moves"] == 0 for s in sessions)
            sessions[lone].close()   # now 2 and 0
            moved = _wait(lambda: [i for i in pair if _where(pool, sessions[i])["moves"] == 1
                                   and not _where(pool, sessions[i])["moving"]], "a rebalancing move")
            assert len(moved) == 1 and _where(pool, sessions[moved[0]])["how"] == "lent"
            assert {_where(pool, sessions[i])["device"] for i in pair} == set(pool.door.devices)
            for i in pair:
                assert float(arrays[i].sum()) == 1000.0 * (i + 1)
            assert pool.door.rebalancer.started == 1
        finally:
            for s in sessions:
                s.close()



def test_a_lent_session_whose_new_worker_dies_goes_back_to_the_old_one(pool):
    """The spare that takes a lent session over is stopped, then killed, before it has the
    arrays: the session goes back to the worker that lent them, nothing lost, its client
    never told it moved."""
    import signal
    s = kernelproxy.connect(pool.address, pool.token)
    try:
        x = module_for(s).arange(500.0)
        float(x[0])
        start = _where(pool, s)["device"]
        target = _other(pool, start)
        spares = _wait(lambda: [w for w in pool.door.hosts.spares(target) if w.port is not None],
                       "a ready spare of the target")
        for spare in spares:
            os.kill(spare.process.pid, signal.SIGSTOP)
        try:
            admin_request(pool.door.admin.address,
                          {"t": "move", "session": s.id, "device": target})
            _wait(lambda: (m := pool.door.sessions[s.id].moving) is not None
                  and m.stage == "adopting", "the adoption to begin")
        finally:
            for spare in spares:
                os.kill(spare.process.pid, signal.SIGKILL)
        row = _wait(lambda: (r := _where(pool, s))["refused"] and r, "the move to be undone")
        assert "ended" in row["refused"] and row["device"] == start and row["moves"] == 0
        assert float(x.sum()) == 124750.0 and s.moves == 0
    finally:
        s.close()


def test_a_drain_keeps_one_clients_sessions_on_separate_devices(tmp_path):
    """A client of two devices (``apart_from``): draining one of them moves its session to
    a third device, not onto its sibling's, though that one is less loaded."""
    with LocalPool(devices="cpu,cpu,cpu", swap_dir=tmp_path / "swap", lease_timeout=30) as pool:
        group = kernelproxy.connect(pool.address, pool.token, devices=2)
        other = kernelproxy.connect(pool.address, pool.token)
        try:
            big = module_for(other).zeros(4 * MIB)   # (32 MiB: its device is the more loaded)
            float(big[0])
            _wait(lambda: _row(other)["memory_used"] >= 32 * MIB, "its memory reported")
            a, b = group.group
            where = {s.id: _where(pool, s)["device"] for s in (a, b, other)}
            assert len(set(where.values())) == 3
            reply = admin_request(pool.door.admin.address,
                                  {"t": "drain", "devices": [where[a.id]]})
            assert reply["ok"] and reply["moves"][0]["to"] == where[other.id], reply
            _wait(lambda: _where(pool, a)["device"] == where[other.id]
                  and not _where(pool, a)["moving"], "the move")
        finally:
            group.close()
            other.close()


def test_a_swap_in_that_does_not_fit_its_device_moves_the_session_to_one_with_room(tmp_path):
    """a is swapped out for b on a full device, and b cannot be swapped out in turn (their
    user's swap cap holds a's own swapped arrays: no timing decides it): a's next op cannot
    bring its arrays back there, so the pool moves a to the other device, which has room,
    and that op runs there (sent again by its client), its arrays bitwise."""
    with LocalPool(devices="cpu,cpu", numpy_device_memory=64 * MIB, memory_limit=48 * MIB,
                   swap_idle=None, swap_dir=tmp_path / "swap", swap_cap=48 * MIB,
                   lease_timeout=60) as pool:
        a = kernelproxy.connect(pool.address, pool.token)
        b = kernelproxy.connect(pool.address, pool.token)
        try:
            host = np.arange(5 * MIB, dtype=np.float64)             # 40 MiB of the 64
            xa = module_for(a).asarray(host)
            float(xa[0])
            here = _where(pool, a)["device"]
            if _where(pool, b)["device"] != here:   # (b beside a: moved there)
                assert admin_request(pool.door.admin.address,
                                     {"t": "move", "session": b.id, "device": here})["ok"]
                _wait(lambda: _where(pool, b)["device"] == here and not _where(pool, b)["moving"],
                      "b beside a")
            from gpu_backend.door.swap_pressure import PRESSURE_IDLE
            _idle_for(a, PRESSURE_IDLE + 0.2)
            xb = module_for(b).ones(5 * MIB, dtype=np.float64)      # 40 more: a goes out
            assert float(xb.sum()) == 5 * MIB
            assert _wait(lambda: _row(a)["swapped"], "a's swap-out") >= 40 * MIB
            # (the cap's 48 MiB less a's 40 leave 8: b's 40 may not go out for a)
            assert float(xa.sum()) == float(host.sum())              # a's turn: elsewhere
            assert _where(pool, a)["device"] != here and _where(pool, a)["moves"] == 1
            assert np.array_equal(xa.get(), host)
            assert _row(b)["swapped"] == 0
        finally:
            a.close()
            b.close()
