"""Issuing an op and shaping its result as CuPy returns it: what every proxy calls.

``call`` submits one op to a session and turns the result into what CuPy would return:
a new remote array (``wrap``, its handle named by the client), nothing, a value, or a
structure of them. Python's operators on arrays go through ``operator``. The remote array
class itself is :class:`kernelproxy.ndarray.ndarray`, which registers itself here when it
is defined (:func:`register_array_class`): the modules that ``ndarray`` builds on (its
operators, its ufunc protocol, its subclass rules) issue ops through this module without
importing the class's.
"""

from __future__ import annotations

import threading
import weakref
from typing import Any

import numpy as np

from gpu_backend.protocol import api
from gpu_backend.protocol import messages as m
from gpu_backend.protocol.codec import Handle

from . import fuse_trace
from .out_args import checked_out, given_outs, positional_out
from .result_structures import ONE as _ONE, learn as _learn, predicted as _predicted
from .divmod_pair import pair as _divmod_pair, undecided as _divmod_undecided
from .split_views import pieces as _split_pieces, undecided as _split_undecided

__all__ = ["call", "wrap", "operator", "array_class", "register_array_class", "FUSING",
           "OP_SYMBOLS", "OPERATOR_LABELS", "UFUNC_SCALAR_TYPES"]

_ARRAY, _NONE, _MULTI, _VALUE = api.ARRAY, api.NONE, api.MULTI, api.VALUE
_TRACES_LIVE, _NOT_TRACED, _record_call = fuse_trace.LIVE, fuse_trace.NOT_TRACED, fuse_trace.record_call
_weak = weakref.ref

_classes: list[type] = []


def register_array_class(cls: type) -> None:
    """The remote array class (``kernelproxy.ndarray.ndarray``), once it is defined."""
    _classes[:] = [cls]


def array_class() -> type:
    """The remote array class (``cupy.ndarray``)."""
    return _classes[0]


def wrap(session: Any, hid: int, meta: tuple | None = None) -> Any:
    """A client array for a handle the session already issued or received; its metadata
    at once where a held stretch's template gave it (kernelproxy/stretch_templates.py),
    or as *meta* tells (a call of several results' piece, whose run may have ended since:
    Session.submit_arrays)."""
    arr = object.__new__(_classes[0])
    arr._s = session
    arr._h = hid
    if meta is None:
        run = session._run
        meta = run.predicted.get(hid) if run is not None else None
    arr._m = meta
    session.arrays[hid] = _weak(arr)
    return arr


class _Fusing(threading.local):
    """How deep this thread is in calls of ``cupy.fuse``'d functions (kernelproxy.functional):
    there, as in CuPy, an array has no Python scalar value."""

    depth = 0


FUSING = _Fusing()


def _unwrap(session: Any, value: Any) -> Any:
    if type(value) is Handle:
        return wrap(session, int(value))
    if isinstance(value, list):
        return [_unwrap(session, v) for v in value]
    if isinstance(value, tuple):
        return tuple(_unwrap(session, v) for v in value)
    if isinstance(value, dict):
        return {k: _unwrap(session, v) for k, v in value.items()}
    return value


