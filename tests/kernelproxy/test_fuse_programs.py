"""``cupy.fuse`` as CuPy does it: the function traced once per argument signature on the
client, its program of calls fused in the pool (kernelproxy/fuse_trace.py,
gpu_backend/devices/fused_functions.py).

Against the reference module (NumPy in CI; local CuPy on a GPU, where the fused kernel
must give CuPy's fused kernel's bits); what a program cannot say runs unfused with the
same values; a malformed program is refused and the session goes on.
"""

from __future__ import annotations

import numpy as np
import pytest

from gpu_backend.protocol import api
from gpu_backend.protocol import messages as m
from kernelproxy.issue import call
from kernelproxy.functional import _UNFUSED
from kernelproxy.fuse_trace import FusedProgram
from kernelproxy.session import Session
from kernelproxy.settings import SessionSettings

from tests.differential import REFERENCE_IS_NUMPY, assert_bitwise, to_host


def _fuse(xp, func, name=None):
    """*func* fused by *xp*'s ``fuse`` (NumPy has none: the function itself)."""
    fuse = getattr(xp, "fuse", None)
    if fuse is None:
        return func
    return fuse(kernel_name=name)(func) if name else fuse(func)


def _programs(fused) -> list:
    return list(fused._memo.values())


def _outcome(xp, session, body):
    """*body(xp)*'s results on the host, or the type of the error it raised (the remote
    side's asynchronous errors included: the session synced)."""
    try:
        result = body(xp)
        if session is not None:
            session.sync()
        return "ok", to_host(result)
    except Exception as exc:
        return "error", type(exc).__name__


def _flat(value) -> list:
    if isinstance(value, (tuple, list)):
        return [leaf for item in value for leaf in _flat(item)]
    return [value]


def _same_outcome(expected, actual):
    """Equal outcomes: the same error, or results equal (NumPy: to the last bits allowed a
    reference that fuses nothing; local CuPy: bit for bit)."""
    assert expected[0] == actual[0], (expected, actual)
    if expected[0] == "error":
        assert expected[1] == actual[1], (expected, actual)
        return
    e, a = _flat(expected[1]), _flat(actual[1])
    if REFERENCE_IS_NUMPY:
        for x, y in zip(e, a, strict=True):
            np.testing.assert_allclose(np.asarray(y), np.asarray(x), rtol=1e-12)
            assert np.asarray(x).dtype == np.asarray(y).dtype
    else:
        assert_bitwise(e, a)


def test_a_fused_function_is_traced_once_per_signature_of_kinds(cp, ref, session):
    seen = []

    def run(xp):
        def blend(a, b, k):
            seen.append(1)
            return a * (1 - k) + b * k

        fused = _fuse(xp, blend)
        a, b = xp.linspace(0, 1, 50), xp.linspace(1, 2, 50)
        # a scalar parameter, not a constant: one trace gives every k's values
        return [fused(a, b, k / 10) for k in range(5)] + [fused(a.astype(np.float32), b, 0.5)]

    _same_outcome(_outcome(ref, None, run), _outcome(cp, session, run))
    seen.clear()
    blend_calls = []

    @cp.fuse()
    def blend(a, b, k):
        blend_calls.append(1)
        return a * (1 - k) + b * k

    a, b = cp.linspace(0, 1, 50), cp.linspace(1, 2, 50)
    for k in range(5):
        blend(a, b, k / 10)
    blend(a.astype(cp.float32), b, 0.5)   # another dtype: the same program (the pool's CuPy
    assert blend_calls == [1]             # compiles its kernel for it)
    (program,) = _programs(blend)
    assert isinstance(program, FusedProgram) and program.want == api.ARRAY
    assert program.definition["name"] == "blend" and program.definition["params"] == 3
    blend(a, b, 2)   # an int where a float was: another signature, traced again
    assert len(blend_calls) == 2 and len(_programs(blend)) == 2
    blend.clear_cache()
    blend(a, b, 0.5)
    assert len(blend_calls) == 3


