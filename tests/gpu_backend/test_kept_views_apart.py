"""Kept views that lie apart (worker/kept_views.py ``_apart``): several views kept past a
held stretch's sync point, of memory only they lie in (a temporary's, or an input the
stretch dropped: ``a, b = split(x, 2)`` then ``x = ...``), none reaching another's bytes,
are handed out as copies, as one such view always was: nobody can see a copy is one. Before,
two of them made graphs never serve the stretch ("a kept view no remake serves"). Views
that overlap, or interleave, still keep graphs away, so that a write through one is seen
through the other. Each loop runs through graphs, with replay off, and on the reference
module (NumPy, or local CuPy on a GPU), bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

from kernelproxy.modules import module_for
from kernelproxy.session import Session
from kernelproxy.settings import SessionSettings

from ..differential import reference_module

STEPS = 36


def _host(xp, a):
    return np.asarray(a) if xp is np else a.get()


def pieces_of_a_dropped_input(xp, n):
    """Two halves of the state kept past the read, the state replaced."""
    x = xp.linspace(0, 1, 64)
    out = []
    for _ in range(n):
        a, b = x[:32], x[32:]
        x = x * 0.99 + a.sum() * 1e-3 - b.max() * 1e-4
        out.append(float(x.sum()))
    return out, _host(xp, x), _host(xp, a), _host(xp, b)


def pieces_written_then_read(xp, n):
    """A piece written in place (the state sees it), the other piece read; both kept."""
    x = xp.linspace(0, 1, 64)
    out = []
    for _ in range(n):
        a, b = xp.split(x, 2)
        a *= 1.01
        x = x * 0.99 + b.sum() * 1e-4
        out.append(float(x.sum()))
    a[:] = 7.0   # (after the loop: a copy nobody else sees, as CuPy's view of a dropped x)
    return out, _host(xp, x), _host(xp, a), _host(xp, b)


def four_pieces_of_a_temporary(xp, n):
    x = xp.linspace(0, 1, 80).reshape(8, 10)
    out = []
    for _ in range(n):
        y = x * 1.5 - 0.25
        p, q, r, s = xp.split(y, 4)
        out.append(float((p - s).sum() + q.max() - r.min()))
        x = xp.tanh(x + 0.01)
    return out, _host(xp, p), _host(xp, s)


def overlapping_views(xp, n):
    """Views that overlap, kept: a write through one is seen through the other."""
    x = xp.linspace(0, 1, 32)
    out = []
    for i in range(n):
        a, b = x[0:20], x[10:30]
        x = x * 0.98 + 0.01
        out.append(float(a.sum() + b.sum()))
    a[15] = 100.0
    return out, _host(xp, b)


def interleaved_views(xp, n):
    """Every other element, and the ones between: their extents interleave."""
    x = xp.linspace(0, 1, 32)
    out = []
    for _ in range(n):
        even, odd = x[::2], x[1::2]
        x = x * 0.97 + 0.02
        out.append(float(even.sum() - odd.sum()))
    return out, _host(xp, even), _host(xp, odd)


def views_kept_in_a_list(xp, n):
    """A view of each state kept in a list beside the two halves: it overlaps one."""
    x = xp.linspace(0, 1, 64)
    out, heads = [], []
    for _ in range(n):
        heads.append(x[0:4])
        a, b = x[:32], x[32:]
        x = x * 0.99 + a.sum() * 1e-3 - b.max() * 1e-4
        out.append(float(x.sum()))
    heads[-1][0] = -1.0   # (seen through the last ``a``, a view of the same state)
    return out, _host(xp, a), [_host(xp, h) for h in heads[-3:]]


#: (loop, whether graphs serve its replays now)
LOOPS = [(pieces_of_a_dropped_input, True), (pieces_written_then_read, True),
         (four_pieces_of_a_temporary, True), (overlapping_views, False), (interleaved_views, False),
         (views_kept_in_a_list, False)]


def _bits(value):
    if isinstance(value, (list, tuple)):
        return [_bits(v) for v in value]
    if isinstance(value, float):
        return np.float64(value).tobytes()
    a = np.ascontiguousarray(value)
    return (a.dtype.str, a.shape, a.tobytes())


@pytest.mark.parametrize("loop, graphed", LOOPS, ids=[f.__name__ for f, _ in LOOPS])
def test_kept_views_apart_are_graphed_and_the_rest_are_not_bit_for_bit(pool, loop, graphed):
    ref = reference_module()
    got, stretches = {}, None
    for label, settings in (("on", SessionSettings(replay_measured=False)),
                            ("off", SessionSettings(graphs=False))):
        with Session(pool.address, pool.token, settings=settings) as s:
            got[label] = _bits(loop(module_for(s), STEPS))
            if label == "on":
                stretches = s.memory_info()["stretches"]
    want = _bits(loop(ref, STEPS))
    assert got["on"] == want and got["off"] == want
    if graphed:
        assert stretches["graphed"] >= STEPS // 2, stretches
        assert "a kept view no remake serves" not in stretches["never_graphed"]
    else:
        assert stretches["never_graphed"].get("a kept view no remake serves"), stretches
