"""Downloads closing held stretches served through graphs, in the corners around
them: moving views, misses of the run ahead (written inputs, draws), swaps, kept results."""

from __future__ import annotations

import time

import numpy as np
import pytest

from ..differential import assert_bitwise
from ..run_ahead_sessions import beside_no_replay, pool_running_ahead

STEPS = 40
PAUSE = 0.001
#: a pattern no guess follows: the run ahead misses now and then
ODD = [0.5, 0.5, 0.75, 0.5, 0.25, 0.25, 0.5, 0.9, 0.9, 0.9, 0.1]


@pytest.fixture(scope="module")
def pool():
    with pool_running_ahead("none", read_now=True) as p:
        yield p


def _moving_window_downloaded(cp):
    data = cp.arange(4096, dtype=cp.float32) * 0.5
    out = []
    for i in range(STEPS):
        j = (i * 37) % 3000
        out.append(data[j:j + 64].get())
        out.append((data[j:j + 64] * 2.0).get())
        time.sleep(PAUSE)
    return out


def _written_in_place_odd_scalars(cp):
    x = cp.linspace(0, 1, 300, dtype=cp.float32)
    out = []
    for i in range(STEPS):
        x *= ODD[i % len(ODD)]
        x += 1.0
        out.append(x.get())
        time.sleep(PAUSE)
    return out


def _drawn_and_downloaded(cp):
    rs = cp.random.RandomState(7)
    x = cp.zeros(128, dtype=cp.float64)
    out = []
    for i in range(STEPS):
        x = x + rs.normal(0.0, ODD[i % len(ODD)], 128)
        out.append(x.get())
        time.sleep(PAUSE)
    return out


def _kept_result_downloaded_then_written(cp):
    x = cp.arange(256, dtype=cp.float32)
    out = []
    for i in range(STEPS):
        y = x * 2.0 + 1.0
        out.append(y.get())
        y += 3.0
        x = y * 0.5
        out.append(float(x.sum()))
        time.sleep(PAUSE)
    return out


def _two_downloads_of_one_buffer(cp):
    """A temporary downloaded, then downloaded again after a read (two stretches)."""
    x = cp.arange(100, dtype=cp.float32)
    out = []
    for i in range(STEPS):
        x = x * 0.5 + 1.0
        t = x[::2]
        out.append(t.get())
        out.append(x.get())
        time.sleep(PAUSE)
    return out


@pytest.mark.parametrize("loop", [_moving_window_downloaded, _written_in_place_odd_scalars,
                                  _drawn_and_downloaded, _kept_result_downloaded_then_written,
                                  _two_downloads_of_one_buffer])
def test_downloads_around_the_run_ahead(pool, loop):
    got, want, _figures = beside_no_replay(pool, loop)
    assert_bitwise(got, want)


def test_downloads_with_swaps(tmp_path):
    def loop(cp):
        x = cp.arange(1000, dtype=cp.float32)
        out = []
        for i in range(16):
            x = x * 0.5 + 1.0
            out.append(x.get())
            time.sleep(0.45 if i % 4 == 3 else PAUSE)   # (swapped out at 0.3 s idle)
        return out

    with pool_running_ahead("none", swap_dir=tmp_path) as swapping:
        got, want, _figures = beside_no_replay(swapping, loop)
    assert_bitwise(got, want)
