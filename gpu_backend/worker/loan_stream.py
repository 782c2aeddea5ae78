"""A lent session's bytes streamed to a worker on another host (issue 52: a move between
hosts without a shared swap directory, at the network's rate).

Within a host a move lends the arrays in place (CUDA IPC, worker/handover.py). Between hosts
no memory is shared, and each host's swap directory may be its own, so the old worker serves
its allocations' bytes itself, in order, to the adopting worker: a ZeroMQ socket on its
host's address, a CURVE server with the pool's key pair where the pool has one (as its
client links are), the pieces dealt in turn over :data:`LANES` connections so that the
copies into and out of the kernel run on several cores. The adopter copies each piece into its device's memory
as it arrives, through the path the swap file's reads take (the devices'
``allocation_from``, :class:`LoanReader` standing in for the file): nothing touches a disk.
The adopter proves itself with 32 random bytes that only the pool gave it (in the loan, over
the front door's control channels); any other peer is ignored. The socket's high-water mark
paces the sender to the receiver, and a receiver that takes nothing for SEND_TIMEOUT ends
the stream (the move then fails, and the session stays with the old worker).
"""

from __future__ import annotations

import hmac
import os
import secrets
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import zmq

from ..protocol.addresses import allow_ipv6
from ..security import load_server_keys, secure_client, secure_server

__all__ = ["LoanServer", "LoanReader", "SEND_TIMEOUT"]

