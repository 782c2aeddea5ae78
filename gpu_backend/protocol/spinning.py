"""How a wait that spins hands the CPU on at each turn, on either side of a link: the
client's reply wait (kernelproxy/session_replies.py), the worker's spins after a message, in
its pacer and for its lease (worker/server.py, pacing.py, lease.py), and the staging ring's
(protocol/staging.py).

Why: the kernel now and then wakes a client on its worker's own CPU, and the two then spun
there in turns the scheduler's tick set: ~1 ms a reply for 1.4 % of replies on an H200 host
(docs/performance.md, "Spinning on a shared CPU"). ``os.sched_yield`` hands the CPU to
whatever else is runnable on it at once, and with nothing else runnable returns at once.
``GPUWB_SPIN_YIELD=0`` spins without yielding (a diagnostic, the benchmarks' side
``noyield``; or a host whose workers have cores of their own): each process's settings say
which, a worker's for the whole process (:func:`set_yielding`), a client's for each session.
"""

from __future__ import annotations

import os
from typing import Callable

__all__ = ["pause", "pause_for", "set_yielding"]


def _stay() -> None:
    """Spin on, keeping the CPU."""


def pause_for(yielding: bool) -> Callable[[], None]:
    """What a spinning wait calls at each turn: ``os.sched_yield``, or nothing."""
    return os.sched_yield if yielding else _stay


#: the worker's spins' turn (set once by its settings, worker/entry.py)
pause: Callable[[], None] = pause_for(True)


def set_yielding(yielding: bool) -> None:
    """This process's spins yield at each turn, or do not (read by :data:`pause`'s callers
    as ``spinning.pause``, at each call)."""
    global pause
    pause = pause_for(yielding)
