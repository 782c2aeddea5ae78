"""``share`` with a deep lead (the pool's ``share_deep_lead_ms``, arbiter/share.py
``lead_for``): the arbiter tells the workers of the heaviest users attached to a device that
they may launch that much work ahead beside the others, in their standing grants and, when
the users attached or their weights change, in a ``company`` message; their pacers keep that
lead while free running, and the others keep their own. Real arbiter thread, real leases
over its socket, a real NumPy device."""

from __future__ import annotations

import pytest
import zmq
from msgpack import packb
from pydantic import ValidationError

from gpu_backend.arbiter.service import Arbiter
from gpu_backend.cli import SERVE_SETTINGS, build_parser
from gpu_backend.config import PoolSettings
from gpu_backend.devices.numpy_device import NumpyDevice
from gpu_backend.worker.lease import DeviceLease
from gpu_backend.worker.pacing import LEAD, LONE_LEAD, SHARE_LEAD, Pacer

from tests.waiting import until

DEEP = 0.016


def _told(lease: DeviceLease, lead: float | None) -> bool:
    lease.read(0.0)
    return lease.lead == lead


def test_the_heaviest_users_workers_are_told_the_deep_lead_and_lose_it_to_a_heavier_user():
    ctx = zmq.Context()
    arbiter = Arbiter(ctx, "share", ["cpu:0"], deep_lead=DEEP).start()
    ann = DeviceLease(ctx, arbiter.address, "wa", arbiter.baton_path)
    bob = DeviceLease(ctx, arbiter.address, "wb", arbiter.baton_path)
    try:
        arbiter.attach("wa", "cpu:0", "sa", "ann", 1.0)
        assert ann.acquire(0.0, lambda: False) and ann.standing
        assert until(lambda: _told(ann, DEEP))              # the heaviest (and only) user
        arbiter.attach("wb", "cpu:0", "sb", "bob", 2.0)     # a heavier one comes
        assert until(lambda: _told(ann, None))
        assert bob.acquire(0.0, lambda: False) and bob.standing
        assert until(lambda: _told(bob, DEEP))
        arbiter.set_weights({"ann": 2.0})                   # a tie: both heaviest
        assert until(lambda: _told(ann, DEEP))
        assert bob.lead == DEEP
        arbiter.set_weights({"ann": 1.0})
        assert until(lambda: _told(ann, None))
        arbiter.detach("wb")                                # the heavier one leaves
        assert until(lambda: _told(ann, DEEP))
    finally:
        for lease in (ann, bob):
            lease.close()
        arbiter.stop()
        ctx.term()


def test_without_a_deep_lead_no_worker_hears_of_one():
    ctx = zmq.Context()
    arbiter = Arbiter(ctx, "share", ["cpu:0"]).start()
    ann = DeviceLease(ctx, arbiter.address, "wa", arbiter.baton_path)
    bob = DeviceLease(ctx, arbiter.address, "wb", arbiter.baton_path)
    try:
        arbiter.attach("wa", "cpu:0", "sa", "ann", 4.0)
        arbiter.attach("wb", "cpu:0", "sb", "bob", 1.0)
        assert ann.acquire(0.0, lambda: False) and bob.acquire(0.0, lambda: False)
        assert until(lambda: _told(ann, None) and not ann.alone)
        assert ann.lead is None and bob.lead is None
    finally:
        for lease in (ann, bob):
            lease.close()
        arbiter.stop()
        ctx.term()


def _lease_beside_others() -> DeviceLease:
    lease = DeviceLease(zmq.Context.instance(), "inproc://gpuwb-test-no-arbiter", "w")
    lease.holding, lease.standing, lease.alone = True, True, False
    return lease


def test_a_free_running_pacer_keeps_the_deep_lead_and_only_while_free_running():
    lease = _lease_beside_others()
    pacer = Pacer(NumpyDevice(), lease)
    assert pacer._lead() == max(LEAD, SHARE_LEAD)        # its own
    lease.lead = DEEP
    assert pacer._lead() == DEEP and pacer._lead(0.02) == 0.02
    lease.hand_over_at = 0.5                              # told to stop: the plain lead
    assert pacer._lead() == LEAD
    lease.hand_over_at = None
    lease.alone = True                                    # alone: the lone lead, as ever
    assert pacer._lead() == LONE_LEAD


def test_a_lead_the_lease_cannot_use_is_ignored():
    ctx = zmq.Context()
    router = ctx.socket(zmq.ROUTER)
    port = router.bind_to_random_port("tcp://127.0.0.1")
    lease = DeviceLease(ctx, f"tcp://127.0.0.1:{port}", "w")
    try:
        lease._send({"t": "want"})
        ident, _ = router.recv_multipart()
        for said, kept in ((DEEP, DEEP), ("16", None), (5.0, None), (-0.001, None), (True, None),
                           (0.004, 0.004)):
            router.send_multipart([ident, packb({"t": "grant", "g": 1, "s": True, "l": said})])
            assert until(lambda: lease.pending())
            lease.read(0.0)
            assert lease.lead == kept, said
        router.send_multipart([ident, packb({"t": "company", "a": False})])   # (no l: kept)
        assert until(lambda: lease.pending())
        lease.read(0.0)
        assert lease.lead == 0.004
        router.send_multipart([ident, packb({"t": "company", "a": False, "l": None})])
        assert until(lambda: lease.pending())
        lease.read(0.0)
        assert lease.lead is None
    finally:
        lease.close()
        router.close(0)
        ctx.term()


def test_the_pools_setting_is_read_from_its_command_line_and_checked():
    """``gpuwb-backend serve --share-deep-lead-ms 16`` reaches the pool's settings (the
    arbiter is made with it: hosts/worker_host.py); a negative one is refused."""
    args = build_parser().parse_args(["serve", "--share-deep-lead-ms", "16"])
    assert "share_deep_lead_ms" in SERVE_SETTINGS and args.share_deep_lead_ms == 16.0
    assert PoolSettings(share_deep_lead_ms=args.share_deep_lead_ms).share_deep_lead_ms == 16.0
    assert PoolSettings().share_deep_lead_ms == 16.0                 # (the pool's default)
    assert build_parser().parse_args(["serve", "--share-deep-lead-ms", "0"]).share_deep_lead_ms == 0.0
    with pytest.raises(ValidationError):
        PoolSettings(share_deep_lead_ms=-1)