#: seconds a piece may wait for the adopter to take it (and the adopter for the next piece)
SEND_TIMEOUT = 60.0
#: pieces queued for the adopter at most: the sender waits for it beyond them
QUEUED = 8
#: the largest piece sent (the adopter receives a whole one straight into its buffer)
PIECE = 16 << 20
#: connections a stream takes, pieces dealt to them in turn: each its own I/O thread at
#: both ends, so the copies into and out of the kernel run on several cores at once (one
#: per four of the host's cores, at most four: on a small host more threads only contend)
LANES = max(1, min(4, (os.cpu_count() or 1) // 4))


class LoanServer:
    """The old worker's end: one port on *bind_host*, served once to the adopter that
    presents :attr:`secret` on each of its LANES connections (a context of its own, *ctx*
    unused: its I/O threads are the stream's alone)."""

    def __init__(self, ctx: zmq.Context, bind_host: str, key_file: str | None) -> None:
        self.ctx = zmq.Context(io_threads=LANES)
        sock = self.ctx.socket(zmq.ROUTER)
        sock.setsockopt(zmq.LINGER, 0)
        sock.setsockopt(zmq.ROUTER_MANDATORY, 1)   # (wait at the mark, never drop a piece)
        sock.setsockopt(zmq.SNDHWM, QUEUED)
        sock.setsockopt(zmq.SNDTIMEO, int(SEND_TIMEOUT * 1000))
        if key_file:
            secure_server(sock, load_server_keys(key_file))
        allow_ipv6(sock, bind_host)
        self.port = sock.bind_to_random_port(f"tcp://{bind_host}")
        self.sock = sock
        self.secret = secrets.token_bytes(32)
        self.served = False
        #: how many connections the adopter opens (the manifest tells it: the two hosts'
        #: core counts may differ), and those it has opened
        self.lane_count = LANES
        self.lanes: dict[int, bytes] = {}

    def serve_one(self, pieces_of: Any, firsts: list, piece: int) -> bool:
        """Read one message; once the adopter has presented the secret on every lane, send
        it every allocation's bytes (*pieces_of(array, piece)*: the device's
        ``allocation_bytes``), in order, piece *i* on lane *i* mod LANES. Whether it was
        sent (a stranger's message is dropped)."""
        frames = self.sock.recv_multipart()
        count = self.lane_count
        if (len(frames) != 3 or self.served or len(frames[2]) != 1 or frames[2][0] >= count
                or not hmac.compare_digest(frames[1], self.secret)):
            return False
        self.lanes[frames[2][0]] = frames[0]
        if len(self.lanes) < count:
            return False
        lanes = [self.lanes[k] for k in range(count)]
        self.served = True
        try:
            self._send_all(lanes, pieces_of, firsts, piece)
        except BaseException:
            # (ZeroMQ may still hold pieces that point into the device's buffers: closed
            # now, before those buffers are filled again or freed, it drops them)
            self.sock.close(linger=0)
            raise
        return True

    def _send_all(self, lanes: list, pieces_of: Any, firsts: list, piece: int) -> None:
        """Every allocation's pieces, piece *i* on lane *i* mod their number, each sent from
        its own buffer (not copied): the device's generator fills that buffer again only
        once ZeroMQ is done with it (the future it is sent back), and a piece ZeroMQ has
        not sent within SEND_TIMEOUT ends the stream."""
        sent_count = 0
        futures: list = []
        with ThreadPoolExecutor(1, thread_name_prefix="loan-sent") as sent:
            for first in firsts:
                pieces = pieces_of(first, min(piece, PIECE))
                try:
                    done = None
                    while True:
                        _raise_failed(futures)
                        try:
                            bytes_ = pieces.send(done)
                        except StopIteration:
                            break
                        peer = lanes[sent_count % len(lanes)]
                        sent_count += 1
                        tracker = self.sock.send_multipart([peer, bytes_], copy=False, track=True)
                        done = sent.submit(tracker.wait, SEND_TIMEOUT)
                        futures.append(done)
                    for future in futures:   # (every piece out before the generator ends)
                        future.exception()
                    _raise_failed(futures)
                finally:
                    pieces.close()

    def close(self) -> None:
        self.sock.close(linger=0)
        self.ctx.term()


def _raise_failed(futures: list) -> None:
    """Raise the error of the first piece whose send failed (ZeroMQ did not take it in
    time), forgetting those done."""
    while futures and futures[0].done():
        error = futures.pop(0).exception()
        if error is not None:
            raise TimeoutError(f"the adopter took no piece for {SEND_TIMEOUT:g} s") from error


class LoanReader:
    """The adopter's end: the loan's bytes in order, read into the buffers it is given.
    The interface of :class:`~gpu_backend.devices.swap_file_io.SwapFileReader` that the
    devices' ``allocation_from`` uses (``read``, ``collect``, ``fill``, ``close``)."""

    def __init__(self, ctx: zmq.Context, address: str, secret: bytes,
                 key_file: str | None, lanes: int = 1) -> None:
        self.ctx = zmq.Context(io_threads=lanes)   # (*ctx* unused: see LoanServer)
        public = load_server_keys(key_file).public if key_file else None
        self.socks = []
        for lane in range(lanes):
            sock = self.ctx.socket(zmq.DEALER)
            sock.setsockopt(zmq.LINGER, 0)
            sock.setsockopt(zmq.RCVTIMEO, int(SEND_TIMEOUT * 1000))
            sock.setsockopt(zmq.RCVHWM, QUEUED)
            if public is not None:
                secure_client(sock, public)
            allow_ipv6(sock, address)
            sock.connect(address)
            sock.send_multipart([secret, bytes([lane])])
            self.socks.append(sock)
        self._next = 0   # the piece to come: on lane _next mod their number
        self._rest = memoryview(b"")

    def fill(self, into: Any, piece: int = 0) -> None:
        """Fill the writable buffer *into* with the loan's next bytes: straight into it
        where a whole piece fits (no piece is larger than :data:`PIECE`), else through the
        piece's frame."""
        view = memoryview(into).cast("B")
        at, n = 0, view.nbytes
        try:
            while at < n:
                if not self._rest:
                    sock = self.socks[self._next % len(self.socks)]
                    self._next += 1
                    if n - at >= PIECE:
                        at += sock.recv_into(view[at:])
                        continue
                    self._rest = memoryview(sock.recv(copy=False).buffer).cast("B")
                k = min(n - at, self._rest.nbytes)
                view[at:at + k] = self._rest[:k]
                self._rest = self._rest[k:]
                at += k
        except zmq.Again:
            raise TimeoutError(f"the old worker sent nothing for {SEND_TIMEOUT:g} s") from None

    def read(self, into: Any) -> Future:
        """:meth:`fill` now; a finished future (the file's reads run in threads)."""
        done: Future = Future()
        try:
            self.fill(into)
            done.set_result(None)
        except BaseException as exc:
            done.set_exception(exc)
        return done

    def collect(self, job: Future) -> None:
        job.result()

    def close(self) -> None:
        for sock in self.socks:
            sock.close(linger=0)
        self.ctx.term()
