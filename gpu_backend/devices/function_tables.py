"""A device's tables of what a client may name: allow-listed names resolved to callables once,
at start-up, from the device's own modules (some bound on first use), Python's operators,
and the library classes a session may keep objects of (signal systems, sparse matrices,
sparse LU factors). A client's name is only ever a key into these tables."""

from __future__ import annotations

import importlib
import operator
from types import ModuleType
from typing import Any, Callable

from ..protocol import api

__all__ = ["OPERATOR_FUNCTIONS", "resolve_table", "lazy_functions", "signal_object_class",
           "sparse_object_class", "sparse_lu_class"]


def _len(x: Any) -> int:
    return len(x)


def _iter_count(x: Any) -> int:
    """What ``iter(x)`` needs from the pool: the length, with the device's own error."""
    iter(x)
    return len(x)


#: Operator names (api.OPERATORS) to the functions that implement them.
OPERATOR_FUNCTIONS: dict[str, Callable[..., Any]] = {
    name: getattr(operator, name)
    for name in api.OPERATORS
    if hasattr(operator, name) and name != "index"
}
OPERATOR_FUNCTIONS.update(
    divmod=divmod, float=float, int=int, bool=bool, complex=complex, index=operator.index,
    len=_len, iter=_iter_count, repr=repr, str=str, format=format,
)


def resolve_table(modules: dict[str, ModuleType | None], extra: dict[str, Callable]) -> dict[str, Callable]:
    """Map each allow-listed function name to the device's callable.

    *modules* maps the prefixes of api.FUNCTIONS ("" for the top level,
    "linalg.", ...) to modules; *extra* supplies names a module lacks.
    Names found in neither are simply absent: calling them is refused.
    """
    table: dict[str, Callable] = {}
    for qualname in api.FUNCTIONS:
        prefix, _, leaf = qualname.rpartition(".")
        module = modules.get(prefix + "." if prefix else "")
        fn = extra.get(qualname)
        if fn is None and module is not None:
            fn = module.__dict__.get(leaf)
        elif fn is None and prefix in api.UFUNCS:   # a ufunc's method: add.reduce, ...
            owner = extra.get(prefix) or (modules.get("") or ModuleType("")).__dict__.get(prefix)
            fn = getattr(owner, leaf, None)
        if callable(fn):
            table[qualname] = fn
    return table


class _LazyFunction:
    """An allow-listed function of a module the worker imports only when the function is
    first called (``cupyx.scipy.signal`` and its kin take seconds to import). The module
    is the device's choice, never the client's."""

    __slots__ = ("qualname", "module", "leaf", "fn")

    def __init__(self, qualname: str, module: str, leaf: str) -> None:
        self.qualname, self.module, self.leaf, self.fn = qualname, module, leaf, None

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        fn = self.fn
        if fn is None:
            fn = self.resolved()
        return fn(*args, **kwargs)

    def resolved(self) -> Any:
        """The function itself (its module imported now if it was not yet)."""
        if self.fn is None:
            try:
                self.fn = getattr(importlib.import_module(self.module), self.leaf)
            except (ImportError, AttributeError) as exc:
                raise NotImplementedError(
                    f"{self.qualname} is not available on this pool's device "
                    f"({type(exc).__name__}: {exc})") from None
        return self.fn


def lazy_functions(modules: dict[str, str]) -> dict[str, Callable]:
    """The allow-listed names under each prefix of *modules* (prefix -> module name), each
    bound on first use; for :func:`resolve_table`'s *extra*."""
    table: dict[str, Callable] = {}
    for qualname in api.FUNCTIONS:
        prefix, _, leaf = qualname.rpartition(".")
        module = modules.get(prefix + ".")
        if module is not None:
            table[qualname] = _LazyFunction(qualname, module, leaf)
    return table


def signal_object_class(module: str, name: str) -> tuple[Callable, type | tuple] | None:
    """(constructor, type) of the ``signal.*`` class *name* of :data:`api.OBJECTS`, from the
    device's signal module (``cupyx.scipy.signal`` or SciPy's): a system of any of
    :data:`api.LTI_CLASSES` is an ``lti`` or a ``dlti``; a ``ZoomFFT`` is a ``CZT``. None
    when the name is not one of these or the module is missing."""
    kind = name.removeprefix("signal.")
    if kind == name or f"signal.{kind}" not in api.OBJECTS:
        return None
    try:
        signal = importlib.import_module(module)
    except ImportError:
        return None
    if kind in api.LTI_CLASSES:
        return getattr(signal, kind), (signal.lti, signal.dlti)
    return getattr(signal, kind), signal.CZT


def sparse_object_class(module: str, name: str) -> tuple[Callable, type] | None:
    """(constructor, type) of the ``sparse.*`` class *name* of :data:`api.OBJECTS`, from the
    device's sparse module (``cupyx.scipy.sparse`` or SciPy's): any of them is a
    ``spmatrix`` (``tocsc()`` of a CSR matrix is a CSC one). None when the name is not one
    of these or the module is missing."""
    kind = name.removeprefix("sparse.")
    if kind == name or (kind not in api.SPARSE_CLASSES and kind not in api.SPARSE_FUNCTIONS):
        return None
    try:
        sparse = importlib.import_module(module)
    except ImportError:
        return None
    make = getattr(sparse, kind)
    if kind in api.SPARSE_FUNCTIONS:   # a function that makes a matrix: only a matrix
        make = _making(make, sparse.spmatrix, f"cupyx.scipy.sparse.{kind}")
    return make, sparse.spmatrix


def sparse_lu_class(module: str, name: str) -> tuple[Callable, type] | None:
    """(constructor, type) for ``sparse.linalg.splu``/``spilu`` and the ``SuperLU`` they
    make, from the device's sparse linalg module (CuPy's or SciPy's). A ``SuperLU`` is made
    only by them: named directly, its constructor refuses."""
    kind = name.removeprefix("sparse.linalg.")
    if kind == name or (kind not in api.SPARSE_LU_FUNCTIONS and kind != "SuperLU"):
        return None
    try:
        linalg = importlib.import_module(module)
    except ImportError:
        return None
    if kind == "SuperLU":
        def refuse(*args: Any, **kwargs: Any) -> Any:
            raise TypeError("a SuperLU is made by cupyx.scipy.sparse.linalg.splu or spilu")
        return refuse, linalg.SuperLU
    return (_making(getattr(linalg, kind), linalg.SuperLU,
                    f"cupyx.scipy.sparse.linalg.{kind}", "a SuperLU"), linalg.SuperLU)


def _making(function: Callable, kind: type, label: str, what: str = "a sparse matrix") -> Callable:
    def made(*args: Any, **kwargs: Any) -> Any:
        result = function(*args, **kwargs)
        if not isinstance(result, kind):
            raise TypeError(f"{label} gave a {type(result).__name__}, not {what}")
        return result
    return made
