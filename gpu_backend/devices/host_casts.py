"""A GPU's float-to-integer conversion, on the NumPy device.

C leaves a float out of an integer type's range undefined when converted, so each
processor answers its own way. NumPy follows the host's (on x86: ``-1.5`` to ``uint8`` is
255, ``inf`` to ``int32`` is ``-2**31``) and warns "invalid value encountered in cast";
CuPy's kernels follow the GPU's conversion, without a warning (CuPy's docs, "Cast behavior
from float to integer"). Measured with CuPy 14.2 on an H100, for float16, float32 and
float64 alike:

* to a 32- or 64-bit integer: truncated toward zero and clamped to the type's range
  (``-1.5`` is 0 as ``uint32``, ``inf`` is ``2**31 - 1`` as ``int32``);
* to an 8- or 16-bit integer: so converted to a 32-bit integer of the same signedness,
  then its low bits kept (``-1.5`` is 0 and ``300.7`` is 44 as ``uint8``, ``5e9`` is 255);
* NaN: 0, except to a 64-bit integer (``-2**63`` as ``int64``, ``2**63`` as ``uint64``)
  and from float64 to a 32-bit one (``-2**31`` as ``int32``, ``2**31`` as ``uint32``);
* a complex source: its real part, with NumPy's and CuPy's ``ComplexWarning``.

The NumPy device converts so in ``astype`` (method and function), in ``x[key] = floats``
into an integer array and in ``copyto(..., casting='unsafe')``, as a GPU pool's CuPy does.
Other implicit casts (a ufunc's ``out=`` or ``dtype=``) remain NumPy's.
"""

from __future__ import annotations

import warnings
from typing import Any, Callable

import numpy as np

__all__ = ["gpu_cast", "converting_methods", "converting_functions", "converting_operators"]

_UNSET = object()


def _target(dtype: Any) -> np.dtype | None:
    """*dtype* as an integer dtype, or None (not one, or not a dtype: NumPy answers)."""
    try:
        target = np.dtype(dtype)
    except (TypeError, ValueError):
        return None
    return target if target.kind in "iu" else None


def gpu_cast(x: np.ndarray, target: np.dtype) -> np.ndarray:
    """*x* (floats or complex numbers) converted to the integer dtype *target* as a GPU
    converts (see the module's docstring); a new array, in *x*'s layout."""
    if x.dtype.kind == "c":
        warnings.warn("Casting complex values to real discards the imaginary part",
                      np.exceptions.ComplexWarning, stacklevel=2)
        x = x.real
    bits, signed = target.itemsize * 8, target.kind == "i"
    wide = target if bits >= 32 else np.dtype(np.int32 if signed else np.uint32)
    info = np.iinfo(wide)
    wide_bits = wide.itemsize * 8
    with np.errstate(invalid="ignore", over="ignore"):
        result = x.astype(wide)
    np.copyto(result, info.max, where=x >= np.float64(2.0 ** (wide_bits - signed)))
    np.copyto(result, info.min, where=x < np.float64(-(2.0 ** (wide_bits - 1)) if signed else 0.0))
    nan = np.isnan(x)
    if nan.any():
        pattern = wide_bits == 64 or (wide_bits == 32 and x.dtype.itemsize == 8)
        np.copyto(result, (info.min if signed else 1 << (wide_bits - 1)) if pattern else 0,
                  where=nan)
    return result if wide == target else result.astype(target)   # (low bits kept)


def _converts(array: Any, target: Any) -> np.dtype | None:
    """The integer dtype a float *array* goes to as a GPU converts, or None."""
    if type(array) is not np.ndarray or array.dtype.kind not in "fc":
        return None
    return _target(target)


def _astype(a: Any, dtype: Any, order: str = "K", casting: Any = _UNSET, subok: Any = _UNSET,
            copy: Any = True) -> Any:
    """``ndarray.astype``, a float array to an integer dtype as a GPU converts."""
    target = _converts(a, dtype) if casting is _UNSET and subok is _UNSET else None
    if target is None:
        extra = {k: v for k, v in (("casting", casting), ("subok", subok)) if v is not _UNSET}
        return a.astype(dtype, order=order, copy=copy, **extra)
    return gpu_cast(a, target).astype(target, order=order, copy=False)


def _astype_function(fn: Callable) -> Callable:
    def astype(x: Any, dtype: Any, /, *, copy: bool = True, **kwargs: Any) -> Any:
        target = _converts(x, dtype) if not kwargs else None
        return fn(x, dtype, copy=copy, **kwargs) if target is None else gpu_cast(x, target)
    return astype


def _copyto(fn: Callable) -> Callable:
    def copyto(dst: Any, src: Any, casting: str = "same_kind", where: Any = True) -> None:
        if casting == "unsafe" and isinstance(dst, np.ndarray):
            target = _converts(src, dst.dtype)
            if target is not None:
                src = gpu_cast(src, target)
        fn(dst, src, casting=casting, where=where)
    return copyto


def _setitem(setitem: Callable) -> Callable:
    def converting_setitem(array: Any, key: Any, value: Any) -> None:
        if isinstance(array, np.ndarray) and array.dtype.kind in "iu":
            target = _converts(value, array.dtype)
            if target is not None:
                value = gpu_cast(value, target)
        setitem(array, key, value)
    return converting_setitem


def converting_methods(methods: dict[str, Callable]) -> dict[str, Callable]:
    """*methods* with ``astype`` converting floats to integers as a GPU does."""
    table = dict(methods)
    if "astype" in table:
        table["astype"] = _astype
    return table


def converting_functions(functions: dict[str, Callable]) -> dict[str, Callable]:
    """*functions* with ``astype`` and ``copyto`` converting floats to integers as a GPU does."""
    table = dict(functions)
    if "astype" in table:
        table["astype"] = _astype_function(table["astype"])
    if "copyto" in table:
        table["copyto"] = _copyto(table["copyto"])
    return table


def converting_operators(operators: dict[str, Callable]) -> dict[str, Callable]:
    """*operators* with ``setitem`` converting float values for an integer array as a GPU does."""
    table = dict(operators)
    table["setitem"] = _setitem(operators["setitem"])
    return table
