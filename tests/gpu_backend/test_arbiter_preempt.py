"""The arbiter thread with real leases over real sockets: a preempted holder learns it from
the baton file's yield word before the message arrives, and its newcomer's grant names the
holder's work to wait for and how long at most."""

from __future__ import annotations

from contextlib import contextmanager

import zmq

from gpu_backend.arbiter.policy import PREEMPT_PATIENCE
from gpu_backend.arbiter.service import Arbiter
from gpu_backend.worker.lease import DeviceLease

from tests.waiting import until


@contextmanager
def _holder_with_time_used():
    """An arbiter (``fair``, one device) and two workers' leases: the holder, granted alone,
    has reported 200 ms of device time, and the arbiter has taken the report in; the
    newcomer has not asked yet. (The wait for the report matters under CI's load: with a
    fixed 50 ms sleep the newcomer sometimes had no credit to preempt with yet, and was
    granted later, with nothing to wait for.)"""
    ctx = zmq.Context()
    arbiter = Arbiter(ctx, "fair", ["cpu:0"]).start()
    leases = []
    try:
        arbiter.attach("wa", "cpu:0", "sa", "busy", 1.0)
        arbiter.attach("wi", "cpu:0", "si", "interactive", 1.0)
        holder = DeviceLease(ctx, arbiter.address, "wa", arbiter.baton_path)
        newcomer = DeviceLease(ctx, arbiter.address, "wi", arbiter.baton_path)
        leases += [holder, newcomer]
        assert holder.acquire(0.0, lambda: False)             # alone: granted, keep until told
        holder.report(0.2)                                     # 200 ms of device time used
        assert until(lambda: arbiter.snapshot.get("cpu:0", {}).get("users", {})
                      .get("busy", {}).get("vt", 0.0) >= 0.2)
        yield holder, newcomer
    finally:
        for lease in leases:
            lease.close()
        arbiter.stop()
        ctx.term()


def _read_until_holding(lease: DeviceLease) -> bool:
    lease.read(0.0)
    return lease.holding


def test_a_preempted_holder_reads_its_yield_word_and_the_newcomer_waits_for_it():
    with _holder_with_time_used() as (holder, newcomer):
        assert holder.hand_over_at is None and not holder.must_hand_over(1.0)
        newcomer._send({"t": "want"})                          # back from idle, with credit
        # the holder reads nothing from its socket, yet it knows
        assert until(lambda: holder.must_hand_over(0.2))
        assert newcomer.acquire(0.0, lambda: False)
        assert newcomer.after == [holder.slot, holder.grant]  # wait for the holder's work...
        assert newcomer.patience == PREEMPT_PATIENCE           # ... but not for a long kernel
        holder.release(0.2, want=True)
        holder.finished(holder.grant, holder.slot)
        # its work finished: the wait ends on the baton's word, not at its patience (asked
        # of the lease, not of the clock: a loaded machine may stall any call past 5 ms)
        assert newcomer.wait_for_previous() is True and newcomer.overlapping is None


def test_a_grant_resent_to_a_second_want_keeps_the_wait_for_the_last_holder():
    """A newcomer whose second ``want`` crossed its preempting grant is sent the grant again,
    without the hand-over it named: the lease keeps the first one's (under CI's load the
    test above met this, and its newcomer would have launched beside the holder's work)."""
    with _holder_with_time_used() as (holder, newcomer):
        newcomer._send({"t": "want"})
        assert until(lambda: _read_until_holding(newcomer))   # (after the "company" word)
        assert newcomer.after == [holder.slot, holder.grant]
        grant = newcomer.grant
        newcomer._send({"t": "want"})            # as if it had not seen the grant yet
        assert until(newcomer.pending)           # the same grant, sent again
        newcomer.read(0.0)
        assert newcomer.grant == grant and newcomer.after == [holder.slot, holder.grant]
        assert newcomer.patience == PREEMPT_PATIENCE
