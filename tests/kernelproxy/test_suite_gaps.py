"""Pieces of CuPy's surface that its own test suite showed missing (issue 9, after run 10):
the IIR recurrences under ``lfilter``/``sosfilt`` (private, but tested by CuPy directly),
the session's accelerator switches, ``create_reduction_func``, kernel-name checks, the
``__cupy_get_ndarray__`` protocol, results that are tuples only when a flag asks, the
outputs a multi-output ufunc was given, and ``mgrid`` over array bounds.

On the NumPy device the IIR entry points run through SciPy's ``lfilter`` with CuPy's form
of initial conditions; on a GPU they are CuPy's own kernels: the same expectations hold.
"""

from __future__ import annotations

import numpy as np
import pytest

from kernelproxy.modules import build_modules

from tests.differential import POOL_RUNS_NUMPY

scipy_signal = pytest.importorskip("scipy.signal")


@pytest.fixture
def iir(cp):
    return build_modules()["cupyx.scipy.signal._iir_utils"]


def _lfiltic_state(b, a, x_past, y_past):
    """SciPy's own initial state from past inputs/outputs given oldest first."""
    return scipy_signal.lfiltic(b, a, y_past[::-1], None if x_past is None else x_past[::-1])


@pytest.mark.parametrize("order", [1, 3])
def test_apply_iir_is_lfilter_with_unit_numerator(cp, iir, order):
    rng = np.random.default_rng(order)
    x = rng.standard_normal(70)
    a = rng.uniform(-0.3, 0.3, order)
    den = np.r_[1.0, -a]
    got = iir.apply_iir(cp.asarray(x), cp.asarray(a), block_sz=32)
    np.testing.assert_allclose(got.get(), scipy_signal.lfilter([1.0], den, x), rtol=1e-10)
    past = rng.standard_normal(order)   # the outputs before x[0], oldest first
    got = iir.apply_iir(cp.asarray(x), cp.asarray(a), zi=cp.asarray(past), block_sz=32)
    want, _ = scipy_signal.lfilter([1.0], den, x, zi=_lfiltic_state([1.0], den, None, past))
    np.testing.assert_allclose(got.get(), want, rtol=1e-10)


def test_apply_iir_along_an_axis_keeps_dtype_and_layout(cp, iir):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((3, 40, 2)).astype(np.float32)
    a = np.array([0.25, -0.1], np.float32)
    got = iir.apply_iir(cp.asarray(x), cp.asarray(a), axis=1, dtype=np.float32, block_sz=32)
    assert got.dtype == np.float32 and got.shape == x.shape and got.flags.c_contiguous
    want = scipy_signal.lfilter([1.0], np.r_[1.0, -a], x, axis=1)
    np.testing.assert_allclose(got.get(), want, rtol=1e-4, atol=1e-5)


def test_apply_iir_sos_matches_sosfilt_and_returns_final_conditions(cp, iir):
    rng = np.random.default_rng(3)
    x = rng.standard_normal(90)
    sos = rng.uniform(-0.2, 0.2, (3, 6))
    sos[:, 3] = 1
    np.testing.assert_allclose(iir.apply_iir_sos(cp.asarray(x), cp.asarray(sos), block_sz=32).get(),
                               scipy_signal.sosfilt(sos, x), rtol=1e-9, atol=1e-12)
    zi = rng.standard_normal((3, 4))   # per section: two inputs, two outputs, oldest first
    out, zi_out = iir.apply_iir_sos(cp.asarray(x), cp.asarray(sos), zi=cp.asarray(zi), block_sz=32)
    state = np.stack([_lfiltic_state(s[:3], s[3:], z[:2], z[2:]) for s, z in zip(sos, zi)])
    want, _ = scipy_signal.sosfilt(sos, x, zi=state)
    np.testing.assert_allclose(out.get(), want, rtol=1e-9, atol=1e-12)
    assert zi_out.shape == zi.shape
    np.testing.assert_allclose(zi_out.get()[-1, 2:], want[-2:], rtol=1e-9)   # last section's outputs
    np.testing.assert_allclose(zi_out.get()[0, :2], x[-2:])                  # first section's inputs


