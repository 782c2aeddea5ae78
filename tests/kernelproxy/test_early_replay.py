"""Early replay (kernelproxy/early_replay.py, docs/stretch-replay.md "Early replay"): a run
answered from its template sends its replay as soon as it has met every input and parameter
that changes between runs, and the worker runs it while the client checks the rest. Whatever
then differs from what was sent — a parameter, an input, an op, a sync point before the
end, a result kept — undoes it and loses nothing: the results are those of the same loop
with early replay off and with replay off, bitwise, with the same warnings and errors at
the same lines, and no array is left behind on the worker.

Each loop runs on three sessions of the suite's pool (the NumPy device in CI): early replay
on, off (``GPUWB_EARLY_REPLAY=0``, the fast path on) and stretch replay off.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from gpu_backend.protocol.errors import InvalidHandleError
from gpu_backend.protocol.stretches import REPEATS
from kernelproxy.early_replay import same_param
from kernelproxy.modules import active_session, module_for
from kernelproxy.session import Session
from kernelproxy.settings import SessionSettings

from ..quiet_gc import no_collection
from ..session_threads import FACTORS, values_of_two_threads

STEPS = 16
#: the iteration at which a loop's run differs
DIFFER = STEPS - 3


@pytest.fixture
def sessions(pool):
    """Sessions of their own for each test: what one test's runs teach a template (what
    changes between runs, its misses) must not decide another's. The first keeps sending
    early where the worker's lane would push its replies were its runs sent whole
    (``lane_over_early=False``: the early path itself is tested here; that rule in
    tests/gpu_backend/test_pushed_replies.py)."""
    made = [Session(pool.address, pool.token, settings=settings) for settings in (
        SessionSettings(replay_measured=False, lane_over_early=False),
        SessionSettings(replay_measured=False, early_replay=False),
        SessionSettings(graphs=False))]
    yield made
    for s in made:
        s.close()


def _early(session) -> tuple[int, int]:
    figures = session.stretches.figures() if session.stretches is not None else {}
    return figures.get("early", 0), figures.get("early_undone", 0)


def _bitwise(a, b):
    for x, y in zip(a, b, strict=True):
        x, y = np.asarray(x), np.asarray(y)
        assert x.dtype == y.dtype and x.shape == y.shape, (x, y)
        assert np.array_equal(x.reshape(-1).view(np.uint8), y.reshape(-1).view(np.uint8)), (x, y)


def _run(sessions, loop):
    """*loop(cp)* on the three sessions, compared bitwise; the early replays the first sent
    and undone meanwhile. The second never sends one."""
    early, late, _off = sessions
    sent, undone = _early(early)
    results = []
    for session in sessions:
        with no_collection():
            results.append(loop(module_for(session)))
    for other in results[1:]:
        _bitwise(results[0], other)
    assert _early(late) == (0, 0)
    now = _early(early)
    return results[0], now[0] - sent, now[1] - undone


def _inputs(cp, n=256):
    rng = np.random.default_rng(11)
    return (cp.asarray(rng.random(n, dtype=np.float32)),
            cp.asarray(rng.random(n, dtype=np.float32)))


def _chain(cp, x, y, scale=0.75, last=None):
    """A loop body as issue 50's chain20: each op feeding the next, x carried."""
    a = x * 1.01
    a = a + y
    b = a - 0.5
    c = b * (last if last is not None else y)
    d = c + x
    e = d * scale
    f = e - y
    g = f * f
    h = g + 1.0
    k = x / h
    return k * 0.9 + y * 0.1


def _live_arrays(session) -> int:
    return session.memory_info()["arrays"]


def test_a_carried_loop_goes_early_with_the_same_results_and_leaves_nothing_behind(sessions):
    early = sessions[0]
    cp = module_for(early)
    before = _live_arrays(early)

    def loop(cp):
        x, y = _inputs(cp)
        values = []
        for _ in range(STEPS):
            x = _chain(cp, x, y)
            values.append(float(x.sum()))
        return values + [x.get()]

    _results, sent, undone = _run(sessions, loop)
    assert sent >= STEPS - REPEATS - 4 and undone == 0
    early.sync()
    # every array of the loop is gone again: the inputs the early replays kept were freed
    # once their runs matched, and no result of them was left on the worker
    assert _live_arrays(early) == before
    del cp


def test_a_scalar_that_changes_is_never_guessed(sessions):
    """A step size that changes every iteration: the replay goes once it is known."""
    def loop(cp):
        x, y = _inputs(cp)
        values = []
        for step in range(STEPS):
            x = _chain(cp, x, y, scale=0.5 + step * 0.01)
            values.append(float(x.sum()))
        return values

    _results, sent, undone = _run(sessions, loop)
    assert sent >= STEPS - REPEATS - 5 and undone <= 1


#: how iteration DIFFER differs from what was sent early: a parameter guessed from the last
#: run, an input guessed so, another op after the early send, a sync point before the end,
#: a temporary kept
DIFFERENCES = ["scalar", "input", "op", "early sync", "kept"]


