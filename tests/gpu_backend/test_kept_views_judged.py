"""Judging a held stretch's kept views (worker/kept_views.py ``judge``) keeps none of the
arrays it was shown: its two helper closures call each other, and the reference cycle they
made held the handle table's arrays of the offered run (the inputs, the kept results) until
a collection came — which, in an idle worker, never did: a session swapped out left that
device memory used on an H200 (runs 213–215: 4 MiB + 512 B after a loop over a 4 MiB
array). Checked with the collector off: what is freed here is freed by reference counts."""

from __future__ import annotations

import gc
import weakref

import numpy as np

from gpu_backend.protocol import api
from gpu_backend.protocol import messages as m
from gpu_backend.protocol.codec import Handle
from gpu_backend.worker.graph_shape import StretchShape
from gpu_backend.worker.kept_views import judge
from gpu_backend.worker.stretches import HeldStretch

OP, FN, METHOD = m.KIND_OPERATOR, m.KIND_FUNCTION, m.KIND_METHOD
ARRAY, VALUE = api.ARRAY, api.VALUE
A, V = Handle(1), Handle(2)


def _power_step() -> HeldStretch:
    """``w = a @ v; v = w / sqrt((w * w).sum()); e = v[0]; float(e)``: ``e`` a kept view."""
    ops = [(OP, ARRAY, 10, "matmul", None, (A, V), None),
           (OP, ARRAY, 11, "mul", None, (Handle(10), Handle(10)), None),
           (METHOD, ARRAY, 12, "sum", Handle(11), (), None),
           (FN, ARRAY, 13, "sqrt", None, (Handle(12),), None),
           (OP, ARRAY, 14, "truediv", None, (Handle(10), Handle(13)), None),
           (OP, ARRAY, 15, "getitem", None, (Handle(14), 0), None),
           (FN, VALUE, None, "float", None, (Handle(15),), None)]
    return HeldStretch([((seq, kind, want, out, name), (target, list(args), kwargs or {}))
                        for seq, (kind, want, out, name, target, args, kwargs) in enumerate(ops)])


def _offered_run() -> dict:
    """The handle table as the offered run left it."""
    a = np.eye(4, dtype=np.float32)
    v = np.ones(4, dtype=np.float32)
    w = a @ v
    ww = w * w
    s = ww.sum()
    r = np.sqrt(s)
    out = w / r
    return {1: a, 2: v, 10: w, 11: ww, 12: np.asarray(s), 13: np.asarray(r), 14: out, 15: out[0:1].reshape(())}


def test_judging_keeps_none_of_the_arrays_it_was_shown():
    stretch = _power_step()
    shape = StretchShape(stretch)
    arrays = _offered_run()
    watched = [weakref.ref(a) for a in arrays.values()]
    was_on = gc.isenabled()
    gc.disable()
    try:
        remade = judge(stretch, shape.alive, shape.maker, arrays, lambda a: id(a.base if a.base is not None else a))
        assert remade is not None and [op.name for op in remade] == ["getitem"]   # (e made again on v)
        del arrays
        alive = [r() for r in watched if r() is not None]
        assert alive == [], f"{len(alive)} arrays still held after judge returned, without a collection"
    finally:
        if was_on:
            gc.enable()


def _several_step(name: str) -> HeldStretch:
    """``p, q, r = name(a)`` and ``b = p.sum() + a``, the three pieces kept past the step."""
    ops = [(FN, api.ARRAYS, [10, 11, 12], name, None, (A,), None),
           (METHOD, ARRAY, 13, "sum", Handle(10), (), None),
           (OP, ARRAY, 14, "add", None, (Handle(13), A), None)]
    return HeldStretch([((seq, kind, want, out, name_), (target, list(args), kwargs or {}))
                        for seq, (kind, want, out, name_, target, args, kwargs) in enumerate(ops)])


def _allocation(a):
    while a.base is not None:
        a = a.base
    return id(a)


def test_a_fresh_calls_kept_pieces_that_view_its_own_buffers_are_handed_out_as_copies():
    """CuPy's ``linalg.svd`` copies its matrix and hands out transposes (and slices) of
    buffers it made: kept pieces that are views, but of memory no input lies in
    (kept_views.FRESH_PIECES). They are copies nobody can tell, and graphs serve the
    stretch; judged by the call's name before, they were taken for views of its input and
    the stretch was never graphed (``svd_each_step``, H200 run 315)."""
    a = np.arange(48.0).reshape(8, 6)
    u, s, vt = np.empty((6, 8)).T, np.empty(6), np.empty((6, 6)).T   # (CuPy's layout)
    arrays = {1: a, 10: u, 11: s, 12: vt, 13: np.asarray(u.sum()), 14: u.sum() + a}
    stretch = _several_step("linalg.svd")
    shape = StretchShape(stretch)
    assert set(shape.alive) >= {0, 1, 2}
    assert judge(stretch, shape.alive, shape.maker, arrays, _allocation) == []
    # a call whose pieces may view what it is given, its pieces views of its input: no
    # remake makes them again, and graphs never serve the stretch
    views = {1: a, 10: a.T, 11: a[0], 12: a[:, 0], 13: np.asarray(a.sum()), 14: a.sum() + a}
    stretch = _several_step("broadcast_arrays")
    shape = StretchShape(stretch)
    assert judge(stretch, shape.alive, shape.maker, views, _allocation) is None
    stretch = _several_step("linalg.svd")   # (named fresh, yet views of the input: refused,
    shape = StretchShape(stretch)           # for the input's memory is not the call's own)
    assert judge(stretch, shape.alive, shape.maker, views, _allocation) is None
