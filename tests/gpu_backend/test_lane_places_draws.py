"""One drawing stretch at two places of a round in the steady lane."""

from __future__ import annotations

import time

import pytest

from ..differential import assert_bitwise
from ..run_ahead_sessions import beside_no_replay, pool_running_ahead

STEPS = 60
PAUSE = 0.002


def _draws_at_two_places(sigma_b):
    def loop(cp):
        rs = cp.random.RandomState(5)
        a = cp.zeros(128, dtype=cp.float64)
        b = cp.ones(128, dtype=cp.float64)
        out = []
        for _ in range(STEPS):
            a = a + rs.normal(0.0, 0.5, 128)
            out.append(float(a.sum()))
            b = b + rs.normal(0.0, sigma_b, 128)
            out.append(float(b.sum()))
            out.append(float((a * b).mean()))
            time.sleep(PAUSE)
        return out + [a.get(), b.get()]
    return loop


@pytest.mark.parametrize("sigma_b", [0.5, 0.25])
def test_draws_at_two_places(sigma_b):
    with pool_running_ahead("none") as p:
        got, want, _figures = beside_no_replay(p, _draws_at_two_places(sigma_b))
    assert_bitwise(got, want)
