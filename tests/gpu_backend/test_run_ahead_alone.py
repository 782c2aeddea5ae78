"""A lone session's replays answered from the one run ahead under ``share``, the pool's
default policy: its worker holds a lease, and a replay answered so launches nothing on the
device, so it runs no batch of the pacer's (Executor.run_batch, Pacer.end_unlaunched; issue
50's "a lone session pays for no pacing it does not need"). Its results are what the ops
give, and the session's next batches, paced as ever, too.

A session told that others wait while it answers so hands the device over at that batch's
end, as after any batch (``Pacer.end_unlaunched``). A short replay run ahead makes its
closing reads at once (``READ_NOW_SECONDS``): their values are what the client's replay would
read, and a read that fails then fails when the client asks, as before.
``test_run_ahead.py`` runs the same loops on a pool without leases (policy ``none``)."""

from __future__ import annotations

import time

import pytest
import zmq

from gpu_backend.arbiter.service import Arbiter
from gpu_backend.devices.numpy_device import NumpyDevice
from gpu_backend.worker.lease import DeviceLease
from gpu_backend.worker.pacing import Pacer
from ..differential import assert_bitwise
from ..run_ahead_sessions import beside_no_replay, pool_running_ahead
from ..waiting import until

STEPS = 40
#: the user's own Python between iterations: the worker runs the next replay ahead meanwhile
PAUSE = 0.001


@pytest.fixture(scope="module")
def pool():
    with pool_running_ahead("share") as p:
        yield p


@pytest.fixture(scope="module")
def reading_pool():
    """... whose workers also make a run ahead's closing reads at once, whatever its
    device time (READ_NOW_SECONDS is passed by the NumPy device's on a slow VM)."""
    with pool_running_ahead("share", read_now=True) as p:
        yield p


def _loop_then_more(cp):
    """A syncing loop whose scalar steps (guessed for the run ahead), then ops of another
    kind on its result: a batch of the pacer's after the unpaced answers."""
    x = cp.arange(1000, dtype=cp.float32) / 7
    y = cp.ones(1000, dtype=cp.float32)
    out = []
    for step in range(STEPS):
        y = (x * (step * 0.5) + y) * 0.5
        out.append(float(y.sum()))
        time.sleep(PAUSE)
    z = cp.sqrt(cp.abs(y)) - cp.flip(x)
    return out + [float(z.max()), z.get(), y.get()]


def test_a_lone_sessions_replays_answered_ahead_run_no_pacer_batch_and_stay_bitwise(pool):
    got, want, figures = beside_no_replay(pool, _loop_then_more)
    assert_bitwise(got, want)
    assert figures["ahead"] >= 1 and figures["fallbacks"] == 0, figures
    # alone, every replay answered from the run ahead took the lone path
    assert figures["ahead_alone"] == figures["ahead"], figures


def test_an_early_replay_answered_ahead_alone_is_bitwise_too(pool):
    """Early replay on (the replay sent at the stretch's first op, the default)."""
    got, want, figures = beside_no_replay(pool, _loop_then_more, early_replay=True)
    assert_bitwise(got, want)
    assert figures["ahead_alone"] == figures["ahead"], figures


def test_a_run_aheads_reads_made_at_once_give_what_the_ops_give(reading_pool):
    got, want, figures = beside_no_replay(reading_pool, _loop_then_more)
    assert_bitwise(got, want)
    assert figures["ahead_read"] >= 1 and figures["ahead_alone"] == figures["ahead"], figures


def test_an_early_replays_run_ahead_leaves_its_reads_for_the_clients_replay(reading_pool):
    """A replay the client sent early (at its stretch's first op) comes while the client
    still issues the rest: its run ahead's reads are not made at once (the worker would
    wait for its device with the client's next message there), and the values are the
    same."""
    def early_loop(cp):
        x = cp.arange(1000, dtype=cp.float32) / 7
        out = []
        for _ in range(STEPS):
            x = x * 0.5 + 1.0
            out.append(float(x.sum()))
            time.sleep(PAUSE)
        return out, x.get()

    # (early all along: not sent whole where the lane would push its replies, which
    # test_pushed_replies.py tests)
    got, want, figures = beside_no_replay(reading_pool, early_loop, early_replay=True,
                                          lane_over_early=False)
    assert_bitwise(got, want)
    # (the first replays go at the sync point, until the client has learnt when to send
    # early: their runs ahead may read at once)
    assert figures["ahead"] >= STEPS // 2 and figures["ahead_read"] <= 2, figures
    got, want, figures = beside_no_replay(reading_pool, early_loop, early_replay=False)
    assert_bitwise(got, want)
    assert figures["ahead_read"] >= 1, figures


