"""Loops of stretches taking turns (two reads a step, worker/run_ahead.py ``follows``): after
the reply to one stretch's replay, the worker runs the replay of the stretch that came next
last time, its inputs where they came from then — the same arrays as its own last replay's,
or the other's results or inputs.

Each loop runs on a session of a pool whose workers run every replay ahead and on one with
stretch replay off, compared bitwise; the loops that must be answered from their runs ahead
say so (the worker's count of replays answered ahead), each iteration with the user's own
Python (a pause) between, as a notebook's loop has."""

from __future__ import annotations

import time

import numpy as np
import pytest

from ..differential import assert_bitwise
from ..run_ahead_sessions import beside_no_replay, pool_running_ahead

STEPS = 40
#: the user's own Python between iterations (a sleep: the worker gets a core on a loaded
#: machine to run the next replay ahead before the client's message comes)
PAUSE = 0.002


@pytest.fixture(scope="module")
def pool():
    with pool_running_ahead("none") as p:
        yield p


def _loss_and_accuracy(cp):
    """A step that writes its weights in place and reads its loss, then a read of its
    accuracy from the step's probabilities: two stretches taking turns."""
    rng = np.random.default_rng(21)
    x = cp.asarray(rng.normal(0, 1, (512, 8)).astype(np.float32))
    y = cp.asarray((rng.random(512) > 0.5).astype(np.float32))
    w = cp.zeros(8, dtype=cp.float32)
    out = []
    for _ in range(STEPS):
        p = 1.0 / (1.0 + cp.exp(-(x @ w)))
        w -= 0.5 * (x.T @ (p - y)) / 512
        out.append(float(((p - y) ** 2).mean()))
        out.append(float(((p > 0.5) == (y > 0.5)).mean()))
        time.sleep(PAUSE)
    return out + [w.get()]


def _carried_then_read(cp):
    """A carried array's step and its sum read, then a second read of a function of the new
    array (the follower's input is the other's result, a new handle every step)."""
    u = cp.linspace(0, 1, 1000, dtype=cp.float32)
    out = []
    for _ in range(STEPS):
        u = u * 0.99 + 0.005
        out.append(float(u.sum()))
        out.append(float((u * u).max()))
        time.sleep(PAUSE)
    return out + [u.get()]


def _turns_that_change(cp):
    """A step followed now by one read and now by another (A B A C ...), and now and then an
    op that is no replay between: the follower guessed from last time is often wrong."""
    v = cp.arange(256, dtype=cp.float32) / 256
    out = []
    for i in range(STEPS):
        v = v * 0.5 + 0.25
        out.append(float(v.sum()))
        if i % 2:
            out.append(float((v * 3.0).min()))
        else:
            out.append(float((v - 0.1).max()))
        if i % 7 == 3:
            out.append(float(v[i % 256]))
        time.sleep(PAUSE)
    return out + [v.get()]


@pytest.mark.parametrize("loop", [_loss_and_accuracy, _carried_then_read])
def test_a_loop_of_two_stretches_taking_turns_is_answered_from_runs_ahead(pool, loop):
    got, want, figures = beside_no_replay(pool, loop)
    assert_bitwise(got, want)
    # (both stretches answered ahead, the followers' too: without the followers none of the
    # 2 x STEPS replays is, each stretch's own next replay never coming next)
    assert figures["ahead"] >= STEPS // 4, figures


def test_turns_that_change_lose_nothing(pool):
    got, want, figures = beside_no_replay(pool, _turns_that_change)
    assert_bitwise(got, want)


def _three_turns_one_writing(cp, steps: int = STEPS):
    """Three stretches taking turns, the second writing its own input in place (a running
    mean updated by each step's value): its run ahead's write waits in its graphs' buffers
    until its replay comes. (The steady lane's turns run it too: test_lane_turns.py.)"""
    u = cp.linspace(0, 1, 600, dtype=cp.float32)
    mean = cp.zeros(600, dtype=cp.float32)
    out = []
    for _ in range(steps):
        u = u * 0.97 + 0.01
        out.append(float(u.sum()))
        mean *= 0.9
        mean += 0.1 * u
        out.append(float(mean.max()))
        out.append(float((u - mean).min()))
        time.sleep(PAUSE)
    return out + [u.get(), mean.get()]


def test_three_stretches_taking_turns_one_writing_its_input(pool):
    got, want, figures = beside_no_replay(pool, _three_turns_one_writing)
    assert_bitwise(got, want)
    assert figures["ahead"] >= STEPS // 4, figures


def _turns_that_draw(cp):
    """A training step drawing its dropout mask from a RandomState and reading its loss,
    then a read of its accuracy drawing noise from a Generator (both stretches draw), and
    draws of both generators after the loop: each follower's draws are run ahead, and undone
    (the RandomState made again from its journal, the Generator's state put back) where its
    run is not asked for."""
    rs = cp.random.RandomState(23)
    rng = cp.random.default_rng(24)
    v = cp.linspace(-1, 1, 512, dtype=cp.float32)
    out = []
    for i in range(STEPS):
        keep = rs.random_sample(512) > 0.2
        v = v * 0.9 + 0.1 * cp.where(keep, v, 0.0).astype(cp.float32)
        out.append(float(v.sum()))
        out.append(float((v + 0.01 * rng.standard_normal(512)).max()))
        if i % 9 == 8:
            out.append(float(v[3]))   # (an op between: a chain broken, its run ahead undone)
        time.sleep(PAUSE)
    return out + [v.get(), rs.random_sample(4).get(), rng.random(4).get()]


def test_stretches_taking_turns_that_draw_are_run_ahead_and_undone(pool):
    got, want, figures = beside_no_replay(pool, _turns_that_draw)
    assert_bitwise(got, want)
    # (the followers' runs ahead: before, a stretch that drew was never run ahead as one.
    # How many is the host's race: the accuracy read's message follows the loss's reply
    # within a few ops, and a run ahead is not started where it is there already; on the
    # 2-core VM 5-21 of 104 replays for the same code, so at least one, not a quarter)
    assert figures["ahead"] >= 1, figures
