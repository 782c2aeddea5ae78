"""A session's device memory under its user's quota: granted by the pool, step by step.

When a user has a memory quota, the sum over their sessions is bounded by the
pool, which grants memory to each worker (docs/fair-share.md, "Quotas"). The
worker's memory pool is limited to its grant; an allocation that would pass it
asks the pool for more (a round trip on the control socket, at most once per
``GRANT_STEP``), and what the session no longer holds is handed back with its
usage reports. Sessions without a quota never use this.
"""

from __future__ import annotations

from typing import Callable

__all__ = ["MemoryGrant", "GRANT_STEP", "MIN_STEP", "grant_step"]

#: Memory is asked for (and handed back) in steps of this many bytes at most...
GRANT_STEP = 256 << 20
#: ... and at least this many.
MIN_STEP = 1 << 20


def grant_step(quota: int) -> int:
    """The step for a user's quota: a sixteenth of it, within [MIN_STEP, GRANT_STEP]."""
    return max(MIN_STEP, min(GRANT_STEP, quota // 16))


class MemoryGrant:
    """Called by the device when an allocation would pass the grant, from the worker's thread."""

    def __init__(self, ask: Callable[[int], tuple[int, str | None]], cap: int, granted: int,
                 apply: Callable[[int], None], step: int = GRANT_STEP,
                 release: Callable[[], None] = lambda: None) -> None:
        self._ask = ask          # ask(bytes wanted in all) -> (bytes granted in all, refusal)
        self.cap = cap           # the session's own limit: never asked beyond
        self.granted = granted
        self.step = step
        self._release = release  # frees the device's cached blocks, so a smaller grant is real
        self._apply = apply      # sets the device's limit
        #: why the last request fell short, for the OutOfMemoryError's text
        self.refusal: str | None = None
        apply(granted)

    def grow(self, need: int) -> bool:
        """The session needs *need* bytes in all: ask for them (and a step more). Returns
        whether they were granted; the device's limit is updated either way."""
        if need > self.cap:
            self.refusal = None   # the session's own limit: the device says so itself
            return False
        want = min(self.cap, max(need, self.granted + self.step))
        granted, refusal = self._ask(want)
        if granted < need and want > need:   # a step more did not fit: perhaps the need does
            granted, refusal = self._ask(need)
        self.granted = max(granted, 0)
        self.refusal = refusal
        self._apply(self.granted)
        return self.granted >= need

    def shrink(self, in_use: int) -> int | None:
        """Hand back what the session has not used for a while; returns the new grant, or
        None if unchanged. The caller tells the pool (with its usage report)."""
        keep = min(self.cap, in_use + self.step)
        if self.granted - keep < self.step:
            return None
        self._release()
        self.granted = keep
        self._apply(keep)
        return keep
