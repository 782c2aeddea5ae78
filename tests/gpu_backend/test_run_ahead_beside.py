"""A session's replays run ahead beside another session under ``share``, the pool's default
policy (worker/pacing.py, ``Pacer.may_run_ahead``): it holds a standing grant and is not told
to stop, so its next replay is launched as soon as the last is answered, measured and
charged as any batch, and answered with no batch of the pacer's. Why: under ``none`` (no
lease) an interactive user's small replay was run ahead in the 10 ms between its requests,
and under ``share`` beside a saturating user it was not, so each request waited for the
device behind the other's kernels (H200 run 94: p50 0.8-1.7 ms against 0.5-0.7 under
``none``). Its results are what the ops give; with ``GPUWB_RUN_AHEAD_BESIDE=0`` none is run
ahead in company, as before."""

from __future__ import annotations

import time

import pytest

import kernelproxy
from kernelproxy.modules import module_for
from ..differential import assert_bitwise
from ..run_ahead_sessions import beside_no_replay, pool_running_ahead

STEPS = 40
#: the user's own Python between iterations: the worker runs the next replay ahead meanwhile
PAUSE = 0.001


#: the other session stays company however long a loop takes on a loaded host (an idle
#: session is no company after the pool's ``company_idle_ms``, 1 s by default: the loop
#: then ran ahead alone, and the test of none run ahead in company failed, CI-like load)
COMPANY = {"GPUWB_COMPANY_IDLE_MS": "600000"}


@pytest.fixture(scope="module")
def pool():
    with pool_running_ahead("share", **COMPANY) as p:
        yield p


@pytest.fixture(scope="module")
def alone_only_pool():
    with pool_running_ahead("share", beside=False, **COMPANY) as p:
        yield p


def _syncing_loop(cp):
    """A loop that reads a value at each step (an interactive user's request, made often),
    its scalar stepping; then ops of another kind on its result."""
    x = cp.arange(1000, dtype=cp.float32) / 7
    y = cp.ones(1000, dtype=cp.float32)
    out = []
    for step in range(STEPS):
        y = (x * (step * 0.5) + y) * 0.5
        out.append(float(y.sum()))
        time.sleep(PAUSE)
    z = cp.sqrt(cp.abs(y)) - cp.flip(x)
    return out + [float(z.max()), z.get(), y.get()]


def _beside_another(pool, loop, **settings):
    """*loop* on a fresh session while another session of the same device is open (it
    holds an array: attached, so the loop's session is in company from its first grant)."""
    other = kernelproxy.connect(pool.address, pool.token)
    try:
        kept = module_for(other).ones(1000, dtype="float32")
        assert float(kept.sum()) == 1000.0
        return beside_no_replay(pool, loop, **settings)
    finally:
        other.close()


def test_a_sessions_replays_are_run_ahead_and_answered_beside_another(pool):
    got, want, figures = _beside_another(pool, _syncing_loop)
    assert_bitwise(got, want)
    assert figures["ahead"] >= 1 and figures["fallbacks"] == 0, figures
    # (each answered with no batch of the pacer's: it launched nothing)
    assert figures["ahead_alone"] == figures["ahead"], figures


def test_an_early_replay_run_ahead_beside_another_is_bitwise_too(pool):
    got, want, figures = _beside_another(pool, _syncing_loop, early_replay=True)
    assert_bitwise(got, want)
    assert figures["ahead"] >= 1, figures


def test_run_ahead_beside_others_off_runs_none_ahead_in_company(alone_only_pool):
    got, want, figures = _beside_another(alone_only_pool, _syncing_loop)
    assert_bitwise(got, want)
    assert figures["ahead"] == 0 and figures["replays"] >= STEPS // 2, figures


def _lease(**state):
    """A real (unconnected) lease left as the arbiter's messages would leave it."""
    import zmq
    from gpu_backend.worker.lease import DeviceLease

    lease = DeviceLease(zmq.Context.instance(), "inproc://gpuwb-test-no-arbiter", "w")
    for name, value in state.items():
        setattr(lease, name, value)
    return lease


def test_a_replay_is_run_ahead_only_where_it_waits_for_no_turn_and_nobody_waits_for_it():
    from gpu_backend.devices.numpy_device import NumpyDevice
    from gpu_backend.worker.pacing import Pacer

    def pacer(**state):
        return Pacer(NumpyDevice(), _lease(**state) if state else None)

    assert pacer().may_run_ahead() and pacer().answers_unlaunched()          # no lease: none
    alone = pacer(holding=True, alone=True)
    assert alone.may_run_ahead(beside=False) and alone.answers_unlaunched()
    beside = pacer(holding=True, alone=False, standing=True)                   # share, free
    assert beside.may_run_ahead() and beside.answers_unlaunched()
    assert not beside.may_run_ahead(beside=False)                              # as before
    told = pacer(holding=True, alone=False, standing=True, hand_over_at=0.1)   # held back
    assert not told.may_run_ahead() and told.answers_unlaunched()
    # (its run ahead begins no batch, and the lease is left as it was: no grant handed
    # back, none asked for, where the client's next message may never come)
    assert not told.begin_ahead() and told.lease.holding and not told.lease.asked
    assert beside.begin_ahead() and beside.lease.holding
    turns = pacer(holding=True, alone=False, standing=False)                  # fair: turns
    assert not turns.may_run_ahead() and not turns.answers_unlaunched()
    waiting = pacer(holding=False, alone=False, standing=True)                # no grant
    assert not waiting.may_run_ahead() and not waiting.answers_unlaunched()