@pytest.mark.parametrize("kind", DIFFERENCES)
def test_a_run_that_differs_from_its_early_replay_undoes_it_and_loses_nothing(sessions, kind):
    def loop(cp):
        x, y = _inputs(cp)
        other = cp.asarray(np.linspace(0, 1, 256, dtype=np.float32))
        values, kept = [], []
        for step in range(STEPS):
            odd = step == DIFFER
            scale = 0.25 if odd and kind == "scalar" else 0.75
            last = other if odd and kind == "input" else None
            if odd and kind == "op":
                a = x * 1.01
                a = a + y
                b = a - 0.5
                c = cp.sin(b)   # (the template has an operator here)
                x = c * 0.5 + y * 0.1
            elif odd and kind == "early sync":
                a = x * 1.01
                values.append(float(a.sum()))   # (a sync point before the template's end)
                x = _chain(cp, x, y)
            elif odd and kind == "kept":
                a = x * 1.01
                t = a + y
                kept.append(t)   # (a temporary of the stretch, kept past it)
                b = t - 0.5
                c = b * y
                d = c + x
                e = d * 0.75
                f = e - y
                g = f * f
                h = g + 1.0
                k = x / h
                x = k * 0.9 + y * 0.1
            else:
                x = _chain(cp, x, y, scale=scale, last=last)
            values.append(float(x.sum()))
        return values + [x.get()] + [k.get() for k in kept]

    _results, sent, undone = _run(sessions, loop)
    assert sent >= STEPS - REPEATS - 5
    assert undone >= 1


def test_warnings_of_an_early_replay_come_once_at_their_line(sessions):
    """A body that warns (log of zero): each run's warning once, whether its early replay
    answered it or was undone (an undone one's warnings are dropped; the run's own ops
    warn again)."""
    if sessions[0].device.get("kind") != "numpy":
        pytest.skip("CuPy's log of zero does not warn")
    counts = []

    def loop(cp):
        x = cp.asarray(np.linspace(0, 1, 64, dtype=np.float32))
        values = []
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            for step in range(STEPS):
                scale = 2.0 if step == DIFFER else 1.0   # (a guess that misses once)
                a = x + 0.0
                b = cp.log(a)   # x[0] == 0: divide by zero
                c = b * scale
                values.append(float(cp.nan_to_num(c, neginf=0.0).sum()))
        counts.append(sum(1 for w in seen if issubclass(w.category, RuntimeWarning)))
        return values

    _results, sent, undone = _run(sessions, loop)
    assert counts[0] == counts[1] == counts[2] == STEPS, counts
    assert sent >= 1 and undone >= 1


def test_an_error_inside_an_early_replay_names_its_op_and_the_session_goes_on(sessions):
    """An integer power by a negative integer raises in NumPy (and CuPy gives no error but
    the loop below never reaches it there): the early replay that matched its run carries
    the error, raised at the sync point as without early replay."""
    early = sessions[0]
    cp = module_for(early)
    x = cp.arange(1, 9, dtype=cp.int64)
    y = cp.full(8, 2, dtype=cp.int64)
    for _ in range(STEPS):
        a = x + 1
        b = a ** y
        float(b.sum())
    sent, _undone = _early(early)
    assert sent >= 1
    if early.device.get("kind") != "numpy":
        return
    y[0] = -1
    float(y.sum())
    with pytest.raises(ValueError, match="negative integer powers"):
        a = x + 1
        b = a ** y
        float(b.sum())
    y[0] = 2
    float(y.sum())
    a = x + 1
    b = a ** y
    assert float(b.sum()) == float(((np.arange(1, 9) + 1) ** 2).sum())


def test_an_early_replay_that_failed_but_did_not_match_is_forgotten(sessions):
    """The early replay guessed an input from the last run (one that would make it fail);
    the run used another: the failure is forgotten with it, and the run's own replay
    answers (NumPy device: an integer power by a negative integer raises)."""
    early = sessions[0]
    if early.device.get("kind") != "numpy":
        pytest.skip("CuPy gives no error for an integer power by a negative integer")
    cp = module_for(early)
    x = cp.arange(1, 9, dtype=cp.int64)
    y1 = cp.full(8, 2, dtype=cp.int64)
    y2 = cp.full(8, 3, dtype=cp.int64)
    for _ in range(STEPS):   # (y is named after the op the replay goes early at)
        a = x + 1
        b = a ** y1
        float(b.sum())
    sent, undone = _early(early)
    y1[0] = -1               # the guess would fail now
    float(y1.sum())
    a = x + 1
    b = a ** y2
    assert float(b.sum()) == float(((np.arange(1, 9) + 1) ** 3).sum())
    after = _early(early)
    assert after[0] == sent + 1 and after[1] == undone + 1
    a = x + 1                # and the session goes on
    b = a ** y2
    assert float(b.sum()) == float(((np.arange(1, 9) + 1) ** 3).sum())


