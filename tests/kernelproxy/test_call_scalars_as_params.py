"""A scalar that changes each step through a call, not an operator: a two-operand ufunc's
(``cupy.maximum(x, floor)``, ``cupy.multiply(x, decay, out=x)``, ``cupy.clip(x, -b, b)``)
and a random distribution's own (``rs.normal(0, sigma, n)``) are stretch parameters
(protocol/stretches.py's ``leading_params``), so that such a loop is held and replayed, with
the numbers of the same ops sent one by one. Before, each step's value made a new stretch
key and the loop never replayed. The keys are built from a real session's arrays; the loops
run on the NumPy pool (local CuPy's numbers on a GPU host)."""

from __future__ import annotations

import struct
import time

import numpy as np
import pytest

from gpu_backend.protocol import api
from gpu_backend.protocol import messages as m
from gpu_backend.protocol.stretches import leading_params
from gpu_backend.worker.draw_journal import CAPTURED_DRAWS
from kernelproxy.modules import module_for
from kernelproxy.session import Session
from kernelproxy.settings import SessionSettings
from kernelproxy.stretch_key import StretchKey

from ..differential import reference_module

FN, OBJ, ARRAY = m.KIND_FUNCTION, m.KIND_OBJECT, api.ARRAY
STEPS = 40


# ------------------------------------------------------------------ the rule


def _call_key(session, kind, name, target, args, kwargs=None):
    key = StretchKey(session._handle_of)
    key.add_op(kind, ARRAY, session.new_id(), name, target, args, kwargs or {})
    return key


def test_a_ufuncs_scalar_arguments_are_parameters_and_its_kind_of_scalar_stays_in_the_key(cp, session):
    x = cp.ones(4)
    a, b = _call_key(session, FN, "maximum", None, (x, 0.5)), _call_key(session, FN, "maximum", None, (x, 0.75))
    assert a.key() == b.key() and a.params == [0.5] and b.params == [0.75]
    assert _call_key(session, FN, "maximum", None, (x, 1)).key() != a.key()   # (int: NEP 50)
    clip = [_call_key(session, FN, "clip", None, (x, -b, b)) for b in (1.0, 2.0)]
    assert clip[0].key() == clip[1].key() and clip[1].params == [-2.0, 2.0]
    method = [_call_key(session, m.KIND_METHOD, "clip", x, (-b, b)) for b in (1.0, 2.0)]
    assert method[0].key() == method[1].key() and method[1].params == [-2.0, 2.0]
    assert _call_key(session, m.KIND_METHOD, "round", x, (2,)).params == []


def test_a_power_a_unary_ufunc_and_keywords_keep_their_scalars_as_literals(cp, session):
    x = cp.ones(4)
    for name, args, kwargs in [("power", (x, 2.0), {}), ("float_power", (x, 2.0), {}),
                               ("sum", (x,), {"axis": 0}), ("add", (x,), {"dtype": "float32"})]:
        key = _call_key(session, FN, name, None, args, kwargs)
        assert key.params == [], name
    assert _call_key(session, FN, "power", None, (x, 2.0)).key() != \
        _call_key(session, FN, "power", None, (x, 0.5)).key()


def test_a_distributions_leading_scalars_are_parameters_its_size_a_literal(cp, session):
    rs = cp.random.RandomState(1)
    name = "random.RandomState.normal"
    a, b = (_call_key(session, OBJ, name, rs._h, (0.0, s, 16)) for s in (1.0, 0.5))
    assert a.key() == b.key() and b.params == [0.0, 0.5]
    assert _call_key(session, OBJ, name, rs._h, (0.0, 1.0, 17)).key() != a.key()
    assert leading_params(OBJ, "random.RandomState.uniform") == 2   # (cupy.random.uniform's:
    assert leading_params(OBJ, "random.RandomState.rand") == 0      # the global RandomState)
    assert leading_params(OBJ, "random.RandomState.triangular") == 3
    # a Generator's draws that the graphs make too (a graph bakes their values in)
    assert {member: leading_params(OBJ, f"random.Generator.{member}") for member in CAPTURED_DRAWS} \
        == {"random": 0, "standard_normal": 0, "standard_exponential": 0, "uniform": 2,
            "exponential": 1, "integers": 2}
    assert leading_params(OBJ, "random.Generator.poisson") == 1


