"""A download closing a held stretch (``x.get()``, ``cupy.asnumpy(x)``, ``x[:4].get()``) served
through the stretch's graphs (worker/graph_replay.py, ``_DOWNLOAD``): one of its closing
reads, made as its reply goes, its data a frame of that reply. Before, a stretch with a
download was never graphed: each replay re-ran its records op by op (found by
benchmarks/unseen_speed.py: loops that download a result every step ran 1.5-3.6x local CuPy
on an H200, run 273).

Each loop runs on a session of a pool whose workers run every replay ahead and on one with
stretch replay off, compared bitwise; the worker's figures say its replays went through
graphs. A replay run ahead after the reply writes the graphs' buffers at once, so a
download's frame must be bytes of its own (the NumPy device's frame is the array itself,
which goes after the reply): the loops that download a buffer the next step writes check
that, over the same-host link and over tcp."""

from __future__ import annotations

import hashlib
import time

import numpy as np
import pytest

from gpu_backend.protocol.stretches import REPEATS
from kernelproxy.modules import module_for
from kernelproxy.session import Session
from kernelproxy.settings import SessionSettings

from ..differential import assert_bitwise
from ..quiet_gc import no_collection
from ..run_ahead_sessions import beside_no_replay, pool_running_ahead

STEPS = 40
#: replays graphed at least: every replay after the first sightings (held after REPEATS,
#: captured at the first replay), less a few at the edges
GRAPHED = STEPS - REPEATS - 4
PAUSE = 0.001


@pytest.fixture(scope="module")
def pool():
    with pool_running_ahead("none") as p:
        yield p


def _carried_and_downloaded(cp, n=100, steps=STEPS):
    """A loop-carried array of *n* stepped and downloaded whole every step, *steps* times."""
    x = cp.arange(n, dtype=cp.float32)
    out = []
    for i in range(steps):
        x = x * 0.5 + 1.0
        out.append(x.get())
        time.sleep(PAUSE)
    return out


def _a_view_downloaded_after_a_read(cp):
    """A step's loss read, then the first four of its weights downloaded (a view): two
    stretches a step, the second a download alone."""
    w = cp.linspace(0, 1, 64, dtype=cp.float64)
    out = []
    for i in range(STEPS):
        w = w - 0.1 * (w - 0.25)
        out.append(float(((w - 0.25) ** 2).sum()))
        out.append(w[:4].get())
        time.sleep(PAUSE)
    return out


def _written_in_place_then_asnumpy(cp):
    """An array written in place every step and brought to the host by ``cupy.asnumpy``; a
    temporary downloaded too (its buffer is the graphs' own, written by the next step)."""
    x = cp.ones((8, 16), dtype=cp.float32)
    out = []
    for i in range(STEPS):
        x *= 1.01
        x += 0.5
        t = x.sum(axis=0) * 2
        out.append(cp.asnumpy(x))
        out.append(cp.asnumpy(t))
        time.sleep(PAUSE)
    return out


def _int_and_complex_downloads(cp):
    """Downloads of an integer array and a complex one made in the same step."""
    k = cp.arange(32, dtype=cp.int64)
    z = cp.ones(16, dtype=cp.complex128)
    out = []
    for i in range(STEPS):
        k = (k * 3 + 1) % 1009
        z = z * (0.9 + 0.1j)
        out.append(k.get())
        out.append(z.get())
        time.sleep(PAUSE)
    return out


@pytest.mark.parametrize("loop", [_carried_and_downloaded, _a_view_downloaded_after_a_read,
                                  _written_in_place_then_asnumpy, _int_and_complex_downloads])
def test_a_stretch_that_closes_with_a_download_is_replayed_through_graphs(pool, loop):
    got, want, figures = beside_no_replay(pool, loop)
    assert_bitwise(got, want)
    assert figures["graphed"] >= GRAPHED, figures


def test_a_download_over_tcp_is_its_own_bytes_when_the_next_step_runs_ahead(pool):
    """Over tcp a frame goes after the reply, without a copy (over pyzmq's 64 KiB): the
    download of a buffer the step run ahead writes next is the step's values, not the next
    one's."""
    with Session(pool.tcp_address, pool.token,
                 settings=SessionSettings(replay_measured=False)) as s:
        with no_collection():
            got = _carried_and_downloaded(module_for(s), 1 << 18)
        figures = s.memory_info()["stretches"]
    with Session(pool.address, pool.token, settings=SessionSettings(graphs=False)) as s:
        want = _carried_and_downloaded(module_for(s), 1 << 18)
    assert_bitwise(got, want)
    assert figures["graphed"] >= GRAPHED, figures
    assert figures["ahead"] >= GRAPHED // 2, figures   # (the next step run ahead meanwhile)


def test_a_large_download_streamed_after_the_reply_is_its_step_s(pool):
    """A 16 MiB download a step: on a GPU streamed in chunks after the reply (over the
    device's chunk size), from a copy of the graphs' buffer, which the next step run ahead
    writes meanwhile; each step's bytes hashed."""
    def loop(cp):
        x = cp.arange(1 << 22, dtype=cp.float32)
        out = []
        for i in range(12):
            x = x * 0.5 + 1.0
            out.append(hashlib.sha256(x.get().tobytes()).hexdigest())
            time.sleep(PAUSE)
        return out

    got, want, figures = beside_no_replay(pool, loop)
    assert got == want
    assert figures["graphed"] >= 12 - REPEATS - 4, figures


def test_a_failing_op_before_a_download_raises_where_it_did(pool):
    """A step whose op fails now and then (an index out of range, from a Python int that
    grows) before its download: the error is raised at the download, as without replay,
    and the loop goes on."""
    def loop(cp):
        x = cp.arange(20, dtype=cp.float32)
        out = []
        for i in range(STEPS):
            x = x + 1.0
            try:
                out.append(x[: 4 + (i % 5)].get())
                out.append(x[i % 23].get())
            except IndexError as e:
                out.append(type(e).__name__)
            time.sleep(PAUSE)
        return out

    got, want, _figures = beside_no_replay(pool, loop)
    assert [type(v) for v in got] == [type(v) for v in want]
    assert_bitwise([v for v in got if type(v) is not str], [v for v in want if type(v) is not str])
    assert [v for v in got if type(v) is str] == [v for v in want if type(v) is str]
    assert any(type(v) is str and v == "IndexError" for v in got)
