"""Held stretches with calls of several results (``api.ARRAYS``: ``modf``, ``frexp``,
``meshgrid``, ``nonzero``, ``unravel_index``; docs/stretch-replay.md, "Calls of several
results inside held stretches"): keyed with the call's count, its pieces named by the op
and their place, held, answered from the client's template; on the worker the call runs
eagerly between the stretch's graphs, the ops around it graphed. Their loops give the very results of the same loops without
the fast path, without replay, with the fast path on its Python methods alone, and with
such stretches never held (``GPUWB_SEVERAL_HELD=0``, before), bitwise, and the reference's;
they are replayed where before they were not.

Each loop runs on five sessions of the suite's pool (every repeated stretch held, none
timed and let go).
"""

from __future__ import annotations

import numpy as np
import pytest

from kernelproxy.modules import module_for
from kernelproxy.session import Session
from kernelproxy.settings import SessionSettings

from ..quiet_gc import no_collection

#: iterations of a loop: held after REPEATS sightings, answered fast after
STEPS = 16
#: the iteration a loop that differs differs at
DIFFER = STEPS - 3


@pytest.fixture(scope="module")
def sessions(pool):
    """The fast path (compiled operators where built), no fast path, no replay, the fast
    path on its Python methods alone; and such stretches never held (the switch off)."""
    made = [Session(pool.address, pool.token, settings=settings) for settings in (
        SessionSettings(replay_measured=False),
        SessionSettings(replay_measured=False, fast_path=False),
        SessionSettings(graphs=False),
        SessionSettings(replay_measured=False, compiled=False),
        SessionSettings(replay_measured=False, several_held=False))]
    yield made
    for s in made:
        s.close()


def _fast(session) -> int:
    return session.stretches.figures()["fast"] if session.stretches is not None else 0


def _figures(session) -> dict:
    return session.memory_info()["stretches"]


def _bitwise(a, b):
    for x, y in zip(a, b, strict=True):
        x, y = np.asarray(x), np.asarray(y)
        assert x.dtype == y.dtype and x.shape == y.shape, (x, y)
        assert np.array_equal(x.reshape(-1).view(np.uint8), y.reshape(-1).view(np.uint8)), (x, y)


def _run(sessions, ref, loop) -> dict:
    """*loop(cp)* on every session and on the reference, compared bitwise; what each
    session's replay did over the loop: the worker's replays, those served by graphs, the
    ops run eagerly between graphs, and the runs answered from templates."""
    changes = []
    results = []
    for session in sessions:
        before, fast = _figures(session), _fast(session)
        with no_collection():
            results.append(loop(module_for(session)))
        after = _figures(session)
        changes.append({"replays": after["replays"] - before["replays"],
                        "graphed": after["graphed"] - before["graphed"],
                        "between": after["between_graphs"] - before["between_graphs"],
                        "fast": _fast(session) - fast})
    for other in results[1:]:
        _bitwise(results[0], other)
    want = loop(ref)
    _bitwise(results[0], [ref.asnumpy(w) if hasattr(ref, "asnumpy") and not np.isscalar(w) else w
                          for w in want])
    fast, nofast, off, python, before = changes
    assert nofast["fast"] == 0 and off["replays"] == 0
    assert (fast["fast"] > 0) == (python["fast"] > 0)
    return {"fast": fast, "nofast": nofast, "python": python, "before": before}


def _x(cp):
    return cp.asarray(np.linspace(0.1, 20.0, 64))


def test_a_loop_that_opens_with_modf_and_frexp_is_held_and_replayed(sessions, ref):
    """The body opens with ``modf`` (nothing to cut before it): before, its whole body was
    one stretch no key held, never replayed. Now it is held, ``frexp`` after it joins the
    stretch, and its runs are answered from the template; the worker runs both calls
    eagerly between its graphs."""
    def loop(cp):
        x = _x(cp)
        values = []
        for _ in range(STEPS):
            f, i = cp.modf(x)
            m, e = cp.frexp(f + i * 0.5)
            x = m * 4.0 + e * 0.01 + x * 0.5
            values.append(float(x.sum()))
        return values + [x.get() if hasattr(x, "get") else x]

    changes = _run(sessions, ref, loop)
    assert changes["fast"]["replays"] >= STEPS - 8, changes
    assert changes["fast"]["fast"] >= STEPS - 8, changes
    assert changes["nofast"]["replays"] >= STEPS - 8, changes
    assert changes["fast"]["graphed"] >= STEPS - 8, changes
    assert changes["fast"]["between"] >= 2 * (STEPS - 8), changes
    assert changes["before"]["replays"] == 0, changes   # (before: never held)


def test_meshgrid_in_the_middle_of_a_held_stretch_with_a_shape_read(sessions, ref):
    """A second call of several results in a stretch that holds one joins it; the pieces'
    metadata follow from their inputs' (predicted): ``X.shape`` read in the run is no
    sync point, and the run is answered from its template."""
    def loop(cp):
        x = _x(cp)
        values = []
        for _ in range(STEPS):
            f, i = cp.modf(x)
            a = f * 2.0
            gx, gy = cp.meshgrid(a[:8], i[:4])
            z = (gx * gy + gx.shape[0] * 0.5).sum(axis=0)
            x = x * 0.75 + z.sum() * 1e-3
            values.append(float(z.max()))
        return values + [x.get() if hasattr(x, "get") else x]

    changes = _run(sessions, ref, loop)
    # (until the body is held whole, ``gx.shape`` is a sync point that ends a stretch there:
    # the first one held ends at it, and its runs, where the shape is known, go past its
    # end and fall back until the whole body is held; then each run is answered)
    assert changes["fast"]["fast"] >= 3, changes
    assert changes["fast"]["replays"] >= 3, changes


