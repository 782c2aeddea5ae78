"""A session alone on its device keeps a longer queue of launched work (worker/pacing.py,
LONE_LEAD): the arbiter tells its lease when a second session attaches and when it leaves,
and its grants say it too. Paced as if others waited, a lone training loop ran at 0.84 of
its rate under `none` (H100 runs 90, 95). Real arbiter thread, real leases over its socket,
a real NumPy device."""

from __future__ import annotations

import zmq

from gpu_backend.arbiter.service import Arbiter
from gpu_backend.devices.numpy_device import NumpyDevice
from gpu_backend.worker.lease import DeviceLease
from gpu_backend.worker.pacing import (GRAIN, LEAD, LONE_LEAD, MAX_COUNTDOWN, SHARE_GRAIN,
                                        SHARE_NAP, Pacer)
from gpu_backend.worker.settings import WorkerSettings

from tests.waiting import until


def _heard(lease: DeviceLease, alone: bool) -> bool:
    lease.read(0.0)
    return lease.alone is alone


def test_the_arbiter_tells_a_worker_whether_it_is_alone_on_its_device():
    ctx = zmq.Context()
    arbiter = Arbiter(ctx, "fair", ["cpu:0", "cpu:1"]).start()
    first = DeviceLease(ctx, arbiter.address, "wa", arbiter.baton_path)
    second = DeviceLease(ctx, arbiter.address, "wb", arbiter.baton_path)
    elsewhere = DeviceLease(ctx, arbiter.address, "wc", arbiter.baton_path)
    try:
        arbiter.attach("wa", "cpu:0", "sa", "ann", 1.0)
        assert first.acquire(0.0, lambda: False)
        assert until(lambda: _heard(first, True))            # alone: said, and in its grant
        arbiter.attach("wc", "cpu:1", "sc", "cy", 1.0)        # another device: still alone
        assert elsewhere.acquire(0.0, lambda: False) and elsewhere.alone
        arbiter.attach("wb", "cpu:0", "sb", "bob", 1.0)       # company on its device
        assert until(lambda: _heard(first, False))
        assert until(lambda: _heard(second, False))
        first.read(0.0)
        assert not first.alone
        arbiter.detach("wb")                                   # alone again
        assert until(lambda: _heard(first, True))
        assert elsewhere.alone
    finally:
        for lease in (first, second, elsewhere):
            lease.close()
        arbiter.stop()
        ctx.term()


def _lone_holder() -> Pacer:
    lease = DeviceLease(zmq.Context.instance(), "inproc://gpuwb-test-no-arbiter", "w")
    lease.holding, lease.alone = True, True
    return Pacer(NumpyDevice(), lease)


def test_a_lone_holder_marks_per_lone_lead_and_a_shared_one_per_grain():
    pacer = _lone_holder()
    pacer.per_op = 200e-6          # a training step's GEMMs and small ops, averaged
    pacer._caught_up = False
    assert pacer._next_countdown() == int(LONE_LEAD / 200e-6) > 1
    pacer.lease.alone = False      # a second session attached
    assert pacer._next_countdown() == max(1, int(GRAIN / 200e-6)) == 1
    pacer.lease.alone = True
    pacer.lease.hand_over_at = 0.5   # someone waits (a quantum set): paced as shared
    assert pacer._next_countdown() == 1
    pacer.lease.hand_over_at = None
    pacer.lease.at_batch_end = True  # fifo: another waits for the batch's end
    assert pacer._next_countdown() == 1
    pacer.lease.at_batch_end = False
    pacer.per_op = 1e-6
    assert pacer._next_countdown() == MAX_COUNTDOWN


def test_a_lone_holder_keeps_lone_lead_launched_ahead_and_a_shared_one_lead():
    pacer = _lone_holder()
    assert pacer._lead() == LONE_LEAD and pacer._lead(0.01) == 0.01   # (a split op's piece)
    pacer.lease.alone = False
    assert pacer._lead() == LEAD and pacer._lead(0.001) == 0.001
    pacer.lease.alone, pacer.lease.holding = True, False   # waiting for the device: not alone
    assert pacer._lead() == LEAD


def test_a_free_running_holders_hold_back_sleeps_at_most_its_nap():
    """Under ``share`` beside others (a standing grant, not alone) a hold-back sleeps at most
    ``share_nap`` (SHARE_NAP unless GPUWB_SHARE_NAP_US says) before it looks at its markers
    again: its per-op estimate was measured while others time-sliced the device, and ops that
    run faster once they go quiet would leave its queue dry under a longer sleep. Alone, told
    to stop, or with the bound off (0), it sleeps as its estimate says."""
    lease = DeviceLease(zmq.Context.instance(), "inproc://gpuwb-test-no-arbiter", "w")
    lease.holding, lease.standing, lease.alone = True, True, False
    assert Pacer(NumpyDevice(), lease)._nap(0.004) == SHARE_NAP
    pacer = Pacer(NumpyDevice(), lease, share_nap=0.0005)
    assert pacer._nap(0.004) == 0.0005 and pacer._nap(0.0002) == 0.0002
    lease.alone = True                 # alone: nobody's quiet spell to fill
    assert pacer._nap(0.004) == 0.004
    lease.alone, lease.hand_over_at = False, 0.1   # told to stop: draining, not free running
    assert pacer._nap(0.004) == 0.004
    lease.hand_over_at = None
    assert Pacer(NumpyDevice(), lease, share_nap=0.0)._nap(0.004) == 0.004   # the bound off
    assert WorkerSettings.from_environ({"GPUWB_SHARE_NAP_US": "0"}).share_nap == 0.0
    assert WorkerSettings.from_environ({"GPUWB_SHARE_NAP_US": "250"}).share_nap == 250e-6
    assert WorkerSettings.from_environ({}).share_nap is None


def test_a_free_running_holder_marks_per_its_share_grain():
    """Under ``share`` beside others a free-running session places a marker every
    ``share_grain`` of device time (SHARE_GRAIN unless GPUWB_SHARE_GRAIN_US says); alone it
    marks per LONE_LEAD, told to stop per GRAIN, whatever its grain."""
    lease = DeviceLease(zmq.Context.instance(), "inproc://gpuwb-test-no-arbiter", "w")
    lease.holding, lease.standing, lease.alone = True, True, False
    for grain in (None, 0.004):
        pacer = Pacer(NumpyDevice(), lease, share_grain=grain)
        pacer.per_op, pacer._caught_up = 200e-6, False
        assert pacer._next_countdown() == int((grain or SHARE_GRAIN) / 200e-6)
    lease.hand_over_at = 0.1           # told to stop: not free running
    assert pacer._next_countdown() == max(1, int(GRAIN / 200e-6))
    lease.hand_over_at, lease.alone = None, True
    assert pacer._next_countdown() == int(LONE_LEAD / 200e-6)
    assert WorkerSettings.from_environ({"GPUWB_SHARE_GRAIN_US": "4000"}).share_grain == 0.004
    assert WorkerSettings.from_environ({}).share_grain is None
