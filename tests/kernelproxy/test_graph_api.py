"""CuPy's graph API through the pool (kernelproxy/graphs.py, worker/user_graphs.py): the
cases of CuPy's tests/cupy_tests/cuda_tests/test_graph.py that apply, and the pool's own
(a launch is one op, memory, dropped graphs, stretch replay left alone, threads).

Each body of CuPy's cases takes ``xp``: the proxy, and where the reference is local CuPy
on a GPU (``GPUWB_REFERENCE=cupy``) local CuPy as well, so that what is asserted of the
proxy is what CuPy does. On the NumPy device (CI) a capture is recorded calls and CuPy's
refusals come from devices/capture_refusals.py; on a GPU the capture is CuPy's own.
"""

from __future__ import annotations

import gc
import threading

import numpy as np
import pytest

import kernelproxy
from gpu_backend.protocol.errors import OutOfMemoryError
from kernelproxy.graphs import abandon_capture
from kernelproxy.modules import build_modules, module_for

from tests.differential import POOL_RUNS_NUMPY, REFERENCE_IS_NUMPY

SIDES = ["proxy"] if REFERENCE_IS_NUMPY else ["proxy", "cupy"]


@pytest.fixture(autouse=True)
def no_capture_left(session):
    """A test that fails half-way through a capture leaves none to the next one."""
    yield
    assert not abandon_capture(session), "the test left a capture in progress"


@pytest.fixture(params=SIDES)
def xp(request, session):
    """The proxy ``cupy`` (and, on a GPU machine, local CuPy): one body, both sides."""
    if request.param == "proxy":
        return module_for(session)
    import cupy
    return cupy


def _sparse(xp):
    """``cupyx.scipy.sparse`` of *xp*'s side."""
    if build_modules()["cupy"] is xp:
        return build_modules()["cupyx.scipy.sparse"]
    import cupyx.scipy.sparse
    return cupyx.scipy.sparse


def _equal(a, b):
    np.testing.assert_array_equal(a.get(), b.get())


def _runtime_new_enough(xp) -> bool:
    return xp.cuda.runtime.runtimeGetVersion() >= 11010


# ---------------------------------------------------------------- CuPy's TestGraph

def _helper1(xp, a):
    a = a + 3
    a = a * 7.6
    return a ** 2


def _helper2(xp, a):
    a = 3 * xp.sin(a)
    return xp.sqrt(a)


def _helper3(xp, a):
    a = a * xp.fft.fft(a)
    return xp.fft.ifft(a)


def _helper4(xp, a):
    result = xp.zeros((1,), dtype=xp.int32)
    if a.sum() > 0:   # synchronize!
        result += 1
    if a[-1] >= 0:    # synchronize!
        result += 2
    return result


@pytest.mark.parametrize("upload", (True, False))
def test_capture_run_on_same_stream(xp, upload):
    s = xp.cuda.Stream(non_blocking=True)
    a = xp.random.random((100,))
    xp.cuda.get_current_stream().synchronize()
    for func in (_helper1, _helper2, _helper3):
        with s:
            s.begin_capture()
            out1 = func(xp, a)
            g = s.end_capture()
            if upload and _runtime_new_enough(xp):
                g.upload()
            g.launch()
        s.synchronize()
        out2 = func(xp, a)
        _equal(out1, out2)


@pytest.mark.parametrize("upload", (True, False))
def test_capture_run_on_different_streams(xp, upload):
    s1 = xp.cuda.Stream(non_blocking=True)
    s2 = xp.cuda.Stream(non_blocking=True)
    a = xp.random.random((100,))
    xp.cuda.get_current_stream().synchronize()
    for func in (_helper1, _helper2, _helper3):
        with s1:
            s1.begin_capture()
            out1 = func(xp, a)
            g = s1.end_capture()
        with s2:
            if upload and _runtime_new_enough(xp):
                g.upload()
            g.launch()
        s2.synchronize()
        out2 = func(xp, a)
        _equal(out1, out2)


