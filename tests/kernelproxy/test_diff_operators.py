"""Differential tests: Python operators on remote arrays (the remote cupy against NumPy/CuPy)."""

from __future__ import annotations

import contextlib
import operator
import warnings

import numpy as np
import pytest

from tests.differential import REFERENCE_IS_NUMPY

ARITH = ["add", "sub", "mul", "truediv", "floordiv", "mod", "pow"]
BITWISE = ["and_", "or_", "xor", "lshift", "rshift"]
COMPARE = ["lt", "le", "eq", "ne", "gt", "ge"]
NUMERIC = ["int8", "uint8", "int32", "int64", "uint64", "float16", "float32", "float64"]
INTEGER = ["int8", "uint8", "int16", "int32", "int64", "uint32", "uint64", "bool"]


def _operands(xp, dtype):
    a = xp.asarray([[1, 2, 3], [4, 5, 6]], dtype=dtype)
    b = xp.asarray([[3, 1, 2], [2, 5, 1]], dtype=dtype)
    return a, b


# ---------------------------------------------------------------- binary operators


@pytest.mark.parametrize("dtype", NUMERIC)
@pytest.mark.parametrize("op", ARITH)
def test_arithmetic(same, op, dtype):
    fn = getattr(operator, op)
    same(lambda xp: fn(*_operands(xp, dtype)))


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
@pytest.mark.parametrize("op", ["add", "sub", "mul", "truediv", "pow"])
def test_arithmetic_complex(same, op, dtype):
    fn = getattr(operator, op)
    same(lambda xp: fn(xp.asarray([1 + 2j, -1j, 3], dtype=dtype), xp.asarray([2, 1 + 1j, -1], dtype=dtype)))


@pytest.mark.parametrize("op", ["floordiv", "mod"])
def test_complex_floordiv_raises(same, op):
    fn = getattr(operator, op)
    same(lambda xp: fn(xp.asarray([1 + 2j]), xp.asarray([1j])))


@pytest.mark.parametrize("dtype", INTEGER)
@pytest.mark.parametrize("op", BITWISE)
def test_bitwise(same, op, dtype):
    fn = getattr(operator, op)
    shift_dtype = "int8" if dtype == "bool" and op in ("lshift", "rshift") else dtype

    def body(xp):
        a = xp.asarray([[1, 2, 3], [4, 5, 6]], dtype=dtype)
        b = xp.asarray([[1, 0, 1], [0, 1, 1]], dtype=shift_dtype)
        return fn(a, b), fn(a, 1), fn(a, b[0])

    same(body)


@pytest.mark.parametrize("op", ["and_", "or_", "xor", "lshift"])
def test_bitwise_float_raises(same, op):
    fn = getattr(operator, op)
    same(lambda xp: fn(xp.ones(3), xp.ones(3)))


@pytest.mark.parametrize("dtype", ["int32", "float32", "float64", "bool", "uint8"])
@pytest.mark.parametrize("op", COMPARE)
def test_comparison(same, op, dtype):
    fn = getattr(operator, op)
    same(lambda xp: fn(*_operands(xp, dtype)))
    same(lambda xp: fn(_operands(xp, dtype)[0], 3))


def test_comparison_with_nan_and_complex(same):
    same(lambda xp: xp.asarray([1.0, np.nan]) == xp.asarray([1.0, np.nan]))
    same(lambda xp: xp.asarray([1.0, np.nan]) != np.nan)
    same(lambda xp: xp.asarray([1 + 1j, 2]) == xp.asarray([1 + 1j, 2 + 1j]))


