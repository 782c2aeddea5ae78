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

__all__ = ["MemoryGrant", "GRANT_STEP", "MIN_STEP", "grant_step", "out_of_memory_text"]

#: Memory is asked for (and handed back) in steps of this many bytes at most...
GRANT_STEP = 256 << 20
#: ... and at least this many.
MIN_STEP = 1 << 20


def grant_step(quota: int) -> int:
    """The step for a user's quota: a sixteenth of it, within [MIN_STEP, GRANT_STEP]."""
    return max(MIN_STEP, min(GRANT_STEP, quota // 16))


def _size(n: int) -> str:
    """Bytes for a person: ``1.5 GiB``, ``964 MiB``, ``512 B``."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n} B"


def out_of_memory_text(asked: str, used: int, limit: int | None, refusal: dict | str | None,
                       grant: "MemoryGrant | None" = None) -> str:
    """The text of a session's OutOfMemoryError: what was asked (the device's own words),
    then the budget it ran into, in the user's terms. Under a user's quota (the pool's
    *refusal*: ``user``, ``quota``, ``others`` held by their ``sessions`` other sessions),
    the quota and the usage against it; the quota too where the session's own limit is
    the quota (*grant* knows it); else the session's own limit and its usage."""
    if isinstance(refusal, str):   # the pool did not answer, or has gone
        return f"{asked} ({refusal})"
    if not refusal and grant is not None and grant.quota is not None and limit is not None \
            and limit >= grant.quota:
        refusal = {"user": grant.user, "quota": grant.quota, "others": 0, "sessions": 0}
    if refusal and isinstance(refusal.get("quota"), int):
        others, count = int(refusal.get("others") or 0), int(refusal.get("sessions") or 0)
        held = (f" and their {count} other session{'s' if count != 1 else ''} "
                f"hold{'s' if count == 1 else ''} {_size(others)}" if count else "")
        return (f"{asked}: user {refusal.get('user')}'s memory quota is {_size(refusal['quota'])} "
                f"over all their sessions: this session uses {_size(used)}{held}")
    if limit is not None:
        return f"{asked}: this session's memory limit is {_size(limit)} and it uses {_size(used)}"
    return asked


class MemoryGrant:
    """Called by the device when an allocation would pass the grant, from the worker's thread."""

    def __init__(self, ask: Callable[[int], tuple[int, dict | None]], cap: int, granted: int,
                 apply: Callable[[int], None], step: int = GRANT_STEP,
                 release: Callable[[], None] = lambda: None, quota: int | None = None,
                 user: str = "") -> None:
        self._ask = ask          # ask(bytes wanted in all) -> (bytes granted in all, refusal)
        #: (the refusal: the pool's dict of the user's quota and their other sessions)
        self.cap = cap           # the session's own limit: never asked beyond
        self.granted = granted
        self.step = step
        self._release = release  # frees the device's cached blocks, so a smaller grant is real
        self._apply = apply      # sets the device's limit
        #: why the last request fell short (the pool's words), for the OutOfMemoryError's text
        self.refusal: dict | None = None
        #: the user's quota and name: a session whose own limit is the quota meets the quota
        self.quota, self.user = quota, user
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

    def shrink(self, in_use: int, slack: int | None = None) -> int | None:
        """Hand back what the session has not used for a while, keeping *slack* (a step by
        default) beyond *in_use*; returns the new grant, or None if unchanged. The caller
        tells the pool (with its usage report)."""
        slack = self.step if slack is None else slack
        keep = min(self.cap, in_use + slack)
        if self.granted - keep < min(slack, self.step) or self.granted <= keep:
            return None
        self._release()
        self.granted = keep
        self._apply(keep)
        return keep
