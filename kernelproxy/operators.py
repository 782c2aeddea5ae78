"""A remote array's Python operators (``+``, ``@``, ``<``, ``==``, their reflected and
in-place forms, ``divmod``, unary ``-``, ``+``, ``abs``, ``~``), installed on the class by
:func:`install_operators`. A subclass operand types the result (kernelproxy.subclasses).

Each forwards as the ``operator`` function of its name. An operand whose type sets
``__array_ufunc__ = None`` (a StateSpace system) takes the operation itself, as with
CuPy's arrays; arrays and scalars skip that lookup (~0.15 µs an op). ``==``/``!=`` with an
object that is neither a scalar nor an array answer all False / all True, CuPy's rule. A
NumPy array or a list as an operand is refused at once, as CuPy refuses it (ufunc_operands).
"""

from __future__ import annotations

import numpy as np

from gpu_backend.protocol import api
from gpu_backend.protocol import messages as m

from . import caller, early_replay, held_ops
from .issue import OP_SYMBOLS as _OP_SYMBOLS
from .issue import OPERATOR_LABELS as _OPERATOR_LABELS
from .issue import UFUNC_SCALAR_TYPES as _UFUNC_SCALAR_TYPES
from .issue import call
from .issue import operator as _operator
from .subclasses import of_subclass
from .ufunc_operands import refuse_host_operand

__all__ = ["install_operators"]

_ARITHMETIC = ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul",
               "and_", "or_", "xor", "lshift", "rshift")


def _applied(name: str, cls: type, reflected: bool):
    """``__<name>__`` (or ``__r<name>__``): an operand whose type sets ``__array_ufunc__ =
    None`` takes the operation itself; a subclass operand types the result."""
    label = _OPERATOR_LABELS[name]

    def method(self, other):
        kind = type(other)
        if kind is not cls and kind not in _UFUNC_SCALAR_TYPES:
            if getattr(kind, "__array_ufunc__", 0) is None:
                return NotImplemented
            refuse_host_operand(name, other, 0 if reflected else 1)   # a NumPy array, a list
        operands = (other, self) if reflected else (self, other)
        run = self._s._run
        if run is not None:   # a held stretch answered from its template (stretch_templates.py)
            result = run.operator(name, operands, label)
            if result is not None:
                if type(self) is cls and (kind is cls or kind in _UFUNC_SCALAR_TYPES):
                    return result
                return of_subclass(result, operands)
        result = _operator(name, operands, self._s)
        if type(self) is cls and (kind is cls or kind in _UFUNC_SCALAR_TYPES):
            return result
        return of_subclass(result, operands)

    return method


def _plain(name: str, reflected: bool):
    """``__<name>__`` for an array and an array or scalar, without asking a held stretch's
    template: the compiled method's way on where the template's check failed (held_ops)."""
    if reflected:
        def method(self, other):
            return _operator(name, (other, self), self._s)
    else:
        def method(self, other):
            return _operator(name, (self, other), self._s)
    return method


def _binary(name: str, cls: type):
    def inplace(self, other):
        if type(other) is not cls and type(other) not in _UFUNC_SCALAR_TYPES:
            refuse_host_operand(name, other, 1)
        if name == "matmul" and self._s.device.get("kind") == "cupy":
            # cupy.ndarray has no __imatmul__: Python rebinds to ``self @ other`` there
            return _operator("matmul", (self, other), self._s)
        _operator("i" + name.rstrip("_"), (self, other), self._s)
        return self

    return _applied(name, cls, False), _applied(name, cls, True), inplace


def _unary(name: str, cls: type):
    def method(self):
        result = _operator(name, (self,), self._s)
        return result if type(self) is cls else of_subclass(result, (self,))

    method.__name__ = f"__{name}__"
    return method


def _equality(name: str, fill: str, cls: type):
    """``==``/``!=``: arrays and scalars forwarded at once; ``None``, ``Ellipsis``,
    ``object()`` (default ``__eq__``) answered as CuPy does, without asking the pool to
    compare what it cannot be sent."""
    compare = _applied(name, cls, False)
    label = f"operator {_OP_SYMBOLS[name]}"

    def method(self, other):
        kind = type(other)
        if kind is cls or kind in _UFUNC_SCALAR_TYPES:
            result = _operator(name, (self, other), self._s)
            return result if type(self) is cls else of_subclass(result, (self,))
        if other is None or (kind.__eq__ is object.__eq__
                             and (name == "eq" or kind.__ne__ is object.__ne__)):
            return call(self._s, m.KIND_FUNCTION, fill, api.ARRAY, None, (self,), {"dtype": bool}, label)
        return compare(self, other)

    method.__name__ = f"__{name}__"
    return method


def install_operators(cls: type) -> None:
    for name in _ARITHMETIC:
        dunder = name.rstrip("_")
        forward, reflected, inplace = _binary(name, cls)
        setattr(cls, f"__{dunder}__", forward)
        setattr(cls, f"__r{dunder}__", reflected)
        setattr(cls, f"__i{dunder}__", inplace)
    for name in ("lt", "le", "gt", "ge"):
        setattr(cls, f"__{name}__", _applied(name, cls, False))
    cls.__divmod__, cls.__rdivmod__ = _applied("divmod", cls, False), _applied("divmod", cls, True)
    for name in ("neg", "pos", "abs", "invert"):
        setattr(cls, f"__{name}__", _unary(name, cls))
    cls.__eq__ = _equality("eq", "zeros_like", cls)
    cls.__ne__ = _equality("ne", "ones_like", cls)
    # the operators a held stretch's template answers, in C where it is built (held_ops)
    held = [(f"__{r}{name.rstrip('_')}__", name, _OPERATOR_LABELS[name], bool(r), _plain(name, bool(r)))
            for name in _ARITHMETIC for r in ("", "r")]
    held += [(f"__{name}__", name, _OPERATOR_LABELS[name], False, _plain(name, False))
             for name in ("lt", "le", "gt", "ge")]
    held_ops.accelerate(cls, held, (_UFUNC_SCALAR_TYPES, caller._OWN_CODE, caller._own,
                                    early_replay.send, np.generic))
