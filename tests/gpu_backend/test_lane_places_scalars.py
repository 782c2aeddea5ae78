"""One stretch at several places of a round served by the steady lane
(lane_arming._arm_turns), each place with parameters of its own that do not step."""

from __future__ import annotations

import time
from functools import partial

import pytest

from ..differential import assert_bitwise
from ..run_ahead_sessions import beside_no_replay, pool_running_ahead
from .test_lane_turns import _one_stretch_twice_a_round

STEPS = 60
PAUSE = 0.002


#: one stretch at two places of a round, each place its own constant scalars (parameters
#: that never step, apart between the places), then a read of both
_two_places_constant_params_apart = partial(_one_stretch_twice_a_round, b_scalars=(0.8, 0.25))


def _two_places_in_place_params_apart(cp):
    """The same, the arrays written in place (``a *= s``) under constant scalars apart."""
    a = cp.linspace(0, 1, 256, dtype=cp.float32)
    b = cp.linspace(1, 2, 256, dtype=cp.float32)
    out = []
    for _ in range(STEPS):
        a *= 0.97
        a += 0.01
        out.append(float(a.max()))
        b *= 0.5
        b += 1.0
        out.append(float(b.max()))
        out.append(float((a * b).sum()))
        time.sleep(PAUSE)
    return out + [a.get(), b.get()]


def test_the_same_loops_without_the_lane_give_the_same():
    """Control: the same loops with the steady lane off (GPUWB_STEADY_LANE=0) are exact."""
    with pool_running_ahead("none", GPUWB_STEADY_LANE="0") as p:
        for loop in (_two_places_constant_params_apart, _two_places_in_place_params_apart):
            got, want, figures = beside_no_replay(p, loop)
            assert_bitwise(got, want)
            assert figures["lane"] == 0


def _four_places_mixed(cp):
    """One stretch at three places of a round of five (constant scalars apart at each, one
    place's input the other's result), reads between."""
    a = cp.linspace(0, 1, 128, dtype=cp.float32)
    b = cp.linspace(1, 2, 128, dtype=cp.float32)
    out = []
    for i in range(STEPS):
        a = a * 0.9 + 0.05
        out.append(float(a.sum()))
        b = b * 0.5 + 0.75
        out.append(float(b.sum()))
        c = a * 0.25 + 0.125
        out.append(float(c.sum()))
        out.append(float((a - b).max()))
        out.append(int((c > 0.1).sum()))
        time.sleep(PAUSE)
    return out + [a.get(), b.get()]


@pytest.mark.parametrize("variables", [{}, {"GPUWB_COMMIT_WRITES": "always"},
                                       {"GPUWB_DEFER_READS": "always"}])
@pytest.mark.parametrize("loop", [_two_places_constant_params_apart,
                                  _two_places_in_place_params_apart, _four_places_mixed])
def test_places_apart_under_settings(variables, loop):
    """Each loop bitwise as its ops give it, in the lane under the defaults, with every writing
    step committed ahead, and with every read deferred."""
    with pool_running_ahead("none", **variables) as p:
        got, want, _figures = beside_no_replay(p, loop)
    assert_bitwise(got, want)
