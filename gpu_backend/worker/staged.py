"""The worker's side of a same-host client's staging ring (see
:mod:`gpu_backend.protocol.staging`): making the ring on request, handing out an upload
chunk's slot, and streaming a download through the slots.

Only a client on a Unix connection can have a ring, and only when the session's device
streams large transfers (a GPU). The slots are pinned for the device's DMA the first time
a transfer uses them, so a session that never moves a large array pins nothing.
"""

from __future__ import annotations

import time
from typing import Any

import zmq

from ..protocol import staging
from ..protocol.codec import packb
from ..protocol.errors import ProtocolError
from .links import STALL_SECONDS, ClientLinks, UnixPeer

__all__ = ["WorkerRing", "answer_request", "upload_slot", "drop_chunk", "send_download",
           "unpin_rings", "STAGED_DOWNLOAD_BYTES"]

#: A client with a ring has downloads larger than this streamed through it, however large
#: the device's chunks (Executor.stream_from): a frame of a few MiB through the socket costs
#: the kernel's copies both ways, a slot one copy from the device (pinned) and one out of it
#: (benchmarks/upload_sizes.py; the client's uploads likewise: kernelproxy/session.py
#: STAGED_UPLOAD_BYTES).
STAGED_DOWNLOAD_BYTES = 1 << 18


class WorkerRing:
    """A peer's ring, with what the worker alone keeps about it."""

    def __init__(self, ring: staging.StagingRing, device: Any) -> None:
        self.ring = ring
        self.device = device
        self.pinned: Any = None   # the device's handle of the pinned slots, once pinned
        #: the upload chunk whose slot the executor was last given (done at the next one)
        self.held: int | None = None

    def pin(self) -> None:
        if self.pinned is None:
            self.pinned = self.device.pin_host(self.ring.slots_view()) or True

    def release_held(self) -> None:
        """The executor has launched the copy of the last chunk it was given: once that copy
        has finished, the chunk's slot is free again. (A copy from pinned memory may still be
        running when CuPy's ``set`` returns: the client must not overwrite it before.)"""
        if self.held is not None:
            self.device.synchronize()
            self.ring.upload_done(self.held)
            self.held = None

    def unpin(self) -> None:
        """Give the slots' page-locked memory back (the next transfer that uses them pins
        them again): the last upload chunk's copy waited for first, so that no copy from
        them is running."""
        self.release_held()
        if self.pinned not in (None, True):
            self.device.unpin_host(self.pinned)
        self.pinned = None

    def close(self) -> None:
        self.unpin()
        self.ring.close()


def answer_request(links: ClientLinks, peer: Any, device: Any) -> bool:
    """A client asked for a ring: make one and pass its descriptor, or say there is none
    (whether it has one)."""
    step = device.stream_bytes
    if type(peer) is not UnixPeer or not step or not staging.available():
        links.send_message(peer, [packb({"staging": None})])
        return False
    if peer.staging is not None:   # asked again: the old ring goes
        peer.staging.close()
        peer.staging = None
    ring = staging.StagingRing.create(step)
    peer.staging = WorkerRing(ring, device)
    links.send_message(peer, [packb({"staging": {"slots": ring.slots, "slot_bytes": ring.slot_bytes}})],
                       fds=(ring.fd,))
    return True


def upload_slot(peer: Any, header: dict) -> memoryview:
    """The slot a staged upload chunk's message names, checked against the ring; the chunk
    before it (whose copy to the device has finished) is done."""
    ring = peer.staging if type(peer) is UnixPeer else None
    if ring is None:
        raise ProtocolError("a staged chunk from a client without a staging ring")
    chunk, slot, nbytes = header.get("g"), header.get("s"), header.get("n")
    if type(chunk) is not int or chunk < 0 or slot != ring.ring.slot_of(chunk):
        raise ProtocolError("a staged chunk whose slot is not its number's")
    ring.release_held()
    try:
        view = ring.ring.slot(slot, nbytes)
    except ValueError as exc:
        raise ProtocolError(str(exc)) from None
    ring.pin()
    ring.held = chunk
    return view


def drop_chunk(peer: Any, header: dict) -> None:
    """A chunk of an upload that is not run (skipped after an error): its slot is free."""
    ring = peer.staging if type(peer) is UnixPeer else None
    chunk = header.get("g")
    if ring is not None and type(chunk) is int and chunk >= 0:
        ring.ring.upload_done(chunk)


def unpin_rings(links: ClientLinks) -> int:
    """The session goes idle (its arrays swapped out): each of its clients' rings gives its
    page-locked memory back, to be pinned again by its next transfer over
    STAGED_DOWNLOAD_BYTES (or the client's STAGED_UPLOAD_BYTES). A session that once moved
    more than 256 KiB held its whole ring (4 slots of the device's chunk, 32 MiB on a GPU)
    page-locked for as long as it lived, a host's sessions together as much as their number
    of such rings, idle or not. How many rings gave theirs back."""
    unix = links.unix
    if unix is None:
        return 0
    given = 0
    for peer in unix.peers.values():
        ring = peer.staging
        if ring is not None and ring.pinned is not None:
            ring.unpin()
            given += 1
    return given


def send_download(links: ClientLinks, peer: UnixPeer, array: Any) -> None:
    """Stream *array* through the peer's slots: copy a chunk into a free slot, then name it
    in a message; the client copies it out and counts it done. A client that stops counting
    for STALL_SECONDS (or whose connection closes) loses its connection."""
    ring = peer.staging
    device, shared = ring.device, ring.ring
    flat = device.flat_bytes(array)
    step, total = shared.slot_bytes, flat.nbytes
    ring.pin()
    deadline = time.monotonic() + STALL_SECONDS

    def check() -> None:
        if peer.hung_up():
            raise ConnectionError("the client's connection closed mid-download")

    try:
        for offset in range(0, total, step):
            chunk, nbytes = shared.downloads_sent, min(step, total - offset)
            if not shared.wait_free(chunk, lambda: shared.downloads_done, check, deadline):
                raise ConnectionError("the client stopped taking its download")
            slot = shared.slot_of(chunk)
            device.copy_to_host(flat, offset, nbytes, shared.slot(slot, nbytes))
            shared.downloads_sent = chunk + 1
            links.send_message(peer, [packb({"s": slot, "g": chunk, "n": nbytes})])
    except ConnectionError as exc:
        links.drop(peer)
        raise zmq.ZMQError(zmq.EHOSTUNREACH, str(exc)) from None
