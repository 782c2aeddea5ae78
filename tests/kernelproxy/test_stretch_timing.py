"""A held stretch is timed and let go where its replays are not faster than its ops run
pipelined (kernelproxy.stretch_replay, docs/stretch-replay.md "Measured, not assumed").

The decisions, with a clock of the test's own: the client's StretchReplay as the session
drives it (a stretch's ops keyed, its end shaped into a batch header, the worker's answer,
the sync point's return).
"""

from __future__ import annotations

from gpu_backend.protocol import api
from gpu_backend.protocol import messages as m
from gpu_backend.protocol.stretches import REPEATS
from kernelproxy.stretch_replay import (MAX_REOFFERS, RETRY_AFTER, STALE_AFTER, TIMED_REPLAYS,
                                         StretchReplay)


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _loop(replay: StretchReplay, clock: Clock, steps: int, free_s: float, held_s: float,
          graphed: bool = True, start: int = 1, pieces: int = 0,
          flag: int | None = None) -> list[str]:
    """*steps* sightings of one stretch (batches numbered from *start*), each taking
    *held_s* when it travels held (as a replay entry or an offer) and *free_s* when its ops
    travel as they are; the worker runs its replays through graphs (or, *graphed* False,
    from their records); what each batch header carried. *pieces*: the stretch opens with
    a call of several results (``modf``) and the worker's metadata of its offer has an
    entry for so many results (2: each piece's). *flag*: the replies' ``f`` for its replays
    instead (2: re-run paced beside others on purpose)."""
    carried = []
    for batch in range(start, start + steps):
        replay.settle_stale()   # (as the session does between two stretches)
        stretch = replay.current
        if pieces:
            stretch.add_op(m.KIND_FUNCTION, api.ARRAYS, [10 * batch + 1, 10 * batch + 2], "modf",
                           None, (_Remote(7),), {})
        stretch.add_op(m.KIND_FUNCTION, api.ARRAY, 10 * batch, "ones", None, (8,), {})
        stretch.add_op(m.KIND_METHOD, api.VALUE, None, "sum", _Remote(10 * batch), (), {})
        held = replay.holding
        header = {"b": batch}
        if replay.drops:
            header["D"] = replay.take_drops()
        replay.shape(header, replay.swap(), 2 * batch)
        carried.append("T" if "T" in header else "O" if "O" in header else
                       "D" if "D" in header else "ops")
        # (the worker keeps what is offered; f: a replay not run through graphs)
        metas = [[None] * pieces, [None] * pieces] if pieces else None
        f = flag if flag is not None else None if graphed else 1
        replay.answered(batch, header.get("O"), f if "T" in header else None, metas)
        clock.now += held_s if held else free_s
        replay.synced()
    return carried


class _Remote:
    def __init__(self, hid: int) -> None:
        self._h = hid


def _replay(clock: Clock, measured: bool = True) -> StretchReplay:
    return StretchReplay(lambda obj: getattr(obj, "_h", None), measured=measured, clock=clock)


def test_a_stretch_replayed_faster_stays_held():
    clock = Clock()
    replay = _replay(clock)
    carried = _loop(replay, clock, 20, free_s=1.0, held_s=0.5)
    assert carried[:REPEATS - 1] == ["ops"] * (REPEATS - 1)
    assert carried[REPEATS - 1] == "O" and set(carried[REPEATS:]) == {"T"}
    assert replay.figures()["released"] == 0 and replay.figures()["held"] == 1


def test_a_stretch_replayed_no_faster_is_let_go_and_dropped_by_the_worker():
    clock = Clock()
    replay = _replay(clock)
    carried = _loop(replay, clock, 20, free_s=1.0, held_s=1.0)
    # offered, replayed: the first replay (its capture) and TIMED_REPLAYS more, then let go
    decided = REPEATS + 1 + TIMED_REPLAYS
    assert carried[REPEATS:decided] == ["T"] * (1 + TIMED_REPLAYS)
    assert carried[decided] == "D"                # the next batch tells the worker
    assert set(carried[decided + 1:]) == {"ops"}  # never held again
    assert replay.figures()["released"] == 1 and replay.figures()["held"] == 0
    assert not replay.holding


