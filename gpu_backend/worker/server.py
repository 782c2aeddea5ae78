"""The session worker process: one session, one device context, one socket.

Started ahead of time by the front door (a warm spare), it opens its device
(creating the CUDA context and warming common kernels), binds a ROUTER socket
on a free port and reports ``ready``. When the front door assigns it a
session it serves that session's batches until the client closes it, the
front door stops it (lease expired), or the front door goes away.
"""

from __future__ import annotations

import argparse
import hmac
import os
import sys
import time
from typing import Any

import zmq

from ..devices import open_device
from ..protocol.codec import packb, unpackb
from ..protocol.errors import AuthenticationError, ProtocolError, error_name
from .executor import Executor
from .handles import HandleTable

__all__ = ["main", "WorkerServer"]

USAGE_INTERVAL = 0.5


class WorkerServer:
    def __init__(self, device_spec: str, control: str, worker_id: str, bind_host: str) -> None:
        self.device = open_device(device_spec)
        self.ctx = zmq.Context()
        self.control = self.ctx.socket(zmq.DEALER)
        self.control.setsockopt(zmq.IDENTITY, worker_id.encode())
        self.control.setsockopt(zmq.LINGER, 1000)
        self.control.connect(control)
        self.sock = self.ctx.socket(zmq.ROUTER)
        self.sock.setsockopt(zmq.LINGER, 0)
        self.port = self.sock.bind_to_random_port(f"tcp://{bind_host}")
        self.parent = os.getppid()
        self.key = b""
        self.table = HandleTable(self.device)
        self.executor = Executor(self.device, self.table)
        self.closed = False
        self._last_usage: tuple = ()
        self._last_usage_time = 0.0

    # ---------------------------------------------------------------- control
    def _send_control(self, msg: dict) -> None:
        self.control.send(packb(msg))

    def wait_for_session(self) -> bool:
        """Report ready, then block until assigned (True) or told to stop (False)."""
        self._send_control({"t": "ready", "port": self.port, "info": self.device.info()})
        while True:
            if self.control.poll(1000):
                msg = unpackb(self.control.recv())
                if msg.get("t") == "assign":
                    self.key = bytes(msg["key"])
                    self.device.set_memory_limit(int(msg["memory_limit"]))
                    return True
                if msg.get("t") == "stop":
                    return False
            elif os.getppid() != self.parent:
                return False

    # ---------------------------------------------------------------- serving
    def serve(self) -> str:
        poller = zmq.Poller()
        poller.register(self.sock, zmq.POLLIN)
        poller.register(self.control, zmq.POLLIN)
        while not self.closed:
            events = dict(poller.poll(USAGE_INTERVAL * 1000))
            if self.sock in events:
                self._handle_client()
            if self.control in events:
                msg = unpackb(self.control.recv())
                if isinstance(msg, dict) and msg.get("t") == "stop":
                    return "stopped by the pool"
            if os.getppid() != self.parent:
                return "pool went away"
            self._report_usage()
        return "closed by the client"

    def _handle_client(self) -> None:
        frames = self.sock.recv_multipart(copy=False)
        ident = frames[0].bytes
        try:
            if len(frames) < 3:
                raise ProtocolError("a batch needs a header frame and an ops frame")
            header = unpackb(frames[1].bytes)
            if not isinstance(header, dict):
                raise ProtocolError("the batch header is not a map")
            key = header.get("k")
            if not isinstance(key, bytes) or not hmac.compare_digest(key, self.key):
                raise AuthenticationError("wrong session key")
            if header.get("t") == "close":
                self.closed = True
                self.sock.send_multipart([ident, packb({"b": header.get("b"), "closed": True})])
                return
            reply, out = self.executor.run_batch(header, frames[2].buffer, frames[3:])
        except Exception as exc:  # a bad message: answer it, keep serving
            reply, out = _failure(exc), []
        self.sock.send_multipart([ident, packb(reply), *out], copy=False)

    def _report_usage(self) -> None:
        now = time.monotonic()
        usage = (self.device.memory_used(), len(self.table), self.executor.ops_run)
        if usage != self._last_usage and now - self._last_usage_time >= USAGE_INTERVAL:
            self._send_control({"t": "usage", "memory": usage[0], "arrays": usage[1], "ops": usage[2]})
            self._last_usage, self._last_usage_time = usage, now

    def close(self, reason: str) -> None:
        self.table.clear()
        try:
            self._send_control({"t": "ended", "reason": reason})
        finally:
            self.sock.close()
            self.control.close()
            self.ctx.term()


def _failure(exc: BaseException) -> dict[str, Any]:
    return {"b": None, "m": packb([]), "v": [], "d": [], "w": [], "x": 0, "s": 0,
            "e": [None, error_name(exc), str(exc), None]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="gpu_backend.worker", description=__doc__)
    parser.add_argument("--device", required=True)
    parser.add_argument("--control", required=True)
    parser.add_argument("--id", required=True)
    parser.add_argument("--bind-host", default="127.0.0.1")
    args = parser.parse_args(argv)
    server = WorkerServer(args.device, args.control, args.id, args.bind_host)
    reason = "stopped before a session"
    try:
        if server.wait_for_session():
            reason = server.serve()
    except KeyboardInterrupt:
        reason = "interrupted"
    finally:
        server.close(reason)
    return 0


if __name__ == "__main__":
    sys.exit(main())
