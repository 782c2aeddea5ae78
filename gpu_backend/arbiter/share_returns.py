"""``share``'s rules for a user coming back from idle (arbiter/share.py takes them from
:class:`Returns`): where its virtual time stands when it has work again. Split from
share.py, whose state (the users, their sessions, the share clock, the anticipation) these
methods read and move; they are ``SharePolicy``'s own, kept here by topic.

- **Returning from idle** with capped credit: a user keeps the deficit it had when it ran
  out of work, and of what it would have had meanwhile it is forgiven all but ``credit``
  (its virtual time moves up by what a user of its weight with work all along would have
  had beside the users with work, ``dt / (W + w)`` for ``W`` their weights and ``w`` its own,
  less ``credit / weight``), and it never comes back more than ``BANK`` behind the users
  with work, weighted by the lesser of two users' weights (``_bank_floor``). A loop that
  syncs every few milliseconds is away a few hundred microseconds at a time and keeps its
  place (``fair``'s rule, ``vt = max(vt, m - credit / weight)``, forgave a weight-2 loop's
  deficit at every read in the simulation and it got 1:1, and measuring its deficit against
  ``m`` at its departure forgave the others' progress while it was away); a user that
  pauses often banks at most ``BANK``. (Forgiven the advance
  of the others' clock, ``dt / W``, a user away while fewer users had work was forgiven more
  than it would ever have had: users 1:2:4 whose round trips took 3 ms got 0.17 / 0.33 /
  0.50 in the simulation.) A new user starts ``credit`` behind; with ``credit`` at least
  ``window``, it holds back nobody level with the rest.
- **A loop's round trips charged** (``gap_charge``, the pool's ``share_gap_charge_ms``, 1 ms
  by default; a policy made alone has none): a user back from a gap of at most ``gap_charge``
  (its reply's way to the client, the client's Python up to its next sync, the request's way
  back) is charged the gap's wall seconds as its own time (:meth:`_charge_gap`). The issue's
  measure of a share is the users' own: each user's progress over its progress alone, and
  alone a loop's round trips leave the device idle. dl-mix's trainer takes 4.83 ms a step
  alone, 0.66 ms of it its round trip (H200 run 101); charged device time only, it got 0.57-0.60
  of its rate alone beside a long user at 0.41-0.43 (`none` 0.47), and at weights 1:2:4 0.347
  against its 0.286 (runs 219-221). Charged its round trips: 0.55-0.57 beside 0.45-0.47, and
  0.31-0.34. Users whose round trips are alike are charged alike and their split does not
  move; a pause longer than ``gap_charge`` (an interactive user's 10 ms between requests, a
  person thinking) is not a round trip and is not charged.
- **A device left idle forgets** (``forget_idle``, the pool's ``share_forget_idle_ms``, 50 ms
  by default; a policy made alone has it too): a user back to a device nobody has used for
  that long starts every user level with the one furthest ahead (:meth:`_forget_if_idle`).
"""

from __future__ import annotations

from .policy import _Session

__all__ = ["Returns", "FORGET_IDLE"]

#: Wall seconds the device must have gone unused (no user with work, anticipated or with
#: work on it) for a user's return to start every user level (SharePolicy._forget_if_idle;
#: the pool's ``share_forget_idle_ms``): far longer than a loop's round trip or an
#: anticipated user's gap, so that no loop's standing is forgotten between its batches.
FORGET_IDLE = 0.05


