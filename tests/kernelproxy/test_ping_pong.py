"""Ping-pong buffers (worker/graph_replay.py, worker/lent_results.py; docs/stretch-replay.md,
"Ping-pong buffers"): a held stretch's graphs lend the results the client keeps to their
handles instead of copying them out, a second capture reads the first's lent results
where they are, and nothing the client still sees is ever written by a later launch.

Each loop runs on a session of the suite's pool with every repeated stretch held, and on
one with replay off (``GPUWB_GRAPHS=0`` on the client: nothing offered); their results are
compared bitwise (on the NumPy device in CI; on a GPU with ``GPUWB_TEST_DEVICES=auto
GPUWB_REFERENCE=cupy``). The worker's figures (``memory_info()["stretches"]``) say what
was lent and copied.
"""

from __future__ import annotations

import numpy as np
import pytest

from kernelproxy.modules import module_for
from kernelproxy.session import Session
from kernelproxy.settings import SessionSettings

from ..quiet_gc import no_collection

#: iterations of each loop: held after a few, replayed through graphs for the rest
STEPS = 24


@pytest.fixture(scope="module")
def sessions(pool):
    made = [Session(pool.address, pool.token, settings=settings) for settings in (
        SessionSettings(replay_measured=False),
        SessionSettings(graphs=False))]
    yield made
    for s in made:
        s.close()


def _figures(session) -> dict:
    return dict(session.memory_info()["stretches"])


def _run(sessions, loop) -> dict:
    """*loop(cp)* on both sessions, its results compared bitwise; what the replaying
    session's worker did meanwhile (its figures' growth)."""
    on, off = sessions
    before = _figures(on)
    results = []
    for session in sessions:
        with no_collection():
            results.append(loop(module_for(session)))
    _bitwise(results[0], results[1])
    after = _figures(on)
    return {k: after[k] - before.get(k, 0) for k in after}


def _bitwise(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b, strict=True):
        if isinstance(x, BaseException):
            assert type(x) is type(y), (x, y)
            continue
        x, y = np.asarray(x), np.asarray(y)
        assert x.dtype == y.dtype and x.shape == y.shape, (x, y)
        assert np.array_equal(x.reshape(-1).view(np.uint8), y.reshape(-1).view(np.uint8)), (x, y)


def _inputs(cp, n=256):
    rng = np.random.default_rng(11)
    return (cp.asarray(rng.random(n, dtype=np.float32)),
            cp.asarray(rng.random(n, dtype=np.float32)))


def _step(cp, x, y, step):
    return cp.sin(x * 0.9 + y) * (1.0 + step * 1e-3) - 0.125


def test_a_loop_carried_array_is_lent_not_copied(sessions):
    def loop(cp):
        x, y = _inputs(cp)
        values = []
        for step in range(STEPS):
            x = _step(cp, x, y, step)
            values.append(float(x.sum()))
        return values + [x.get()]

    done = _run(sessions, loop)
    assert done["graphed"] >= STEPS - 8
    # every kept x of a replay through graphs is lent (none copied out), and every other
    # replay reads the last one where it is (no copy in)
    assert done["lent"] >= done["graphed"] and done["copied_out"] == 0
    assert done["taken_in"] >= (done["graphed"] - 3) // 2
    assert done["seen"] == 0


def test_a_kept_history_of_every_result_is_never_overwritten(sessions):
    def loop(cp):
        x, y = _inputs(cp)
        history = []
        for step in range(STEPS):
            x = _step(cp, x, y, step)
            history.append(x)
            float(x.sum())
        return [h.get() for h in history]

    done = _run(sessions, loop)
    assert done["graphed"] >= STEPS - 8 and done["seen"] == 0


