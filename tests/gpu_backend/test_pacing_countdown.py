"""How many ops a paced worker launches before it next marks and looks at its lease
(``Pacer._next_countdown``), on a real NumPy device and a real (unconnected) lease socket.

Fairness run 9 (docs/performance-log.md) found a holder launching 64 GEMMs of 0.7 ms in a row
after its device had caught up while it waited for its own fence: a newcomer waited for
all of them. The countdown may double while the device keeps up, but never past what the
per-op estimate allows."""

from __future__ import annotations

from time import perf_counter

import numpy as np
import pytest
import zmq

from gpu_backend.devices.numpy_device import NumpyDevice
from gpu_backend.worker.lease import DeviceLease
from gpu_backend.worker.pacing import GRAIN, MAX_COUNTDOWN, Pacer

from tests.differential import POOL_RUNS_NUMPY


def _pacer(lease: bool = True) -> Pacer:
    ctx = zmq.Context.instance()
    return Pacer(NumpyDevice(), DeviceLease(ctx, "inproc://gpuwb-test-no-arbiter", "w") if lease else None)


def test_long_ops_are_checked_one_by_one_even_when_the_device_kept_up():
    pacer = _pacer()
    pacer.per_op = 0.7e-3          # a 6144² float16 GEMM on an H200
    pacer._caught_up = True
    for start in (1, 8, 32, 64):
        pacer.countdown = start
        assert pacer._next_countdown() == 1


def test_tiny_ops_double_up_to_the_grain():
    pacer = _pacer()
    pacer.per_op = 5e-6
    pacer._caught_up = True
    seen = []
    for _ in range(10):
        pacer.countdown = pacer._next_countdown()
        seen.append(pacer.countdown)
    bound = min(MAX_COUNTDOWN, int(GRAIN / 5e-6))
    assert bound < MAX_COUNTDOWN     # (the grain bounds it here, not the most)
    assert seen[:5] == [2, 4, 8, 16, 32] and seen[-1] == bound and max(seen) == bound


def test_unknown_and_unleased():
    pacer = _pacer()
    pacer._caught_up = True
    pacer.countdown = 32
    assert pacer._next_countdown() == MAX_COUNTDOWN    # nothing learnt yet: tiny ops, doubling
    pacer._caught_up = False
    assert pacer._next_countdown() == 1                 # work queued, op length unknown
    pacer.per_op = 10e-6
    assert pacer._next_countdown() == min(MAX_COUNTDOWN, int(GRAIN / 10e-6))
    assert _pacer(lease=False)._next_countdown() == MAX_COUNTDOWN


# ---------------------------------------------------------------- what teaches the estimate
# Only a GPU's markers lag its host (the NumPy device's work is done when issued), so these
# run where the pool runs CuPy (benchmarks/gpu_check.sh tests).
gpu_only = pytest.mark.skipif(POOL_RUNS_NUMPY, reason="a device whose work lags the host (a GPU)")


def _gpu_pacer() -> Pacer:
    from gpu_backend.devices import open_device
    ctx = zmq.Context.instance()
    return Pacer(open_device("cuda:0"), DeviceLease(ctx, "inproc://gpuwb-test-no-arbiter", "w"))


def _gemm_seconds(cp, a) -> float:
    """The device time of one ``a @ a`` on an otherwise idle GPU (after a warm-up)."""
    a @ a
    cp.cuda.get_current_stream().synchronize()
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    start.record()
    a @ a
    stop.record()
    stop.synchronize()
    return cp.cuda.get_elapsed_time(start, stop) / 1e3


def _segment(pacer: Pacer, launch, ops: int, host_gap: float = 0.0, last=None) -> None:
    """What the executor does for one segment: start it, launch *ops* ops (and *last*, if
    given, as the segment's last op), mark them."""
    pacer.start_segment()
    for _ in range(ops):
        pacer.began = perf_counter()
        launch()
        until = perf_counter() + host_gap     # the host's own time per op (decoding, ...)
        while perf_counter() < until:
            pass
    if last is not None:
        pacer.began = perf_counter()
        last()
        ops += 1
    pacer._mark(ops)


