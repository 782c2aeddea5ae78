"""The fair policy's gap rule: a user between two batches may be kept the device.

A training loop that reads its loss every step leaves the device for a moment after each
step (its client reads the loss, then sends the next step). Granted in that gap, a user of
22 ms kernels made the trainer's next step wait a kernel (0.30 of its rate alone under
`fair` against 0.52 under `none`, H100 run 84). So a session that ends its batch with
nothing more to run, and whose client came back within GAP_MAX lately, is kept the
device through its gap if another user waits that is not behind it and whose ops run
longer than the gap; the idle time is charged to it. FairPolicy mixes this in (its
``_grant_next``, told by ``Policy.release`` which holder ran out of work, asks
``_hold_for_gap`` and ``_grant_during_hold``). docs/fair-share.md, "Long ops in pieces
(opt-in) and the gap rule".
"""

from __future__ import annotations

from typing import Any

__all__ = ["GapRule", "GAP_MAX", "GAP_SLACK", "GAP_LEARN"]

#: The longest gap (wall seconds from its release to its next request, lately) a session is
#: kept the device through; held at most twice its gap and GAP_SLACK.
GAP_MAX = 0.002
GAP_SLACK = 0.0002
#: Longer absences are not gaps between batches: the session's gap is forgotten.
GAP_LEARN = 0.01


class GapRule:
    """FairPolicy's gap rule (module docstring)."""

    def start_gap_rule(self, enabled: bool) -> None:
        self.gap_rule = enabled
        #: (session, idle from, until): the device kept idle for a session between batches
        #: (idle from None: a user with credit holds it meanwhile)
        self.gap_hold: tuple[str, float | None, float] | None = None

    def _hold_for_gap(self, session: Any, ahead: float) -> bool:
        """Keep the device idle for *session*, which has just ended its batch with *ahead*
        seconds of work still to drain, until it comes back, for at most twice its gap and
        GAP_SLACK? Only if it came back within GAP_MAX lately and another user waits that is
        not behind it and whose ops run longer than the gap (granted now, it would make the
        session wait longer than the gap costs them). Users with credit against it are
        granted meanwhile all the same (_grant_during_hold): an interactive op goes first."""
        session.left_at = self.clock()   # (its gap is learnt when it asks again)
        gap = session.gap
        if not self.gap_rule or gap is None or gap > GAP_MAX or self.gap_hold is not None:
            return False
        mine = self.users[session.user]
        waiting = self._waiting()
        if any(self.users[s.user] is mine for s in waiting):
            return False   # (its user's other session takes the device: nothing to keep)
        if not any(s.op > gap and mine.vt <= self.users[s.user].vt for s in waiting):
            return False   # (a user of short ops is granted: the session waits one op for it)
        now = self.clock()
        self.gap_hold = (session.sid, now + ahead, now + min(GAP_MAX, 2 * gap + GAP_SLACK))
        return True

    def _back_from_gap(self, session: Any) -> None:
        """*session* asks for the device: learn its gap; back within its hold, it kept the
        device, so it was not idle and keeps its place (the capped credit of FairPolicy's
        _wake would forgive it a turn at every step)."""
        self._learn_gap(session)
        if self.gap_hold is not None and self.gap_hold[0] == session.sid:
            self._end_hold()
            super()._wake(session)   # (the plain wake: runnable, no credit reckoning)

    def _learn_gap(self, session: Any) -> None:
        """*session* asks again: how long its client took since it ran out of work."""
        if session.left_at is None:
            return
        gap = self.clock() - session.left_at
        session.left_at = None
        if gap > GAP_LEARN:
            session.gap = None
        else:
            session.gap = gap if session.gap is None else session.gap + 0.3 * (gap - session.gap)

    def _end_hold(self) -> None:
        """The held session is back, or its hold ran out: charge it the idle time."""
        self._pause_hold()
        self.gap_hold = None

    def _pause_hold(self, resume_at: float | None = None) -> None:
        """Charge the held session the device's idle time so far (it kept the device from
        the others), counting from the end of its launched work; the device is idle for it
        again from *resume_at* (None: someone with credit holds it meanwhile)."""
        sid, since, until = self.gap_hold
        now = self.clock()
        session = self.sessions.get(sid)
        idle = min(now, until) - since if since is not None else 0.0
        if session is not None and idle > 0:
            session.vt += idle
            account = self.users[session.user]
            account.vt += idle / account.weight
        self.gap_hold = (sid, resume_at, until)

    def _grant_during_hold(self, waiting: list, ahead: float) -> list:
        """Of *waiting*, those that may be granted while the device is kept for a session in
        its gap: its user's other sessions, and users with credit against it (an interactive
        user preempts it as it would a holder). The hold is over once its time is; with
        nobody to grant, the
        device is idle for it again (after *ahead*: the last holder's launched work)."""
        sid, since, until = self.gap_hold
        now = self.clock()
        if now >= until:
            self._end_hold()
            return waiting
        held = self.users[self.sessions[sid].user]
        first = [s for s in waiting if self.users[s.user] is held   # (its user's own turn)
                 or self.users[s.user].vt + self.preempt_gap < held.vt]
        if first:
            self._pause_hold()
        elif since is None:
            self.gap_hold = (sid, now + ahead, until)
        return first

    def tick(self) -> list:
        if self.gap_hold is not None and self.clock() >= self.gap_hold[2]:
            self._end_hold()
            if self.holder is None:
                return self._grant_next()
        return super().tick()

    def next_deadline(self) -> float | None:
        due = super().next_deadline()
        if self.gap_hold is None:
            return due
        return self.gap_hold[2] if due is None else min(due, self.gap_hold[2])

    def detach(self, sid: str) -> list:
        if self.gap_hold is not None and self.gap_hold[0] == sid:
            self.gap_hold = None   # (gone: nothing to charge)
            actions = super().detach(sid)
            return actions or (self._grant_next() if self.holder is None else [])
        return super().detach(sid)
