"""``cupyx.scipy.signal``'s objects kept in the worker (issue 9, after run 11): linear
time-invariant systems and chirp z-transforms, their class hierarchy, fields,
conversions and arithmetic; filter design's ``BadCoefficients``; the two private helpers
CuPy's suite tests; ``piecewise``'s refusal of functions; pickling a remote array.

Compared with SciPy's objects (the NumPy device's reference; CuPy's on a GPU, whose
results CuPy's own suite compares with SciPy's).
"""

from __future__ import annotations

import io
import pickle
import warnings

import numpy as np
import pytest

from gpu_backend.protocol import api
from gpu_backend.protocol import messages as m
from gpu_backend.protocol.errors import InvalidHandleError, NotAllowedError
from kernelproxy.modules import build_modules
from kernelproxy.signal_objects import LinearTimeInvariant

scipy_signal = pytest.importorskip("scipy.signal")


@pytest.fixture
def signal(cp):
    return build_modules()["cupyx.scipy.signal"]


def _close(got, want, **kw):
    np.testing.assert_allclose(got.get() if hasattr(got, "get") else got, want, **kw)


def test_lti_builds_the_class_cupy_would(signal):
    cases = [(signal.lti([1], [1, 1]), "TransferFunctionContinuous", signal.lti),
             (signal.lti([], [-1, -2], 3), "ZerosPolesGainContinuous", signal.lti),
             (signal.lti(-1., 1., 1., 0.), "StateSpaceContinuous", signal.lti),
             (signal.dlti([1], [1, -0.5], dt=0.1), "TransferFunctionDiscrete", signal.dlti),
             (signal.StateSpace(1, 2, 3, 4, dt=0.05), "StateSpaceDiscrete", signal.dlti)]
    for system, name, family in cases:
        assert type(system).__name__ == name
        assert isinstance(system, family)
        assert not isinstance(system, signal.dlti if family is signal.lti else signal.lti)
    assert isinstance(cases[0][0], signal.TransferFunction)
    assert isinstance(cases[2][0], signal.StateSpace)
    assert isinstance(cases[1][0], signal.ZerosPolesGain)


def test_fields_read_and_set(signal):
    tf = signal.TransferFunction([1, 0], [1, -1], dt=0.05)
    _close(tf.num, [1, 0])
    _close(tf.den, [1, -1])
    _close(tf.poles, [1])
    _close(tf.zeros, [0])
    assert tf.dt == 0.05 and tf.inputs == 1 and tf.outputs == 1
    tf.num = [2, 0]
    _close(tf.num, [2, 0])
    z = signal.ZerosPolesGain(1, 2, 3, dt=0.05)
    assert z.gain == 3
    assert signal.lti([1], [1, 1]).dt is None
    with pytest.raises(AttributeError):
        signal.lti([1], [1, 1]).inputs = 2   # not settable: refused here, nothing sent


def test_conversions_make_new_systems(signal):
    s = signal.TransferFunction([1, 0], [1, -1], dt=0.05)
    ss, zpk, tf = s.to_ss(), s.to_zpk(), s.to_tf()
    assert isinstance(ss, signal.StateSpace) and isinstance(zpk, signal.ZerosPolesGain)
    assert isinstance(tf, signal.TransferFunction)
    tf.num = [3, 0]   # a copy in the worker: the original keeps its numerator
    _close(s.num, [1, 0])
    copy = signal.TransferFunction(s)
    copy.den = [1, -0.5]
    _close(s.den, [1, -1])
    want = scipy_signal.TransferFunction([1, 0], [1, -1], dt=0.05).to_ss()
    _close(ss.A, want.A)
    _close(ss.C, want.C)
    d = signal.lti([1], [1, 1]).to_discrete(0.1)
    assert isinstance(d, signal.dlti) and d.dt == 0.1


def test_state_space_arithmetic(cp, signal):
    # what CuPy's StateSpace takes (it multiplies by matrices with @: a Python number
    # is CuPy's own TypeError, where SciPy's np.dot takes it)
    a = signal.StateSpace(-1., 1., 1., 0.)
    ref = scipy_signal.StateSpace(-1., 1., 1., 0.)
    two = np.array([[2.0]])
    for got, want in [(a * cp.asarray(two), ref * two), (a * a, ref * ref), (a + a, ref + ref),
                      (a + 1, ref + 1), (a - 1, ref - 1), (-a, -ref)]:
        assert isinstance(got, signal.StateSpace)
        for field in "ABCD":
            _close(getattr(got, field), getattr(want, field))
    with pytest.raises(TypeError):
        a * "two"   # the worker's system declines; so does str: Python's TypeError
    assert isinstance(a + 1, signal.StateSpace)   # the session goes on
    # an array operand defers to the system (its __array_ufunc__ is None), as CuPy's does
    left = cp.asarray(two) * a
    assert isinstance(left, signal.StateSpace)
    _close(left.C, (two * ref).C)


