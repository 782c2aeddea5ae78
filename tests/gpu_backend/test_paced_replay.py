"""A held stretch's replay and the pacer (worker/stretch_replay.py, ``UNPACED_REPLAY``; off
by default under ``fair``, 4 ms under a standing grant, ``SHARE_UNPACED_REPLAY``): a replay
launches its ops without the pacer between them, so with ``GPUWB_UNPACED_REPLAY_US`` set,
while other sessions share the device a replay of more than that much device work re-runs
from its records, paced op by op like any batch; alone on the device it goes through its
graphs again. The results are the same either way (the records are the reference path).
Unset under ``fair``, nothing is paced so.

On the NumPy device under the ``fair`` and ``share`` policies, two sessions on one device: the pool's own
counts (``memory_info()["stretches"]``: replays, graphed, paced) say which path each
replay took, so a loaded machine cannot make the test flaky, only slower. The NumPy device
measures next to no device time (its ops run on the host as they are called), so the pool
runs with ``GPUWB_UNPACED_REPLAY_US=0``: every replay in company is paced there.
"""

from __future__ import annotations

import numpy as np
import pytest
import zmq

from gpu_backend.devices.numpy_device import NumpyDevice
from gpu_backend.pool import LocalPool
from gpu_backend.served import ServedPool
from gpu_backend.protocol.codec import packb
from gpu_backend.worker.lease import DeviceLease
from gpu_backend.worker import Executor, HandleTable
from gpu_backend.worker.pacing import SHARE_LEAD, Pacer
from gpu_backend.worker.stretch_replay import SHARE_UNPACED_REPLAY
from kernelproxy.modules import module_for
from kernelproxy.session import Session
from kernelproxy.settings import SessionSettings

from .test_swap import _wait


def _step(v, m) -> float:
    return float(((v @ m) @ m).sum())   # two 384² GEMMs on the host: milliseconds each


@pytest.mark.parametrize("policy", ["fair", "share"])
def test_a_long_replay_is_paced_while_another_session_shares_the_device(policy):
    # (the setting in the served pool's environment only, read by its workers: set in this
    # process's, every worker the run's shared pool started meanwhile paced every replay)
    with ServedPool(policy, "cpu", env={"GPUWB_UNPACED_REPLAY_US": "0"}) as pool:
        a = Session(pool.address, pool.token, settings=SessionSettings(replay_measured=False))
        b = None
        try:
            cp = module_for(a)
            host = np.random.default_rng(1).random((384, 384))
            m = cp.asarray(host)
            expected = float(((host @ host) @ host).sum())
            for _ in range(8):   # alone: held, then replayed through its graphs
                assert _step(m, m) == expected
            alone = a.memory_info()["stretches"]
            assert alone["graphed"] >= 1 and alone["paced"] == 0

            b = Session(pool.address, pool.token)   # company on the same device
            float(module_for(b).ones(3).sum())

            def paced() -> int:
                assert _step(m, m) == expected
                return a.memory_info()["stretches"]["paced"]
            _wait(paced, "a replay re-run, paced, beside another session")

            b.close()
            b = None
            graphed = a.memory_info()["stretches"]["graphed"]

            def graphed_again() -> bool:
                assert _step(m, m) == expected
                return a.memory_info()["stretches"]["graphed"] > graphed
            _wait(graphed_again, "replays through graphs again, alone")
        finally:
            if b is not None:
                b.close()
            a.close()


def test_without_the_setting_a_replay_beside_another_session_stays_whole():
    with LocalPool(devices="cpu", policy="fair") as pool:
        a = Session(pool.address, pool.token, settings=SessionSettings(replay_measured=False))
        b = Session(pool.address, pool.token)
        try:
            float(module_for(b).ones(3).sum())   # company on the same device
            cp = module_for(a)
            host = np.random.default_rng(2).random((256, 256))
            m = cp.asarray(host)
            expected = float(((host @ host) @ host).sum())
            for _ in range(10):
                assert _step(m, m) == expected
            figures = a.memory_info()["stretches"]
            assert figures["graphed"] >= 1 and figures["paced"] == 0
        finally:
            b.close()
            a.close()


def _arbiter_and_lease(name: str):
    """A ROUTER standing for the arbiter and a real lease connected to it, granted."""
    ctx = zmq.Context.instance()
    router = ctx.socket(zmq.ROUTER)
    router.setsockopt(zmq.LINGER, 0)
    address = f"inproc://gpuwb-test-atomic-{name}"
    router.bind(address)
    lease = DeviceLease(ctx, address, "w")
    lease._send({"t": "want"})
    ident, _ = router.recv_multipart()
    router.send_multipart([ident, packb({"t": "grant", "g": 1, "q": 0.001})])
    lease.sock.poll(5000)
    lease.read(0.0)
    assert lease.holding and lease.hand_over_at == 0.001
    return router, ident, lease


