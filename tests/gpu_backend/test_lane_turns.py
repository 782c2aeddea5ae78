"""Stretches taking turns served in the steady lane (worker/steady_lane.py ``_arm_turns``): a
loop that reads twice or three times a step (its loss, then its accuracy) is two or three held
stretches taking turns, each of whose messages goes on by fixed steps from its last one; the
lane reads a plan for each from the generic path's last messages and, after answering one
stretch's message, runs the next one's replay ahead by its recorded calls.

Each loop runs on a session of a pool whose workers run every replay ahead and on one with
stretch replay off, compared bitwise; the loops the lane must serve say so (the worker's count
of messages answered in the lane, and of plans armed for turns), each iteration with the
user's own Python (a pause) between, as a notebook's loop has. How many of a loop's messages
the lane answers is the host's race only at its edges (the generic path's messages before
it arms, and after a message it did not expect), so the counts asked for are a quarter of
the messages at most."""

from __future__ import annotations

import time
from functools import partial

import numpy as np
import pytest

from ..differential import POOL_RUNS_NUMPY, assert_bitwise
from ..run_ahead_sessions import beside_no_replay, pool_running_ahead
from .test_run_ahead_turns import _three_turns_one_writing

STEPS = 60
#: the user's own Python between iterations (a sleep: a loaded machine's worker gets a core)
PAUSE = 0.002


@pytest.fixture(scope="module")
def pool():
    with pool_running_ahead("none") as p:
        yield p


def _loss_and_accuracy(cp):
    """Logistic regression whose step writes its weights in place under a learning rate
    that decays every step (a float the lane guesses) and reads its loss, then a read of its
    accuracy from the step's probabilities: two stretches taking turns, the second's input
    the first's result, a new handle every step."""
    rng = np.random.default_rng(31)
    x = cp.asarray(rng.normal(0, 1, (512, 8)).astype(np.float32))
    y = cp.asarray((rng.random(512) > 0.5).astype(np.float32))
    w = cp.zeros(8, dtype=cp.float32)
    lr = 0.5
    out = []
    for _ in range(STEPS):
        p = 1.0 / (1.0 + cp.exp(-(x @ w)))
        w -= lr * (x.T @ (p - y)) / 512
        lr *= 0.99
        out.append(float(((p - y) ** 2).mean()))
        out.append(float(((p > 0.5) == (y > 0.5)).mean()))
        time.sleep(PAUSE)
    return out + [w.get()]


def _turns_broken_now_and_then(cp):
    """Two stretches taking turns, with now and then a third read between (every ninth step)
    and once the second read replaced by another: each an unexpected message, the lane left
    and armed again."""
    v = cp.arange(300, dtype=cp.float32) / 300
    out = []
    for i in range(STEPS):
        v = v * 0.5 + 0.25
        out.append(float(v.sum()))
        if i == 31:
            out.append(float((v - 0.5).min()))   # (once: another read in the second's turn)
        else:
            out.append(float((v * 3.0).max()))
        if i % 9 == 8:
            out.append(float(v[i]))
        time.sleep(PAUSE)
    return out + [v.get()]


def _loss_and_accuracy_with_a_look(cp):
    """The loss-and-accuracy loop with, every seventh step, a look at a weight after the
    accuracy read (an op that is no replay): where the lane has committed the next step
    ahead — its weights written in place — that look must see them as they were before it."""
    rng = np.random.default_rng(32)
    x = cp.asarray(rng.normal(0, 1, (512, 8)).astype(np.float32))
    y = cp.asarray((rng.random(512) > 0.5).astype(np.float32))
    w = cp.zeros(8, dtype=cp.float32)
    out = []
    for i in range(STEPS):
        p = 1.0 / (1.0 + cp.exp(-(x @ w)))
        w -= 0.5 * (x.T @ (p - y)) / 512
        out.append(float(((p - y) ** 2).mean()))
        out.append(float(((p > 0.5) == (y > 0.5)).mean()))
        if i % 7 == 6:
            out.append(float(w[i % 8]))
        time.sleep(PAUSE)
    return out + [w.get()]


def test_two_stretches_taking_turns_are_served_in_the_lane(pool):
    got, want, figures = beside_no_replay(pool, _loss_and_accuracy)
    assert_bitwise(got, want)
    # (before the lane took turns, none of the 2 x STEPS messages was its)
    assert figures["lane_turns"] >= 1, figures
    assert figures["lane"] >= STEPS // 2, figures
    # (their replies pushed ahead: the accuracy's replay, early at first, goes whole once
    # the lane says so — reply L)
    assert figures["pushed"] >= STEPS // 4, figures


