"""Differential tests: array creation (the remote cupy against NumPy/CuPy)."""

from __future__ import annotations

import numpy as np
import pytest

DTYPES = ["bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
          "float16", "float32", "float64", "complex64", "complex128"]


# ---------------------------------------------------------------- array / asarray


@pytest.mark.parametrize("obj", [
    [1, 2, 3],
    [1.5, 2, 3],
    [[1, 2], [3, 4]],
    [True, False],
    [1 + 2j, 3],
    [],
    [[]],
    5,
    2.5,
    True,
    1 - 1j,
    [[1, 2, 3]] * 3,
], ids=repr)
@pytest.mark.parametrize("fn", ["array", "asarray"])
def test_from_python(same, fn, obj):
    same(lambda xp: getattr(xp, fn)(obj))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("fn", ["array", "asarray"])
def test_from_numpy_dtypes(same, fn, dtype):
    host = (np.arange(12).reshape(3, 4) % 3).astype(dtype)
    same(lambda xp: getattr(xp, fn)(host))


@pytest.mark.parametrize("fn", ["array", "asarray"])
@pytest.mark.parametrize("make", [
    lambda: np.arange(24.0).reshape(4, 6)[:, ::2],
    lambda: np.arange(24.0).reshape(4, 6).T,
    lambda: np.arange(24, dtype=np.int32)[::-3],
    lambda: np.asfortranarray(np.arange(6.0).reshape(2, 3)),
    lambda: np.array(3.5),
    lambda: np.array(7, dtype=np.uint16),
    lambda: np.zeros((0, 3)),
    lambda: np.arange(4 << 12, dtype=np.float64).reshape(64, -1)[::2, 1::3],  # large: own frame
], ids=["strided", "transposed", "negative-step", "fortran", "0d-float", "0d-uint16", "empty",
        "large-strided"])
def test_from_numpy_layouts(same, fn, make):
    host = make()
    same(lambda xp: getattr(xp, fn)(host))


@pytest.mark.parametrize("fn", ["array", "asarray"])
def test_numpy_layout_flags(same, fn):
    host = np.arange(24.0).reshape(4, 6).T
    same(lambda xp: (getattr(xp, fn)(host).flags.c_contiguous,
                     getattr(xp, fn)(np.ascontiguousarray(host)).flags.c_contiguous))


@pytest.mark.parametrize("dtype", ["float32", "int16", "complex64", "bool", "float16"])
@pytest.mark.parametrize("fn", ["array", "asarray"])
def test_dtype_argument(same, fn, dtype):
    same(lambda xp: getattr(xp, fn)([1, 0, 3], dtype=dtype))
    same(lambda xp: getattr(xp, fn)(np.arange(5.0), dtype=getattr(xp, dtype if dtype != "bool" else "bool_")))


@pytest.mark.parametrize("order", ["C", "F", "A", "K"])
@pytest.mark.parametrize("fn", ["array", "asarray"])
def test_order_argument(same, fn, order):
    host = np.arange(6.0).reshape(2, 3)

    def body(xp):
        a = getattr(xp, fn)(host, order=order)
        b = getattr(xp, fn)(host.T, order=order)
        return a, b, a.flags.c_contiguous, a.flags.f_contiguous, b.flags.c_contiguous, b.flags.f_contiguous

    same(body)


def test_array_of_remote_and_asarray_identity(same):
    def body(xp):
        a = xp.arange(4)
        b = xp.asarray(a)
        c = xp.array(a)
        c[0] = 10
        return a, b is a, c is a, c

    same(body)


def test_array_copy_is_independent(same):
    def body(xp):
        a = xp.arange(4.0)
        b = xp.array(a)
        b += 1
        return a, b

    same(body)


def test_asarray_dtype_of_remote(same):
    same(lambda xp: xp.asarray(xp.arange(4), dtype=xp.float32))


def test_array_ndmin(same):
    same(lambda xp: xp.array([1, 2], ndmin=3))
    same(lambda xp: xp.array(np.arange(3), ndmin=2))


def test_array_ragged_raises(same):
    same(lambda xp: xp.array([[1, 2], [3]]))


# ---------------------------------------------------------------- zeros / ones / empty / full