def test_division_by_zero(same):
    with warnings.catch_warnings():  # np.errstate is local: the pool warns all the same
        warnings.simplefilter("ignore", RuntimeWarning)
        same(lambda xp: xp.asarray([1, 0, -1]) // xp.asarray([0, 0, 0]))
        same(lambda xp: xp.asarray([1, 0, -1]) % xp.asarray([0, 0, 0]))


def test_float_division_by_zero_values(same):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        same(lambda xp: xp.asarray([1.0, 0.0, -1.0]) / xp.zeros(3))
        same(lambda xp: xp.asarray([1.0, -1.0]) // 0.0)


def test_negative_integer_power_raises(same):
    same(lambda xp: xp.arange(3) ** -1)
    same(lambda xp: xp.arange(3) ** xp.asarray([1, -2, 1]))


def test_divmod(same):
    same(lambda xp: divmod(xp.asarray([7, -7, 8]), 3))
    same(lambda xp: divmod(xp.asarray([7.5, -7.5]), xp.asarray([2.0, 2.0])))
    same(lambda xp: divmod(17, xp.asarray([3, 4, 5])))
    same(lambda xp: divmod(xp.asarray([7, 8], dtype=xp.uint8), xp.asarray([2, 3], dtype=xp.uint8)))


def test_divmod_returns_tuple_of_arrays(cp):
    q, r = divmod(cp.arange(5), 2)
    assert isinstance(q, cp.ndarray) and isinstance(r, cp.ndarray)
    np.testing.assert_array_equal(q.get(), np.arange(5) // 2)
    np.testing.assert_array_equal(r.get(), np.arange(5) % 2)


# ---------------------------------------------------------------- reflected forms


@pytest.mark.parametrize("op", ARITH + ["and_", "or_", "xor", "lshift", "rshift"])
def test_reflected_with_python_int(same, op):
    fn = getattr(operator, op)
    same(lambda xp: fn(2, xp.asarray([1, 2, 3])))


@pytest.mark.parametrize("op", ARITH)
def test_reflected_with_python_float(same, op):
    fn = getattr(operator, op)
    same(lambda xp: fn(2.5, xp.asarray([1.0, 2.0, 4.0], dtype=xp.float32)))


@pytest.mark.parametrize("op", COMPARE)
def test_reflected_comparison(same, op):
    fn = getattr(operator, op)
    same(lambda xp: fn(2, xp.asarray([1, 2, 3])))


def test_reflected_specific(same):
    same(lambda xp: 2 - xp.arange(4))
    same(lambda xp: 2 ** xp.arange(4))
    same(lambda xp: 1 / xp.arange(1, 5))
    same(lambda xp: 2.0 ** xp.arange(4, dtype=xp.float16))
    same(lambda xp: 3 % xp.asarray([2, 5]))
    # NumPy converts a list or tuple operand; CuPy's ufuncs refuse it, and so does the remote
    # on any device (tests/kernelproxy/test_newcomer_fidelity.py)
    with pytest.raises(TypeError, match="Unsupported type"):
        [1, 2, 3] + same.cp.arange(3)
    with pytest.raises(TypeError, match="Unsupported type"):
        (1, 2, 3) * same.cp.arange(3)


# ---------------------------------------------------------------- unary operators


@pytest.mark.parametrize("dtype", NUMERIC + ["complex64", "bool"])
@pytest.mark.parametrize("op", ["neg", "pos", "abs", "invert"])
def test_unary(same, op, dtype):
    fn = getattr(operator, op)
    same(lambda xp: fn(xp.asarray([[0, 1, 2], [3, 0, 1]], dtype=dtype) if dtype != "bool"
                       else xp.asarray([True, False])))


def test_unary_specifics(same):
    same(lambda xp: -xp.asarray([-1.5, 0.0, 2.5]))
    same(lambda xp: abs(xp.asarray([-3 + 4j, 1j])))
    same(lambda xp: ~xp.asarray([0, 1, -1], dtype=xp.int64))
    same(lambda xp: -xp.asarray(5, dtype=xp.uint8))
    same(lambda xp: -xp.asarray(-128, dtype=xp.int8))


# ---------------------------------------------------------------- in-place


@pytest.mark.parametrize("dtype", ["int32", "float32", "float64", "uint8"])
@pytest.mark.parametrize("op", ARITH)
def test_inplace_arithmetic_keeps_identity(same, op, dtype):
    iop = getattr(operator, "i" + op.rstrip("_"))

    def body(xp):
        x = xp.asarray([[4, 6, 8], [9, 12, 3]], dtype=dtype)
        y = x
        y = iop(y, xp.asarray([1, 2, 3], dtype=dtype))
        return y is x, x

    same(body)  # integer /= raises: a float result cannot be cast back


@pytest.mark.parametrize("op,dtype", [(op, dt) for op in BITWISE for dt in ("int32", "uint8", "bool")
                                       if not (dt == "bool" and "shift" in op)])
def test_inplace_bitwise(same, op, dtype):
    iop = getattr(operator, "i" + op.rstrip("_"))

    def body(xp):
        x = xp.asarray([1, 2, 3, 4], dtype=dtype)
        y = x
        y = iop(y, xp.asarray([1, 1, 0, 1], dtype=dtype))
        return y is x, x

    same(body)


def test_inplace_alias_statement(same):
    def body(xp):
        x = xp.arange(5)
        y = x
        y += 1
        z = x[1:3]
        z *= 10
        return x, y is x

    same(body)


def test_inplace_on_view_changes_base(same):
    def body(xp):
        x = xp.arange(12.0).reshape(3, 4)
        row = x[1]
        row -= 100
        col = x[:, 2]
        col **= 2
        x.T[0] += 0.5
        return x

    same(body)


def test_inplace_casting_errors(same):
    def body(xp):
        x = xp.arange(3)
        x += 1.5
        return x

    err = same(body)
    assert isinstance(err, TypeError)  # numpy's UFuncTypeError is a TypeError subclass

    def body2(xp):
        x = xp.arange(3, dtype=xp.int32)
        x *= xp.asarray([1.0, 2.0, 3.0])
        return x

    same(body2)

    def body3(xp):
        x = xp.zeros(3)
        x += xp.asarray([1j, 1j, 1j])
        return x

    same(body3)


def test_inplace_error_leaves_array_usable(cp):
    x = cp.arange(3)
    with pytest.raises(TypeError):
        x += 1.5
        x.get()
    np.testing.assert_array_equal(x.get(), np.arange(3))


def test_inplace_allowed_same_kind(same):
    def body(xp):
        x = xp.zeros(3, dtype=xp.float32)
        x += xp.asarray([1.0, 2.0, 3.0])  # float64 into float32: same kind
        i = xp.zeros(3, dtype=xp.int8)
        i += xp.asarray([1, 2, 3], dtype=xp.int64)
        return x, i

    same(body)


def test_inplace_broadcast_failure(same):
    def body(xp):
        x = xp.zeros(3)
        x += xp.ones((2, 3))
        return x

    same(body)


def test_inplace_with_scalar_array_and_python_values(same):
    def body(xp):
        x = xp.arange(4.0)
        x += xp.asarray(2.0)
        x *= 3
        x /= 2
        x -= np.float32(1)
        x //= 2
        x %= 3
        x **= 2
        return x

    same(body)


# ---------------------------------------------------------------- NEP 50 scalar promotion


@pytest.mark.parametrize("dtype", ["float32", "float16", "int8", "uint8", "int16", "complex64"])
@pytest.mark.parametrize("scalar", [2, 2.5, 1j, True], ids=repr)
def test_python_scalar_is_weak(same, dtype, scalar):
    same(lambda xp: xp.asarray([1, 2, 3], dtype=dtype) + scalar)
    same(lambda xp: scalar * xp.asarray([1, 2, 3], dtype=dtype))


def test_float32_plus_python_float_stays_float32(same):
    same(lambda xp: (xp.arange(3, dtype=xp.float32) + 1.1).dtype)
    # NumPy warns of the overflow in the cast to float32 (the pool's NumPy as well);
    # CuPy's kernels raise no floating-point flags, so nothing warns there.
    with pytest.warns(RuntimeWarning) if REFERENCE_IS_NUMPY else contextlib.nullcontext():
        same(lambda xp: xp.arange(3, dtype=xp.float32) + 1e300)


def test_int8_plus_out_of_range_python_int(same):
    err = same(lambda xp: xp.asarray([1, 2], dtype=xp.int8) + 300)
    if REFERENCE_IS_NUMPY:  # NEP 50; CuPy 13 still promotes by value (an int16 result, no error)
        assert isinstance(err, OverflowError)
    same(lambda xp: xp.asarray([1, 2], dtype=xp.uint8) - (-1))
    same(lambda xp: xp.asarray([1, 2], dtype=xp.uint8) < 300)


def test_huge_python_int(same):
    same(lambda xp: xp.arange(3) + 2 ** 70)
    same(lambda xp: xp.arange(3, dtype=xp.uint64) + (2 ** 64 - 1))


@pytest.mark.parametrize("scalar", [np.int64(3), np.int8(3), np.float32(2), np.float64(2), np.uint16(7),
                                    np.complex64(1j), np.bool_(True)], ids=repr)
@pytest.mark.parametrize("dtype", ["uint8", "int16", "float32"])
def test_numpy_scalars_are_strong(same, dtype, scalar):
    same(lambda xp: xp.asarray([1, 2, 3], dtype=dtype) + scalar)
    same(lambda xp: scalar * xp.asarray([1, 2, 3], dtype=dtype))
    same(lambda xp: scalar - xp.asarray([1, 2, 3], dtype=dtype))


def test_numpy_scalar_times_remote_is_remote(same, cp):
    x = cp.arange(3, dtype=cp.float32)
    for result in (np.float32(2) * x, np.int64(2) + x, np.float64(1) - x, x * np.float32(2)):
        assert isinstance(result, cp.ndarray)
    # NumPy 2 keeps the NumPy scalar's precision (float64, float32: NEP 50); CuPy 13 promotes
    # by value (float32 both): the result dtypes are the reference's, whichever it is.
    same(lambda xp: ((np.float64(1) - xp.arange(3, dtype=xp.float32)).dtype,
                     (np.float32(2) * xp.arange(3, dtype=xp.float32)).dtype))


def test_mixed_array_promotion(same):
    same(lambda xp: xp.arange(3, dtype=xp.int8) + xp.arange(3, dtype=xp.uint8))
    same(lambda xp: xp.arange(3, dtype=xp.int64) + xp.arange(3, dtype=xp.uint64))
    same(lambda xp: xp.arange(3, dtype=xp.int32) * xp.ones(3, dtype=xp.float32))
    same(lambda xp: xp.arange(3, dtype=xp.float16) / xp.arange(1, 4, dtype=xp.int16))
    same(lambda xp: xp.asarray([True, False]) + xp.asarray([True, True]))
    same(lambda xp: xp.asarray(2.5, dtype=xp.float64) * xp.arange(3, dtype=xp.float32))  # 0-d is not weak


def test_array_with_numpy_host_array(same):
    host = np.arange(3, dtype=np.float32)
    same(lambda xp: xp.arange(3) + xp.asarray(host))
    same(lambda xp: xp.ones((2, 3), dtype=xp.int16) * xp.asarray(host))


# ---------------------------------------------------------------- broadcasting


@pytest.mark.parametrize("shapes", [
    ((3, 1), (1, 4)), ((2, 3, 4), (4,)), ((5, 1, 3), (4, 1)), ((), (2, 2)), ((0, 3), (1, 3)),
    ((1,), (0,)),
], ids=repr)
def test_broadcasting(same, shapes):
    s1, s2 = shapes

    def body(xp):
        a = xp.arange(int(np.prod(s1)), dtype=xp.float64).reshape(s1)
        b = xp.arange(int(np.prod(s2)), dtype=xp.int32).reshape(s2)
        return a + b, a * b, a < b

    same(body)


@pytest.mark.parametrize("shapes", [((3,), (4,)), ((2, 3), (3, 2)), ((2, 1, 3), (4, 2)), ((0,), (2,))],
                         ids=repr)
def test_broadcasting_failure(same, shapes):
    s1, s2 = shapes
    err = same(lambda xp: xp.ones(s1) + xp.ones(s2))
    assert isinstance(err, ValueError)


def test_error_does_not_poison_later_ops(same):
    same(lambda xp: xp.ones(3) - xp.ones(2))
    same(lambda xp: xp.ones(3) - xp.ones(3))


# ---------------------------------------------------------------- matmul


@pytest.mark.parametrize("shapes", [
    ((2, 3), (3, 4)), ((3,), (3,)), ((3,), (3, 2)), ((2, 3), (3,)), ((5, 2, 3), (3, 4)),
    ((5, 2, 3), (5, 3, 1)),
], ids=repr)
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "complex64"])
def test_matmul_operator(same, shapes, dtype):
    s1, s2 = shapes

    def body(xp):
        a = (xp.arange(int(np.prod(s1))).reshape(s1) % 5).astype(dtype)
        b = (xp.arange(int(np.prod(s2))).reshape(s2) % 3 - 1).astype(dtype)
        return a @ b

    same(body)


def test_matmul_errors(same):
    same(lambda xp: xp.ones((2, 3)) @ xp.ones((2, 3)))
    same(lambda xp: xp.ones(3) @ 2.0)
    same(lambda xp: xp.asarray(2.0) @ xp.ones(3))


def test_matmul_reflected_with_numpy(cp):
    """NumPy multiplies; cupy.matmul's typed arguments refuse a host array, on any device."""
    host = np.arange(6.0).reshape(2, 3)
    with pytest.raises(TypeError, match="Argument 'a' has incorrect type"):
        host @ cp.ones((3, 2))


def test_imatmul(same):
    """NumPy multiplies in place; cupy.ndarray has no ``__imatmul__``, so ``y @= b`` rebinds y."""
    def body(xp):
        x = xp.arange(4.0).reshape(2, 2)
        y = x
        y @= xp.asarray([[0.0, 1.0], [1.0, 0.0]])
        return x, y, y is x

    same(body)


# ---------------------------------------------------------------- numpy scalars / host arrays on the left


@pytest.mark.parametrize("op", ["add", "mul", "sub", "lt"])
def test_numpy_array_on_the_left(cp, op):
    """``host <op> remote`` is NumPy's ufunc handing over to the remote array's ``__array_ufunc__``.

    NumPy computes it. CuPy makes no implicit host-to-device copy: its ufuncs raise
    ``TypeError: Unsupported type <class 'numpy.ndarray'>``, and so does the remote, on a pool
    of GPUs and on the NumPy device alike (kernelproxy/ufunc_operands.py).
    """
    with pytest.raises(TypeError, match=r"Unsupported type <class 'numpy\.ndarray'>"):
        getattr(operator, op)(np.arange(3.0), cp.arange(3.0))


def test_numpy_scalar_left(same):
    same(lambda xp: np.float32(2) * xp.arange(3, dtype=xp.float32))
    same(lambda xp: np.float32(2) * xp.arange(3, dtype=xp.float16))
    same(lambda xp: np.int8(2) ** xp.arange(3, dtype=xp.int8))
    same(lambda xp: np.float64(10) / xp.arange(1, 4))
    # NumPy turns a NumPy scalar left of a comparison into a 0-d array before handing over
    # (numpy/numpy#12142); CuPy's __array_ufunc__ makes that a Python scalar again
    same(lambda xp: np.int64(1) > xp.arange(3))
    same(lambda xp: np.float32(1.5) <= xp.arange(3, dtype=xp.float32))
    same(lambda xp: np.uint8(2) == xp.arange(3, dtype=xp.uint8))
    same(lambda xp: np.asarray(1.0) != xp.arange(3.0))


def test_zero_dim_operands(same):
    same(lambda xp: xp.asarray(3) + xp.asarray(4))
    same(lambda xp: xp.asarray(3.0) * xp.arange(3))
    same(lambda xp: -xp.asarray(3.5))


def test_large_host_operands(same):
    host = np.arange(50_000, dtype=np.float64)  # 400 kB: larger than an inline value

    def body(xp):
        x, h = xp.ones(50_000), xp.asarray(host)
        y = x + h
        x *= h
        return y, x, h - xp.ones(50_000)

    same(body)
    x = same.cp.ones(50_000)   # the host array itself is no operand: CuPy's TypeError, any device
    for op in (lambda: x + host, lambda: x.__imul__(host), lambda: host - x):
        with pytest.raises(TypeError, match="Unsupported type"):
            op()
