"""What the client's stretch replay keeps is bounded, and what it decided is never
forgotten for room (kernelproxy.stretch_replay, docs/stretch-replay.md "Bounds").

Two halves: the client's StretchReplay driven as the session drives it, with a clock of
the test's own (as tests/kernelproxy/test_stretch_timing.py does), and the same through a
real session of a LocalPool on the NumPy device, where a worker answers the offers.
"""

from __future__ import annotations

import itertools

from gpu_backend.pool import LocalPool
from gpu_backend.protocol import api
from gpu_backend.protocol import messages as m
from gpu_backend.protocol.stretches import MAX_STRETCH_OPS, REPEATS
from kernelproxy.modules import module_for
from kernelproxy.session import Session
from kernelproxy.settings import SessionSettings
from kernelproxy.stretch_key import UNKEYABLE, StretchKey
from kernelproxy.stretch_replay import (HOLD_AFTER, MAX_COUNTED, MAX_DECIDED, MAX_REFUSED, TIMED_REPLAYS,
                                       StretchReplay)

from ..differential import TEST_DEVICES
from ..quiet_gc import no_collection


class _Remote:
    def __init__(self, hid: int) -> None:
        self._h = hid


class Harness:
    """A StretchReplay, its clock, and the session's part: each stretch's ops added to
    its key, its end shaped into a batch header, the worker's answer, the sync's return."""

    def __init__(self) -> None:
        self.now = 0.0
        self.replay = StretchReplay(lambda obj: getattr(obj, "_h", None), clock=lambda: self.now)
        self._batches = itertools.count(1)
        self._handles = itertools.count(1)
        self._others = itertools.count(10_000)

    def add(self, n: int) -> None:
        """The ops of stretch *n* (``float(cupy.ones(n).sum())``): one stretch per *n*."""
        hid = next(self._handles)
        self.replay.current.add_op(m.KIND_FUNCTION, api.ARRAY, hid, "ones", None, (n,), {})
        self.replay.current.add_op(m.KIND_METHOD, api.VALUE, None, "sum", _Remote(hid), (), {})

    def run(self, n: int, seconds: float = 1.0, keep: bool = True, split: bool = False) -> str:
        """Stretch *n* to its sync point, which returns *seconds* later; the worker keeps
        what is offered (*keep*) or refuses it; *split*: some of its ops went early. What
        its batch's header carried: "T" (a replay), "O" (an offer), "D" (a drop), or "ops"."""
        self.add(n)
        if split:
            self.replay.split()
        batch = next(self._batches)
        header = {"b": batch}
        if self.replay.drops:
            header["D"] = self.replay.take_drops()
        self.replay.shape(header, self.replay.swap(), batch)
        self.replay.answered(batch, header.get("O") if keep else None)
        self.now += seconds
        self.replay.synced()
        return next((k for k in ("T", "O", "D") if k in header), "ops")

    def others(self, count: int = MAX_COUNTED + 1) -> None:
        """*count* stretches, each seen once (a program that does not repeat)."""
        for n in itertools.islice(self._others, count):
            self.run(n, seconds=0.1)


# ---------------------------------------------------------------- the client alone

def test_a_refused_or_let_go_stretch_stays_so_past_max_counted_other_stretches():
    h = Harness()
    refused = [h.run(1, keep=False) for _ in range(REPEATS)]
    assert refused[-1] == "O" and h.replay.figures()["refused"] == 1
    # replays no faster than its pipelined runs: let go after the first and TIMED_REPLAYS more
    let_go = [h.run(2) for _ in range(REPEATS + 1 + TIMED_REPLAYS)] + [h.run(2)]
    assert let_go[REPEATS - 1] == "O" and let_go[-1] == "D"
    assert h.replay.figures()["released"] == 1

    h.others()
    assert set(h.run(1, keep=False) for _ in range(2 * REPEATS)) == {"ops"}   # never offered again
    assert set(h.run(2) for _ in range(2 * REPEATS)) == {"ops"}               # never held again
    figures = h.replay.figures()
    assert figures["refused"] == 1 and figures["released"] == 1 and figures["held"] == 0