def test_accelerators_are_the_sessions_and_checked_by_name(cp, session):
    core = build_modules()["cupy._core"]
    saved = core.get_reduction_accelerators()
    assert saved == session.runtime["accelerators"]["reduction"]
    try:
        core.set_reduction_accelerators(["cub"])
        assert core.get_reduction_accelerators() == [1]   # CuPy answers its numbers
        assert core._accelerator.ACCELERATOR_CUB == 1
        assert float(cp.arange(10.0).sum()) == 45.0       # the pool's sums still work
        with pytest.raises(ValueError, match="Unknown accelerator: cub2"):
            core.set_reduction_accelerators(["cub2"])
    finally:
        core.set_reduction_accelerators(saved)
    assert core.get_reduction_accelerators() == saved


def test_kernel_names_are_checked_when_the_kernel_is_made(cp):
    with pytest.raises(ValueError, match="Invalid kernel name"):
        cp.ReductionKernel("T x", "T y", "x", "a + b", "y = a", "0", name="1")
    with pytest.raises(ValueError, match="Invalid kernel name"):
        cp.ElementwiseKernel("T x", "T y", "y = x", name="my kernel")


def test_create_reduction_func(cp):
    core = build_modules()["cupy._core"]
    my_sum = core.create_reduction_func("my_sum", ("b->b",), ("in0", "a + b", "out0 = a", None), 0)
    a = np.arange(-20, 20, dtype=np.int8).reshape(4, 10)
    if POOL_RUNS_NUMPY:   # compiled kernels need CUDA: a clear refusal
        with pytest.raises(NotImplementedError, match="need a GPU"):
            my_sum(cp.asarray(a), axis=1).get()
        return
    np.testing.assert_array_equal(my_sum(cp.asarray(a), axis=1).get(), a.sum(axis=1, dtype="b"))
    # an op given with its own routine (merged with the default, as CuPy does): a
    # (types, routine) pair, nested tuples on the wire
    paired = core.create_reduction_func(
        "my_paired_sum", (("b->b", (None, "a + b", None, None)),),
        ("in0", "a * b", "out0 = a", None), 0)
    np.testing.assert_array_equal(paired(cp.asarray(a), axis=0).get(), a.sum(axis=0, dtype="b"))


class _Wrapped:
    """An array-like wrapper with CuPy's ``__cupy_get_ndarray__`` protocol."""

    def __init__(self, array):
        self.array = array

    def __cupy_get_ndarray__(self):
        return self.array


def test_cupy_get_ndarray_protocol(cp):
    a = cp.zeros(4)
    a[1:3] = _Wrapped(cp.asarray([5.0, 6.0]))
    np.testing.assert_array_equal(a.get(), [0, 5, 6, 0])
    np.testing.assert_array_equal(cp.add(_Wrapped(cp.arange(3)), 1).get(), [1, 2, 3])
    with pytest.raises(TypeError, match="__cupy_get_ndarray__"):
        cp.add(_Wrapped(np.arange(3)), 1)


def test_tuple_results_only_when_a_flag_asks(cp):
    a, b = np.array([2, 3, 4, 1, 9, 4.0]), np.array([7, 5, 1, 2, 9, 3.0])
    common, ia, ib = cp.intersect1d(cp.asarray(a), cp.asarray(b), return_indices=True)
    for got, want in zip((common, ia, ib), np.intersect1d(a, b, return_indices=True)):
        np.testing.assert_array_equal(got.get(), want)
    assert isinstance(cp.intersect1d(cp.asarray(a), cp.asarray(b)), cp.ndarray)
    w = np.arange(1.0, 7.0)
    avg, total = cp.average(cp.asarray(a), weights=cp.asarray(w), returned=True)
    want_avg, want_total = np.average(a, weights=w, returned=True)
    assert float(avg) == pytest.approx(want_avg) and float(total) == want_total
    assert isinstance(cp.average(cp.asarray(a)), cp.ndarray)


def test_multi_output_ufunc_returns_the_outputs_given(cp):
    a, b = cp.arange(1.0, 7.0), cp.arange(6.0, 0.0, -1)
    out0 = cp.zeros(6)
    q, r = cp.divmod(a, b, out0)
    assert q is out0 and isinstance(r, cp.ndarray) and r is not out0
    out1 = cp.zeros(6)
    q, r = cp.divmod(a, b, out=(None, out1))
    assert r is out1
    np.testing.assert_array_equal(out1.get(), np.arange(1.0, 7.0) % np.arange(6.0, 0.0, -1))


def test_mgrid_with_array_bounds_broadcasts_as_cupy(cp):
    x, y = np.zeros(10)[:, None], np.ones(10)[:, None]
    rx, ry = cp.asarray(x), cp.asarray(y)
    np.testing.assert_array_equal(cp.mgrid[rx:ry:10j].get(), np.mgrid[x:y:10j])
    np.testing.assert_array_equal(cp.mgrid[rx:ry:10j, rx:ry:10j].get(), np.mgrid[x:y:10j, x:y:10j])
    np.testing.assert_array_equal(cp.mgrid[0:1:5j].get(), np.mgrid[0:1:5j])   # the host path


