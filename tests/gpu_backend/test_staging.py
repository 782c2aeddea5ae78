"""Large transfers of a same-host session through a shared-memory staging ring
(gpu_backend.protocol.staging), on the NumPy device made to stream as a GPU does."""

import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import kernelproxy
from gpu_backend.pool import LocalPool
from gpu_backend.protocol import api, codec
from gpu_backend.protocol import messages as m
from gpu_backend.protocol.errors import ProtocolError
from gpu_backend.protocol.staging import available
from kernelproxy.modules import module_for
from tests.paths import PROJECT_ROOT

pytestmark = pytest.mark.skipif(not available(), reason="no memfd on this host")

ROOT = str(PROJECT_ROOT)
CHUNK = 64 << 10
LEASE = 2.0


@pytest.fixture(scope="module")
def pool():
    os.environ["GPUWB_STREAM_BYTES"] = str(CHUNK)   # read by each worker's NumPy device
    try:
        with LocalPool(devices="cpu", lease_timeout=LEASE) as pool:
            yield pool
    finally:
        del os.environ["GPUWB_STREAM_BYTES"]


@pytest.fixture
def session(pool):
    s = kernelproxy.connect(pool.address, pool.token)
    yield s
    s.close()


@pytest.mark.parametrize("shape,dtype", [((1 << 20,), "f8"), ((333, 777), "i4"), ((CHUNK * 9 + 1,), "u1"),
                                         ((50, 60, 70), "c16")])
def test_staged_transfers_go_through_the_ring(session, shape, dtype):
    ring = session.staging
    assert ring is not None and ring.slot_bytes == CHUNK
    cp = module_for(session)
    host = (np.arange(np.prod(shape)) % 251).astype(dtype).reshape(shape)
    up, down = ring.uploads_sent, ring.downloads_sent
    remote = cp.asarray(host)
    back = remote.get()
    chunks = -(-host.nbytes // CHUNK)
    assert chunks > ring.slots                      # the ring went round
    assert ring.uploads_sent - up == chunks and ring.downloads_sent - down == chunks
    assert ring.downloads_done == ring.downloads_sent
    assert back.dtype == host.dtype and back.shape == host.shape and back.flags.writeable
    np.testing.assert_array_equal(back, host)
    np.testing.assert_array_equal(remote[::-3].get(), host[::-3])    # a view, made contiguous
    np.testing.assert_array_equal(cp.asnumpy(remote * 2), host * 2)
    assert session.sync() is None and ring.uploads_done == ring.uploads_sent


@pytest.mark.parametrize("how", ["tcp", "staging off"])
def test_without_a_ring_the_socket_carries_the_chunks(pool, how, monkeypatch):
    if how == "staging off":
        monkeypatch.setenv("GPUWB_STAGING", "0")
    s = kernelproxy.connect(pool.tcp_address if how == "tcp" else pool.address, pool.token)
    try:
        assert s.staging is None and s.stream_threshold == CHUNK
        cp = module_for(s)
        host = np.random.default_rng(1).random(200_000)
        np.testing.assert_array_equal(cp.asarray(host).get(), host)
    finally:
        s.close()


def _staged_chunk(s, ring, fields):
    """Queue a 2-chunk upload and send its chunk messages by hand, the first with *fields*
    changed; returns the upload's sequence number."""
    seq = s.submit(m.KIND_UPLOAD, api.ARRAY, s.new_id(), codec.dtype_spec(np.dtype("f8")), None,
                   [[2 * CHUNK // 8], 2], label="upload")
    s.flush(drain=False)
    for i in range(2):
        g = ring.uploads_sent + i
        header = {"k": s.key, "u": seq, "i": i, "s": ring.slot_of(g), "g": g, "n": CHUNK}
        if i == 0:
            header.update(fields)
        s.link.send([codec.packb(header)])
    ring.uploads_sent += 2
    return seq


@pytest.mark.parametrize("fields,match", [({"s": 99}, "slot is not its number's"),
                                          ({"n": 1 << 40}, "a staging chunk of"),
                                          ({"n": 0}, "a staging chunk of"),
                                          ({"g": -1}, "slot is not its number's")])
def test_a_staged_chunk_outside_the_ring_is_refused_and_the_session_goes_on(session, fields, match):
    ring = session.staging
    _staged_chunk(session, ring, fields)
    with pytest.raises(ProtocolError, match=match):
        session.sync()
    cp = module_for(session)
    host = np.arange(CHUNK, dtype=np.float64)        # 8 chunks: past the refused ones' slots
    np.testing.assert_array_equal(cp.asarray(host).get(), host)


def test_a_staged_chunk_from_a_client_without_a_ring_is_refused(pool):
    s = kernelproxy.connect(pool.tcp_address, pool.token)
    try:
        seq = s.submit(m.KIND_UPLOAD, api.ARRAY, s.new_id(), codec.dtype_spec(np.dtype("f8")), None,
                       [[CHUNK // 8], 1], label="upload")
        s.flush(drain=False)
        s.link.send([codec.packb({"k": s.key, "u": seq, "i": 0, "s": 0, "g": 0, "n": CHUNK})])
        with pytest.raises(ProtocolError, match="without a staging ring"):
            s.sync()
        assert float(module_for(s).arange(10).sum()) == 45.0
    finally:
        s.close()


KILLED_DOWNLOADER = textwrap.dedent("""
    import sys
    import numpy as np
    import kernelproxy
    from kernelproxy.modules import module_for

    s = kernelproxy.connect(sys.argv[1], sys.argv[2])
    cp = module_for(s)
    x = cp.asarray(np.ones(4 << 20))          # 32 MB: 512 chunks through 4 slots
    print(s.id, s.staging is not None, flush=True)
    while True:
        x.get()
""")


def test_a_client_killed_mid_download_leaves_the_pool_serving(pool, session):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    child = subprocess.Popen([sys.executable, "-c", KILLED_DOWNLOADER, pool.address, pool.token],
                             stdout=subprocess.PIPE, text=True, env=env, cwd=ROOT)
    try:
        sid, staged = child.stdout.readline().split()
        assert staged == "True"
        time.sleep(0.5)                              # downloading, over and over
        child.send_signal(signal.SIGKILL)
        child.wait(10)
        cp = module_for(session)                     # everyone else is served meanwhile
        host = np.random.default_rng(2).random(300_000)
        np.testing.assert_array_equal(cp.asarray(host).get(), host)
        deadline = time.monotonic() + LEASE + 10
        while any(s["session"] == sid for s in session.status()["sessions"]):
            assert time.monotonic() < deadline, "the killed client's session never ended"
            time.sleep(0.2)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(10)
    np.testing.assert_array_equal(cp.asarray(host).get(), host)


def test_the_ring_cannot_be_shrunk_under_the_worker(session):
    """The client holds the ring's file: its size is sealed (a shrunk file would make the
    worker's next slot access a SIGBUS)."""
    ring = session.staging
    with pytest.raises(PermissionError):
        os.ftruncate(ring.fd, 64)
    with pytest.raises(PermissionError):
        os.ftruncate(ring.fd, ring.nbytes * 2)
    cp = module_for(session)
    host = np.arange(CHUNK, dtype=np.float64)
    np.testing.assert_array_equal(cp.asarray(host).get(), host)
