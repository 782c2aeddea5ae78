"""A session with no work whose worker has been silent for ``company_idle`` is no company to
the others on its device (arbiter/service.py, COMPANY_IDLE): they are told they are alone
and launch as a lone worker does. An idle notebook's open session is most users' company;
counted as company, it cost the 2048² GEMM user beside it a twentieth of its rate under
``share`` (H200 run 336). Real arbiter thread, real leases over its socket."""

from __future__ import annotations

import time

import zmq

from gpu_backend.arbiter.service import Arbiter
from gpu_backend.config import PoolSettings
from gpu_backend.worker.lease import DeviceLease

from tests.waiting import until

#: short, so that the test waits little; what is asked does not depend on the host's speed
#: (a slow host can only tell later, and the waits are for seconds)
IDLE = 0.3


def _told(lease: DeviceLease, alone: bool) -> bool:
    lease.read(0.0)
    return lease.alone is alone


def _pool(company_idle: float):
    ctx = zmq.Context()
    arbiter = Arbiter(ctx, "share", ["cpu:0"], company_idle=company_idle).start()
    leases = [DeviceLease(ctx, arbiter.address, w, arbiter.baton_path) for w in ("wa", "wb")]
    return ctx, arbiter, leases


def _close(ctx, arbiter, leases) -> None:
    for lease in leases:
        lease.close()
    arbiter.stop()
    ctx.term()


def test_a_session_idle_past_company_idle_leaves_the_others_alone_until_it_wants():
    ctx, arbiter, (busy, idle) = _pool(IDLE)
    try:
        arbiter.attach("wa", "cpu:0", "sa", "ann", 1.0)
        assert busy.acquire(0.0, lambda: False)
        assert until(lambda: _told(busy, True))
        arbiter.attach("wb", "cpu:0", "sb", "bob", 1.0)   # a notebook opens a session ...
        assert until(lambda: _told(busy, False))           # ... company from its attach
        assert until(lambda: _told(idle, False))
        # ... and never asks for the device: past IDLE the busy one is alone again, while
        # the idle one still has company (so that it says ``want`` when it has work)
        assert until(lambda: _told(busy, True))
        idle.read(0.0)
        assert idle.alone is False
        assert idle.acquire(0.0, lambda: False)            # the notebook runs a cell
        assert until(lambda: _told(busy, False))
        assert idle.alone is False                         # (its grant said so too)
    finally:
        _close(ctx, arbiter, [busy, idle])


def test_a_session_with_work_is_company_however_long_its_worker_is_silent():
    """A session inside a long op says nothing till it ends: asked for the device and
    holding it, it is company all the while."""
    ctx, arbiter, (first, second) = _pool(IDLE)
    try:
        arbiter.attach("wa", "cpu:0", "sa", "ann", 1.0)
        arbiter.attach("wb", "cpu:0", "sb", "bob", 1.0)
        assert first.acquire(0.0, lambda: False) and second.acquire(0.0, lambda: False)
        time.sleep(4 * IDLE)
        assert _told(first, False) and _told(second, False)
    finally:
        _close(ctx, arbiter, [first, second])


def test_company_idle_zero_counts_every_session_attached():
    ctx, arbiter, (busy, idle) = _pool(0.0)
    try:
        arbiter.attach("wa", "cpu:0", "sa", "ann", 1.0)
        assert busy.acquire(0.0, lambda: False)
        arbiter.attach("wb", "cpu:0", "sb", "bob", 1.0)
        assert until(lambda: _told(busy, False))
        time.sleep(4 * IDLE)
        assert _told(busy, False)
    finally:
        _close(ctx, arbiter, [busy, idle])


def test_the_pool_setting_reaches_the_arbiter():
    settings = PoolSettings(company_idle_ms=250)
    assert settings.company_options() == {"company_idle": 0.25}
    assert PoolSettings().company_options() == {"company_idle": 1.0}