BODIES = {
    "arithmetic": lambda xp, a, b: (a - b) * (a - b) / 3 + 2 ** a - a // 0.7 % 2,
    "reflected_and_unary": lambda xp, a, b: 1 - abs(-a) + (+b) * 2.5,
    "comparisons": lambda xp, a, b: ((a > b) & (a <= 1.5)) | (a == b) | ~(b != 0),
    "ufuncs": lambda xp, a, b: xp.exp(xp.sin(a)) + xp.maximum(a, b) * xp.sqrt(b),
    "reduction": lambda xp, a, b: xp.sum(a * b),
    "reduction_on_an_axis": lambda xp, a, b: xp.sum(xp.exp(a), axis=1),
    "method_reductions": lambda xp, a, b: (a * b).max(axis=0),
    "where_and_clip": lambda xp, a, b: xp.where(a > 1, a, b) + xp.clip(b, 1.2, 1.8),
    "astype": lambda xp, a, b: (a * 100).astype(np.int32) + b.astype(np.float32),
    "tuple": lambda xp, a, b: (a + b, a * b, xp.sum(a)),
    "scalar_only_arithmetic_on_one": lambda xp, a, b: a + 1,
}


@pytest.mark.parametrize("body", sorted(BODIES))
def test_fused_results_are_the_references(cp, ref, session, body):
    """Each body's values (or CuPy's refusal: ``abs()`` and a reflected ``**`` of a stand-in,
    NumPy's ufunc on one) as the reference gives them, three calls of one fused function."""
    make = BODIES[body]
    data_a = np.linspace(0, 2, 24).reshape(4, 6)
    data_b = np.linspace(1, 2, 24).reshape(4, 6)

    def run(xp):
        fused = _fuse(xp, lambda a, b: make(xp, a, b), name=body)
        a, b = xp.asarray(data_a), xp.asarray(data_b)
        return [fused(a, b) for _ in range(3)]

    _same_outcome(_outcome(ref, None, run), _outcome(cp, session, run))


def test_numpy_scalars_and_numpys_ufuncs_beside_stand_ins(cp, ref, session):
    """A NumPy scalar's operator defers to the stand-in (CuPy's test_numpy_scalar_l); NumPy's
    ufunc of a stand-in, which CuPy's fusion refuses, runs unfused here (its values)."""
    def run(xp):
        def scaled(a):
            return np.float32(2) + a * np.int8(3)
        return _fuse(xp, scaled)(xp.linspace(0, 1, 8, dtype=np.float32))

    _same_outcome(_outcome(ref, None, run), _outcome(cp, session, run))

    @cp.fuse()
    def cosine(a):
        return np.cos(a) * 2

    x = np.linspace(0, 1, 8)
    np.testing.assert_allclose(cosine(cp.asarray(x)).get(), np.cos(x) * 2)
    assert _programs(cosine) == [_UNFUSED]


def test_two_fused_functions_of_one_program_keep_kernels_of_their_own(cp, ref, session):
    """CuPy keys a kernel by the scalar's kind: a bool and an int are one key. Two functions
    of the same program are two caches, locally and in the pool (CuPy's
    test_python_scalar_param_r found the pool sharing one)."""
    def run(xp):
        def add(array, scalar):
            return array + scalar

        mask = xp.asarray(np.array([True, False, True]))
        return _fuse(xp, add)(mask, True), _fuse(xp, add)(mask, 1)

    _same_outcome(_outcome(ref, None, run), _outcome(cp, session, run))


def test_arguments_updated_in_place_out_and_none_returned(cp, ref, session):
    def run(xp):
        def accumulate(x, y):
            x += y * 2
            xp.multiply(x, 0.5, out=x)

        def inner(x, y):
            return x + y

        fused_inner = _fuse(xp, inner)

        def nested(x, y):
            return fused_inner(x, y) - y

        fused = _fuse(xp, accumulate)
        x, y = xp.arange(6, dtype=np.float64), xp.ones(6)
        returned = [fused(x, y), fused(x, y)]
        assert returned == [None, None]
        return x, _fuse(xp, nested)(x, y)

    _same_outcome(_outcome(ref, None, run), _outcome(cp, session, run))


def test_in_place_updates_beside_a_reduction_are_cupys(cp, ref, session):
    """CuPy's fused reduction takes its parameters by value: an argument updated in place in
    it keeps its values on a GPU (cupy/_core/fusion.pyx builds a ReductionKernel); NumPy's
    calls update it. The pool gives its device's answer."""
    def run(xp):
        def accumulate(x, y):
            x += y
            return xp.sum(x * 2)

        x = xp.arange(5, dtype=np.float64)
        total = _fuse(xp, accumulate)(x, xp.ones(5))
        return x, total

    _same_outcome(_outcome(ref, None, run), _outcome(cp, session, run))