@pytest.mark.parametrize("upload", (True, False))
def test_stream_is_capturing(xp, upload):
    s = xp.cuda.Stream(non_blocking=True)
    a = xp.random.random((100,))
    with s:
        s.begin_capture()
        assert s.is_capturing()
        assert not xp.cuda.Stream.null.is_capturing()
        b = a * 3
        g = s.end_capture()
    assert not s.is_capturing()
    assert not xp.cuda.Stream.null.is_capturing()
    if upload and _runtime_new_enough(xp):
        g.upload()
    xp.cuda.get_current_stream().synchronize()
    g.launch()
    s.synchronize()
    _equal(b, 3 * a)


@pytest.mark.parametrize("upload", (True, False))
def test_capture_launch_host_func(xp, upload):
    s = xp.cuda.Stream(non_blocking=True)
    counter = {"count": 0}

    def callback(x):
        counter["count"] += x["delta"]

    with s:
        s.begin_capture()
        s.launch_host_func(callback, {"delta": 1})   # (the graph keeps the callback)
        del callback
        gc.collect()
        g = s.end_capture()
    if upload:
        g.upload()
    g.launch()
    xp.cuda.get_current_stream().synchronize()
    assert counter["count"] == 1
    g.launch()
    xp.cuda.get_current_stream().synchronize()
    assert counter["count"] == 2


@pytest.mark.parametrize("upload", (True, False))
def test_stream_fork_join(xp, upload):
    """Two streams forked and joined with events inside one capture: the proxy runs them
    in issue order on the worker's one stream, a schedule CUDA's graph allows."""
    s1 = xp.cuda.Stream(non_blocking=True)
    s2 = xp.cuda.Stream(non_blocking=True)
    e1, e2 = xp.cuda.Event(), xp.cuda.Event()
    a = xp.random.random((100,))

    def func(x):
        return 3 * x + 1

    with s1:
        s1.begin_capture()
        out1 = a * 100
        e1.record(s1)
        s2.wait_event(e1)
        assert s2.is_capturing()   # (joined)
        with s2:
            out2 = func(out1)
            e2.record(s2)
        s1.wait_event(e2)
        g = s1.end_capture()
    assert not s1.is_capturing()
    assert not s2.is_capturing()
    if upload and _runtime_new_enough(xp):
        g.upload()
    xp.cuda.get_current_stream().synchronize()
    g.launch()
    s1.synchronize()
    _equal(out2, func(a * 100))


@pytest.mark.parametrize("upload", (True, False))
def test_null_stream_cannot_capture(xp, upload):
    s = xp.cuda.Stream(non_blocking=False)
    a = xp.random.random((100,))
    with s:
        s.begin_capture()
        b = a + 4
        assert s.is_capturing()
        # the legacy stream is unhappy when a blocking stream is capturing
        with pytest.raises(xp.cuda.runtime.CUDARuntimeError) as e:
            xp.cuda.Stream.null.is_capturing()
        assert "cudaErrorStreamCaptureImplicit" in str(e.value)
        g = s.end_capture()
    assert not s.is_capturing()
    assert not xp.cuda.Stream.null.is_capturing()
    if upload and _runtime_new_enough(xp):
        g.upload()
    xp.cuda.get_current_stream().synchronize()
    g.launch()
    s.synchronize()
    _equal(b, a + 4)


def test_stream_capture_failure1(xp):
    s = xp.cuda.Stream(non_blocking=True)
    with s:
        s.begin_capture()
        with pytest.raises(xp.cuda.runtime.CUDARuntimeError) as e:
            s.synchronize()
        assert "cudaErrorStreamCaptureUnsupported" in str(e.value)
        # an invalid operation invalidates the capture sequence
        with pytest.raises(xp.cuda.runtime.CUDARuntimeError) as e:
            s.end_capture()
        assert "cudaErrorStreamCaptureInvalidated" in str(e.value)
    assert not s.is_capturing()   # left capture mode: normal use again
    s.synchronize()


