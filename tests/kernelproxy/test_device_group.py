"""A client that holds several devices: ``cupy.cuda.Device(k)`` over one session per device.

Real pools with several devices (three NumPy devices here; on a GPU machine
``GPUWB_TEST_MULTI_DEVICES=0,1`` puts the same tests on two GPUs), real workers, real
sockets. What the client does is kernelproxy.device_group's docstring.
"""

from __future__ import annotations

import os
import re
import threading
import time

import numpy as np
import pytest

import kernelproxy
from gpu_backend.pool import LocalPool
from gpu_backend.protocol.errors import CUDAError, ProtocolError, QuotaExceededError, SessionLostError
from kernelproxy.connection import hello
from kernelproxy.modules import module_for

from tests.gpu_backend.test_users_pool import write_users

MULTI_DEVICES = os.environ.get("GPUWB_TEST_MULTI_DEVICES", "cpu,cpu,cpu")
POOL_DEVICES = len(MULTI_DEVICES.split(","))


def _peer_error(resides: int, current: int) -> str:
    """CuPy's message for an array of another device, as a pattern."""
    return re.escape(f"The device where the array resides ({resides}) is different from the "
                     f"current device ({current}). Peer access is unavailable between these "
                     "devices.")


@pytest.fixture(scope="module")
def multi_pool():
    with LocalPool(devices=MULTI_DEVICES, lease_timeout=20.0, memory_limit=1 << 30) as pool:
        yield pool


@pytest.fixture
def two(multi_pool):
    """A client of two devices, its ``cupy`` module, and the current device put back."""
    session = kernelproxy.connect(multi_pool.address, multi_pool.token, devices=2)
    cp = module_for(session)
    try:
        yield session, cp
    finally:
        cp.cuda.runtime.setDevice(0)
        session.close()


def _open_sessions(pool) -> list[dict]:
    return pool.door.status()["sessions"]