def test_a_user_kernels_numpy_scalars_are_parameters_wherever_they_are(cp, session):
    """A RawKernel's ``np.float32(t)`` inside its argument tuple, an ElementwiseKernel's
    ``np.float64(lr)``: parameters, their dtype in the key (protocol/stretches.kernel_param);
    a Python scalar, a launch's sizes and a fused program's scalars stay literal. The
    worker's walk numbers them in the same order (StretchRecords._kernel_walk), and a
    re-run gives each its dtype back."""
    from gpu_backend.protocol import codec
    from gpu_backend.protocol.stretch_records import StretchRecords
    from kernelproxy.stretch_key import FixedDefinition

    raw = FixedDefinition({"code": "...", "name": "k"})
    x = cp.ones(4, dtype=cp.float32)
    K = m.KIND_KERNEL

    def key(name, args, want=api.NONE):
        k = StretchKey(session._handle_of)
        k.add_op(K, want, None if want == api.NONE else session.new_id(), name, raw, args, {})
        return k

    a, b = (key("raw", ((4,), (256,), (x, np.float32(t), np.int32(4)))) for t in (0.5, 0.75))
    assert a.key() == b.key() and a.params == [0.5, 4] and b.params == [0.75, 4]
    assert key("raw", ((4,), (256,), (x, np.float64(0.5), np.int32(4)))).key() != a.key()
    assert key("raw", ((4,), (256,), (x, 0.5, 4))).params == []            # (Python's: literal)
    assert key("raw", ((4,), (256,), (x, 0.5, 4))).key() != key("raw", ((4,), (256,), (x, 0.75, 4))).key()
    assert key("raw", ((4,), (256,), (x, np.float32("nan"), np.int32(4)))).params == [4]
    ew = [key("elementwise", (x, np.float64(lr)), api.ARRAY) for lr in (0.1, 0.05)]
    assert ew[0].key() == ew[1].key() and ew[1].params == [0.05]
    assert key("fuse", (x, np.float32(2.0)), api.ARRAY).params == []
    # the worker's walk of the record the client sends: the same parameters, in order
    hid = x._h
    record = codec.unpackb(codec.packb([[1, K, api.NONE, None, "raw"],
                                        [{"code": "...", "name": "k"},
                                         [[4], [256], [codec.Handle(hid), np.float32(0.5), np.int32(4)]],
                                         {}]]))
    walked = StretchRecords([record])
    assert walked.params == 2 and walked.inputs == 1
    slots = walked.items[0].args[2]
    assert [(s.kind, s.n) for s in slots] == [("i", 0), ("p", 0), ("p", 1)]
    assert type(slots[1].value([0.25, 9])) is np.float32 and type(slots[2].value([0.25, 9])) is np.int32


# ------------------------------------------------------------------ loops that use them


def ufunc_scalars(xp):
    """A decay, a floor and bounds that change each step, through calls."""
    x = xp.linspace(-2.0, 2.0, 300).astype(xp.float32)
    out = []
    for i in range(STEPS):
        xp.multiply(x, 1.0 - 0.002 * i, out=x)
        y = xp.clip(xp.maximum(x, -1.5 + 0.01 * i), -1.0 - 0.001 * i, 1.0 + 0.001 * i)
        z = xp.add(y, i) * xp.float32(0.5)   # (an int parameter: float32 stays)
        z = z.clip(-0.75 - 0.01 * i, 0.75)       # (an array's clip: its bounds too)
        out.append(float(xp.hypot(z, 0.25 * i).sum()))
    return out + [float(x.sum())]


def scalar_kind_changes(xp):
    """The floor an int for half the loop, then a float: the template's guard misses and the
    ops go as ever, with NumPy's promotion each time (int32, then float64)."""
    x = xp.arange(50, dtype=xp.int32)
    out = []
    for i in range(STEPS):
        floor = i if i < STEPS // 2 else i + 0.5
        y = xp.maximum(x, floor) * 2
        out.append(float(y.sum()))
        if i in (0, STEPS - 1):
            out.append(str(y.dtype))
    return out


