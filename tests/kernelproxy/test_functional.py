"""A user's Python functions over remote arrays (``cupy.fuse``, ``cupy.vectorize``), the
polynomial classes and modules (``cupy.poly1d``, ``cupy.polynomial``), and the smaller
pieces of CuPy's surface that its own test suite showed missing.

The function a user fuses or vectorizes runs on the client with the remote arrays, each
operation forwarded: results must be what the same operations give, and what needs
CuPy's JIT (control flow on element values) must say so.
"""

from __future__ import annotations

import numpy as np
import pytest

from kernelproxy.modules import build_modules

from tests.differential import POOL_RUNS_NUMPY


@pytest.fixture
def mods(cp):
    return build_modules()


# ---------------------------------------------------------------- cupy.fuse

def test_fuse_runs_the_function_on_remote_arrays(cp):
    @cp.fuse()
    def squared_diff(x, y):
        return (x - y) * (x - y)

    x, y = np.arange(10), np.arange(10)[::-1]
    out = squared_diff(cp.asarray(x), cp.asarray(y))
    assert isinstance(out, cp.ndarray)
    np.testing.assert_array_equal(out.get(), (x - y) ** 2)
    assert squared_diff.name == "squared_diff" and repr(squared_diff) == "<Fusion 'squared_diff'>"
    assert squared_diff.__name__ == "squared_diff"   # functools.update_wrapper, as CuPy's


def test_fuse_kernel_name_bare_decorator_and_host_arguments(cp):
    @cp.fuse(kernel_name="scaled")
    def scale(x, a):
        return x * a

    assert scale.name == "scaled"
    bare = cp.fuse(lambda x: x + 1)
    assert bare.name == "<lambda>"
    host = scale(np.arange(3), 2)   # no remote array: the function itself, on the host
    assert isinstance(host, np.ndarray)
    np.testing.assert_array_equal(host, [0, 2, 4])
    np.testing.assert_array_equal(scale(cp.arange(3), 2).get(), [0, 2, 4])
    with pytest.raises(ValueError, match='Invalid kernel name: "<lambda>"'):   # as CuPy's
        bare(cp.arange(3)).get()


def test_fuse_updates_arguments_in_place(cp):
    @cp.fuse()
    def accumulate(x, y):
        x += y
        return x * 2

    x = cp.arange(5)
    twice = accumulate(x, cp.ones(5, dtype=x.dtype))
    np.testing.assert_array_equal(x.get(), np.arange(5) + 1)
    np.testing.assert_array_equal(twice.get(), 2 * (np.arange(5) + 1))


def test_fuse_refuses_other_argument_types_as_cupy_does(cp):
    f = cp.fuse(lambda x, y: x + y)
    with pytest.raises(TypeError, match="Invalid argument type for '<lambda>'"):
        f(cp.arange(3), [1, 2, 3])


def test_an_array_has_no_python_value_inside_fuse_as_in_cupy(cp):
    @cp.fuse()
    def branchy(x):
        if x > 0:
            return x
        return -x

    x = cp.arange(9).reshape(3, 3)
    for f in (branchy, cp.fuse(lambda x: float(x.sum())), cp.fuse(lambda x: [0][x.min()])):
        with pytest.raises(TypeError, match="Cannot convert to Python scalar in cupy.fuse"):
            f(x)
    assert bool(x[1, 1] > 0) and int(x.sum()) == 36   # outside a fused call they have


def test_cupy_core_fusion_is_the_class_of_fused_functions(cp):
    calls = []

    def f(x, y):
        calls.append(1)
        return cp.equal(x, y)

    fused = cp._core.fusion.Fusion(f, "eq")
    assert isinstance(cp.fuse(f), cp._core.fusion.Fusion) and fused.name == "eq"
    np.testing.assert_array_equal(fused(cp.arange(3), 1).get(), [False, True, False])
    assert calls == [1]


# ---------------------------------------------------------------- cupy.vectorize