def test_what_a_program_cannot_say_runs_unfused_with_the_same_values(cp):
    outside = cp.full(5, 3.0)

    unfusable = {
        "a_shape": cp.fuse(lambda x: x * x.shape[0]),
        "indexing": cp.fuse(lambda x: x[1:] + 1),
        "an_array_from_outside": cp.fuse(lambda x: x + outside),
        "a_constant_returned": cp.fuse(lambda x: 3),
        "a_call_fusion_does_not_trace": cp.fuse(lambda x: cp.cumsum(x) + x[0]),
    }
    x = cp.arange(5, dtype=cp.float64)
    host = np.arange(5, dtype=np.float64)
    expected = {"a_shape": host * 5, "indexing": host[1:] + 1, "an_array_from_outside": host + 3,
                "a_constant_returned": 3, "a_call_fusion_does_not_trace": np.cumsum(host) + 0}
    for name, fused in unfusable.items():
        for _ in range(2):
            result = fused(x)
            np.testing.assert_array_equal(to_host(result), expected[name], err_msg=name)
        assert _programs(fused) == [_UNFUSED], name
    numpy_argument = cp.fuse(lambda x, y: x + y)
    with pytest.raises(TypeError, match="Unsupported type"):   # unfused: CuPy's refusal
        numpy_argument(x, np.ones(5))
    assert _programs(numpy_argument) == []


def test_an_error_of_the_function_or_the_kernel_shows_as_in_cupy(cp):
    @cp.fuse()
    def shapes(x, y):
        return x + y

    with pytest.raises(ValueError):
        shapes(cp.arange(3), cp.arange(4)).get()
    np.testing.assert_array_equal(shapes(cp.arange(3), cp.arange(3)).get(), [0, 2, 4])

    @cp.fuse()
    def raising(x):
        raise KeyError("mine")

    with pytest.raises(KeyError, match="mine"):
        raising(cp.arange(3))


@pytest.mark.parametrize("definition, message", [
    ({"name": "f", "fusion": 1, "params": 1, "ops": [["f", "eval", None, [[0, 0]], {}]], "out": [1], "multi": False},
     "not an op CuPy's fusion traces"),
    ({"name": "f", "fusion": 1, "params": 1, "ops": [["o", "add", None, [[0, 0], [0, 5]], {}]], "out": [1], "multi": False},
     "before it exists"),
    ({"name": "f;x", "fusion": 1, "params": 1, "ops": [], "out": [0], "multi": False}, "Invalid kernel name"),
    ({"name": "<lambda>", "fusion": 1, "params": 1, "ops": [], "out": [0], "multi": False}, "Invalid kernel name"),
    ({"name": "f", "fusion": 1, "params": 1, "ops": [["m", "sum", [1, 2], [], {}]], "out": [1], "multi": False},
     "called on a slot"),
    ({"name": "f", "fusion": 1, "params": 1, "ops": [], "out": [3], "multi": False}, "outputs are slots"),
    ({"name": "f", "fusion": 1, "params": 1, "ops": [], "out": [0], "multi": False, "code": "x"},
     "exactly the fields|unexpected kernel arguments"),
])
def test_a_malformed_program_is_refused_and_the_session_goes_on(cp, session, definition, message):
    x = cp.arange(4, dtype=cp.float64)
    bad = call(session, m.KIND_KERNEL, "fuse", api.ARRAY, definition, (x,), {}, "cupy.fuse(bad)")
    with pytest.raises(Exception, match=message):
        bad.get()
    np.testing.assert_array_equal((x + 1).get(), np.arange(4) + 1)


def test_an_array_as_a_constant_is_refused(cp, session):
    x = cp.arange(4, dtype=cp.float64)
    definition = {"name": "f", "fusion": 1, "params": 1, "ops": [["o", "add", None, [[0, 0], [1, x]], {}]],
                  "out": [1], "multi": False}
    with pytest.raises(Exception, match="constant may not be"):
        call(session, m.KIND_KERNEL, "fuse", api.ARRAY, definition, (x,), {}, "f").get()
    assert float(x.sum()) == 6.0


