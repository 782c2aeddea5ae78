"""The rig of the bad-input tests (test_bad_input.py, test_bad_stretch_input.py): a pool
of their own, a bystander session that must stay well, victim sessions whose worker port
and key the tests abuse, and raw requests that bypass the client. The fixtures are
conftest.py's."""

from __future__ import annotations

import select
import socket

import numpy as np
import pytest
import zmq

import kernelproxy
from gpu_backend.pool import LocalPool
from gpu_backend.protocol import codec, framing
from kernelproxy.modules import module_for

LEASE = 2.0
MB = 1 << 20
REPLY_TIMEOUT = 10.0


class Bystander:
    """A normal session opened before any bad input; checks that all is still well."""

    def __init__(self, pool: LocalPool) -> None:
        self.pool = pool
        self.session = kernelproxy.connect(pool.address, pool.token)
        cp = module_for(self.session)
        self.host = np.arange(1000, dtype=np.float64).reshape(10, 100)
        self.kept = cp.asarray(self.host)
        self.session.sync()

    def check(self) -> None:
        session = self.session
        cp = module_for(session)
        try:
            assert not session.closed
            np.testing.assert_array_equal(self.kept.get(), self.host)  # untouched
            x = cp.arange(10, dtype=cp.float32)
            assert float((cp.exp(x) * 2).sum()) == pytest.approx(
                float((np.exp(np.arange(10, dtype=np.float32)) * 2).sum()), rel=1e-6)
            assert int((self.kept[3] >= 350).sum()) == 50
            # the door still answers, and still opens sessions
            status = session.status()
            assert any(s["session"] == session.id for s in status["sessions"])
            with kernelproxy.connect(self.pool.address, self.pool.token) as fresh:
                assert int(module_for(fresh).arange(5).sum()) == 10
        finally:
            module_for(session)  # the proxy module follows the bystander again


def raw_request(ctx: zmq.Context, address: str, frames: list[bytes],
                timeout: float = REPLY_TIMEOUT, key: bytes | None = None) -> list[bytes]:
    """Send *frames* on a fresh DEALER (or a Unix socket, for a ``unix://`` worker
    address, after the session *key* as its first message, as a client does); return
    the reply's frames."""
    if address.startswith("unix://"):
        link = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            link.connect(address[len("unix://"):])
            if key is not None:
                framing.send_all(link, [codec.packb({"t": "auth", "k": key})])
            framing.send_all(link, frames)
            assert select.select([link], [], [], timeout)[0], f"no reply from {address}"
            return [f.bytes for f in framing.read_message(link)]
        finally:
            link.close()
    sock = ctx.socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    try:
        sock.connect(address)
        sock.send_multipart(frames)
        assert sock.poll(int(timeout * 1000)), f"no reply from {address} within {timeout} s"
        return sock.recv_multipart()
    finally:
        sock.close()


def door_error(ctx: zmq.Context, address: str, frames: list[bytes]) -> list:
    reply = raw_request(ctx, address, frames)
    assert len(reply) == 1
    msg = codec.unpackb(reply[0])
    assert msg["ok"] is False, msg
    name, text = msg["error"]
    assert isinstance(text, str)
    return [name, text]


def worker_reply(ctx: zmq.Context, address: str, frames: list[bytes],
                 key: bytes | None = None) -> dict:
    reply = raw_request(ctx, address, frames, key=key)
    msg = codec.unpackb(reply[0])
    assert isinstance(msg, dict), msg
    return msg