@pytest.mark.parametrize("dtype", DTYPES)
def test_zeros_ones_full_dtypes(same, dtype):
    same(lambda xp: (xp.zeros((2, 3), dtype=dtype), xp.ones(4, dtype), xp.full((2, 2), 1, dtype=dtype)))


@pytest.mark.parametrize("shape", [(), 0, 3, (2, 3), (0, 4), (1, 1, 2), [2, 2]], ids=repr)
def test_creation_shapes(same, shape):
    same(lambda xp: (xp.zeros(shape), xp.ones(shape), xp.full(shape, 7)))


@pytest.mark.parametrize("shape", [(), 3, (2, 3), (0, 4)], ids=repr)
@pytest.mark.parametrize("dtype", ["float32", "int64", "complex128", "bool"])
def test_empty_shape_dtype(same, shape, dtype):
    same(lambda xp: (xp.empty(shape, dtype=dtype).shape, xp.empty(shape, dtype=dtype).dtype))


def test_empty_default_and_order(same):
    def body(xp):
        a = xp.empty((2, 3))
        f = xp.empty((2, 3), order="F")
        return a.shape, a.dtype, f.flags.f_contiguous, f.flags.c_contiguous, f.strides

    same(body)


def test_zeros_order_f(same):
    same(lambda xp: (xp.zeros((2, 3), order="F").strides, xp.ones((3, 2), order="F").flags.f_contiguous))


@pytest.mark.parametrize("value", [3, 2.5, True, 1 + 1j, np.float32(1.5), np.int8(-3)], ids=repr)
def test_full_value_dtype_inference(same, value):
    same(lambda xp: xp.full((2, 2), value))


def test_full_with_array_fill(same):
    same(lambda xp: xp.full((3, 2), xp.asarray([1.0, 2.0])))


def test_negative_shape_raises(same):
    same(lambda xp: xp.zeros((2, -1)))
    same(lambda xp: xp.ones(-3))


def test_bad_dtype_raises(same):
    same(lambda xp: xp.zeros(3, dtype="not-a-dtype"))


# ---------------------------------------------------------------- *_like


@pytest.mark.parametrize("src_dtype", ["int32", "float64", "complex64", "bool"])
def test_like_functions(same, src_dtype):
    def body(xp):
        a = xp.arange(6).reshape(2, 3).astype(src_dtype)
        e = xp.empty_like(a)
        return (xp.zeros_like(a), xp.ones_like(a), xp.full_like(a, 1), e.shape, e.dtype,
                xp.zeros_like(a, dtype=xp.float32), xp.full_like(a, 2, dtype="int8"),
                xp.ones_like(a, shape=(4,)))

    same(body)


def test_like_preserves_layout(same):
    def body(xp):
        a = xp.arange(6.0).reshape(2, 3).T
        return (xp.zeros_like(a).strides, xp.ones_like(a, order="C").strides,
                xp.empty_like(a).flags.f_contiguous)

    same(body)


def test_full_like_truncates(same):
    same(lambda xp: xp.full_like(xp.arange(3), 2.7))


def test_like_of_numpy_input(same):
    host = np.arange(4, dtype=np.int16)
    same(lambda xp: xp.zeros_like(xp.asarray(host)))


# ---------------------------------------------------------------- ranges


@pytest.mark.parametrize("args", [
    (5,), (2, 7), (0, 1, 0.25), (10, 0, -3), (0,), (1.5,), (3, 3), (5, 1), (0, 5, 2),
], ids=repr)
def test_arange(same, args):
    same(lambda xp: xp.arange(*args))


@pytest.mark.parametrize("dtype", ["int8", "uint16", "float32", "float64", "int64"])
def test_arange_dtype(same, dtype):
    same(lambda xp: xp.arange(1, 10, 2, dtype=dtype))


def test_arange_errors(same):
    same(lambda xp: xp.arange(0, 10, 0))


@pytest.mark.parametrize("kwargs", [
    {}, {"num": 5}, {"num": 1}, {"num": 0}, {"endpoint": False}, {"num": 7, "dtype": "float32"},
    {"num": 5, "dtype": "int32"},
], ids=repr)
def test_linspace(same, kwargs):
    same(lambda xp: xp.linspace(0, 1, **kwargs))


def test_linspace_retstep_and_arrays(same):
    same(lambda xp: xp.linspace(2.0, 3.0, num=5, retstep=True)[1])
    same(lambda xp: xp.linspace(-1, 1, 9)[4])