def test_stream_capture_failure2(xp):
    s1 = xp.cuda.Stream(non_blocking=True)
    s2 = xp.cuda.Stream(non_blocking=True)
    e2 = xp.cuda.Event()
    a = xp.random.random((100,))
    with s1:
        s1.begin_capture()
        with pytest.raises(xp.cuda.runtime.CUDARuntimeError) as e:
            s2.end_capture()
        assert "cudaErrorIllegalState" in str(e.value)
        e2.record(s1)
        s2.wait_event(e2)
        with s2:
            b = a ** 3  # noqa: F841
        with pytest.raises(xp.cuda.runtime.CUDARuntimeError) as e:
            s2.end_capture()
        assert "cudaErrorStreamCaptureUnmatched" in str(e.value)
        with pytest.raises(xp.cuda.runtime.CUDARuntimeError) as e:
            s1.end_capture()
        assert "cudaErrorStreamCaptureInvalidated" in str(e.value)
    assert not s1.is_capturing()
    assert not s2.is_capturing()
    s1.synchronize()
    s2.synchronize()


def test_stream_capture_failure3(xp):
    s1 = xp.cuda.Stream(non_blocking=True)
    s2 = xp.cuda.Stream(non_blocking=True)
    e2 = xp.cuda.Event()
    a = xp.random.random((100,))
    with s1:
        s1.begin_capture()
        e2.record(s1)
        s2.wait_event(e2)
        with s2:
            # the function synchronizes inside, which capture forbids: CuPy raises
            with pytest.raises(RuntimeError) as e:
                xp.where(a > 0.5)
            assert "is capturing" in str(e.value)
        with pytest.raises(xp.cuda.runtime.CUDARuntimeError) as e:
            s1.end_capture()
        assert "cudaErrorStreamCaptureUnjoined" in str(e.value)
    assert not s1.is_capturing()
    assert not s2.is_capturing()
    s1.synchronize()
    s2.synchronize()


def test_stream_capture_failure4(xp):
    s = xp.cuda.Stream(non_blocking=True)
    with s:
        s.begin_capture()
        s.done   # noqa: B018  (querying the stream during capture is illegal)
        with pytest.raises(xp.cuda.runtime.CUDARuntimeError) as e:
            s.end_capture()
        assert "cudaErrorStreamCaptureInvalidated" in str(e.value)
    assert not s.is_capturing()
    s.synchronize()


def test_stream_capture_failure5(xp):
    s = xp.cuda.Stream(non_blocking=True)
    a = xp.random.random((100,))
    with s:
        s.begin_capture()
        with pytest.raises(RuntimeError) as e:
            _helper4(xp, a)
        assert "is capturing" in str(e.value)
        s.end_capture()   # (a refused read does not invalidate the capture)
    assert not s.is_capturing()
    s.synchronize()


def test_stream_capture_failure6(xp):
    s = xp.cuda.Stream(non_blocking=True)
    with s:
        s.begin_capture()
        with pytest.raises(xp.cuda.runtime.CUDARuntimeError) as e:
            s.synchronize()
        assert "cudaErrorStreamCaptureUnsupported" in str(e.value)
        with pytest.raises(xp.cuda.runtime.CUDARuntimeError) as e:
            s.end_capture()
        assert "cudaErrorStreamCaptureInvalidated" in str(e.value)
    assert not s.is_capturing()
    s.synchronize()


def test_stream_capture_failure_cublas(xp):
    s = xp.cuda.Stream(non_blocking=True)
    a = xp.random.random((3, 4))
    b = xp.random.random((4, 5))
    with s:
        s.begin_capture()
        with pytest.raises(NotImplementedError) as e:
            xp.matmul(a, b)
        assert "cuBLAS" in str(e.value)
        s.end_capture()
    assert not s.is_capturing()
    s.synchronize()


