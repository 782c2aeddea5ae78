"""What a newcomer meets first, as CuPy answers it (issue 39, items 14 and 15).

Each test states CuPy 14's own behaviour (checked against CuPy 14.2 on an H100) and runs
the remote ``cupy`` against a real pool: in CI the NumPy device, which must now answer as
a pool of GPUs does, and on a GPU machine (``GPUWB_TEST_DEVICES=0``) the CuPy device.
Nothing here compares with NumPy: NumPy differs on every point.

* a dtype no device array can have (``object``, ``str``, a class of the user's) is CuPy's
  ``ValueError: Unsupported dtype object``, raised at the call when given as a class;
* a NumPy array, list or tuple as a ufunc's or operator's operand is CuPy's ``TypeError``
  (no implicit host-to-device copy), raised at the call;
* out-of-range entries of integer index arrays wrap (``x[[1, 3]]`` of three is ``x[[1, 0]]``);
* floats convert to integers as the GPU converts them (saturating, no warning).
"""

from __future__ import annotations

import ctypes
import re
import warnings

import numpy as np
import pytest


class _UserClass:
    pass


# ---------------------------------------------------------------- item 14: dtypes CuPy refuses


@pytest.mark.parametrize("make", [
    lambda cp: cp.zeros(3, dtype=object),
    lambda cp: cp.empty(3, dtype=object),
    lambda cp: cp.ones((2, 2), dtype=object),
    lambda cp: cp.full(3, 1, dtype=object),
    lambda cp: cp.array([1, None], dtype=object),
    lambda cp: cp.asarray([1, 2], dtype=object),
    lambda cp: cp.arange(3, dtype=object),
    lambda cp: cp.arange(0, dtype=object),
    lambda cp: cp.linspace(0, 1, 3, dtype=object),
    lambda cp: cp.eye(2, dtype=object),
    lambda cp: cp.identity(2, dtype=object),
    lambda cp: cp.arange(3).astype(object),
    lambda cp: cp.zeros_like(cp.arange(3), dtype=object),
    lambda cp: cp.empty_like(cp.arange(3), dtype=object),
    lambda cp: cp.full_like(cp.arange(3), 1, dtype=object),
    lambda cp: cp.ndarray((3,), dtype=object),
    lambda cp: cp.zeros(3, dtype=_UserClass),   # any class is NumPy's object dtype
], ids=["zeros", "empty", "ones", "full", "array", "asarray", "arange", "arange-empty",
        "linspace", "eye", "identity", "astype", "zeros_like", "empty_like", "full_like",
        "ndarray", "user-class"])
def test_object_dtype_is_refused_at_the_call(cp, session, make):
    """``TypeError: cannot send a value of type type`` before; CuPy's ValueError now, raised
    by the call itself (the class never leaves the client)."""
    with pytest.raises(ValueError, match="^Unsupported dtype object$"):
        make(cp)
    assert cp.arange(3).tolist() == [0, 1, 2]   # nothing was left pending


@pytest.mark.parametrize("dtype,name", [(str, "<U0"), (bytes, "|S0"), (memoryview, "|V0"),
                                        (np.str_, "<U0"), (np.object_, "object")], ids=repr)
def test_other_refused_dtype_classes(cp, dtype, name):
    with pytest.raises(ValueError, match=f"^Unsupported dtype {name}$"):
        cp.zeros(3, dtype=dtype)
    with pytest.raises(ValueError, match=f"^Unsupported dtype {name}$"):
        cp.arange(3).astype(dtype)


@pytest.mark.parametrize("make,name", [
    (lambda cp: cp.zeros(3, dtype="O"), "object"),
    (lambda cp: cp.zeros(3, dtype="U3"), "<U3"),
    (lambda cp: cp.zeros(3, dtype="M8[s]"), r"datetime64\[s\]"),
    (lambda cp: cp.zeros(3, dtype="V"), r"\|V0"),
    (lambda cp: cp.full(3, None), "object"),
    (lambda cp: cp.array([1, None]), "object"),
    (lambda cp: cp.array(["a", "b"]), "<U1"),
    (lambda cp: cp.arange(3).astype("O"), "object"),
], ids=["O", "U3", "M8", "V", "full-None", "array-None", "array-str", "astype-O"])
def test_refused_dtypes_named_by_value(cp, session, make, name):
    """A dtype given as a string, or found from the data, is refused by the pool's device
    (CuPy's own refusal on a GPU): the same ValueError, at the next sync (its note names
    the op and line)."""
    with pytest.raises(ValueError, match=f"^Unsupported dtype {name}(\n|$)"):
        make(cp)
        session.sync()


def test_host_object_array_is_refused(cp):
    with pytest.raises(ValueError, match="^Unsupported dtype object$"):
        cp.asarray(np.array([1, None], dtype=object))


