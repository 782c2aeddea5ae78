"""Spinning waits that keep the CPU (``GPUWB_SPIN_YIELD=0``, gpu_backend/protocol/spinning.py):
a pool whose workers spin without yielding and a session that does the same serve as any,
their transfers through the staging ring included, and the session and its ring call what
they were told to. (Whether yielding is faster is a benchmark's question: the side
``noyield`` of ``benchmarks/served_pool.py``; docs/performance.md, "Spinning on a shared
CPU".)"""

from __future__ import annotations

import os

import numpy as np
import pytest

from gpu_backend.pool import LocalPool
from gpu_backend.protocol import spinning
from kernelproxy.modules import module_for
from kernelproxy.session import Session
from kernelproxy.settings import SessionSettings

from ..differential import TEST_DEVICES


@pytest.fixture(scope="module")
def pool_not_yielding(pool):
    """A pool whose workers keep the CPU as they spin, and stream large arrays in 4 KiB
    chunks, through the staging ring on one host (its workers read the variables as the
    pool starts: the shared ``pool`` is asked for first, so that it starts without them)."""
    names = {"GPUWB_SPIN_YIELD": "0", "GPUWB_STREAM_BYTES": "4096"}
    before = {name: os.environ.get(name) for name in names}
    os.environ.update(names)
    try:
        with LocalPool(devices=TEST_DEVICES, memory_limit=1 << 28) as p:
            yield p
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def test_a_pool_and_a_session_that_keep_the_cpu_serve_as_any(pool_not_yielding):
    session = Session(pool_not_yielding.address, pool_not_yielding.token,
                      settings=SessionSettings(spin_yield=False, replay_measured=False))
    # (replays counted: a repeated stretch stays held, none timed and let go)
    try:
        assert session.spin_pause is spinning.pause_for(False)
        ring = session.staging
        if ring is not None:
            assert ring.pause is spinning.pause_for(False)
        cp = module_for(session)
        host = np.random.default_rng(3).random(5000)
        x = cp.asarray(host)                       # streamed: 40 000 bytes in chunks
        sums = [float((x + step * 0.5).sum()) for step in range(40)]   # a hot sync, replayed
        np.testing.assert_allclose(sums, [float((host + step * 0.5).sum()) for step in range(40)],
                                   rtol=1e-12)
        np.testing.assert_array_equal(cp.asnumpy(x * 2), host * 2)
        if ring is not None:
            assert ring.uploads_sent >= 10 and ring.downloads_sent >= 10
        assert session.memory_info()["stretches"]["replays"] >= 30
    finally:
        session.close()
