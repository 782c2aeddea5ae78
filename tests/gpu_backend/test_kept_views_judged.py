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