def test_a_batch_run_whole_hands_over_only_to_a_newcomer_that_takes_the_device_back():
    """``Pacer.atomic`` (a replay re-run paced): the end of its turn does not stop it, a
    preemption (the arbiter's yield) does; outside such a batch, either does."""
    router, ident, lease = _arbiter_and_lease("yield")
    try:
        pacer = Pacer(NumpyDevice(), lease)
        spent = 0.002   # (busy past the turn's end)
        assert pacer._must_stop(spent)
        pacer.atomic = True
        assert not pacer._must_stop(spent) and not lease.preempted
        router.send_multipart([ident, packb({"t": "yield", "g": 1, "q": 0.0})])
        lease.sock.poll(5000)
        lease.read(spent)
        assert lease.preempted and pacer._must_stop(spent)
        router.send_multipart([ident, packb({"t": "grant", "g": 2, "q": 0.01})])
        lease.sock.poll(5000)
        lease.read(spent)   # (a new grant: taken back no more)
        assert not lease.preempted and not pacer._must_stop(spent)
    finally:
        lease.sock.close()
        router.close()


def test_a_standing_grant_is_side_by_side_and_a_turn_is_not():
    """What decides the default bound of a paced replay (SHARE_UNPACED_REPLAY under a
    standing grant): the grant the worker holds, as the arbiter sent it."""
    router, ident, lease = _arbiter_and_lease("standing")
    try:
        pacer = Pacer(NumpyDevice(), lease)
        assert not pacer.side_by_side()   # (a turn of 1 ms: fair)
        router.send_multipart([ident, packb({"t": "grant", "g": 2, "s": True})])
        lease.sock.poll(5000)
        lease.read(0.0)
        assert lease.standing and pacer.side_by_side()
        lease.release(0.0, want=False)   # (given back: launching beside nobody)
        assert not pacer.side_by_side()
    finally:
        lease.sock.close()
        router.close()


def _granted(router, ident, lease, grant: dict) -> None:
    router.send_multipart([ident, packb({"t": "grant", **grant})])
    lease.sock.poll(5000)
    lease.read(0.0)


def test_the_bound_of_a_paced_replay_follows_the_grant_the_lead_and_the_company():
    """StretchReplay.pacing_bound on a real executor whose pacer holds a real lease: 4 ms
    under a standing grant; with ``pace_by_lead`` (a diagnostic), the session's lead where
    it is more (the arbiter's deep lead); none where the arbiter says the company is light
    users only (``p``: false, arbiter/service.py LIGHT_COMPANY), nor under a turn; none
    under a standing grant for a session whose next message waits (``unpaced_backlog``'s
    question, a diagnostic)."""
    router, ident, lease = _arbiter_and_lease("bound")
    try:
        device = NumpyDevice()
        executor = Executor(device, HandleTable(device))
        executor.pacer = pacer = Pacer(device, lease)
        replay = executor.replay
        assert replay.pacing_bound(pacer) is None                 # a turn (fair)
        assert replay.pacing_bound(pacer, backlogged=True) is None   # (a turn, whatever)
        _granted(router, ident, lease, {"g": 2, "s": True, "l": 0.016})
        assert replay.pacing_bound(pacer) == SHARE_UNPACED_REPLAY
        assert replay.pacing_bound(pacer, backlogged=True) is None   # its next message waits
        replay.pace_by_lead = True
        assert replay.pacing_bound(pacer) == 0.016                # the deep lead
        _granted(router, ident, lease, {"g": 3, "s": True})
        assert replay.pacing_bound(pacer) == max(SHARE_UNPACED_REPLAY, SHARE_LEAD)
        pacer.share_lead = 0.006                                  # (a lead of its own, past 4 ms)
        assert replay.pacing_bound(pacer) == 0.006
        replay.pace_by_lead = False
        assert replay.pacing_bound(pacer) == SHARE_UNPACED_REPLAY
        replay.pace_by_lead = True
        _granted(router, ident, lease, {"g": 4, "s": True, "p": False})
        assert replay.pacing_bound(pacer) is None                 # light company
        router.send_multipart([ident, packb({"t": "company", "a": False, "p": True})])
        lease.sock.poll(5000)
        lease.read(0.0)
        assert replay.pacing_bound(pacer) == 0.006                # company that weighs
    finally:
        lease.sock.close()
        router.close()