@gpu_only
def test_host_bound_tiny_ops_do_not_teach_their_dispatch_time():
    """A lone session's tiny ops, issued 30 µs apart: the device waits for the host, and
    segments begun while it was still busy are done before the host finished them. Their
    spans hold the host's gaps; taught, they gave a 25 µs "op" on an H100 and a marker every
    4th op (a lone session under fair lost 16-30 % of its pipelined rate)."""
    pacer = _gpu_pacer()
    cp = pacer.device.cupy
    x = cp.zeros(1024, cp.float32)
    for _ in range(200):
        _segment(pacer, lambda: cp.add(x, 1, out=x), 8, host_gap=30e-6)
    cp.cuda.get_current_stream().synchronize()
    pacer.harvest()
    assert pacer.per_op is None or pacer.per_op < 10e-6
    pacer._caught_up = True
    pacer.countdown = 32
    assert pacer._next_countdown() >= 10      # markers stay sparse


@gpu_only
def test_ops_queued_behind_long_work_teach_their_device_time():
    """Behind a long GEMM the device has not begun a segment when its last op is launched:
    the segment's span is the ops' own device time, and long ops are checked one by one."""
    pacer = _gpu_pacer()
    cp = pacer.device.cupy
    a = cp.ones((4096, 4096), cp.float32)
    _segment(pacer, lambda: a @ a, 1)                        # the device is busy for a while
    _segment(pacer, lambda: a @ a, 2)                        # ... and these wait behind it
    cp.cuda.get_current_stream().synchronize()
    pacer.harvest()
    assert pacer.per_op is not None and pacer.per_op > 100e-6
    pacer._caught_up = True
    pacer.countdown = 64
    assert pacer._next_countdown() == 1


@gpu_only
def test_a_long_op_begun_on_an_idle_device_teaches_about_its_device_time():
    """Begun on an idle device, a segment's span also holds the device's wait for the host's
    launch: the span less the host's time is taught, near the op's own time."""
    pacer = _gpu_pacer()
    cp = pacer.device.cupy
    a = cp.ones((4096, 4096), cp.float32)
    alone = _gemm_seconds(cp, a)
    _segment(pacer, lambda: a @ a, 1, host_gap=50e-6)   # the device idles while the host works
    cp.cuda.get_current_stream().synchronize()
    pacer.harvest()
    assert pacer.per_op is not None and 0.7 * alone < pacer.per_op < 1.3 * alone + 60e-6


def test_the_host_device_teaches_no_device_time():
    """The NumPy device's work is done as it is issued: every span is the host's own time,
    none of it a device's; the countdown stays at its most."""
    pacer = _pacer()
    x = np.arange(1024, dtype=np.float32)   # the NumPy device's arrays
    for _ in range(50):
        _segment(pacer, lambda: x + 1, 8, host_gap=20e-6)
    pacer.harvest()
    assert pacer.per_op is not None and pacer.per_op < 1e-6
    pacer._caught_up = True
    pacer.countdown = 32
    assert pacer._next_countdown() == MAX_COUNTDOWN


@gpu_only
def test_an_estimate_taught_once_fades_as_host_bound_ops_go_on():
    """A slow sample (here a GEMM) is not kept for ever: host-bound tiny ops after it teach
    about nothing each, and the estimate falls within some milliseconds of their time."""
    pacer = _gpu_pacer()
    cp = pacer.device.cupy
    a = cp.ones((2048, 2048), cp.float32)
    _segment(pacer, lambda: a @ a, 1)
    _segment(pacer, lambda: a @ a, 1)
    cp.cuda.get_current_stream().synchronize()
    pacer.harvest()
    assert pacer.per_op > 50e-6
    x = cp.zeros(1024, cp.float32)
    for _ in range(100):                                   # about 25 ms of host time
        _segment(pacer, lambda: cp.add(x, 1, out=x), 8, host_gap=30e-6)
        pacer.harvest()
    cp.cuda.get_current_stream().synchronize()
    pacer.harvest()
    assert pacer.per_op < 10e-6