def dtype_and_array_bounds(xp):
    """Scalars whose cast another argument decides: ``add(x_f32, s, dtype=float64)`` (the
    call's dtype: run eagerly, given each replay's value) and ``clip(x_f32, lo_f64, hi)`` or
    ``x.clip(lo_f64, hi)`` (float64 from the array bound: the buffer's dtype is all the
    arrays' and the scalar's), with constant scalars and changing ones."""
    x = xp.linspace(-1.0, 1.0, 64).astype(xp.float32)
    lo = xp.full(64, -0.5)
    out = []
    for i in range(STEPS):
        a = xp.add(x, 0.1, dtype=xp.float64) + xp.add(x, 0.1 + 0.001 * i, dtype=xp.float64)
        b = xp.clip(x, lo, 0.1) + x.clip(lo, 0.1 + 0.001 * i)
        out.append(float((a * b).sum()))
    return out


def annealed_noise(xp, schedule=lambda i: 1.0 / (1.0 + i), pause=None):
    """Langevin-style steps: noise whose scale anneals (*schedule*), from a RandomState and
    from the module's functions (the session's global RandomState); *pause(step)* the
    user's own Python after each step."""
    rs = xp.random.RandomState(5)
    xp.random.seed(6)
    x = xp.zeros(200)
    out = []
    for i in range(STEPS):
        sigma = schedule(i)
        x = 0.9 * x + rs.normal(0.0, sigma, 200) + xp.random.uniform(-sigma, sigma, 200)
        out.append(float(x.sum()))
        if pause is not None:
            pause(i)
    return out + [_host(xp, rs.normal(0.0, 1.0, 3)), _host(xp, xp.random.uniform(0.0, 1.0, 3))]


def _host(xp, a):
    return a.tolist() if xp is np else a.get().tolist()


def _run(pool, program, settings):
    with Session(pool.address, pool.token, settings=settings) as s:
        got = program(module_for(s))
        figures = s.memory_info()["stretches"]
    return got, figures


def _bits(values: list) -> list:
    """Floats by their bits (-0.0 is not 0.0, a NaN is its own), arrays' lists alike."""
    return [[_bits(v)] if isinstance(v, list) else
            (struct.pack("<d", v) if isinstance(v, float) else v) for v in values]


@pytest.mark.parametrize("program", [ufunc_scalars, scalar_kind_changes, dtype_and_array_bounds,
                                     annealed_noise])
@pytest.mark.parametrize("compiled", [True, False], ids=["compiled", "python"])
def test_a_loop_whose_call_scalars_change_is_replayed_with_the_numbers_of_no_replay(pool, program, compiled):
    got, figures = _run(pool, program, SessionSettings(replay_measured=False, compiled=compiled))
    want, _ = _run(pool, program, SessionSettings(graphs=False))
    assert _bits(got) == _bits(want)
    # held and replayed (every step its own key before: none was; the kind that changes
    # mid-loop, a held stretch of each half)
    assert figures["replays"] >= (STEPS // 2 - 10 if program is scalar_kind_changes else STEPS - 10), figures
    ref = reference_module()
    if program is not annealed_noise or ref.__name__ == "cupy":   # (NumPy's draws are others)
        assert _bits(got) == _bits(program(ref))


def linear_annealing(xp):
    """The scale stepped down by a constant (``2.0 - 0.03 * i``, a model of
    worker/float_steps.py's): its next value guessed, the next step run ahead. The user's
    Python takes a millisecond after each step, and fifty after every sixth (a run ahead is
    then made whatever the host's load: the worker runs one right after its reply, unless
    the next message is there already)."""
    return annealed_noise(xp, lambda i: 2.0 - 0.03 * i,
                          lambda i: time.sleep(0.05 if i % 6 == 5 else 0.001))


def test_a_run_ahead_of_annealed_noise_takes_the_guessed_scale_or_draws_again(pool):
    """A run ahead draws with the scale's guessed next value; where the guess or the step
    was wrong, its draws are undone from the generators' journals and made again: the
    numbers are no replay's either way."""
    for program in (linear_annealing, annealed_noise):
        got, figures = _run(pool, program, SessionSettings(replay_measured=False, early_replay=False))
        want, _ = _run(pool, program, SessionSettings(graphs=False))
        assert _bits(got) == _bits(want), program.__name__
        if program is linear_annealing:
            assert figures["ahead"] >= 1, figures