def test_numeric_dtype_classes_still_travel(cp):
    assert cp.arange(3, dtype=ctypes.c_int).dtype == np.int32   # NumPy's int32, as CuPy reads it
    assert cp.zeros(2, dtype=float).dtype == np.float64
    assert cp.ones(2, dtype=np.float32).astype(complex).dtype == np.complex128


def test_view_as_object_is_refused(cp):
    """CuPy makes such a view (its dtype ``object``, unusable by any kernel); the pool cannot
    hold one, so the proxy refuses it with CuPy's words for that dtype (README)."""
    with pytest.raises(ValueError, match="^Unsupported dtype object$"):
        cp.arange(3).view(object)


# ---------------------------------------------------------------- item 15: host operands

_NDARRAY = r"^Unsupported type <class 'numpy\.ndarray'>$"


@pytest.mark.parametrize("op", [
    lambda x, h: x + h, lambda x, h: h + x, lambda x, h: x - h, lambda x, h: h * x,
    lambda x, h: x / h, lambda x, h: x ** h, lambda x, h: x < h, lambda x, h: h >= x,
    lambda x, h: x == h, lambda x, h: x != h, lambda x, h: divmod(x, h), lambda x, h: x & h,
    lambda x, h: x + np.asarray(1),
], ids=["add", "radd", "sub", "rmul", "truediv", "pow", "lt", "rge", "eq", "ne", "divmod",
        "and", "add-0d"])
def test_numpy_array_operands_are_refused(cp, op):
    """CuPy: ``TypeError: Unsupported type <class 'numpy.ndarray'>``; NumPy would compute.
    Raised at the call, on any device."""
    x, h = cp.arange(1, 4), np.arange(1, 4)
    with pytest.raises(TypeError, match=_NDARRAY):
        op(x, h)


@pytest.mark.parametrize("call", [
    lambda cp, h: cp.add(cp.arange(3), h),
    lambda cp, h: cp.add(h, h),
    lambda cp, h: cp.exp(h),
    lambda cp, h: cp.maximum(h, cp.arange(3)),
    lambda cp, h: cp.less(cp.arange(3), np.asarray(1)),   # a ufunc takes no 0-d host array
    lambda cp, h: np.add(h, cp.arange(3)),                # NumPy's ufunc hands over to the proxy
    lambda cp, h: np.multiply(cp.arange(3), h),
], ids=["add", "add-host-only", "exp", "maximum", "less-0d", "np.add", "np.multiply"])
def test_numpy_array_ufunc_inputs_are_refused(cp, call):
    with pytest.raises(TypeError, match=_NDARRAY):
        call(cp, np.arange(3))


def test_in_place_operators_refuse_numpy_arrays(cp):
    x = cp.arange(3)
    with pytest.raises(TypeError, match=_NDARRAY):
        x += np.arange(3)
    with pytest.raises(TypeError, match=_NDARRAY):
        x *= np.ones(3, dtype=np.int64)
    assert x.tolist() == [0, 1, 2]


def test_matmul_refuses_numpy_arrays_in_cythons_words(cp):
    """``cupy.matmul``'s typed arguments refuse a host array (a gufunc, not a ufunc)."""
    expected = "has incorrect type (expected cupy._core.core._ndarray_base, got numpy.ndarray)"
    with pytest.raises(TypeError, match=re.escape("Argument 'b' " + expected)):
        cp.ones((3, 3)) @ np.ones(3)
    with pytest.raises(TypeError, match="^Argument 'a' "):
        np.ones(3) @ cp.ones((3, 3))
    with pytest.raises(TypeError, match="^Argument 'b' "):
        cp.matmul(cp.ones((3, 3)), np.ones(3))


@pytest.mark.parametrize("op", [
    lambda cp, x: x + [1, 2, 3], lambda cp, x: [1, 2, 3] + x, lambda cp, x: x * (1, 2, 3),
    lambda cp, x: x == [0, 1, 2], lambda cp, x: cp.add(x, [1, 2, 3]),
    lambda cp, x: cp.power([1, 2, 3], 2), lambda cp, x: x - range(3),
], ids=["add", "radd", "mul-tuple", "eq", "cp.add", "cp.power", "range"])
def test_list_and_tuple_operands_are_refused(cp, op):
    """CuPy's docs: "Universal Functions only work with CuPy array or scalar"."""
    with pytest.raises(TypeError):
        op(cp, cp.arange(3))


