"""The policy a pool names (``--policy``): ``fair`` and ``fifo`` (policy.py), ``share``
(share.py), or ``none`` (no arbiter). Apart from both, since share.py builds on policy.py."""

from __future__ import annotations

import time
from typing import Callable

from .policy import PERIOD, PREEMPT_PATIENCE, QUANTUM, FairPolicy, FifoPolicy, Policy
from .share import WINDOW, SharePolicy

__all__ = ["make_policy"]


def make_policy(name: str, clock: Callable[[], float] = time.monotonic,
                quantum: float = QUANTUM, period: float = PERIOD,
                preempt_patience: float = PREEMPT_PATIENCE,
                patience_by_op: bool = True, gap_rule: bool = True,
                window: float | None = None) -> Policy | None:
    """The policy called *name* (``fair``, ``share``, ``fifo``); ``none`` means no arbiter at all.
    *quantum*: the least device seconds a ``fair`` holder keeps the device while others
    wait; *period*: device seconds in which each backlogged user gets one turn (0: every
    turn is *quantum*); *patience_by_op* (a diagnostic, on by default): a preempting
    newcomer's wait follows the holder's op length (FairPolicy.patience_behind); *gap_rule*
    (likewise): a user between two batches may be kept the device (arbiter/gap_rule.py);
    *window*: ``share``'s (arbiter/share.py, WINDOW if None)."""
    if name == "fair":
        return FairPolicy(clock, quantum=quantum, period=period, preempt_patience=preempt_patience,
                          patience_by_op=patience_by_op, gap_rule=gap_rule)
    if name == "fifo":
        return FifoPolicy(clock)
    if name == "share":
        return SharePolicy(clock, window=WINDOW if window is None else window)
    if name == "none":
        return None
    raise ValueError(f"unknown policy {name!r}: fair, share, fifo or none")
