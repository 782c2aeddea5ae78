"""A ``cupy.fuse`` function traced on the client: its calls recorded as a program for the pool.

CuPy fuses a function by running it once per argument signature with stand-ins and
compiling what they saw. :func:`trace` does the same with :class:`Tracer` stand-ins: their
operators and methods, and the proxy ``cupy`` functions given one (``issue.call`` hands
those to :func:`record_call` while a trace is in progress), are recorded as the program of
gpu_backend/protocol/fused_programs.py, which the pool's CuPy fuses into the kernel CuPy
builds locally (kernelproxy/functional.py sends it).

Whatever a program cannot say (a stand-in's shape or Python value, indexing, an array from
outside the function, a call CuPy's fusion does not trace) raises :class:`Untraceable`; the
function then runs unfused, each call an ordinary op, as it always did.
"""

from __future__ import annotations

import itertools
import threading
from typing import Any, NamedTuple

import numpy as np

from gpu_backend.protocol import api
from gpu_backend.protocol import messages as m
from gpu_backend.protocol.fused_programs import (FUSABLE_FUNCTIONS, FUSABLE_METHODS,
                                                 FUSABLE_OPERATORS, LITERAL, MAX_OPS,
                                                 MAX_PARAMS, SLOT, literal_allowed)

from .stretch_key import FixedDefinition

__all__ = ["LIVE", "NOT_TRACED", "Untraceable", "Tracer", "FusedProgram", "signature",
           "fusion_number", "trace", "record_call"]

#: Traces in progress in any thread: ``issue.call`` looks for stand-ins only while nonzero
LIVE = [0]
_LIVE_LOCK = threading.Lock()
#: :func:`record_call`'s answer for a call that is none of the trace's
NOT_TRACED = object()

_OPERATOR, _METHOD, _FUNCTION = m.KIND_OPERATOR, m.KIND_METHOD, m.KIND_FUNCTION


class Untraceable(Exception):
    """What the function did cannot be said as a program of fusable calls."""


class _Current(threading.local):
    trace: Any = None


_CURRENT = _Current()


class _Trace:
    """One function's calls so far (op *i*'s result is slot ``params + i``)."""

    def __init__(self, params: int) -> None:
        self.ops: list = []
        self.params = params

    def operand(self, value: Any) -> list:
        if type(value) is Tracer:
            if value._trace is not self:
                raise Untraceable("a stand-in of another fused call")
            return [SLOT, value._slot]
        if not literal_allowed(value):
            raise Untraceable(f"a {type(value).__name__} in a fused function")
        return [LITERAL, value]

    def add(self, kind: str, name: str, target: Any, args: tuple, kwargs: dict) -> int:
        """Record one call; the slot of its result."""
        if len(self.ops) >= MAX_OPS:
            raise Untraceable("too many operations")
        self.ops.append([kind, name, None if target is None else self.operand(target),
                         [self.operand(a) for a in args],
                         {k: self.operand(v) for k, v in kwargs.items()}])
        return self.params + len(self.ops) - 1

    def result(self, kind: str, name: str, target: Any, args: tuple, kwargs: dict) -> "Tracer":
        slot = self.add(kind, name, target, args, kwargs)
        out = kwargs.get("out")
        if type(out) is Tracer and out._ndim >= 0:   # cupy.add(x, y, out=x): x is that result
            out._slot = slot
            return out
        return Tracer(self, slot, _result_ndim(kind, name, target, args, kwargs))


#: Reductions: their result has the axes they name fewer, a scalar where none is left
_REDUCTIONS = frozenset({"sum", "prod", "nansum", "nanprod", "amax", "amin", "max", "min",
                         "all", "any"})


