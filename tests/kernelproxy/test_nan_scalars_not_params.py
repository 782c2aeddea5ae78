"""A NaN scalar is no parameter of a held stretch (gpu_backend/protocol/stretches.py
``is_param``): it goes as a literal of the stretch, keyed by its bits, and the stretch's
graphs are given it as the op was.

Why: CuPy given a NaN as a Python scalar makes every NaN of ``x + s`` that scalar's bits;
given it as a 0-d array — as a graph reads a parameter from its block — it keeps an
element's own NaN. On an H200 (run 275, benchmarks/nan_param_probe.py) ``x + -nan``,
``x * -nan``, ``arctan2(x, -nan)`` and ``fmin(x, -nan)`` replayed through graphs gave
``+nan`` where ``x`` held one, local CuPy ``-nan``. The NumPy device keeps the element's NaN
both ways, so in CI the loops below are equal either way: what is checked here is that no
replay carries a NaN parameter — not from the compiled fast path, its Python methods, nor
the key's own path — and that the results stay those of the ops; a GPU run checks them
against local CuPy (``GPUWB_TEST_DEVICES=auto GPUWB_REFERENCE=cupy``)."""

from __future__ import annotations

import math

import msgpack
import numpy as np
import pytest

from gpu_backend.protocol.stretches import is_param
from kernelproxy.modules import module_for
from kernelproxy.session import Session
from kernelproxy.settings import SessionSettings

from ..differential import assert_bitwise, reference_module, to_host
from ..quiet_gc import no_collection

STEPS = 36
SCALARS = [1.5, math.nan, math.nan, -math.nan, -math.nan, 2.0, -0.0, -math.nan, math.nan]


@pytest.mark.parametrize("value", [math.nan, -math.nan, complex(math.nan, 0.0),
                                   complex(1.0, -math.nan), np.float32("nan"),
                                   np.float64("-nan"), np.complex64(complex(0, math.nan))])
def test_a_nan_is_no_parameter(value):
    assert not is_param(value)


@pytest.mark.parametrize("value", [0.0, -0.0, math.inf, -math.inf, 5e-324, 1.5 + 2j,
                                   np.float16(3), np.int8(-1), True, 7])
def test_other_numbers_are_parameters(value):
    assert is_param(value)


def _loop(xp, steps=STEPS):
    """Ops given a scalar that is now a number, now a NaN of either sign, on an array holding
    NaNs of both signs: operators downloaded, then functions read, every step (two
    stretches a step)."""
    x = xp.asarray(np.array([-2.0, -0.0, 0.0, 1.5, math.inf, math.nan, -math.nan, 3.0]))
    out = []
    for i in range(steps):
        s = SCALARS[i % len(SCALARS)]
        y = x * s + s   # (operators alone: the compiled fast path's checks)
        out.append(y.get() if hasattr(y, "get") else y)
        z = xp.arctan2(x, s)   # (a ufunc's scalar: the Python methods')
        w = xp.fmin(x, s)
        out.append(float((z + w).sum()))
    return out


def _params_sent(session) -> list:
    """Wrap *session*'s sends: the parameters of every replay entry it sends, collected."""
    seen: list = []
    real = session.link.send

    def send(frames, track=False):
        unpacker = msgpack.Unpacker(raw=False, strict_map_key=False)
        unpacker.feed(bytes(frames[0]))
        for obj in unpacker:
            if isinstance(obj, dict) and isinstance(obj.get("T"), list) and len(obj["T"]) > 3:
                seen.extend(obj["T"][3])
            break
        return real(frames, track=track)

    session.link.send = send
    return seen


@pytest.mark.parametrize("settings", [
    SessionSettings(replay_measured=False),
    SessionSettings(replay_measured=False, compiled=False),
    SessionSettings(replay_measured=False, fast_path=False)],
    ids=["compiled", "python-methods", "no-fast-path"])
def test_a_nan_scalar_goes_as_a_literal_and_the_loop_gives_what_its_ops_give(pool, settings):
    expected = to_host(_loop(reference_module()))
    with Session(pool.address, pool.token, settings=settings) as session:
        sent = _params_sent(session)
        with no_collection():
            got = to_host(_loop(module_for(session)))
        figures = session.memory_info()["stretches"]
    assert_bitwise(expected, got)
    assert figures["replays"] > 0, figures   # (its number steps are replayed)
    floats = [v for v in sent if type(v) is float]
    assert floats, sent   # (1.5, 2.0, -0.0 go as parameters ...)
    assert all(v == v for v in floats), floats   # (... a NaN never does)