def test_a_held_stretchs_timing_outlives_max_counted_other_stretches():
    """Its pipelined runs' times (sightings 2 to HOLD_AFTER) are what its replays are
    weighed against: lost, the stretch would be kept however slow its replays."""
    h = Harness()
    carried = [h.run(1) for _ in range(REPEATS + 1)]   # offered, held, replayed once (its capture)
    assert carried[-2:] == ["O", "T"]
    h.others()
    carried = [h.run(1) for _ in range(TIMED_REPLAYS + 2)]   # as slow as pipelined: let go
    assert carried[:TIMED_REPLAYS] == ["T"] * TIMED_REPLAYS and carried[TIMED_REPLAYS] == "D"
    assert h.replay.figures()["released"] == 1 and h.replay.figures()["held"] == 0


def test_undecided_counts_forget_the_least_recently_seen_first():
    """Counts are bounded: past MAX_COUNTED undecided keys the one seen least recently is
    forgotten (counted from one again if it comes back); one seen since is kept."""
    h = Harness()
    for _ in range(REPEATS - 2):
        h.run(1)
        h.run(2)
    h.others(MAX_COUNTED - 2)      # full
    h.run(1)                       # seen again: now the most recent
    h.others(1)                    # one more: 2 is forgotten, not 1
    assert h.run(1) == "O"
    assert [h.run(2) for _ in range(REPEATS)] == ["ops"] * (REPEATS - 1) + ["O"]
    assert len(h.replay._counts) <= MAX_COUNTED


def test_a_key_stops_growing_past_max_stretch_ops():
    key = StretchKey(lambda obj: getattr(obj, "_h", None))
    for hid in range(3 * MAX_STRETCH_OPS):
        key.add_op(m.KIND_FUNCTION, api.ARRAY, hid, "ones", None, (8,), {})
        key.add_free(hid)
    assert len(key) <= MAX_STRETCH_OPS + 1 and key.key() == UNKEYABLE


def test_a_long_stretch_that_went_early_keeps_its_key_bounded():
    h = Harness()
    for n in range(3 * MAX_STRETCH_OPS):
        h.add(n)
        if n == 100:
            h.replay.split()
    assert len(h.replay.current) <= MAX_STRETCH_OPS + 1
    assert h.run(1) == "ops" and not h.replay.holding


def test_a_stretch_that_went_early_counts_so_a_loop_is_held_whole():
    """A loop's body goes early while the worker is idle (its first sightings are split):
    its key is still built, counted, and from the HOLD_AFTER-th sighting on the next is
    held to its sync point, whole, and offered. A held stretch that went early holds the
    next one too."""
    h = Harness()
    carried = [h.run(1, split=True) for _ in range(HOLD_AFTER)]
    assert carried == ["ops"] * HOLD_AFTER and h.replay.holding
    assert h.run(1) == "O" and h.run(1) == "T"
    assert h.run(1, split=True) == "ops" and h.replay.holding


def test_no_key_is_built_once_none_can_be_used():
    """After MAX_REFUSED refusals the session offers nothing: keys are still built while
    it holds a stretch (to know it when it comes), and no more once it holds none."""
    h = Harness()
    assert [h.run(1) for _ in range(REPEATS)][-1] == "O"          # held
    for n in range(MAX_REFUSED):
        assert [h.run(100 + n, keep=False) for _ in range(REPEATS)][-1] == "O"
    assert h.replay.figures()["refused"] == MAX_REFUSED
    h.add(7)
    assert len(h.replay.current) == 2                             # keyed: something is held
    assert h.run(7) == "ops"
    carried = [h.run(1) for _ in range(1 + TIMED_REPLAYS)]        # known, replayed; no faster: let go
    assert carried == ["T"] * (1 + TIMED_REPLAYS) and h.replay.figures()["held"] == 0
    assert h.run(1) == "D"
    for n in range(3 * MAX_STRETCH_OPS):
        h.add(n)
    assert len(h.replay.current) == 0 and h.run(1) == "ops"