def test_stream_capture_failure_cusolver(xp):
    s = xp.cuda.Stream(non_blocking=True)
    a = xp.random.random((8, 8))
    a += a.T
    with s:
        s.begin_capture()
        with pytest.raises(NotImplementedError) as e:
            xp.linalg.svd(a)
        assert "cuSOLVER" in str(e.value)
        s.end_capture()
    assert not s.is_capturing()
    s.synchronize()


def test_stream_capture_failure_curand(xp):
    s = xp.cuda.Stream(non_blocking=True)
    with s:
        s.begin_capture()
        with pytest.raises(NotImplementedError) as e:
            xp.random.random(100)
        assert "cuRAND" in str(e.value)
        s.end_capture()
    assert not s.is_capturing()
    s.synchronize()


def test_stream_capture_failure_cusparse(xp):
    pytest.importorskip("scipy.sparse")
    sparse = _sparse(xp)
    s = xp.cuda.Stream(non_blocking=True)
    a = xp.zeros((3, 4))
    a[0] = 1
    a = sparse.csr_matrix(a)
    a.has_canonical_format   # noqa: B018  (no custom kernels launched during capture)
    with s:
        s.begin_capture()
        with pytest.raises(NotImplementedError) as e:
            a * a.T
        assert "cuSPARSE" in str(e.value)
        s.end_capture()
    assert not s.is_capturing()
    s.synchronize()


# ---------------------------------------------------------------- CuPy's rules, further

def test_graph_is_made_by_capture_only(xp):
    with pytest.raises(NotImplementedError, match="stream capture"):
        xp.cuda.Graph()
    with pytest.raises(RuntimeError, match="default \\(legacy\\) stream"):
        xp.cuda.Stream.null.begin_capture()
    s = xp.cuda.Stream(non_blocking=True)
    with pytest.raises(xp.cuda.runtime.CUDARuntimeError, match="cudaErrorIllegalState"):
        s.end_capture()
    with pytest.raises(TypeError):
        s.begin_capture("relaxed")
    assert not s.is_capturing()


def test_arrays_from_before_a_capture_change_only_at_each_launch(xp):
    """An in-place update inside the graph happens once per launch, never at capture."""
    s = xp.cuda.Stream(non_blocking=True)
    x = xp.zeros(16, dtype=xp.float32)
    counts = xp.arange(16, dtype=xp.int64)
    with s:
        s.begin_capture()
        x += 1
        counts[3:5] = counts[3:5] * 10
        y = x * 2                      # made during capture: shape and dtype known
        assert y.shape == (16,) and y.dtype == xp.float32
        g = s.end_capture()
    s.synchronize()
    np.testing.assert_array_equal(x.get(), np.zeros(16, np.float32))
    np.testing.assert_array_equal(counts.get(), np.arange(16))
    for launches in (1, 2, 3):
        g.launch()
        s.synchronize()
        np.testing.assert_array_equal(x.get(), np.full(16, launches, np.float32))
        np.testing.assert_array_equal(y.get(), np.full(16, 2 * launches, np.float32))
    expected = np.arange(16)
    expected[3:5] *= 1000
    np.testing.assert_array_equal(counts.get(), expected)


def test_a_launch_reads_its_inputs_as_they_are_then(xp):
    """Launched twice, with the inputs changed between: each launch's results follow."""
    s = xp.cuda.Stream(non_blocking=True)
    a = xp.arange(10, dtype=xp.float64)
    b = xp.ones(10)
    with s:
        s.begin_capture()
        out = (a * 2 + b).sum()
        g = s.end_capture()
    g.launch()
    s.synchronize()
    assert float(out) == 2 * 45 + 10
    a[...] = 5                          # (outside the capture: runs now)
    b += 1
    g.launch()
    s.synchronize()
    assert float(out) == 10 * (5 * 2 + 2)
    a.fill(-1)
    g.launch()
    s.synchronize()
    assert float(out) == 10 * (-2 + 2)