def test_linspace_negative_num(same):
    same(lambda xp: xp.linspace(0, 1, -1))


# ---------------------------------------------------------------- eye / identity


@pytest.mark.parametrize("args,kwargs", [
    ((3,), {}), ((2, 4), {}), ((4, 3, 1), {}), ((4,), {"k": -2}), ((3,), {"dtype": "int32"}),
    ((3,), {"dtype": bool}), ((0,), {}), ((3, 3), {"k": 5}),
], ids=repr)
def test_eye(same, args, kwargs):
    same(lambda xp: xp.eye(*args, **kwargs))


@pytest.mark.parametrize("n,dtype", [(1, None), (3, None), (4, "complex64"), (2, "uint8"), (0, None)])
def test_identity(same, n, dtype):
    same(lambda xp: xp.identity(n, dtype=dtype))


# ---------------------------------------------------------------- copy


def test_copy_function_and_method(same):
    def body(xp):
        a = xp.arange(6).reshape(2, 3)
        b = xp.copy(a)
        c = a.copy()
        d = a.T.copy()
        e = a.T.copy(order="F")
        a[0, 0] = 100
        return a, b, c, d, d.flags.c_contiguous, e.flags.f_contiguous

    same(body)


def test_copy_of_view_owns_data(same):
    def body(xp):
        a = xp.arange(10)
        v = a[2:5]
        c = v.copy()
        v[0] = -1
        return a, c, c.flags.owndata, v.flags.owndata

    same(body)


# ---------------------------------------------------------------- random (shape/dtype/range only)


def test_random_rand_randn(cp):
    cp.random.seed(0)
    a = cp.random.rand(3, 4)
    assert a.shape == (3, 4) and a.dtype == np.float64
    h = a.get()
    assert ((h >= 0) & (h < 1)).all()
    b = cp.random.randn(5)
    assert b.shape == (5,) and b.dtype == np.float64
    assert np.isfinite(b.get()).all()
    s = cp.random.rand()
    assert s.dtype == np.float64 and 0 <= float(s) < 1


def test_random_randint(cp):
    a = cp.random.randint(2, 7, size=(100,))
    assert a.shape == (100,) and a.dtype.kind == "i"
    h = a.get()
    assert h.min() >= 2 and h.max() < 7
    b = cp.random.randint(5, size=(2, 3), dtype="int32")
    assert b.shape == (2, 3) and b.dtype == np.int32
    assert ((b.get() >= 0) & (b.get() < 5)).all()
    with pytest.raises(ValueError):
        cp.random.randint(5, 2, size=3).get()  # asynchronous: raised at the sync point


def test_random_uniform_normal(cp):
    u = cp.random.uniform(-2.0, 3.0, size=(4, 5))
    assert u.shape == (4, 5) and u.dtype == np.float64
    hu = u.get()
    assert (hu >= -2).all() and (hu < 3).all()
    n = cp.random.normal(10.0, 0.5, size=1000)
    assert n.shape == (1000,) and n.dtype == np.float64
    assert 9 < float(n.mean()) < 11


def test_random_sample_and_random(cp):
    for fn in (cp.random.random_sample, cp.random.random):
        a = fn((2, 2))
        assert a.shape == (2, 2) and a.dtype == np.float64
        assert ((a.get() >= 0) & (a.get() < 1)).all()
    assert cp.random.random_sample(size=7).shape == (7,)


def test_random_seed_reproducible(cp):
    cp.random.seed(1234)
    a = cp.random.rand(8).get()
    cp.random.seed(1234)
    b = cp.random.rand(8).get()
    np.testing.assert_array_equal(a, b)
    c = cp.random.rand(8).get()
    assert not np.array_equal(b, c)


@pytest.mark.parametrize("dtype", [np.float32, "float64", np.dtype("f4")], ids=str)
def test_random_dtype_option(cp, dtype):
    """cupy.random's own ``dtype`` option (float32 without a float64 detour)."""
    expected = np.dtype(dtype)
    for a in (cp.random.rand(2, 3, dtype=dtype), cp.random.randn(4, dtype=dtype),
              cp.random.random_sample((2,), dtype=dtype), cp.random.uniform(0, 2, size=5, dtype=dtype),
              cp.random.normal(size=(3,), dtype=dtype), cp.random.standard_normal(3, dtype=dtype)):
        assert a.dtype == expected
    u = cp.random.uniform(1.0, 2.0, size=100, dtype=dtype).get()
    assert u.dtype == expected and (u >= 1).all() and (u <= 2).all()
    assert cp.random.poisson(3.0, size=4, dtype=np.int32).dtype == np.int32


