"""``cupy.ufunc`` for a remote GPU: ``cupy.add`` and its kin as objects with methods.

A call, ``reduce``, ``accumulate``, ``outer``, ``reduceat`` and ``at`` are each one
op on the pool (``add.reduce`` is its own allow-listed name: the server resolves it
to the device's ufunc's method at start-up, like every other name). ``nin``, ``nout``,
``identity`` are NumPy's for the ufunc of the same name, which CuPy's ufuncs mirror;
``types`` are the pool device's own loops (CuPy's differ from NumPy's for some).
:func:`array_ufunc` is a remote array's ``__array_ufunc__``: NumPy's ufuncs given one
run as the cupy ufunc of their name.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gpu_backend.protocol import api
from gpu_backend.protocol import messages as m

from .issue import UFUNC_SCALAR_TYPES, array_class, call
from .subclasses import of_subclass
from .ufunc_operands import refuse_host_operands
from .state import active_session, proxy_cupy

__all__ = ["ufunc", "make_ufunc", "special_ufunc_name", "array_ufunc"]


def _session() -> Any:
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
        refuse_host_operands(self.name, args[:self.nin])   # CuPy's TypeError, at the call
        result = call(_session(), m.KIND_FUNCTION, self.name, self._want, None, args, kwargs,
                         self._label)
        if len(args) > self.nin or kwargs.get("out") is not None:
            return result   # the caller's own outputs, as given
        return of_subclass(result, args)   # CuPy's rule: the first subclass input's type

    def _method(self, method: str, args: tuple, kwargs: dict) -> Any:
        qualname = f"{self.name}.{method}"
        if self.nin != 2 and method != "at":   # raised at the call, as NumPy and CuPy do
            raise ValueError(f"{method} only supported for binary functions")
        if qualname not in api.FUNCTIONS:
            raise AttributeError(f"{self._label}.{method} is not available on gpu-workbench's "
                                 "remote GPU")
        return call(_session(), m.KIND_FUNCTION, qualname, api.FUNCTIONS[qualname], None,
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
        if not isinstance(a, array_class()):
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


#: The methods of a NumPy ufunc that a remote array takes (``np.add.outer(x, y)``).
_NUMPY_UFUNC_METHODS = frozenset("__call__ outer at reduce accumulate reduceat".split())
#: Ufuncs whose 0-d NumPy array operands CuPy's ``__array_ufunc__`` turns into Python scalars.
_COMPARISONS = frozenset("greater greater_equal less less_equal equal not_equal".split())


def array_ufunc(self: Any, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
    """A NumPy ufunc given a remote array runs as the cupy ufunc of that name, remotely.

    The pool calls ``cupy.<name>`` itself, so what ``cupy.ndarray.__array_ufunc__``
    does before that call (cupy/_core/core.pyx) is done here:

    * ``out`` (always a tuple here) must hold exactly one array, which is passed on
      alone: ``ValueError`` otherwise, as in CuPy (so ``np.modf(x, out=(a, b))``
      is refused; ``cupy.modf(x, out=(a, b))`` is not affected);
    * operands must be arrays, NumPy arrays, or Python/NumPy scalars of the numeric
      types CuPy supports; anything else (a list, ...) gives ``NotImplemented``
      and NumPy raises ``TypeError``;
    * a 0-d NumPy array given to a comparison becomes a Python scalar
      (numpy/numpy#12142: ``np.int64(1) > x`` arrives here with ``array(1)``).

    Other NumPy arrays are *not* uploaded: CuPy makes no implicit host-to-device
    copy, and its ufuncs raise ``TypeError: Unsupported type <class 'numpy.ndarray'>``
    for them (CuPy's test_ndarray_ufunc.py::test_binary_mixed_op asserts it). So does
    this, at the call, whatever the pool's device (ufunc_operands).
    """
    name = ufunc.__name__
    want = api.FUNCTIONS.get(name)
    if want is None:   # SciPy's special ufuncs: cupyx.scipy.special's, as in CuPy
        name = special_ufunc_name(name) or name
        want = api.FUNCTIONS.get(name)
    if method not in _NUMPY_UFUNC_METHODS or want not in (api.ARRAY, api.MULTI):  # MULTI: modf, divmod
        return NotImplemented
    operands = inputs
    if "out" in kwargs:
        out = kwargs["out"]
        if len(out) != 1:
            raise ValueError("The 'out' parameter must have exactly one array value")
        operands = inputs + out
        kwargs["out"] = out[0]
    for x in operands:
        if not (isinstance(x, (array_class(), np.ndarray)) or type(x) in UFUNC_SCALAR_TYPES):
            return NotImplemented
    if name in _COMPARISONS:
        inputs = tuple(x.item() if isinstance(x, np.ndarray) and x.ndim == 0 else x
                       for x in inputs)
    if method != "__call__":   # np.add.outer(x, y) and the like: the cupy ufunc's method
        target = getattr(getattr(proxy_cupy(), name, None), method, None)
        return NotImplemented if target is None else target(*inputs, **kwargs)
    refuse_host_operands(name, inputs)
    result = call(self._s, m.KIND_FUNCTION, name, want, None, inputs, kwargs,
                  name if "." in name else f"cupy.{name}")
    return result if "out" in kwargs else of_subclass(result, inputs)