def _eventually_no_sessions(pool, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while _open_sessions(pool) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _open_sessions(pool) == []


def test_each_device_is_a_session_of_its_own_on_its_own_device(two, multi_pool):
    session, cp = two
    assert cp.cuda.runtime.getDeviceCount() == 2
    assert [s.ordinal for s in session.group] == [0, 1]
    rows = {r["session"]: r for r in _open_sessions(multi_pool)}
    devices = [rows[s.id]["device"] for s in session.group]
    assert len(set(devices)) == 2                      # two devices of the pool, not one twice
    x0 = cp.arange(4, dtype=cp.float32)
    with cp.cuda.Device(1) as device:
        assert device.id == 1 and cp.cuda.runtime.getDevice() == 1
        x1 = cp.arange(4, dtype=cp.float32) * 10
        assert x1.device == cp.cuda.Device(1) and x1.data.device_id == 1
    assert cp.cuda.Device().id == 0 and x0.device.id == 0
    assert x1._s is session.group[1] and x0._s is session
    np.testing.assert_array_equal(x1.get(), [0, 10, 20, 30])   # read from any current device
    assert float(x0.sum()) == 6.0 and float(x1.sum()) == 60.0
    cp.cuda.Device(1).synchronize()
    props = cp.cuda.runtime.getDeviceProperties(1)
    assert props == cp.cuda.runtime.getDeviceProperties(0) or props["name"]
    assert cp.cuda.Device(1).mem_info[1] > 0


def test_functions_run_on_the_current_device_and_refuse_another_devices_array(two):
    session, cp = two
    x0 = cp.arange(3)
    with cp.cuda.Device(1):
        x1 = cp.ones(3, dtype=x0.dtype)
        with pytest.raises(ValueError, match=_peer_error(0, 1)):
            cp.add(x0, x1)
        assert cp.add(x1, x1).device.id == 1               # the device goes on
    with pytest.raises(ValueError, match=_peer_error(1, 0)):
        cp.concatenate([x0, x1])
    np.testing.assert_array_equal((x0 + 1).get(), [1, 2, 3])   # and so does device 0


def test_methods_and_operators_run_on_their_arrays_device(two):
    _session, cp = two
    x0 = cp.arange(4)
    with cp.cuda.Device(1):
        x1 = cp.arange(4)
        y = x0 * 2 + 1                                     # x0's device: the values CuPy gives
        assert y.device.id == 0 and x0.sum().device.id == 0
        np.testing.assert_array_equal(y.get(), [1, 3, 5, 7])
        with pytest.raises(ValueError, match=_peer_error(1, 0)):
            x0 + x1
    assert float((x1 * x1).sum()) == 14.0


def test_copies_move_arrays_to_the_current_device(two):
    _session, cp = two
    host = np.arange(12, dtype=np.float64).reshape(3, 4)
    x0 = cp.asarray(host)
    with cp.cuda.Device(1):
        moved = x0.copy()
        assert moved.device.id == 1
        np.testing.assert_array_equal(moved.get(), host)
        fortran = x0.copy(order="F")
        assert fortran.device.id == 1 and fortran.flags.f_contiguous
        as_is = cp.asarray(x0)
        assert as_is.device.id == 1 and as_is is not x0
        cast = cp.array(x0, dtype=cp.float32)
        assert cast.device.id == 1 and cast.dtype == np.float32
        np.testing.assert_array_equal(cast.get(), host.astype(np.float32))
        total = moved + cp.ones((3, 4))                     # usable with device 1's arrays
        np.testing.assert_array_equal(total.get(), host + 1)
    again = cp.asarray(moved)                               # and back to device 0
    assert again.device.id == 0
    np.testing.assert_array_equal((again + x0).get(), 2 * host)
    assert cp.asarray(x0) is x0                             # same device: no copy, as CuPy


def test_like_functions_make_the_current_devices_array_from_a_prototype(two):
    _session, cp = two
    x0 = cp.asfortranarray(cp.arange(6, dtype=cp.int32).reshape(2, 3))
    with cp.cuda.Device(1):
        zeros = cp.zeros_like(x0)
        assert zeros.device.id == 1 and zeros.dtype == np.int32 and zeros.shape == (2, 3)
        assert zeros.flags.f_contiguous                      # order "K": the prototype's layout
        full = cp.full_like(x0, 7, dtype=cp.float32)
        np.testing.assert_array_equal(full.get(), np.full((2, 3), 7, np.float32))
        ones = cp.ones_like(x0, shape=(4,))
        np.testing.assert_array_equal(ones.get(), np.ones(4, np.int32))
        empty = cp.empty_like(x0, order="C")
        assert empty.device.id == 1 and empty.flags.c_contiguous


def test_the_current_device_is_per_thread(two):
    _session, cp = two
    seen = {}

    def other_thread():
        seen["start"] = cp.cuda.Device().id
        cp.cuda.Device(1).use()
        seen["array"] = cp.arange(2).device.id

    cp.cuda.Device(1).use()
    worker = threading.Thread(target=other_thread)
    worker.start()
    worker.join()
    assert seen == {"start": 0, "array": 1}
    assert cp.arange(2).device.id == 1
    cp.cuda.Device(0).use()
    assert cp.arange(2).device.id == 0


def test_a_device_the_client_does_not_hold_is_cudas_error(two):
    _session, cp = two
    with pytest.raises(CUDAError, match="invalid device ordinal"):
        cp.cuda.Device(2).use()
    with pytest.raises(CUDAError, match="invalid device ordinal"):
        cp.cuda.runtime.getDeviceProperties(2)
    assert cp.cuda.runtime.deviceCanAccessPeer(0, 1) == 0


def test_closing_device_0_closes_every_devices_session(multi_pool):
    # a session closed by the test before stays listed until its worker has exited
    _eventually_no_sessions(multi_pool)
    session = kernelproxy.connect(multi_pool.address, multi_pool.token, devices=2)
    try:
        assert len(_open_sessions(multi_pool)) == 2
    finally:
        session.close()
    assert all(s.closed for s in session.group)
    _eventually_no_sessions(multi_pool)


def test_more_devices_than_the_pool_has_is_refused_and_leaves_nothing_open(multi_pool):
    with pytest.raises(SessionLostError, match=f"the pool has {POOL_DEVICES} devices: a session "
                                               f"cannot hold {POOL_DEVICES + 1}"):
        kernelproxy.connect(multi_pool.address, multi_pool.token, devices=POOL_DEVICES + 1)
    _eventually_no_sessions(multi_pool)
    with pytest.raises(ValueError, match="devices is a number of devices"):
        kernelproxy.connect(multi_pool.address, multi_pool.token, devices=0)


def test_apart_from_names_only_the_clients_own_open_sessions(multi_pool):
    import zmq
    ctx = zmq.Context()
    try:
        for bad in (["no-such-session"], "not a list", [1, 2], ["x"] * (POOL_DEVICES + 1)):
            with pytest.raises(ProtocolError, match="apart_from"):
                hello(ctx, multi_pool.address, multi_pool.token, apart_from=bad)
    finally:
        ctx.destroy(linger=0)
    _eventually_no_sessions(multi_pool)
    with kernelproxy.connect(multi_pool.address, multi_pool.token) as s:   # the pool goes on
        assert float(module_for(s).ones(2).sum()) == 2.0


def test_each_device_counts_against_the_users_sessions(tmp_path):
    path = tmp_path / "users.toml"
    tokens = write_users(path, {"bob": {"sessions": 2}, "eve": {}})
    with LocalPool(devices=MULTI_DEVICES, users_file=path, lease_timeout=20) as pool:
        with kernelproxy.connect(pool.address, tokens["bob"]) as first:
            with pytest.raises(QuotaExceededError, match="bob may have 2 sessions at once"):
                kernelproxy.connect(pool.address, tokens["bob"], devices=2)
            assert len(_open_sessions(pool)) == 1 or _eventually_one(pool)
            assert float(module_for(first).ones(3).sum()) == 3.0
        with kernelproxy.connect(pool.address, tokens["bob"], devices=2) as both:
            assert [r["user"] for r in _open_sessions(pool)] == ["bob", "bob"]
            import zmq
            ctx = zmq.Context()
            try:   # another user cannot place a session by bob's
                with pytest.raises(ProtocolError, match="not an open session of yours"):
                    hello(ctx, pool.address, tokens["eve"], apart_from=[both.id])
            finally:
                ctx.destroy(linger=0)


def _eventually_one(pool) -> bool:
    deadline = time.monotonic() + 10
    while len(_open_sessions(pool)) != 1 and time.monotonic() < deadline:
        time.sleep(0.05)
    return len(_open_sessions(pool)) == 1


def test_the_workbench_connects_and_reconnects_with_its_devices(multi_pool):
    pytest.importorskip("IPython")   # (workbench's views; the GPU machine has no Jupyter)
    from workbench.connection import Workbench
    from workbench.magics import connected_view
    bench = Workbench()
    try:
        session = bench.connect(multi_pool.address, multi_pool.token, devices=2)
        import cupy   # the import hook: the proxy, bound to device 0's session
        assert cupy.cuda.runtime.getDeviceCount() == 2
        with cupy.cuda.Device(1):
            assert cupy.arange(3).device.id == 1
        rows = dict(connected_view(session).rows)
        assert rows["devices"].startswith("0: ") and ", 1: " in rows["devices"]
        assert rows["memory limit"].endswith("per device")
        again = bench.reconnect()                          # a lost session comes back whole
        assert again is not session and len(again.group) == 2 and session.closed
        assert cupy.cuda.runtime.getDeviceCount() == 2
    finally:
        bench.disconnect()
    _eventually_no_sessions(multi_pool)


def test_gpu_status_and_info_show_every_device_of_the_client(multi_pool):
    pytest.importorskip("IPython")
    from workbench.connection import Workbench
    from workbench.magics import info_view, status_view
    bench = Workbench()
    try:
        session = bench.connect(multi_pool.address, multi_pool.token, devices=2)
        import cupy
        with cupy.cuda.Device(1):
            y = cupy.ones(1000)          # memory and ops on device 1 only
            assert float(y.sum()) == 1000.0
        ids = [s.id for s in session.group]
        pool_devices = {s["session"]: s["device"] for s in _open_sessions(multi_pool)}

        def device_1_reported():
            view = status_view(session)
            rows = view.data["devices_of_client"]
            return view if rows[1].get("ops") and rows[1].get("memory_used") else None

        deadline = time.monotonic() + 10   # workers report usage every ~0.5 s
        while (view := device_1_reported()) is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert view is not None, "device 1's session never reported its usage"
        rows = view.data["devices_of_client"]
        assert [r["ordinal"] for r in rows] == [0, 1] and [r["session"] for r in rows] == ids
        assert [r["device"] for r in rows] == [pool_devices[i] for i in ids]
        assert rows[1]["memory_used"] >= 8000 and rows[1]["arrays"] >= 1
        text = str(view)
        assert "This client's devices" in text
        assert f"{ids[0]} (you)" in text and f"{ids[1]} (you)" in text   # both marked
        info = info_view(session)
        assert [d.get("index") for d in info.data["devices"]] == \
            [s.device.get("index") for s in session.group]
        assert f"(session {ids[1]})" in str(info)
    finally:
        bench.disconnect()
    _eventually_no_sessions(multi_pool)


def test_the_workbench_reopens_the_group_when_another_devices_session_is_lost(multi_pool):
    import signal
    from workbench.connection import Workbench
    bench = Workbench()
    try:
        session = bench.connect(multi_pool.address, multi_pool.token, devices=2)
        lost = session.group[1]
        worker = next(w for w in list(multi_pool.door.host.workers.values())
                      if w.session is not None and w.session.sid == lost.id)
        os.kill(worker.process.pid, signal.SIGKILL)
        worker.process.wait(10)
        deadline = time.monotonic() + 20
        while not (lost.closed or lost.heartbeat.lost) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert lost.closed or lost.heartbeat.lost, "device 1's lost session was never noticed"
        assert not (session.closed or session.heartbeat.lost)   # device 0's is fine
        again = bench.require()      # auto_reconnect (the default): the whole group anew
        assert again is not session and session.closed and len(again.group) == 2
        import cupy
        with cupy.cuda.Device(1):
            assert float(cupy.arange(4.0).sum()) == 6.0
    finally:
        bench.disconnect()
    _eventually_no_sessions(multi_pool)