def test_random_dtype_option_refuses_non_floats(cp):
    with pytest.raises(TypeError):
        cp.random.rand(3, dtype=np.int32).get()
    with pytest.raises(TypeError):
        cp.random.normal(size=3, dtype=np.complex64).get()
    assert cp.random.rand(2).dtype == np.float64  # the session goes on


def test_random_arrays_are_remote(cp):
    a = cp.random.rand(3)
    assert isinstance(a, cp.ndarray)
    assert isinstance(a + 1, cp.ndarray)


# ---------------------------------------------------------------- memory accounting of creation calls


@pytest.mark.parametrize("name,args,kwargs", [
    ("zeros", [[10]], {"dtype": np.dtype("complex128")}),
    ("empty", [[10], np.dtype("complex128")], {}),
    ("full", [[10], 1, np.dtype("complex128")], {}),
    ("ones", [[10]], {"dtype": np.complex128}),
], ids=["kw-dtype-instance", "positional", "full-positional", "kw-dtype-type"])
def test_numpy_device_allocation_check_uses_the_dtype(name, args, kwargs):
    """160 bytes do not fit a 100-byte session, however the dtype is spelled."""
    from gpu_backend.devices.numpy_device import NumpyDevice
    from gpu_backend.protocol.errors import OutOfMemoryError

    device = NumpyDevice()
    device.set_memory_limit(100)
    with pytest.raises(OutOfMemoryError):
        device.check_allocation(name, args, kwargs)
    device.check_allocation(name, [[6]] + args[1:], kwargs)  # 96 bytes fit


@pytest.mark.parametrize("obj", [[2 ** 70], ["a", "b"], [b"x"], [None, 1]], ids=repr)
def test_non_numeric_arrays_refused(cp, obj):
    """A device array holds numbers only (as in CuPy): object, string and bytes arrays are refused."""
    with pytest.raises(ValueError, match="Unsupported dtype"):  # CuPy's refusal, in its words
        cp.asarray(obj).get()
    assert float(cp.arange(3).sum()) == 3.0  # the session goes on


# ---------------------------------------------------------------- host data and files (run on the client)


def test_host_data_and_files(same, cp, tmp_path):
    same(lambda xp: xp.frombuffer(b"\x01\x02\x03\x04", dtype="uint8"))
    same(lambda xp: xp.fromiter(range(5), dtype="float32"))
    same(lambda xp: xp.fromfunction(lambda i, j: i * 10 + j, (3, 4)))
    a = cp.arange(12.0).reshape(3, 4)
    cp.save(tmp_path / "a.npy", a)
    assert np.array_equal(np.load(tmp_path / "a.npy"), a.get())
    back = cp.load(tmp_path / "a.npy")
    assert isinstance(back, cp.ndarray) and np.array_equal(back.get(), a.get())
    cp.savez(tmp_path / "b.npz", a, named=a * 2)
    with cp.load(tmp_path / "b.npz") as archive:
        assert sorted(archive.files) == ["arr_0", "named"]
        assert np.array_equal(archive["named"].get(), a.get() * 2)
    cp.savetxt(tmp_path / "c.txt", a)
    assert np.array_equal(cp.loadtxt(tmp_path / "c.txt").get(), a.get())
    assert cp.base_repr(10, 3) == "101" and cp.binary_repr(5) == "101"


def test_grids_and_broadcast(same, cp):
    same(lambda xp: xp.mgrid[0:3, 0:4])
    same(lambda xp: xp.mgrid[0:1:5j])
    same(lambda xp: list(xp.ogrid[0:2, 0:3]))   # (NumPy 2 gives a tuple, CuPy a list)
    assert isinstance(cp.ogrid[0:2, 0:3], list)
    b = cp.broadcast(cp.zeros((3, 1)), cp.zeros(4))
    assert (b.shape, b.nd, b.ndim, b.size) == ((3, 4), 2, 2, 12)
    assert [v.shape for v in b.values] == [(3, 4), (3, 4)]
