"""Subclasses of the remote ``cupy.ndarray``, typed as CuPy types them.

A ufunc's or operator's result takes the type of its first input of a subclass and is
finalized from it (``__array_finalize__``); a subclass instance's views are of its type
and copies are plain arrays (CuPy makes views with ``view()``, which keeps the type). A
result becomes an instance of the subclass by taking over the remote array's handle.
Plain arrays never reach these helpers' slow parts: callers check ``type(x) is ndarray``
first.
"""

from __future__ import annotations

import weakref
from typing import Any

from .issue import array_class

__all__ = ["as_subclass", "subclass_template", "of_subclass", "view_of_subclass"]


def as_subclass(arr: Any, cls: type, template: Any) -> Any:
    """*arr* (a fresh result, or a tuple of them) as an instance of *cls*, finalized from
    *template*: the new object takes over the remote array's handle."""
    if type(arr) is tuple:
        return tuple(as_subclass(a, cls, template) for a in arr)
    plain = array_class()
    if type(arr) is not plain or cls is plain or arr._h is None:
        return arr
    obj = object.__new__(cls)
    obj._s, obj._h, obj._m = arr._s, arr._h, arr._m
    arr._s.arrays[arr._h] = weakref.ref(obj)
    arr._h = None
    obj.__array_finalize__(template)
    return obj


def subclass_template(args: tuple) -> Any:
    """The first input of a subclass, whose type a ufunc's result takes (CuPy's rule);
    None when every array input is a plain one."""
    plain = array_class()
    for a in args:
        if type(a) is not plain and isinstance(a, plain):
            return a
    return None


def of_subclass(result: Any, operands: tuple) -> Any:
    """An operator's or ufunc's *result* typed by its *operands*."""
    template = subclass_template(operands)
    return result if template is None else as_subclass(result, type(template), template)


def view_of_subclass(result: Any, source: Any) -> Any:
    """A method's, attribute's or index's *result* on an instance of a subclass: a view of
    its memory is of the subclass, a copy stays plain. Which one it is, the pool says
    (``base``: two round trips, paid by subclasses only)."""
    if type(result) is not array_class():
        return result
    owner = source.base
    owner = source if owner is None else owner
    if result.base is owner:
        return as_subclass(result, type(source), source)
    return result
