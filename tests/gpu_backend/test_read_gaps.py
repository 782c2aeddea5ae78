"""A replay run ahead makes its closing reads at once where its device time is short beside
its client's recent gaps (worker/run_ahead.py, ``GAP_SHARE``): an interactive user's request,
its client away milliseconds between requests, then finds its value read and waits for no
device (nor for other sessions' kernels beside it). Where its client comes back sooner, the
reads wait for the client's replay, as before; ``GPUWB_READ_GAP_SHARE=0``: by the device-time
bound alone. The pools here make no read at once by that bound (``GPUWB_READ_AHEAD_US=0``)
and push no reply (``GPUWB_PUSH=0``: a lane run ahead whose reply is pushed reads at once
whatever its time, worker/pushed_replies.py), so only the gaps can."""

from __future__ import annotations

import time
from collections import deque

import pytest

from gpu_backend.worker.run_ahead import GAP_SHARE, GAPS_KEPT, RunAhead
from ..differential import assert_bitwise
from ..run_ahead_sessions import beside_no_replay, pool_running_ahead

#: the client away between requests: far longer than a small replay's device time
AWAY = 0.02


@pytest.fixture(scope="module")
def pool():
    with pool_running_ahead("share", GPUWB_READ_AHEAD_US="0", GPUWB_PUSH="0") as p:
        yield p


@pytest.fixture(scope="module")
def bound_only_pool():
    with pool_running_ahead("share", GPUWB_READ_AHEAD_US="0", GPUWB_READ_GAP_SHARE="0",
                            GPUWB_PUSH="0") as p:
        yield p


def _requests(cp):
    """An interactive user's requests: ``float((x + 1).sum())``, its client away between."""
    x = cp.arange(1000, dtype=cp.float32) / 3
    out = []
    for _ in range(GAPS_KEPT + 16):
        out.append(float((x + 1).sum()))
        time.sleep(AWAY)
    return out, x.get()


def test_a_client_away_finds_its_values_read(pool):
    got, want, figures = beside_no_replay(pool, _requests, early_replay=False)
    assert_bitwise(got, want)
    assert figures["ahead"] >= GAPS_KEPT + 2 and figures["ahead_read"] >= 1, figures


def test_without_the_gaps_the_reads_wait_for_the_clients_replay(bound_only_pool):
    got, want, figures = beside_no_replay(bound_only_pool, _requests, early_replay=False)
    assert_bitwise(got, want)
    assert figures["ahead"] >= GAPS_KEPT + 2 and figures["ahead_read"] == 0, figures


def test_the_reads_are_made_at_once_only_beside_the_shortest_of_a_full_set_of_gaps():
    ahead = RunAhead(None)
    ahead.read_now_seconds = 50e-6
    assert ahead._reads_now(1, 40e-6)                        # (the bound alone, as before)
    assert not ahead._reads_now(1, 1e-3)                     # no gaps seen yet
    ahead._gaps[1] = deque([0.01] * (GAPS_KEPT - 1), maxlen=GAPS_KEPT)
    assert not ahead._reads_now(1, 1e-3)                     # too few
    ahead._gaps[1].append(0.01)
    assert ahead._reads_now(1, 0.01 / GAP_SHARE)             # a quarter of the gaps
    assert not ahead._reads_now(1, 0.01 / GAP_SHARE * 1.01)
    assert not ahead._reads_now(2, 1e-4)                     # another stretch's own gaps
    ahead._gaps[1].append(0.001)                             # the client came back sooner
    assert not ahead._reads_now(1, 1e-3)
    ahead.gap_share = 0                                      # GPUWB_READ_GAP_SHARE=0
    ahead._gaps[1].extend([0.01] * GAPS_KEPT)
    assert not ahead._reads_now(1, 1e-4)
