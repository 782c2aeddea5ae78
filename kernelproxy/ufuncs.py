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

__all__ = ["ufunc", "make_ufunc", "special_ufunc_name"]


def _session() -> Any:
    from .modules import active_session
    return active_session()


class ufunc:
    """A universal function of the remote device (``cupy.ufunc``); *name* is its
    allow-listed name (``add``, ``cupyx.scipy.special.gamma``)."""

    def __init__(self, name: str, reference: np.ufunc) -> None:
        self.name = name
        # CuPy's own ufuncs are named so: cupy_add, cupyx_scipy_special_gamma
        self.__name__ = name.replace(".", "_") if "." in name else f"cupy_{name}"
        self.nin, self.nout, self.nargs = reference.nin, reference.nout, reference.nargs
        self.identity = reference.identity
        self._types: list[str] | None = None
        self.__doc__ = reference.__doc__
        self._want = api.FUNCTIONS[name]
        self._label = name if "." in name else f"cupy.{name}"

    @property
    def types(self) -> list[str]:
        """The device's loops (``'ff->f'``), asked of the pool once: CuPy's differ from
        NumPy's for some ufuncs."""
        if self._types is None:
            session = _session()
            self._types = [str(t) for t in session.value(session.submit(
                m.KIND_CUDA, api.VALUE, None, "ufunc.types", None, [self.name], {},
                f"{self._label}.types"))]
        return list(self._types)

    @property
    def ntypes(self) -> int:
        return len(self.types)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        result = nd.call(_session(), m.KIND_FUNCTION, self.name, self._want, None, args, kwargs,
                         self._label)
        if len(args) > self.nin or kwargs.get("out") is not None:
            return result   # the caller's own outputs, as given
        template = nd.subclass_template(args)   # CuPy's rule: the first subclass input
        return result if template is None else nd.as_subclass(result, type(template), template)

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


_SPECIAL = "cupyx.scipy.special."


def make_ufunc(name: str) -> ufunc | None:
    """The proxy ufunc for an allow-listed name that is a ufunc in NumPy, or one of
    :data:`api.SPECIAL_UFUNCS` (its ``nin``, ``types``, ... SciPy's, where the client has
    SciPy; a plain function otherwise), else None."""
    if name.startswith(_SPECIAL):
        leaf = name[len(_SPECIAL):]
        if leaf not in api.SPECIAL_UFUNCS:
            return None
        try:
            import scipy.special
        except ImportError:
            return None
        reference = getattr(scipy.special, leaf, None)
    else:
        reference = getattr(np, name, None)
    if not isinstance(reference, np.ufunc) or name not in api.FUNCTIONS:
        return None
    return ufunc(name, reference)


def special_ufunc_name(name: str) -> str | None:
    """The allow-listed name of the ``cupyx.scipy.special`` ufunc a NumPy ufunc named
    *name* (SciPy's ``gamma``) dispatches to, as ``cupy.ndarray.__array_ufunc__`` finds it."""
    return _SPECIAL + name if name in api.SPECIAL_UFUNCS else None
