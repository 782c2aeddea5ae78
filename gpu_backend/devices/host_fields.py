"""CuPy's rules for a structured array's fields, on the NumPy device.

NumPy hands out any field of a structure; CuPy (its ``_getitem_fields``) refuses a field
that is itself a subarray, and a field whose view would be misaligned for its type on a
GPU (a packed ``"i4,f8"``'s ``f8`` at offset 4): a kernel would fault on it. The NumPy
device stands in for CuPy where no GPU exists, so it refuses the same, with CuPy's words.
"""

from __future__ import annotations

import operator
from typing import Any, Callable

import numpy as np

from .function_tables import OPERATOR_FUNCTIONS

__all__ = ["check_field_access", "FIELD_CHECKED_OPERATORS"]


def check_field_access(array: Any, key: Any) -> None:
    """Raise CuPy's ``ValueError`` where ``array[key]`` names a field CuPy refuses."""
    if type(key) is not str or not isinstance(array, np.ndarray) or array.dtype.fields is None:
        return
    field = array.dtype.fields.get(key)
    if field is None:
        raise ValueError(f"no field name of {key}")
    dt, offset = field[0], field[1]
    if dt.shape:
        raise ValueError("CuPy does not yet support accessing nested subarrays, "
                         "please open an issue if you need this support.")
    if dt.kind == "V":   # CuPy takes nested structures as aligned
        return
    mask = dt.itemsize - 1   # a number's size is a power of two: its alignment on a GPU
    for extent, stride in zip(array.shape, array.strides):
        if extent == 0:
            return   # an empty array's alignment means nothing
        if stride & mask:
            break
    else:
        if (array.ctypes.data + offset) & mask == 0:
            return
    raise ValueError(
        f"result array with dtype {dt} would not be sufficiently aligned for GPU operations. "
        "When using structured dtypes you must manually align the dtype and its fields; "
        "CuPy may provide utilities for this in the future.")


def _getitem(array: Any, key: Any) -> Any:
    check_field_access(array, key)
    got = operator.getitem(array, key)
    if isinstance(got, np.generic) and isinstance(array, np.ndarray):
        # NumPy gives a scalar for an element (a copy); CuPy a 0-d view of the array, which
        # sees later writes to it, and which a replay must hand out as a view
        return operator.getitem(array, (*key, Ellipsis) if type(key) is tuple else (key, Ellipsis))
    return got


def _setitem(array: Any, key: Any, value: Any) -> None:
    check_field_access(array, key)
    operator.setitem(array, key, value)


#: The operators with CuPy's field rules in front of indexing.
FIELD_CHECKED_OPERATORS: dict[str, Callable[..., Any]] = {
    **OPERATOR_FUNCTIONS, "getitem": _getitem, "setitem": _setitem}