def test_a_piece_dropped_in_the_stretch_and_a_piece_kept_past_it(sessions, ref):
    """The fractional piece is dropped inside the stretch (the worker frees it), the
    integral one kept by the caller after each step: each keeps its step's values."""
    def loop(cp):
        x = _x(cp)
        kept, values = [], []
        for _ in range(STEPS):
            f, i = cp.modf(x)
            x = f * 3.0 + 0.1
            del f
            kept.append(i)
            values.append(float(x.sum()))
        return values + [k.get() if hasattr(k, "get") else k for k in kept]

    changes = _run(sessions, ref, loop)
    assert changes["fast"]["fast"] >= STEPS - 8, changes


def test_operators_that_read_pieces_answer_as_the_python_methods(sessions, ref):
    """No operator plan names a piece (the compiled check never meets one): the operators
    reading ``frexp``'s pieces are taken by the Python path, with the same runs answered
    and the same results."""
    def loop(cp):
        x = _x(cp)
        values = []
        for step in range(STEPS):
            m, e = cp.frexp(x)
            y = m * e
            z = y - m + (e > 2) * 0.5
            x = x * 0.5 + z * (1.0 + step * 1e-3)
            values.append(float(z.sum()))
        return values + [x.get() if hasattr(x, "get") else x]

    changes = _run(sessions, ref, loop)
    assert changes["fast"]["fast"] >= STEPS - 8, changes
    assert changes["python"]["fast"] >= STEPS - 8, changes


def test_a_count_that_changes_between_iterations_falls_back_with_the_same_results(sessions, ref):
    """``nonzero`` of a 1-d input gives one array, of a 2-d one two: another stretch (the
    count is in the key); a run of the 1-d one's template that meets the 2-d input falls
    back, and the results are those without replay."""
    def loop(cp):
        flat = cp.asarray(np.where(np.arange(64) % 3 == 0, 0.0, np.linspace(1, 2, 64)))
        grid = flat.reshape(8, 8).copy()
        float(flat.sum()), float(grid.sum())   # (their ndim known here: the count told)
        values = []
        for step in range(STEPS):
            src = grid if step in (DIFFER, DIFFER + 1) or step % 5 == 4 else flat
            pieces = cp.nonzero(src)
            total = pieces[0].sum()
            for p in pieces[1:]:
                total = total + p.sum() * 2
            values.append(int(total) + len(pieces))
        return values

    changes = _run(sessions, ref, loop)
    assert changes["fast"]["replays"] >= 1, changes


def test_an_error_in_a_call_of_several_results_of_a_held_stretch_names_its_line(pool):
    """``unravel_index`` of an index out of bounds, in a stretch held and replayed: the
    call's own error, its class and its line, as without replay; the session goes on."""
    with Session(pool.address, pool.token, settings=SessionSettings(replay_measured=False)) as s:
        cp = module_for(s)
        good, bad = cp.arange(20), cp.arange(20) + 100
        float(good.sum()), float(bad.sum())

        def step(index):
            rows, cols = cp.unravel_index(index, (4, 5))   # the line the error names
            return float((rows * 5 + cols).sum())

        for _ in range(STEPS):
            assert step(good) == 190.0
        assert _figures(s)["replays"] >= STEPS - 8
        # (NumPy's pieces are views of one array: kept past the stretch, no remake serves
        # them, so graphs do not; its replays re-run the records)
        with pytest.raises(ValueError) as caught:
            step(bad)
        notes = "".join(getattr(caught.value, "__notes__", []))
        assert "unravel_index" in notes and "test_several_held.py" in notes, notes
        assert step(good) == 190.0   # and the session goes on


def test_the_switches_are_read_from_the_environment():
    assert SessionSettings.from_environ({}).several_held is True
    assert SessionSettings.from_environ({"GPUWB_SEVERAL_HELD": "0"}).several_held is False
    assert SessionSettings.from_environ({}).several_join is True
    assert SessionSettings.from_environ({"GPUWB_SEVERAL_JOIN": "0"}).several_join is False


def test_a_call_in_the_middle_joins_the_stretch_with_several_join(pool, ref):
    """``several_join`` (the default): a call of several results in the middle of a held body
    joins its stretch instead of cutting it, so a step is one replay (one message) where
    the cut made it two, with the call run between the stretch's graphs; the results are
    the cut's and the reference's, bit for bit."""
    def loop(cp):
        x = _x(cp)
        values = []
        for _ in range(STEPS):
            y = x * 1.25 + 0.5
            m, e = cp.frexp(y)
            x = cp.ldexp(m, e - 1) + y * 0.125
            values.append(float(x.max()))
        return values + [x.get() if hasattr(x, "get") else x]

    replays = {}
    results = {}
    for join in (False, True):
        with Session(pool.address, pool.token, settings=SessionSettings(
                replay_measured=False, several_join=join)) as s:
            with no_collection():
                results[join] = loop(module_for(s))
            replays[join] = _figures(s)["replays"]
    _bitwise(results[False], results[True])
    want = loop(ref)
    _bitwise(results[True], [ref.asnumpy(w) if hasattr(ref, "asnumpy") and not np.isscalar(w)
                             else w for w in want])
    # (cut: two stretches a step, each replayed; joined: one)
    assert replays[True] >= STEPS - 8, replays
    assert replays[False] > replays[True] + (STEPS - 8) // 2, replays
