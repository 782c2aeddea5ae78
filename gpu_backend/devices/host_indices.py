"""CuPy's out-of-range integer index arrays, on the NumPy device: they wrap.

NumPy raises ``IndexError`` for an entry of an integer index array outside its axis;
CuPy's kernels take every entry modulo the axis's length (its docs, "Out-of-bounds
indices"; ``_take_kernel``, the scatter kernels, ``_prepare_array_indexing``):
``x[[1, 3]]`` of three elements is ``x[[1, 0]]``, read or written (``x[[1, 3]] = 10``),
and so are ``take``, ``put`` (whose mode is ``'wrap'`` unless given), ``take_along_axis``,
``put_along_axis``, ``add.at`` and its kin, ``cupyx.scatter_add`` and its kin. A pool of
GPUs does this; the NumPy device stood in for it by raising, so code tried there broke on
a GPU (or the reverse). Here each such entry is taken modulo its axis's length before
NumPy sees it. As in CuPy, a scalar index out of range still raises ``IndexError``, and
so does a non-empty index into an empty axis.

Only keys holding an index array pay for this: an int, a slice or a field name is
passed on untouched after one type check.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..protocol import api

__all__ = ["wrap_key", "wrapping_operators", "wrapping_functions", "wrapping_methods"]


def _wrapped(index: np.ndarray, n: int) -> np.ndarray:
    """*index* (integers for an axis of length *n*) with its entries modulo *n*, or
    itself when every entry is in range (or nothing can be wrapped: an empty axis)."""
    if n == 0 or index.size == 0:
        return index
    low, high = index.min(), index.max()
    if high < n and (index.dtype.kind == "u" or low >= -n):
        return index
    if index.dtype.kind == "u":
        return np.mod(index, np.uint64(n))
    return np.mod(index, np.int64(n))   # (floor modulo: -1 is n - 1, as CuPy's kernels)


def _as_index(part: Any) -> np.ndarray | None:
    """A list used as an index, as the array NumPy makes of it; None where NumPy could not."""
    try:
        return np.asarray(part)
    except (ValueError, TypeError):   # a ragged list, objects: NumPy's own error follows
        return None


def wrap_key(shape: tuple, key: Any) -> Any:
    """*key* for an array of *shape* with each integer index array's entries wrapped into
    its axis. Anything NumPy would refuse is returned as it is, for NumPy to refuse."""
    parts = key if type(key) is tuple else (key,)
    for part in parts:
        if type(part) is np.ndarray or type(part) is list:
            break
    else:
        return key
    arrays: list = []   # per part: (axes it takes, the integer index array or None)
    taken, ellipsis = 0, False
    for part in parts:
        if part is None or isinstance(part, (bool, np.bool_)):   # a new axis, a 0-d mask
            arrays.append((0, None))
        elif part is Ellipsis:
            if ellipsis:
                return key
            ellipsis = True
            arrays.append((-1, None))
        elif type(part) is np.ndarray or type(part) is list:
            index = part if type(part) is np.ndarray else _as_index(part)
            if index is None:
                return key
            if index.dtype.kind == "b":
                arrays.append((index.ndim, None))
                taken += index.ndim
                continue
            if index.dtype.kind not in "iu":   # NumPy's IndexError, or [] (an empty int index)
                if not (type(part) is list and index.size == 0):
                    return key
                index = None
            arrays.append((1, index))
            taken += 1
        else:   # an int, a slice
            arrays.append((1, None))
            taken += 1
    if taken > len(shape):
        return key
    out, axis, changed = list(parts), 0, False
    for i, (axes, index) in enumerate(arrays):
        if axes == -1:
            axis += len(shape) - taken
            continue
        if index is not None:
            wrapped = _wrapped(index, shape[axis])
            if wrapped is not index:
                out[i], changed = wrapped, True
        axis += axes
    if not changed:
        return key
    return tuple(out) if type(key) is tuple else out[0]


def _getitem(getitem: Callable) -> Callable:
    def wrapping_getitem(array: Any, key: Any) -> Any:
        if isinstance(array, np.ndarray):
            key = wrap_key(array.shape, key)
        return getitem(array, key)
    return wrapping_getitem


def _setitem(setitem: Callable) -> Callable:
    def wrapping_setitem(array: Any, key: Any, value: Any) -> None:
        if isinstance(array, np.ndarray):
            key = wrap_key(array.shape, key)
        setitem(array, key, value)
    return wrapping_setitem


def wrapping_operators(operators: dict[str, Callable]) -> dict[str, Callable]:
    """*operators* with ``getitem`` and ``setitem`` wrapping their index arrays."""
    table = dict(operators)
    table["getitem"] = _getitem(operators["getitem"])
    table["setitem"] = _setitem(operators["setitem"])
    return table


def _wrapped_for(indices: Any, n: int | None) -> tuple[Any, str]:
    """*indices* taken modulo *n* here, and the mode to hand NumPy then. NumPy's own
    ``mode='wrap'`` subtracts the length in a loop until an entry is in range: one index of
    2**63 - 1 kept a worker busy for ever (the worker fuzz, tests/hostile.py)."""
    index = np.asarray(indices) if n is not None else None
    if index is None or index.dtype.kind not in "iu":
        return indices, "wrap"   # NumPy's error (a float index), or nothing to wrap along
    return _wrapped(index, n), "raise"   # (raise: only an empty axis is left to refuse)


def _take(a: Any, indices: Any, axis: Any = None, out: Any = None, mode: Any = None) -> Any:
    """CuPy's ``take`` wraps (it has no ``mode``; one given is NumPy's to honour)."""
    if mode not in (None, "wrap"):
        return np.take(a, indices, axis, out, mode)
    indices, mode = _wrapped_for(indices, _axis_length(a, axis))
    return np.take(a, indices, axis, out, mode)


def _put(a: Any, ind: Any, v: Any, mode: str = "wrap") -> None:
    """CuPy's ``put``: ``mode='wrap'`` unless given."""
    if mode == "wrap":
        ind, mode = _wrapped_for(ind, a.size if isinstance(a, np.ndarray) else None)
    np.put(a, ind, v, mode)


