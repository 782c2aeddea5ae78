"""The policy a pool names (``--policy``): ``fair`` and ``fifo`` (turns.py), ``share``
(share.py), or ``none`` (no arbiter). Apart from both, since both build on policy.py."""

from __future__ import annotations

import time
from typing import Callable

from .anticipation import ANTICIPATE_BATCH
from .policy import PERIOD, PREEMPT_PATIENCE, QUANTUM, Policy
from .turns import FairPolicy, FifoPolicy
from .share import FORGET_IDLE, WINDOW, SharePolicy

__all__ = ["make_policy", "own_time_markers"]


def own_time_markers(device: str) -> bool:
    """Whether the device *device* names (``cpu:K``, ``cuda:K``) reports each session's own
    device time: the NumPy device, whose markers are its worker's CPU time (devices/base.py,
    ``Device.marker``), not a span of the device's timeline, which holds other sessions'
    slices where they run side by side (a GPU's CUDA events)."""
    return device == "cpu" or device.startswith("cpu:")


def make_policy(name: str, clock: Callable[[], float] = time.monotonic,
                quantum: float = QUANTUM, period: float = PERIOD,
                preempt_patience: float = PREEMPT_PATIENCE,
                patience_by_op: bool = True, gap_rule: bool = True,
                window: float | None = None, own_time: bool = False,
                fill: bool = False, deep_lead: float = 0.0, light_gap: float = 0.0,
                gap_charge: float = 0.0, forget_idle: float = FORGET_IDLE,
                assume_silent: bool = False,
                anticipate_batch: float = ANTICIPATE_BATCH) -> Policy | None:
    """The policy called *name* (``fair``, ``share``, ``fifo``); ``none`` means no arbiter at all.
    *quantum*: the least device seconds a ``fair`` holder keeps the device while others
    wait; *period*: device seconds in which each backlogged user gets one turn (0: every
    turn is *quantum*); *patience_by_op* (a diagnostic, on by default): a preempting
    newcomer's wait follows the holder's op length (FairPolicy.patience_behind); *gap_rule*
    (likewise): a user between two batches may be kept the device (arbiter/gap_rule.py);
    *window*: ``share``'s (arbiter/share.py, WINDOW if None); *own_time*: the device's
    reports are each session's own device time (:func:`own_time_markers`), which ``share``
    does not scale by the session's part of the device; *fill*: ``share`` lets a user held
    back into an anticipated user's expected gap (off by default: no GPU scenario measured
    so far let a fill in, docs/fair-share.md); *deep_lead*: ``share``'s lead for the
    heaviest users' sessions (SharePolicy.lead_for; 0: off); *light_gap*: the least average
    gap between a user's batches for which ``share`` counts it light (SharePolicy._light; 0:
    none is); *gap_charge*: the longest gap between a user's batches that ``share`` charges
    it as its own time (SharePolicy._charge_gap; 0: none); *forget_idle*: how long the device
    goes unused before a user's return starts every user level under ``share``
    (SharePolicy._forget_if_idle; 0: never); *assume_silent*: ``share`` assumes a session on
    the device silent past its window uses its part (SharePolicy._assume_silent; the pool's
    default, PoolSettings.policy_options); *anticipate_batch*: the longest average batch of a
    user ``share`` waits for in its gaps (Anticipation, ANTICIPATE_BATCH)."""
    if name == "fair":
        return FairPolicy(clock, quantum=quantum, period=period, preempt_patience=preempt_patience,
                          patience_by_op=patience_by_op, gap_rule=gap_rule)
    if name == "fifo":
        return FifoPolicy(clock)
    if name == "share":
        return SharePolicy(clock, window=WINDOW if window is None else window,
                           own_time=own_time, fill=fill, deep_lead=deep_lead, light_gap=light_gap,
                           gap_charge=gap_charge, forget_idle=forget_idle,
                           assume_silent=assume_silent, anticipate_batch=anticipate_batch)
    if name == "none":
        return None
    raise ValueError(f"unknown policy {name!r}: fair, share, fifo or none")
