"""Ctrl-C (or a notebook's stop button) while the session talks to its worker.

Sending a batch and reading a reply must not stop half-way, or the client's
count of batches in flight would no longer match the worker's; a SIGINT that
arrives inside such a block is held and KeyboardInterrupt is raised right after
it. One SIGINT handler is installed (in the main thread, over Python's default
one); entering a block only looks the handler up (ipykernel puts the default back
before every cell) and counts, so the hot path makes no system call.

A SIGINT that arrives while a finalizer runs (a remote array's ``__del__``
queues a free record on every dropped array, so a loop like ``m = m @ m``
spends real time there) cannot be raised there: Python prints "Exception
ignored" and the interrupt is lost, and the cell runs on. Such a SIGINT is
delivered again a few milliseconds later instead. The compiled ``__del__``
(kernelproxy/_held_ops.c) has no Python frame to find: the KeyboardInterrupt raised in
the ``Session.release`` it calls is caught there and delivered again once it returns.
"""

from __future__ import annotations

import os
import signal
import threading

try:  # the C function: signal.getsignal wraps it in an enum conversion that costs microseconds
    from _signal import getsignal as _getsignal
except ImportError:  # not CPython
    _getsignal = signal.getsignal
from types import FrameType
from typing import Any

__all__ = ["InterruptGuard", "interrupts_deferred", "REDELIVER_SECONDS"]

_SIGINT = signal.SIGINT
_default_handler = signal.default_int_handler
#: How long after a SIGINT that landed in a finalizer it is sent again.
REDELIVER_SECONDS = 0.005


def _in_finalizer(frame: FrameType | None) -> bool:
    """Whether *frame* runs inside a ``__del__`` (where a raised exception is swallowed)."""
    while frame is not None:
        if frame.f_code.co_name == "__del__":
            return True
        frame = frame.f_back
    return False


def _redeliver() -> None:
    os.kill(os.getpid(), signal.SIGINT)


class InterruptGuard:
    """``with guard:`` holds a KeyboardInterrupt until the block is done."""

    def __init__(self) -> None:
        self.depth = 0
        self.pending = False

    def install(self) -> None:
        """Put our handler in place of Python's default one (ipykernel restores the
        default before every cell, so this runs again, once per cell, when needed)."""
        if threading.current_thread() is not threading.main_thread():
            return
        if _getsignal(signal.SIGINT) is signal.default_int_handler:
            signal.signal(signal.SIGINT, self._on_sigint)

    def _on_sigint(self, signum: int, frame: FrameType | None) -> None:
        if self.depth:
            self.pending = True
            return
        if _in_finalizer(frame):
            timer = threading.Timer(REDELIVER_SECONDS, _redeliver)
            timer.daemon = True
            timer.start()
            return
        raise KeyboardInterrupt

    def __enter__(self) -> None:
        if not self.depth and _getsignal(_SIGINT) is _default_handler:
            self.install()
        self.depth += 1

    def __exit__(self, *exc: Any) -> None:
        self.depth -= 1
        if self.pending and not self.depth:
            self.pending = False
            raise KeyboardInterrupt


#: The one guard of this process (signal handlers are per process).
interrupts_deferred = InterruptGuard()
