"""``cupy.ndarray`` behaviour that CuPy's core tests showed missing (issue 9, run 11): the
shape setter, ``byteswap``, ``tobytes``/``bytes()``, ``conj`` of a real array, ``==``/``!=``
with objects that are neither scalars nor arrays, NumPy's ufunc methods given remote
arrays, and the class under ``cupy._core``/``cupy._core.core``. Each compared with NumPy,
which CuPy follows here."""

from __future__ import annotations

import numpy as np
import pytest

from kernelproxy.modules import build_modules


def test_shape_set_in_place_with_an_inferred_or_int_shape(cp):
    a = cp.arange(6)
    before = a.data.ptr if hasattr(a.data, "ptr") else None
    a.shape = (3, -1)
    assert a.shape == (3, 2) and a.strides == (16, 8)
    np.testing.assert_array_equal(a.get(), np.arange(6).reshape(3, 2))
    a.shape = 6
    assert a.shape == (6,)
    if before is not None:
        assert a.data.ptr == before   # the same memory, not a copy
    a[0] = 100                        # still a working array after the handle change
    assert int(a.sum()) == 115


def test_shape_set_refused_when_it_needs_a_copy(cp):
    b = cp.arange(12).reshape(3, 4)[:, :2]
    with pytest.raises(AttributeError, match="(?i)incompatible shape"):
        b.shape = (6,)
    assert b.shape == (3, 2)
    a = cp.arange(6)
    with pytest.raises(ValueError):
        a.shape = (4,)
    assert a.shape == (6,)


def test_shape_set_keeps_views_of_the_same_memory(cp):
    base = cp.zeros(6)
    view = base[:]
    view.shape = (2, 3)
    view[1, 2] = 7.0
    assert float(base[5]) == 7.0


@pytest.mark.parametrize("dtype", ["int16", "float32", "complex64"])
def test_byteswap(cp, dtype):
    host = np.arange(5).astype(dtype) * 3
    x = cp.asarray(host)
    np.testing.assert_array_equal(x.byteswap().get(), host.byteswap())
    np.testing.assert_array_equal(x.get(), host)   # not in place


def test_tobytes_and_bytes(cp):
    host = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    x = cp.asarray(host)
    assert x.tobytes() == host.tobytes() and x.tobytes("F") == host.tobytes("F")
    assert bytes(x) == bytes(host)
    assert bytes(cp.empty((3, 0, 4))) == b""


def test_conj_of_a_real_array_whose_dtype_is_known_is_the_array(cp):
    x = cp.arange(6, dtype=cp.float64)
    x.dtype   # known here now
    assert x.conj() is x and x.conjugate() is x
    z = cp.asarray(np.array([1 + 2j, 3 - 1j]))
    np.testing.assert_array_equal(z.conj().get(), np.array([1 - 2j, 3 + 1j]))
    np.testing.assert_array_equal(cp.arange(3.0).conj().get(), np.arange(3.0))


@pytest.mark.parametrize("other", [None, Ellipsis, object(), np._NoValue])
def test_equality_with_objects_is_elementwise_false(cp, other):
    host = np.array([[1, 2, 3], [4, 5, 6]])
    a = cp.asarray(host)
    eq, ne = a == other, a != other
    assert eq.dtype == bool and eq.shape == (2, 3) and not eq.get().any()
    assert ne.dtype == bool and ne.get().all()


def test_numpy_ufunc_methods_run_as_the_cupy_ufuncs(cp):
    x = cp.arange(5.0)
    host = np.arange(5.0)
    np.testing.assert_array_equal(np.add.outer(x, x[:2]).get(), np.add.outer(host, host[:2]))
    assert float(np.add.reduce(x)) == 10.0
    np.testing.assert_array_equal(np.multiply.accumulate(x + 1).get(), np.multiply.accumulate(host + 1))
    np.testing.assert_array_equal(np.add.reduceat(x, cp.array([0, 3])).get(),
                                  np.add.reduceat(host, [0, 3]))
    y = cp.zeros(4)
    np.add.at(y, cp.array([0, 0, 2]), 1.0)
    np.testing.assert_array_equal(y.get(), [2.0, 0.0, 1.0, 0.0])


def test_the_class_under_cupy_core(cp):
    modules = build_modules()
    assert modules["cupy._core"].ndarray is cp.ndarray
    assert modules["cupy._core.core"].ndarray is cp.ndarray
    assert modules["cupy._core"].core is modules["cupy._core.core"]
    np.testing.assert_array_equal(modules["cupy._core"].array([1, 2]).get(), [1, 2])


def test_common_type_through_numpy(cp):
    assert np.common_type(cp.arange(2, dtype="f8"), cp.arange(2, dtype="f4")) is np.float64
    assert cp.common_type(cp.arange(2, dtype="f2")) is np.float16


def test_get_into_a_non_contiguous_array_is_refused(cp):
    out = np.empty((3, 3))[0:2, 0:2]
    with pytest.raises(RuntimeError, match="non-contiguous"):
        cp.ones((2, 2)).get(out=out)


def test_byteswap_in_place_returns_the_array_itself(cp):
    x = cp.arange(4, dtype=np.int32)
    assert x.byteswap(inplace=True) is x
    np.testing.assert_array_equal(x.get(), np.arange(4, dtype=np.int32).byteswap())


@pytest.mark.parametrize("dtype", [object, "str", "float32", "i,i"])
def test_host_arrays_of_other_kinds_cannot_index(cp, dtype):
    a = cp.arange(10)
    with pytest.raises(IndexError, match="arrays used as indices"):
        a[np.array([1, 2], dtype=dtype)]
    with pytest.raises(IndexError, match="arrays used as indices"):
        a[(np.array([1, 2], dtype=dtype),)] = 0
    assert int(a.sum()) == 45


def test_core_elementwise_copy_casts_unsafely_into_its_output(cp):
    src = cp.arange(6, dtype=np.float64).reshape(2, 3) + 0.5
    dst = cp.empty((2, 3), dtype=np.int32)
    assert cp._core.elementwise_copy(src, dst) is dst
    np.testing.assert_array_equal(dst.get(), (np.arange(6).reshape(2, 3) + 0.5).astype(np.int32))
    copy = cp._core.elementwise_copy(src)
    assert copy is not src
    np.testing.assert_array_equal(copy.get(), src.get())


def test_an_element_is_a_zero_d_view_that_sees_later_writes(cp):
    """CuPy's integer index gives a 0-d view of the array, not NumPy's scalar copy: a write
    to the array after it is seen through it (the NumPy device once copied, so a replay's
    handout of such a view was never exercised off a GPU)."""
    x = cp.arange(5.0)
    y = x[1]
    m = cp.ones((3, 3), dtype=cp.float32)
    z = m[1, 2]
    x[1] = 7.0
    m *= 2
    assert y.shape == () and z.shape == () and z.dtype == cp.float32
    assert float(y) == 7.0 and float(z) == 2.0
