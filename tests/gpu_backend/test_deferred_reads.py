"""Reads deferred until the client's next message (``GPUWB_DEFER_READS``, worker/steady_lane.py
``_read_ahead``/``read_deferred``, worker/server_replies.py ``_push_ahead``): states the tests
of test_pushed_replies.py do not reach (found by a review of the change), all with ``always`` (the path taken at every run ahead
whatever the host's speed), each loop bit for bit against a session without replay.

- a deferred run ahead dropped while its reads wait: its closing read fails (``int()`` of
  inf and of NaN), the loop's scalar jumps;
- drawing loops (a ``RandomState`` and a ``Generator``) with other draws, a reseed and
  other ops between their steps, each dropping a run ahead whose reads wait;
- a drawing loop swapped out while a step is committed ahead and the next one's reads wait;
- a loop whose last commit is rolled back while the run ahead after it waits for its reads
  (the loop ended by another read), the session then swapped out: the dropped run ahead
  must not stay referenced (a pointer of the lane's to the run ahead whose reads wait, in
  this change's first version, kept it, and with it its stretch's graph, whose memory a
  swap-out frees by dropping the graph: on an H200 768 MB stayed
  on the device after the swap-out of a loop over three 256 MB buffers, 0 with
  ``GPUWB_DEFER_READS=0``). The NumPy device's graphs hold no device memory and are not
  evicted by a swap-out, so there that assertion holds either way: it bites on a GPU
  (``GPUWB_TEST_DEVICES=0``)."""

from __future__ import annotations

import numpy as np
import pytest

from kernelproxy.modules import module_for
from kernelproxy.session import Session
from kernelproxy.settings import SessionSettings

from ..differential import TEST_DEVICES, assert_bitwise
from ..run_ahead_sessions import beside_no_replay, pool_running_ahead
from .test_pushed_replies import _session, _swap_pool
from .test_steady_lane import _pause
from .test_swap import _row, _swapped_clean, _wait

STEPS = 70
MIB = 1 << 20


@pytest.fixture(scope="module")
def pool_deferring():
    with pool_running_ahead("share", read_now=True, GPUWB_DEFER_READS="always") as p:
        yield p


# ------------------------------------------------------------------ the loops
def _read_fails(cp):
    """``int()`` of a value that becomes NaN (step 29: 0 / 0) and inf (step 39): the run
    ahead's deferred read fails there, and the client's replay raises the error as ever."""
    c = cp.asarray(np.float32(40.0))
    x = cp.arange(1, 101, dtype=cp.float32)
    out = []
    for _ in range(STEPS):
        c = c - 1.0
        try:
            out.append(int((x.sum() * (c - 10)) / (c * (c - 10))))
        except (OverflowError, ValueError) as exc:
            out.append(type(exc).__name__)
        _pause()
    assert "ValueError" in out and "OverflowError" in out, out
    return out + [c.get()]


def _jumps(cp):
    """A scalar that jumps every seventh step, and another read every fifth."""
    x = cp.arange(1000, dtype=cp.float32) / 7
    out, s = [], 1.0
    for i in range(STEPS):
        if i % 7 == 6:
            s += 1.0
        out.append(float((x * s).sum()))
        if i % 5 == 4:
            out.append(float((x * 3).max()))
        _pause()
    return out + [x.get()]


def _state_between(cp):
    """A RandomState's loop, carried, with other draws and another op between some steps."""
    rs = cp.random.RandomState(3)
    x = cp.linspace(0, 1, 256, dtype=cp.float32)
    out = []
    for i in range(STEPS):
        z = rs.standard_normal(256).astype(cp.float32)
        x = x * 0.9 + 0.1 * z
        out.append(float((x * x).mean()))
        if i % 11 == 10:
            out.append(rs.uniform(0, 1, 3).get())
        if i % 13 == 12:
            out.append(float((z + 1).sum()))
        _pause()
    return out + [x.get(), rs.standard_normal(5).get()]


def _generator_between(cp):
    """A Generator's loop whose scalar doubles now and then, other draws between."""
    rng = cp.random.default_rng(9)
    out, s = [], 1.0
    for i in range(STEPS):
        if i % 17 == 16:
            s *= 2
        z = rng.standard_normal(128) * s
        out.append(float(z.sum()))
        if i % 11 == 10:
            out.append(rng.random(3).get())
        _pause()
    return out + [rng.random(4).get(), rng.integers(0, 9, 5).get()]