def test_a_writing_turn_committed_ahead_is_undone_at_a_look_between(tmp_path):
    """Every writing step committed ahead (GPUWB_COMMIT_WRITES=always): a look between two
    steps rolls the commit back, the weights as they were, bitwise."""
    with pool_running_ahead("none", GPUWB_COMMIT_WRITES="always") as committing:
        got, want, figures = beside_no_replay(committing, _loss_and_accuracy_with_a_look)
    assert_bitwise(got, want)
    assert figures["lane_turns"] >= 1, figures


def test_three_stretches_taking_turns_one_writing_its_input_in_the_lane(pool):
    got, want, figures = beside_no_replay(pool, partial(_three_turns_one_writing, steps=STEPS))
    assert_bitwise(got, want)
    assert figures["lane_turns"] >= 1, figures
    assert figures["lane"] >= STEPS // 2, figures


def test_turns_broken_now_and_then_lose_nothing(pool):
    got, want, figures = beside_no_replay(pool, _turns_broken_now_and_then)
    assert_bitwise(got, want)
    assert figures["lane_turns"] >= 2, figures   # (armed again after a message it did not expect)
    assert figures["lane_left_why"].get("other message", 0) >= 1, figures


def test_turns_in_the_lane_are_let_go_at_a_swap_out_and_taken_up_again(tmp_path):
    """A session swapped out in the middle of a loop of turns (idle 0.3 s): the lane's plans
    go with its graphs, its arrays come back, and the loop goes on bitwise, in the lane again."""
    def loop(cp):
        first = _loss_and_accuracy(cp)
        time.sleep(1.0)   # (idle: swapped out)
        return first + _loss_and_accuracy(cp)

    with pool_running_ahead("none", swap_dir=tmp_path) as swapping:
        got, want, figures = beside_no_replay(swapping, loop)
    assert_bitwise(got, want)
    assert figures["lane_turns"] >= 2, figures


def _a_turn_that_writes_through_a_reshaped_view(cp):
    """Two stretches taking turns, the second writing an array through a reshaped view of it
    (``m.reshape(-1) += u``): a stretch the worker never runs ahead (StretchReplay.ahead_safe),
    so the lane must not either (found by a review: a turn other than the first was read
    from messages run when they came, and ran ahead whatever the generic path's limits)."""
    u = cp.linspace(0, 1, 300, dtype=cp.float32)
    m = cp.zeros((10, 30), dtype=cp.float32)
    out = []
    for _ in range(STEPS):
        u = u * 0.97 + 0.01
        out.append(float(u.sum()))
        r = m.reshape(-1)
        r += u
        out.append(float(m.max()))
        time.sleep(PAUSE)
    return out + [u.get(), m.get()]


def _a_cheap_turn_then_a_costly_one(cp):
    """A cheap step and its read, then a read of a costly function of the step (twenty
    passes over a 1 000 x 1 000 float64 array: tens of ms on the NumPy device, far over the
    run-ahead limit its pool sets)."""
    u = cp.linspace(0, 1, 64, dtype=cp.float32)
    big = cp.ones((1000, 1000), dtype=cp.float64) / 1000
    out = []
    for _ in range(24):
        u = u * 0.97 + 0.01
        out.append(float(u.sum()))
        w = cp.sin(big) + cp.cos(big) * u[0]
        for _ in range(6):
            w = cp.sqrt(cp.abs(w) + 1.0)
        out.append(float(w.sum()))
        time.sleep(PAUSE)
    return out + [u.get()]


def test_a_turn_the_worker_never_runs_ahead_is_not_served_in_the_lane(pool):
    got, want, figures = beside_no_replay(pool, _a_turn_that_writes_through_a_reshaped_view)
    assert_bitwise(got, want)
    assert figures["lane_turns"] == 0, figures


@pytest.mark.skipif(not POOL_RUNS_NUMPY, reason="its costly turn takes tens of ms on the NumPy "
                    "device only: on a GPU tens of µs, under the limit (H200 run 262)")
def test_a_turn_over_the_run_ahead_limit_is_not_served_in_the_lane():
    """GPUWB_RUN_AHEAD_US=2000: the costly read's replay is never run ahead by the generic
    path, so no ring of turns is armed with it."""
    with pool_running_ahead("none", GPUWB_RUN_AHEAD_US="2000") as limited:
        got, want, figures = beside_no_replay(limited, _a_cheap_turn_then_a_costly_one)
    assert_bitwise(got, want)
    assert figures["lane_turns"] == 0, figures


def _an_in_place_write_between_turns(cp):
    """Two stretches taking turns, the second's input written in place now and then between
    them (``z += 1`` every sixth step, an op that is no replay: the lane is left and armed
    again, its own run ahead of the first turn) with a pause between steps that lets the
    worker set the next replay up ahead (GraphCopies.prepare) before the lane runs it."""
    u = cp.linspace(0, 1, 256, dtype=cp.float32)
    z = cp.ones(256, dtype=cp.float32)
    out = []
    for i in range(40):
        u = u * 0.97 + 0.01
        out.append(float(u.sum()))
        if i % 6 == 5:
            z += 1
        out.append(float((u + z).max()))
        time.sleep(0.005)
    return out + [u.get(), z.get()]


