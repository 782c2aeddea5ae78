"""A streamed upload whose batch the old worker had not run when its session moved goes to
the new worker whole: its batch again, then its chunks, as frames (kernelproxy/streamed.py,
kernelproxy/relink.py ``chunk_frames``). Since uploads over 256 KiB stream through a
same-host session's staging ring (kernelproxy/session.py ``STAGED_UPLOAD_BYTES``), a loop
uploading a minibatch each step met this at moves (a drain, a restart); until then such a
session was lost ("while a streamed upload was under way": 3 of 14 trials of a reviewer's
loop). On the NumPy device made to stream at a GPU's 8 MiB chunks, two devices: the move is
asked while a long batch runs, and the upload sent after it, so that the old worker parks
before it reads the upload."""

from __future__ import annotations

import os
import threading
import time

import numpy as np
import pytest

import kernelproxy
from gpu_backend.pool import LocalPool
from gpu_backend.protocol.staging import available
from kernelproxy.modules import module_for

from .test_moves import _move

pytestmark = pytest.mark.skipif(not available(), reason="no memfd on this host")


@pytest.fixture(scope="module")
def pool(tmp_path_factory):
    os.environ["GPUWB_STREAM_BYTES"] = str(8 << 20)   # (read by each worker's NumPy device)
    try:
        with LocalPool(devices="cpu,cpu", swap_dir=tmp_path_factory.mktemp("swap"), lease_timeout=30,
                       memory_limit=512 << 20) as pool:
            yield pool
    finally:
        del os.environ["GPUWB_STREAM_BYTES"]


@pytest.mark.parametrize("nbytes", [1 << 20, (8 << 20) + 8], ids=["one chunk", "two chunks"])
def test_an_upload_sent_as_its_session_moves_reaches_the_new_worker(pool, nbytes):
    s = kernelproxy.connect(pool.address, pool.token)
    try:
        assert s.staging is not None
        cp = module_for(s)
        big = cp.ones(4_000_000)
        z = big
        for _ in range(12):   # (a long batch: the old worker busy while the move is asked)
            z = cp.sin(z)
        s.flush()
        moved: list = []
        mover = threading.Thread(target=lambda: moved.append(_move(pool, s)))
        mover.start()
        time.sleep(0.2)   # (the move asked: the old worker parks once its batch is done)
        host = np.random.default_rng(nbytes).random(nbytes // 8)
        u = cp.asarray(host)
        assert float(u[5]) == host[5]
        assert np.array_equal(u.get(), host)
        assert np.isfinite(float(z[0]))
        mover.join()
        assert float(u[7]) == host[7]   # (on the new worker by now: the session follows)
        assert moved and s.moves == 1, (moved, s.moves)
    finally:
        s.close()