@pytest.mark.skipif(REFERENCE_IS_NUMPY, reason="CuPy's fused kernel is the reference on a GPU")
def test_a_fused_reduction_has_cupys_fused_bits(cp, ref):
    """The loop the unseen-programs campaign found one last bit off when run unfused."""
    def run(xp):
        @xp.fuse
        def step(a, b):
            return a * 0.9 + b * 0.1

        @xp.fuse
        def energy(a):
            return xp.sum(a * a)

        x = xp.linspace(0, 2, 100)
        y = xp.cos(x)
        out = []
        for _ in range(60):
            x = step(x, y)
            y = step(y, xp.sin(x))
            out.append(float(energy(x)))
        return np.array(out), to_host(x), to_host(y)

    assert_bitwise(run(ref), run(cp))


def test_a_scalar_updated_in_place_is_a_new_scalar_an_array_is_the_same_array(cp, ref):
    """CuPy's fusion: ``s += t`` on a scalar parameter rebinds ``s`` (a copy taken before
    keeps the old value); ``x += y`` on an array updates it, every name of it sees that
    (CuPy's test_scalar_inplace_update)."""
    def run(xp):
        def scalars(s1, s2, array):
            copy = s1
            s1 += s2
            return array + s1 + copy

        def arrays(x, y):
            alias = x
            x += y
            return alias * 2

        def reduced(x):
            total = x.sum()
            before = total
            total += 1   # a reduction to no axis is a scalar
            return total + before

        def rows(x):
            summed = x.sum(axis=1)
            before = summed
            summed += 1   # one with an axis left is an array
            return before * 1

        a = xp.arange(6, dtype=np.float64).reshape(2, 3)
        return [to_host(_fuse(xp, scalars)(np.float32(2), np.float32(3), a)),
                to_host(_fuse(xp, arrays)(a.copy(), xp.ones_like(a))),
                to_host(_fuse(xp, reduced)(a)), to_host(_fuse(xp, rows)(a))]

    expected, actual = run(ref), run(cp)
    for e, a in zip(expected, actual):
        for x, y in zip(e if isinstance(e, tuple) else (e,), a if isinstance(a, tuple) else (a,)):
            np.testing.assert_array_equal(np.asarray(y), np.asarray(x))


def test_a_fused_loop_is_answered_from_its_template(cp, session):
    """A fused call in a held stretch is checked against its template by its definition's
    token (kernelproxy/stretch_key.FixedDefinition), not by walking its program: the loop
    is answered from the template, with the values of the calls unfused."""
    @cp.fuse()
    def relax(u, f, w):
        return u * (1 - w) + f * w

    stretches = session.stretches
    fast_before = stretches.figures()["fast"] if stretches is not None else 0
    u, f = cp.zeros(64), cp.linspace(0, 1, 64)
    readings = []
    for _ in range(40):
        u = relax(u, f, 0.25)
        readings.append(float(u[5]))
    expected, host_u = [], np.zeros(64)
    for _ in range(40):
        host_u = host_u * (1 - 0.25) + np.linspace(0, 1, 64) * 0.25
        expected.append(float(host_u[5]))
    np.testing.assert_allclose(readings, expected, rtol=1e-12)
    if stretches is not None:
        assert stretches.figures()["fast"] > fast_before


def test_a_function_that_defines_its_fused_functions_is_held_from_its_first_step_when_called_again(pool):
    """A function that makes its ``cupy.fuse`` functions each time it is called (a cell
    run again; an ``ElementwiseKernel`` made so alike) makes definitions of the same contents: one
    token (kernelproxy/stretch_key.FixedDefinition), so the second call's loop is the
    stretch the first call held and replays from its first step; the values are the same
    as with no replay. Definitions of other contents keep tokens of their own."""
    from kernelproxy.modules import module_for
    from kernelproxy.session import Session
    from kernelproxy.settings import SessionSettings
    from kernelproxy.stretch_key import FixedDefinition

    def cell(xp):
        @xp.fuse()
        def step(x, v, dt):
            return x + v * dt

        @xp.fuse()
        def energy(x):
            return xp.sum(x * x)

        x, v = xp.linspace(-1, 1, 64), xp.ones(64)
        out = []
        for _ in range(20):
            x = step(x, v, 0.01)
            out.append(float(energy(x)))
        return out

    with Session(pool.address, pool.token, settings=SessionSettings(replay_measured=False)) as s:
        cp = module_for(s)
        first = cell(cp)
        before = s.memory_info()["stretches"]["replays"]
        second = cell(cp)
        again = s.memory_info()["stretches"]["replays"] - before
    with Session(pool.address, pool.token, settings=SessionSettings(graphs=False)) as s:
        plain = cell(module_for(s))
    assert first == second == plain
    assert again >= 19   # (every step of the second call but its first's: before, 15 at most)
    a, b = FixedDefinition(name="k", fusion=1, ops=[1.0]), FixedDefinition(name="k", fusion=2, ops=[1.0])
    assert a.key == b.key and FixedDefinition(name="k", fusion=3, ops=[-1.0]).key != a.key
    assert FixedDefinition(name="k", ops=[0.0]).key != FixedDefinition(name="k", ops=[-0.0]).key


