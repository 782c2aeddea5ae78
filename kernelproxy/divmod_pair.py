"""``divmod`` of real operands issued as ``floor_divide`` and ``remainder`` (issue 50).

A call of several results is never in a held stretch (the worker's held stretches know one
result an op: kernelproxy/stretch_key.py), so a loop whose body takes ``q, r = divmod(x,
y)`` was never replayed. CuPy's ``divmod`` kernel (``cupy/_core/core.pyx``, ``_divmod_float``)
computes, for floats, ``a = _floor_divide(in0, in1); out0 = a; out1 = in0 - a * in1``, and
its ``remainder`` ``in0 - _floor_divide(in0, in1) * in1``; for integers the same, with 0 and
0 for a divisor of 0 where ``floor_divide`` gives 0 and ``remainder`` multiplies by
``in1 != 0``. Their dtype rules are the same for real dtypes. NumPy computes all three from
one ``npy_divmod``. So the pair is issued as those two ops, each of one result, which held
stretches keep: ``xp.divmod(x, y)`` as ``xp.floor_divide`` and ``xp.remainder``, Python's
``divmod(x, y)`` (reflected too) as ``x // y`` and ``x % y``. Checked bit for bit on a GPU
by ``benchmarks/divmod_probe.py`` (signed zeros, infinities, NaN, every real dtype, scalars
and arrays): equal for the integers, float32 and float64 (run 309, H200); not for float16,
whose quotient CuPy's ``divmod`` rounds to a half before the product, where ``remainder``
keeps it a float.

Left to the call: an operand whose dtype the client does not know now, float16, a bool,
complex or other operand (CuPy's ``divmod`` has no loop for them, and its error names
``divmod``), keywords (``out=``, ``dtype=``), and no array among the operands.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gpu_backend.protocol import messages as m

from .result_structures import known_meta, meta_unknown

__all__ = ["pair", "undecided"]

#: the dtypes whose divmod is floor_divide and remainder to the bit: the integers, float32
#: and float64 (float16's is not on a GPU: CuPy's divmod keeps its quotient a half, and
#: remainder's product stays a float: 260-2 886 of 4 109 values differed, run 309)
_EXACT = frozenset(np.dtype(c) for c in "bBhHiIlLqQfd")
#: the two ops, by the call's kind
_NAMES = {m.KIND_FUNCTION: ("floor_divide", "remainder"), m.KIND_OPERATOR: ("floordiv", "mod")}


def _real_operand(value: Any) -> bool | None:
    """True for an array of the session of a known real dtype, False for a real scalar
    (Python's or NumPy's), None for anything else."""
    meta = known_meta(value)
    if meta is not None:
        return True if np.dtype(meta[1]) in _EXACT else None
    if type(value) in (int, float) or (isinstance(value, np.generic)
                                       and np.dtype(type(value)) in _EXACT):
        return False
    return None


def pair(kind: str, name: Any, args: tuple, kwargs: dict | None) -> tuple[str, str] | None:
    """The two ops' names where the ``divmod`` call (*kind*: a function's or Python's
    operator's) is issued as them; else None."""
    if name != "divmod" or kind not in _NAMES or len(args) != 2 or kwargs:
        return None
    kinds = [_real_operand(a) for a in args]
    if None in kinds or not any(kinds):
        return None
    return _NAMES[kind]


def undecided(kind: str, name: Any, args: tuple, kwargs: dict | None) -> bool:
    """Whether the ``divmod`` call goes as a call now only for want of an operand's dtype,
    which a later one of the same code may have, issued then as the two ops: a stretch
    that took the call in would not be the stretch its later runs make
    (Session.submit_arrays keeps it out). Not where an operand known now could never pair
    (float16, a bool or complex array or scalar): that call goes as a call for good. (In a
    loop with no sync point, whose operand is the step's temporary, the dtype is never
    known here when the call comes: every such call is undecided, and goes alone.)"""
    if name != "divmod" or kind not in _NAMES or len(args) != 2 or kwargs:
        return False
    unknown = [meta_unknown(a) for a in args]
    return any(unknown) and all(u or _real_operand(a) is not None for a, u in zip(args, unknown))