class Returns:
    """The methods of :class:`~gpu_backend.arbiter.share.SharePolicy` that place a user back
    from idle (see the module's docstring). A mixin: the policy's ``__init__`` sets what they
    read (``_left``, ``anticipation``, ``credit``, ``bank``, ``gap_charge``, ``gaps_charged``,
    ``forget_idle``, ``forgotten``, ``_worked_at``, ``_on``, ``min_vt``)."""

    def _out_of_work(self, session: _Session, at: float | None = None) -> None:
        """*session* has no work (since *at*, or now): if none of its user's has, note
        where the others are, and anticipate its return if its gaps are short."""
        session.runnable = False
        account = self.users[session.user]
        if not account.runnable(self.sessions):
            name = account.name
            at = self.clock() if at is None else at
            self._left[name] = 0.0
            self.anticipation.out(name, at)

    def _away_from_now(self, session: _Session, at: float | None = None) -> None:
        """*session*'s work ran until now (or *at*) though its user was counted out of work
        earlier (:meth:`done`; a release's launched work estimated done, :meth:`_integrate`):
        where none of its user's sessions has work, its absence starts then, so that the gap
        a return measures (:meth:`_charge_gap`) holds none of that work. (Counted from the
        release, a user that gave its grant back with 0.6 ms launched and came back 0.3 ms
        after that work ran was charged 0.9 ms, and one with 0.8 ms launched nothing at all:
        the gap passed ``gap_charge``.)"""
        account = self.users[session.user]
        if account.name in self._left and not account.runnable(self.sessions):
            self._left[account.name] = 0.0
            self.anticipation.out(account.name, self.clock() if at is None else at)

    def _wake(self, session: _Session) -> None:
        if session.runnable:
            return
        account = self.users[session.user]
        if not account.runnable(self.sessions):
            self._forget_if_idle()
            self._advance_min_vt()
            gap = self.anticipation.back(account.name, self.clock())
            left = self._left.pop(account.name, None)
            if left is None:   # (new: it starts where the others are, less credit)
                account.vt = max(account.vt, self.min_vt - self.credit / account.weight)
            else:              # (back: what it would have had meanwhile, less credit)
                self._return(account, left)
                self._charge_gap(account, gap)
        super()._wake(session)

    def _forget_if_idle(self) -> None:
        """A user comes back to a device nobody has used for ``forget_idle`` (no user with
        work, anticipated or with work on it): every user starts level with the one furthest
        ahead, what each had banked or owed forgotten. A device left idle is time nobody
        wanted, and a place earned before it is no claim after it (start-time fair queuing
        starts every flow anew when its server idles). Kept, the places users took while they
        warmed up one after another, each alone for a few batches, then waited for a common
        start held one to three of six users at 0.00-0.06 of the device for the first 300 ms
        in the simulation's draws: *left* adds up every stretch in which anyone had work, as
        if that user had had it whole, so users that warmed up first came back far past
        users that had used as much, and users that warmed up last kept places they took
        beside nobody. Level, each of the draws tested splits evenly from the start
        (tests/gpu_backend/test_share_round_trips.py). What each user was owed meanwhile is
        dropped, not its absence: a return after the forgetting is a return (its round trip
        charged where it is one), not a newcomer's."""
        if not self.forget_idle or self._on or self._counted() \
                or self.clock() - self._worked_at < self.forget_idle:
            return
        level = max((u.vt for u in self.users.values()), default=None)
        if level is None:
            return
        for u in self.users.values():
            u.vt = level
        self._left = dict.fromkeys(self._left, 0.0)
        self.min_vt = max(self.min_vt, level)
        self.forgotten += 1

    def _charge_gap(self, account, gap: float | None) -> None:
        """*account* is back from a gap of *gap* wall seconds: a round trip of its loop (at
        most ``gap_charge``) is charged as its own time, after the return's forgiving and its
        floor, so that a user far behind pays it too. Its usage (the accounting's device
        seconds) is not: only its place among the users. See the module's docstring."""
        if gap is not None and 0.0 < gap <= self.gap_charge:
            account.vt += gap / account.weight
            self.gaps_charged += gap

    def _return(self, account, left: float) -> None:
        """*account* has work again; *left*: the virtual seconds it would have had meanwhile.
        Of these it is forgiven up to ``credit``, and it comes back at most
        ``bank`` behind the others with work or anticipated (:meth:`_bank_floor`; not
        ``min_vt``: that jumps to a user far ahead while it is the only one with work, two
        others reading at once, and the cap then took the deficit of a user behind away at
        every read: users 1:2:4 in the simulation got 0.20 / 0.40 / 0.40)."""
        account.vt += max(0.0, left - self.credit / account.weight)
        floor = self._bank_floor(account.weight)
        if floor is not None:
            account.vt = max(account.vt, floor)

    def _bank_floor(self, weight: float) -> float | None:
        """The least virtual time a user of *weight* back from idle may come back with:
        ``bank`` behind the users with work (or anticipated), each measured in the lesser of
        its weight and *weight*, the loosest of these (None: nobody). Where no user with work
        weighs less than it, that is ``bank / weight`` behind the least virtual time, as
        before. In its own weight alone, the floor took a heavy user's deficit away at its
        reads: a weight-1 user held back ran up to 8 ms of virtual time ahead of a weight-4
        one, twice the 4 ms (``bank / 4``) the weight-4 user could then be behind, and the
        weight-4 user of three syncing users 1:2:4 was raised 1-9 ms at one read in four,
        0.64 s of the 5.4 s the device ran (H100 run 56: 0.152 / 0.293 / 0.556 of their
        work)."""
        floors = [u.vt - self.bank / min(u.weight, weight) for u in self._counted()]
        return min(floors) if floors else None
