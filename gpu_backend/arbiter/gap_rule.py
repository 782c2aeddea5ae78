"""The fair policy's gap rule: a user between two batches may be kept the device.

A training loop that reads its loss every step leaves the device for a moment after each
step (its client reads the loss, then sends the next step). Granted in that gap, a user of
22 ms kernels made the trainer's next step wait a kernel (0.30 of its rate alone under
`fair` against 0.52 under `none`, H100 run 84). So a session that ends its batch with
nothing more to run, and whose client came back within GAP_MAX lately, is kept the
device through its gap if another user waits that is not behind it and whose ops run
longer than the gap; the idle time is charged to it.

A part FairPolicy holds (``policy.gaps``): the policy tells it when a holder runs out of
work (:meth:`GapRule.ran_out`) and when a session asks again (:meth:`GapRule.back`), asks
it whom it may grant during a hold (:meth:`GapRule.during_hold`), and when a hold ends
(:meth:`GapRule.expire`, :meth:`GapRule.deadline`). It keeps its own per-session record
(:class:`SessionGap`) and reads its policy's clock, sessions and users (public fields),
charging a held session's virtual times with its idle time. docs/fair-share.md, "Long ops
in pieces (opt-in) and the gap rule".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

__all__ = ["GapRule", "Hold", "SessionGap", "GAP_MAX", "GAP_SLACK", "GAP_LEARN"]

#: The longest gap (wall seconds from its release to its next request, lately) a session is
#: kept the device through; held at most twice its gap and GAP_SLACK.
GAP_MAX = 0.002
GAP_SLACK = 0.0002
#: Longer absences are not gaps between batches: the session's gap is forgotten.
GAP_LEARN = 0.01


class Hold(NamedTuple):
    """The device kept idle for a session between two of its batches."""

    sid: str
    #: when the device went idle for it (the end of its launched work); None while a user
    #: with credit against it holds the device meanwhile
    idle_from: float | None
    #: when the hold ends, whether the session is back or not
    until: float


@dataclass
class SessionGap:
    """What the rule knows of one session."""

    left_at: float | None = None   # when it last released with nothing more to run
    gap: float | None = None       # wall seconds it comes back in after that, lately


class GapRule:
    """FairPolicy's gap rule (module docstring), a part of *policy*: its ``clock`` (read at
    each use: a simulation sets it after the policy is made), its ``sessions`` and ``users``
    (read, and a held session's virtual times charged). *enabled* False (a diagnostic) keeps
    nobody the device so."""

    def __init__(self, policy: Any, enabled: bool = True) -> None:
        self.policy = policy
        self.enabled = enabled
        #: each attached session's gap, by id
        self.sessions: dict[str, SessionGap] = {}
        #: the device kept idle for a session between batches, if it is
        self.hold: Hold | None = None

    # ------------------------------------------------------------ sessions
    def attach(self, sid: str) -> None:
        """A session attached: nothing is known of its gaps yet."""
        self.sessions[sid] = SessionGap()

    def detach(self, sid: str) -> bool:
        """A session went away; whether the device was held for it (the hold is over,
        charged to nobody: the policy grants the device on)."""
        self.sessions.pop(sid, None)
        if self.hold is not None and self.hold.sid == sid:
            self.hold = None
            return True
        return False

    # ------------------------------------------------------------ the policy's questions
    def ran_out(self, session: Any, ahead: float, waiting: list) -> bool:
        """Keep the device idle for *session*, which has just ended its batch with *ahead*
        seconds of work still to drain, while *waiting* sessions want it, until it comes
        back, for at most twice its gap and GAP_SLACK? Only if it came back within GAP_MAX
        lately and another user waits that is not behind it and whose ops run longer than
        the gap (granted now, it would make the session wait longer than the gap costs
        them). Users with credit against it are granted meanwhile all the same
        (:meth:`during_hold`): an interactive op goes first."""
        known = self.sessions.setdefault(session.sid, SessionGap())
        known.left_at = self.policy.clock()   # (its gap is learnt when it asks again)
        gap = known.gap
        if not self.enabled or gap is None or gap > GAP_MAX or self.hold is not None:
            return False
        users = self.policy.users
        mine = users[session.user]
        if any(users[s.user] is mine for s in waiting):
            return False   # (its user's other session takes the device: nothing to keep)
        if not any(s.op > gap and mine.vt <= users[s.user].vt for s in waiting):
            return False   # (a user of short ops is granted: the session waits one op for it)
        now = self.policy.clock()
        self.hold = Hold(session.sid, now + ahead, now + min(GAP_MAX, 2 * gap + GAP_SLACK))
        return True

    def back(self, sid: str) -> bool:
        """Session *sid* asks for the device: its gap is learnt. Whether it is back within
        its hold: it kept the device, so it was not idle and keeps its place (the policy
        wakes it without the capped credit, which would forgive it a turn at every step)."""
        self._learn_gap(sid)
        if self.hold is not None and self.hold.sid == sid:
            self._end_hold()
            return True
        return False

    def during_hold(self, waiting: list, ahead: float, preempt_gap: float) -> list:
        """Of *waiting*, those that may be granted while the device is held for a session in
        its gap: its user's other sessions, and users with credit against it, ahead by more
        than *preempt_gap* (an interactive user preempts it as it would a holder). The hold
        is over once its time is; with nobody to grant, the device is idle for it again
        (after *ahead*: the last holder's launched work)."""
        sid, since, until = self.hold
        now = self.policy.clock()
        if now >= until:
            self._end_hold()
            return waiting
        users = self.policy.users
        held = users[self.policy.sessions[sid].user]
        first = [s for s in waiting if users[s.user] is held   # (its user's own turn)
                 or users[s.user].vt + preempt_gap < held.vt]
        if first:
            self._pause_hold()
        elif since is None:
            self.hold = Hold(sid, now + ahead, until)
        return first

    def expire(self) -> bool:
        """Whether a hold ran out of time now (it is over, charged): the device is free."""
        if self.hold is not None and self.policy.clock() >= self.hold.until:
            self._end_hold()
            return True
        return False

    def deadline(self) -> float | None:
        """When the hold runs out, if there is one (the arbiter's timer must tick then)."""
        return self.hold.until if self.hold is not None else None

    # ------------------------------------------------------------ mechanics
    def _learn_gap(self, sid: str) -> None:
        """*sid* asks again: how long its client took since it ran out of work."""
        known = self.sessions.get(sid)
        if known is None or known.left_at is None:
            return
        gap = self.policy.clock() - known.left_at
        known.left_at = None
        if gap > GAP_LEARN:
            known.gap = None
        else:
            known.gap = gap if known.gap is None else known.gap + 0.3 * (gap - known.gap)

    def _end_hold(self) -> None:
        """The held session is back, or its hold ran out: charge it the idle time."""
        self._pause_hold()
        self.hold = None

    def _pause_hold(self, resume_at: float | None = None) -> None:
        """Charge the held session the device's idle time so far (it kept the device from
        the others), counting from the end of its launched work; the device is idle for it
        again from *resume_at* (None: someone with credit holds it meanwhile)."""
        sid, since, until = self.hold
        now = self.policy.clock()
        session = self.policy.sessions.get(sid)
        idle = min(now, until) - since if since is not None else 0.0
        if session is not None and idle > 0:
            session.vt += idle
            account = self.policy.users[session.user]
            account.vt += idle / account.weight
        self.hold = Hold(sid, resume_at, until)