def test_a_stretch_the_worker_never_runs_through_graphs_is_let_go_however_fast():
    """A replay re-run from its records saves the device nothing; holding still costs the
    overlap of issuing with running: let go, even where its replays timed faster."""
    clock = Clock()
    replay = _replay(clock)
    carried = _loop(replay, clock, 20, free_s=1.0, held_s=0.5, graphed=False)
    decided = REPEATS + 1 + TIMED_REPLAYS
    assert carried[decided] == "D" and set(carried[decided + 1:]) == {"ops"}
    assert replay.figures()["released"] == 1
    assert replay.figures()["not_graphed"] == 1 + TIMED_REPLAYS


def test_a_stretch_of_a_call_of_several_results_re_run_faster_stays_held():
    """The worker never runs such a stretch through graphs (each replay a re-run of its
    records); it is judged by its time alone: kept where its replays are faster."""
    clock = Clock()
    replay = _replay(clock)
    carried = _loop(replay, clock, 30, free_s=1.0, held_s=0.5, graphed=False, pieces=3)
    assert carried[REPEATS - 1] == "O" and set(carried[REPEATS:]) == {"T"}
    assert replay.figures()["released"] == 0 and replay.figures()["held"] == 1


def test_a_stretch_of_a_call_of_several_results_not_faster_is_let_go_and_tried_again():
    """Not faster: let go as a timed stretch is, and offered again after RETRY_AFTER more
    sightings (not for good, as a stretch that the worker could graph and never did)."""
    clock = Clock()
    replay = _replay(clock)
    decided = REPEATS + 1 + TIMED_REPLAYS
    steps = decided + 1 + RETRY_AFTER + 2 * REPEATS
    carried = _loop(replay, clock, steps, free_s=1.0, held_s=1.0, graphed=False, pieces=3)
    assert carried[decided] == "D" and carried[decided + 1] == "ops"
    assert "O" in carried[decided + 1:]   # (tried again)


def test_a_held_stretch_whose_worker_gives_one_result_for_the_call_is_let_go():
    """A worker from before such stretches were held gives the call one result slot (its
    metadata one entry short): the client lets the stretch go at once, never replays it."""
    clock = Clock()
    replay = _replay(clock)
    carried = _loop(replay, clock, 12, free_s=1.0, held_s=0.5, graphed=False, pieces=2)
    assert carried[REPEATS - 1] == "O" and carried[REPEATS] == "D"
    assert "T" not in carried and replay.figures()["held"] == 0


def _replays_timed(replay: StretchReplay, clock: Clock, steps: int, first: list[float]) -> list[str]:
    """*steps* sightings of one stretch: pipelined ones take 0.9 s (1.0 while held to its
    sync point), its replays *first* in turn and 0.5 s after them; what each batch carried."""
    times = iter(first + [0.5] * steps)
    carried = []
    for batch in range(1, steps + 1):
        replay.current.add_op(m.KIND_FUNCTION, api.ARRAY, 10 * batch, "ones", None, (8,), {})
        held = replay.holding
        header = {"b": batch}
        replay.shape(header, replay.swap(), batch)
        carried.append("T" if "T" in header else "ops")
        replay.answered(batch, header.get("O"))
        clock.now += next(times) if "T" in header else (0.9 if not held else 1.0)
        replay.synced()
    return carried


def test_one_slow_replay_among_fast_ones_does_not_let_the_stretch_go():
    """The choice takes the replays' median: one slow replay (the host busy for a moment)
    does not outweigh the others."""
    clock = Clock()
    replay = _replay(clock)
    carried = _replays_timed(replay, clock, 20, [0.5, 0.5, 6.0, 0.5, 0.5])   # (the first: the capture)
    assert replay.figures()["released"] == 0 and carried[-1] == "T"


