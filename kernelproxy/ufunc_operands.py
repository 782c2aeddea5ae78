"""CuPy's rule for a ufunc's operands, checked where the proxy issues the op.

CuPy's ufuncs take remote arrays and scalars only. Anything else given as an input,
a NumPy array above all, is refused with ``TypeError: Unsupported type <class
'numpy.ndarray'>`` (``_kernel._preprocess_args`` wraps it in a ``CScalar``, which
refuses it): CuPy makes no implicit host-to-device copy and converts no list
(docs: "Universal Functions only work with CuPy array or scalar"). The operators are
ufuncs (``x + host`` is ``numpy.add(x, host)``, handed to ``cupy.add``), except ``@``:
``cupy.matmul`` is a gufunc whose typed arguments refuse a host array in Cython's words.

A pool of GPUs raised this only when the op ran (its worker's CuPy refused the value),
and the NumPy device's NumPy computed the op, so code tried against a laptop's pool
broke on a GPU's. Checked here, before anything is sent, both raise it at the call, as
CuPy does, shown from the user's line (tracebacks.py). Only what CuPy surely refuses is
refused here (NumPy arrays, lists, tuples, ranges): other objects still travel and the
pool answers for them.

Comparisons (``x < host``) turn a 0-d NumPy array into a Python scalar first, as
``cupy.ndarray.__richcmp__`` does, so a 0-d host array is taken there (and only there).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .tracebacks import for_user

__all__ = ["refuse_host_operands", "refuse_host_operand", "COMPARISON_OPERATORS"]

#: Python containers CuPy's ufuncs refuse and NumPy's would turn into arrays.
_CONTAINERS = (list, tuple, range)
_REFUSED = (np.ndarray, *_CONTAINERS)
#: The operators whose 0-d NumPy operand CuPy takes as a Python scalar.
COMPARISON_OPERATORS = frozenset({"lt", "le", "gt", "ge", "eq", "ne"})


def _refused(value: Any, comparison: bool) -> bool:
    if isinstance(value, np.ndarray):
        return not (comparison and value.ndim == 0)
    return isinstance(value, _CONTAINERS)


def _error(value: Any, name: str, position: int) -> TypeError:
    if name == "matmul":   # cupy.matmul's Cython signature: (a, b)
        kind = type(value)
        named = kind.__qualname__ if kind.__module__ == "builtins" else \
            f"{kind.__module__}.{kind.__qualname__}"
        return TypeError(f"Argument '{'ab'[min(position, 1)]}' has incorrect type (expected "
                         f"cupy._core.core._ndarray_base, got {named})")
    return TypeError(f"Unsupported type {type(value)}")


def refuse_host_operand(name: str, value: Any, position: int) -> None:
    """Raise CuPy's ``TypeError`` if *value*, operand *position* of the operator or ufunc
    *name* (``add``, ``lt``, ``matmul``), is one CuPy refuses. Callers have already let
    remote arrays and scalars through."""
    if _refused(value, name in COMPARISON_OPERATORS):
        raise for_user(_error(value, name, position))


def refuse_host_operands(name: str, operands: Any) -> None:
    """:func:`refuse_host_operand` for each input of a ufunc call (``cupy.add(a, b)``), where
    a 0-d NumPy array is refused too (only a comparison operator turns it into a scalar)."""
    for position, value in enumerate(operands):   # (one isinstance an operand: this runs
        if isinstance(value, _REFUSED):              # before every ufunc call)
            raise for_user(_error(value, name, position))
