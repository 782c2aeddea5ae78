"""Keeping Python's cyclic garbage collector out of the latency of our own processes.

A full (oldest-generation) collection walks every tracked object. A worker holds
CuPy, its kernel caches and SciPy's modules: ~70 000 objects on the NumPy device,
13-18 ms a full collection on a 2-core VM. On an H100 host the fairness traces showed
25-30 ms pauses inside workers that held or waited for the device, with no message and
no device work in them, which an interactive request waited out (the pacing trace now
records collections, to tell; since this module, none has lasted over 0.6 ms there).
Objects made at start-up live as long as the process, so :func:`settle` moves them out
of the collector's sight (``gc.freeze``, made for exactly this), and a later full
collection walks only what the session made since.

Only our own processes (a worker, the served pool) call it: the embedded pool shares the
user's interpreter, whose collector is theirs.
"""

from __future__ import annotations

import gc
from time import perf_counter

__all__ = ["settle", "record_pauses"]


def settle(collect: bool = True) -> None:
    """Collect what start-up left behind (*collect*), then freeze everything alive: later
    collections skip it. Call it where a pause costs nobody (before a worker reports ready);
    without *collect* it costs microseconds (the objects made since the last call)."""
    if collect:
        gc.collect()
    gc.freeze()


def record_pauses(out: list) -> None:
    """Append (start, "gc", generation, seconds) to *out* for every collection from now on
    (a diagnostic for the pacing trace, ``GPUWB_PACING_TRACE``)."""
    started = [0.0]

    def note(phase: str, info: dict) -> None:
        if phase == "start":
            started[0] = perf_counter()
        else:
            out.append((started[0], "gc", info.get("generation"), perf_counter() - started[0]))

    gc.callbacks.append(note)