def test_vectorize_matches_numpys_vectorize(cp):
    def fma(x, y, z):
        return x * y + z

    a, b, c = np.arange(6.0).reshape(2, 3), np.arange(3.0), np.float64(0.5)
    out = cp.vectorize(fma)(cp.asarray(a), cp.asarray(b), c)
    expected = np.vectorize(fma)(a, b, c)
    assert out.shape == expected.shape and out.dtype == expected.dtype
    np.testing.assert_allclose(out.get(), expected)


def test_vectorize_types_python_scalars_as_cupy_does(cp):
    # CuPy's vectorize types a Python int as int64 (not as NumPy's weak scalar)
    out = cp.vectorize(lambda x, k: x + k)(cp.arange(4, dtype=cp.int8), 3)
    assert out.dtype == np.int64
    np.testing.assert_array_equal(out.get(), np.arange(4) + 3)


def test_vectorize_broadcasts_constants_and_tuples(cp):
    x = cp.arange(4, dtype=cp.float32)
    const = cp.vectorize(lambda v: 7)(x)
    assert const.shape == (4,) and const.dtype == np.int64
    np.testing.assert_array_equal(const.get(), [7] * 4)
    lo, hi = cp.vectorize(lambda v, w: (v - w, v + w))(x, cp.ones((2, 1), cp.float32))
    assert lo.shape == hi.shape == (2, 4)
    np.testing.assert_array_equal(hi.get(), np.broadcast_to(np.arange(4) + 1, (2, 4)))


@pytest.mark.skipif(not POOL_RUNS_NUMPY, reason="a GPU pool translates it (test_jit_vectorize.py)")
def test_vectorize_control_flow_on_elements_says_it_needs_the_jit(cp):
    def relu(x):
        return x if x > 0 else 0

    with pytest.raises(NotImplementedError, match="control flow on element values.*JIT"):
        cp.vectorize(relu)(cp.arange(-2, 3))


def test_vectorize_options_cupy_lacks_are_refused(cp):
    with pytest.raises(NotImplementedError, match="excluded"):
        cp.vectorize(abs, excluded={0})
    with pytest.raises(NotImplementedError, match="signature"):
        cp.vectorize(abs, signature="(n)->()")
    with pytest.raises(NotImplementedError, match="otypes"):
        cp.vectorize(abs, otypes=[np.float32])(cp.arange(3))


# ---------------------------------------------------------------- poly1d

def _coeffs(p):
    return p.coeffs.get() if hasattr(p.coeffs, "get") else np.asarray(p.coeffs)


def test_poly1d_arithmetic_matches_numpys_poly1d(cp):
    pn, qn = np.poly1d([1.0, 2.0, 3.0]), np.poly1d([0.0, 0.0, 1.0, 1.0])
    pc, qc = cp.poly1d(cp.asarray(pn.coeffs)), cp.poly1d(cp.array([0.0, 0.0, 1.0, 1.0]))
    assert qc.order == qn.order == 1 and len(qc) == 1
    for got, want in ((pc + qc, pn + qn), (pc - qc, pn - qn), (pc * qc, pn * qn),
                      (pc * 2, pn * 2), (2 * pc, 2 * pn), (-pc, -pn), (pc ** 3, pn ** 3),
                      (pc / 2, pn / 2), (pc - 1, pn - 1)):
        assert isinstance(got, cp.poly1d)
        np.testing.assert_allclose(_coeffs(got), want.coeffs)
    assert repr(pc) == repr(pn) and str(pc * qc) == str(pn * qn)
    assert float(pc(2.0)) == pn(2.0)
    np.testing.assert_allclose(pc(cp.arange(3.0)).get(), pn(np.arange(3.0)))


