"""Stretch replay's rules that the client and the worker must share (docs/stretch-replay.md).

A client offers a stretch of ops it has seen repeat; the worker keeps it and later runs it
again from a short replay entry that names only the stretch, its new inputs, its scalar
parameters and its results' new handles. Both sides number the inputs and parameters by
walking the stretch's ops in the same order with the same rules, kept here:

* an op's target, then its arguments, then its keyword arguments in their order, lists,
  tuples and maps recursively (a map's values in its order);
* an array handle not made by an earlier op of the stretch is an input, numbered when first
  met (a free record of such a handle counts as meeting it);
* a scalar operand of an arithmetic or comparison operator (:data:`PARAM_OPERATORS`) is a
  parameter: its value may change from one run to the next (a step size, CG's alpha);
  every other value is part of the stretch as it is. A power's is not: CuPy's ``**``
  picks its kernel by the exponent's value (``x ** 2``, ``2.0``, ``0.5`` and ``-1.0`` run
  ``square``, ``sqrt`` and ``reciprocal``, whose last bits differ from ``power``'s), so a
  replay given the exponent as a parameter would not be bitwise the user's op;
* so is a scalar positional argument of a call to a two-operand ufunc or ``clip``
  (:data:`PARAM_UFUNCS`: ``cupy.maximum(x, floor)``, ``cupy.multiply(x, decay)``,
  ``cupy.clip(x, -bound, bound)``): the operators run these same ufuncs, and CuPy casts a
  Python scalar the same way in both. ``power`` and
  ``float_power`` are not (as ``**``), nor ufuncs of two results (``divmod``);
* so are a random distribution's scalars, its leading positional arguments
  (:data:`DRAW_PARAMS`: ``rs.normal(0, sigma, n)``'s ``0`` and ``sigma``, not ``n``);
* so is a NumPy scalar anywhere among a user kernel's positional arguments
  (:func:`kernel_param`: ``RawKernel``'s ``np.float32(t)`` inside its argument tuple, an
  ``ElementwiseKernel``'s ``np.float64(lr)``): its dtype is the kernel's C type, whatever its
  value, and stays in the key. A Python scalar given to a kernel stays literal (CuPy picks
  its C type itself). A kernel takes its scalars by value, so a graph bakes each one in, and
  a replay given another runs that launch eagerly (worker/graph_replay.py,
  ``StretchGraph.baked``);
* so are the integers of a basic index (:func:`basic_index`: ints, slices, ``None`` and
  ``...``, alone or in a tuple) given to ``getitem``: a slice's start and stop and an int
  index (``x_all[j:j + batch]``, ``rows[i]``), walked in the index's order, a slice's start
  before its stop; its step stays literal (it decides the result's strides). A minibatch
  sliced at an offset that moves each step is then one stretch. The client checks that a
  run's values give the template's shape; the worker bakes them into its capture, and where
  a replay's differ, runs that ``getitem`` eagerly into a buffer of its own
  (worker/moving_views.py). So are those given to ``setitem`` (``losses[i] = loss``,
  ``traj[i] = x``; the value assigned, a scalar, stays literal): a loop that records each
  step into a device array is one stretch. The worker bakes the index in; a replay given
  another re-runs from its records, and that assignment runs eagerly from the next capture
  on, on the graph's buffer of its array.

:func:`leading_params` says which calls' arguments are walked so. Keyword arguments never
are: they stay literals.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import api
from . import messages as m

__all__ = ["index_param", "basic_index", "PARAM_OPERATORS", "PARAM_UFUNCS", "DRAW_PARAMS", "leading_params",
           "user_kernel", "kernel_param", "indexed", "is_param", "INT_PARAM_LOW", "INT_PARAM_HIGH", "REPEATS", "MAX_STRETCH_OPS", "MAX_HELD"]

#: Operators whose scalar operands are parameters: the arithmetic and comparison ones and
#: their in-place forms (getitem's and setitem's indices select: only a basic index's ints
#: are parameters, :func:`basic_index`; a
#: power's exponent picks CuPy's kernel, so it stays literal too).
PARAM_OPERATORS = frozenset(name for name in api.OPERATORS
                            if name not in ("getitem", "setitem", "divmod", "pow", "ipow"))

#: Functions whose scalar positional arguments are parameters: the allow-listed elementwise
#: ufuncs of two operands and one result (not ``matmul``, a generalised one), but the powers
#: (their exponent stays literal, as an operator's).
#: ``clip`` too: CuPy's is its ufunc ``_clip`` of three operands, NumPy's its ufunc ``clip``.
PARAM_UFUNCS = frozenset([name for name in api.UFUNCS
                          if (u := getattr(np, name)).nin == 2 and u.nout == 1 and u.signature is None
                          and name not in ("power", "float_power")] + ["clip"])

#: ``cupy.random``'s distributions (a ``RandomState``'s or a ``Generator``'s methods, the
#: module's functions among them: the global RandomState's) by how many of their leading positional
#: arguments are the distribution's scalars (a mean and a scale, bounds, a rate): parameters,
#: so that a noise scale that anneals (``rs.normal(0, sigma, n)``) makes no new stretch each
#: step. The result's shape and dtype come from ``size`` and ``dtype``, literals after them;
#: the draw runs eagerly with the run's values, as the user's own call would. A Generator's
#: draw that the graphs make (worker/draw_journal.py's ``CAPTURED_DRAWS``) keeps the values
#: it was captured with: a replay given others captures the stretch again with that draw
#: eager (worker/graph_replay.py, ``StretchGraph.baked``).
DRAW_PARAMS = {
    **dict.fromkeys(("exponential standard_gamma poisson chisquare standard_t rayleigh weibull "
                     "pareto power geometric logseries zipf").split(), 1),
    **dict.fromkeys(("normal uniform lognormal gamma beta binomial laplace logistic gumbel "
                     "vonmises wald noncentral_chisquare f negative_binomial randint "
                     "integers").split(), 2),
    **dict.fromkeys("triangular noncentral_f hypergeometric".split(), 3),
}
#: a ufunc's positional arguments walked for parameters: all its operands (``clip``'s three;
#: a two-operand ufunc's third positional argument is its ``out``, an array, never a scalar)
_UFUNC_OPERANDS = 3
#: the prefixes of a distribution's name, an object's method (``cupy.random.normal`` is the
#: session's global RandomState's: kernelproxy/random)
_DRAW_OWNERS = ("random.RandomState.", "random.Generator.")


def user_kernel(kind: str, name: Any) -> bool:
    """Whether a call of *kind* and *name* launches a user's kernel (``RawKernel``,
    ``ElementwiseKernel``, a jit kernel, ...), whose positional arguments are walked for
    :func:`kernel_param` scalars, nested in lists and tuples too (a ``RawKernel``'s ``(grid,
    block, args)``). A fused program is not one: its scalars are the function's own (a
    cupy.fuse call keeps them literal), and it is given arrays only."""
    return kind == m.KIND_KERNEL and name != "fuse"


def indexed(kind: str, name: Any, args: Any) -> bool:
    """Whether an op is a ``getitem`` (``x[index]``) or a ``setitem`` (``x[index] = value``)
    whose index is basic and holds a parameter (:func:`basic_index`): its ints are then
    walked as parameters, its other arguments as any op's."""
    if kind != m.KIND_OPERATOR:
        return False
    if name == "getitem":
        return len(args) == 2 and basic_index(args[1])
    return name == "setitem" and len(args) == 3 and basic_index(args[1])