def test_only_state_space_has_arithmetic(signal):
    tf = signal.TransferFunction([1], [1, 1])
    for attempt in (lambda: tf * 2, lambda: 2 * tf, lambda: -tf,
                    lambda: signal.StateSpace(-1., 1., 1., 0.) * tf):
        with pytest.raises(TypeError):
            attempt()
    assert tf.den.shape == (2,)   # the session goes on


def test_setting_a_field_fails_at_the_assignment(signal):
    system = signal.lti([1], [1, 1])
    with pytest.raises(AttributeError):
        system.dt = 0.5   # a continuous system's dt has no setter in CuPy either
    with pytest.raises(AttributeError):
        system.inputs = 2   # read-only here, nothing sent
    _close(system.num, [1])


def test_systems_passed_to_functions_and_methods(signal):
    system = signal.lti([1], [1, 1])
    ref = scipy_signal.lti([1], [1, 1])
    w, mag, phase = signal.bode(system, n=20)
    rw, rmag, rphase = scipy_signal.bode(ref, n=20)
    _close(w, rw, rtol=1e-6)
    _close(mag, rmag, rtol=1e-6)
    t, y = system.step(N=10)
    rt, ry = ref.step(N=10)
    _close(y, ry, rtol=1e-6)
    d = signal.TransferFunction(1, [1, -0.2], dt=0.1)
    t, (y,) = signal.dstep(d, n=5)
    rt, (ry,) = scipy_signal.dstep(scipy_signal.TransferFunction(1, [1, -0.2], dt=0.1), n=5)
    _close(y, ry, rtol=1e-10)
    assert repr(system).startswith("TransferFunctionContinuous(")


def test_bad_systems_raise_cupys_errors(signal):
    with pytest.raises(ValueError):
        signal.dlti(1)
    with pytest.raises(ValueError):
        signal.dlti(1, 1, 1, 1, 1)
    with pytest.raises(NotImplementedError, match="not meant to be used directly"):
        LinearTimeInvariant([1], [1, 1])


def test_transfer_function_z_conversions(cp, signal):
    num, den = cp.array([1.0, 2.0]), cp.array([1.0, 2.0, 3.0])
    n2, d2 = signal.TransferFunction._z_to_zinv(num, den)
    _close(n2, [0, 1, 2])
    _close(d2, [1, 2, 3])
    n3, d3 = signal.TransferFunction._zinv_to_z(num, den)
    _close(n3, [1, 2, 0])


def test_czt_objects(cp, signal):
    x = np.random.default_rng(0).standard_normal(16)
    czt = signal.CZT(16, 8, w=np.exp(-0.2j), a=1.1)
    ref = scipy_signal.CZT(16, 8, w=np.exp(-0.2j), a=1.1)
    _close(czt(cp.asarray(x)), ref(x), rtol=1e-9)
    _close(czt.points(), ref.points(), rtol=1e-12)
    zoom = signal.ZoomFFT(16, [0.1, 0.3], fs=2)
    assert isinstance(zoom, signal.CZT)
    _close(zoom(cp.asarray(x)), scipy_signal.ZoomFFT(16, [0.1, 0.3], fs=2)(x), rtol=1e-9)
    with pytest.raises(ValueError, match="Invalid number of CZT"):
        signal.CZT(3.5)


def test_bad_coefficients_warning_travels(signal):
    sos = signal.butter(12, [5., 30.], "bandpass", fs=1200., analog=False, output="sos")
    with pytest.warns(signal.BadCoefficients, match="Badly conditioned"):
        signal.sos2zpk(sos)
    assert issubclass(signal.BadCoefficients, UserWarning)


