"""Measuring a session's device time, and keeping its launched-but-unfinished work short.

The executor calls :meth:`Pacer.after_ops` every few ops (``countdown``) and at
batch boundaries. The pacer records device markers (CUDA events on a GPU)
between ops and learns, from the markers the device has reached, how much
device time the session used (``busy``: busy periods only; a segment that
starts on an idle device gets a fresh start marker) and how long an op takes
(``per_op``, a moving average). Markers are recorded every op when ops are
long and every few dozen when they are short, so pacing costs a fraction of a
microsecond per op.

With a lease (the ``fair`` and ``fifo`` policies) it also keeps the work
launched ahead of the device short: before launching more it waits until the
estimated unfinished work is below ``LEAD`` and no op is queued behind a
running one. A worker that launched 200 ms of GEMMs ahead would make a
newcomer wait 200 ms whatever the arbiter decides; with pacing it waits for
the op on the GPU. The pacer also reports device time to the arbiter and
hands the device over when the lease says so.
"""

from __future__ import annotations

from collections import deque
from time import perf_counter
from typing import Callable

from .lease import DeviceLease

__all__ = ["Pacer", "LEAD", "GRAIN"]

#: Estimated device seconds of work a paced worker may have launched and unfinished.
LEAD = 300e-6
#: Device seconds of work between two markers when ops are short.
GRAIN = 100e-6
#: Most ops between two markers.
MAX_COUNTDOWN = 64
#: Weight of the newest segment in the per-op average.
_NEW = 0.3
#: While launching, look for arbiter messages at most this often (host seconds): asking
#: ZeroMQ costs 2-3 µs. Waits for the device sleep on the lease's socket and see a
#: yield at once; a quantum needs no message, the worker counts it itself.
CHECK_SECONDS = 0.0005


class Pacer:
    def __init__(self, device, lease: DeviceLease | None = None) -> None:
        self.device = device
        self.lease = lease
        #: device seconds this session's work has used, as measured so far
        self.busy = 0.0
        #: estimated device seconds per op (None until measured)
        self.per_op: float | None = None
        self.countdown = 1
        self._pending: deque = deque()   # (marker, ops in its segment), oldest first
        self._anchor = None              # the marker the next segment is measured from
        self._free_at = 0.0              # host time when launched work should be done
        self._check_at = 0.0             # host time of the next look at the lease's socket

    # ------------------------------------------------------------ measuring
    def _mark(self, ops: int) -> None:
        self._pending.append((self.device.marker(), ops))

    def harvest(self) -> None:
        """Account every segment the device has finished (never blocks)."""
        pending, device = self._pending, self.device
        if not pending or not device.reached(pending[0][0]):
            return
        while pending and device.reached(pending[0][0]):
            marker, ops = pending.popleft()
            seconds = device.between(self._anchor, marker) if self._anchor is not None else 0.0
            self.busy += seconds
            if ops:
                measured = seconds / ops
                self.per_op = measured if self.per_op is None else (
                    self.per_op + _NEW * (measured - self.per_op))
            if self._anchor is not None:
                device.drop_marker(self._anchor)
            self._anchor = marker
        now = perf_counter()
        self._free_at = now + sum(ops for _, ops in pending) * (self.per_op or 0.0)

    def _restart_if_idle(self) -> None:
        """On an idle device the next segment starts now, not at the last marker."""
        if not self._pending:
            if self._anchor is not None:
                self.device.drop_marker(self._anchor)
            self._anchor = self.device.marker()

    def _ahead(self) -> float:
        return max(0.0, self._free_at - perf_counter())

    def _read_lease(self) -> None:
        """Take in the arbiter's messages, if it is time to look (see CHECK_SECONDS)."""
        now = perf_counter()
        if now >= self._check_at:
            self._check_at = now + CHECK_SECONDS
            self.lease.read(self.busy)

    def _next_countdown(self) -> int:
        if self.per_op is None or (self.lease is not None and self._pending):
            return 1
        return max(1, min(MAX_COUNTDOWN, int(GRAIN / max(self.per_op, 1e-9))))

    # ------------------------------------------------------------ the executor's hooks
    def begin_batch(self, interrupted: Callable[[], bool]) -> bool:
        """Before a batch's first op: hold the device (paced policies); False if interrupted."""
        self.harvest()
        if self.lease is not None and not self.lease.acquire(self.busy, interrupted):
            return False
        self._restart_if_idle()
        self.countdown = self._next_countdown()
        return True

    def after_ops(self, ops: int, interrupted: Callable[[], bool]) -> int:
        """*ops* ops were launched since the last call: mark, measure, pace. Returns the
        ops to launch before the next call, or 0 if interrupted while waiting for the device."""
        self._mark(ops)
        if self.per_op is not None:
            self._free_at = max(self._free_at, perf_counter()) + ops * self.per_op
        self.harvest()
        lease = self.lease
        if lease is not None:
            self._read_lease()
            self._hold_back(interrupted)
            if lease.must_hand_over(self.busy + self._ahead()):
                lease.release(self.busy, want=True)
                if not lease.acquire(self.busy, interrupted):
                    return 0
            lease.report(self.busy)
        self._restart_if_idle()
        self.countdown = self._next_countdown()
        return self.countdown

    def _hold_back(self, interrupted: Callable[[], bool]) -> None:
        """Wait while too much launched work is unfinished; a yield cuts the wait short."""
        lease = self.lease
        while self._pending:
            ahead = self._ahead()
            queued_behind = len(self._pending) >= 2
            if ahead <= LEAD and not queued_behind:
                return
            if lease.must_hand_over(self.busy + ahead):
                return
            lease.wait(ahead - LEAD if ahead > LEAD else 50e-6)
            lease.read(self.busy)
            self.harvest()

    def end_batch(self, ops: int, more_work: Callable[[], bool]) -> None:
        """After a batch's last op (*ops* launched since the last call)."""
        if ops:
            self._mark(ops)
            if self.per_op is not None:
                self._free_at = max(self._free_at, perf_counter()) + ops * self.per_op
        self.harvest()
        lease = self.lease
        if lease is None:
            return
        self._read_lease()
        if lease.holding and (lease.at_batch_end or lease.must_hand_over(self.busy + self._ahead())):
            lease.release(self.busy, want=more_work())
        else:
            lease.report(self.busy)

    def idle(self) -> None:
        """The worker has nothing to run: measure, and hand the device over if others wait."""
        self.harvest()
        if self.lease is not None:
            self.lease.idle(self.busy)
