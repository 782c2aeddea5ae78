"""Two steps of a loop on the device at once (worker/lane_overlap.py): a step committed
ahead before its reads has the next step launched before those reads are made, its read
graph copying into slots of its own. Through a real pool on the test device (the NumPy
device in CI, whose launches run when made, so a next step's read graph that wrote the
slots of the step before would hand that step the next one's values; a GPU with
``GPUWB_TEST_DEVICES``): the same bits as without replay and without pushes, for a
loop-carried array, a scalar that steps, another message between, writes in place and
through a slice; a read that fails after the next step was launched takes both back; draws
never overlap; ``GPUWB_OVERLAP_STEPS=0`` reads first, as before.

``GPUWB_COMMIT_FIRST=always`` takes the committed-first path whatever a step's device time
(the NumPy device's steps are far under COMMIT_WRITES_MIN_SECONDS), with every run ahead's
reads deferred and writing steps committed ahead."""

from __future__ import annotations

import pytest

from ..differential import assert_bitwise
from ..run_ahead_sessions import beside_no_replay, pool_running_ahead
from .test_draws_ahead import _graphed, _two_draws
from .test_pushed_replies import _in_place, _overflowing_in_place, _slice_assigned
from .test_steady_lane import STEPS, _carried, _changing, _hot_sync, _stepping_scalar

COMMITTING_FIRST = {"GPUWB_DEFER_READS": "always", "GPUWB_COMMIT_FIRST": "always",
                    "GPUWB_COMMIT_WRITES": "always"}


@pytest.fixture(scope="module")
def pool():
    with pool_running_ahead("share", read_now=True, **COMMITTING_FIRST) as p:
        yield p


@pytest.fixture(scope="module")
def pool_without_pushes():
    with pool_running_ahead("share", read_now=True, GPUWB_PUSH="0") as p:
        yield p


@pytest.mark.parametrize("loop", [_hot_sync, _carried, _stepping_scalar, _changing, _in_place,
                                  _slice_assigned],
                         ids=["hot-sync", "carried", "stepping-scalar", "changing", "in-place",
                              "slice-assigned"])
def test_a_step_launched_before_the_step_before_is_read_gives_the_bits_the_ops_give(
        pool, pool_without_pushes, loop):
    """Each step's values are its own — not the next step's, launched before they were
    read — and every write lands once: the same bits as without replay and without
    pushes; the steps overlapped at most messages of a steady loop."""
    got, want, figures = beside_no_replay(pool, loop, early_replay=False)
    assert_bitwise(got, want)
    plain, _again, _off = beside_no_replay(pool_without_pushes, loop, early_replay=False)
    assert_bitwise(got, plain)
    least = 1 if loop is _changing else STEPS // 4
    assert figures["steps_overlapped"] >= least, figures
    assert figures["push_first"] >= figures["steps_overlapped"], figures


def test_a_read_that_fails_after_the_next_step_was_launched_takes_both_back(pool):
    """A step committed first whose read then fails, the next step already launched on its
    results: the commit taken back and the next step dropped (nothing pushed), its message
    served as ever and raising there; the loop goes on with its own values."""
    got, want, figures = beside_no_replay(pool, _overflowing_in_place, early_replay=False)
    assert got[0] == want[0] == [2, 3, 4, "OverflowError", 1] * (STEPS // 5)
    assert_bitwise(got[1], want[1])
    assert figures["push_first_undone"] >= 1 and figures["steps_overlapped_undone"] >= 1, figures


@pytest.mark.parametrize("loop", [_two_draws, _graphed], ids=["two-draws", "generator-in-graphs"])
def test_a_step_that_draws_is_read_before_the_next_is_launched(pool, loop):
    """A draw's journal is undone newest first, and a Generator's state is the graphs':
    a drawing step is never overlapped, and gives the bits the ops give."""
    got, want, figures = beside_no_replay(pool, loop, early_replay=False)
    assert_bitwise(got, want)
    assert figures["push_first"] >= 1 and figures["steps_overlapped"] == 0, figures


def test_gpuwb_overlap_steps_0_reads_the_step_before_launching_the_next():
    """Off (``0``; the benchmarks' side ``nooverlap``): committed first, read, pushed and
    only then the next step run ahead, as before."""
    with pool_running_ahead("share", read_now=True, GPUWB_OVERLAP_STEPS="0",
                            **COMMITTING_FIRST) as off:
        got, want, figures = beside_no_replay(off, _carried, early_replay=False)
    assert_bitwise(got, want)
    assert figures["steps_overlapped"] == 0 and figures["push_first"] >= STEPS // 4, figures
