"""Under ``share`` a session with no work whose worker has been silent for ``company_idle``
is no company to the others on its device (arbiter/service.py, COMPANY_IDLE): they are told
they are alone and launch as a lone worker does. An idle notebook's open session is most
users' company; counted as company, it cost the 2048² GEMM user beside it a twentieth of its
rate under ``share`` (H200 run 336). Real arbiter thread, real leases over its socket.

Each step waits for a state that lasts until the test's next step, so that a slow host can
only see it later, never miss it."""

from __future__ import annotations

import time

import pytest
import zmq
from pydantic import ValidationError

from gpu_backend.arbiter.service import Arbiter
from gpu_backend.config import PoolSettings
from gpu_backend.worker.lease import DeviceLease

from tests.waiting import until

#: short, so that the test waits little
IDLE = 0.3


def _told(lease: DeviceLease, alone: bool) -> bool:
    lease.read(0.0)
    return lease.alone is alone


def _pool(company_idle: float, policy: str = "share", devices=("cpu:0",)):
    ctx = zmq.Context()
    arbiter = Arbiter(ctx, policy, list(devices), company_idle=company_idle).start()
    leases = [DeviceLease(ctx, arbiter.address, w, arbiter.baton_path) for w in ("wa", "wb")]
    return ctx, arbiter, leases


def _close(ctx, arbiter, leases) -> None:
    for lease in leases:
        lease.close()
    arbiter.stop()
    ctx.term()


def test_a_session_out_of_work_past_company_idle_leaves_the_other_alone_until_it_wants():
    ctx, arbiter, (busy, notebook) = _pool(IDLE)
    try:
        arbiter.attach("wa", "cpu:0", "sa", "ann", 1.0)
        assert busy.acquire(0.0, lambda: False)
        assert until(lambda: _told(busy, True))
        arbiter.attach("wb", "cpu:0", "sb", "bob", 1.0)
        assert notebook.acquire(0.0, lambda: False)        # a cell runs: it has work ...
        assert notebook.alone is False                     # (its grant said: company)
        assert until(lambda: _told(busy, False))           # ... and is company while it has
        notebook.idle(0.0)                                 # the cell ends: out of work
        assert until(lambda: _told(busy, True), seconds=10)   # silent past IDLE: no company
        notebook.read(0.0)
        assert notebook.alone is False   # (it still has company, so it says want when it works)
        notebook.busy_again()                              # the next cell
        assert until(lambda: _told(busy, False))
    finally:
        _close(ctx, arbiter, [busy, notebook])


def test_a_session_attached_and_silent_is_no_company_past_company_idle():
    """A notebook's session that never asks for the device (its worker opened, nothing
    run) stops being company ``company_idle`` after its attach."""
    ctx, arbiter, (busy, notebook) = _pool(IDLE)
    try:
        arbiter.attach("wa", "cpu:0", "sa", "ann", 1.0)
        assert busy.acquire(0.0, lambda: False)
        arbiter.attach("wb", "cpu:0", "sb", "bob", 1.0)
        assert until(lambda: _told(busy, True), seconds=10)
    finally:
        _close(ctx, arbiter, [busy, notebook])


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


@pytest.mark.parametrize("company_idle, policy", [(0.0, "share"), (IDLE, "fair")],
                         ids=["share, 0", "fair"])
def test_every_session_attached_is_company_at_zero_and_under_fair(company_idle, policy):
    ctx, arbiter, (busy, notebook) = _pool(company_idle, policy)
    try:
        arbiter.attach("wa", "cpu:0", "sa", "ann", 1.0)
        assert busy.acquire(0.0, lambda: False)
        arbiter.attach("wb", "cpu:0", "sb", "bob", 1.0)
        assert until(lambda: _told(busy, False))
        time.sleep(4 * IDLE)
        assert _told(busy, False)
    finally:
        _close(ctx, arbiter, [busy, notebook])


def test_company_is_counted_on_each_device_apart():
    ctx, arbiter, (first, second) = _pool(IDLE, devices=("cpu:0", "cpu:1"))
    try:
        arbiter.attach("wa", "cpu:0", "sa", "ann", 1.0)
        arbiter.attach("wb", "cpu:1", "sb", "bob", 1.0)
        assert first.acquire(0.0, lambda: False) and second.acquire(0.0, lambda: False)
        assert first.alone and second.alone             # (each alone on its own device)
    finally:
        _close(ctx, arbiter, [first, second])


def test_the_pool_setting_reaches_the_arbiter():
    assert PoolSettings(company_idle_ms=250).company_options()["company_idle"] == 0.25
    assert PoolSettings().company_options()["company_idle"] == 1.0
    assert PoolSettings(company_idle_ms=0).company_options()["company_idle"] == 0.0
    with pytest.raises(ValidationError, match="at least 50"):
        PoolSettings(company_idle_ms=10)
