"""Differential tests: ufuncs as objects (their methods and attributes) and the
functions forwarded beside them (windows, cond, trim_zeros, ...)."""

from __future__ import annotations

import numpy as np
import pytest


def _data(xp, dtype="float64"):
    return xp.asarray([[0.5, 1.0, 2.0], [3.0, 4.5, 0.25]], dtype=dtype)


# ---------------------------------------------------------------- ufunc objects and their methods


@pytest.mark.parametrize("name", ["add", "multiply", "maximum", "logical_or", "bitwise_xor"])
def test_ufunc_methods(same, name):
    ints = lambda xp: xp.asarray([[1, 2, 3], [4, 5, 6]], dtype="int64")  # noqa: E731
    same(lambda xp: getattr(xp, name).reduce(ints(xp)))
    same(lambda xp: getattr(xp, name).reduce(ints(xp), axis=1, keepdims=True))
    same(lambda xp: getattr(xp, name).accumulate(ints(xp), axis=1))
    same(lambda xp: getattr(xp, name).outer(ints(xp)[0], ints(xp)[1]))
    same(lambda xp: getattr(xp, name).reduceat(xp.arange(8), [0, 4, 1, 6]))


def test_ufunc_at_and_attributes(same, cp, ref):
    def at(xp):
        a = xp.zeros(6)
        xp.add.at(a, xp.asarray([0, 0, 3, 5]), 1.5)
        xp.negative.at(a, xp.asarray([3]))
        return a
    same(at)
    same(lambda xp: xp.add.reduce(_data(xp), axis=None))
    assert isinstance(cp.add, cp.ufunc) and repr(cp.add) == "<ufunc 'cupy_add'>"
    for name in ("add", "sin", "divmod", "isnan"):
        mine, theirs = getattr(cp, name), getattr(ref, name)
        assert (mine.nin, mine.nout, mine.nargs) == (theirs.nin, theirs.nout, theirs.nargs)
        assert mine.__name__ == f"cupy_{name}"   # as CuPy names its ufuncs
    assert cp.add.identity == 0 and cp.multiply.identity == 1
    with pytest.raises(ValueError, match="binary"):   # at the call, as NumPy and CuPy do
        cp.sin.reduce(cp.arange(3.0))
    with pytest.raises(TypeError):
        cp.add.at(np.zeros(3), [0], 1)


def test_more_forwarded_functions(same):
    same(lambda xp: xp.kaiser(7, 3.0))
    same(lambda xp: xp.hamming(5) + xp.hanning(5) + xp.bartlett(5) + xp.blackman(5))
    same(lambda xp: xp.linalg.cond(xp.eye(3) + 0.25))
    same(lambda xp: xp.trim_zeros(xp.asarray([0, 0, 1, 2, 0])))
    same(lambda xp: xp.append(xp.arange(3), xp.arange(2)))
    same(lambda xp: xp.delete(xp.arange(6).reshape(2, 3), 1, axis=1))
    same(lambda xp: xp.resize(xp.arange(3), (2, 4)))
    same(lambda xp: xp.interp(xp.asarray([0.5, 1.5]), xp.arange(3.0), xp.asarray([0.0, 10.0, 20.0])))
    same(lambda xp: xp.diag_indices_from(xp.zeros((3, 3))))
    same(lambda xp: xp.ix_(xp.arange(2), xp.arange(3)))
    same(lambda xp: xp.real_if_close(xp.asarray([1 + 0j, 2 + 0j])))