def test_what_cupy_takes_beside_arrays_still_works(cp):
    x = cp.arange(3)
    assert (x < np.asarray(1)).tolist() == [True, False, False]   # a comparison's 0-d host array
    assert (np.asarray(1) != x).tolist() == [True, False, True]
    assert (x + np.int8(1)).tolist() == [1, 2, 3]
    assert (np.float32(2) * x).dtype == np.float64
    assert (x + cp.asarray(np.arange(3))).tolist() == [0, 2, 4]   # uploaded first: fine
    assert cp.add.outer(x, np.arange(2)).tolist() == [[0, 1], [1, 2], [2, 3]]   # CuPy computes it
    with pytest.raises(TypeError):
        x + np.arange(3)
    assert (x * 2).tolist() == [0, 2, 4]   # the refusal left nothing behind


# ---------------------------------------------------------------- item 15: index arrays wrap


def _grid(cp):
    return cp.arange(10).reshape(2, 5)


@pytest.mark.parametrize("key,expected", [
    (lambda cp: cp.array([5, -7]), [2, 2]),
    (lambda cp: [5], [2]),
    (lambda cp: np.array([5]), [2]),
    (lambda cp: cp.array([4], dtype=cp.uint8), [1]),
    (lambda cp: cp.asarray(4), 1),
], ids=["remote", "list", "host", "uint8", "0-d"])
def test_out_of_range_index_arrays_wrap(cp, key, expected):
    assert cp.arange(3)[key(cp)].tolist() == expected


@pytest.mark.parametrize("key,expected", [
    (lambda cp: ([0, 3], [7, -6]), [2, 9]),
    (lambda cp: (1, [7, 12]), [7, 7]),
    (lambda cp: (slice(None), [7]), [[2], [7]]),
    (lambda cp: (Ellipsis, [6]), [[1], [6]]),
    (lambda cp: (None, [3], [6]), [[6]]),
    (lambda cp: (cp.array([True, False]), [6]), [1]),
], ids=["pair", "int-and-array", "slice", "ellipsis", "newaxis", "mask"])
def test_out_of_range_index_arrays_wrap_per_axis(cp, key, expected):
    assert _grid(cp)[key(cp)].tolist() == expected


def test_scalar_indices_and_empty_axes_still_raise(cp):
    with pytest.raises(IndexError):
        _grid(cp)[5].tolist()
    with pytest.raises(IndexError):
        _grid(cp)[5, [0]].tolist()
    with pytest.raises(IndexError):
        cp.zeros((0, 3))[[1]].tolist()
    assert cp.zeros((0, 3))[cp.array([], dtype=int)].shape == (0, 3)


def test_assignment_through_index_arrays_wraps(cp):
    x = cp.arange(3)
    x[[1, 3]] = 10   # CuPy's docs' example
    assert x.tolist() == [10, 10, 2]
    g = _grid(cp)
    g[1, [5]] = -1
    assert g.tolist() == [[0, 1, 2, 3, 4], [-1, 6, 7, 8, 9]]


def test_take_put_and_scatter_wrap(cp):
    assert cp.take(cp.arange(3), cp.array([5, -4])).tolist() == [2, 2]
    assert cp.take(_grid(cp), [6], axis=1).tolist() == [[1], [6]]
    assert cp.arange(3).take([7]).tolist() == [1]
    assert cp.take(cp.arange(3), 7).tolist() == 1
    assert cp.take_along_axis(_grid(cp), cp.array([[6], [-7]]), 1).tolist() == [[1], [8]]
    x = cp.arange(3)
    cp.put(x, [4], 9)   # CuPy's put: mode='wrap' unless given
    assert x.tolist() == [0, 9, 2]
    with pytest.raises(IndexError):
        cp.put(x, [4], 9, mode="raise")
        x.tolist()
    g = _grid(cp)
    cp.put_along_axis(g, cp.array([[6], [-7]]), 0, axis=1)
    assert g.tolist() == [[0, 0, 2, 3, 4], [5, 6, 7, 0, 9]]
    z = cp.zeros(3)
    cp.add.at(z, cp.array([4, -1]), 1)
    assert z.tolist() == [0.0, 1.0, 1.0]


def test_huge_indices_wrap_at_once(cp):
    """NumPy's own mode='wrap' subtracts the length until an index is in range: one index
    of 2**63 - 1 kept the NumPy device's worker busy for ever (the worker fuzz found it)."""
    big = 2**63 - 1
    assert cp.arange(60).take(big).tolist() == big % 60
    assert cp.take(cp.arange(60), [big, -big]).tolist() == [big % 60, -big % 60]
    x = cp.zeros(5)
    cp.put(x, [2**62], 1.0)
    expected = [0.0] * 5
    expected[2**62 % 5] = 1.0
    assert x.tolist() == expected


# ---------------------------------------------------------------- item 15: float to integer casts