@gpu_only
def test_a_segment_ending_in_a_fetch_teaches_its_gemms_time():
    """A GEMM client's batch: GEMMs, then the fence's fetch, which waits for them. The host's
    wait in the fetch is not the device's wait for the host: counted as such, it cancelled
    the GEMMs' time, the estimate fell to ~1 µs and the holder launched 16 GEMMs at a time
    (fairness run 13: an interactive user beside it waited for them, p99 6.5 ms)."""
    pacer = _gpu_pacer()
    cp = pacer.device.cupy
    a = cp.ones((2048, 2048), cp.float32)
    alone = _gemm_seconds(cp, a)
    for _ in range(5):   # each segment begun on an idle device, ended by a fetch
        _segment(pacer, lambda: a @ a, 8, last=lambda: float(a[0, 0]))
        pacer.harvest()
    assert pacer.per_op is not None and pacer.per_op > 0.5 * alone * 8 / 9
    pacer._caught_up = True
    pacer.countdown = 64
    assert pacer._next_countdown() <= max(1, int(GRAIN / (0.5 * alone)))


@gpu_only
def test_the_reply_after_a_batch_is_not_the_devices_time():
    """A sync's batch (x + 1, a sum, the fetch) is marked once its reply is sent: the time
    from the batch's end to the marker is the host's (encoding, sending), the device idles.
    Taught, a tiny op "took" 0.2-0.3 ms and hold-backs slept on it (H100 run 14: a lone
    sync 25 % slower under fair)."""
    pacer = _gpu_pacer()
    cp = pacer.device.cupy
    x = cp.arange(1024, dtype=cp.float32)
    for _ in range(20):
        pacer.start_segment()
        for op in (lambda: x + 1, lambda: x.sum()):
            pacer.began = perf_counter()
            op()
        pacer.began = perf_counter()
        float(x[0])
        pacer.ended = perf_counter()
        until = perf_counter() + 300e-6          # the reply, sent before the marker
        while perf_counter() < until:
            pass
        pacer._mark(3)
        pacer.harvest()
    assert pacer.per_op is not None and pacer.per_op < 30e-6


@gpu_only
def test_a_holder_preempted_while_it_holds_back_launches_nothing_more():
    """A lone holder launching long GEMMs is preempted by a returning user while it waits
    for its queue to shorten: it hands over at that wait's end, before its next launch.
    (Judged before the wait, it launched one more GEMM and the newcomer waited for it: a
    0.6 ms GEMM at the median, H100 fairness run 18.) Real arbiter thread, real leases."""
    from gpu_backend.arbiter.service import Arbiter
    from gpu_backend.devices import open_device

    ctx = zmq.Context()
    arbiter = Arbiter(ctx, "fair", ["cuda:0"]).start()
    arbiter.attach("wa", "cuda:0", "sa", "busy", 1.0)
    arbiter.attach("wi", "cuda:0", "si", "interactive", 1.0)
    lease = DeviceLease(ctx, arbiter.address, "wa", arbiter.baton_path)
    newcomer = DeviceLease(ctx, arbiter.address, "wi", arbiter.baton_path)
    try:
        pacer = Pacer(open_device("cuda:0"), lease)
        cp = pacer.device.cupy
        a = cp.ones((4096, 4096), cp.float32)
        assert _gemm_seconds(cp, a) > 300e-6        # long enough to hold back on
        assert pacer.begin_batch(lambda: False)
        stopped_after, executed = None, 0
        for op in range(60):
            if pacer.fresh_due:
                pacer.start_segment()
            pacer.began = perf_counter()
            a @ a
            executed += 1
            if op == 30:
                newcomer._send({"t": "want"})      # arrives while the holder holds back
            if not pacer.after_ops(executed, lambda: True):   # handed over (and not waiting)
                stopped_after = op
                break
        assert stopped_after == 30
        cp.cuda.get_current_stream().synchronize()
    finally:
        lease.close()
        newcomer.close()
        arbiter.stop()
        ctx.term()


def test_a_measured_segment_the_device_has_finished_is_harvested_when_asked():
    """A run ahead the pacer measured is answered once its reads are made (its segment done):
    ``harvested`` takes that segment in then, rather than at the serving loop's next idle
    harvest, which a worker whose client's message always waits never reaches (H200 run
    205: the measurement never learnt, the steady lane declined every run ahead after)."""
    pacer = _pacer(lease=False)
    before = pacer.busy
    pacer.start_segment()
    np.dot(np.ones((64, 64)), np.ones((64, 64)))   # (the segment's work, done as issued)
    pacer._mark(1)
    assert not pacer.settled                          # (pending until harvested)
    assert pacer.harvested() and pacer.settled
    assert pacer.busy >= before
    assert pacer.harvested()                          # (nothing pending: nothing to do)
