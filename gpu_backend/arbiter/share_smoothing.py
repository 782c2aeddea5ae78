"""Charges smoothed batch by batch (``share``'s ``smooth``; off by default): a syncing
user's batches billed at their running price, what was measured kept apart and settled.

Why (issue 51): a worker's CUDA events measure its batch's span beside the others, and
``SharePolicy._charge`` scales it by the mean of ``1/k`` over the report. That is right on
average (whole runs keep the weights within a few per cent) and off batch by batch, and
the users' one-second shares follow the charges: in the simulation
(benchmarks/share_error_sim.py) every point of the one-second error is the charges' noise,
and an H200's errors match noise of about 0.1 a batch. A user's loop replays the same
batch; what it costs does not change from one batch to the next, only what was measured
of it. Billing each batch the running mean of what its batches were measured (the
*price*) takes the batch-to-batch noise out of the users' places, and the difference
between what was measured and what was billed (the *residual*) is billed back a part at
each batch, so nothing measured is ever lost: over a run each user is billed what it was
measured, less a residual bounded by ``cap``.

Only the ends of batches (a worker's ``idle``: its read begins) bill the price. Between
them a report's charge is held in the residual up to ``cap`` and billed past it, so a user
that never says ``idle`` (a deep queue) is billed as it is measured, ``cap`` behind.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ChargeSmoother", "PRICE_BATCHES", "SETTLE_BATCHES", "CAP"]

#: Batches a price follows (the weight of the newest in its running mean is 1/this).
PRICE_BATCHES = 32
#: Batches over which a residual is billed back (a part of 1/this of it at each batch).
SETTLE_BATCHES = 16
#: Most device seconds a session's residual holds either way: what the smoothing may
#: move its place among the users (twice the share window, about one batch of four
#: 2 ms GEMMs).
CAP = 0.008


@dataclass
class _Smoothed:
    residual: float = 0.0           # measured and not billed (negative: billed ahead)
    batch: float = 0.0              # measured since the last batch's end
    billed: float = 0.0             # of it, billed as it was measured
    price: float = 0.0              # running mean of a batch's measured charge
    batches: int = 0                # batches it has followed


class ChargeSmoother:
    """Per session, what to bill of each charge (:meth:`bill`)."""

    def __init__(self, price_batches: int = PRICE_BATCHES,
                 settle_batches: int = SETTLE_BATCHES, cap: float = CAP) -> None:
        self.price_batches = price_batches
        self.settle_batches = settle_batches
        self.cap = cap
        self._sessions: dict[str, _Smoothed] = {}

    def forget(self, sid: str) -> float:
        """*sid* leaves: its residual, to bill now."""
        state = self._sessions.pop(sid, None)
        return 0.0 if state is None else state.residual

    def bill(self, sid: str, charge: float, batch_end: bool) -> float:
        """*charge* device seconds were measured for *sid* (scaled, settled): what to bill
        it now. Between a batch's ends, what was measured (the user's place follows its
        work as it runs); at its end, what brings the batch's bill to the price and a part
        of the residual."""
        state = self._sessions.setdefault(sid, _Smoothed())
        state.batch += charge
        if not batch_end:
            state.billed += charge
            return charge
        measured, billed_before = state.batch, state.billed
        state.batch = state.billed = 0.0
        state.batches += 1
        state.price += (measured - state.price) / min(state.batches, self.price_batches)
        owed = state.residual + measured
        target = state.price + (owed - state.price) / self.settle_batches
        target = min(max(target, owed - self.cap), owed + self.cap)
        state.residual = owed - target
        return target - billed_before

    def _over_cap(self, state: _Smoothed) -> float:
        over = state.residual - max(-self.cap, min(self.cap, state.residual))
        state.residual -= over
        return over

    def residual(self, sid: str) -> float:
        state = self._sessions.get(sid)
        return 0.0 if state is None else state.residual
