"""Differential tests: host transfers, Python conversions, metadata, repr, dispatch, warnings."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from tests.differential import POOL_RUNS_NUMPY

DTYPES = ["bool", "int8", "uint8", "int16", "int32", "int64", "uint64", "float16", "float32", "float64",
          "complex64", "complex128"]


# ---------------------------------------------------------------- get / set / asnumpy


@pytest.mark.parametrize("dtype", DTYPES)
def test_get_roundtrip(cp, dtype):
    host = (np.arange(12).reshape(3, 4) % 5).astype(dtype)
    remote = cp.asarray(host)
    back = remote.get()
    assert isinstance(back, np.ndarray)
    assert back.dtype == host.dtype and back.shape == host.shape
    np.testing.assert_array_equal(back, host)
    back[0, 0] = 1  # a host array of its own
    np.testing.assert_array_equal(remote.get(), host)


def test_get_layouts(cp):
    a = cp.arange(12.0).reshape(3, 4)
    t = a.T.get()
    np.testing.assert_array_equal(t, np.arange(12.0).reshape(3, 4).T)
    assert t.flags.c_contiguous
    assert a.T.get(order="F").flags.f_contiguous
    assert a.T.get(order="A").flags.f_contiguous
    s = a[:, ::-2].get()
    np.testing.assert_array_equal(s, np.arange(12.0).reshape(3, 4)[:, ::-2])
    z = cp.asarray(2.5).get()
    assert z.shape == () and z.dtype == np.float64 and z == 2.5
    e = cp.zeros((0, 3)).get()
    assert e.shape == (0, 3)


def test_get_out(cp):
    out = np.empty((2, 3))
    r = cp.arange(6.0).reshape(2, 3).get(out=out)
    assert r is out
    np.testing.assert_array_equal(out, np.arange(6.0).reshape(2, 3))
    with pytest.raises(ValueError):
        cp.arange(6.0).get(out=np.empty(5))
    with pytest.raises(TypeError):
        cp.arange(6.0).get(out=np.empty(6, dtype=np.float32))


def test_set(cp):
    a = cp.zeros((2, 3))
    b = a[:]
    a.set(np.arange(6.0).reshape(2, 3))
    np.testing.assert_array_equal(a.get(), np.arange(6.0).reshape(2, 3))
    np.testing.assert_array_equal(b.get(), np.arange(6.0).reshape(2, 3))  # same memory
    big = cp.zeros(5000)
    big.set(np.ones(5000))  # travels as its own frame
    assert float(big.sum()) == 5000.0
    a.set(np.asfortranarray(np.ones((2, 3))))
    np.testing.assert_array_equal(a.get(), np.ones((2, 3)))


def test_set_into_view(cp):
    a = cp.zeros((3, 4))
    a[1].set(np.arange(4.0))
    a[:, 3].set(np.full(3, 9.0))
    expected = np.zeros((3, 4))
    expected[1] = np.arange(4.0)
    expected[:, 3] = 9
    np.testing.assert_array_equal(a.get(), expected)


def test_set_errors(cp):
    a = cp.zeros((2, 3))
    with pytest.raises(ValueError):
        a.set(np.zeros((3, 2)))
    with pytest.raises(ValueError):
        a.set(np.zeros(6))
    with pytest.raises(TypeError):
        a.set(np.zeros((2, 3), dtype=np.float32))
    with pytest.raises(TypeError):
        a.set(np.zeros((2, 3), dtype=np.int64))
    np.testing.assert_array_equal(a.get(), np.zeros((2, 3)))  # untouched, session usable


def test_asnumpy(cp):
    remote = cp.arange(5, dtype=cp.int16)
    host = cp.asnumpy(remote)
    assert isinstance(host, np.ndarray) and host.dtype == np.int16
    np.testing.assert_array_equal(host, np.arange(5))
    local = np.arange(3.0)
    r = cp.asnumpy(local)
    assert isinstance(r, np.ndarray)
    np.testing.assert_array_equal(r, local)
    assert isinstance(cp.asnumpy([1, 2]), np.ndarray)
    assert cp.asnumpy(3.0).shape == ()
    out = np.empty(5, dtype=np.int16)
    assert cp.asnumpy(remote, out=out) is out
    assert cp.asnumpy(cp.arange(6).reshape(2, 3).T, order="F").flags.f_contiguous


def test_numpy_asarray_of_remote_raises(cp):
    a = cp.arange(3)
    with pytest.raises(TypeError):
        np.asarray(a)
    with pytest.raises(TypeError):
        np.array(a)
    with pytest.raises(TypeError):
        np.arange(3) + a.__array__()


# ---------------------------------------------------------------- Python conversions


@pytest.mark.parametrize("dtype", DTYPES)
def test_item_and_scalars(same, dtype):
    def body(xp):
        a = xp.asarray([[2, 0, 1]], dtype=dtype)
        s = a[0, 0]
        out = [s.item(), a[0, 2].item(), bool(s), complex(s)]
        if dtype.startswith("complex"):
            return out
        return out + [float(s), int(s), float(a[0, 1])]

    same(body)
    # NumPy's item() takes an index; CuPy's takes none (TypeError on both sides there)
    same(lambda xp: (xp.asarray([[2, 0, 1]], dtype=dtype).item(0),
                     xp.asarray([[2, 0, 1]], dtype=dtype).item(0, 2)))


def test_conversion_types(same):
    same(lambda xp: (type(float(xp.asarray(1.5))), type(int(xp.asarray(3))), type(bool(xp.asarray(0)))))
    same(lambda xp: (int(xp.asarray(-2.7)), float(xp.asarray([3])), int(xp.asarray([[4]]))))
    same(lambda xp: (xp.asarray(2.5).item(), type(xp.asarray(2.5, dtype=xp.float32).item())))
    same(lambda xp: xp.asarray([1, 2]).item(-1))
    same(lambda xp: xp.arange(6).reshape(2, 3).item((1, 2)))


def test_complex_to_float_raises(same):
    same(lambda xp: float(xp.asarray(1 + 2j)))
    same(lambda xp: int(xp.asarray(1j)))


def test_index_protocol(same):
    same(lambda xp: [10, 20, 30][xp.asarray(1)])
    same(lambda xp: [10, 20, 30][xp.asarray(1.0)])
    same(lambda xp: list(range(10))[xp.asarray(1):xp.asarray(3)])
    same(lambda xp: [10, 20, 30][xp.asarray([1])])


def test_conversion_errors(same):
    err = same(lambda xp: float(xp.arange(3.0)))
    assert isinstance(err, TypeError)
    err = same(lambda xp: int(xp.arange(2)))
    assert isinstance(err, TypeError)
    err = same(lambda xp: bool(xp.arange(3)))
    assert isinstance(err, ValueError)
    err = same(lambda xp: len(xp.asarray(1.0)))
    assert isinstance(err, TypeError)
    err = same(lambda xp: iter(xp.asarray(1.0)))
    assert isinstance(err, TypeError)
    err = same(lambda xp: xp.arange(3).item())
    assert isinstance(err, ValueError)
    same(lambda xp: xp.arange(3).item(5))
    same(lambda xp: complex(xp.arange(2)))


def test_bool_of_size_one_and_empty(same):
    same(lambda xp: (bool(xp.asarray([0])), bool(xp.asarray([[7]])), bool(xp.asarray(True))))
    same(lambda xp: bool(xp.zeros(0)))


def test_len_and_iteration(same):
    def body(xp):
        a = xp.arange(12).reshape(3, 4)
        rows = list(a)
        return len(a), len(a[0]), rows, [float(v) for v in a[1]], len(xp.zeros((0, 2)))

    same(body)


def test_iteration_items_are_remote(cp):
    items = list(cp.arange(3))
    assert len(items) == 3
    assert all(isinstance(x, cp.ndarray) and x.shape == () for x in items)
    assert [int(x) for x in items] == [0, 1, 2]


def test_contains(same):
    same(lambda xp: (2 in xp.arange(5), 7 in xp.arange(5), 2.0 in xp.arange(5)))


@pytest.mark.parametrize("dtype", DTYPES)
def test_tolist(same, dtype):
    same(lambda xp: xp.asarray([[1, 0], [2, 3]], dtype=dtype).tolist())
    same(lambda xp: xp.asarray(3, dtype=dtype).tolist())


def test_tolist_types(same):
    same(lambda xp: [type(v) for v in xp.asarray([1.5, 2]).tolist()])
    same(lambda xp: xp.zeros((2, 0)).tolist())
    same(lambda xp: xp.arange(6).reshape(3, 2).T.tolist())


# ---------------------------------------------------------------- repr / str


REPR_CASES = [
    lambda xp: xp.arange(5),
    lambda xp: xp.arange(6.0).reshape(2, 3) / 3,
    lambda xp: xp.asarray(3.5),
    lambda xp: xp.asarray(7, dtype=xp.int8),
    lambda xp: xp.zeros((0, 3)),
    lambda xp: xp.asarray([True, False]),
    lambda xp: xp.asarray([1 + 2j, -1j], dtype=xp.complex64),
    lambda xp: xp.arange(3, dtype=xp.float16),
    lambda xp: xp.arange(3, dtype=xp.uint32),
    lambda xp: xp.arange(2000),
    lambda xp: xp.asarray([np.nan, np.inf, -np.inf, 1e-30]),
    lambda xp: xp.arange(24.0).reshape(2, 3, 4)[:, ::2].T,
]


@pytest.mark.parametrize("case", REPR_CASES, ids=[str(i) for i in range(len(REPR_CASES))])
def test_repr_and_str(same, case):
    same(lambda xp: (repr(case(xp)), str(case(xp))))


def test_repr_text_is_numpy_s(cp):
    a = cp.arange(6.0).reshape(2, 3)
    assert repr(a) == repr(np.arange(6.0).reshape(2, 3))
    assert str(a) == str(np.arange(6.0).reshape(2, 3))
    assert f"{cp.asarray(2.5):.3f}" == f"{np.float64(2.5):.3f}"


def test_format(same):
    same(lambda xp: (f"{xp.asarray(2.5):.2f}", f"{xp.asarray(7):>4}", format(xp.arange(3))))
    same(lambda xp: f"{xp.arange(3):.2f}")


# ---------------------------------------------------------------- metadata


@pytest.mark.parametrize("dtype", DTYPES)
def test_metadata(same, dtype):
    def body(xp):
        a = xp.zeros((3, 4, 5), dtype=dtype)
        return [(v.shape, v.dtype, v.ndim, v.size, v.nbytes, v.itemsize, v.strides)
                for v in (a, a[1], a[:, ::2], a.T, a[..., 0], a[1, 2, 3], a.reshape(-1))]

    same(body)


def test_dtype_objects_are_numpy_s(cp):
    a = cp.zeros(3, dtype=cp.float32)
    assert type(a.dtype) is type(np.dtype(np.float32))
    assert a.dtype == np.float32 and a.dtype is np.dtype(np.float32)
    assert cp.float32 is np.float32 and cp.dtype is np.dtype
    assert cp.result_type(a, 1.0) == np.float32


def test_flags(same):
    def body(xp):
        a = xp.zeros((3, 4))
        views = (a, a.T, a[:, 1], a[1], a[::2], xp.zeros((3, 4), order="F"), xp.zeros(4),
                 xp.asarray(1.0), a.reshape(4, 3), xp.zeros((1, 4)).T)
        return [(v.flags.c_contiguous, v.flags.f_contiguous, v.flags["C_CONTIGUOUS"], v.flags["F_CONTIGUOUS"],
                 v.flags.fnc, v.flags.forc) for v in views]

    same(body)


def test_flags_owndata(same):
    def body(xp):
        a = xp.zeros((3, 4))
        return (a.flags.owndata, a.T.flags.owndata, a[1:].flags.owndata, a.copy().flags.owndata,
                (a + 1).flags.owndata, a[[0, 1]].flags.owndata)

    same(body)


def test_uploaded_array_owns_its_data(same):
    host = np.arange(6.0).reshape(2, 3)
    same(lambda xp: (xp.asarray(host.copy()).flags.owndata, xp.array(host).flags.owndata))


def test_metadata_is_cached_and_async(cp, session):
    a = cp.arange(12).reshape(3, 4)
    assert a.shape == (3, 4)
    assert a.T.shape == (4, 3)
    assert a.sum(axis=0).shape == (4,)


# ---------------------------------------------------------------- NumPy functions on remote arrays


def test_array_function_dispatch(cp):
    a = cp.arange(6.0).reshape(2, 3)
    s = np.sum(a)
    assert isinstance(s, cp.ndarray) and s.shape == ()
    assert float(s) == 15.0
    for r in (np.mean(a, axis=0), np.concatenate([a, a]), np.where(a > 2, a, 0), np.reshape(a, -1),
              np.linalg.norm(a, axis=1), np.fft.fft(a), np.clip(a, 1, 2), np.exp(a)):
        assert isinstance(r, cp.ndarray), type(r)
    parts = np.split(a, 3, axis=1)
    assert type(parts) is list and all(isinstance(p, cp.ndarray) for p in parts)
    assert np.shares_memory(a, a[0]) is True
    np.testing.assert_allclose(np.linalg.norm(a, axis=1).get(),
                               np.linalg.norm(np.arange(6.0).reshape(2, 3), axis=1))


def test_array_function_matches(same, cp):
    host = np.arange(6.0).reshape(2, 3)

    def body(xp):
        a = xp.asarray(host)
        return (np.sum(a), np.max(a, axis=1), np.transpose(a), np.dot(a, a.T), np.sort(-a, axis=None),
                np.unique(a > 2, return_counts=True), np.linalg.det(a @ a.T))

    same(body)


def test_array_function_metadata_helpers(same):
    """NumPy's metadata functions on remote arrays, as with CuPy's own arrays."""
    def body(xp):
        a = xp.zeros((2, 3), dtype=xp.float32)
        return (np.shape(a), np.ndim(a), np.size(a), np.size(a, 1), np.result_type(a, 1.0),
                np.result_type(a, xp.zeros(1, dtype=xp.int64)), np.can_cast(a, np.float64),
                np.can_cast(a, np.int8), np.iscomplexobj(a), np.isrealobj(a))

    same(body)


def test_array_function_not_allowed(cp):
    with pytest.raises(TypeError):
        np.save("unused.npy", cp.arange(3))  # not on the allow-list: NumPy reports no implementation


# ---------------------------------------------------------------- warnings


#: The floating-point warnings below come from NumPy's error flags; CuPy's kernels set none
#: (``cupy.log(cupy.zeros(3))`` is -inf without a warning), so a GPU pool has none to forward.
_NO_FP_WARNINGS_ON_GPU = pytest.mark.skipif(not POOL_RUNS_NUMPY, reason=(
    "CuPy raises no floating-point warnings (divide by zero, invalid value, overflow): "
    "GPU kernels set no FP error flags"))


def test_warning_reemitted_with_category(same, session):
    with pytest.warns(RuntimeWarning, match="divide by zero"):
        np.log(np.zeros(3))
    from kernelproxy.modules import build_modules
    cp = build_modules()["cupy"]
    if POOL_RUNS_NUMPY:  # CuPy: -inf, no warning (no FP error flags on a GPU)
        with pytest.warns(RuntimeWarning, match="divide by zero"):
            r = cp.log(cp.zeros(3))
            session.sync()
    else:
        r = cp.log(cp.zeros(3))
    assert np.isneginf(r.get()).all()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        same(lambda xp: xp.log(xp.zeros(3)))


@_NO_FP_WARNINGS_ON_GPU
def test_warning_categories(cp, session):
    with pytest.warns(RuntimeWarning, match="invalid value"):
        cp.sqrt(cp.asarray([-1.0]))
        session.sync()
    with pytest.warns(RuntimeWarning, match="overflow"):
        cp.exp(cp.asarray([1000.0]))
        session.sync()


def test_complex_warning_forwarded(cp, session):
    """A warning CuPy itself issues (in Python, not from FP flags) reaches the client on any device."""
    with pytest.warns(np.exceptions.ComplexWarning):
        cp.asarray([1 + 1j]).astype(cp.float64)
        session.sync()


@_NO_FP_WARNINGS_ON_GPU
def test_warning_filters_apply(cp, session):
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        with pytest.raises(RuntimeWarning):
            cp.log(cp.zeros(2))
            session.sync()
    # the session still works afterwards
    assert float(cp.arange(3).sum()) == 3.0


def test_warning_points_at_user_code(cp, session):
    with pytest.warns(Warning) as record:
        if POOL_RUNS_NUMPY:
            cp.log(cp.zeros(3))  # RuntimeWarning: divide by zero
        else:
            cp.asarray([1 + 1j]).astype(cp.float64)  # ComplexWarning: CuPy's own (no FP warnings on a GPU)
        session.sync()
    assert record[0].filename == __file__


# ---------------------------------------------------------------- exception classes


def test_exception_classes_are_numpy_s(cp):
    assert cp.exceptions.AxisError is np.exceptions.AxisError
    assert cp.linalg.LinAlgError is np.linalg.LinAlgError
    assert cp.exceptions.ComplexWarning is np.exceptions.ComplexWarning


def test_errors_surface_at_sync_points(cp, session):
    a = cp.ones(3) + cp.ones(4)  # asynchronous: nothing raised yet
    with pytest.raises(ValueError) as info:
        session.sync()
    assert "operands could not be broadcast" in str(info.value)
    with pytest.raises(Exception):
        a.get()  # never computed
    assert float(cp.ones(2).sum()) == 2.0
