"""A download closing a held stretch, streamed in chunks (the NumPy device made to
stream as a GPU does, GPUWB_STREAM_BYTES), while the next replay runs ahead."""

from __future__ import annotations

import time

import numpy as np

from ..differential import assert_bitwise
from ..run_ahead_sessions import beside_no_replay, pool_running_ahead

STEPS = 30


def _carried_and_downloaded(cp, n=4096):
    x = cp.arange(n, dtype=cp.float32)
    out = []
    for i in range(STEPS):
        x = x * 0.5 + 1.0
        out.append(x.get())
        time.sleep(0.001)
    return out


def test_streamed_download_with_reads_made_at_once():
    """Reads of a run ahead made at once (GPUWB_READ_AHEAD_US): read_now runs the download."""
    with pool_running_ahead("none", read_now=True, GPUWB_STREAM_BYTES="4096") as pool:
        got, want, figures = beside_no_replay(pool, _carried_and_downloaded)
    assert_bitwise(got, want)
    print(figures)


def test_streamed_download_run_ahead():
    with pool_running_ahead("none", GPUWB_STREAM_BYTES="4096") as pool:
        got, want, figures = beside_no_replay(pool, _carried_and_downloaded)
    assert_bitwise(got, want)
    assert figures["graphed"] >= 10, figures


def test_streamed_download_not_run_ahead():
    """Control: no run ahead (GPUWB_RUN_AHEAD_US=0): the download through graphs streams fine."""
    with pool_running_ahead("none", GPUWB_STREAM_BYTES="4096", GPUWB_RUN_AHEAD_US="0") as pool:
        got, want, figures = beside_no_replay(pool, _carried_and_downloaded)
    assert_bitwise(got, want)
    assert figures["graphed"] >= 10, figures


def test_streamed_download_run_ahead_reads_later():
    """Run ahead, its reads never made at once (GPUWB_READ_AHEAD_US=0, no gap rule)."""
    with pool_running_ahead("none", GPUWB_STREAM_BYTES="4096", GPUWB_READ_AHEAD_US="0",
                            GPUWB_READ_GAP_SHARE="0") as pool:
        got, want, figures = beside_no_replay(pool, _carried_and_downloaded)
    assert_bitwise(got, want)
    assert figures["ahead"] >= 10, figures
