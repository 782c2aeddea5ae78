"""The pool's administration socket: moves and drains asked of a running pool
(``gpuwb-backend drain``, ``undrain``, ``move``; issue 52).

Who may ask: whoever runs as the pool's own OS user. The socket is an ``ipc://`` endpoint
``admin`` in the pool's same-host directory (door/same_host.py, named by the pool's address
so that the command finds it), made 0600 once bound: the kernel lets no other local user
connect, and remote clients never see it. So it needs no token, and the front door's
clients' socket, open to every user, takes no administration request at all.

Requests are msgpack maps, read as any input is (a malformed one is answered with an
error, never acted on): ``drain`` and ``undrain`` with ``devices`` (the pool's device
names, ``cuda:0`` or ``cpu:1``), ``move`` with ``session`` and ``device``, ``moves``
(where every session is, and which are moving), and ``restart`` (park every session for
the next pool and stop: ``gpuwb-backend serve`` then starts again, door/restarts.py). Answers are maps with ``ok``.
"""

from __future__ import annotations

import logging
import os
from typing import Any

import zmq

from gpu_backend.protocol.codec import packb, unpackb

from .restarts import keeps_sessions

__all__ = ["AdminSocket", "admin_path"]

log = logging.getLogger("gpu_backend.door.admin")

#: the largest request read (a drain names a few devices)
MAX_REQUEST_BYTES = 1 << 14


def admin_path(ipc_dir: str) -> str:
    """The administration socket's path in the pool's same-host directory."""
    return os.path.join(ipc_dir, "admin")


class AdminSocket:
    """The socket, bound in *ipc_dir*, and the requests it serves for *door*."""

    def __init__(self, door: Any, ctx: zmq.Context, ipc_dir: str) -> None:
        self.door = door
        self.sock = ctx.socket(zmq.ROUTER)
        self.sock.setsockopt(zmq.LINGER, 0)
        self.sock.setsockopt(zmq.MAXMSGSIZE, MAX_REQUEST_BYTES)
        self.path = admin_path(ipc_dir)
        if os.path.exists(self.path):   # (a killed pool's: the directory is reused)
            os.unlink(self.path)
        old = os.umask(0o177)   # (0600 from the start: no moment when others could connect)
        try:
            self.sock.bind(f"ipc://{self.path}")
        finally:
            os.umask(old)
        os.chmod(self.path, 0o600)
        self.address = f"ipc://{self.path}"

    def serve(self) -> None:
        """Answer every request waiting (called by the door's loop when the socket is ready)."""
        while self.sock.poll(0):
            frames = self.sock.recv_multipart()
            ident = frames[0]
            try:
                if len(frames) != 2:
                    raise ValueError("an administration request is one frame")
                msg = unpackb(frames[1])
                reply = self._answer(msg)
            except Exception as exc:   # a malformed request: said, never acted on
                reply = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
            self.sock.send_multipart([ident, packb(reply)])

    def _devices(self, msg: dict) -> set[str]:
        devices = msg.get("devices")
        if type(devices) is not list or not devices or any(type(d) is not str for d in devices):
            raise ValueError("name the devices: a list of the pool's device names")
        hosts = self.door.hosts   # (a host's name stands for all of its devices)
        devices = [d for name in devices for d in
                   (hosts.get(name).devices if name and hosts.get(name) is not None else [name])]
        unknown = [d for d in devices if d not in self.door.devices]
        if unknown:
            raise ValueError(f"the pool has no device {', '.join(unknown)} (its devices: "
                             f"{', '.join(self.door.devices)})")
        return set(devices)

    def _answer(self, msg: Any) -> dict:
        if not isinstance(msg, dict) or not isinstance(msg.get("t"), str):
            raise ValueError("an administration request is a map with its type, t")
        moves = self.door.moves
        kind = msg["t"]
        if kind == "drain":
            devices = self._devices(msg)
            rows = moves.drain(devices)
            log.warning("draining %s: %d sessions to move", ", ".join(sorted(devices)), len(rows))
            return {"ok": True, "moves": rows, "draining": sorted(moves.draining)}
        if kind == "undrain":
            moves.undrain(self._devices(msg))
            return {"ok": True, "draining": sorted(moves.draining)}
        if kind == "move":
            session = self.door.sessions.get(msg.get("session")) \
                if isinstance(msg.get("session"), str) else None
            if session is None:
                raise ValueError("the pool has no such session")
            device = self._devices({"devices": [msg.get("device")]}).pop() \
                if isinstance(msg.get("device"), str) else None
            if device is None:
                raise ValueError("name the device to move it to")
            why = moves.start(session, device, "moved by the administrator")
            return {"ok": why is None, **({"error": why} if why else {})}
        if kind == "restart":   # park every session, stop; ``serve`` then starts again
            if not self.door.restartable:
                raise ValueError("this pool is not run by gpuwb-backend serve (an embedded "
                                 "pool): nothing would start it again")
            if not keeps_sessions(self.door):
                raise ValueError("this pool keeps no sessions over a restart: it needs a swap "
                                 "directory of its own (--swap-dir; across hosts, one every "
                                 "host mounts: --swap-dir-shared) and a fixed port")
            self.door.restart_requested = self.door.park_at_stop = True
            self.door.stop()
            return {"ok": True, "open": len(self.door.sessions)}
        if kind == "moves":
            return {"ok": True, "draining": sorted(moves.draining), "sessions": [
                {"session": s.sid, "user": s.user, "device": s.worker.device,
                 "moving": s.moving.device if s.moving is not None else None,
                 "moves": s.moves, "how": s.moved_how, "refused": s.move_refused}
                for s in self.door.sessions.values()]}
        raise ValueError(f"unknown administration request {kind!r:.40}")

    def close(self) -> None:
        self.sock.close(linger=1000)   # (a restart's answer, sent just before the stop)
        try:
            os.unlink(self.path)
        except OSError:
            pass
