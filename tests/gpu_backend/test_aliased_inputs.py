"""A held stretch whose inputs share memory and which writes in place (an array and a view
of it, both named in the loop; pieces of ``split``) is not captured: a capture copies each
input into a buffer of its own, where a write through one would no longer reach the other.
Such a stretch is re-run from its records, as its replays already were (StretchGraphs._fits),
and gives what the ops give. Found by benchmarks/unseen_loops.py: before, the replay that
captured the stretch read stale values, and where both were written a write was lost for
good."""

from __future__ import annotations

import numpy as np
import pytest

from ..differential import assert_bitwise, reference_module
from ..run_ahead_sessions import beside_no_replay, pool_running_ahead

STEPS = 30


@pytest.fixture(scope="module")
def pool():
    with pool_running_ahead("share") as p:
        yield p


def _host(xp, a):
    return a if xp is np else a.get()


def two_writes_one_memory(xp):
    base = xp.zeros(8)
    v = base[:4]
    out = []
    for _ in range(STEPS):
        base += 1
        v *= 0.5
        out.append(float(base.sum()))
    return out, _host(xp, base)


def view_written_base_read(xp):
    base = xp.linspace(0, 1, 60)
    v = base[:20]
    out = []
    for _ in range(STEPS):
        v += 1
        w = base * 0.5
        out.append(float(w.sum()))
    return out, _host(xp, base)


def split_piece_written(xp):
    x = xp.ones(4)
    out = []
    for _ in range(STEPS):
        y = x * 2
        _a, b = xp.split(y, 2)
        b += 1
        out.append(float(y.sum()))
        x = y / 2
    return out, _host(xp, x)


@pytest.mark.parametrize("loop", [two_writes_one_memory, view_written_base_read,
                                  split_piece_written])
def test_inputs_sharing_memory_written_in_place_give_what_the_ops_give(pool, loop):
    got, want, figures = beside_no_replay(pool, loop)
    assert_bitwise(got, want)
    assert_bitwise(got, loop(reference_module()))   # (NumPy's, or local CuPy's on a GPU)
    assert figures["replays"] >= STEPS // 2, figures
