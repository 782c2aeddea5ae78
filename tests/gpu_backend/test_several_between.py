"""A call of several results (``api.ARRAYS``: ``modf``, ``atleast_2d(x, y)``,
``broadcast_arrays``) inside a held stretch runs eagerly between the stretch's graphs, as a
solver's call does, its pieces a result slot each: the ops before and after it are
captured and launched as graphs (docs/stretch-replay.md, "Calls of several results inside
held stretches"). On the NumPy device the graphs are recorded calls, the same code paths.

Each loop runs on a session replaying through graphs and on one without graphs, and is
compared bitwise with both and with the reference.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from gpu_backend.protocol import api
from gpu_backend.protocol.stretch_records import Op, Slot
from gpu_backend.worker.graph_replay import StretchGraphs
from gpu_backend.worker.graph_shape import SEVERAL_ALONE
from kernelproxy.modules import module_for
from kernelproxy.session import Session
from kernelproxy.settings import SessionSettings

from ..quiet_gc import no_collection
from ..differential import reference_module

STEPS = 16


def _bits(values) -> list:
    out = []
    for v in values:
        a = np.ascontiguousarray(v.get() if hasattr(v, "get") else np.asarray(v))
        out.append((a.dtype.str, a.shape, a.tobytes()))
    return out


def _run(pool, loop) -> dict:
    """*loop(cp)* with graphs and without, and on the reference: bitwise the same; the
    figures of the session with graphs over the loop."""
    got, figures = {}, None
    for label, settings in (("on", SessionSettings(replay_measured=False)),
                            ("off", SessionSettings(graphs=False))):
        with Session(pool.address, pool.token, settings=settings) as s:
            with no_collection():
                got[label] = _bits(loop(module_for(s)))
            if label == "on":
                figures = s.memory_info()["stretches"]
    want = _bits(loop(reference_module()))
    assert got["on"] == got["off"] == want
    return figures


def test_a_call_in_the_middle_of_a_stretch_is_run_between_its_graphs(pool):
    """``modf`` opening the stretch (the client cuts before a body's first call of several
    results: Session.submit_arrays), ops on its pieces, ``frexp`` of their result in the
    middle, ops on its pieces, a read: the ops between and after the calls are graphs, the
    calls run between them at every replay."""
    def loop(cp):
        x = cp.linspace(0.25, 30.0, 96)
        out = []
        for _ in range(STEPS):
            frac, whole = cp.modf(x)
            y = frac * 2.0 + whole * 0.5
            mant, expo = cp.frexp(y)
            x = mant * 3.0 + expo * 0.25 - x * 0.125
            out.append(float(x.sum()))
        return out + [x]

    figures = _run(pool, loop)
    # (before the stretch is held, its first sightings cut before the call: held alone too)
    assert set(figures["never_graphed"]) <= {SEVERAL_ALONE}, figures
    assert figures["graphed"] >= STEPS - 8 and figures["captures"] >= 1, figures
    assert figures["between_graphs"] >= 2 * figures["graphed"], figures


def test_a_piece_that_is_an_input_written_in_place_writes_the_input(pool):
    """``atleast_2d(x, y)`` of a 1-d ``x`` hands back a view of it (and ``y`` itself where
    it is 2-d), ``broadcast_arrays`` of arrays of one shape the arrays themselves: a write
    through such a piece, in a graph after the call, reaches the user's input (the pieces
    are followed to what their call was given: moving_views._makers), as without graphs."""
    def loop(cp):
        x = cp.linspace(0.0, 1.0, 32)
        y = cp.linspace(1.0, 2.0, 64).reshape(2, 32)
        z = cp.linspace(-1.0, 1.0, 32)
        out = []

        def write():   # (the pieces dropped before the read: none kept past the stretch)
            a, b = cp.atleast_2d(x, y)
            a += 0.5
            b *= 0.75
            p, q = cp.broadcast_arrays(z, x)
            p += q * 0.25

        for _ in range(STEPS):
            write()
            out.append(float(x.sum() + y.sum() + z.sum()))
        return out + [x, y, z]

    figures = _run(pool, loop)
    assert figures["graphed"] >= STEPS - 8, (figures["never_graphed"], figures)
    assert figures["between_graphs"] >= 2 * figures["graphed"], figures

    def through_a_view(cp):
        # (``w`` a view of ``x`` made before the loop, both the stretch's inputs: a write
        # through ``w``'s piece must be seen by ``x.sum()`` after it. Graphs copy each input
        # into a buffer of its own, so they refuse inputs that share memory where one is
        # written, which only following the piece to ``w`` tells)
        x = cp.linspace(0.0, 1.0, 32)
        w = x[:16]
        y = cp.ones((2, 16))
        out = []

        def write():
            a, b = cp.atleast_2d(w, y)
            a += 0.5
            b *= 0.5

        for _ in range(STEPS):
            write()
            out.append(float(x.sum() + y.sum()))
        return out + [x, y]

    _run(pool, through_a_view)


def test_pieces_kept_past_their_stretch(pool):
    """``modf``'s pieces kept in a list every step (arrays of their own: handed out as the
    graphs' copies), and ``atleast_2d``'s piece of an input kept (a view of the user's array
    no replay can make again: that stretch is refused graphs, its replays re-run its
    records, which hand out the very view), which a write after it shows."""
    def loop(cp):
        x = cp.linspace(0.5, 12.0, 40)
        kept = []
        for _ in range(STEPS):
            frac, whole = cp.modf(x * 1.25)
            kept.append(frac)
            kept.append(whole)
            x = frac + whole * 0.5 + 0.125
            float(x.sum())
        return kept + [x]

    figures = _run(pool, loop)
    assert set(figures["never_graphed"]) <= {SEVERAL_ALONE, "downloads alone"}, figures
    assert figures["graphed"] >= STEPS - 8, figures

    def views(cp):
        x = cp.linspace(0.0, 1.0, 24)
        y = cp.ones((2, 24))
        kept = []
        for _ in range(STEPS):
            a, b = cp.atleast_2d(x, y)
            w = a * 2.0 + b
            kept.append(a)   # (a view of x: sees the writes below)
            x += 0.5
            float(w.sum())
        return kept + [x]

    figures = _run(pool, views)
    assert figures["replays"] >= STEPS - 8, figures
    assert figures["never_graphed"].get("a kept view no remake serves"), figures


def test_an_error_in_a_call_between_graphs_names_its_line(pool):
    """``unravel_index`` of an index out of bounds, run between the graphs of a held
    stretch (its pieces dropped inside it): the call's own error, its class and its line,
    as without replay; the session goes on."""
    with Session(pool.address, pool.token, settings=SessionSettings(replay_measured=False)) as s:
        cp = module_for(s)
        good, bad = cp.arange(20), cp.arange(20) + 100
        float(good.sum()), float(bad.sum())

        def step(index):
            pieces = cp.unravel_index(index, (4, 5))   # the line the error names
            total = pieces[0] * 5 + pieces[1] + index
            del pieces
            return float(total.sum())

        for _ in range(STEPS):
            assert step(good) == 380.0
        figures = s.memory_info()["stretches"]
        assert figures["graphed"] >= STEPS - 8 and figures["between_graphs"] >= 1, figures
        with pytest.raises(ValueError) as caught:
            step(bad)
        notes = "".join(getattr(caught.value, "__notes__", []))
        assert "unravel_index" in notes and "test_several_between.py" in notes, notes
        assert step(good) == 380.0


def test_a_call_that_gives_another_count_of_pieces_is_its_error():
    """Between graphs, a call of several results must give one array a slot: another
    count, or something not an array among them, is the op's error (as
    BatchResults._store_arrays says it), never pieces put in the wrong slots."""
    device = SimpleNamespace(graph_tools=None, array_type=np.ndarray,
                             as_array=lambda a: a, is_array=lambda a: isinstance(a, np.ndarray))
    graphs = StretchGraphs(SimpleNamespace(device=device))
    op = Op(0, "f", api.ARRAYS, None, "modf", None, [Slot("i", 0)], {},
            outs=(Slot("r", 0), Slot("r", 1)))
    finish = graphs._finish_for(op)
    one, two = np.zeros(3), np.ones(3)
    assert [a is b for a, b in zip(finish((one, two)), (one, two))] == [True, True]
    with pytest.raises(TypeError, match="expected 2 arrays, got 3 results"):
        finish((one, two, one))
    with pytest.raises(TypeError, match="expected 2 arrays, got ndarray"):
        finish(one)
    with pytest.raises(TypeError, match="got a"):
        finish((one, "two"))