def test_a_view_made_between_iterations_keeps_its_values(sessions):
    """A view of a lent result made by a batch of its own: the graph that lent it must not
    write it again (its graphs are dropped, the view reads what it read)."""
    def loop(cp):
        x, y = _inputs(cp)
        views, values = [], []
        for step in range(STEPS):
            x = _step(cp, x, y, step)
            values.append(float(x.sum()))
            if step in (10, 11, 17):
                view = x[1:]
                values.append(float(view[0]))   # (its own sync: a batch apart)
                views.append(view)
                flipped = x.reshape(16, 16).T
                values.append(float(flipped[0, 1]))
                views.append(flipped)
        for v in views:
            assert v.base is not None
        return values + [v.get() for v in views] + [x.get()]

    done = _run(sessions, loop)
    assert done["graphed"] > 0


def test_an_alias_under_a_second_handle_keeps_its_values(sessions):
    def loop(cp):
        x, y = _inputs(cp)
        aliases, values = [], []
        for step in range(STEPS):
            x = _step(cp, x, y, step)
            values.append(float(x.sum()))
            if step == 12:
                alias = cp.asarray(x)   # (the same array: a second handle on the worker)
                values.append(float(alias[3]))
                aliases.append(alias)
        return values + [a.get() for a in aliases]

    _run(sessions, loop)


def test_in_place_writes_inside_the_stretch(sessions):
    def loop(cp):
        x, y = _inputs(cp)
        acc = cp.zeros(256, dtype=cp.float32)
        values = []
        for step in range(STEPS):
            x = x * 0.75 + 0.01
            x += y * 0.5            # in place on the stretch's own result
            acc += x                # in place on an input
            acc[::3] -= 0.25        # through a view
            values.append(float(acc.sum()) + float(x.max()))
        return values + [x.get(), acc.get()]

    done = _run(sessions, loop)
    assert done["graphed"] > 0


def test_an_error_inside_a_stretch(sessions):
    """A stretch whose parameter the dtype cannot hold raises (re-run from its records,
    the loop-carried input read where the graphs lent it): the ops before the error ran,
    nothing lent was overwritten, and the loop goes on."""
    def loop(cp):
        x, y = _inputs(cp)
        small = cp.arange(8, dtype=cp.int8)
        out = []
        for step in range(STEPS):
            x = _step(cp, x, y, step)
            t = small + (1000 if step in (12, 13) else step)
            try:
                out.append(float(x.sum()) + float(t.sum()))
            except Exception as exc:   # (the error comes at the sync point)
                out.append(exc)
                out.append(x.get())
        return out + [x.get()]

    done = _run(sessions, loop)
    assert done["graphed"] > 0


def test_two_loop_carried_arrays_swapped_each_iteration(sessions):
    def loop(cp):
        x, y = _inputs(cp)
        history, values = [], []
        for step in range(STEPS):
            x, y = y, x * 0.5 + y * 0.25 + 0.0625
            values.append(float(y.sum()))
            if step % 5 == 0:
                history.append(x)
        return values + [x.get(), y.get()] + [h.get() for h in history]

    done = _run(sessions, loop)
    assert done["graphed"] > 0


def test_an_input_given_twice(sessions):
    def loop(cp):
        x, _y = _inputs(cp)
        w = x
        values = []
        for step in range(STEPS):
            x = x * 0.5 + w * 0.25 + 0.125   # (x and w: the same array, two inputs)
            w = x
            values.append(float(x.sum()))
        return values + [x.get(), w.get()]

    done = _run(sessions, loop)
    assert done["graphed"] >= STEPS - 8


def test_lent_results_outlive_their_graphs(sessions):
    """The client lets a stretch go (its graphs dropped): what they lent is its handles'
    own arrays, values intact."""
    def loop(cp):
        x, y = _inputs(cp)
        kept = []
        for step in range(STEPS):
            x = _step(cp, x, y, step)
            float(x.sum())
            if step % 4 == 0:
                kept.append(x)
        for step in range(6):   # another loop body: the first's graphs stay, unused
            x = x - y
            float(x.max())
        return [k.get() for k in kept] + [x.get()]

    _run(sessions, loop)