def test_unmeasured_every_repeated_stretch_stays_held():
    clock = Clock()
    replay = _replay(clock, measured=False)
    carried = _loop(replay, clock, 20, free_s=1.0, held_s=3.0)
    assert set(carried[REPEATS:]) == {"T"} and replay.figures()["released"] == 0


def test_the_replays_that_warm_up_do_not_decide():
    """The capture and the next two replays (the first answered from the
    template, the worker's first set up ahead) are slow; those after them are faster than the
    pipelined runs: the stretch stays held."""
    clock = Clock()
    replay = _replay(clock)
    warming = [5.0, 4.0, 3.0]   # (kernelproxy.stretch_replay.WARM_REPLAYS)
    carried = _replays_timed(replay, clock, 30, warming)
    assert carried.count("T") > TIMED_REPLAYS + 1   # (decided, and kept)
    assert replay.figures()["released"] == 0 and carried[-1] == "T"


def _two_stretch_loop(replay: StretchReplay, clock: Clock, steps: int, free_s: float,
                      held_s: float) -> list[tuple[str, str]]:
    """*steps* iterations of a loop cut in two by an upload: stretch A ends at the upload's
    flush (no sync point), stretch B at the read; an iteration takes *held_s* when both
    travel held and *free_s* when both travel as ops. What each pair of headers carried."""
    carried = []
    batch = 0
    for step in range(1, steps + 1):
        held = replay.holding
        kinds = []
        for name in ("ones", "zeros"):   # A, then B (their keys differ by their op)
            batch += 1
            stretch = replay.current
            stretch.add_op(m.KIND_FUNCTION, api.ARRAY, 100 * batch, name, None, (8,), {})
            header = {"b": batch}
            if replay.drops:
                header["D"] = replay.take_drops()
            replay.shape(header, replay.swap(), 2 * batch)
            kinds.append("T" if "T" in header else "O" if "O" in header else "ops")
            replay.answered(batch, header.get("O"))
        clock.now += held_s if held else free_s
        replay.synced()   # (B's read; A ended with no sync point)
        carried.append(tuple(kinds))
    return carried


def test_stretches_an_upload_cuts_a_loop_into_are_timed_together():
    """A stretch that ends with no sync point returned (at a large upload's flush) and the one
    after it are each put down the whole interval between the two sync points: judged as
    the loop's iteration, kept together where it replays faster, let go together where not."""
    clock = Clock()
    faster = _replay(clock)
    carried = _two_stretch_loop(faster, clock, 24, free_s=1.0, held_s=0.5)
    assert carried[-1] == ("T", "T") and faster.figures()["released"] == 0
    assert all(len(t.held) > TIMED_REPLAYS for t in faster._timing.values())
    slower = _replay(clock)
    carried = _two_stretch_loop(slower, clock, 24, free_s=1.0, held_s=3.0)
    assert carried[-1] == ("ops", "ops") and slower.figures()["released"] == 2


def test_a_held_stretch_gone_stale_is_offered_again_then_let_go():
    """Replays through graphs, then STALE_AFTER in a row re-run from their records (its
    inputs changed shape): the stretch is dropped and offered again; after MAX_REOFFERS
    times, let go for good. A stretch never run through graphs is left to its timing."""
    clock = Clock()
    replay = _replay(clock, measured=False)
    start = 1
    offers = 0
    for cycle in range(MAX_REOFFERS + 1):
        carried = _loop(replay, clock, 12, 1.0, 1.0, True, start)
        start += 12
        offers += carried.count("O")
        carried = _loop(replay, clock, STALE_AFTER + 1, 1.0, 1.0, False, start)
        start += STALE_AFTER + 1
        assert carried[:STALE_AFTER] == ["T"] * STALE_AFTER, (cycle, carried)
        assert carried[STALE_AFTER] == "D"   # (dropped: the worker frees its graphs)
    assert offers == MAX_REOFFERS + 1
    assert replay.figures()["released"] == 1 and replay.figures()["held"] == 0
    assert set(_loop(replay, clock, 12, 1.0, 1.0, True, start)) == {"ops"}   # let go for good
    never = _replay(clock, measured=False)
    assert set(_loop(never, clock, 20, 1.0, 1.0, False)[REPEATS:]) == {"T"}


