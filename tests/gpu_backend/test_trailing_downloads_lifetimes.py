"""The copies a replay's reply brought before they were asked for (kernelproxy/
trailing_downloads.py, ``TrailingDownloads.ready``): never handed out by a closed or lost
session, gone with the arrays they copy and with the session, sent over a same-host link
with a staging ring as over any other, and the arrays a replay asks for counted as arrays,
not downloads. Found by a review (forty-sixth session), each test failing before its mend."""

from __future__ import annotations

import gc
import os
import signal
import time

import pytest

from gpu_backend.pool import LocalPool
from gpu_backend.protocol.errors import SessionLostError
from kernelproxy.modules import module_for
from kernelproxy.session import Session
from kernelproxy.settings import SessionSettings

from ..quiet_gc import no_collection
from .test_faults_lifecycle import _worker_of


def _replayed(cp, n=24, arrays=1, steps=12):
    """A held loop whose step downloads *arrays* results after its closing read; then one
    more step whose replay asks for them (header G), none of them downloaded yet."""
    x = cp.arange(n, dtype=cp.float64)
    for _ in range(steps):
        x = x * 0.5 + 1.0
        ws = [x * float(k + 2) for k in range(arrays)]
        x.get()
        for w in ws:
            w.get()
        time.sleep(0.001)
    x = x * 0.5 + 1.0
    ws = [x * float(k + 2) for k in range(arrays)]
    x.get()
    return x, ws


def _session(pool) -> Session:
    return Session(pool.address, pool.token, settings=SessionSettings(replay_measured=False))


@pytest.fixture(scope="module")
def pool():
    with LocalPool(devices="cpu", lease_timeout=20, memory_limit=1 << 28) as p:
        yield p


def test_a_closed_session_s_get_raises_as_its_other_ops_do(pool):
    s = _session(pool)
    with no_collection():
        x, (w,) = _replayed(module_for(s))
        assert s.trailing.ready   # (the reply brought w's copy)
        s.close()
        with pytest.raises(SessionLostError):
            (x + 1).get()
        with pytest.raises(SessionLostError):
            w.get()


def test_a_lost_session_s_get_raises():
    with LocalPool(devices="cpu", lease_timeout=20) as own:
        s = _session(own)
        with no_collection():
            _x, (w,) = _replayed(module_for(s))
            assert s.trailing.ready
            os.kill(_worker_of(own, s).process.pid, signal.SIGKILL)
            deadline = time.monotonic() + 20
            while not s.heartbeat.lost and time.monotonic() < deadline:
                time.sleep(0.05)
            assert s.heartbeat.lost
            with pytest.raises(SessionLostError):
                w.get()
            s.close()


def test_the_copies_go_with_their_arrays(pool):
    """Eight 1 MiB copies a reply brought, their arrays dropped: none held."""
    s = _session(pool)
    with no_collection():
        _x, ws = _replayed(module_for(s), n=1 << 17, arrays=8)
        assert len(s.trailing.ready) == 8
        del ws
        gc.collect()
        assert not s.trailing.ready
    s.close()


def test_the_copies_go_with_the_session(pool):
    s = _session(pool)
    with no_collection():
        _x, _ws = _replayed(module_for(s), n=1 << 17, arrays=8)
        assert len(s.trailing.ready) == 8
        s.close()
    assert not s.trailing.ready and s.trailing.trail is None


def test_a_same_host_session_with_a_staging_ring_is_sent_them(monkeypatch):
    """Workers that stream as a GPU's do (8 MiB chunks): a same-host session has a staging
    ring, and its downloads over 256 KiB go through it; the 512 KiB arrays a replay asks
    for go as frames of its reply all the same."""
    monkeypatch.setenv("GPUWB_STREAM_BYTES", str(8 << 20))
    monkeypatch.setenv("GPUWB_RUN_AHEAD_US", "1e9")
    with LocalPool(devices="cpu", lease_timeout=20, memory_limit=1 << 28) as own:
        s = _session(own)
        try:
            assert s.staging is not None
            with no_collection():
                _replayed(module_for(s), n=1 << 16, steps=20)   # float64: 512 KiB each
            figures = dict(s.trailing.figures(), prefetched=s.memory_info()["prefetched"])
            assert figures["asked"] > 0 and figures["prefetched"] >= figures["hits"] > 0, figures
        finally:
            s.close()


def test_eight_arrays_are_eight_arrays_not_eight_downloads(pool):
    """A result downloaded eight times a step, then another: both asked for."""
    s = _session(pool)
    cp = module_for(s)
    with no_collection():
        x = cp.arange(24, dtype=cp.float64)
        for _ in range(20):
            x = x * 0.5 + 1.0
            w, q = x * 2, x * 3
            x.get()
            for _ in range(8):
                w.get()
            q.get()
            time.sleep(0.001)
    figures = s.trailing.figures()
    s.close()
    assert figures["hits"] >= 2 * 12, figures   # (w's and q's at each step once asked)
