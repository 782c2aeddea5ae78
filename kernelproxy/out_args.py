"""Output arrays given to an op: ``out=``, or positionally (``cupy.add(a, b, out)``,
``a.sum(0, None, out)``, ``add.reduce(a, 0, None, out)``), found and checked on the client
so that the op writes into them and returns them, as CuPy's do."""

from __future__ import annotations

from typing import Any

import numpy as np

from gpu_backend.protocol import api
from gpu_backend.protocol import messages as m

__all__ = ["checked_out", "given_outs", "positional_out"]


#: Where ndarray methods take ``out`` positionally (the functions of the same name,
#: with the array first, take it one place later).
_METHOD_OUT_ARG = {
    "all": 1, "any": 1, "argmax": 1, "argmin": 1, "max": 1, "min": 1, "round": 1, "dot": 1,
    "choose": 1, "clip": 2, "cumprod": 2, "cumsum": 2, "mean": 2, "prod": 2, "std": 2, "sum": 2,
    "var": 2, "take": 2, "compress": 2, "trace": 4,
}
_FUNCTION_OUT_ARG = {name: i + 1 for name, i in _METHOD_OUT_ARG.items()}
_FUNCTION_OUT_ARG.update(concatenate=2, amax=2, amin=2, around=2)
#: ``add.reduce(array, axis, dtype, out)`` and its kin
_UFUNC_METHOD_OUT_ARG = {"reduce": 3, "accumulate": 3, "reduceat": 4}


def positional_out(kind: str, name: str, args: tuple) -> Any:
    """The output array given positionally (``cupy.add(a, b, out)``, ``a.sum(0, None, out)``)."""
    if kind == m.KIND_METHOD:
        index = _METHOD_OUT_ARG.get(name)
    elif "." in name:   # linalg.norm, ..., or a ufunc's method: add.reduce(a, axis, dtype, out)
        owner, _, method = name.rpartition(".")
        index = (_UFUNC_METHOD_OUT_ARG.get(method) if owner in api.UFUNCS
                 else _FUNCTION_OUT_ARG.get(name))
    else:
        ufunc = getattr(np, name, None)
        if isinstance(ufunc, np.ufunc):
            index = ufunc.nin if ufunc.nout == 1 else None
        else:
            index = _FUNCTION_OUT_ARG.get(name)
    if index is not None and len(args) > index:
        return checked_out(args[index])
    return None


def checked_out(out: Any) -> Any:
    """``out=``, checked: only remote arrays (a host array would be filled on the pool only)."""
    outs = out if type(out) is tuple else (out,)
    if all(o is None for o in outs):
        return None
    if not all(o is None or getattr(type(o), "_remote_array", False) for o in outs):
        raise TypeError("Output arguments type must be cupy.ndarray")
    return out


def given_outs(kind: str, name: str, args: tuple, out: Any) -> tuple | None:
    """The output arrays a multi-output ufunc was given (``out=`` or after its inputs)."""
    if out is None and kind == m.KIND_FUNCTION:
        ufunc = getattr(np, name, None) if "." not in name else None
        if isinstance(ufunc, np.ufunc) and ufunc.nout > 1 and len(args) > ufunc.nin:
            out = checked_out(tuple(args[ufunc.nin:ufunc.nin + ufunc.nout]))
    if out is None:
        return None
    return out if type(out) is tuple else (out,)