def test_replays_re_run_paced_on_purpose_keep_the_stretch_held_and_are_not_timed():
    """Beside others the worker re-runs a long replay from its records, paced, on purpose
    (the replies' ``f`` 2; worker/stretch_replay.py): its graphs still fit, so however many
    come in a row the stretch is not stale, and, slower than its ops pipelined or not, they
    are not timed (counted as re-runs, a loop of long GEMMs beside other users was dropped
    after three and let go after two re-offers, and ran as ordinary batches from then on,
    H200 runs 321-322). Replies with ``f`` 1 still make it stale."""
    clock = Clock()
    replay = _replay(clock)
    held_from = REPEATS + 1
    carried = _loop(replay, clock, held_from + 2, free_s=1.0, held_s=0.5)
    assert carried[-1] == "T"
    paced = _loop(replay, clock, 10 * STALE_AFTER + TIMED_REPLAYS, free_s=1.0, held_s=3.0,
                  start=held_from + 3, flag=2)
    assert set(paced) == {"T"}, paced
    figures = replay.figures()
    assert figures["paced"] == len(paced) and figures["released"] == 0 and figures["held"] == 1
    assert figures["not_graphed"] == 0
    stale = _loop(replay, clock, STALE_AFTER + 1, free_s=1.0, held_s=1.0,
                  start=held_from + 3 + len(paced), flag=1)
    assert stale[STALE_AFTER] == "D"


def test_a_stretch_let_go_by_its_timing_is_tried_again_later_and_kept_if_faster_then():
    """Judged no faster (a neighbour's work on the device, say), a stretch is let go; after
    RETRY_AFTER more sightings it is counted afresh, its pipelined times too, offered and
    timed again, and kept where its replays are faster now."""
    clock = Clock()
    replay = _replay(clock)
    decided = REPEATS + 1 + TIMED_REPLAYS
    carried = _loop(replay, clock, decided + 1, free_s=1.0, held_s=1.0)
    assert carried[decided] == "D" and replay.figures()["released"] == 1
    more = _loop(replay, clock, RETRY_AFTER + 40, free_s=1.0, held_s=0.5, start=decided + 2)
    # the sightings while it waits to be tried again travel as ops; then offered once more
    assert set(more[:RETRY_AFTER - 1]) == {"ops"}
    assert "O" in more[RETRY_AFTER - 1:] and more[-1] == "T", more[RETRY_AFTER - 2:]
    assert replay.figures()["held"] == 1 and replay.figures()["released"] == 1


def test_a_stretch_no_faster_at_each_trial_is_tried_again_ever_more_rarely_but_never_for_good():
    """Each trial judged no faster doubles the wait before the next (RETRY_AFTER, then twice,
    four times, ...), and none is the last: three unlucky judgements beside a neighbour's
    long kernels left an interactive user answered op by op for the rest of its session
    (H200 run 326). A stretch kept no faster costs a trial's few replays in every doubling."""
    clock = Clock()
    replay = _replay(clock)
    trial = REPEATS + 1 + TIMED_REPLAYS + 1        # sightings from its first to its let-go
    waits = [RETRY_AFTER << n for n in range(4)]   # 100, 200, 400, 800
    steps = trial + sum(wait + trial for wait in waits)
    carried = _loop(replay, clock, steps, free_s=1.0, held_s=1.0)
    offers = [i for i, c in enumerate(carried) if c == "O"]
    assert len(offers) == 1 + len(waits), offers
    gaps = [b - a for a, b in zip(offers, offers[1:])]
    assert all(wait <= gap <= wait + trial for gap, wait in zip(gaps, waits)), (gaps, waits)
    assert replay.figures()["released"] == 1 + len(waits)
    # ... and a trial that finds its replays faster now keeps the stretch held
    later = _loop(replay, clock, (RETRY_AFTER << len(waits)) + trial + 10, free_s=1.0,
                  held_s=0.5, start=steps + 1)
    assert later[-1] == "T" and replay.holding and replay.figures()["held"] == 1
