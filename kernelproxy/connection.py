"""Talking to the pool's front door: the hello, heartbeats and status.

The hello returns the session's worker port and key. A daemon thread then
heartbeats on its own socket (ZeroMQ sockets are not shared between threads)
and flags the session as lost when the pool says it is gone or stops
answering, so a thread waiting on a reply can give up with a clear error.
"""

from __future__ import annotations

import getpass
import threading
from typing import Any

import zmq

from gpu_backend.protocol import PROTOCOL_VERSION
from gpu_backend.protocol.codec import packb, unpackb
from gpu_backend.protocol.errors import SessionLostError, error_class

__all__ = ["door_request", "hello", "Heartbeat"]

#: How long to wait for any answer from a pool before saying there is none.
PING_TIMEOUT = 5.0


def door_request(ctx: zmq.Context, address: str, msg: dict, timeout: float = 30.0) -> dict:
    """One request to the front door on a fresh socket; raises the pool's error class."""
    sock = ctx.socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    try:
        sock.connect(address)
        sock.send(packb(msg))
        if not sock.poll(int(timeout * 1000)):
            raise SessionLostError(f"the pool at {address} did not answer within {timeout:g} s")
        reply = unpackb(sock.recv())
    finally:
        sock.close()
    if not isinstance(reply, dict) or not reply.get("ok"):
        name, text = (reply.get("error") if isinstance(reply, dict) else None) or ("RemoteError", "bad reply")
        raise error_class(name)(text)
    return reply


def hello(ctx: zmq.Context, address: str, token: str, user: str | None = None,
          memory_limit: int | None = None, timeout: float = 150.0) -> dict:
    # a quick ping first: a missing pool is reported in seconds, not after the hello's wait
    door_request(ctx, address, {"t": "ping"}, timeout=min(timeout, PING_TIMEOUT))
    msg: dict[str, Any] = {"t": "hello", "v": PROTOCOL_VERSION, "token": token,
                           "user": user or _user()}
    if memory_limit is not None:
        msg["memory_limit"] = int(memory_limit)
    return door_request(ctx, address, msg, timeout)


def _user() -> str:
    try:
        return getpass.getuser()
    except Exception:  # no passwd entry in some containers
        return "anonymous"


class Heartbeat(threading.Thread):
    """Keeps the session's lease; sets :attr:`lost` to a reason when it ends."""

    def __init__(self, ctx: zmq.Context, address: str, session: str, key: bytes, interval: float) -> None:
        super().__init__(name="kernelproxy-heartbeat", daemon=True)
        self.ctx, self.address, self.session, self.key = ctx, address, session, key
        self.interval = interval
        self.lost: str | None = None
        self._stop = threading.Event()

    def run(self) -> None:
        sock = self.ctx.socket(zmq.DEALER)
        sock.setsockopt(zmq.LINGER, 0)
        sock.connect(self.address)
        missed = 0
        try:
            while not self._stop.wait(self.interval):
                sock.send(packb({"t": "hb", "session": self.session, "key": self.key}))
                if sock.poll(int(self.interval * 1000)):
                    reply = unpackb(sock.recv())
                    missed = 0
                    if not reply.get("alive"):
                        self.lost = "the pool ended this session (lease expired or worker stopped)"
                        return
                else:
                    missed += 1
                    if missed >= 3:
                        self.lost = f"the pool at {self.address} stopped answering"
                        return
        except zmq.ZMQError as exc:
            if not self._stop.is_set():
                self.lost = f"heartbeat failed: {exc}"
        finally:
            sock.close()

    def stop(self) -> None:
        self._stop.set()