_SOURCE = [-1.5, -3.0, -0.5, 0.5, 300.7, 70000.5, 5e9, 1e20, -1e20, np.inf, -np.inf, np.nan]
_U32, _U64, _I32, _I64 = 2**32 - 1, 2**64 - 1, 2**31 - 1, 2**63 - 1
#: ``cupy.asarray(_SOURCE, float64).astype(dtype)`` on an H100, CuPy 14.2.
_FROM_FLOAT64 = {
    "uint8": [0, 0, 0, 0, 44, 112, 255, 255, 0, 255, 0, 0],
    "uint16": [0, 0, 0, 0, 300, 4464, 65535, 65535, 0, 65535, 0, 0],
    "uint32": [0, 0, 0, 0, 300, 70000, _U32, _U32, 0, _U32, 0, 2**31],
    "uint64": [0, 0, 0, 0, 300, 70000, 5 * 10**9, _U64, 0, _U64, 0, 2**63],
    "int8": [-1, -3, 0, 0, 44, 112, -1, -1, 0, -1, 0, 0],
    "int16": [-1, -3, 0, 0, 300, 4464, -1, -1, 0, -1, 0, 0],
    "int32": [-1, -3, 0, 0, 300, 70000, _I32, _I32, -_I32 - 1, _I32, -_I32 - 1, -_I32 - 1],
    "int64": [-1, -3, 0, 0, 300, 70000, 5 * 10**9, _I64, -_I64 - 1, _I64, -_I64 - 1, -_I64 - 1],
}
#: From float32 the same, but NaN is 0 in a 32-bit integer.
_FROM_FLOAT32 = {**_FROM_FLOAT64, "uint32": _FROM_FLOAT64["uint32"][:-1] + [0],
                 "int32": _FROM_FLOAT64["int32"][:-1] + [0]}
#: From float16, where 70000.5 and 5e9 are already inf (300.7 is 300.75).
_FROM_FLOAT16 = {
    "uint8": [0, 0, 0, 0, 44, 255, 255, 255, 0, 255, 0, 0],
    "uint16": [0, 0, 0, 0, 300, 65535, 65535, 65535, 0, 65535, 0, 0],
    "uint32": [0, 0, 0, 0, 300, _U32, _U32, _U32, 0, _U32, 0, 0],
    "uint64": [0, 0, 0, 0, 300, _U64, _U64, _U64, 0, _U64, 0, 2**63],
    "int8": [-1, -3, 0, 0, 44, -1, -1, -1, 0, -1, 0, 0],
    "int16": [-1, -3, 0, 0, 300, -1, -1, -1, 0, -1, 0, 0],
    "int32": [-1, -3, 0, 0, 300, _I32, _I32, _I32, -_I32 - 1, _I32, -_I32 - 1, 0],
    "int64": [-1, -3, 0, 0, 300, _I64, _I64, _I64, -_I64 - 1, _I64, -_I64 - 1, -_I64 - 1],
}
_EXPECTED = {"float64": _FROM_FLOAT64, "float32": _FROM_FLOAT32, "float16": _FROM_FLOAT16}


@pytest.mark.parametrize("source", ["float64", "float32", "float16"])
@pytest.mark.parametrize("target", list(_FROM_FLOAT64))
def test_float_to_integer_casts_as_a_gpu(cp, source, target):
    """NumPy (x86) gives 255 for -1.5 as uint8 and warns "invalid value encountered in cast";
    a GPU saturates, silently."""
    with np.errstate(over="ignore"):   # (float16's inf made on the host, before the test)
        host = np.array(_SOURCE, dtype=source)
    x = cp.asarray(host)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = x.astype(target)
        assert got.dtype == np.dtype(target)
        assert got.tolist() == _EXPECTED[source][target]
        assert cp.astype(x, target).tolist() == _EXPECTED[source][target]
    assert not [w for w in caught if issubclass(w.category, RuntimeWarning)]


def test_other_device_casts_convert_as_a_gpu(cp):
    values = cp.array([-1.5, 300.7])
    a = cp.zeros(2, dtype=cp.uint8)
    a[:] = values
    assert a.tolist() == [0, 44]
    b = cp.zeros(2, dtype=cp.uint8)
    cp.copyto(b, values, casting="unsafe")
    assert b.tolist() == [0, 44]
    with pytest.warns(np.exceptions.ComplexWarning):   # the real part, CuPy's warning
        assert cp.array([-1.5 + 2j, 300.7]).astype(cp.uint8).tolist() == [0, 44]


def test_casts_gpus_and_numpy_agree_on_are_unchanged(cp):
    x = cp.array([-1.5, 0.0, np.nan, 2.5])
    assert x.astype(bool).tolist() == [True, False, True, True]
    assert x.astype(cp.float32).tolist()[:2] == [-1.5, 0.0]
    assert cp.array([300, -1]).astype(cp.uint8).tolist() == [44, 255]   # integers wrap on both
    assert cp.array([2.5, -2.5]).astype(cp.int16, order="F", copy=False).tolist() == [2, -2]
