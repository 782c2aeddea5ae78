"""Subclasses of ``cupy.ndarray`` (issue 9, from CuPy's core tests): made with their own
``__new__`` arguments, by ``view(type=...)``, and as results of ufuncs and operators whose
inputs include one, each finalized from its template as CuPy and NumPy do."""

from __future__ import annotations

import numpy as np
import pytest


@pytest.fixture
def C(cp):
    class C(cp.ndarray):
        def __new__(cls, *args, info=None, **kwargs):
            obj = super().__new__(cls, *args, **kwargs)
            obj.info = info
            return obj

        def __array_finalize__(self, obj):
            if obj is None:
                return
            self.info = getattr(obj, "info", None)

    return C


def test_a_subclass_made_with_its_own_arguments(cp, C):
    c = C((2, 3), np.float32, info=7)
    assert type(c) is C and c.info == 7 and c.shape == (2, 3) and c.dtype == np.float32
    c[...] = 1
    assert float(c.sum()) == 6


def test_view_as_a_subclass(cp, C):
    a = cp.arange(5, dtype="i").view("f")
    assert type(a) is cp.ndarray and a.dtype == np.float32
    for view in (cp.arange(5, dtype="i").view(C), cp.arange(5, dtype="i").view(type=C),
                 cp.arange(5, dtype="i").view(dtype=C)):
        assert type(view) is C and view.dtype == np.int32 and view.info is None
    with pytest.raises(TypeError):
        cp.arange(5, dtype="i").view("f", dtype="f")
    with pytest.raises(ValueError, match="sub-type of ndarray"):
        cp.arange(5).view(type=int)
    with pytest.raises(ValueError, match="twice"):
        cp.arange(5).view(C, type=C)
    base = cp.arange(4).view(C)
    base.info = "x"
    again = base.view(np.int64)
    assert type(again) is C and again.info == "x"     # a subclass's views keep its type


def test_ufunc_and_operator_results_take_the_first_subclass_input(cp, C):
    a0 = cp.array([0, 1, 2]).view(C)
    a0.info = 1
    a1 = cp.array([3, 4, 5]).view(C)
    a1.info = 2
    for out in (cp.sin(a0), cp.add(a0, a1), a0 + a1, a0 * 2):
        assert type(out) is C and out.info == 1
    mixed = cp.add(cp.array([0, 1, 2]), a1)
    assert type(mixed) is C and mixed.info == 2
    reflected = 10 - a1
    assert type(reflected) is C and reflected.info == 2
    np.testing.assert_allclose(cp.sin(a0).get(), np.sin([0, 1, 2]))
    np.testing.assert_array_equal((cp.array([0, 1, 2]) + a1).get(), [3, 5, 7])
    plain = cp.arange(3) + cp.arange(3)
    assert type(plain) is cp.ndarray


def test_a_subclass_result_owns_its_memory(cp, C, session):
    a = cp.arange(1000).view(C)
    before = len(session.arrays)
    for _ in range(50):
        b = a + 1
    del b
    float(a.sum())
    assert len(session.arrays) <= before + 2   # the handed-over results were released


def test_outputs_given_by_the_caller_are_returned_as_given(cp, C):
    sub = cp.arange(3, dtype=np.float64).view(C)
    sub.info = 5
    out = cp.empty(3)
    assert cp.add(sub, 1, out) is out and type(out) is cp.ndarray
    assert cp.add(sub, 1, out=out) is out
    np.testing.assert_array_equal(out.get(), [1, 2, 3])    # still a working array
    frac, whole = cp.empty(3), cp.empty(3)
    cp.modf(sub + 0.5, frac, whole)
    assert float(whole.sum()) == 3 and type(frac) is cp.ndarray


def test_comparisons_unary_divmod_and_numpy_ufuncs_keep_the_subclass(cp, C):
    sub = cp.arange(4).view(C)
    sub.info = "s"
    results = [sub == 1, sub != cp.arange(4), sub < 2, -sub, abs(sub), ~sub, +sub,
               np.add(sub, 1), np.negative(sub), *divmod(sub, 3)]
    for out in results:
        assert type(out) is C and out.info == "s"
    np.testing.assert_array_equal((sub == 1).get(), [False, True, False, False])
    assert type(cp.arange(4) == 1) is cp.ndarray


def test_views_keep_the_subclass_and_copies_do_not(cp, C):
    sub = cp.arange(12).reshape(3, 4).view(C)
    sub.info = "v"
    for view in (sub[1:], sub[0], sub.T, sub.reshape(4, 3), sub.transpose(), sub.ravel(),
                 sub[:, ::2].squeeze(), sub.view()):
        assert type(view) is C and view.info == "v"
    for copy in (sub.copy(), sub.astype(np.float32), sub[cp.asarray([0, 2])], sub.T.ravel()):
        assert type(copy) is cp.ndarray
    np.testing.assert_array_equal(sub[1:].get(), np.arange(12).reshape(3, 4)[1:])


def test_a_methods_out_array_is_returned_as_given(cp, C):
    x = cp.zeros((2, 4))
    sub = cp.arange(4.0).view(C)
    out = x[1]
    assert sub.cumsum(out=out) is out and type(out) is cp.ndarray
    np.testing.assert_array_equal(out.get(), [0, 1, 3, 6])