def test_poly1d_items_equality_and_conversions(cp):
    p = cp.poly1d([1, 2, 3])
    assert int(p[0]) == 3 and p[7] == 0
    p[4] = 5
    np.testing.assert_array_equal(_coeffs(p), [5, 0, 1, 2, 3])
    assert p == cp.poly1d([5, 0, 1, 2, 3]) and p != cp.poly1d([1])
    host = p.get()
    assert isinstance(host, np.poly1d) and host == np.poly1d([5, 0, 1, 2, 3])
    assert cp.poly1d(host).variable == "x" and cp.poly1d(host, variable="s").variable == "s"
    with pytest.raises(TypeError, match="Implicit conversion"):
        np.asarray(p)
    with pytest.raises(ValueError, match="non-negative integers"):
        p ** -1
    with pytest.raises(ValueError, match="1d only"):
        cp.poly1d(cp.ones((2, 2)))


def test_polynomial_routines_take_and_give_poly1d(cp):
    a = cp.poly1d([1.0, -3.0, 2.0])                 # (x - 1)(x - 2)
    s = cp.polyadd(a, cp.array([1.0, 1.0]))
    assert isinstance(s, cp.poly1d)
    np.testing.assert_allclose(_coeffs(s), np.polyadd([1.0, -3.0, 2.0], [1.0, 1.0]))
    plain = cp.polymul(cp.array([1, 1]), cp.array([1, -1]))
    assert isinstance(plain, cp.ndarray)
    np.testing.assert_array_equal(plain.get(), [1, 0, -1])
    composed = cp.polyval(a, cp.poly1d([1.0, 1.0]))   # a(x + 1)
    assert isinstance(composed, cp.poly1d)
    np.testing.assert_allclose(_coeffs(composed), np.polyval(np.poly1d([1.0, -3.0, 2.0]),
                                                             np.poly1d([1.0, 1.0])).coeffs)
    roots = np.sort(cp.poly1d([1.0, 0.0, -1.0]).roots.get().real)   # symmetric companion
    np.testing.assert_allclose(roots, [-1.0, 1.0])
    np.testing.assert_allclose(_coeffs(cp.poly1d(cp.array([1.0, 2.0]), r=True)), np.poly([1.0, 2.0]))


def test_polynomial_package_matches_numpy_polynomial(cp, mods):
    polynomial = mods["cupy.polynomial"].polynomial
    polyutils = mods["cupy.polynomial"].polyutils
    assert cp.polynomial is mods["cupy.polynomial"]
    x, c = np.linspace(-1, 1, 5), np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(polynomial.polyval(cp.asarray(x), cp.asarray(c)).get(),
                               np.polynomial.polynomial.polyval(x, c))
    np.testing.assert_allclose(polynomial.polyvander(cp.asarray(x), 3).get(),
                               np.polynomial.polynomial.polyvander(x, 3))
    np.testing.assert_allclose(polynomial.polycompanion(cp.asarray(c)).get(),
                               np.polynomial.polynomial.polycompanion(c))
    np.testing.assert_allclose(polyutils.trimcoef(cp.array([1.0, 1e-9, 0.0]), 1e-6).get(), [1.0])
    series = polyutils.as_series([cp.array([1.0, 0.0]), cp.array([2, 0, 0])])
    assert [s.get().tolist() for s in series] == [[1.0], [2.0]]


# ---------------------------------------------------------------- smaller pieces

def test_reductions_of_host_arrays_are_numpys_own_as_in_cupy(cp):
    host = np.arange(12.0).reshape(3, 4)
    for name, args, kwargs in (("sum", (0,), {}), ("prod", (), {"axis": 1}),
                               ("amax", (), {"axis": 0}), ("mean", (None, None, None, True), {}),
                               ("var", (), {"ddof": 1}), ("std", (1,), {})):
        got = getattr(cp, name)(host, *args, **kwargs)
        method = {"amax": "max"}.get(name, name)
        want = getattr(host, method)(*args, **kwargs)
        assert not isinstance(got, cp.ndarray)
        np.testing.assert_allclose(got, want)


