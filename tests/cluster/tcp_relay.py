"""A TCP relay between a host agent and the front door, whose connections a test can cut:
a network that drops a connection (a switch restarting, a NAT forgetting it), with
whatever was on its way.

It listens on a loopback port and relays every connection it accepts to the target port,
byte for byte, both ways, on threads of its own. :meth:`TcpRelay.cut` breaks every
connection open at that moment (each side sees it reset); new connections are relayed as
before, as a network that comes back would.
"""

from __future__ import annotations

import select
import socket
import struct
import threading

__all__ = ["TcpRelay"]


class TcpRelay:
    """Relay ``127.0.0.1:PORT`` (:attr:`address`) to ``127.0.0.1:target``."""

    def __init__(self, target: int) -> None:
        self._target = ("127.0.0.1", target)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.address = f"tcp://127.0.0.1:{self._listener.getsockname()[1]}"
        self._lock = threading.Lock()
        self._open: list[tuple[socket.socket, socket.socket]] = []
        self._pumps: list[threading.Thread] = []
        self._closed = False
        self._accepting = threading.Thread(target=self._accept, name="tcp-relay", daemon=True)
        self._accepting.start()

    def _accept(self) -> None:
        while True:
            try:
                near, _ = self._listener.accept()
            except OSError:   # (closed)
                return
            try:
                far = socket.create_connection(self._target, timeout=10)
            except OSError:
                near.close()
                continue
            with self._lock:
                if self._closed:
                    near.close()
                    far.close()
                    return
                self._open.append((near, far))
                pump = threading.Thread(target=self._pump, args=(near, far), daemon=True)
                self._pumps.append(pump)
            pump.start()

    def _pump(self, near: socket.socket, far: socket.socket) -> None:
        other = {near: far, far: near}
        try:
            while True:
                readable, _, _ = select.select([near, far], [], [], 0.2)
                for sock in readable:
                    data = sock.recv(1 << 16)
                    if not data:
                        raise OSError("closed")
                    other[sock].sendall(data)
        except (OSError, ValueError):
            self._drop(near, far)

    def _drop(self, *pair: socket.socket) -> None:
        with self._lock:   # (off the list first: cut() shuts down only what is on it)
            if pair in self._open:
                self._open.remove(pair)
        for sock in pair:
            try:   # (a reset, not an orderly close: nothing more arrives from either side)
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                sock.close()
            except OSError:
                pass

    def cut(self) -> None:
        """Break every connection open now. (Under the lock: a pump closes its pair only
        once it is off the list, so a socket is never shut down after its close, when its
        number may be another's.)"""
        with self._lock:
            for near, far in self._open:
                for sock in (near, far):
                    try:
                        sock.shutdown(socket.SHUT_RDWR)   # (wakes its pump, which resets both)
                    except OSError:
                        pass

    def close(self) -> None:
        """Stop accepting (a shut-down listener wakes the thread blocked in its accept, which
        a close alone does not: the thread stayed, holding the port) and cut the rest."""
        with self._lock:
            self._closed = True
        try:
            self._listener.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._accepting.join(10)
        self._listener.close()
        self.cut()
        with self._lock:
            pumps = list(self._pumps)
        for pump in pumps:
            pump.join(10)
