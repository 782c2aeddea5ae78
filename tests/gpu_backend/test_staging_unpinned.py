"""A session's staging rings give their page-locked memory back when it goes idle
(worker/staged.py, ``unpin_rings``, called at a swap-out): a session that once moved more
than 256 KiB held its whole ring (four slots of the device's chunk, 32 MiB on a GPU) pinned
for as long as it lived. Real rings (a sealed memfd), a real Unix listener with a connected
client and a real ZeroMQ router, on the test device: the NumPy device, whose pinning is a
mark, or a GPU (``GPUWB_TEST_DEVICES``), where the slots are registered with CUDA and this
checks that they no longer are."""

from __future__ import annotations

import socket
import time

import numpy as np
import pytest
import zmq

from gpu_backend.devices import open_device, parse_devices
from gpu_backend.protocol import staging
from gpu_backend.worker import staged
from gpu_backend.worker.links import ClientLinks
from gpu_backend.worker.unix_listener import UnixListener
from tests.differential import TEST_DEVICES

pytestmark = pytest.mark.skipif(not staging.available(), reason="no memfd on this host")

SLOT = 64 << 10


@pytest.fixture
def links(tmp_path):
    """A worker's links with one same-host client connected (not yet trusted: unpinning
    does not ask)."""
    ctx = zmq.Context()
    router = ctx.socket(zmq.ROUTER)
    router.setsockopt(zmq.LINGER, 0)
    port = router.bind_to_random_port("tcp://127.0.0.1")
    unix = UnixListener(str(tmp_path / "w.sock"))
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    client.connect(unix.path)
    deadline = time.monotonic() + 10
    while not unix.peers and time.monotonic() < deadline:
        unix.ready_peer(100)
    assert unix.peers, "the listener never saw its client"
    yield ClientLinks(router, port, unix)
    client.close()
    unix.close()   # (each peer's staging ring with it: closed here too, it was closed twice)
    ctx.destroy(linger=0)   # (the links' own sockets too: presence's monitor)


def _registered(device, ring: staging.StagingRing) -> bool:
    """Whether the ring's slots are registered with CUDA now: registering them again fails
    where they are (a GPU only)."""
    view = ring.slots_view()
    handle = device.pin_host(view)
    if handle is None:
        return True
    device.unpin_host(handle)
    return False


def test_an_idle_sessions_rings_give_their_pinned_memory_back_and_pin_again(links):
    device = open_device(parse_devices(TEST_DEVICES)[0])
    peer = next(iter(links.unix.peers.values()))
    ring = staged.WorkerRing(staging.StagingRing.create(SLOT), device)
    peer.staging = ring
    assert staged.unpin_rings(links) == 0          # (never pinned: nothing to give back)
    ring.pin()
    assert ring.pinned is not None
    gpu = ring.pinned is not True
    if gpu:
        assert _registered(device, ring.ring)
    ring.held = 0                                  # an upload chunk's copy from slot 0
    assert staged.unpin_rings(links) == 1
    assert ring.pinned is None and ring.held is None
    assert ring.ring.uploads_done == 1             # (the held chunk's slot freed first)
    if gpu:
        assert not _registered(device, ring.ring)
    ring.pin()                                     # the next large transfer pins again
    assert ring.pinned is not None
    view = np.frombuffer(ring.ring.slot(0, SLOT), np.uint8)
    view[:] = 7                                    # (the slots stay the client's to write)
    assert int(view.sum()) == 7 * SLOT


def test_a_worker_without_unix_clients_has_no_rings_to_unpin():
    ctx = zmq.Context()
    router = ctx.socket(zmq.ROUTER)
    router.setsockopt(zmq.LINGER, 0)
    try:
        port = router.bind_to_random_port("tcp://127.0.0.1")
        assert staged.unpin_rings(ClientLinks(router, port, None)) == 0
    finally:
        ctx.destroy(linger=0)