def test_private_helpers_the_suite_tests(cp):
    modules = build_modules()
    zc, zr = modules["cupyx.scipy.signal._iir_filter_conversions"]._cplxreal(
        cp.array([1 + 3j, 1 - 3j, 2.0]))
    _close(zc, [1 + 3j])
    _close(zr, [2.0])
    with pytest.raises(ValueError):
        modules["cupyx.scipy.signal._iir_filter_conversions"]._cplxreal(cp.array([1 + 3j, 1 + 2j]))
    d = modules["cupyx.scipy.signal._savitzky_golay"]._polyder(cp.array([1.0, 2.0, 3.0]), 1)
    _close(d, [2.0, 2.0])


def _refused(session, kind, want, name, target, args=()):
    session.submit(kind, want, session.new_id(), name, target, list(args))
    with pytest.raises(NotAllowedError):
        session.sync()


def test_new_objects_only_from_methods_that_make_them(cp, session, signal):
    system = signal.lti([1], [1, 1])
    x = cp.arange(8.0)
    _refused(session, m.KIND_FUNCTION, api.OBJECT, "split", None, [x, 2])   # arrays kept as objects
    _refused(session, m.KIND_OBJECT, api.OBJECT, "signal.lti.bode", system._h)
    _refused(session, m.KIND_OBJECT, api.OBJECT, "signal.lti", None, [[1], [1, 2]])
    _refused(session, m.KIND_OBJECT, api.MULTI, "signal.lti.to_ss", system._h)
    _refused(session, m.KIND_OBJECT, api.NONE, "signal.lti.inputs", system._h, [2])   # read-only
    assert isinstance(system.to_ss(), signal.StateSpace)   # the session goes on
    _close(x, np.arange(8.0))


def test_object_fields_off_the_allow_list_are_refused(cp, session, signal):
    system = signal.lti([1], [1, 1])
    for name in ("signal.lti.__class__", "signal.lti._num", "signal.lti.__dict__",
                 "signal.lti.inputs.__class__"):
        hid = session.new_id()
        session.submit(m.KIND_OBJECT, api.MULTI, hid, name, system._h, [])
        with pytest.raises(NotAllowedError):
            session.sync()
    rs = cp.random.RandomState(0)
    session.submit(m.KIND_OBJECT, api.MULTI, session.new_id(), "signal.lti.num", rs._h, [])
    with pytest.raises(InvalidHandleError):   # a RandomState is no system
        session.sync()
    _close(system.den, [1, 1])   # the session goes on


def test_piecewise_refuses_functions_as_cupy_does(cp):
    x = cp.linspace(-2, 4, 6)
    _close(cp.piecewise(x, [x < 0, x > 0], [-1, 1]), [-1, -1, 1, 1, 1, 1])
    with pytest.raises(NotImplementedError, match="Callable"):
        cp.piecewise(x, [x < 0, x > 0], [lambda v: -v, 1])


@pytest.mark.parametrize("order", ["C", "F"])
def test_remote_arrays_pickle_as_cupys_do(cp, order):
    host = np.arange(24.0).reshape(2, 3, 4)
    a = cp.array(np.asfortranarray(host) if order == "F" else host)
    b = pickle.loads(pickle.dumps(a))
    assert type(b) is type(a) and b._h != a._h
    _close(b, host)
    assert b.flags.c_contiguous == a.flags.c_contiguous
    assert b.flags.f_contiguous == a.flags.f_contiguous
    buf = io.BytesIO()
    a.dump(buf)
    c = cp.load(io.BytesIO(buf.getvalue()), allow_pickle=True)
    _close(c, host)
    _close(pickle.loads(a.dumps()), host)


def test_base_n_aliases_have_numpys_signatures(cp):
    import inspect
    for name in ("binary_repr", "base_repr"):
        assert inspect.signature(getattr(cp, name)) == inspect.signature(getattr(np, name))
        assert getattr(cp, name).__doc__
    assert cp.binary_repr(-3, 5) == np.binary_repr(-3, 5)


def test_no_warnings_from_plain_system_use(signal):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        signal.lti([1], [1, 2, 1]).impulse(N=5)


def test_systems_copy_in_the_pool_and_refuse_pickling(signal):
    import copy
    tf = signal.TransferFunction([1, 0], [1, -1], dt=0.05)
    for made in (copy.copy(tf), copy.deepcopy(tf)):
        assert type(made) is type(tf) and made._h != tf._h
        made.num = [5, 0]
        _close(tf.num, [1, 0])   # the original is untouched
    ss = copy.copy(signal.lti(-1., 1., 1., 0.))
    assert isinstance(ss, signal.StateSpace)
    with pytest.raises(TypeError, match="cannot be pickled"):
        pickle.dumps(tf)