def _axis_length(arr: Any, axis: Any) -> int | None:
    """The length an index along *axis* of *arr* wraps at (the size for ``axis=None``)."""
    if not isinstance(arr, np.ndarray):
        return None
    if axis is None:
        return arr.size
    if isinstance(axis, (int, np.integer)) and -arr.ndim <= axis < arr.ndim:
        return arr.shape[axis]
    return None   # NumPy's error follows


def _along_axis(fn: Callable) -> Callable:
    """``take_along_axis(arr, indices, axis)`` / ``put_along_axis(arr, indices, values,
    axis)`` with *indices* wrapped into the axis."""
    def wrapping(arr: Any, indices: Any, *args: Any, **kwargs: Any) -> Any:
        axis = kwargs["axis"] if "axis" in kwargs else (args[-1] if args else -1)
        n = _axis_length(arr, axis)
        if n is not None and type(indices) is np.ndarray and indices.dtype.kind in "iu":
            indices = _wrapped(indices, n)
        return fn(arr, indices, *args, **kwargs)
    wrapping.__name__ = getattr(fn, "__name__", "along_axis")
    return wrapping


def _at(fn: Callable) -> Callable:
    """``add.at(a, indices, b)``, ``cupyx.scatter_add(a, slices, value)``: *indices* wrapped."""
    def wrapping(a: Any, indices: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(a, np.ndarray):
            indices = wrap_key(a.shape, indices)
        return fn(a, indices, *args, **kwargs)
    wrapping.__name__ = getattr(fn, "__name__", "at")
    return wrapping


def wrapping_functions(functions: dict[str, Callable]) -> dict[str, Callable]:
    """*functions* with CuPy's wrapping ``take``, ``put``, ``*_along_axis``, ufuncs' ``at``
    and ``cupyx.scatter_*``, where the table has them."""
    table = dict(functions)
    table.update({"take": _take, "put": _put})
    for name in ("take_along_axis", "put_along_axis"):
        if name in table:
            table[name] = _along_axis(table[name])
    for name in [f"{u}.at" for u in api.UFUNCS] + ["cupyx.scatter_add", "cupyx.scatter_max",
                                                    "cupyx.scatter_min"]:
        if name in table:
            table[name] = _at(table[name])
    return table


def wrapping_methods(methods: dict[str, Callable]) -> dict[str, Callable]:
    """*methods* with CuPy's wrapping ``take`` and ``put``."""
    table = dict(methods)
    if "take" in table:
        table["take"] = _take
    if "put" in table:
        table["put"] = _put
    return table
