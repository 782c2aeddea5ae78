"""A diagnostic for a pool that stalls: ``GPUWB_STACKS=1`` in the pool's environment makes
its processes (the served pool, whose arbiter is a thread: ``PoolSettings.stacks``; the
worker zygote and every worker forked from it; a worker started alone:
``WorkerSettings.stacks``) write every thread's Python stack to their standard error on
SIGUSR2, through the standard library's faulthandler, without stopping them. (Send it by
process id: ``pkill -f gpu_backend`` would also match a shell whose command names it.)
Off by default: nothing is registered."""

from __future__ import annotations

import faulthandler
import signal

__all__ = ["dump_on_request"]


def dump_on_request(enabled: bool) -> None:
    """Register the dump where *enabled* (a fork inherits it)."""
    if enabled:
        faulthandler.register(signal.SIGUSR2, all_threads=True)