def test_place_poles_returns_its_fields_as_attributes(cp):
    A, B = np.array([[0.0, 1.0], [-2.0, -3.0]]), np.array([[0.0], [1.0]])
    got = build_modules()["cupyx.scipy.signal"].place_poles(cp.asarray(A), cp.asarray(B),
                                                             cp.asarray([-4.0, -5.0]))
    want = scipy_signal.place_poles(A, B, [-4.0, -5.0])
    np.testing.assert_allclose(np.sort(got.computed_poles.get()), np.sort(want.computed_poles))
    np.testing.assert_allclose(got.gain_matrix.get(), want.gain_matrix, atol=1e-10)
    assert got.rtol == pytest.approx(want.rtol) and got.nb_iter == want.nb_iter


def test_a_poly1d_travels_as_its_coefficients(cp):
    signal = build_modules()["cupyx.scipy.signal"]
    t = np.linspace(0, 3.0, 200)
    got = signal.sweep_poly(cp.asarray(t), cp.poly1d([1.0, 0.0, 1.0]))
    np.testing.assert_allclose(got.get(), scipy_signal.sweep_poly(t, np.poly1d([1.0, 0.0, 1.0])),
                               atol=1e-9)
    assert (cp.poly1d([1.0, 2.0]) == cp.poly1d([1.0, 2.0])) is True


# ---------------------------------------------------------------- after run 12


def test_special_functions_are_ufuncs_as_in_cupy(cp):
    special = build_modules()["cupyx.scipy.special"]
    assert isinstance(special.gamma, cp.ufunc) and special.gamma.nin == 1
    assert special.gamma.__name__ == "cupyx_scipy_special_gamma"
    assert isinstance(special.sici, cp.ufunc) and special.sici.nout == 2
    assert not isinstance(special.softmax, cp.ufunc)   # a function in CuPy too
    assert special.psi is special.digamma
    np.testing.assert_allclose(special.gamma(cp.arange(1, 5.0)).get(), [1, 1, 2, 6])


def test_scipy_special_ufuncs_dispatch_to_the_pool(cp):
    sps = pytest.importorskip("scipy.special")
    host = np.linspace(0.5, 3.0, 6)
    x = cp.asarray(host)
    got = sps.gamma(x)
    assert type(got) is type(x)   # CuPy's __array_ufunc__: cupyx.scipy.special's gamma ran
    np.testing.assert_allclose(got.get(), sps.gamma(host), rtol=1e-12)
    si, ci = sps.sici(x)
    np.testing.assert_allclose(si.get(), sps.sici(host)[0], rtol=1e-12)
    np.testing.assert_allclose(sps.xlogy(x, x).get(), sps.xlogy(host, host), rtol=1e-12)


_LOAD_TIMES_2_5 = r'''
#include <cufftXt.h>
__device__ cufftComplex scale_load(void* dataIn, unsigned long long offset,
                                   void* callerInfo, void* sharedPtr)
{
    cufftComplex x = ((cufftComplex*)dataIn)[offset];
    x.x *= 2.5f;
    return x;
}
__device__ cufftJITCallbackLoadC d_loadCallbackPtr = scale_load;
'''

_LOAD_TIMES_AUX = r'''
#include <cufftXt.h>
__device__ cufftComplex aux_load(void* dataIn, unsigned long long offset,
                                 void* callerInfo, void* sharedPtr)
{
    cufftComplex x = ((cufftComplex*)dataIn)[offset];
    x.x *= *((float*)callerInfo);
    return x;
}
__device__ cufftJITCallbackLoadC d_loadCallbackPtr = aux_load;
'''


def test_cufft_callbacks_checked_as_cupy_does_and_legacy_refused(cp):
    with pytest.raises(ValueError, match="cb_ver"):
        cp.fft.config.set_cufft_callbacks(cb_load=_LOAD_TIMES_2_5, cb_ver="nvcc")
    aux = cp.ones(1, dtype=cp.float32)
    with pytest.raises(ValueError, match="only use cb_load_data"):
        cp.fft.config.set_cufft_callbacks(cb_load=_LOAD_TIMES_AUX, cb_load_aux_arr=aux,
                                          cb_load_data=aux.data, cb_ver="jit")
    with pytest.raises(NotImplementedError, match="legacy callbacks"):
        with cp.fft.config.set_cufft_callbacks(cb_load=_LOAD_TIMES_2_5):
            pass
    callback_module = build_modules()["cupy.fft._callback"]   # CuPy's tests patch its cache dir
    assert cp.fft._callback is callback_module
    with pytest.raises(NotImplementedError, match="pool's process"):
        callback_module.get_cache_dir()


