"""``divmod`` of real operands issued as ``floor_divide`` and ``remainder`` (kernelproxy/
divmod_pair.py): the same bits as the reference module's ``divmod`` over every real dtype
and the special values, as a function, as Python's operator and reflected; a loop that
takes ``q, r = divmod(x, y)`` first in its body is held and replayed through graphs, where
a call of several results kept it from ever being held; operands it cannot tell go as the
call, with the call's errors. Real sessions on the pool's device, against NumPy (or local
CuPy on a GPU, where benchmarks/divmod_probe.py checks CuPy's own kernels too)."""

from __future__ import annotations

import numpy as np
import pytest

from kernelproxy.divmod_pair import pair, undecided
from kernelproxy.modules import module_for
from kernelproxy.session import Session
from kernelproxy.settings import SessionSettings

from ..differential import reference_module

STEPS = 36
DTYPES = ["float16", "float32", "float64", "int8", "int32", "int64", "uint8", "uint64"]
#: (float16 goes as the call: its pair differs from CuPy's divmod on a GPU, run 309)


def _values(xp, dtype, seed):
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt.kind == "f":
        a = np.concatenate([rng.standard_normal(400) * rng.choice([1e-3, 1.0, 7.0, 1e4], 400),
                            [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, -2.5, 3.0]])
    else:
        info = np.iinfo(dt)
        a = np.concatenate([rng.integers(max(info.min, -100), min(info.max, 100), 200),
                            [0, 1, info.max, info.min]])
    return xp.asarray(a.astype(dt))


def _bits(a):
    a = np.ascontiguousarray(a.get() if hasattr(a, "get") else a)
    return a.dtype.str, a.shape, a.tobytes()


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("dtype", DTYPES)
def test_divmod_gives_the_references_bits(cp, ref, dtype):
    x, y = _values(cp, dtype, 1), _values(cp, dtype, 2)
    rx, ry = _values(ref, dtype, 1), _values(ref, dtype, 2)
    float(x.sum()), float(y.sum())   # (their dtypes known here)
    scalar = 3 if np.dtype(dtype).kind in "iu" else -3.5
    cases = [((x, y), (rx, ry)), ((x, scalar), (rx, scalar)), ((scalar, y), (scalar, ry)),
             ((x, np.dtype(dtype).type(3)), (rx, np.dtype(dtype).type(3)))]
    with np.errstate(all="ignore"):
        cp.divmod(x, y)   # (the first call of the name learns the pool's container)
        divmod(x, y)
        for (a, b), (ra, rb) in cases:
            got, want = cp.divmod(a, b), ref.divmod(ra, rb)
            assert type(got) is type(want) and [_bits(g) for g in got] == [_bits(w) for w in want]
            got, want = divmod(a, b), divmod(ra, rb)
            assert [_bits(g) for g in got] == [_bits(w) for w in want]


def test_operands_it_cannot_tell_go_as_the_call(cp):
    x = cp.linspace(-3, 3, 8)
    b, c = x > 0, x.astype(cp.complex128)
    float(x.sum()), bool(b.any()), complex(c.sum())
    F = "f"
    assert pair(F, "divmod", (x, 2.0), None) == ("floor_divide", "remainder")
    assert pair("o", "divmod", (2.0, x), None) == ("floordiv", "mod")
    assert pair(F, "divmod", (b, 2), None) is None            # (a bool array)
    h = x.astype(cp.float16)
    float(h.sum())
    assert pair(F, "divmod", (h, 2.0), None) is None          # (float16: CuPy's own bits)
    assert pair(F, "divmod", (x, np.float16(2)), None) is None
    assert pair(F, "divmod", (c, 2.0), None) is None          # (complex: CuPy's error)
    assert pair(F, "divmod", (x, 2j), None) is None
    assert pair(F, "divmod", (x, True), None) is None
    assert pair(F, "divmod", (x, 2.0), {"out": (x, x)}) is None
    assert pair(F, "divmod", (2.0, 3.0), None) is None        # (no array)
    assert pair(F, "divmod", (x * 2, 2.0), None) is None      # (its dtype not known yet)
    # (... a call for want of metadata alone, kept out of held stretches: issue.call)
    assert undecided(F, "divmod", (x * 2, 2.0), None) and undecided("o", "divmod", (2.0, x * 2), None)
    assert not undecided(F, "divmod", (x, 2.0), None)         # (known: the two ops)
    assert not undecided(F, "divmod", (c, 2.0), None)         # (known: the call for good)
    assert not undecided(F, "divmod", (x * 2, 2.0), {"out": (x, x)})
    assert undecided(F, "divmod", (x * 2, x), None)            # (the other known and real)
    assert not undecided(F, "divmod", (x * 2, np.float16(2)), None)   # (never pairs: the call)
    assert not undecided(F, "divmod", (b, x * 2), None)
    assert not undecided(F, "divmod", (x * 2, 2j), None)
    with pytest.raises(TypeError):   # (at the call, or, the name's container learnt, by the
        q, r = cp.divmod(c, 2.0)     # next sync point as an array op's: result_structures.py)
        q.get()
    assert float(x[-1]) == 3.0       # (the session serves on)


def _loop(xp, n):
    """Seconds into minutes and seconds by ``divmod`` first in the body, then hours by
    Python's ``divmod``, a read a step."""
    t = xp.arange(0.0, 4000.0, 37.0)
    k = xp.arange(1, 109, dtype=xp.int32)
    out = []
    for i in range(n):
        minutes, seconds = xp.divmod(t, 60.0)
        hours, minutes = divmod(minutes, 60.0)
        a, b = divmod(k, 7)
        out.append(float(hours.max() + minutes.sum() - seconds.min() + a.sum() - b.max()))
        t = t + 13.0
        k = k + 3
    return out, seconds, b


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_a_loop_that_takes_divmod_first_is_held_through_graphs_bitwise(pool):
    ref = reference_module()
    got, figures = {}, None
    for label, settings in (("on", SessionSettings(replay_measured=False)),
                            ("off", SessionSettings(graphs=False))):
        with Session(pool.address, pool.token, settings=settings) as s:
            out, seconds, b = _loop(module_for(s), STEPS)
            got[label] = ([np.float64(v).tobytes() for v in out], _bits(seconds), _bits(b))
            if label == "on":
                figures = s.memory_info()["stretches"]
    out, seconds, b = _loop(ref, STEPS)
    want = ([np.float64(v).tobytes() for v in out], _bits(seconds), _bits(b))
    assert got["on"] == want and got["off"] == want
    assert figures["graphed"] >= STEPS // 2, figures


def test_a_session_without_replay_sends_undecided_calls_with_the_others(pool):
    """A call not settled goes in a batch of its own only where stretches are held: with
    graph replay off (no held stretch to keep it out of) it waits in the queue as any op,
    where it had cost two flushes a call (a review's find)."""
    with Session(pool.address, pool.token, settings=SessionSettings(graphs=False)) as s:
        cp = module_for(s)
        x = cp.linspace(0.1, 2.0, 32)
        q, r = cp.divmod(x, 0.3)   # (the name's first call waits: its container learnt)
        float(q.sum())
        assert s.stretches is None
        before = s._batch
        for _ in range(7):
            q, r = cp.divmod(x * 1.5, 0.3)   # (x * 1.5's dtype not known here: undecided)
            x = q * 0.3 + r
        sent = s._batch - before
        float(x.sum())
    assert sent <= 5, f"{sent} batches for 7 steps of 4 ops (two flushes a call: 14)"