def test_get_array_module_of_a_stand_in_is_cupy(cp):
    """CuPy's test_get_array_module: inside a fused function its arrays are CuPy's."""
    modules = []

    @cp.fuse()
    def square(x):
        xp = cp.get_array_module(x)
        modules.append(xp)
        return xp.square(x)

    np.testing.assert_array_equal(square(cp.arange(4)).get(), [0, 1, 4, 9])
    assert modules == [cp] and isinstance(_programs(square)[0], FusedProgram)


def test_gpuwb_fuse_0_runs_fused_functions_unfused(pool, monkeypatch):
    """``GPUWB_FUSE=0`` (the session's setting): the operations go one by one, as before
    the pool fused them, with the same values."""
    import kernelproxy
    from kernelproxy.modules import module_for

    monkeypatch.setenv("GPUWB_FUSE", "0")
    session = kernelproxy.connect(pool.address, pool.token)
    try:
        assert session.settings.fuse is False
        cp = module_for(session)

        @cp.fuse()
        def blend(a, b):
            return a * 0.25 + b * 0.75

        a, b = cp.linspace(0, 1, 16), cp.linspace(1, 2, 16)
        np.testing.assert_allclose(blend(a, b).get(),
                                   np.linspace(0, 1, 16) * 0.25 + np.linspace(1, 2, 16) * 0.75)
        assert _programs(blend) == []
    finally:
        session.close()



@pytest.mark.parametrize("in_place", [False, True])
def test_a_fused_loop_is_replayed_early_with_the_bits_of_no_replay(pool, in_place):
    """A held stretch of fused calls that write nothing they were given is early-safe
    (its program says what it writes: protocol/fused_programs.fused_writes), and its
    results' metadata is predicted: its replays go early, and give the bits of the same
    loop without replay."""
    import kernelproxy
    from kernelproxy.modules import module_for

    def loop(cp):
        @cp.fuse()
        def velocity(v, x, k, damping):
            return v * damping - x * k

        @cp.fuse()
        def energy(x, v):
            return cp.sum(x * x + v * v)

        @cp.fuse()
        def push(x, v):   # (an argument written in place: the replay copies it back)
            x += v * 0.5

        x = cp.linspace(-1, 1, 256)
        v = cp.zeros(256)
        readings = []
        for i in range(120):
            v = velocity(v, x, 0.01, 0.999)
            if in_place:
                push(x, v)
            else:
                x = x + v * 0.5
            if i % 4 == 3:
                readings.append(float(energy(x, v)))
        return readings, x.get(), v.get()

    replayed = kernelproxy.connect(pool.address, pool.token)
    # (the session without replay by its settings, not GPUWB_GRAPHS: the pool's workers read
    # that variable too, and a spare worker started while it was set held nothing for the
    # next test's session: the in-place variant's "refused" of the twenty-fifth session)
    plain = Session(pool.address, pool.token, settings=SessionSettings(graphs=False))
    try:
        ours = loop(module_for(replayed))
        theirs = loop(module_for(plain))
        assert_bitwise((np.array(ours[0]), ours[1], ours[2]),
                       (np.array(theirs[0]), theirs[1], theirs[2]))
        figures = replayed.stretches.figures()
        assert figures["replays"] > 0 and figures["refused"] == 0, figures
        if not in_place:   # (a fused call that writes its argument is not early-safe)
            assert figures["early"] > 0, figures
    finally:
        replayed.close()
        plain.close()
