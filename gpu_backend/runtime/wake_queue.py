"""Items handed from helper threads to the front door's loop, which polls a descriptor.

The front door is one loop over ``zmq.Poller``; work done on other threads (a token's
scrypt check, Ray's watch over the cluster's nodes) comes back to it through a queue whose
:attr:`WakeQueue.fd` (a pipe's reading end) the loop polls beside its sockets: readable
once something was put, until the loop takes everything.
"""

from __future__ import annotations

import os
import queue
import threading
from typing import Generic, TypeVar

__all__ = ["WakeQueue"]

T = TypeVar("T")


class WakeQueue(Generic[T]):
    """:meth:`put` from any thread; :meth:`take` and :meth:`close` from the loop's."""

    def __init__(self) -> None:
        self._items: queue.SimpleQueue[T] = queue.SimpleQueue()
        self._read, self._write = os.pipe()
        os.set_blocking(self._read, False)
        os.set_blocking(self._write, False)
        self._lock = threading.Lock()   # (a put never writes to a descriptor closed, and
        self._closed = False            # perhaps reused, under it)

    @property
    def fd(self) -> int:
        """Readable while something waits to be taken."""
        return self._read

    def put(self, item: T) -> None:
        self._items.put(item)
        with self._lock:
            if not self._closed:
                try:
                    os.write(self._write, b"!")
                except BlockingIOError:   # the pipe is full: the loop will look anyway
                    pass

    def take(self) -> list[T]:
        """Everything put so far, oldest first."""
        try:
            while os.read(self._read, 4096):
                pass
        except BlockingIOError:
            pass
        taken = []
        while True:
            try:
                taken.append(self._items.get_nowait())
            except queue.Empty:
                return taken

    def close(self) -> None:
        with self._lock:
            if not self._closed:
                self._closed = True
                os.close(self._read)
                os.close(self._write)