#: the other user: a loop of ops, each iteration read, from its first op until told to stop
_BUSY = """
import os, sys, numpy as np, kernelproxy
from kernelproxy.modules import module_for
with kernelproxy.connect(sys.argv[1], sys.argv[2]) as s:
    cp = module_for(s)
    a = cp.arange(20000, dtype=cp.float64) / 3
    steps = 0
    while steps < 2 or not os.path.exists(sys.argv[3] + ".stop"):
        a = cp.sin(a) * 0.5 + a * 0.25
        float(a[0])
        steps += 1
        if steps == 2:
            print("busy", flush=True)
    np.save(sys.argv[3], a.get())
    print(steps, flush=True)
"""


def test_replays_run_ahead_beside_a_busy_session_stay_bitwise(pool, tmp_path):
    """The other session busy all the while, in a process of its own (the loop's session
    may be told to stop, its run ahead then skipped, or waiting for the device until its
    next message comes): the loop's results are those of a session without replay, the busy
    one's too, and both finish."""
    import os
    import subprocess
    import sys

    import numpy as np

    out = tmp_path / "busy.npy"
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [
        root, os.environ.get("PYTHONPATH")]))}
    busy = subprocess.Popen([sys.executable, "-c", _BUSY, pool.address, pool.token, str(out)],
                            env=env, stdout=subprocess.PIPE, text=True)
    try:
        assert busy.stdout.readline().strip() == "busy"   # (its session is working)
        got, want, figures = beside_no_replay(pool, _syncing_loop)
        (tmp_path / "busy.npy.stop").touch()
        steps = int(busy.stdout.readline())
        assert busy.wait(60) == 0
    finally:
        if busy.poll() is None:
            busy.kill()
    assert_bitwise(got, want)
    with kernelproxy.connect(pool.address, pool.token) as s:
        cp = module_for(s)
        a = cp.arange(20000, dtype=cp.float64) / 3
        for _ in range(steps):
            a = cp.sin(a) * 0.5 + a * 0.25
            float(a[0])
        assert_bitwise(np.load(out), a.get())


def test_a_run_ahead_leaves_the_arbiters_word_and_the_grant_as_they_were():
    """Real arbiter thread (``share``) and lease: a run ahead that finds a word of the
    arbiter's unread begins nothing and leaves it for the serving loop (read and declined,
    it would be lost to the idle loop); one whose grant the baton says to yield begins
    nothing and hands nothing back (no ``release`` asking for a grant the client's next
    message may never need). Once free, it begins and says ``want`` again. An answer from a
    run ahead that no run ahead followed says ``idle`` beside others (Pacer.out_of_work)."""
    import zmq

    from gpu_backend.arbiter.service import Arbiter
    from gpu_backend.devices.numpy_device import NumpyDevice
    from gpu_backend.worker.lease import DeviceLease
    from gpu_backend.worker.pacing import Pacer
    from ..waiting import until

    ctx = zmq.Context()
    arbiter = Arbiter(ctx, "share", ["cpu:0"]).start()
    lease = None
    try:
        arbiter.attach("wa", "cpu:0", "sa", "a", 1.0)
        arbiter.attach("wb", "cpu:0", "sb", "b", 1.0)
        lease = DeviceLease(ctx, arbiter.address, "wa", arbiter.baton_path)
        pacer = Pacer(NumpyDevice(), lease)
        assert pacer.begin_batch(lambda: False) and lease.holding and lease.standing
        assert not lease.alone                             # (its grant said so)
        pacer.end_batch(0, lambda: True)                   # more to come: nothing said
        pacer.out_of_work(lambda: True)
        assert not lease.idle_said
        pacer.out_of_work(lambda: False)   # an answer no run ahead followed: idle, beside b
        assert lease.idle_said
        arbiter.detach("wb")                               # a word for a: alone now
        assert until(lease.pending)
        assert not pacer.begin_ahead() and lease.pending() and lease.holding
        pacer.idle()                                       # the idle loop reads it
        assert not lease.pending() and lease.alone
        assert pacer.begin_ahead() and not lease.idle_said
        pacer.end_batch(0, lambda: False)
        # the baton's word to yield (share sets it before its message): nothing handed back
        lease.alone = False
        lease.hand_over_at, lease.at_batch_end = 0.0, False
        assert not pacer.begin_ahead() and lease.holding and not lease.asked
    finally:
        if lease is not None:
            lease.close()
        arbiter.stop()
        ctx.term()
