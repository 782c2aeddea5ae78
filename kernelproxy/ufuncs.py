"""``cupy.ufunc`` for a remote GPU: ``cupy.add`` and its kin as objects with methods.

A call, ``reduce``, ``accumulate``, ``outer``, ``reduceat`` and ``at`` are each one
op on the pool (``add.reduce`` is its own allow-listed name: the server resolves it
to the device's ufunc's method at start-up, like every other name). ``nin``, ``nout``,
``identity``, ``types`` are NumPy's for the ufunc of the same name, which CuPy's
ufuncs mirror.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gpu_backend.protocol import api
from gpu_backend.protocol import messages as m

from . import ndarray as nd

__all__ = ["ufunc", "make_ufunc"]


def _session() -> Any:
    from .modules import active_session
    return active_session()


class ufunc:
    """A universal function of the remote device (``cupy.ufunc``)."""

    def __init__(self, name: str, reference: np.ufunc) -> None:
        self.name = name
        self.__name__ = f"cupy_{name}"   # CuPy's own ufuncs are named so
        self.nin, self.nout, self.nargs = reference.nin, reference.nout, reference.nargs
        self.identity = reference.identity
        self.types = list(reference.types)
        self.ntypes = len(self.types)
        self.__doc__ = reference.__doc__
        self._want = api.FUNCTIONS[name]
        self._label = f"cupy.{name}"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return nd.call(_session(), m.KIND_FUNCTION, self.name, self._want, None, args, kwargs,
                       self._label)

    def _method(self, method: str, args: tuple, kwargs: dict) -> Any:
        qualname = f"{self.name}.{method}"
        if self.nin != 2 and method != "at":   # raised at the call, as NumPy and CuPy do
            raise ValueError(f"{method} only supported for binary functions")
        if qualname not in api.FUNCTIONS:
            raise AttributeError(f"{self._label}.{method} is not available on gpu-workbench's "
                                 "remote GPU")
        return nd.call(_session(), m.KIND_FUNCTION, qualname, api.FUNCTIONS[qualname], None,
                       args, kwargs, f"{self._label}.{method}")

    def reduce(self, array: Any, *args: Any, **kwargs: Any) -> Any:
        return self._method("reduce", (array, *args), kwargs)

    def accumulate(self, array: Any, *args: Any, **kwargs: Any) -> Any:
        return self._method("accumulate", (array, *args), kwargs)

    def reduceat(self, array: Any, indices: Any, *args: Any, **kwargs: Any) -> Any:
        return self._method("reduceat", (array, indices, *args), kwargs)

    def outer(self, A: Any, B: Any, **kwargs: Any) -> Any:
        return self._method("outer", (A, B), kwargs)

    def at(self, a: Any, indices: Any, b: Any = None) -> None:
        if not isinstance(a, nd.ndarray):
            raise TypeError(f"{self._label}.at works in place on a cupy.ndarray")
        args = (a, indices) if b is None else (a, indices, b)
        return self._method("at", args, {})

    def __repr__(self) -> str:
        return f"<ufunc '{self.__name__}'>"


def make_ufunc(name: str) -> ufunc | None:
    """The proxy ufunc for an allow-listed name that is a ufunc in NumPy, else None."""
    reference = getattr(np, name, None)
    if not isinstance(reference, np.ufunc) or name not in api.FUNCTIONS:
        return None
    return ufunc(name, reference)
