"""Anticipation for ``share`` (arbiter/share.py): which users that ran out of work are about to
come back, and until when the users held back for them stay held.

Why: a user ahead that is let go while the user behind it is away for its round trip launches
a lead of work that no yield takes back (the launch is the device's now): users 1:2 whose
batches took 2 ms split the device 1:1 in the policy's simulation. Disk schedulers meet the
same problem by waiting a moment for a process's next request (anticipatory scheduling);
here a user is waited for, for twice its recent gaps, when those gaps average at most
``ANTICIPATE`` and its batches at most ``ANTICIPATE_BATCH``. A person at a notebook, back
every few seconds, is not waited for, and neither is a loop of long batches: the lead let
into its gap is a small part of a batch, and waiting idled the device for nothing (users
1:2:4 with 8–16 ms batches: the weights within 0.4–0.6 % either way, work conservation
0.981–0.993 waiting against 1.000 not).
"""

from __future__ import annotations

__all__ = ["Anticipation", "ANTICIPATE", "ANTICIPATE_BATCH", "LIGHT_BURST", "LIGHT_BATCH"]

#: The longest average gap between a user's batches (wall seconds, from running out of work
#: to having work again) for which it is waited for.
ANTICIPATE = 0.001
#: The longest average batch (wall seconds, from having work to running out) of a user waited
#: for.
ANTICIPATE_BATCH = 0.008
#: How long a light user's batch (:meth:`Anticipation.light`) runs beside the others before
#: it holds them back as any user does: what a batch of an interactive user's few small ops
#: takes under CUDA's time-slicing, a bound on what a light user that starts a long batch
#: gets at the time-slicing's rate instead of its share.
LIGHT_BURST = 0.002
#: The longest average batch (wall seconds) of a light user: a loop whose batches are longer
#: (users that sync after 8 ms of GEMMs, whose gaps can look long where a read's tail
#: outlasts its estimate) is never light.
LIGHT_BATCH = 2 * LIGHT_BURST


def _average(last: float | None, sample: float) -> float:
    """A moving average of a user's gaps or batches (the last four, about)."""
    return sample if last is None else 0.75 * last + 0.25 * sample


class Anticipation:
    """Per user: its average gap and batch, when it last came back and ran out, and until
    when it is expected back."""

    def __init__(self, batch: float = ANTICIPATE_BATCH) -> None:
        #: the longest average batch of a user waited for (ANTICIPATE_BATCH unless the pool
        #: says otherwise: its ``share_anticipate_batch_ms``)
        self.longest_batch = batch
        self._out_at: dict[str, float] = {}
        self._back_at: dict[str, float] = {}
        self._gap: dict[str, float] = {}
        self._batch: dict[str, float] = {}
        self._until: dict[str, float] = {}

    def back(self, user: str, now: float) -> float | None:
        """*user* has work again (its gap ends): the gap's wall seconds (None: it had not run
        out of work before, a new user)."""
        self._until.pop(user, None)
        out_at = self._out_at.pop(user, None)
        gap = None
        if out_at is not None:
            gap = max(0.0, now - out_at)
            self._gap[user] = _average(self._gap.get(user), gap)
        self._back_at[user] = now
        return gap

    def out(self, user: str, at: float) -> None:
        """*user* ran out of work at *at* (its batch ends): expected back if it is one of
        those waited for."""
        self._out_at[user] = at
        back = self._back_at.pop(user, None)
        if back is not None:
            self._batch[user] = _average(self._batch.get(user), at - back)
        gap, batch = self._gap.get(user), self._batch.get(user)
        if gap is not None and gap <= ANTICIPATE and batch is not None and batch <= self.longest_batch:
            self._until[user] = at + min(ANTICIPATE, 2 * gap)

    def expected(self, user: str) -> bool:
        return user in self._until

    def gap(self, user: str) -> float | None:
        """*user*'s average gap between batches (wall seconds; None before its first)."""
        return self._gap.get(user)

    def batch(self, user: str) -> float | None:
        """*user*'s average batch (wall seconds; None before its first ended)."""
        return self._batch.get(user)

    def light(self, user: str, now: float, light_gap: float) -> bool:
        """Whether *user* is light at *now* (``share``'s light users, SharePolicy._light):
        light by its history (:meth:`light_by_history`) and in the first LIGHT_BURST of a
        batch."""
        since = self._back_at.get(user)
        return self.light_by_history(user, light_gap) and since is not None \
            and now - since < LIGHT_BURST

    def light_by_history(self, user: str, light_gap: float) -> bool:
        """Whether *user* is away most of the time: its gaps average at least *light_gap*,
        its batches at most LIGHT_BATCH (a new user is not: nothing is known of it)."""
        gap, batch = self._gap.get(user), self._batch.get(user)
        return gap is not None and gap >= light_gap and batch is not None \
            and batch <= LIGHT_BATCH

    def light_until(self, user: str) -> float:
        """When *user*'s current batch stops being light (its LIGHT_BURST is over)."""
        return self._back_at[user] + LIGHT_BURST

    def expected_back(self) -> float | None:
        """When the first of the users waited for is expected back (its gap's average after
        it ran out), or None: nobody is waited for."""
        return min((self._out_at[u] + self._gap[u] for u in self._until), default=None)

    def expire(self, now: float) -> None:
        """Users not back by now are no longer waited for."""
        for user in [u for u, until in self._until.items() if until <= now]:
            del self._until[user]

    def next_deadline(self) -> float | None:
        return min(self._until.values(), default=None)

    def forget(self, user: str) -> None:
        """*user* left the pool (a user attached later starts anew)."""
        for kept in (self._out_at, self._back_at, self._gap, self._batch, self._until):
            kept.pop(user, None)