def test_core_flags_and_util_settings(cp, mods):
    flags = mods["cupy._core.flags"].Flags(1, 2, 3)
    assert (flags["C_CONTIGUOUS"], flags["F_CONTIGUOUS"], flags["OWNDATA"]) == (1, 2, 3)
    with pytest.raises(KeyError):
        flags["unknown key"]
    a = cp.empty((4, 8), order="F").flags
    assert a.f_contiguous and not a.c_contiguous and a.fnc
    with pytest.raises(AttributeError):
        a.c_contiguous = True
    assert cp._util.ENABLE_SLICE_COPY is False
    with pytest.raises(AttributeError, match="not forwarded"):
        cp._util.NO_SUCH_SETTING


def test_device_attributes_by_cuda_number(cp, mods):
    runtime = mods["cupy.cuda.runtime"]
    if POOL_RUNS_NUMPY:   # a host device has no CUDA attributes to number
        with pytest.raises(AttributeError, match="cudaDevAttrMultiProcessorCount.*not forwarded"):
            runtime.cudaDevAttrMultiProcessorCount
        return
    sms = runtime.deviceGetAttribute(runtime.cudaDevAttrMultiProcessorCount, 0)
    assert sms == cp.cuda.Device(0).attributes["MultiProcessorCount"] > 0
    with pytest.raises(cp.cuda.runtime.CUDARuntimeError):
        runtime.deviceGetAttribute(runtime.cudaDevAttrMultiProcessorCount, 1)


def test_chirp_z_transform_with_defaults_is_the_dft(cp, mods):
    signal = mods["cupyx.scipy.signal"]
    x = np.random.default_rng(0).random(16)
    np.testing.assert_allclose(signal.czt(cp.asarray(x)).get(), np.fft.fft(x), atol=1e-9)
    np.testing.assert_allclose(signal.czt_points(4).get(), np.exp(2j * np.pi * np.arange(4) / 4))
    assert signal.zoom_fft(cp.asarray(x), 0.5).shape == (16,)


def test_index_expression_helpers(cp):
    r = cp.r_[cp.array([1, 2, 3]), 0, 0, cp.array([4, 5])]
    np.testing.assert_array_equal(r.get(), np.r_[np.array([1, 2, 3]), 0, 0, np.array([4, 5])])
    c = cp.c_[cp.array([1, 2, 3]), cp.array([4, 5, 6])]
    np.testing.assert_array_equal(c.get(), np.c_[np.array([1, 2, 3]), np.array([4, 5, 6])])
    with pytest.raises(NotImplementedError, match="slices"):
        cp.r_[0:3]
    rows, cols = cp.mask_indices(3, cp.triu, 1)
    want = np.mask_indices(3, np.triu, 1)
    np.testing.assert_array_equal(rows.get(), want[0])
    np.testing.assert_array_equal(cols.get(), want[1])


def test_ndimage_returns_the_output_array_it_wrote(cp, mods):
    ndimage = mods["cupyx.scipy.ndimage"]
    a = cp.arange(16.0).reshape(4, 4)
    out = cp.empty_like(a)
    assert ndimage.shift(a, 1, out) is out
    assert ndimage.uniform_filter(a, 3, output=out) is out
    import scipy.ndimage
    np.testing.assert_allclose(out.get(), scipy.ndimage.uniform_filter(np.arange(16.0).reshape(4, 4), 3))


def test_warnings_of_cupys_own_modules_keep_their_module():
    from gpu_backend.worker.executor import library_module
    site = "/usr/lib/python3.12/site-packages"
    assert library_module(f"{site}/cupy/random/_generator.py") == "cupy.random._generator"
    assert library_module(f"{site}/cupyx/scipy/signal/__init__.py") == "cupyx.scipy.signal"
    assert library_module(f"{site}/cupy/_util.py") == "cupy._util"
    assert library_module("/work/gpu_backend/worker/executor.py") is None
    assert library_module("<string>") is None