@pytest.mark.skipif(not POOL_RUNS_NUMPY, reason="the NumPy device's refusal")
def test_cufft_callbacks_need_a_gpu_pool(cp):
    with pytest.raises(NotImplementedError, match="need a GPU pool"):
        with cp.fft.config.set_cufft_callbacks(cb_load=_LOAD_TIMES_2_5, cb_ver="jit"):
            pass
    with pytest.raises(NotImplementedError):
        cp.cuda.cufft.getVersion()


@pytest.mark.skipif(POOL_RUNS_NUMPY, reason="cuFFT callbacks need a GPU pool")
def test_cufft_jit_callbacks_run_in_the_pool(cp):
    if cp.cuda.cufft.getVersion() < 11303:
        pytest.skip("JIT callbacks need cuFFT from CUDA 12.8+")
    host = (np.random.default_rng(0).standard_normal(16)
            + 1j * np.random.default_rng(1).standard_normal(16)).astype(np.complex64)
    a = cp.asarray(host)
    scaled = host.copy()
    scaled.real *= 2.5
    with cp.fft.config.set_cufft_callbacks(cb_load=_LOAD_TIMES_2_5, cb_ver="jit"):
        inside = cp.fft.fft(a)
    after = cp.fft.fft(a)   # the block is left: no callback
    np.testing.assert_allclose(inside.get(), np.fft.fft(scaled), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(after.get(), np.fft.fft(host), rtol=1e-4, atol=1e-4)
    factor = cp.asarray([3.0], dtype=cp.float32)
    tripled = host.copy()
    tripled.real *= 3.0
    with cp.fft.config.set_cufft_callbacks(cb_load=_LOAD_TIMES_AUX, cb_load_data=factor.data,
                                           cb_ver="jit"):
        got = cp.fft.fft(a)
    np.testing.assert_allclose(got.get(), np.fft.fft(tripled), rtol=1e-4, atol=1e-4)
    # an op failing inside a block: its exit is skipped with the ops after the failure,
    # and the pool leaves the block itself, so later FFTs have no callback
    with cp.fft.config.set_cufft_callbacks(cb_load=_LOAD_TIMES_2_5, cb_ver="jit"):
        cp.fft.fft(a, n=0)   # fails in the pool (no data points), reported at the next sync
    with pytest.raises(Exception):
        cp.fft.fft(a).get()
    np.testing.assert_allclose(cp.fft.fft(a).get(), np.fft.fft(host), rtol=1e-4, atol=1e-4)


def test_nd_transforms_given_no_axes_return_their_input(cp):
    a = cp.arange(12.0).reshape(3, 4)
    for fn in (cp.fft.fft2, cp.fft.ifft2, cp.fft.fftn, cp.fft.ifftn):
        assert fn(a, axes=()) is a
        assert fn(a, None, ()) is a
    np.testing.assert_allclose(fn(a, axes=(0,)).get(),
                               np.fft.ifftn(np.arange(12.0).reshape(3, 4), axes=(0,)))
    with pytest.raises((ValueError, IndexError)):   # a shape for no axes is an error
        cp.fft.fftn(a, s=(2,), axes=()).get()


def test_fft_plan_cache_functions_reach_the_pool(cp, capsys):
    cp.fft.config.clear_plan_cache()   # nothing to clear on the NumPy device; the pool's on a GPU
    if POOL_RUNS_NUMPY:
        with pytest.raises(NotImplementedError, match="GPU pool"):
            cp.fft.config.get_plan_cache_size()
        return
    cp.fft.fft(cp.ones(64, dtype=cp.complex64))
    size = cp.fft.config.get_plan_cache_size()
    cp.fft.config.set_plan_cache_size(size + 1)
    assert cp.fft.config.get_plan_cache_size() == size + 1
    cp.fft.config.set_plan_cache_size(size)
    cp.fft.config.show_plan_cache_info()
    assert "cuFFT plan cache" in capsys.readouterr().out
    with pytest.raises(NotImplementedError, match="pool's process"):
        cp.fft.config.get_plan_cache()
