"""How many ops a paced worker launches before it next marks and looks at its lease
(``Pacer._next_countdown``), on a real NumPy device and a real (unconnected) lease socket.

Fairness run 9 (docs/performance.md) found a holder launching 64 GEMMs of 0.7 ms in a row
after its device had caught up while it waited for its own fence: a newcomer waited for
all of them. The countdown may double while the device keeps up, but never past what the
per-op estimate allows."""

from __future__ import annotations

import zmq

from gpu_backend.devices.numpy_device import NumpyDevice
from gpu_backend.worker.lease import DeviceLease
from gpu_backend.worker.pacing import GRAIN, MAX_COUNTDOWN, Pacer


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
    pacer.per_op = 2e-6
    pacer._caught_up = True
    seen = []
    for _ in range(10):
        pacer.countdown = pacer._next_countdown()
        seen.append(pacer.countdown)
    assert seen[:6] == [2, 4, 8, 16, 32, 50] and seen[-1] == int(GRAIN / 2e-6) == 50


def test_unknown_and_unleased():
    pacer = _pacer()
    pacer._caught_up = True
    pacer.countdown = 32
    assert pacer._next_countdown() == MAX_COUNTDOWN    # nothing learnt yet: tiny ops, doubling
    pacer._caught_up = False
    assert pacer._next_countdown() == 1                 # work queued, op length unknown
    pacer.per_op = 10e-6
    assert pacer._next_countdown() == int(GRAIN / 10e-6)
    assert _pacer(lease=False)._next_countdown() == MAX_COUNTDOWN
