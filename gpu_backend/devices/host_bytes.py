"""A swapped-out session's bytes in host memory (worker/swap.py's host tier): one buffer
holding its allocations one after another, and the way to give that memory back.

Why one buffer for the whole swap and not one per allocation: a session of thousands of
small arrays would otherwise pay thousands of host allocations (each a ``cudaHostAlloc``
when the memory is pinned), and its blocks all come back together anyway. The memory is
the worker process's own, so a worker that dies (killed, a device fault) takes it with it:
no other process holds it, nothing of it can outlive the session.
"""

from __future__ import annotations

import weakref
from typing import Any, Callable

import numpy as np

__all__ = ["HostBytes"]


class HostBytes:
    """*array*: a 1-d uint8 NumPy array over the bytes; *free*, if given, gives the memory
    back (pinned memory: to CUDA) at :meth:`release`, or when this object is collected
    unreleased (so an error path cannot keep it); *pinned*: page-locked (a GPU copies it
    directly)."""

    def __init__(self, array: np.ndarray, free: Callable[[], Any] | None = None,
                 pinned: bool = False) -> None:
        self.array: np.ndarray | None = array
        self.nbytes = int(array.nbytes)
        self.pinned = pinned
        self._finalizer = weakref.finalize(self, free) if free is not None else None

    def release(self) -> None:
        """Give the memory back (once; later calls do nothing)."""
        self.array = None
        if self._finalizer is not None:
            self._finalizer()