def _result_ndim(kind: str, name: str, target: Any, args: tuple, kwargs: dict) -> int:
    """What CuPy's fusion makes of a call's result: an array of so many dimensions, or a
    scalar (-1) where every input is one (cupy/_core/fusion.pyx, ``call_ufunc``) or a
    reduction leaves no axis. It decides what ``+=`` on it means."""
    ndim = max((v._ndim for v in (target, *args) if type(v) is Tracer), default=-1)
    if name not in _REDUCTIONS or kind == _OPERATOR:
        return ndim
    given = args[0:1] if kind == _METHOD else args[1:2]
    axis = kwargs.get("axis", given[0] if given else None)
    if axis is None:
        return -1
    left = ndim - (len(axis) if isinstance(axis, (tuple, list)) else 1)
    return left if left >= 1 else -1


def _binary(name: str, reflected: bool = False):
    def method(self: "Tracer", other: Any) -> "Tracer":
        operands = (other, self) if reflected else (self, other)
        return self._trace.result(_OPERATOR, name, None, operands, {})
    return method


def _inplace(name: str):
    def method(self: "Tracer", other: Any) -> "Tracer":
        if self._ndim < 0:   # a scalar has no in-place form: s += 1 makes a new one
            return self._trace.result(_OPERATOR, name, None, (self, other), {})
        # x += y: the array's stand-in stands for the result from here on, as CuPy's does
        self._slot = self._trace.add(_OPERATOR, name, None, (self, other), {})
        return self
    return method


def _unary(name: str):
    def method(self: "Tracer") -> "Tracer":
        return self._trace.result(_OPERATOR, name, None, (self,), {})
    return method


def _untraceable(what: str):
    def method(self: "Tracer", *args: Any, **kwargs: Any) -> Any:
        raise Untraceable(what)
    return method


class Tracer:
    """A stand-in for a fused function's parameter or an intermediate value: an array of
    ``_ndim`` dimensions, or a scalar (-1)."""

    __slots__ = ("_trace", "_slot", "_ndim")
    __hash__ = None   # (== is an operation, as on arrays)

    def __init__(self, trace: _Trace, slot: int, ndim: int) -> None:
        self._trace = trace
        self._slot = slot
        self._ndim = ndim

    def __getattr__(self, name: str) -> Any:
        if name in FUSABLE_METHODS:
            def method(*args: Any, **kwargs: Any) -> Tracer:
                return self._trace.result(_METHOD, name, self, args, kwargs)
            return method
        if name.startswith("__"):
            raise AttributeError(name)
        raise Untraceable(f"the attribute {name!r} of an array in a fused function")

    #: A NumPy scalar's operator defers to the stand-in's reflected one (``np.float32(1) +
    #: x`` is ``x.__radd__``), which the pool's CuPy then meets as locally
    __array_priority__ = 1000

    def __repr__(self) -> str:
        return f"<cupy.fuse stand-in {self._slot}>"

    __bool__ = _untraceable("the truth value of an array in a fused function")
    __float__ = __int__ = __index__ = __complex__ = _untraceable(
        "a Python scalar of an array in a fused function")
    __len__ = __iter__ = _untraceable("the length of an array in a fused function")
    __getitem__ = __setitem__ = _untraceable("indexing in a fused function")
    __array__ = _untraceable("a NumPy array of a fused function's value (NumPy's ufunc on it)")


for _name in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "and_", "or_", "xor",
              "lshift", "rshift"):
    _dunder = _name.rstrip("_")
    setattr(Tracer, f"__{_dunder}__", _binary(_name))
    setattr(Tracer, f"__r{_dunder}__", _binary(_name, reflected=True))
    setattr(Tracer, f"__i{_dunder}__", _inplace(f"i{_dunder}"))
for _name in ("lt", "le", "gt", "ge", "eq", "ne"):
    setattr(Tracer, f"__{_name}__", _binary(_name))
for _name in ("neg", "pos", "abs", "invert"):
    setattr(Tracer, f"__{_name}__", _unary(_name))
assert all(name in FUSABLE_OPERATORS for name in ("iadd", "neg", "eq", "and_"))


def _holds_tracer(value: Any, depth: int = 0) -> bool:
    if type(value) is Tracer:
        return True
    if isinstance(value, (list, tuple)) and depth < 4:
        return any(_holds_tracer(v, depth + 1) for v in value)
    if isinstance(value, dict) and depth < 4:
        return any(_holds_tracer(v, depth + 1) for v in value.values())
    return False


