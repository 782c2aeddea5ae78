"""``cupyx.scipy`` through the proxy: special, ndimage, signal (and windows), fft, linalg.

The reference is SciPy beside NumPy (CI) or ``cupyx.scipy`` beside local CuPy (a GPU
machine); the pool answers with ``cupyx.scipy`` on a GPU and with SciPy on the NumPy
device, so results, structures (tuples, dicts, counts) and errors are compared.
"""

from __future__ import annotations

import importlib

import numpy as np
import pytest

from kernelproxy.modules import build_modules

pytest.importorskip("scipy")


def scipy_of(xp, sub):
    """``xp``'s SciPy submodule: SciPy for NumPy, ``cupyx.scipy`` for CuPy and the proxy."""
    if xp is np:
        return importlib.import_module(f"scipy.{sub}")
    if xp is build_modules()["cupy"]:
        return build_modules()[f"cupyx.scipy.{sub}"]
    return importlib.import_module(f"cupyx.scipy.{sub}")


def host(xp, a):
    return xp.asarray(np.asarray(a))


SIGNAL = np.sin(np.linspace(0, 20, 64)) + np.linspace(0, 1, 64)
IMAGE = np.arange(64.0).reshape(8, 8) % 7


@pytest.mark.parametrize("call", [
    lambda sp, x: sp.gamma(x), lambda sp, x: sp.erf(x), lambda sp, x: sp.expit(x),
    lambda sp, x: sp.xlogy(x, x + 1), lambda sp, x: sp.logsumexp(x),
    lambda sp, x: sp.softmax(x), lambda sp, x: sp.sici(x), lambda sp, x: sp.zeta(x + 1.5, 1.0),
])
def test_special(same, call):
    same(lambda xp: call(scipy_of(xp, "special"), host(xp, np.linspace(0.1, 3, 7))))


@pytest.mark.parametrize("call", [
    lambda nd, x: nd.gaussian_filter(x, 1.5), lambda nd, x: nd.uniform_filter(x, 3),
    lambda nd, x: nd.median_filter(x, 3), lambda nd, x: nd.sobel(x, axis=0),
    lambda nd, x: nd.zoom(x, 2, order=1), lambda nd, x: nd.shift(x, (1, -1), order=1),
    lambda nd, x: nd.label(x > 3), lambda nd, x: nd.sum_labels(x, nd.label(x > 3)[0], [1, 2]),
    lambda nd, x: nd.center_of_mass(x), lambda nd, x: nd.grey_dilation(x, size=(3, 3)),
    lambda nd, x: nd.binary_erosion(x > 2),
])
def test_ndimage(same, call):
    same(lambda xp: call(scipy_of(xp, "ndimage"), host(xp, IMAGE)))


def test_ndimage_label_count_is_an_int(cp):
    labels, count = scipy_of(cp, "ndimage").label(host(cp, IMAGE) > 3)
    assert type(count) is int and labels.shape == IMAGE.shape


@pytest.mark.parametrize("call", [
    lambda sg, x: sg.convolve(x, x[:5]), lambda sg, x: sg.fftconvolve(x, x[:5], mode="same"),
    lambda sg, x: sg.lfilter(*sg.butter(3, 0.2), x), lambda sg, x: sg.butter(4, 0.3),
    lambda sg, x: sg.medfilt(x, 5), lambda sg, x: sg.detrend(x), lambda sg, x: sg.hilbert(x),
    lambda sg, x: sg.resample(x, 32), lambda sg, x: sg.welch(x, nperseg=16),
    lambda sg, x: sg.find_peaks(x, height=0.5), lambda sg, x: sg.windows.hann(16),
    lambda sg, x: sg.get_window("hamming", 8),
])
def test_signal(same, call):
    same(lambda xp: call(scipy_of(xp, "signal"), host(xp, SIGNAL)))


@pytest.mark.parametrize("call", [
    lambda f, x: f.fft(x), lambda f, x: f.rfft(x), lambda f, x: f.dct(x), lambda f, x: f.idst(x),
    lambda f, x: f.fftshift(x), lambda f, x: f.next_fast_len(97),
])
def test_fft(same, call):
    same(lambda xp: call(scipy_of(xp, "fft"), host(xp, SIGNAL)))


@pytest.mark.parametrize("call", [
    lambda la, a: la.lu_factor(a), lambda la, a: la.solve_triangular(a, a[0]),
    lambda la, a: la.expm(a / 100), lambda la, a: la.toeplitz(a[0]), lambda la, a: la.block_diag(a, a),
])
def test_linalg(same, call):
    matrix = np.triu(np.arange(1.0, 17.0).reshape(4, 4)) + np.eye(4)
    same(lambda xp: call(scipy_of(xp, "linalg"), host(xp, matrix)))


def test_submodules_import_and_refuse_unknown_names(cp, session):
    import kernelproxy
    kernelproxy.install(session)
    try:
        import cupyx.scipy.signal as signal
        from cupyx.scipy.signal import windows
        assert signal.windows is windows and callable(signal.butter)
        with pytest.raises(AttributeError, match="not available"):
            signal.no_such_function  # noqa: B018
        with pytest.raises(AttributeError, match="not available"):
            signal._ltisys  # noqa: B018   (a private module of CuPy's: not forwarded)
    finally:
        # left installed, the hook answered real CuPy's own lazy imports (cupy._core._reduction)
        # for the rest of a GPU run, whose reference is real CuPy: 370 differential tests failed
        kernelproxy.uninstall()


def test_scipy_fft_backend_protocol(cp):
    """``scipy.fft.set_backend(cupyx.scipy.fft)`` sends SciPy's calls to the pool."""
    import scipy.fft
    x = host(cp, SIGNAL)
    with scipy.fft.set_backend(scipy_of(cp, "fft")):
        out = scipy.fft.fft(x)
    assert isinstance(out, cp.ndarray)
    np.testing.assert_allclose(out.get(), np.fft.fft(SIGNAL), rtol=1e-6)
