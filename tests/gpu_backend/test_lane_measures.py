"""A lone session's steady lane measures the run ahead the pacer wants measured (every
MEASURE_EVERY-th replay, worker/pacing.py ``replay_estimate``) itself, as the generic run
ahead would (worker/steady_lane.py, ``GPUWB_LANE_MEASURES``): it declines none of its runs
ahead for it, and what it measured is learnt when answered. With ``GPUWB_LANE_MEASURES=0``
it declines them, as before, and the generic run ahead measures. Either way the loop's
numbers are those of a session without replay. Through a real pool on the NumPy device,
whose workers run every replay ahead (tests/run_ahead_sessions.py)."""

from __future__ import annotations

import numpy as np
import pytest

from ..differential import assert_bitwise
from ..run_ahead_sessions import beside_no_replay, pool_running_ahead
from .test_steady_lane import _pause

STEPS = 150


def _carried(cp):
    x = cp.arange(100, dtype=cp.float32) / 100
    out = []
    for _ in range(STEPS):
        x = x * 0.5 + 1.0
        out.append(float(x.sum()))
        _pause()
    return out, x.get()


def _drawing(cp):
    """A RandomState's loop: the lane's run ahead draws, and is measured now and then."""
    rs = cp.random.RandomState(5)
    out = []
    for _ in range(STEPS):
        out.append(float(cp.maximum(rs.standard_normal(64) - 0.5, 0.0).mean()))
        _pause()
    return out, rs.standard_normal(3).get()


@pytest.fixture(scope="module", params=["1", "0"], ids=["the lane measures", "the generic path measures"])
def pool(request):
    with pool_running_ahead("share", read_now=True, GPUWB_LANE_MEASURES=request.param) as p:
        p.measures = request.param
        yield p


@pytest.mark.parametrize("loop", [_carried, _drawing])
def test_the_replays_the_pacer_measures(pool, loop):
    measures = pool.measures
    got, want, figures = beside_no_replay(pool, loop, early_replay=False)
    assert_bitwise(np.array(got[0]), np.array(want[0]))
    assert_bitwise(got[1], want[1])
    assert figures["lane"] >= STEPS // 4, figures
    declined = figures["lane_declined"].get("measured", 0)
    if measures == "1":   # (every MEASURE_EVERY-th replay once the lane stands: a few)
        assert figures["lane_measured"] >= 1 and declined == 0, figures
    else:
        assert figures["lane_measured"] == 0 and declined >= 1, figures