def record_call(kind: str, name: Any, want: str, target: Any, args: tuple, kwargs: dict) -> Any:
    """A proxy call (``cupy.exp(x)``) made while this thread traces: the stand-in of its
    result where it takes one of the trace's stand-ins, else :data:`NOT_TRACED` (the call
    is an ordinary op: an array made inside the function from constants)."""
    trace = _CURRENT.trace
    if trace is None or not (_holds_tracer(target) or _holds_tracer(args) or _holds_tracer(kwargs)):
        return NOT_TRACED
    one_array = want == api.ARRAY or (name == "where" and len(args) == 3)  # (where(c) is a tuple)
    if kind != _FUNCTION or not one_array or name not in FUSABLE_FUNCTIONS:
        raise Untraceable(f"{name} in a fused function")
    return trace.result(_FUNCTION, name, None, tuple(args), dict(kwargs))


_SCALARS = (bool, int, float, complex, np.generic)


class FusedProgram(NamedTuple):
    """A traced function: the kernel definition sent with each call, and what it returns."""

    definition: dict
    want: str


def signature(args: tuple) -> tuple:
    """The key a traced program is kept under: what each argument is to the trace (an
    array, None, a NumPy scalar of its dtype, a Python scalar of its type), in CuPy's
    terms (cupy/_core/fusion.pyx). CuPy's key also has each array's dtype and ndim: the
    pool's CuPy keys its kernels so, but a stand-in shows neither, so the program does not
    depend on them, and asking a fresh result for them would cost a round trip a call."""
    key: list = []
    for a in args:
        if isinstance(a, np.generic):
            key.append(a.dtype.char)
        elif a is None:
            key.append(None)
        elif isinstance(a, float):
            key += ("d", float)
        elif isinstance(a, int):   # (a bool too: CuPy tests int first)
            key += ("l", int)
        elif isinstance(a, complex):
            key += ("D", complex)
        else:   # a remote array
            key.append(_ARRAY)
    return tuple(key)


_ARRAY = "array"
#: An array parameter's dimensions as a stand-in counts them: unknown, taken as many (a
#: reduction over some axes leaves an array, not a scalar)
_ARRAY_NDIM = 32


_FUSIONS = itertools.count(1)


def fusion_number() -> int:
    """A number of its own for a fused function (or its cache once cleared): the pool keeps
    CuPy's kernel cache per number, as CuPy keeps one per ``Fusion``; shared between two
    functions of the same program, a kernel of one signature served another that CuPy's
    key does not tell apart (a bool for an int)."""
    return next(_FUSIONS)


def trace(func: Any, args: tuple, name: str, number: int) -> FusedProgram:
    """Run *func* on stand-ins for *args* (arrays and scalars; None as itself) and return
    its program. Raises :class:`Untraceable`, or whatever *func* raised."""
    if len(args) > MAX_PARAMS:
        raise Untraceable("too many parameters")
    recording = _Trace(len(args))
    stand_ins = [None if a is None else Tracer(recording, i, -1 if isinstance(a, _SCALARS) else _ARRAY_NDIM)
                 for i, a in enumerate(args)]
    outer = _CURRENT.trace
    _CURRENT.trace = recording
    with _LIVE_LOCK:
        LIVE[0] += 1
    try:
        returned = func(*stand_ins)
    finally:
        with _LIVE_LOCK:
            LIVE[0] -= 1
        _CURRENT.trace = outer
    multi = isinstance(returned, tuple)
    outputs = returned if multi else (() if returned is None else (returned,))
    if not all(type(o) is Tracer and o._trace is recording for o in outputs):
        raise Untraceable("a fused function returns its arrays, a tuple of them or None")
    definition = FixedDefinition(name=name, fusion=number, params=len(args), ops=recording.ops,
                                 out=[o._slot for o in outputs], multi=multi)
    want = api.MULTI if multi else (api.ARRAY if outputs else api.NONE)
    return FusedProgram(definition, want)
