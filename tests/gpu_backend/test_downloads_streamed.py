"""A download closing a held stretch, streamed in chunks (the NumPy device made to
stream as a GPU does, GPUWB_STREAM_BYTES), while the next replay runs ahead."""

from __future__ import annotations

from functools import partial

from ..differential import assert_bitwise
from ..run_ahead_sessions import beside_no_replay, pool_running_ahead
from .test_downloads_replayed import _carried_and_downloaded as carried_and_downloaded

STEPS = 30


#: a loop-carried array of 4 096 float32 (16 KiB, four chunks) stepped and downloaded whole
_carried_and_downloaded = partial(carried_and_downloaded, n=4096, steps=STEPS)


def test_streamed_download_with_reads_made_at_once():
    """Reads of a run ahead made at once (GPUWB_READ_AHEAD_US): read_now runs the download."""
    with pool_running_ahead("none", read_now=True, GPUWB_STREAM_BYTES="4096") as pool:
        got, want, _figures = beside_no_replay(pool, _carried_and_downloaded)
    assert_bitwise(got, want)


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
