"""``split`` and its family issued as basic slices (kernelproxy/split_views.py): each piece
is the slice that gives CuPy's own view exactly (its offset into the array's memory, its
shape and strides), so a loop that splits an array each step is held and replayed as one
stretch, where a call of several results kept it from ever being held; the calls whose
pieces a slice does not give exactly go as calls, as before. Real sessions on the pool's
device, against the reference module (NumPy, or local CuPy on a GPU)."""

from __future__ import annotations

import numpy as np
import pytest

from kernelproxy.modules import module_for
from kernelproxy.session import Session
from kernelproxy.settings import SessionSettings
from kernelproxy.split_views import pieces, undecided

from ..differential import reference_module

STEPS = 40


def _base_pointer(a):
    """The address of *a*'s first element (CuPy's ``data.ptr``, NumPy's interface)."""
    return a.data.ptr if hasattr(a.data, "ptr") else a.__array_interface__["data"][0]


def _shape(cp, ref, shape):
    """An array of *shape* on both sides, its metadata known to the client."""
    size = int(np.prod(shape))
    x = cp.arange(size, dtype=cp.float64).reshape(shape)
    float(x.sum())   # (a sync point: its metadata here)
    return x, ref.arange(size, dtype=ref.float64).reshape(shape)


#: (function, the array's shape, the call's further arguments, its keywords)
EXACT = [
    ("split", (12,), (3,), {}),
    ("split", (12,), ([2, 7],), {}),
    ("split", (12,), ([-9, -2],), {}),
    ("split", (4, 6), (2,), {"axis": 1}),
    ("split", (4, 6), (3, -1), {}),
    ("array_split", (10,), (3,), {}),
    ("array_split", (10, 3), (4,), {}),
    ("array_split", (3, 10), (np.int64(4),), {"axis": -1}),
    ("hsplit", (12,), (4,), {}),
    ("hsplit", (3, 8), ([3, 5],), {}),
    ("vsplit", (6, 2), (3,), {}),
    ("dsplit", (2, 3, 6), (2,), {}),
]

#: calls a slice does not give to the bit, or CuPy refuses: left to the call itself
NOT_SLICES = [
    ("split", (12,), (1,), {}),            # one piece: CuPy gives the array itself
    ("split", (12,), (5,), {}),            # does not divide: CuPy's ValueError
    ("split", (12,), ([7, 2],), {}),       # indices that go back: an empty piece's pointer
    ("split", (12,), ([0, 5],), {}),       # an empty first piece
    ("split", (12,), ([5, 12],), {}),      # an empty last piece
    ("split", (12,), ([3, 20],), {}),      # past the axis
    ("array_split", (3,), (5,), {}),       # more pieces than elements: empty ones
    ("split", (0, 4), (2,), {"axis": 1}),  # no element
    ("split", (4,), (2,), {"axis": 1}),    # an axis the array lacks
    ("vsplit", (12,), (2,), {}),           # vsplit of 1-d: CuPy's ValueError
    ("split", (12,), ([1.5],), {}),        # not ints
    ("split", (4, 6), (2,), {"axis": 1, "other": 2}),
]


@pytest.mark.parametrize("name, shape, rest, kwargs", EXACT,
                         ids=[f"{c[0]}{c[1]}{c[2]}{c[3]}" for c in EXACT])
def test_the_slices_give_the_functions_own_views(cp, ref, name, shape, rest, kwargs):
    """Each slice's view has the reference function's piece's offset, shape, strides and
    values; through the proxy the call gives the same pieces."""
    x, rx = _shape(cp, ref, shape)
    cut = pieces(name, (x, *rest), kwargs)
    assert cut is not None
    axis, bounds = cut
    want = getattr(ref, name)(rx, *rest, **kwargs)
    assert len(bounds) == len(want)
    lead = (slice(None),) * axis
    for (lo, hi), piece in zip(bounds, want):
        view = rx[lead + (slice(lo, hi),)]
        assert view.shape == piece.shape and view.strides == piece.strides
        assert _base_pointer(view) == _base_pointer(piece)
    got = getattr(cp, name)(x, *rest, **kwargs)   # (the first call learns the container)
    got = getattr(cp, name)(x, *rest, **kwargs)
    assert type(got) is type(want) and len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.strides == w.strides
        np.testing.assert_array_equal(g.get(), ref.asnumpy(w) if hasattr(ref, "asnumpy") else w)


@pytest.mark.parametrize("name, shape, rest, kwargs", NOT_SLICES,
                         ids=[f"{c[0]}{c[1]}{c[2]}{c[3]}" for c in NOT_SLICES])
