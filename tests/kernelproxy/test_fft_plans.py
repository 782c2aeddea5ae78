"""cuFFT plans through the pool (``get_fft_plan``, ``plan=``, ``with plan:``), the
``cupyx.scipy.fftpack`` functions and ``cupy.fft.config``.

On a GPU the plan is CuPy's own cuFFT plan in the worker; on the NumPy device a
stand-in that SciPy's transforms accept. Either way the transform must equal
NumPy's, and a plan that does not fit the array must fail as CuPy's does.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from gpu_backend.protocol import api
from gpu_backend.protocol import messages as m
from gpu_backend.protocol.errors import InvalidHandleError
from kernelproxy.modules import build_modules

from tests.differential import POOL_RUNS_NUMPY


@pytest.fixture
def mods(cp):
    return build_modules()


def _host(shape, complex_=True, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.random(shape)
    return x + 1j * rng.random(shape) if complex_ else x


@pytest.mark.parametrize("shape, axes, transform", [
    ((16,), None, "fft"), ((8, 6), (0, 1), "fft2"), ((4, 6, 8), (1, 2), "fftn"),
    ((10, 12), (-1,), "ifft")])
def test_plan_as_argument_gives_numpys_transform(cp, mods, shape, axes, transform):
    host = _host(shape)
    x = cp.asarray(host)
    fft = mods["cupyx.scipy.fft"]
    plan = fft.get_fft_plan(x, axes=axes)
    kwargs = {} if axes is None else ({"axis": axes[0]} if transform == "ifft" else {"axes": axes})
    out = getattr(fft, transform)(x, plan=plan, **kwargs).get()
    np.testing.assert_allclose(out, getattr(np.fft, transform)(host, **kwargs), rtol=1e-10, atol=1e-10)
    np.testing.assert_array_equal(x.get(), host)   # the input is left alone


def test_plan_as_context_covers_exactly_its_block(cp, mods):
    host = _host((8, 8))
    x = cp.asarray(host)
    cufft = mods["cupy.cuda.cufft"]
    plan = mods["cupyx.scipy.fft"].get_fft_plan(x, axes=(0, 1))
    assert cufft.get_current_plan() is None
    with plan as entered:
        assert entered is plan and cufft.get_current_plan() is plan
        inside = cp.fft.fft2(x)
    assert cufft.get_current_plan() is None
    after = cp.fft.fft(cp.asarray(_host((5,))))   # another shape: no plan applies any more
    np.testing.assert_allclose(inside.get(), np.fft.fft2(host), rtol=1e-10, atol=1e-10)
    assert after.shape == (5,)


def test_real_to_complex_plan(cp, mods):
    host = _host((32,), complex_=False)
    x = cp.asarray(host)
    fft = mods["cupyx.scipy.fft"]
    plan = fft.get_fft_plan(x, value_type="R2C")
    np.testing.assert_allclose(fft.rfft(x, plan=plan).get(), np.fft.rfft(host), rtol=1e-10, atol=1e-10)


def test_bad_value_type_fails_at_the_call_and_the_session_goes_on(cp, mods):
    x = cp.asarray(_host((8,)))
    with pytest.raises(ValueError):
        mods["cupyx.scipy.fft"].get_fft_plan(x, value_type="X2Y")
    assert float(cp.ones(2).sum()) == 2


def test_plan_kind_is_the_one_the_worker_made(cp, mods):
    cufft = mods["cupy.cuda.cufft"]
    get_fft_plan = mods["cupyx.scipy.fftpack"].get_fft_plan
    one = get_fft_plan(cp.asarray(_host((16,))))
    many = get_fft_plan(cp.asarray(_host((4, 8))), axes=(0, 1))
    assert isinstance(one, cufft.Plan1d) and isinstance(many, cufft.PlanNd)
    assert not isinstance(one, cufft.PlanNd)


def test_a_dropped_plan_is_freed_in_op_order(cp, mods, session):
    plan = mods["cupyx.scipy.fft"].get_fft_plan(cp.asarray(_host((8,))))
    hid = plan._h
    del plan
    session.submit(m.KIND_OBJECT, api.NONE, None, "cufft.Plan.__enter__", hid)
    with pytest.raises(InvalidHandleError):
        session.sync()
    assert float(cp.ones(2).sum()) == 2


@pytest.mark.skipif(POOL_RUNS_NUMPY, reason="CuPy checks a plan against the array: a GPU pool")
def test_mismatched_plan_is_refused_as_in_cupy(cp, mods):
    fft = mods["cupyx.scipy.fft"]
    plan = fft.get_fft_plan(cp.asarray(_host((16,))))
    with pytest.raises(ValueError):
        fft.fft(cp.asarray(_host((8,))), plan=plan).get()
    assert float(cp.ones(2).sum()) == 2


def test_fftpack_functions(cp, mods):
    host = _host((6, 10))
    x = cp.asarray(host)
    fftpack = mods["cupyx.scipy.fftpack"]
    np.testing.assert_allclose(fftpack.fft(x).get(), np.fft.fft(host), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(fftpack.ifft2(x).get(), np.fft.ifft2(host), rtol=1e-10, atol=1e-10)
    plan = fftpack.get_fft_plan(x, axes=(0, 1))
    np.testing.assert_allclose(fftpack.fftn(x, plan=plan).get(), np.fft.fftn(host), rtol=1e-10,
                               atol=1e-10)


def test_fft_config_switch_warns_as_cupy_and_reaches_the_pool(cp):
    config = cp.fft.config
    with pytest.warns(DeprecationWarning, match="enable_nd_planning"):
        before = config.enable_nd_planning
    try:
        with pytest.warns(DeprecationWarning, match="enable_nd_planning"):
            config.enable_nd_planning = False
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            assert config.enable_nd_planning is False
        host = _host((4, 8))
        np.testing.assert_allclose(cp.fft.fft2(cp.asarray(host)).get(), np.fft.fft2(host),
                                   rtol=1e-10, atol=1e-10)
    finally:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            config.enable_nd_planning = before
    with pytest.raises(NotImplementedError, match="plan caches"):
        config.get_plan_cache()


def test_nd_planning_call_takes_a_bool_only(cp, session):
    seq = session.submit(m.KIND_CUDA, api.NONE, None, "fft.nd_planning", None, ["yes"])
    with pytest.raises(TypeError, match="bool"):
        session.sync()
    assert seq and float(cp.ones(3).sum()) == 3