def test_a_stream_that_is_not_capturing_runs_during_a_capture(xp):
    s = xp.cuda.Stream(non_blocking=True)
    other = xp.cuda.Stream(non_blocking=True)
    a = xp.arange(8, dtype=xp.float32)
    with s:
        s.begin_capture()
        captured = a + 1
        with other:
            assert not other.is_capturing()
            ran = a * 3            # runs now: readable at once
            other.synchronize()
            np.testing.assert_array_equal(ran.get(), np.arange(8, dtype=np.float32) * 3)
        again = captured * 2
        g = s.end_capture()
    g.launch()
    s.synchronize()
    np.testing.assert_array_equal(again.get(), (np.arange(8, dtype=np.float32) + 1) * 2)


def test_writes_through_a_view_and_a_stream_between(xp):
    """A captured write through a view of an array from before the capture happens at each
    launch only; a write on a stream that is not capturing, in the middle of the capture,
    happens at once and stays."""
    s = xp.cuda.Stream(non_blocking=True)
    other = xp.cuda.Stream(non_blocking=True)
    x = xp.zeros(8, dtype=xp.float32)
    with s:
        s.begin_capture()
        v = x[2:6]
        v += 1
        with other:
            x[0] = 7
            other.synchronize()
        w = x * 1
        g = s.end_capture()
    s.synchronize()
    np.testing.assert_array_equal(x.get(), [7, 0, 0, 0, 0, 0, 0, 0])
    for launches in (1, 2):
        g.launch()
        xp.cuda.get_current_stream().synchronize()
        expected = np.array([7, 0, launches, launches, launches, launches, 0, 0], np.float32)
        np.testing.assert_array_equal(x.get(), expected)
        np.testing.assert_array_equal(w.get(), expected)


def test_host_transfers_are_refused_during_capture(xp):
    s = xp.cuda.Stream(non_blocking=True)
    a = xp.arange(4.0)
    with s:
        s.begin_capture()
        with pytest.raises(RuntimeError, match="is capturing"):
            xp.asarray(np.arange(3.0))
        with pytest.raises(RuntimeError, match="is capturing"):
            a.get()
        with pytest.raises(RuntimeError, match="is capturing"):
            a[1].item()
        with pytest.raises(RuntimeError, match="is capturing"):
            float(a.sum())
        b = a * 2
        g = s.end_capture()   # (none of them invalidated it)
    g.launch()
    s.synchronize()
    np.testing.assert_array_equal(b.get(), np.arange(4.0) * 2)


def test_device_synchronize_during_capture_invalidates_it(xp):
    s = xp.cuda.Stream(non_blocking=True)
    with s:
        s.begin_capture()
        with pytest.raises(xp.cuda.runtime.CUDARuntimeError, match="cudaErrorStreamCapture"):
            xp.cuda.Device().synchronize()
        with pytest.raises(RuntimeError, match="invalidated"):
            s.is_capturing()
        with pytest.raises(xp.cuda.runtime.CUDARuntimeError,
                           match="cudaErrorStreamCaptureInvalidated"):
            s.end_capture()
    assert not s.is_capturing()
    xp.cuda.Device().synchronize()


# ---------------------------------------------------------------- the pool's own

@pytest.fixture
def cp(session):
    return module_for(session)


def test_a_launch_is_one_op(cp, session):
    s = cp.cuda.Stream(non_blocking=True)
    x = cp.arange(1000, dtype=cp.float32)
    with s:
        s.begin_capture()
        y = x
        for _ in range(20):
            y = y * 1.0001 + 0.5
        total = y.sum()
        g = s.end_capture()
    before = session.ops_issued
    g.launch()
    assert session.ops_issued == before + 1
    value = float(total)
    assert session.ops_issued == before + 2
    expected = np.arange(1000, dtype=np.float32)
    for _ in range(20):
        expected = expected * np.float32(1.0001) + np.float32(0.5)
    assert value == pytest.approx(float(expected.sum()), rel=1e-5)


