"""``share``: a standing grant given back with work still running (a user held back whose
launched work runs on) is counted on the device until its worker says ``done``, not until
the worker's estimate of that work (the release's ``d``, worker/lease.py; arbiter/share.py
``release``). The policy on the tests' own clock; a real arbiter thread and real leases over
its socket; the worker's setting."""

from __future__ import annotations

import zmq
from msgpack import packb, unpackb

from gpu_backend.arbiter.service import Arbiter
from gpu_backend.arbiter.share import TAIL_CAP, SharePolicy
from gpu_backend.worker.lease import DeviceLease
from gpu_backend.worker.settings import WorkerSettings

from tests.waiting import until


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _two_on_the_device(done_follows: bool) -> tuple[SharePolicy, Clock]:
    """Users ``a`` and ``b`` side by side; ``a`` gives its grant back with 2 ms of work
    launched and nothing more to run (*done_follows*: its worker will say when that work has
    run); 5 ms on."""
    clock = Clock()
    policy = SharePolicy(clock)
    for user in "ab":
        policy.attach(user, user, 1.0)
        policy.want(user)
    clock.now = 0.010
    policy.used("a", 0.005)
    policy.used("b", 0.005)
    policy.release("a", 0.006, want=False, ahead=0.002, done_follows=done_follows)
    clock.now = 0.015
    policy.used("b", 0.010)
    return policy, clock


def test_a_release_whose_done_follows_keeps_its_session_on_the_device_until_done():
    policy, clock = _two_on_the_device(done_follows=True)
    assert "a" in policy._on                      # 5 ms on: its work still runs beside b's
    charged = policy.sessions["b"].vt
    policy.done("a", 0.009)                       # it has run
    assert "a" not in policy._on
    clock.now = 0.020
    policy.used("b", 0.015)                       # now b is alone: charged its whole 5 ms
    assert policy.sessions["b"].vt - charged > 0.004


def test_without_done_the_session_is_counted_off_at_its_estimate():
    policy, _clock = _two_on_the_device(done_follows=False)
    assert "a" not in policy._on                  # off 2 ms after the release, as before


def test_a_done_that_never_comes_ends_at_the_tail_cap():
    policy, clock = _two_on_the_device(done_follows=True)
    clock.now = 0.010 + TAIL_CAP + 0.001
    policy.used("b", 0.05)
    assert "a" not in policy._on


def test_the_worker_says_d_in_a_standing_release_and_done_when_its_work_has_run():
    ctx = zmq.Context()
    arbiter = Arbiter(ctx, "share", ["cpu:0"]).start()
    ann = DeviceLease(ctx, arbiter.address, "wa", arbiter.baton_path)
    bob = DeviceLease(ctx, arbiter.address, "wb", arbiter.baton_path)
    policy = arbiter.policies["cpu:0"]
    try:
        arbiter.attach("wa", "cpu:0", "sa", "ann", 1.0)
        arbiter.attach("wb", "cpu:0", "sb", "bob", 1.0)
        assert ann.acquire(0.0, lambda: False) and bob.acquire(0.0, lambda: False)
        assert until(lambda: "sa" in policy._on and "sb" in policy._on)
        assert ann.standing
        ann.release(0.05, want=True, ahead=0.010)   # (told to stop, far ahead: held back)
        assert ann.release_open
        assert until(lambda: policy._draining.get("sa", 0) > policy.clock() + 0.5 * TAIL_CAP)
        ann.done(0.011)                           # not holding: said all the same
        assert not ann.release_open
        assert until(lambda: "sa" not in policy._draining and "sa" not in policy._on)
        assert "sa" not in policy.admitted                  # (still held back: 50 ms ahead)
    finally:
        for lease in (ann, bob):
            lease.close()
        arbiter.stop()
        ctx.term()


def test_a_worker_told_not_to_says_no_d_and_no_done():
    ctx = zmq.Context()
    router = ctx.socket(zmq.ROUTER)
    port = router.bind_to_random_port("tcp://127.0.0.1")
    lease = DeviceLease(ctx, f"tcp://127.0.0.1:{port}", "w")
    try:
        for release_done, said in ((False, False), (True, True)):
            lease.release_done = release_done
            lease.holding = lease.standing = True
            lease.release(0.001, want=True, ahead=0.01)
            msg = unpackb(router.recv_multipart()[1])
            assert msg["t"] == "release" and (msg.get("d") is True) == said
            lease.done(0.002)
            assert router.poll(200) == (zmq.POLLIN if said else 0)
            if said:
                assert unpackb(router.recv_multipart()[1])["t"] == "done"
        lease.holding = lease.standing = True     # let go again before its work had run:
        lease.release(0.004, want=True, ahead=0.01)   # no done owed after the new grant
        assert unpackb(router.recv_multipart()[1]).get("d") is True and lease.release_open
        ident = b"w"
        router.send_multipart([ident, packb({"t": "grant", "g": 7, "s": True})])
        assert until(lambda: lease.pending())
        lease.read(0.004)
        assert lease.holding and not lease.release_open
        lease.done(0.005)
        assert router.poll(200) == 0
        for want, ahead in ((True, 0.0), (False, 0.01)):   # (no work left; or out of work,
            lease.holding = lease.standing = True          # its done maybe half a second
            lease.release(0.003, want=want, ahead=ahead)   # late: its estimate serves)
            assert "d" not in unpackb(router.recv_multipart()[1]) and not lease.release_open
    finally:
        lease.close()
        router.close(0)
        ctx.term()


def test_the_workers_setting():
    assert WorkerSettings.from_environ({}).release_done is True
    assert WorkerSettings.from_environ({"GPUWB_RELEASE_DONE": "0"}).release_done is False