def test_a_replay_set_up_ahead_is_forgotten_once_the_lane_runs_its_stretch(pool):
    """A stretch's next replay set up ahead by the generic path (its rows and kept results'
    arrays) and then run ahead by the lane was, once the lane was left, taken as set up where
    its inputs were the same arrays again — a loop's results take turns in a few — its rows
    those the lane had set: a wrong value in three of six runs on the development VM before
    the lane forgot it (GraphCopies.unprepare). Three runs: each bitwise."""
    for _ in range(3):
        got, want, figures = beside_no_replay(pool, _an_in_place_write_between_turns)
        assert_bitwise(got, want)
    assert figures["lane_turns"] >= 1, figures


def _eight_reads_a_step(cp):
    """A step that reads eight values, as a loop printing its statistics does: the sums of two
    wrapping integer arrays, their extremes and an element, eight messages a round, two of
    them one stretch with other inputs (``int(a.min())``, ``int(c.min())``), ``c`` a step's
    new array (found by benchmarks/unseen_speed.py: ``int8_uint16_wraparound`` never in the
    lane, when the lane served rounds of three stretches at most, each once)."""
    a = cp.arange(-64, 64, dtype=cp.int16)
    b = cp.arange(0, 128, dtype=cp.int32) * 7
    out = []
    for _ in range(STEPS):
        a += 3
        b = b * 3 % 1001
        c = a * -1
        out.append((int(a.sum()), int(b.sum()), int(a.min()), int(c.min()), int(b.max()),
                    int(b[5]), int((a + b).sum()), float((b / 7).mean())))
        time.sleep(PAUSE)
    return out + [a.get(), b.get()]


def _one_stretch_twice_a_round(cp, b_scalars=(0.9, 0.05)):
    """Two arrays stepped by the same ops and read one after the other, then a read of both:
    a round of three messages whose first two are one stretch's, its inputs apart — the last
    two messages one stretch's, which is not yet a loop of that stretch alone. *b_scalars*:
    the second place's own (test_lane_places_scalars.py: parameters apart)."""
    a = cp.linspace(0, 1, 200, dtype=cp.float32)
    b = cp.linspace(1, 2, 200, dtype=cp.float32)
    out = []
    for _ in range(STEPS):
        a = a * 0.9 + 0.05
        out.append(float(a.sum()))
        b = b * b_scalars[0] + b_scalars[1]
        out.append(float(b.sum()))
        out.append(float((a - b).max()))
        time.sleep(PAUSE)
    return out + [a.get(), b.get()]


def test_a_step_that_reads_eight_values_is_served_in_the_lane(pool):
    got, want, figures = beside_no_replay(pool, _eight_reads_a_step)
    assert_bitwise(got, want)
    assert figures["lane_turns"] >= 1, figures
    assert figures["lane"] >= STEPS, figures   # (of 8 x STEPS messages)


def test_one_stretch_twice_in_a_round_is_two_places_of_the_ring(pool):
    got, want, figures = beside_no_replay(pool, _one_stretch_twice_a_round)
    assert_bitwise(got, want)
    assert figures["lane_turns"] >= 1, figures
    assert figures["lane"] >= STEPS // 2, figures


def _one_writing_stretch_twice_a_round(cp):
    """Two arrays written in place by the same ops under scalars of their own (a parameter
    apart) and read one after the other, then a read of both: the written values copied back
    into the array of each place, not into the other's."""
    a = cp.linspace(0, 1, 256, dtype=cp.float32)
    b = cp.linspace(1, 2, 256, dtype=cp.float32)
    out = []
    for i in range(STEPS):
        a *= 0.97
        a += 0.01 * (i % 5)
        out.append(float(a.max()))
        b *= 0.98
        b += 0.02 * (i % 3)
        out.append(float(b.max()))
        out.append(float((a * b).sum()))
        time.sleep(PAUSE)
    return out + [a.get(), b.get()]


def test_one_writing_stretch_twice_in_a_round_writes_each_place_back(pool):
    got, want, figures = beside_no_replay(pool, _one_writing_stretch_twice_a_round)
    assert_bitwise(got, want)
    assert figures["lane_turns"] >= 1, figures


def test_one_writing_stretch_twice_in_a_round_committed_ahead(tmp_path):
    """The same loop with every writing step committed ahead (GPUWB_COMMIT_WRITES=always):
    each place's values kept aside and written back are its own."""
    with pool_running_ahead("none", GPUWB_COMMIT_WRITES="always") as committing:
        got, want, figures = beside_no_replay(committing, _one_writing_stretch_twice_a_round)
    assert_bitwise(got, want)
    assert figures["lane_turns"] >= 1, figures