def test_past_max_decided_the_session_offers_nothing_and_forgets_nothing():
    """Decisions are never evicted: once MAX_DECIDED stretches are let go (each held,
    timed, no faster), no new stretch is offered, and with nothing held no key is built;
    a stretch let go is still never held again."""
    h = Harness()
    for n in range(MAX_DECIDED):
        carried = [h.run(n) for _ in range(REPEATS + 1 + TIMED_REPLAYS)]
        assert carried[REPEATS - 1] == "O" and carried[-1] == "T"
    assert h.replay.figures()["released"] == MAX_DECIDED
    assert set(h.run(MAX_DECIDED) for _ in range(3 * REPEATS)) <= {"D", "ops"}   # never offered
    h.add(0)
    assert len(h.replay.current) == 0   # nothing held, nothing to offer: no key
    assert set(h.run(0) for _ in range(3 * REPEATS)) == {"ops"}


# ---------------------------------------------------------------- through a session

def _other_stretches(cp, count: int = MAX_COUNTED + 1) -> None:
    """*count* stretches seen once each (another literal shape each)."""
    for n in range(count):
        float(cp.zeros(n + 2, dtype=cp.float32).sum())


def test_a_refused_stretch_is_not_offered_again_past_max_counted_others(monkeypatch):
    monkeypatch.setenv("GPUWB_GRAPHS", "0")   # (the pool's workers inherit it: they refuse every offer)
    with LocalPool(devices=TEST_DEVICES, lease_timeout=20.0, memory_limit=1 << 28) as pool:
        with Session(pool.address, pool.token, settings=SessionSettings(graphs=True)) as s:
            cp = module_for(s)
            x = cp.ones(10)
            with no_collection():   # (the first differs: the next ones begin with its result's free)
                values = [float((x + i).sum()) for i in range(REPEATS + 2)]
                assert s.stretches.figures()["refused"] == 1
                _other_stretches(cp)
                values += [float((x + i).sum()) for i in range(2 * REPEATS)]
            figures = s.stretches.figures()
    assert values == [10.0 + 10 * i for n in (REPEATS + 2, 2 * REPEATS) for i in range(n)]
    assert figures["refused"] == 1 and figures["held"] == 0


def test_a_held_stretch_is_let_go_on_its_times_past_max_counted_others(pool):
    """Timed (a clock of the test's own: its replays take as long as its pipelined runs),
    the held stretch is let go however many other stretches ran between its times."""
    with Session(pool.address, pool.token) as s:   # measured: the default
        replay = s.stretches
        ticks = [0.0]

        def clock():   # (read as each sync point returns)
            ticks[0] += 1.0
            return ticks[0]
        replay._clock = clock
        cp = module_for(s)
        x = cp.arange(50, dtype=cp.float32)
        with no_collection():   # (the first differs: the next ones begin with its result's free)
            for step in range(REPEATS + 2):   # offered, held, replayed once (its capture)
                float((x * 0.5 + step).sum())
            assert replay.figures()["held"] == 1 and replay.figures()["replays"] == 1
            _other_stretches(cp)
            for step in range(TIMED_REPLAYS + 2):
                float((x * 0.5 + step).sum())
        mine, worker = replay.figures(), s.memory_info()["stretches"]
    assert mine["released"] == 1 and mine["held"] == 0 and worker["held"] == 0


def test_a_loop_whose_body_goes_early_is_replayed(pool):
    """A body of more than EAGER_OPS records goes early while the worker is idle (its
    first sightings are split): a fresh session (nothing held yet) still counts it, holds
    it whole and replays it."""
    with Session(pool.address, pool.token, settings=SessionSettings(replay_measured=False)) as s:
        cp = module_for(s)
        x = cp.arange(64, dtype=cp.float32)
        batches = []
        with no_collection():
            for step in range(2 * REPEATS):
                before = s._batch
                y = x
                for _ in range(12):
                    y = y * 0.5 + step
                float(y.sum())
                batches.append(s._batch - before)
        figures = s.stretches.figures()
    assert batches[1] > 1 or not s.eager_flush   # (split: some ops went early)
    assert figures["held"] == 1 and figures["replays"] >= 1


def test_a_long_stretch_between_two_syncs_keeps_its_key_bounded(cp, session):
    x = cp.ones(4)
    for _ in range(3 * MAX_STRETCH_OPS):   # (more than FLUSH_OPS: some go early, a split)
        y = x + 1
    assert len(session.stretches.current) <= MAX_STRETCH_OPS + 1
    assert float(y.sum()) == 8.0
