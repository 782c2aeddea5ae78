"""``cupy.r_``, ``cupy.c_`` and ``cupy.mask_indices``: index-expression helpers of CuPy that
are plain Python over array operations, so they run on the client and issue ordinary ops.

They follow CuPy's versions (which support less than NumPy's): ``r_``/``c_`` concatenate
arrays and scalars; slices and string directives raise ``NotImplementedError`` as in CuPy.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from .state import proxy_cupy


__all__ = ["AxisConcatenator", "RClass", "CClass", "r_", "c_", "mask_indices"]


class AxisConcatenator:
    """Translates ``obj[a, b, ...]`` into a concatenation along an axis (CuPy's rules)."""

    def __init__(self, axis: int = 0, matrix: bool = False, ndmin: int = 1, trans1d: int = -1) -> None:
        self.axis = axis
        self.matrix = matrix
        self.ndmin = ndmin
        self.trans1d = trans1d

    @staticmethod
    def _moved(obj: Any, ndim: int, ndmin: int, trans1d: int) -> Any:
        """A 1-d (or short) input's axes placed as ``trans1d`` says (NumPy's rule)."""
        extra = ndmin - ndim
        if trans1d < 0:
            trans1d += extra + 1
        axes = list(range(ndmin))
        return obj.transpose(axes[:trans1d] + axes[extra:] + axes[trans1d:extra])

    def __getitem__(self, key: Any) -> Any:
        cupy = proxy_cupy()
        if isinstance(key, str):
            raise NotImplementedError("cupy.r_/c_ do not support string directives (nor does CuPy)")
        if not isinstance(key, tuple):
            key = (key,)
        objs, arrays, scalars = [], [], []
        for i, item in enumerate(key):
            if isinstance(item, slice):
                raise NotImplementedError("cupy.r_/c_ do not support slices (nor does CuPy)")
            if isinstance(item, str):
                if i != 0:
                    raise ValueError("special directives must be the first entry.")
                raise NotImplementedError("cupy.r_/c_ do not support string directives (nor does CuPy)")
            if type(item) in np.ScalarType:
                obj = cupy.array(item, ndmin=self.ndmin)
                scalars.append(i)
            else:
                obj = cupy.array(item, copy=False, ndmin=self.ndmin)
                if self.ndmin > 1:
                    ndim = cupy.array(item, copy=False).ndim
                    if self.trans1d != -1 and ndim < self.ndmin:
                        obj = self._moved(obj, ndim, self.ndmin, self.trans1d)
                arrays.append(obj)
            objs.append(obj)
        dtype = cupy.result_type(*arrays, *[key[i] for i in scalars])
        for i in scalars:
            objs[i] = objs[i].astype(dtype)
        return cupy.concatenate(tuple(objs), axis=self.axis)

    def __len__(self) -> int:
        return 0


class RClass(AxisConcatenator):
    """``cupy.r_``: concatenation along the first axis."""

    def __init__(self) -> None:
        super().__init__()


class CClass(AxisConcatenator):
    """``cupy.c_``: 1-d inputs stacked as columns (the last axis, at least 2-d)."""

    def __init__(self) -> None:
        super().__init__(-1, ndmin=2, trans1d=0)


r_ = RClass()
c_ = CClass()


def mask_indices(n: int, mask_func: Any, k: Any = 0) -> tuple:
    """``cupy.mask_indices``: the indices where ``mask_func(ones((n, n)), k)`` is nonzero
    (*mask_func* runs here, on a remote array: ``cupy.triu`` and the like are forwarded)."""
    cupy = proxy_cupy()
    return mask_func(cupy.ones((n, n), dtype=cupy.int8), k).nonzero()
