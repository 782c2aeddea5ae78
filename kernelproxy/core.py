"""``cupy._core``'s host-side helpers that code outside CuPy calls (its tests, libraries
built on CuPy): pure functions of shapes and sizes, answered here without the pool."""

from __future__ import annotations

import math
import operator
import types
from collections.abc import Sequence
from typing import Any

from .ndarray import Flags

__all__ = ["build_core_modules"]


def get_size(size: Any) -> tuple:
    """A ``size`` argument (None, an int or a sequence of ints) as a shape tuple."""
    if size is None:
        return ()
    if isinstance(size, Sequence):
        return tuple(size)
    try:
        return (operator.index(size),)
    except TypeError:
        raise ValueError("size should be None, collections.abc.Sequence, or int") from None


def build_core_modules() -> dict[str, types.ModuleType]:
    """``cupy._core``, ``cupy._core.internal`` and ``cupy._core.flags`` (the class of
    ``ndarray.flags``)."""
    core = types.ModuleType("cupy._core")
    internal = types.ModuleType("cupy._core.internal")
    internal.prod = lambda shape: math.prod(shape)
    flags = types.ModuleType("cupy._core.flags")
    flags.Flags = Flags
    core.__path__ = []
    core.__dict__.update(get_size=get_size, internal=internal, flags=flags)
    return {"cupy._core": core, "cupy._core.internal": internal, "cupy._core.flags": flags}
