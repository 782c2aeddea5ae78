"""A held stretch's replay charged what its last measured replay was, without markers
(``Pacer.replay_estimate``), on a real NumPy device and a real (unconnected) lease socket.

Its two CUDA events, their queries and the harvest cost 15-25 µs of an H200 host's worker a
replay. Where nobody is paced against the session (no lease, or alone on the device) a
replay is measured once, charged that MEASURE_EVERY times, then measured again; in
company every replay is measured, as every batch is, and learnt but never charged so."""

from __future__ import annotations

from time import perf_counter

import zmq

from gpu_backend.devices.numpy_device import NumpyDevice
from gpu_backend.worker.lease import DeviceLease
from gpu_backend.worker.pacing import MEASURE_EVERY, Pacer


def _pacer(lease: str | None = None) -> Pacer:
    """A pacer without a lease (policy ``none``), or holding one *lease* (``alone`` or
    ``company``) as the arbiter's grant would have left it."""
    if lease is None:
        return Pacer(NumpyDevice())
    held = DeviceLease(zmq.Context.instance(), "inproc://gpuwb-test-no-arbiter", "w")
    held.holding, held.alone = True, lease == "alone"
    return Pacer(NumpyDevice(), held)


def _replay(pacer: Pacer, cost: list, seconds: float = 2e-4) -> float | None:
    """One replay batch as the executor and StretchReplay.run drive the pacer: *seconds*
    of work (the NumPy device's is done when issued, and its markers are host times)."""
    pacer.begin_batch(lambda: False)
    estimate = pacer.replay_estimate(cost)
    if estimate is None and pacer.fresh_due:
        pacer.start_segment()
    until = perf_counter() + seconds
    while perf_counter() < until:
        pass
    if estimate is not None:
        pacer.charge(estimate)
    pacer.end_batch(20, lambda: False)
    return estimate


def test_a_replay_without_a_lease_is_measured_once_then_charged_that():
    pacer, cost = _pacer(), [None, 0]
    before = pacer.busy
    assert _replay(pacer, cost) is None             # measured: a segment, as any batch
    assert cost == [pacer.busy - before, 0] and cost[0] > 0
    for n in range(MEASURE_EVERY):
        before = pacer.busy
        assert _replay(pacer, cost) == cost[0]
        assert pacer.busy == before + cost[0]         # charged exactly that, nothing more
        assert not pacer._pending and pacer.fresh_due   # no segment was begun or marked
        assert cost[1] == n + 1
    measured = cost[0]
    before = pacer.busy
    assert _replay(pacer, cost, 1e-3) is None       # measured again, and learnt anew
    assert cost == [pacer.busy - before, 0] and cost[0] != measured


def test_a_lone_holder_is_charged_the_measured_replay_and_company_measures_each():
    alone = _pacer("alone")
    cost = [None, 0]
    _replay(alone, cost)
    assert cost[0] is not None and _replay(alone, cost) == cost[0]

    company = _pacer("company")
    cost = [None, 0]
    spans = []
    for seconds in (5e-4, 2e-4, 1e-3):
        before = company.busy
        assert _replay(company, cost, seconds) is None   # others wait: every one measured
        spans.append(company.busy - before)
        assert spans[-1] > 0
    # ... and learnt, the shortest (beside others a span holds others' slices too; a run
    # ahead is gated by it: Pacer.may_run_ahead), never charged as measured beside others:
    # the session alone measures again first
    assert cost == [min(spans), MEASURE_EVERY]
    assert _replay(alone, cost) is None
    assert cost[1] == 0 and _replay(alone, cost) == cost[0]


def test_a_replay_after_a_batch_left_unmeasured_is_measured_within_its_own_batch():
    """A measurement begun in a batch that then ended without its end (the executor skips
    end_batch for a batch that ran nothing) is dropped at the next batch's start: a later
    replay never learns the time of several batches."""
    pacer, cost = _pacer(), [None, 0]
    pacer.begin_batch(lambda: False)
    assert pacer.replay_estimate(cost) is None        # measuring begins, no end follows
    pacer.begin_batch(lambda: False)
    pacer.start_segment()
    until = perf_counter() + 3e-3
    while perf_counter() < until:
        pass
    pacer.end_batch(5, lambda: False)                 # another batch: not the replay's
    assert cost == [None, 0]


def test_while_tracing_every_replay_is_measured_and_learnt():
    """A trace records every replay as a segment (no estimate charged), and what it measured
    is learnt all the same, so that a traced pool runs replays ahead as an untraced one does
    (Pacer.may_run_ahead and worker/run_ahead.py need a learnt cost)."""
    pacer = Pacer(NumpyDevice(), trace=True)
    cost = [None, 0]
    for _ in range(MEASURE_EVERY + 2):
        before, segments = pacer.busy, sum(1 for entry in pacer.trace if type(entry[1]) is int)
        assert _replay(pacer, cost) is None
        assert cost[0] == pacer.busy - before > 0 and cost[1] == 0   # measured, and learnt
        assert sum(1 for entry in pacer.trace if type(entry[1]) is int) == segments + 1


