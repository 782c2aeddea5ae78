"""Warm spare workers, as the front door keeps them: started where missing, given up on when
their ``ready`` is late, and a device whose workers keep failing to start rested for a while.

Each device keeps ``spare_workers`` workers started and warm (more while hellos wait for
it), so that a hello is answered as soon as a worker is told its session. A start can fail
two ways: the worker ends before it says ``ready`` (its device cannot be opened, its host
ran out of processes), or it never says it (a ``spawn`` or ``ready`` lost across hosts, a
worker stuck in CUDA's initialisation): after ``ready_timeout`` it is ended, and a
replacement started at once serves the hello that waited for it.

A device whose starts fail ``MAX_FAILED_STARTS`` times in a row *rests*: no spare is started
for it, placement passes it by, and a hello that can only go there is refused saying why.
A rest lasts ``REST`` seconds, doubling with each rest in a row up to ``REST_LONGEST``; then
one more start is tried (a fault that passed, a driver reloaded). A worker that says
``ready`` ends the device's run of failures. Before, three failures switched a device off
for the pool's life: nothing could start the hello that would have switched it on again.
"""

from __future__ import annotations

import logging
import time
from typing import Any, Callable, Iterable

__all__ = ["Spares", "MAX_FAILED_STARTS", "REST", "REST_LONGEST"]

log = logging.getLogger("gpu_backend.door.frontdoor")

#: Starts that fail in a row before a device rests.
MAX_FAILED_STARTS = 3
#: A device's first rest (seconds); each rest in a row doubles it, up to REST_LONGEST.
REST = 30.0
REST_LONGEST = 600.0
#: The longest between two passes that start missing spares, when nothing changed (seconds).
SPARES_EVERY = 0.25
#: How often spares are looked at for a ``ready`` overdue (seconds).
STARTS_EVERY = 1.0


class Spares:
    """The spares of *hosts* (a :class:`~gpu_backend.hosts.collection.Hosts`): *spare_workers* per
    device, a start given up after *ready_timeout* seconds. Called from the front door's
    loop only."""

    def __init__(self, hosts: Any, spare_workers: int, ready_timeout: float,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.hosts = hosts
        self.spare_workers = spare_workers
        self.ready_timeout = ready_timeout
        self.clock = clock
        #: per device, starts that failed in a row (a ready ends the run)
        self.failed: dict[str, int] = {}
        #: per device resting: (until when, how long this rest was)
        self._resting: dict[str, tuple[float, float]] = {}
        #: starts given up on since the pool started: not ready within ready_timeout
        self.given_up = 0
        self._changed, self._due, self._starts_due = True, 0.0, 0.0

    def changed(self) -> None:
        """The workers changed (a session assigned, a worker gone): look at the spares soon."""
        self._changed = True

    def resting(self, device: str) -> float | None:
        """Seconds until *device* is tried again, or None when it is not resting."""
        rest = self._resting.get(device)
        if rest is None:
            return None
        left = rest[0] - self.clock()
        if left <= 0:   # the rest is over: one start may be tried (a failure rests it again)
            self.failed[device] = MAX_FAILED_STARTS - 1
            self._resting[device] = (0.0, rest[1])   # (remembered: the next rest is longer)
            return None
        return left

    def keep(self, waiting: Iterable[str], force: bool = False) -> None:
        """Start the spares each device lacks (*waiting*: the device of each hello that
        waits). It is a pass over every host's workers, so it is made when something
        changed them or a hello waits, else at most every ``SPARES_EVERY`` seconds."""
        queued: dict[str, int] = {}
        for device in waiting:
            queued[device] = queued.get(device, 0) + 1
        now = self.clock()
        if not (force or queued or self._changed or now >= self._due):
            return
        self._changed, self._due = False, now + SPARES_EVERY

        def wanted(device: str) -> int:
            if self.resting(device) is not None:
                return 0
            return max(self.spare_workers, queued.get(device, 0))
        self.hosts.keep_spares(wanted)

    def expire(self) -> None:
        """End the spares whose ``ready`` is overdue: each counts as a failed start and is
        replaced at the next :meth:`keep` (it is no spare any more)."""
        now = self.clock()
        if now < self._starts_due:
            return
        self._starts_due = now + STARTS_EVERY
        for worker in self.hosts.late_starts(time.monotonic() - self.ready_timeout):
            self.given_up += 1
            log.error("worker %s for %s did not say ready within %g s: ended, counted as a "
                      "failed start, replaced", worker.wid, worker.device, self.ready_timeout)
            self.hosts.give_up(worker)
            self.failed_start(worker.device)

    def failed_start(self, device: str) -> None:
        """A worker of *device* ended, or was given up on, before it said ready."""
        self._changed = True
        count = self.failed[device] = self.failed.get(device, 0) + 1
        if count < MAX_FAILED_STARTS:
            return
        last = self._resting.get(device, (0.0, 0.0))[1]
        rest = min(REST_LONGEST, last * 2) if last else REST
        self._resting[device] = (self.clock() + rest, rest)
        log.error("workers for %s failed to start %d times in a row: no spare is started "
                  "for it for %g s", device, count, rest)

    def ready(self, device: str) -> None:
        """A worker of *device* said ready: its run of failures, and its rests, are over."""
        self.failed.pop(device, None)
        self._resting.pop(device, None)

    def forget(self, devices: Iterable[str]) -> None:
        """*devices* have left the pool (their host was lost)."""
        for device in devices:
            self.failed.pop(device, None)
            self._resting.pop(device, None)
