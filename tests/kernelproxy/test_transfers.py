"""Bulk data both ways: one zero-copy frame, or streamed chunks."""

import os

import numpy as np
import pytest

import kernelproxy
from gpu_backend.pool import LocalPool
from kernelproxy.modules import module_for


@pytest.fixture(scope="module")
def stream_session(pool):
    """A pool whose NumPy device streams both ways in 4 KiB chunks, as GPU devices do.

    (It asks for the shared ``pool`` first so that pool starts without the setting.)
    """
    os.environ["GPUWB_STREAM_BYTES"] = "4096"
    try:
        with LocalPool(devices="cpu") as pool:
            s = kernelproxy.connect(pool.address, pool.token)
            assert s.stream_threshold == 4096
            yield s
            s.close()
    finally:
        del os.environ["GPUWB_STREAM_BYTES"]


@pytest.mark.parametrize("shape,dtype", [((10_000,), "f8"), ((33, 77), "i4"), ((4097,), "u1"),
                                         ((5, 6, 7), "c16"), ((3000,), "f2")])
def test_streamed_upload_round_trips(stream_session, shape, dtype):
    cp = module_for(stream_session)
    host = (np.arange(np.prod(shape)) % 251).astype(dtype).reshape(shape)
    remote = cp.asarray(host)
    back = remote.get()                  # streamed back in chunks too
    assert back.dtype == host.dtype and back.shape == host.shape and back.flags.writeable
    np.testing.assert_array_equal(back, host)
    np.testing.assert_array_equal(remote[::-2].get(), host[::-2])  # a non-contiguous view
    assert float(remote.real.astype(cp.float64).sum()) == pytest.approx(float(host.real.astype(np.float64).sum()))


def test_streamed_upload_after_an_error_is_dropped_cleanly(stream_session):
    cp = module_for(stream_session)
    bad = cp.zeros(3) + cp.zeros(4)         # fails on the pool: the upload after it is skipped
    skipped = cp.asarray(np.ones(5000))     # its chunks reach the worker and are dropped
    with pytest.raises(ValueError):
        stream_session.sync()
    with pytest.raises(kernelproxy.InvalidHandleError, match="never computed"):
        skipped.sum()
    host = np.arange(6000.0)
    np.testing.assert_array_equal(cp.asarray(host).get(), host)
    del bad


def test_host_array_is_free_to_change_after_upload(session):
    cp = module_for(session)
    host = np.arange(1 << 20, dtype=np.float64)
    remote = cp.asarray(host)
    host[:] = -1                            # must not reach the pool's copy
    assert float(remote[123]) == 123.0


@pytest.mark.parametrize("which", ["frame", "streamed"])
def test_large_download(session, stream_session, which):
    """Thousands of chunk messages must all arrive (a ROUTER drops past its high-water mark)."""
    cp = module_for(session if which == "frame" else stream_session)
    remote = cp.arange(3 << 20, dtype=cp.float32)
    back = remote.get()
    assert back.flags.writeable and back[-1] == (3 << 20) - 1 and back[12345] == 12345


def test_large_transfers_of_a_same_host_session_through_its_staging_ring(session):
    """On a device that streams (a GPU pool): the shared-memory ring carries the chunks,
    pinned for the device's copies, and every byte arrives both ways."""
    from gpu_backend.protocol.staging import available
    if not session.stream_threshold:
        pytest.skip("the pool's device sends large arrays whole (the NumPy device)")
    ring = session.staging
    assert ring is not None or not available()
    cp = module_for(session)
    host = np.random.default_rng(5).random(3 * session.stream_threshold // 8 + 5)
    before = (ring.uploads_sent, ring.downloads_sent) if ring is not None else None
    remote = cp.asarray(host)
    np.testing.assert_array_equal(remote.get(), host)
    np.testing.assert_array_equal(cp.asnumpy(remote[::-2] * 3), host[::-2] * 3)
    assert float(remote.sum()) == pytest.approx(float(host.sum()))
    if ring is not None:
        assert ring.uploads_sent - before[0] == 4 and ring.downloads_sent - before[1] >= 4
