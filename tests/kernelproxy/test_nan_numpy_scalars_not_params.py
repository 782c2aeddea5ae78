"""A NaN NumPy scalar (np.float32('nan'), np.float64, np.complex128) given to an
operator of a held stretch whose template recorded a NumPy scalar parameter there: the fast
path's check of a NumPy scalar (stretch_templates ``CODE_NPSCALAR``, _held_ops.c CODE_NPSCALAR)
must refuse it, as is_param does (a review found both took it as a parameter: CuPy's NaN bits
differ between a scalar and a graph's 0-d parameter, test_nan_scalars_not_params.py)."""

from __future__ import annotations

import math

import msgpack
import numpy as np
import pytest

from kernelproxy.modules import module_for
from kernelproxy.session import Session
from kernelproxy.settings import SessionSettings

from ..differential import assert_bitwise, reference_module, to_host
from .test_nan_scalars_not_params import _params_sent
from ..quiet_gc import no_collection

STEPS = 36


def _scalars(kind):
    if kind == "f4":
        return [np.float32(1.5), np.float32(2.0), np.float32("nan"), np.float32(-math.nan)]
    if kind == "f8":
        return [np.float64(1.5), np.float64(2.0), np.float64("nan"), np.float64(-math.nan)]
    return [np.complex128(1.5 + 1j), np.complex128(2.0), np.complex128(complex(math.nan, 0)),
            np.complex128(complex(1, -math.nan))]


def _loop(xp, kind):
    scalars = _scalars(kind)
    base = np.array([-2.0, -0.0, 0.0, 1.5, math.inf, math.nan, -math.nan, 3.0])
    x = xp.asarray(base.astype(np.complex128) if kind == "c16" else base)
    out = []
    for i in range(STEPS):
        s = scalars[(i // 8) % 2] if i < 16 else scalars[i % len(scalars)]
        y = (x - 0.5) * s + s   # (its first op no NumPy scalar: the run under way at s)
        out.append(y.get() if hasattr(y, "get") else y)
        out.append(float(abs(y).sum()) if hasattr(y, "get") else float(np.abs(y).sum()))
    return out


def _number(v):
    """A parameter as sent: a complex goes as msgpack's ExtType 5 (two float64)."""
    if isinstance(v, msgpack.ExtType) and v.code == 5 and len(v.data) == 16:
        re_, im = np.frombuffer(v.data, np.float64)
        return complex(re_, im)
    return v


@pytest.mark.parametrize("kind", ["f4", "f8", "c16"])
@pytest.mark.parametrize("settings", [
    SessionSettings(replay_measured=False),
    SessionSettings(replay_measured=False, compiled=False),
    SessionSettings(replay_measured=False, fast_path=False)],
    ids=["compiled", "python-methods", "no-fast-path"])
def test_a_nan_numpy_scalar_is_no_parameter(pool, settings, kind):
    expected = to_host(_loop(reference_module(), kind))
    with Session(pool.address, pool.token, settings=settings) as session:
        sent = _params_sent(session)
        with no_collection():
            got = to_host(_loop(module_for(session), kind))
        figures = session.memory_info()["stretches"]
    assert_bitwise(expected, got)
    assert figures["replays"] > 0, figures
    nums = [_number(v) for v in sent]
    nums = [v for v in nums if isinstance(v, (float, complex))]
    assert nums, sent
    assert all(v == v for v in nums), [v for v in nums if v != v]
