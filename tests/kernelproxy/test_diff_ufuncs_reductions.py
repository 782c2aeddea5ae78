"""Differential tests: ufuncs, reductions, products, linalg and fft."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from tests.differential import POOL_RUNS_NUMPY, REFERENCE_IS_NUMPY

UNARY_UFUNCS = ["negative", "absolute", "sign", "exp", "expm1", "log1p", "sqrt", "square", "sin",
                "cos", "tanh", "arctan", "floor", "ceil", "trunc", "rint", "isnan", "isfinite",
                "signbit", "logical_not", "cbrt", "deg2rad"]
BINARY_UFUNCS = ["add", "subtract", "multiply", "divide", "power", "maximum", "minimum", "fmax",
                 "arctan2", "hypot", "greater", "less_equal", "equal", "logical_and", "logical_xor",
                 "copysign", "floor_divide", "remainder", "fmod"]


def _data(xp, dtype="float64"):
    return xp.asarray([[0.5, 1.0, 2.0], [3.0, 4.5, 0.25]], dtype=dtype)


# ---------------------------------------------------------------- ufuncs


@pytest.mark.parametrize("name", UNARY_UFUNCS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_unary_ufuncs(same, name, dtype):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # sqrt of a negative number
        same(lambda xp: getattr(xp, name)(_data(xp, dtype) - 1))


@pytest.mark.parametrize("name", BINARY_UFUNCS)
def test_binary_ufuncs(same, name):
    same(lambda xp: getattr(xp, name)(_data(xp), _data(xp)[::-1] + 0.5))
    same(lambda xp: getattr(xp, name)(_data(xp, "float32"), 2))


@pytest.mark.parametrize("name", ["add", "multiply", "maximum", "bitwise_and", "left_shift", "gcd",
                                  "right_shift", "floor_divide"])
def test_integer_ufuncs(same, name):
    same(lambda xp: getattr(xp, name)(xp.arange(1, 7, dtype=xp.int32).reshape(2, 3), xp.asarray([1, 2, 3])))


@pytest.mark.parametrize("name", ["add", "multiply", "sqrt", "negative", "subtract"])
def test_ufunc_out_returns_out(cp, name):
    fn = getattr(cp, name)
    a = cp.arange(1.0, 7.0).reshape(2, 3)
    out = cp.empty((2, 3))
    nin = getattr(np, name).nin
    args = (a,) * nin
    result = fn(*args, out=out)
    assert result is out
    expected = getattr(np, name)(*(np.arange(1.0, 7.0).reshape(2, 3),) * nin)
    np.testing.assert_allclose(out.get(), expected)
    result = fn(*args, out=(out,))
    assert result is out
    # positional out, as NumPy and CuPy also accept
    out2 = cp.zeros((2, 3))
    result = fn(*args, out2)
    assert result is out2
    np.testing.assert_allclose(out2.get(), expected)


def test_ufunc_out_differential(same):
    def body(xp):
        a = xp.arange(6.0).reshape(2, 3)
        out = xp.zeros((2, 3))
        r = xp.add(a, 1, out=out)
        xp.multiply(out, 2, out=out)
        return r is out, out, r

    same(body)


def test_ufunc_out_view_writes_base(same):
    def body(xp):
        base = xp.zeros((3, 4))
        xp.add(xp.ones(4), 1, out=base[1])
        xp.sqrt(xp.full(3, 9.0), out=base[:, 3])
        return base

    same(body)


def test_ufunc_out_errors(same):
    same(lambda xp: xp.add(xp.ones(3), 1, out=xp.zeros(4)))
    same(lambda xp: xp.add(xp.ones(3), 1.5, out=xp.zeros(3, dtype=xp.int64)))


def test_ufunc_out_other_dtype(same):
    def body(xp):
        out = xp.zeros(3, dtype=xp.float32)
        xp.add(xp.arange(3), xp.arange(3), out=out)
        return out

    same(body)


@pytest.mark.parametrize("dtype", ["float32", "float64", "complex128", "int64"])
def test_ufunc_dtype(same, dtype):
    same(lambda xp: xp.add(xp.arange(3, dtype=xp.int16), 1, dtype=dtype))
    same(lambda xp: xp.multiply(xp.arange(3.0), 2, dtype=dtype, casting="unsafe"))


def test_ufunc_dtype_unsafe_raises(same):
    same(lambda xp: xp.add(xp.arange(3.0), 1, dtype=xp.int32))


def test_ufunc_where(same):
    def body(xp):
        out = xp.full(4, -1.0)
        xp.sqrt(xp.asarray([4.0, 9.0, 16.0, 25.0]), out=out, where=xp.asarray([True, False, True, False]))
        return out

    same(body)


def test_multi_output_ufuncs(same):
    same(lambda xp: xp.modf(xp.asarray([1.5, -2.25, 3.0])))
    same(lambda xp: xp.frexp(xp.asarray([1.0, 8.0, 0.375])))
    same(lambda xp: xp.divmod(xp.arange(7), 3))


def test_ufunc_on_host_array_dispatch(cp):
    """A NumPy ufunc given a remote array runs remotely (``__array_ufunc__``)."""
    x = cp.arange(4.0)
    r = np.sqrt(x)
    assert isinstance(r, cp.ndarray)
    np.testing.assert_allclose(r.get(), np.sqrt(np.arange(4.0)))
    r = np.add(np.float32(1), x)
    assert isinstance(r, cp.ndarray)
    np.testing.assert_allclose(r.get(), np.arange(4.0) + 1)
    with pytest.raises(TypeError):  # a host array is refused, as CuPy does: see the test below
        np.add(np.ones(4), x)


def test_ufunc_with_host_array_operand(same):
    """NumPy computes ``np.add(host, remote)``; CuPy's ``__array_ufunc__`` passes the NumPy
    array on and its ufunc raises ``TypeError: Unsupported type <class 'numpy.ndarray'>``
    (no implicit host-to-device copy), and so does the remote on any device."""
    for call in (lambda: np.add(np.ones(4), same.cp.arange(4.0)),
                 lambda: np.multiply(same.cp.arange(4.0), np.full(4, 2.0))):
        with pytest.raises(TypeError, match=r"Unsupported type <class 'numpy\.ndarray'>"):
            call()
    # a 0-d host array given to a comparison is a Python scalar to CuPy (numpy/numpy#12142)
    same(lambda xp: np.greater(np.asarray(1.5), xp.arange(4.0)))
    same(lambda xp: np.equal(xp.arange(4), np.asarray(2)))


def test_array_ufunc_follows_cupy_conventions(cp):
    """What ``cupy.ndarray.__array_ufunc__`` refuses, the remote array refuses, on any device."""
    x = cp.arange(4.0)
    with pytest.raises(TypeError):  # a list is no operand there: NotImplemented, NumPy raises
        np.add(x, [1.0, 2.0, 3.0, 4.0])
    with pytest.raises(ValueError):  # out= must hold exactly one array
        np.modf(x, out=(cp.zeros(4), cp.zeros(4)))
    o = cp.zeros(4)
    assert np.add(x, 1, out=o) is o
    assert np.add(x, 1, out=(o,)) is o
    np.testing.assert_array_equal(o.get(), np.arange(4.0) + 1)


# ---------------------------------------------------------------- reductions

REDUCTIONS = ["sum", "prod", "mean", "std", "var", "min", "max", "argmax", "argmin", "all", "any",
              "cumsum"]
AXES = [None, 0, 1, -1, -2, 2, (0, 2), (-1, 0), ()]


def _cube(xp):
    return (xp.arange(24, dtype=xp.float64).reshape(2, 3, 4) % 7) - 2


@pytest.mark.parametrize("axis", AXES, ids=repr)
@pytest.mark.parametrize("name", REDUCTIONS)
def test_reductions_axis(same, name, axis):
    if name in ("argmax", "argmin", "cumsum") and isinstance(axis, tuple):
        err = same(lambda xp: getattr(_cube(xp), name)(axis=axis))
        if REFERENCE_IS_NUMPY or name == "cumsum":  # CuPy's argmax/argmin take a tuple of axes
            assert isinstance(err, TypeError)
        return
    same(lambda xp: getattr(_cube(xp), name)(axis=axis))
    same(lambda xp: getattr(xp, name)(_cube(xp), axis=axis))


@pytest.mark.parametrize("name,axis", [
    (name, axis) for name in ["sum", "mean", "max", "argmin", "any", "cumsum", "std"]
    for axis in [3, -4, (0, 3), (1, 1)] if not (isinstance(axis, tuple) and name in ("argmin", "cumsum"))
], ids=repr)
def test_reductions_bad_axis(same, name, axis):
    err = same(lambda xp: getattr(_cube(xp), name)(axis=axis))
    if axis != (1, 1):
        assert isinstance(err, IndexError)  # AxisError is an IndexError (and a ValueError)
        if REFERENCE_IS_NUMPY or name != "std":  # CuPy's std raises a plain IndexError
            assert isinstance(err, np.exceptions.AxisError)


def test_axis_error_class_is_numpy_s(cp):
    with pytest.raises(np.exceptions.AxisError) as info:
        cp.arange(3).sum(axis=1).get()
    assert type(info.value) is np.exceptions.AxisError
    assert isinstance(info.value, ValueError) and isinstance(info.value, IndexError)


@pytest.mark.parametrize("axis", [None, 0, -1, (0, 2)], ids=repr)
@pytest.mark.parametrize("name", ["sum", "prod", "mean", "std", "var", "min", "max", "all", "any"])
def test_reductions_keepdims(same, name, axis):
    same(lambda xp: getattr(_cube(xp), name)(axis=axis, keepdims=True))


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int32", "float16", "float32", "bool", "complex64"])
@pytest.mark.parametrize("name", ["sum", "prod", "mean", "cumsum", "max", "argmax", "any"])
def test_reductions_input_dtypes(same, name, dtype):
    same(lambda xp: getattr(xp.asarray([[1, 2, 0], [3, 1, 1]], dtype=dtype), name)())
    same(lambda xp: getattr(xp.asarray([[1, 2, 0], [3, 1, 1]], dtype=dtype), name)(axis=0))


@pytest.mark.parametrize("dtype", ["float32", "int64", "float64", "complex128", "int8"])
@pytest.mark.parametrize("name", ["sum", "prod", "mean", "cumsum"])
def test_reductions_dtype_argument(same, name, dtype):
    same(lambda xp: getattr(xp.arange(1, 7, dtype=xp.int16).reshape(2, 3), name)(axis=1, dtype=dtype))


def test_std_var_ddof(same):
    same(lambda xp: _cube(xp).std(ddof=1))
    same(lambda xp: _cube(xp).var(axis=1, ddof=2))


def test_reductions_out(same, cp):
    def body(xp):
        x = _cube(xp)
        o1 = xp.zeros((3, 4))
        r1 = x.sum(axis=0, out=o1)
        o2 = xp.zeros(4, dtype=xp.int64)
        r2 = xp.argmax(x.reshape(6, 4), axis=0, out=o2)
        o3 = xp.zeros((2, 3, 4))
        r3 = xp.cumsum(x, axis=2, out=o3)
        o4 = xp.zeros(())
        r4 = xp.max(x, out=o4)
        # cupy.cumsum with an axis returns a view of its ``out`` (of the same shape), not ``out``:
        # compared here through what it returns and shares
        return (r1 is o1, r2 is o2, r3.shape, bool(xp.shares_memory(r3, o3)), r4 is o4,
                o1, o2, o3, o4, r3)

    same(body)
    o = cp.zeros((2, 3, 4))
    assert cp.cumsum(_cube(cp), axis=2, out=o) is o  # the remote array returns ``out`` itself


def test_reductions_out_wrong_shape(same):
    same(lambda xp: _cube(xp).sum(axis=0, out=xp.zeros(3)))


def test_reduction_of_empty(same):
    same(lambda xp: xp.zeros((0, 3)).sum(axis=0))
    same(lambda xp: xp.zeros((0, 3)).prod())
    same(lambda xp: xp.zeros((0, 3)).max(axis=1))
    same(lambda xp: xp.zeros((0, 3)).max())  # ValueError: zero-size array
    same(lambda xp: xp.zeros((0, 3)).argmin())
    same(lambda xp: xp.zeros(0).all())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        same(lambda xp: xp.zeros(0).mean())


def test_reductions_with_nan(same):
    same(lambda xp: xp.asarray([1.0, np.nan, 3.0]).max())
    same(lambda xp: xp.asarray([1.0, np.nan, 3.0]).argmin())
    same(lambda xp: xp.nanmax(xp.asarray([1.0, np.nan, 3.0])))
    same(lambda xp: xp.nansum(xp.asarray([[1.0, np.nan], [np.nan, 2.0]]), axis=0))


def test_reduction_results_are_0d_arrays(cp):
    x = cp.arange(5.0)
    for r in (x.sum(), x.mean(), cp.max(x), x.argmax(), x.all(), cp.sum(x)):
        assert isinstance(r, cp.ndarray)
        assert r.shape == ()


def test_other_reductions(same):
    same(lambda xp: xp.count_nonzero(_cube(xp), axis=1))
    same(lambda xp: xp.ptp(_cube(xp), axis=0))
    same(lambda xp: xp.median(_cube(xp), axis=-1))
    same(lambda xp: xp.cumprod(xp.arange(1, 6)))
    same(lambda xp: xp.average(_cube(xp), axis=0, weights=xp.asarray([1.0, 3.0])))
    same(lambda xp: xp.percentile(_cube(xp), 30))
    same(lambda xp: xp.diff(_cube(xp), axis=1))


# ---------------------------------------------------------------- products


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "complex128"])
def test_matmul_dot(same, dtype):
    def body(xp):
        a = (xp.arange(12).reshape(3, 4) % 5).astype(dtype)
        b = (xp.arange(8).reshape(4, 2) - 3).astype(dtype)
        v = xp.arange(4).astype(dtype)
        return (xp.matmul(a, b), a @ b, xp.dot(a, b), a.dot(b), xp.dot(a, v), xp.dot(v, v),
                xp.dot(2, v), xp.vdot(v, v), xp.inner(v, v), xp.outer(v, v[:2]))

    same(body)


def test_matmul_batched_and_errors(same):
    same(lambda xp: xp.matmul(xp.ones((4, 2, 3)), xp.ones((3, 5))))
    same(lambda xp: xp.matmul(xp.ones((2, 3)), xp.ones((4, 3))))
    same(lambda xp: xp.dot(xp.ones((2, 3)), xp.ones((2, 3))))
    same(lambda xp: xp.matmul(xp.ones(3), 2))


def test_matmul_out(same):
    def body(xp):
        out = xp.zeros((2, 2))
        r = xp.matmul(xp.ones((2, 3)), xp.ones((3, 2)), out=out)
        return r is out, out

    same(body)


@pytest.mark.parametrize("shapes,axes", [
    (((2, 3, 4), (3, 4)), 2),
    (((2, 3, 4), (4, 2)), 1),
    (((2, 3), (2,)), 0),
    (((4, 3), (3, 4)), ([1, 0], [0, 1])),
    (((2, 3, 4), (4, 2)), ((2,), (0,))),
    (((2, 3, 4), (3, 2, 5)), ([0, 1], [1, 0])),
], ids=repr)
def test_tensordot(same, shapes, axes):
    def body(xp):
        a, b = (xp.arange(float(np.prod(s))).reshape(s) - 3 for s in shapes)
        return xp.tensordot(a, b, axes=axes)

    same(body)


def test_tensordot_shape_mismatch(same):
    same(lambda xp: xp.tensordot(xp.ones((2, 3)), xp.ones((2, 3)), axes=([1], [1]))[0])
    same(lambda xp: xp.tensordot(xp.ones((2, 3)), xp.ones((2, 3)), axes=([0], [1])))


@pytest.mark.parametrize("spec,shapes", [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("ii->i", [(3, 3)]),
    ("ii", [(3, 3)]),
    ("ij->ji", [(2, 3)]),
    ("bij,bjk->bik", [(2, 2, 3), (2, 3, 2)]),
    ("i,i->", [(4,), (4,)]),
    ("i,j->ij", [(2,), (3,)]),
    ("...i,...i->...", [(2, 3), (2, 3)]),
    ("ijk->", [(2, 3, 4)]),
], ids=lambda v: str(v))
def test_einsum(same, spec, shapes):
    def body(xp):
        ops = [xp.arange(int(np.prod(s)), dtype=xp.float64).reshape(s) - 1 for s in shapes]
        return xp.einsum(spec, *ops)

    same(body)


def test_einsum_errors(same):
    same(lambda xp: xp.einsum("ij,jk->ik", xp.ones((2, 3)), xp.ones((2, 3))))


def test_other_products(same):
    same(lambda xp: xp.kron(xp.eye(2), xp.arange(4.0).reshape(2, 2)))
    same(lambda xp: xp.cross(xp.asarray([1.0, 0, 0]), xp.asarray([0, 1.0, 0])))
    same(lambda xp: xp.trace(xp.arange(9).reshape(3, 3)))
    same(lambda xp: xp.arange(9).reshape(3, 3).trace(offset=1))


# ---------------------------------------------------------------- linalg

_MAT = [[4.0, 1.0, 2.0], [1.0, 3.0, 0.5], [2.0, 0.5, 5.0]]


@pytest.mark.parametrize("dtype", ["float32", "float64", "complex128"])
def test_linalg_inv_det_solve(same, dtype):
    def body(xp):
        a = xp.asarray(_MAT, dtype=dtype)
        b = xp.asarray([1.0, 2.0, 3.0], dtype=dtype)
        return (xp.linalg.inv(a), xp.linalg.det(a), xp.linalg.solve(a, b),
                xp.linalg.solve(a, xp.eye(3, dtype=dtype)))

    same(body)


def test_linalg_singular(same):
    # CuPy does not check for singular matrices unless told to (cupyx.errstate(linalg="raise")):
    # inf/nan values, compared as such
    err = same(lambda xp: xp.linalg.inv(xp.ones((3, 3))))
    if REFERENCE_IS_NUMPY:
        assert isinstance(err, np.linalg.LinAlgError)
    err = same(lambda xp: xp.linalg.solve(xp.zeros((2, 2)), xp.ones(2)))
    if REFERENCE_IS_NUMPY:
        assert isinstance(err, np.linalg.LinAlgError)


def test_linalg_non_square(same):
    same(lambda xp: xp.linalg.inv(xp.ones((2, 3))))
    same(lambda xp: xp.linalg.det(xp.ones((2, 3))))


@pytest.mark.parametrize("kwargs", [{}, {"ord": 1}, {"ord": np.inf}, {"ord": "fro"}, {"axis": 0}, {"axis": 1},
                                    {"ord": 2, "axis": 1}, {"keepdims": True}, {"ord": "nuc"}], ids=repr)
def test_linalg_norm(same, kwargs):
    same(lambda xp: xp.linalg.norm(xp.asarray(_MAT) - 2, **kwargs))


def test_linalg_norm_vector(same):
    same(lambda xp: xp.linalg.norm(xp.asarray([3.0, 4.0])))
    same(lambda xp: xp.linalg.norm(xp.asarray([3.0, 4.0], dtype=xp.float32), ord=1))
    same(lambda xp: xp.linalg.norm(xp.asarray([3 + 4j, 0])))


def test_linalg_qr(same):
    def body(xp):
        a = xp.asarray(_MAT) + xp.arange(9.0).reshape(3, 3)
        q, r = xp.linalg.qr(a)
        return q.shape, r.shape, q @ r, xp.abs(xp.diagonal(r)), q.T @ q

    same(body)
    same(lambda xp: tuple(x.shape for x in xp.linalg.qr(xp.ones((4, 2)))))
    same(lambda xp: xp.linalg.qr(xp.ones((4, 2)), mode="r").shape)


def test_linalg_svd(same):
    def body(xp):
        a = xp.arange(12.0).reshape(4, 3) ** 1.5
        u, s, vh = xp.linalg.svd(a, full_matrices=False)
        uf, sf, vhf = xp.linalg.svd(a)
        return s, u.shape, vh.shape, uf.shape, vhf.shape, (u * s) @ vh, xp.linalg.svd(a, compute_uv=False)

    same(body)


def test_linalg_eigh(same):
    def body(xp):
        a = xp.asarray(_MAT)
        w, v = xp.linalg.eigh(a)
        return w, v.shape, (v * w) @ v.T, xp.linalg.eigvalsh(a)

    same(body)


def test_linalg_multi_results_are_tuples(cp):
    a = cp.asarray(_MAT)
    for result, n in ((cp.linalg.qr(a), 2), (cp.linalg.svd(a), 3), (cp.linalg.eigh(a), 2),
                      (cp.linalg.slogdet(a), 2)):
        assert isinstance(result, tuple) and len(result) == n
        assert all(isinstance(x, cp.ndarray) for x in result)


def test_linalg_misc(same):
    same(lambda xp: xp.linalg.matrix_power(xp.asarray(_MAT), 3))
    same(lambda xp: xp.linalg.matrix_rank(xp.ones((3, 3))))
    same(lambda xp: xp.linalg.pinv(xp.arange(6.0).reshape(2, 3)))
    same(lambda xp: xp.linalg.cholesky(xp.asarray(_MAT)))
    same(lambda xp: tuple(xp.linalg.slogdet(xp.asarray(_MAT))))
    same(lambda xp: xp.linalg.cholesky(-xp.eye(2)))


def test_linalg_batched(same):
    def body(xp):
        a = xp.stack([xp.asarray(_MAT), xp.eye(3) * 2])
        return xp.linalg.inv(a), xp.linalg.det(a)

    same(body)


def test_linalg_error_classes(cp):
    assert cp.linalg.LinAlgError is np.linalg.LinAlgError
    with pytest.raises(np.linalg.LinAlgError):  # not square: NumPy and CuPy both raise
        cp.linalg.inv(cp.zeros((2, 3))).get()
    if POOL_RUNS_NUMPY:  # CuPy returns inf/nan for a singular matrix (see test_linalg_singular)
        with pytest.raises(np.linalg.LinAlgError):
            cp.linalg.inv(cp.zeros((2, 2))).get()


# ---------------------------------------------------------------- fft


@pytest.mark.parametrize("dtype", ["float32", "float64", "complex64", "complex128"])
def test_fft_basic(same, dtype):
    def body(xp):
        x = xp.cos(xp.arange(16.0)).astype(dtype)
        return xp.fft.fft(x), xp.fft.ifft(xp.fft.fft(x)), xp.fft.fft(x, n=8), xp.fft.fft(x, norm="ortho")

    same(body)


def test_fft_real_and_nd(same):
    def body(xp):
        x = xp.sin(xp.arange(24.0)).reshape(4, 6)
        return (xp.fft.rfft(x), xp.fft.irfft(xp.fft.rfft(x), n=6), xp.fft.fft2(x), xp.fft.ifft2(x),
                xp.fft.fftn(x, axes=(0,)), xp.fft.rfftn(x), xp.fft.fft(x, axis=0))

    same(body)


def test_fft_helpers(same):
    same(lambda xp: (xp.fft.fftfreq(8), xp.fft.fftfreq(5, d=0.1), xp.fft.rfftfreq(8)))
    same(lambda xp: (xp.fft.fftshift(xp.arange(6)), xp.fft.ifftshift(xp.arange(5))))


def test_fft_errors(same):
    same(lambda xp: xp.fft.fft(xp.ones(4), n=0))
    same(lambda xp: xp.fft.fft(xp.ones(4), axis=2))


# ---------------------------------------------------------------- positional out, ufunc dispatch


def test_positional_out_identity(cp):
    a = cp.arange(6.0).reshape(2, 3)
    o = cp.zeros(3)
    assert a.sum(0, None, o) is o
    np.testing.assert_array_equal(o.get(), [3.0, 5.0, 7.0])
    o2 = cp.zeros(3)
    assert cp.sum(a, 0, None, o2) is o2
    o3 = cp.zeros(2, dtype=cp.int64)
    assert a.argmax(1, o3) is o3
    np.testing.assert_array_equal(o3.get(), [2, 2])
    o4 = cp.zeros((2, 3))
    assert cp.clip(a, 1, 4, o4) is o4
    assert a.clip(1, 4, o4) is o4
    o5 = cp.zeros(5)
    assert cp.concatenate([a[0], a[1, :2]], 0, o5) is o5
    np.testing.assert_array_equal(o5.get(), [0.0, 1.0, 2.0, 3.0, 4.0])


def test_positional_out_differential(same):
    def body(xp):
        a = xp.arange(6.0).reshape(2, 3)
        o = xp.zeros(3)
        r = a.max(0, o)
        o2 = xp.zeros((2, 3))
        r2 = xp.add(a, 1, o2)
        return r is o, r2 is o2, o, o2

    same(body)


def test_multi_output_ufunc_dispatch_from_numpy(cp):
    a = cp.asarray([1.5, -2.25])
    frac, whole = np.modf(a)
    assert isinstance(frac, cp.ndarray) and isinstance(whole, cp.ndarray)
    np.testing.assert_array_equal(frac.get(), [0.5, -0.25])
    q, r = np.divmod(cp.arange(5), 2)
    np.testing.assert_array_equal(q.get(), [0, 0, 1, 1, 2])
    o1, o2 = cp.zeros(2), cp.zeros(2)
    result = cp.modf(a, out=(o1, o2))
    assert result[0] is o1 and result[1] is o2
    np.testing.assert_array_equal(o2.get(), [1.0, -2.0])


def test_multi_output_ufunc_out(same):
    def body(xp):
        a = xp.asarray([1.5, -2.25])
        o1, o2 = xp.zeros(2), xp.zeros(2)
        r = xp.modf(a, out=(o1, o2))
        return r[0] is o1, r[1] is o2, o1, o2

    same(body)


def test_host_out_array_refused(cp):
    """A host ``out`` would only be filled on the pool: refused, as CuPy refuses it."""
    host = np.zeros(3)
    with pytest.raises(TypeError):
        cp.add(cp.arange(3.0), 1, out=host)
    with pytest.raises(TypeError):
        cp.add(cp.arange(3.0), 1, host)
    with pytest.raises(TypeError):
        cp.arange(3.0).sum(out=np.zeros(()))
    with pytest.raises(TypeError):
        np.add(cp.arange(3.0), 1, out=host)
    with pytest.raises(TypeError):
        cp.modf(cp.arange(3.0), out=(np.zeros(3), np.zeros(3)))
    np.testing.assert_array_equal(host, np.zeros(3))
    r = cp.add(cp.arange(3.0), 1, out=None)
    assert isinstance(r, cp.ndarray)
    np.testing.assert_array_equal(r.get(), [1.0, 2.0, 3.0])
    r = cp.sqrt(cp.arange(4.0), out=(None,))
    np.testing.assert_array_equal(r.get(), [0.0, 1.0, np.sqrt(2), np.sqrt(3)])