def call(session: Any, kind: str, name: str, want: str, target: Any, args: tuple,
         kwargs: dict, label: str) -> Any:
    """Issue an op and shape its result the way CuPy returns it."""
    __tracebackhide__ = True  # IPython shows the user's frames, not ours
    if _TRACES_LIVE[0]:   # a cupy.fuse function being traced: its stand-ins' calls recorded
        traced = _record_call(kind, name, want, target, args, kwargs)
        if traced is not _NOT_TRACED:
            return traced
    if want == _ARRAY:
        out = checked_out(kwargs.get("out")) if kwargs else None
        if out is None and args and kind in (m.KIND_FUNCTION, m.KIND_METHOD):
            out = positional_out(kind, name, args)
        if out is not None:
            session.submit(kind, _NONE, None, name, target, args, kwargs, label)
            return out[0] if isinstance(out, tuple) and len(out) == 1 else out
        run = session._run
        if run is not None:   # a held stretch answered from its template (stretch_templates.py)
            result = run.array_op(kind, name, target, args, kwargs, label)
            if result is not None:
                return result
        hid = session.new_id()
        session.submit(kind, _ARRAY, hid, name, target, args, kwargs, label)
        return wrap(session, hid)
    if want == _NONE:
        if kind == m.KIND_FUNCTION and args and isinstance(args[0], np.ndarray):
            # copyto, put, place, shuffle, ...: the pool would change a copy of a host array
            raise TypeError(f"{label} works in place on a cupy.ndarray, not on a NumPy array")
        session.submit(kind, _NONE, None, name, target, args, kwargs, label)
        return None
    if want == _VALUE:
        return session.value(session.submit(kind, _VALUE, None, name, target, args, kwargs, label))
    out = checked_out(kwargs.get("out")) if kwargs else None
    if type(out) is tuple and len(out) > 1 and all(isinstance(o, _classes[0]) for o in out):
        session.submit(kind, _NONE, None, name, target, args, kwargs, label)  # modf(x, out=(a, b))
        return out
    count = _predicted(kind, name, target, args, kwargs)
    if count is _ONE:
        hid = session.new_id()
        session.submit(kind, _ARRAY, hid, name, target, args, kwargs, label)
        return wrap(session, hid)
    if count is not None:   # n arrays, known from the arguments: named here, no wait
        container = session.result_containers.get((kind, name))   # (learnt: _learn)
        if container is not None:
            cut = _split_pieces(name, args, kwargs) if kind == m.KIND_FUNCTION else None
            if cut is not None:   # (split's pieces as basic slices: ops that stretches hold)
                axis, bounds = cut
                x, lead = args[0], (slice(None),) * axis
                return container([x[lead + (slice(lo, hi),)] if axis else x[lo:hi]
                                  for lo, hi in bounds])
            two = _divmod_pair(kind, name, args, kwargs)
            if two is not None:   # (divmod as floor_divide and remainder: ops held stretches keep)
                return container([call(session, kind, op, _ARRAY, None, args, {}, label)
                                  for op in two])
            # (a call that goes as one only for want of metadata here is kept out of a
            # held stretch: a later one of the same code goes as slices or the two ops)
            settled = not (_divmod_undecided(kind, name, args, kwargs) or (
                kind == m.KIND_FUNCTION and _split_undecided(name, args)))
            hids, metas = session.submit_arrays(count, kind, name, target, args, kwargs, label,
                                                settled)
            return container([wrap(session, hid, meta) for hid, meta in zip(hids, metas)])
    hid = session.new_id()
    seq = session.submit(kind, _MULTI, hid, name, target, args, kwargs, label)
    result = _unwrap(session, session.value(seq))
    if count is not None:   # (the pool's container for the name, its count checked)
        _learn(session.result_containers, kind, name, count, result, _classes[0])
    given = given_outs(kind, name, args, out)
    if given is not None and isinstance(result, tuple) and len(result) >= len(given):
        # the outputs given are the results, as in CuPy (divmod(a, b, out0) -> (out0, new))
        given = given + (None,) * (len(result) - len(given))
        result = tuple(r if o is None else o for r, o in zip(result, given))
    return result


OP_SYMBOLS = {
    "add": "+", "sub": "-", "mul": "*", "truediv": "/", "floordiv": "//", "mod": "%", "pow": "**",
    "matmul": "@", "and_": "&", "or_": "|", "xor": "^", "lshift": "<<", "rshift": ">>",
    "lt": "<", "le": "<=", "eq": "==", "ne": "!=", "gt": ">", "ge": ">=",
}


#: Each operator's label, which its errors name (built once, not per op).
OPERATOR_LABELS = {name: f"operator {OP_SYMBOLS.get(name.lstrip('i'), name)}"
                   for name in api.OPERATORS}
#: Each operator's result kind and label.
_OPERATOR_CALLS = {name: (want, OPERATOR_LABELS[name]) for name, want in api.OPERATORS.items()}


def operator(name: str, args: tuple, session: Any) -> Any:
    """Python's operator *name* (``operator.add``'s name, ``"repr"``, ...) on *args*."""
    __tracebackhide__ = True
    want, label = _OPERATOR_CALLS[name]
    return call(session, m.KIND_OPERATOR, name, want, None, args, {}, label)


#: Scalars ``cupy.ndarray.__array_ufunc__`` accepts as operands (CuPy's ``_scalar.scalar_type_set``):
#: Python's numeric types and the NumPy scalar types of the dtypes CuPy has.
UFUNC_SCALAR_TYPES = frozenset([int, float, bool, complex] + [np.dtype(c).type for c in "?bhilqBHILQefdFD"])
