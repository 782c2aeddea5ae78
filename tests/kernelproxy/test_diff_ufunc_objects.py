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


def test_types_are_the_devices_loops(cp, session):
    """``types`` comes from the pool's own ufunc: NumPy's on the NumPy device, CuPy's (no
    object or long-double loops, ``divide``'s ints to float) on a GPU."""
    from kernelproxy.modules import build_modules
    gamma = build_modules()["cupyx.scipy.special"].gamma
    on_numpy = session.device.get("kind") == "numpy"
    for ufunc, reference in ((cp.sin, np.sin), (cp.add, np.add), (cp.divide, np.divide),
                             (gamma, None)):
        types = ufunc.types
        assert types and all(isinstance(t, str) and "->" in t for t in types)
        assert ufunc.ntypes == len(types) and ufunc.types == types
        if on_numpy and reference is not None:
            assert types == list(reference.types)
        elif not on_numpy:
            assert not any(c in t for t in types for c in "OgG")
    if not on_numpy:
        assert "qq->d" in cp.divide.types


def test_types_of_a_name_that_is_no_ufunc_is_refused(cp, session):
    from gpu_backend.protocol import api
    from gpu_backend.protocol import messages as m
    for name in ("zeros", "os.system", 3):
        with pytest.raises(TypeError, match="not a ufunc"):
            session.value(session.submit(m.KIND_CUDA, api.VALUE, None, "ufunc.types", None, [name]))
    assert float(cp.sin(cp.zeros(2)).sum()) == 0.0
