"""Transfers of a few hundred KiB to a few MiB through a same-host session's staging ring
(kernelproxy/session.py ``STAGED_UPLOAD_BYTES``, worker/staged.py ``STAGED_DOWNLOAD_BYTES``):
below the device's chunk size they once went as frames through the socket. On the NumPy
device made to stream at a GPU's chunk size (8 MiB)."""

import os

import numpy as np
import pytest

import kernelproxy
from gpu_backend.pool import LocalPool
from gpu_backend.protocol.staging import available
from gpu_backend.worker.staged import STAGED_DOWNLOAD_BYTES
from kernelproxy.modules import module_for
from kernelproxy.session import STAGED_UPLOAD_BYTES

pytestmark = pytest.mark.skipif(not available(), reason="no memfd on this host")

CHUNK = 8 << 20   # (a GPU's: cupy_device.stream_bytes)


@pytest.fixture(scope="module")
def pool():
    os.environ["GPUWB_STREAM_BYTES"] = str(CHUNK)   # read by each worker's NumPy device
    try:
        with LocalPool(devices="cpu") as pool:
            yield pool
    finally:
        del os.environ["GPUWB_STREAM_BYTES"]


def _session(address, token, monkeypatch, **variables):
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    return kernelproxy.connect(address, token)


def _moved(s, host: np.ndarray) -> tuple:
    """*host* up and back down: the chunks each way through the ring (0, 0 without one)."""
    cp = module_for(s)
    ring = s.staging
    up, down = (ring.uploads_sent, ring.downloads_sent) if ring is not None else (0, 0)
    remote = cp.asarray(host)
    back = remote.get()
    assert back.dtype == host.dtype and back.shape == host.shape
    np.testing.assert_array_equal(back, host)
    moved = (ring.uploads_sent - up, ring.downloads_sent - down) if ring is not None else (0, 0)
    np.testing.assert_array_equal(cp.asnumpy(remote * 2), host * 2)   # (an op's result, down)
    return moved


def test_the_thresholds_are_below_a_gpus_chunk():
    assert STAGED_UPLOAD_BYTES < CHUNK and STAGED_DOWNLOAD_BYTES < CHUNK


@pytest.mark.parametrize("nbytes", [STAGED_UPLOAD_BYTES + 8, 1 << 20, 8_000_000, CHUNK + 8])
def test_mid_sized_transfers_go_through_the_ring(pool, monkeypatch, nbytes):
    s = _session(pool.address, pool.token, monkeypatch)
    try:
        assert s.staging is not None and s.stream_threshold == CHUNK
        host = np.random.default_rng(nbytes).random(nbytes // 8)
        chunks = -(-host.nbytes // CHUNK)
        assert _moved(s, host) == (chunks, chunks)
    finally:
        s.close()


def test_small_transfers_stay_frames(pool, monkeypatch):
    s = _session(pool.address, pool.token, monkeypatch)
    try:
        host = np.arange(min(STAGED_UPLOAD_BYTES, STAGED_DOWNLOAD_BYTES) // 4, dtype=np.int32)
        assert _moved(s, host) == (0, 0)
    finally:
        s.close()


def test_framed_uploads_where_asked(pool, monkeypatch):
    """``GPUWB_STAGED_UPLOADS=0`` (the benchmarks' side ``ipc-framed``): an upload below the
    device's chunk size is a frame again; its download still takes the ring."""
    s = _session(pool.address, pool.token, monkeypatch, GPUWB_STAGED_UPLOADS="0")
    try:
        host = np.random.default_rng(3).random((1 << 20) // 8)
        assert _moved(s, host) == (0, 1)
        big = np.random.default_rng(4).random((CHUNK + 8) // 8)
        assert _moved(s, big) == (2, 2)
    finally:
        s.close()


@pytest.mark.parametrize("how", ["tcp", "staging off"])
def test_without_a_ring_mid_sized_transfers_are_frames(pool, monkeypatch, how):
    variables = {"GPUWB_STAGING": "0"} if how == "staging off" else {}
    s = _session(pool.tcp_address if how == "tcp" else pool.address, pool.token, monkeypatch, **variables)
    try:
        assert s.staging is None
        host = np.random.default_rng(5).random((1 << 20) // 8)
        assert _moved(s, host) == (0, 0)
    finally:
        s.close()
