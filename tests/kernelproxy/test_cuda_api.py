"""``cupy.cuda`` through the proxy: device facts, streams, events, the memory pool.

On the NumPy device (CI) the device reports no CUDA (versions 0, compute capability
"00") and events time the host; on a GPU pool the same tests check CuPy's answers.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

import kernelproxy
from gpu_backend.protocol.errors import CUDAError, InvalidHandleError, OutOfMemoryError

from tests.differential import POOL_RUNS_NUMPY


@pytest.fixture
def cuda(cp):
    return cp.cuda


def test_runtime_answers_from_the_hello(cp, cuda, session):
    rt = cuda.runtime
    assert rt.getDeviceCount() == 1 and rt.getDevice() == 0
    assert rt.is_hip is False and cuda.driver.is_hip is False
    props = rt.getDeviceProperties(0)
    assert isinstance(props["name"], bytes) and {"major", "minor", "totalGlobalMem"} <= set(props)
    assert isinstance(rt.runtimeGetVersion(), int) and isinstance(rt.driverGetVersion(), int)
    assert isinstance(cuda.driver.get_build_version(), int)
    if POOL_RUNS_NUMPY:
        assert rt.runtimeGetVersion() == 0 and props["name"] == b"NumPy (host CPU)"
    else:
        assert rt.runtimeGetVersion() >= 11000 and props["major"] >= 3
    assert cuda.runtime.CUDARuntimeError is CUDAError
    with pytest.raises(CUDAError, match="invalid device"):
        rt.getDeviceProperties(1)
    assert rt.deviceCanAccessPeer(0, 0) == 0
    # the client has no CUDA toolkit of its own (the pool compiles): CuPy's "not found"
    assert cuda.get_nvcc_path() is None and cuda.get_cuda_path() is None


def test_device(cp, cuda):
    d = cuda.Device()
    assert d.id == 0 and int(d) == 0 and d == cuda.Device(0) and repr(d) == "<CUDA Device 0>"
    props = cuda.runtime.getDeviceProperties(0)
    assert d.compute_capability == f"{props['major']}{props['minor']}"
    free, total = d.mem_info
    assert 0 <= free <= total
    with cuda.Device(0) as inside:
        assert inside.id == 0 and cuda.get_device_id() == 0
    d.synchronize()
    with pytest.raises(CUDAError, match="invalid device"):
        cuda.Device(3).use()
    with pytest.raises(CUDAError, match="invalid device"):
        with cuda.Device(1):
            pass
    assert cuda.get_device_id() == 0
    with pytest.raises(AttributeError, match="not forwarded"):
        d.cublas_handle  # noqa: B018


def test_streams_keep_issue_order_and_results(cp, cuda):
    assert cuda.get_current_stream() == cuda.Stream.null and cuda.Stream.null.ptr == 0
    s1, s2 = cuda.Stream(), cuda.Stream(non_blocking=True, priority=-1)
    assert s1 != s2 and s1.ptr != 0 and s2.priority == -1
    with s1:
        assert cuda.get_current_stream() == s1
        a = cp.arange(1000, dtype=cp.float64)
        with s2:
            assert cuda.get_current_stream() == s2
            b = a * 2
        assert cuda.get_current_stream() == s1
    assert cuda.get_current_stream() == cuda.Stream.null
    s2.synchronize()
    assert s1.done is True
    np.testing.assert_array_equal(b.get(), np.arange(1000.0) * 2)
    called = []
    s1.add_callback(lambda stream, status, arg: called.append((stream, status, arg)), "x")
    assert called == [(s1, 0, "x")]
    s1.use()
    try:
        assert cuda.get_current_stream() == s1
    finally:
        cuda.Stream.null.use()
    assert s1.is_capturing() is False   # (CuPy's graph API: tests/kernelproxy/test_graph_api.py)


def test_streams_are_per_thread(cp, cuda):
    seen = []
    with cuda.Stream() as mine:
        t = threading.Thread(target=lambda: seen.append(cuda.get_current_stream()))
        t.start()
        t.join()
        assert cuda.get_current_stream() == mine
    assert seen == [cuda.Stream.null]


def test_events_time_the_work_between_them(cp, cuda):
    start, end = cuda.Event(), cuda.Event()
    start.record()
    x = cp.ones((256, 256))
    for _ in range(5):
        x = x @ x / 256
    end.record()
    end.synchronize()
    assert end.done is True
    elapsed = cuda.get_elapsed_time(start, end)
    assert isinstance(elapsed, float) and elapsed > 0
    np.testing.assert_allclose(x.get(), np.ones((256, 256)))
    stream_event = cuda.Stream().record()
    assert isinstance(stream_event, cuda.Event) and stream_event.done


def test_event_errors(cp, cuda, session):
    untimed = cuda.Event(disable_timing=True)
    untimed.record()
    timed = cuda.Event()
    timed.record()
    with pytest.raises(CUDAError):
        cuda.get_elapsed_time(untimed, timed)
    never = cuda.Event()
    with pytest.raises(CUDAError):
        cuda.get_elapsed_time(never, timed)
    with pytest.raises(TypeError):
        cuda.get_elapsed_time(timed, 1.0)
    with pytest.raises(NotImplementedError, match="interprocess"):
        cuda.Event(interprocess=True, disable_timing=True)
    # the session goes on after the errors
    assert float(cp.arange(4).sum()) == 6


def test_dropped_event_is_freed_on_the_worker(cp, cuda, session):
    ev = cuda.Event()
    ev.record()
    hid = ev.ptr
    del ev
    # the free travelled in op order: a call naming the id now finds nothing
    from gpu_backend.protocol import api
    from gpu_backend.protocol import messages as m
    seq = session.submit(m.KIND_CUDA, api.VALUE, None, "event.done", hid)
    with pytest.raises(InvalidHandleError):
        session.value(seq)
    assert float(cp.ones(3).sum()) == 3


def test_unknown_cuda_call_is_refused(cp, session):
    from gpu_backend.protocol import api
    from gpu_backend.protocol import messages as m
    from gpu_backend.protocol.errors import ProtocolError
    with pytest.raises(ProtocolError, match="unknown CUDA call"):
        session.value(session.submit(m.KIND_CUDA, api.VALUE, None, "os.system", None, ["ls"]))
    assert float(cp.ones(2).sum()) == 2


def test_memory_pool(pool):
    s = kernelproxy.connect(pool.address, pool.token)
    try:
        cp = kernelproxy.modules.module_for(s)
        mp = cp.get_default_memory_pool()
        assert mp is cp.get_default_memory_pool()
        base = mp.used_bytes()
        x = cp.zeros(1 << 16, dtype=cp.float64)
        assert mp.used_bytes() - base >= x.nbytes
        assert mp.total_bytes() >= mp.used_bytes() and mp.n_free_blocks() >= 0
        assert mp.get_limit() == s.memory_limit
        mp.set_limit(size=mp.used_bytes() + 1024)
        with pytest.raises(OutOfMemoryError):
            float(cp.ones(1 << 20).sum())
        mp.set_limit(size=10 * s.memory_limit)   # never above the session's own limit
        assert float(x.sum()) == 0   # the session goes on
        assert mp.get_limit() == s.memory_limit
        mp.set_limit(fraction=0)   # back to the session's limit
        assert mp.get_limit() == s.memory_limit
        with pytest.raises(ValueError):
            mp.set_limit(size=1, fraction=0.5)
        del x
        mp.free_all_blocks()
        assert mp.used_bytes() <= base
        free, total = cp.cuda.runtime.memGetInfo()
        assert total == s.memory_limit and 0 < free <= total
        pinned = cp.get_default_pinned_memory_pool()
        buf = cp.cuda.alloc_pinned_memory(64)
        assert np.frombuffer(buf, np.uint8).size == 64 and pinned.used_bytes() == 0
        with pytest.raises(NotImplementedError, match="set_allocator"):
            cp.cuda.set_allocator(None)
    finally:
        s.close()


def test_import_hook_serves_cuda_modules(session):
    kernelproxy.install(session)
    try:
        import cupy
        import cupy.cuda.runtime as rt
        from cupy.cuda import driver, memory, stream
        from cupy_backends.cuda.api import driver as backends_driver
        assert rt is cupy.cuda.runtime and driver is backends_driver
        assert memory.OutOfMemoryError is OutOfMemoryError
        assert stream.Event is cupy.cuda.Event
        from cupy._util import PerformanceWarning
        assert issubclass(PerformanceWarning, RuntimeWarning)
        with pytest.raises(AttributeError, match="not forwarded"):
            cupy.cuda.nccl  # noqa: B018
    finally:
        kernelproxy.uninstall()