def test_calls_a_slice_does_not_give_exactly_are_left_to_the_call(cp, ref, name, shape, rest, kwargs):
    x, _rx = _shape(cp, ref, shape)
    assert pieces(name, (x, *rest), kwargs) is None


def test_an_array_whose_shape_the_client_does_not_know_is_split_by_the_call(cp):
    """An array made by an op whose reply has not come: no shape here, the call goes."""
    x = cp.arange(12.0)
    y = x * 2   # (queued: its metadata not here)
    assert pieces("split", (y, 3), {}) is None
    assert undecided("split", (y, 3)) and undecided("hsplit", (y, 3))   # (kept out of stretches)
    parts = cp.split(y, 3)
    assert [p.get().tolist() for p in parts] == [[0, 2, 4, 6], [8, 10, 12, 14], [16, 18, 20, 22]]
    assert not undecided("split", (y, 3)) and not undecided("take", (y, 3))
    z = x * 3   # (one piece, or no index: CuPy's own array, never slices: decided)
    assert undecided("array_split", (z, [2, 5])) and not undecided("split", (z, 1))
    assert not undecided("array_split", (z, [])) and not undecided("split", (z,))


def _loop(xp, n):
    """A step that splits its state four ways, halves it by columns and cuts it at moving
    indices, writes through one piece and reads from the others."""
    x = xp.linspace(0, 1, 240).reshape(12, 20)
    out = []
    for i in range(n):
        a, b, c, d = xp.split(x, 4)
        left, right = xp.hsplit(x, 2)
        parts = xp.array_split(x, 3, axis=1)
        k = 2 + i % 5
        head, mid, tail = xp.split(x, [k, k + 3])
        a *= 1.01                      # a view: the state sees it
        x = x * 0.99 + left.sum() * 1e-4 + parts[2].mean() * 1e-3 + mid.sum() * 1e-5
        out.append((float(x.sum()), float(right.max()), float(d.min()), tail.shape))
    return out, x


def test_a_loop_that_splits_each_step_is_held_and_replayed_bit_for_bit(pool):
    ref = reference_module()
    results, figures = {}, {}
    for label, settings in (("on", SessionSettings(replay_measured=False)),
                            ("off", SessionSettings(graphs=False))):
        with Session(pool.address, pool.token, settings=settings) as s:
            out, x = _loop(module_for(s), STEPS)
            results[label] = (out, x.get())
            if label == "on":
                figures[label] = (s.memory_info()["stretches"], s.stretches.figures())
    out, x = _loop(ref, STEPS)
    want = (out, ref.asnumpy(x) if hasattr(ref, "asnumpy") else x)
    for label in ("on", "off"):
        got = results[label]
        assert [(np.float64(a).tobytes(), np.float64(b).tobytes(), np.float64(c).tobytes(), t)
                for a, b, c, t in got[0]] == \
               [(np.float64(a).tobytes(), np.float64(b).tobytes(), np.float64(c).tobytes(), t)
                for a, b, c, t in want[0]], label
        assert got[1].tobytes() == np.ascontiguousarray(want[1]).tobytes(), label
    worker, client = figures["on"]
    assert client["held"] >= 1 and client["replays"] >= STEPS // 2
    assert worker["graphed"] >= STEPS // 2   # (the step's graphs: the pieces are ops of one result)


def _split_first(xp, n):
    """A body that opens with ``split``, its halves kept past the one read: before, the
    call of several results made the whole body one stretch no key holds."""
    x = xp.linspace(0, 1, 240)
    out = []
    for _ in range(n):
        a, b = xp.split(x, 2)
        x = x * 0.99 + a.sum() * 1e-3 - b.max() * 1e-4
        out.append(float(x.sum()))
    return out, x


def test_a_body_that_opens_with_split_is_replayed_through_graphs(pool):
    ref = reference_module()
    with Session(pool.address, pool.token, settings=SessionSettings(replay_measured=False)) as s:
        out, x = _split_first(module_for(s), STEPS)
        got = ([np.float64(v).tobytes() for v in out], x.get().tobytes())
        worker, client = s.memory_info()["stretches"], s.stretches.figures()
    out, x = _split_first(ref, STEPS)
    assert got == ([np.float64(v).tobytes() for v in out],
                   (ref.asnumpy(x) if hasattr(ref, "asnumpy") else x).tobytes())
    assert client["replays"] >= STEPS - 8, client   # (one stretch an iteration, held)
    assert worker["graphed"] >= STEPS // 2, worker  # (its kept halves lie apart)