def _reseeded(cp):
    """The module's generator, two draws a step, reseeded between two steps now and then."""
    cp.random.seed(1)
    out = []
    for i in range(STEPS):
        a = cp.random.rand(300)
        b = cp.random.rand(300)
        out.append(float((a * a + b * b <= 1).mean()))
        if i % 19 == 18:
            cp.random.seed(i)
        _pause()
    return out + [cp.random.rand(4).get()]


@pytest.mark.parametrize("loop", [_read_fails, _jumps, _state_between, _generator_between, _reseeded],
                         ids=["read-fails", "jumps", "state-between", "generator-between", "reseeded"])
def test_a_run_ahead_dropped_while_its_reads_wait_leaves_the_loops_own_values(pool_deferring, loop):
    got, want, figures = beside_no_replay(pool_deferring, loop, early_replay=False)
    assert_bitwise(got, want)
    # (reads deferred, their replies pushed and committed ahead, and some rolled back)
    assert figures["reads_deferred"] >= 1 and figures["push_confirmed"] >= 1, figures
    assert figures["push_rolled"] >= 1, figures


# ------------------------------------------------------------------ swapped out
def _drawing_swapped(cp, s=None):
    """A drawing, carried loop; with *s*, the session swapped out twice while a step is
    committed ahead and the next one's reads wait."""
    rs = cp.random.RandomState(17)
    x = cp.linspace(0, 1, 400, dtype=cp.float32)
    out = []
    swaps = 0
    for i in range(90):
        z = rs.standard_normal(400).astype(cp.float32)
        x = x * 0.9 + 0.1 * z
        out.append(float((x * x).mean()))
        _pause()
        if s is not None and i in (40, 70) and s._pushes.taken >= 5:
            swaps += 1
            _wait(lambda: _row(s)["swapped"], "the idle session to be swapped out")
    assert s is None or swaps == 2, swaps
    return out + [x.get(), rs.rand(4).get()]


def test_a_drawing_loop_swapped_out_while_its_reads_wait_draws_the_numbers_of_no_replay(
        tmp_path, monkeypatch):
    monkeypatch.setenv("GPUWB_DEFER_READS", "always")
    with _swap_pool(tmp_path, TEST_DEVICES, monkeypatch) as pool:
        with _session(pool) as s:
            got = _drawing_swapped(module_for(s), s)
            figures = s.memory_info()["stretches"]
        with Session(pool.address, pool.token, settings=SessionSettings(graphs=False)) as plain:
            want = _drawing_swapped(module_for(plain))
    assert_bitwise(got, want)
    assert figures["reads_deferred"] >= 1 and figures["push_confirmed"] >= 1, figures


def _ended_by_another_read(cp, n=1 << 20):
    """A carried loop whose replies are pushed and committed ahead, then another read (the
    step committed ahead rolled back, the run ahead after it dropped with its reads
    waiting)."""
    x = cp.arange(n, dtype=cp.float32) / n
    out = []
    for _ in range(STEPS):
        x = x * 0.5 + 1.0
        out.append(float(x.sum()))
        _pause()
    out.append(float(x.max()))
    return out, x


def test_a_run_ahead_dropped_with_its_reads_waiting_holds_no_memory_once_swapped_out(
        tmp_path, monkeypatch):
    monkeypatch.setenv("GPUWB_DEFER_READS", "always")
    with _swap_pool(tmp_path, TEST_DEVICES, monkeypatch) as pool:
        with _session(pool) as s:
            cp = module_for(s)
            got, x = _ended_by_another_read(cp)
            figures = s.memory_info()["stretches"]
            # (a usage report may lag the swap-out: waited for. On an H200 under four test
            # processes 4 MiB + 512 B stayed, the loop's x and its sum, held by a reference
            # cycle no collection had come for in the idle worker, runs 210, 213-215: a
            # swap-out now collects, worker/swap.py)
            clean = _swapped_clean(s, MIB - 1)
            try:
                row = _wait(clean, "the idle session swapped out, no graph of a dropped run ahead left")
            except AssertionError as exc:
                raise AssertionError(f"{exc}; its last row {clean.last}") from None
            got += [float((x + 1).sum()), x.get()]   # (its arrays back)
        with Session(pool.address, pool.token, settings=SessionSettings(graphs=False)) as plain:
            cp = module_for(plain)
            want, x = _ended_by_another_read(cp)
            want += [float((x + 1).sum()), x.get()]
    assert_bitwise(got, want)
    assert figures["push_confirmed"] >= STEPS // 4 and figures["push_rolled"] >= 1, figures
    assert figures["reads_deferred"] >= 1, figures
    # (swapped out: its arrays gone from the device, and no graph of a run ahead dropped
    # kept there by a pointer to that run ahead: on a GPU its buffers stayed, three
    # arrays the size of x)
    assert row["memory_used"] < MIB, row