def test_stretch_replay_leaves_graphs_alone(pool, monkeypatch):
    """A loop of launch-and-read repeats, as does a loop of captures: neither stretch is
    held by the worker (the launch spoils its stretch; a capture keeps none), where every
    repeated stretch would be held otherwise (``GPUWB_REPLAY_MEASURED=0``)."""
    monkeypatch.setenv("GPUWB_REPLAY_MEASURED", "0")
    with kernelproxy.connect(pool.address, pool.token) as session:
        cp = module_for(session)
        s = cp.cuda.Stream(non_blocking=True)
        x = cp.arange(100, dtype=cp.float32)
        with s:
            s.begin_capture()
            y = (x + 1) * 2
            g = s.end_capture()
        values = []
        for _ in range(12):
            g.launch()
            values.append(float(y[7]))
        for _ in range(8):
            with s:
                s.begin_capture()
                z = x - 1
                h = s.end_capture()
            h.launch()
            values.append(float(z[7]))
        assert values == [16.0] * 12 + [6.0] * 8
        assert session.memory_info()["stretches"]["held"] == 0
        assert session.memory_info()["graphs"] == {"captures": 9, "launches": 20,
                                                    "capturing": False}


def test_a_dropped_graph_frees_its_memory(cp, session):
    s = cp.cuda.Stream(non_blocking=True)
    a = cp.ones(1 << 18, dtype=cp.float32)   # 1 MiB
    session.sync()
    base = session.memory_info()["memory_used"]
    with s:
        s.begin_capture()
        t = a * 2
        u = t + 1
        del t                          # dropped by the client: still the graph's
        total = u.sum()
        del u
        g = s.end_capture()
    held = session.memory_info()["memory_used"] - base
    assert held >= 2 << 20              # both temporaries stay while the graph lives
    g.launch()
    assert float(total) == 3.0 * (1 << 18)
    del g
    gc.collect()
    freed = session.memory_info()["memory_used"] - base
    assert freed < 1 << 20              # (the 0-d total is kept: it is the client's)
    assert float(total) == 3.0 * (1 << 18)


def test_a_graph_counts_against_the_session_memory(pool):
    """The temporaries of a capture are the graph's until it is dropped: a body that fits
    when it runs eagerly (each temporary freed at once) runs out of memory captured."""
    limit = 8 << 20
    with kernelproxy.connect(pool.address, pool.token, memory_limit=limit) as session:
        cp = module_for(session)
        a = cp.ones(1 << 18, dtype=cp.float32)   # 1 MiB
        for _ in range(12):                      # eagerly: fits
            float((a * 2).sum())
        # (no cached block left for CuPy's pool to give back to CUDA during the capture)
        cp.get_default_memory_pool().free_all_blocks()
        s = cp.cuda.Stream(non_blocking=True)
        with s:
            s.begin_capture()
            with pytest.raises(OutOfMemoryError):
                for _ in range(12):
                    (a * 2).sum()
            g = s.end_capture()
        del g
        gc.collect()
        assert float((a * 2).sum()) == 2.0 * (1 << 18)   # all given back


