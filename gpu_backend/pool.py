"""An embedded pool: the front door on a thread of the calling process.

Used by ``gpuwb demo``, the remote-GPU kernel when no pool is configured,
and the tests. Its clients talk to it over ``ipc://`` (see
:mod:`gpu_backend.door.same_host`); ``tcp_address`` is there too. Workers are still separate processes, exactly as in a
standalone pool; only the front door shares the caller's process.
"""

from __future__ import annotations

import threading
from typing import Any

from .config import PoolSettings
from gpu_backend.door.frontdoor import FrontDoor

__all__ = ["LocalPool"]


class LocalPool:
    """Start with ``LocalPool(devices="cpu").start()`` or use it as a context manager."""

    #: the front door it runs (a subclass may serve with one of its own: the tests lose a
    #: worker's messages through a FrontDoor subclass so)
    door_class: type[FrontDoor] = FrontDoor

    def __init__(self, **settings: Any) -> None:
        settings.setdefault("listen", "tcp://127.0.0.1:0")
        self.settings = PoolSettings(**settings)
        self.door: FrontDoor | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> "LocalPool":
        self.door = self.door_class(self.settings)
        self._thread = threading.Thread(target=self.door.run, name="gpuwb-pool", daemon=True)
        self._thread.start()
        return self

    @property
    def address(self) -> str:
        """Where a client in this process or on this host connects: the same-host
        ``ipc://`` door when the pool is plain and has one, else its ``tcp://`` door."""
        assert self.door is not None, "start() the pool first"
        if self.door.local_address and self.settings.key_file is None:
            return self.door.local_address
        return self.door.address

    @property
    def local_address(self) -> str | None:
        """The pool's same-host ``ipc://`` door (None when it offers none)."""
        assert self.door is not None, "start() the pool first"
        return self.door.local_address

    @property
    def tcp_address(self) -> str:
        """The pool's ``tcp://`` door (what a client on another host would use)."""
        assert self.door is not None, "start() the pool first"
        return self.door.address

    @property
    def token(self) -> str:
        assert self.door is not None, "start() the pool first"
        return self.door.token

    def stop(self) -> None:
        if self.door is not None and self._thread is not None:
            self.door.stop()
            self._thread.join(10)
        self.door = None

    def __enter__(self) -> "LocalPool":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()