def test_an_interrupt_inside_a_run_with_its_replay_sent_early_loses_nothing(sessions):
    def loop(cp):
        x, y = _inputs(cp)
        values, kept = [], []
        for step in range(STEPS):
            try:
                a = x * 1.01
                b = a + y
                kept.append(b)
                if step == DIFFER:
                    raise KeyboardInterrupt
                c = b - 0.5
                values.append(float((c * y).sum()))
            except KeyboardInterrupt:
                values.append(-1.0)
        return values + [k.get() for k in kept]

    _results, sent, undone = _run(sessions, loop)
    assert sent >= STEPS - REPEATS - 5 and undone >= 1


def test_cancel_with_an_early_replay_in_flight_marks_the_runs_arrays_never_computed(sessions):
    early = sessions[0]
    cp = module_for(early)
    x, y = _inputs(cp)
    for _ in range(STEPS):
        a = x * 3.0
        b = a + y
        float((b * 2.0).sum())
    sent, undone = _early(early)
    a = x * 3.0
    b = a + y
    assert early._run is not None and early._run.early is not None   # sent early, undecided
    early.cancel()
    assert _early(early) == (sent + 1, undone + 1)
    with pytest.raises(InvalidHandleError, match="never computed"):
        b.get()
    c = (x * 3.0 + y) * 2.0   # the session goes on
    expected = (x.get() * np.float32(3.0) + y.get()) * np.float32(2.0)
    assert float(c.sum()) == pytest.approx(float(expected.sum()), rel=1e-6)


def test_a_second_thread_during_an_early_replay_takes_turns(sessions):
    early = sessions[0]
    cp = module_for(early)
    x, y = _inputs(cp)
    host_x, host_y = x.get(), y.get()

    def step(factor: float) -> float:
        a = x * factor
        b = a + y
        return float((b * 0.5).sum())

    results = values_of_two_threads(step, STEPS)
    for factor in FACTORS:
        expected = float(((host_x * np.float32(factor) + host_y) * np.float32(0.5)).sum(
            dtype=np.float32))
        assert results[factor] == [pytest.approx(expected, rel=1e-6)] * STEPS


def test_stretches_that_write_an_input_or_draw_never_go_early(sessions):
    """An in-place write into an array the client holds, or a random draw, cannot be undone
    by freeing results: the worker does not let such a stretch go early (reply ``hs``)."""
    def loop(cp):
        x, y = _inputs(cp)
        rs = cp.random.RandomState(3)
        acc = x.copy()
        values = []
        for _ in range(STEPS):
            acc += y * 0.5  # in place, into the stretch's input
            values.append(float(acc.sum()))
        for _ in range(STEPS):
            r = rs.rand(256).astype(cp.float32)
            values.append(float((r * x).sum()))
        return values

    _results, sent, _undone = _run(sessions, loop)
    assert sent == 0


def test_a_stretch_that_writes_only_arrays_it_made_goes_early(sessions):
    """``a = x * 1.5; a += y``: the write is into an array of the stretch's own making, which
    an undone early replay frees with its results; such a stretch goes early."""
    def loop(cp):
        x, y = _inputs(cp)
        values = []
        for _ in range(STEPS):
            a = x * 1.5
            a += y          # in place, into a
            values.append(float(a.sum()))
        return values

    _results, sent, _undone = _run(sessions, loop)
    assert sent > 0


def test_same_param_tells_apart_what_a_replay_would():
    assert same_param(1.5, 1.5) and same_param(3, 3) and same_param(True, True)
    assert not same_param(0.0, -0.0) and not same_param(1, 1.0) and not same_param(True, 1)
    assert not same_param(float("nan"), float("nan"))
    assert not same_param(complex(0.0, 0.0), complex(0.0, -0.0))
    assert same_param(np.float32(2.0), np.float32(2.0))


def test_a_value_asked_for_later_is_answered_by_the_early_replay(sessions):
    """``value_later`` inside the run and ``result`` at its end (the sync point): the result
    waits for the run to be settled, never for an early reply that may yet be undone."""
    def loop(cp):
        session = active_session()   # (module_for made it the active one)
        x, y = _inputs(cp)
        values = []
        for _ in range(STEPS):
            x = _chain(cp, x, y)
            values.append(session.result(session.value_later("float", x.sum())))
        return values

    _results, sent, undone = _run(sessions, loop)
    assert sent >= STEPS - REPEATS - 4 and undone == 0


def test_a_stretch_too_short_to_overlap_never_goes_early(sessions):
    """The hot sync (an add whose scalar changes, a sum, a read): after the op that binds
    the scalar too few ops are left for an early send to save anything."""
    def loop(cp):
        x, _y = _inputs(cp)
        return [float((x + step * 0.5).sum()) for step in range(STEPS)]

    _results, sent, _undone = _run(sessions, loop)
    assert sent == 0