def test_graphs_of_a_second_thread(cp, session):
    """A capture made in another thread (which shares the session) is launched here, and
    one made here is launched there."""
    x = cp.arange(32, dtype=cp.float64)
    made: dict = {}
    errors: list = []

    def capture_there():
        try:
            s = cp.cuda.Stream(non_blocking=True)
            with s:
                s.begin_capture()
                made["out"] = x ** 2 + 1
                made["graph"] = s.end_capture()
            assert not s.is_capturing()
        except BaseException as exc:   # (reported by the main thread)
            errors.append(exc)

    worker = threading.Thread(target=capture_there)
    worker.start()
    worker.join(60)
    assert not errors, errors
    made["graph"].launch()
    np.testing.assert_array_equal(made["out"].get(), np.arange(32.0) ** 2 + 1)

    s = cp.cuda.Stream(non_blocking=True)
    with s:
        s.begin_capture()
        here = x * 3
        g = s.end_capture()

    def launch_there():
        try:
            g.launch()
            assert not s.is_capturing()
        except BaseException as exc:
            errors.append(exc)

    worker = threading.Thread(target=launch_there)
    worker.start()
    worker.join(60)
    assert not errors, errors
    np.testing.assert_array_equal(here.get(), np.arange(32.0) * 3)


def test_what_the_proxy_does_not_do(cp):
    """A graph's DOT text is the pool's; a launch during a capture, a second capture on
    the device, are not supported: each says so."""
    s1, s2 = cp.cuda.Stream(non_blocking=True), cp.cuda.Stream(non_blocking=True)
    x = cp.arange(4.0)
    with s1:
        s1.begin_capture()
        y = x + 1
        g = s1.end_capture()
    with pytest.raises(NotImplementedError, match="debug_dot_str"):
        g.debug_dot_str()
    with s1:
        s1.begin_capture()
        with pytest.raises(NotImplementedError, match="while a stream captures"):
            g.launch()
        with pytest.raises(NotImplementedError, match="one stream at a time"):
            s2.begin_capture()
        with pytest.raises(cp.cuda.runtime.CUDARuntimeError, match="cudaErrorIllegalState"):
            s1.begin_capture()
        h = s1.end_capture()
    g.launch()
    h.launch()
    np.testing.assert_array_equal(y.get(), np.arange(4.0) + 1)


def test_events_of_a_capture(cp):
    """An event recorded in a capture cannot be waited on or timed (cudaErrorCapturedEvent);
    ``done`` says False; recorded again outside, it is an ordinary event."""
    s = cp.cuda.Stream(non_blocking=True)
    e = cp.cuda.Event()
    with s:
        s.begin_capture()
        e.record(s)
        g = s.end_capture()
    g.launch()
    with pytest.raises(cp.cuda.runtime.CUDARuntimeError, match="cudaErrorCapturedEvent"):
        e.synchronize()
    assert e.done is False
    e.record()
    e.synchronize()
    assert e.done is True


@pytest.mark.skipif(not POOL_RUNS_NUMPY, reason="the NumPy device's table of refusals")
def test_the_numpy_devices_refusals(cp):
    """What the NumPy device refuses while capturing, by the rule of each (CuPy's own on a
    GPU): integer products are CuPy's kernels, a vector's dot is a multiply and a sum,
    ``where`` with three arguments is element-wise, a boolean mask reads the device."""
    s = cp.cuda.Stream(non_blocking=True)
    fm = cp.ones((3, 3))
    im = cp.ones((3, 3), dtype=cp.int64)
    v = cp.arange(3.0)
    with s:
        s.begin_capture()
        ip = im @ im
        vd = cp.dot(v, v)
        w = cp.where(v > 1, v, 0.0)
        with pytest.raises(NotImplementedError, match="cuBLAS"):
            fm @ fm
        with pytest.raises(NotImplementedError, match="cuBLAS"):
            fm.dot(fm)
        with pytest.raises(RuntimeError, match="is capturing"):
            v[v > 1]
        with pytest.raises(RuntimeError, match="is capturing"):
            cp.unique(v)
        with pytest.raises(NotImplementedError, match="cuSOLVER"):
            cp.linalg.inv(fm)
        n = cp.linalg.norm(v)
        g = s.end_capture()
    g.launch()
    np.testing.assert_array_equal(ip.get(), np.full((3, 3), 3))
    assert float(vd) == 5.0 and float(n) == pytest.approx(5.0 ** 0.5)
    np.testing.assert_array_equal(w.get(), [0.0, 0.0, 2.0])