def kernel_param(value: Any) -> bool:
    """Whether *value*, among a user kernel's arguments, is a parameter: a NumPy scalar
    (:func:`is_param`: not a NaN, an int in range)."""
    return isinstance(value, np.generic) and is_param(value)


def leading_params(kind: str, name: Any) -> int:
    """How many leading positional arguments of a call *name* of *kind* (a function's, an
    array's method or an object's) have their scalars made parameters: all of a
    :data:`PARAM_UFUNCS` ufunc's, an array's ``clip``'s bounds, a distribution's own
    (:data:`DRAW_PARAMS`), else none. (An operator's are
    :data:`PARAM_OPERATORS`'.)"""
    if type(name) is not str:
        return 0
    if kind == m.KIND_FUNCTION and name in PARAM_UFUNCS:
        return _UFUNC_OPERANDS
    if kind == m.KIND_METHOD and name == "clip":   # (``x.clip(lo, hi)``: the function's)
        return 2
    if kind == m.KIND_OBJECT:
        for owner in _DRAW_OWNERS:
            if name.startswith(owner):
                return DRAW_PARAMS.get(name[len(owner):], 0)
    return 0


_PYTHON_SCALARS = (bool, int, float, complex)


def index_param(value: Any) -> bool:
    """Whether *value*, a part of a basic index, is a parameter: an int (not a bool, which
    NumPy reads as a mask) that msgpack sends as it is, or a NumPy integer."""
    t = type(value)
    if t is int:
        return INT_PARAM_LOW <= value < INT_PARAM_HIGH
    return isinstance(value, np.integer)


def _basic_part(part: Any) -> bool:
    t = type(part)
    if t is slice:
        return all(p is None or index_param(p) for p in (part.start, part.stop, part.step))
    return part is None or part is Ellipsis or index_param(part)


def basic_index(index: Any) -> bool:
    """Whether *index*, a ``getitem``'s or a ``setitem``'s, is basic (an int, a slice of
    ints, ``None``, ``...``, or a tuple of those) and holds a parameter
    (:func:`index_param`): then its ints
    are the stretch's parameters. Any array, list or other value keeps the whole index
    literal."""
    parts = index if type(index) is tuple else (index,)
    if not all(_basic_part(p) for p in parts):
        return False
    return any(index_param(p) or (type(p) is slice and (index_param(p.start) or index_param(p.stop)))
               for p in parts)

#: A stretch is offered once its key has been seen this many times (the client times the
#: sightings before, from the second on, as they run pipelined: kernelproxy.stretch_replay).
REPEATS = 5
#: Longer stretches are never offered (their key costs more than it saves).
MAX_STRETCH_OPS = 512
#: Stretches one session may hold at a time; the worker refuses offers past it.
MAX_HELD = 64


#: the ints a parameter may hold: those msgpack sends as they are (a larger one goes as the
#: op's literal, sent, or refused as unsendable, at its own op: as without replay)
INT_PARAM_LOW, INT_PARAM_HIGH = -(1 << 63), 1 << 64


def is_param(value: Any) -> bool:
    """Whether *value*, an operand of a :data:`PARAM_OPERATORS` operator, is a parameter. A
    NaN is not: CuPy given a NaN as a Python scalar makes every NaN of the result that
    NaN's bits, given it as a 0-d array (a graph's parameter block) it keeps an element's
    own NaN (``x + -nan`` on an H200, run 275: ``-nan`` against ``+nan`` where ``x`` holds a
    NaN). A NaN goes as a literal of the stretch, keyed by its bits (kernelproxy/
    stretch_key.py), and its graphs are given it as the op was."""
    t = type(value)
    if t is int:
        return INT_PARAM_LOW <= value < INT_PARAM_HIGH
    if t is float or t is complex:
        return value == value
    if t in _PYTHON_SCALARS:
        return True
    if not isinstance(value, np.generic):
        return False
    kind = value.dtype.kind
    return kind in "biu" or (kind in "fc" and value == value)