def test_a_measurement_made_beside_others_is_never_learnt_as_a_lone_one():
    """A run ahead measured beside others and answered once its neighbour has gone (Pacer.
    learn's *alone*, what RunAhead.start saw): learnt as beside others, so the session alone
    measures again before it charges one; nothing measured teaches nothing."""
    alone = _pacer("alone")
    cost = [None, 0]
    alone.learn(cost, 0.02, alone=False)
    assert cost == [0.02, MEASURE_EVERY]
    assert _replay(alone, cost) is None and cost[1] == 0 and cost[0] < 0.02
    before = list(cost)
    alone.learn(cost, 0.0)
    assert cost == before



def _side_by_side(priced: bool = True) -> Pacer:
    """A pacer holding a standing grant beside others (``share``), its replays priced
    (worker/replay_prices.py) or not."""
    held = DeviceLease(zmq.Context.instance(), "inproc://gpuwb-test-no-arbiter", "w")
    held.holding, held.standing, held.alone = True, True, False
    return Pacer(NumpyDevice(), held, priced=priced)


def test_beside_others_a_priced_replay_is_charged_its_least_span_and_told_apart():
    """Beside others a replay's span holds the others' time slices too, and where its
    kernels fell against them moves it by tens of per cent: priced, a replay whose cost is
    known is charged that cost (its least span measured), exactly, each time, and the
    charge is told to the arbiter apart (the lease's ``own``), while its spans are still
    measured and the least of them learnt. Its first replay, whose cost is not known yet,
    is charged its span."""
    pacer, cost = _side_by_side(), [None, 0]
    assert _replay(pacer, cost, 1e-3) is None
    first = pacer.busy
    assert first > 0 and pacer.own == 0.0 and cost == [first, MEASURE_EVERY]   # measured
    charges = []
    for seconds in (3e-3, 2e-3, 5e-4, 2e-3):
        price, before = cost[0], pacer.busy
        assert _replay(pacer, cost, seconds) is None   # measured all the same: a segment
        charges.append(pacer.busy - before)
        assert charges[-1] == price                     # ... charged its price, not its span
        assert not pacer._pending and pacer._price is None
    assert pacer.own == sum(charges) == pacer.lease.own
    # the least span measured is learnt, never a longer one (the NumPy device's markers are
    # CPU time: on a loaded machine the first replay's 1 ms of spinning measured 0.49 ms,
    # less than the 0.5 ms one's, so which replay is the least is the host's to say)
    assert cost[0] <= first and cost[1] == MEASURE_EVERY
    assert charges[-1] == cost[0] <= charges[0]


def test_unpriced_or_alone_a_replay_is_charged_as_before():
    """Not priced, a replay beside others is charged its span, as any batch; alone, a
    priced pacer charges what its replay measured alone, without markers, as before."""
    plain, cost = _side_by_side(priced=False), [None, 0]
    charges = []
    for seconds in (1e-3, 3e-3, 2e-3):
        before = plain.busy
        assert _replay(plain, cost, seconds) is None
        charges.append(plain.busy - before)           # (its span: the NumPy device's)
    assert min(charges) > 0 and cost[0] == min(charges)   # each charged what it measured
    assert plain.own == 0.0 and plain.lease.own == 0.0
    alone = _side_by_side()
    alone.lease.alone = True
    cost = [None, 0]
    _replay(alone, cost)
    assert _replay(alone, cost) == cost[0] and alone.own == 0.0


def test_a_priced_replay_whose_batch_ran_nothing_is_not_charged():
    """A priced replay whose batch ended without its end and ran nothing (no segment) is
    dropped at the next batch, not charged its price; one that ran is charged."""
    pacer, cost = _side_by_side(), [2e-3, MEASURE_EVERY]
    pacer.begin_batch(lambda: False)
    assert pacer.replay_estimate(cost) is None and pacer._price is not None
    pacer.begin_batch(lambda: False)                  # nothing ran: dropped
    assert pacer._price is None and pacer.busy == 0.0 and pacer.own == 0.0
    assert _replay(pacer, cost, 1e-4) is None
    assert pacer.own == pacer.busy == 2e-3


def test_a_replay_priced_behind_unharvested_work_is_priced_by_its_own_segments():
    """A client's next replay, sent early, may find the last batch's segment not yet
    harvested (on a GPU its end marker is not reached for a few µs): the replay is priced
    all the same, that segment charged its span, the replay its price."""
    pacer, cost = _side_by_side(), [2e-3, MEASURE_EVERY]
    pacer.begin_batch(lambda: False)
    pacer.start_segment()
    until = perf_counter() + 1e-3
    while perf_counter() < until:
        pass
    pacer._mark(3)                                   # launched, not harvested
    assert pacer._pending
    assert pacer.replay_estimate(cost) is None and pacer._price is not None
    pacer.start_segment()
    pacer.end_batch(4, lambda: False)
    earlier = pacer.busy - 2e-3
    # (its span: the NumPy device's markers are the process's CPU time, which a loaded
    # machine's descheduling cuts short of the 1 ms spun: charged, whatever it measured)
    assert pacer.own == 2e-3 and earlier > 0
