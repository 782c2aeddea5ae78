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
  replay given the exponent as a parameter would not be bitwise the user's op.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import api

__all__ = ["PARAM_OPERATORS", "is_param", "INT_PARAM_LOW", "INT_PARAM_HIGH", "REPEATS", "MAX_STRETCH_OPS", "MAX_HELD"]

#: Operators whose scalar operands are parameters: the arithmetic and comparison ones and
#: their in-place forms (getitem's and setitem's indices select, so they stay literal; a
#: power's exponent picks CuPy's kernel, so it stays literal too).
PARAM_OPERATORS = frozenset(name for name in api.OPERATORS
                            if name not in ("getitem", "setitem", "divmod", "pow", "ipow"))

_PYTHON_SCALARS = (bool, int, float, complex)

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
    """Whether *value*, an operand of a :data:`PARAM_OPERATORS` operator, is a parameter."""
    t = type(value)
    if t is int:
        return INT_PARAM_LOW <= value < INT_PARAM_HIGH
    if t in _PYTHON_SCALARS:
        return True
    return isinstance(value, np.generic) and value.dtype.kind in "biufc"
