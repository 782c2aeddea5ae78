"""A diagnostic for a pool that stalls: ``GPUWB_STACKS=1`` in the pool's environment makes
its processes (the served pool, whose arbiter is a thread; the worker zygote and every
worker forked from it; a worker started alone) write every thread's Python stack to their
standard error on SIGUSR2 (``pkill -USR2 -f gpu_backend``), through the standard library's
faulthandler, without stopping them. Off by default: nothing is registered."""

from __future__ import annotations

import faulthandler
import os
import signal

__all__ = ["dump_on_request"]


def dump_on_request() -> None:
    """Register the dump where ``GPUWB_STACKS=1`` (a fork inherits it)."""
    if os.environ.get("GPUWB_STACKS") == "1":
        faulthandler.register(signal.SIGUSR2, all_threads=True)
