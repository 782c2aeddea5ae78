"""``cupy.poly1d`` and the polynomial routines that accept one, for a remote GPU.

A ``poly1d`` is a small client object around one remote array of coefficients (highest
power first), as CuPy's is around a device array: its arithmetic is the pool's
``polyadd``/``polysub``/``polymul``/``convolve`` on those coefficients, issued as ops
without a round trip. The routines ``polyadd``, ``polysub``, ``polymul``, ``polyval``,
and ``roots`` take a ``poly1d`` wherever CuPy's do: here they pass its
coefficients to the pool and wrap a result in a ``poly1d`` where CuPy would (a result of
polynomials is a polynomial).
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

from gpu_backend.protocol import api
from gpu_backend.protocol import messages as m

from . import ndarray as nd
from .state import active_session, proxy_cupy

__all__ = ["poly1d", "POLY_ROUTINES"]


def _pool(name: str, *args: Any) -> Any:
    return nd.call(active_session(), m.KIND_FUNCTION, name, api.FUNCTIONS[name], None, args,
                   {}, f"cupy.{name}")


def _is_scalar(x: Any) -> bool:
    return np.isscalar(x)


class poly1d:
    """A one-dimensional polynomial (:class:`numpy.poly1d`'s counterpart, as CuPy's).

    Args:
        c_or_r: coefficients in decreasing powers, or roots when ``r`` is true.
        r: whether ``c_or_r`` are the roots.
        variable: the variable's name when printed (default ``x``).
    """

    __hash__ = None  # type: ignore[assignment]

    def __init__(self, c_or_r: Any, r: bool = False, variable: str | None = None) -> None:
        cupy = proxy_cupy()
        if isinstance(c_or_r, (np.poly1d, poly1d)):
            self._coeffs = cupy.asarray(c_or_r.coeffs)
            self._variable = variable if variable is not None else c_or_r.variable
            self._trimmed = True
            return
        if r:
            c_or_r = _pool("poly", c_or_r)
        c_or_r = cupy.atleast_1d(c_or_r)
        if c_or_r.ndim > 1:
            raise ValueError("Polynomial must be 1d only.")
        self._coeffs = c_or_r
        self._trimmed = False
        self._variable = "x" if variable is None else variable

    # -- coefficients and their names
    @property
    def coeffs(self) -> Any:
        """The coefficients, leading zeros trimmed (at least one: ``[0.]``)."""
        if not self._trimmed:
            cupy = proxy_cupy()
            trimmed = cupy.trim_zeros(self._coeffs, trim="f")
            if trimmed.size == 0:
                trimmed = cupy.array([0.0], self._coeffs.dtype)
            self._coeffs, self._trimmed = trimmed, True
        return self._coeffs

    @coeffs.setter
    def coeffs(self, value: Any) -> None:
        if value is not self._coeffs:
            raise AttributeError("Cannot set attribute")

    c = coef = coefficients = coeffs

    @property
    def variable(self) -> str:
        return self._variable

    @property
    def order(self) -> int:
        return self.coeffs.size - 1

    o = order

    @property
    def roots(self) -> Any:
        return _pool("roots", self._coeffs)

    r = roots

    # -- conversions
    def __cupy_get_ndarray__(self) -> Any:
        return self.coeffs

    def __array__(self, dtype: Any = None, copy: Any = None) -> Any:
        raise TypeError("Implicit conversion to a NumPy array is not allowed. "
                        "Please use `.get()` to construct a NumPy array explicitly.")

    def get(self, stream: Any = None) -> np.poly1d:
        """A :class:`numpy.poly1d` of the coefficients, copied from the pool."""
        return np.poly1d(self.coeffs.get(), variable=self.variable)

    def set(self, polyin: Any, stream: Any = None) -> None:
        """Copy a :class:`numpy.poly1d`'s coefficients into this one's array."""
        if not isinstance(polyin, np.poly1d):
            raise TypeError("Only numpy.poly1d can be set to cupy.poly1d")
        self._variable = polyin.variable
        self.coeffs.set(polyin.coeffs)

    def __repr__(self) -> str:
        return repr(self.get())

    def __str__(self) -> str:
        return str(self.get())

    def __len__(self) -> int:
        return self.order

    def __iter__(self) -> Any:
        return iter(self.coeffs)

    # -- evaluation and arithmetic
    def __call__(self, val: Any) -> Any:
        return polyval(self.coeffs, val)

    def __neg__(self) -> "poly1d":
        return poly1d(-self.coeffs)

    def __pos__(self) -> "poly1d":
        return self

    def __mul__(self, other: Any) -> Any:
        if _is_scalar(other):   # poly1d * scalar: the coefficients scaled (CuPy's dtype rule)
            return poly1d(self.coeffs * other)
        return polymul(self, other)

    def __rmul__(self, other: Any) -> Any:
        _refuse_numpy_scalar(other, "multiplication")
        if _is_scalar(other):   # a Python scalar takes the coefficients' type, as in CuPy
            other = self._coeffs.dtype.type(other)
        return polymul(other, self)

    def __add__(self, other: Any) -> Any:
        return polyadd(self, other)

    def __radd__(self, other: Any) -> Any:
        _refuse_numpy_scalar(other, "addition")
        return polyadd(other, self)

    def __sub__(self, other: Any) -> Any:
        return polysub(self, other)

    def __rsub__(self, other: Any) -> Any:
        _refuse_numpy_scalar(other, "subtraction")
        return polysub(other, self)

    def __pow__(self, val: Any, modulo: Any = None) -> "poly1d":
        if not _is_scalar(val) or int(val) != val or val < 0:
            raise ValueError("Power to non-negative integers only.")
        if not isinstance(val, numbers.Integral):
            raise TypeError("float object cannot be interpreted as an integer")
        base = self.coeffs
        kind = base.dtype.kind
        if kind == "c":
            base = base.astype(np.complex128, copy=False)
        elif kind == "f" or base.dtype == np.uint64:
            base = base.astype(np.float64, copy=False)
        else:
            base = base.astype(np.promote_types(base.dtype, int), copy=False)
        return poly1d(_power(base, int(val)))

    def __truediv__(self, other: Any) -> "poly1d":
        if _is_scalar(other):
            return poly1d(self.coeffs / other)
        raise NotImplementedError("poly1d / polynomial: polynomial division is not implemented")

    def __eq__(self, other: Any) -> bool:   # type: ignore[override]
        if not isinstance(other, poly1d):
            raise NotImplementedError
        if self.coeffs.shape != other.coeffs.shape:
            return False
        return bool((self.coeffs == other.coeffs).all())

    def __ne__(self, other: Any) -> bool:   # type: ignore[override]
        if not isinstance(other, poly1d):
            raise NotImplementedError
        return not self.__eq__(other)

    def __getitem__(self, power: int) -> Any:
        if 0 <= power < self._coeffs.size:
            return self._coeffs[-power - 1]
        return 0

    def __setitem__(self, power: int, value: Any) -> None:
        if power < 0:
            raise ValueError("Negative powers are not supported.")
        if power >= self._coeffs.size:
            self._coeffs = proxy_cupy().pad(self._coeffs, (power - (self._coeffs.size - 1), 0))
        self._coeffs[-power - 1] = value

    def integ(self, m: int = 1, k: Any = 0) -> Any:
        raise NotImplementedError("cupy.poly1d.integ is not implemented (nor is it in CuPy)")

    def deriv(self, m: int = 1) -> Any:
        raise NotImplementedError("cupy.poly1d.deriv is not implemented (nor is it in CuPy)")


def _refuse_numpy_scalar(other: Any, operation: str) -> None:
    """``numpy_scalar <op> poly1d``: refused, as CuPy refuses it (NumPy's scalar would
    otherwise decide the result's type)."""
    if isinstance(other, np.generic):
        raise TypeError(f"Numpy scalar and poly1d {operation} is not supported")


def _power(x: Any, n: int) -> Any:
    """``x`` convolved with itself ``n`` times (by squaring: log n convolutions)."""
    if n == 0:
        return 1
    convolve = proxy_cupy().convolve
    result = None
    while True:
        if n & 1:
            result = x if result is None else convolve(result, x)
        n >>= 1
        if not n:
            return result
        x = convolve(x, x)


def _coefficients(x: Any) -> Any:
    """A routine's argument as the pool sees it: a ``poly1d`` is its (untrimmed) array."""
    return x._coeffs if isinstance(x, poly1d) else x


def _polynomial_routine(name: str):
    """``polyadd``/``polysub``/``polymul``: a ``poly1d`` in, a ``poly1d`` out."""
    def routine(a1: Any, a2: Any) -> Any:
        out = _pool(name, _coefficients(a1), _coefficients(a2))
        if isinstance(a1, poly1d) or isinstance(a2, poly1d):
            return poly1d(out)
        return out

    routine.__name__ = routine.__qualname__ = name
    routine.__module__ = "cupy"
    return routine


polyadd = _polynomial_routine("polyadd")
polysub = _polynomial_routine("polysub")
polymul = _polynomial_routine("polymul")


def polyval(p: Any, x: Any) -> Any:
    """``cupy.polyval``: *p* at *x*; a ``poly1d`` *x* gives the composed ``poly1d``."""
    if isinstance(p, poly1d):
        p = p.coeffs
    if isinstance(x, poly1d):
        if not isinstance(p, nd.ndarray) or p.ndim == 0:
            raise TypeError("p must be 1d ndarray or poly1d object")
        if p.ndim > 1:
            raise ValueError("p must be 1d array")
        cupy = proxy_cupy()
        dtype = np.result_type(x.coeffs.dtype, 1)
        result, power = poly1d(cupy.array([0], dtype=dtype)), poly1d(cupy.array([1], dtype=dtype))
        for c in p[::-1]:   # Horner from the lowest power, as CuPy does
            result = result + power * c
            power = power * x
        return result
    return _pool("polyval", p, x)


def roots(p: Any) -> Any:
    """``cupy.roots`` of an array or a ``poly1d``."""
    return _pool("roots", p.coeffs if isinstance(p, poly1d) else p)


#: The ``cupy`` names this module answers (they replace the plain forwarded functions).
POLY_ROUTINES = {"poly1d": poly1d, "polyadd": polyadd, "polysub": polysub, "polymul": polymul,
                 "polyval": polyval, "roots": roots}