def test_a_read_that_fails_when_made_at_once_fails_when_the_client_asks(reading_pool):
    """A loop-carried count goes round 1, 2, 3, 4, 0, and the value read is infinite when
    it is 4 (``inf ** 1``, which no NumPy warning announces): ``int`` of it fails at every
    fifth step, in the worker. A run ahead of such a step reads at once, fails, leaves
    nothing, and the client's replay reads again: the same error at the same steps, and
    the loop goes on."""
    def overflowing(cp):
        y = cp.zeros(1, dtype=cp.float64)
        big = cp.full(1, cp.inf)
        out = []
        for _ in range(40):
            y = (y + 1.0) % 5.0
            try:
                out.append(int((big ** ((y > 3.0) * 1.0) + y).sum()))   # (1 + y, or inf)
            except OverflowError as exc:
                out.append(type(exc).__name__)
            time.sleep(PAUSE)
        return out, [float((y + 1).sum()), cp.arange(5).get()]

    # (sent at their sync points: an early replay's reads wait for the client's replay)
    got, want, figures = beside_no_replay(reading_pool, overflowing, early_replay=False)
    assert got[0] == want[0]   # (ints while the value is finite, the error's name where not)
    assert got[0] == [2, 3, 4, "OverflowError", 1] * 8
    assert_bitwise(got[1], want[1])
    # (read at once at the finite steps; a run ahead of an infinite one read, failed, and
    # the client's replay read again)
    assert figures["ahead_read"] >= 1 and figures["ahead_read_later"] >= 1, figures


def test_a_lone_holder_preempted_by_then_hands_over_after_its_unlaunched_answer():
    """Real arbiter thread (``fair``), real leases: the holder, alone, took the lone path
    (no batch of its pacer's); a newcomer with credit asks meanwhile. At the answer's end
    the holder, told by the baton's word, releases the device, and the newcomer is granted:
    it waits for no further replay of the holder's."""
    ctx = zmq.Context()
    arbiter = Arbiter(ctx, "fair", ["cpu:0"]).start()
    leases = []
    try:
        arbiter.attach("wa", "cpu:0", "sa", "busy", 1.0)
        arbiter.attach("wi", "cpu:0", "si", "interactive", 1.0)
        holder = DeviceLease(ctx, arbiter.address, "wa", arbiter.baton_path)
        newcomer = DeviceLease(ctx, arbiter.address, "wi", arbiter.baton_path)
        leases += [holder, newcomer]
        pacer = Pacer(NumpyDevice(), holder)
        assert pacer.begin_batch(lambda: False) and holder.holding
        holder.report(0.2)                                     # 200 ms of device time used
        pacer.end_batch(0, lambda: False)
        assert until(lambda: arbiter.snapshot.get("cpu:0", {}).get("users", {})
                      .get("busy", {}).get("vt", 0.0) >= 0.2)
        assert holder.holding
        newcomer._send({"t": "want"})                          # back from idle, with credit
        assert until(lambda: holder.baton.preempted(holder.slot, holder.grant))
        pacer.end_unlaunched(lambda: True)                     # (its client's next batch waits)
        assert not holder.holding                              # handed over, asking again
        assert newcomer.acquire(0.0, lambda: False)
    finally:
        for lease in leases:
            lease.close()
        arbiter.stop()
        ctx.term()


def test_a_traced_pool_runs_replays_ahead_as_an_untraced_one(tmp_path):
    """With the pacing trace kept (``GPUWB_PACING_TRACE``: every segment timed and written,
    benchmarks/fairness.py's diagnosis), the replays are still learnt and run ahead: a trace
    observes the pool it is meant to explain (before, no replay was ever run ahead under
    one), and the results stay bitwise."""
    with pool_running_ahead("share", GPUWB_PACING_TRACE=str(tmp_path)) as traced:
        got, want, figures = beside_no_replay(traced, _loop_then_more)
    assert_bitwise(got, want)
    assert figures["ahead"] >= 1 and figures["fallbacks"] == 0, figures
    assert list(tmp_path.glob("*.jsonl")), "the workers' traces were written"
