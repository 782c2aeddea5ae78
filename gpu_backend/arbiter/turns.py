"""The policies that take turns: one session at a time holds the device and hands it over.

``FairPolicy`` is weighted fair share over measured device time, in two levels
(users, then the sessions of a user), in the manner of Linux's CFS: each user
has a virtual time (device seconds received / weight) and the device goes to
the runnable user with the least. ``FifoPolicy`` hands the device over at the
end of a batch, in the order sessions asked, ignoring weights: the baseline
the fairness benchmark compares with. Both are plain logic over the base of
arbiter/policy.py (time only through its clock). See docs/fair-share.md.
"""

from __future__ import annotations

import time
from collections import deque
from typing import Callable

from .gap_rule import GapRule
from .policy import (ALONE_REPORT_LAG, CREDIT, DRAIN_SLACK, MIN_PATIENCE, PERIOD, PREEMPT_GAP,
                     PREEMPT_PATIENCE, QUANTUM, YIELD_TIMEOUT, Action, Policy, Ready, _Session, _User)

__all__ = ["FairPolicy", "FifoPolicy"]


class FairPolicy(Policy):
    """Weighted fair share over measured device time (docs/fair-share.md, "fair"), with the
    gap rule (arbiter/gap_rule.py) as a part it holds, ``gaps``."""

    name = "fair"

    def __init__(self, clock: Callable[[], float] = time.monotonic, *, quantum: float = QUANTUM,
                 period: float = PERIOD, credit: float = CREDIT, preempt_gap: float = PREEMPT_GAP,
                 yield_timeout: float = YIELD_TIMEOUT,
                 preempt_patience: float = PREEMPT_PATIENCE, patience_by_op: bool = True,
                 gap_rule: bool = True) -> None:
        super().__init__(clock, yield_timeout)
        self.quantum = quantum   # the least quantum
        self.preempt_patience = preempt_patience
        self.patience_by_op = patience_by_op
        #: the gap rule: a session between two batches may be kept the device (*gap_rule*
        #: False, a diagnostic: nobody is kept the device so)
        self.gaps = GapRule(self, enabled=gap_rule)
        self.period = period     # 0: every quantum is `quantum`
        self._held_for = 0.0     # the holder's quantum (what the next in line is told)
        self.credit = credit
        self.preempt_gap = preempt_gap
        self.min_vt = 0.0   # least vt of the runnable users; never decreases
        self._ready: str | None = None   # the session last told it is next in line

    def attach(self, sid: str, user: str, weight: float = 1.0) -> None:
        super().attach(sid, user, weight)
        self.gaps.attach(sid)

    def detach(self, sid: str) -> list[Action]:
        if self.gaps.detach(sid):   # it was held for: gone, so nothing to charge
            actions = super().detach(sid)
            return actions or (self._grant_next() if self.holder is None else [])
        return super().detach(sid)

    def tick(self) -> list[Action]:
        if self.gaps.expire() and self.holder is None:   # the hold ran out: the device is free
            return self._grant_next()
        return super().tick()

    def next_deadline(self) -> float | None:
        due, until = super().next_deadline(), self.gaps.deadline()
        if until is None:
            return due
        return until if due is None else min(due, until)

    def want(self, sid: str) -> list[Action]:
        session = self.sessions.get(sid)
        if session is None:
            return []
        if sid == self.holder:
            return self._regrant(sid, quantum=self.quantum_for(sid) if self._others_runnable(sid) else None)
        self._charge_lone_holder()
        if self.gaps.back(sid):   # back within its hold: it keeps its place
            super()._wake(session)   # (the plain wake: runnable, no credit reckoning)
        self._wake(session)
        if self.holder is None:
            return self._grant_next()
        holder = self.sessions[self.holder]
        mine, theirs = self.users[session.user], self.users[holder.user]
        if mine is not theirs and mine.vt + self.preempt_gap < theirs.vt:
            # a user back from idle with credit: the holder stops launching now, and the
            # newcomer is granted at once; it launches when the holder's launched work has
            # drained (the baton), or after PREEMPT_PATIENCE if the holder sits in a long
            # kernel. (Launching at once, its first op ran time-sliced beside the holder's
            # GEMMs for up to 3 ms on an H100, was charged them, spent its quantum inside
            # its own request and handed the device back: 12-52 ms, run 17's trace.)
            told = self._yield(after=0.0)
            self.finishing.add(holder.sid)
            self._vacate()
            self.handoff = (holder.sid, told.grant, self.patience_behind(holder))
            return [told, *self._grant_next(exclude=holder.sid)]
        if not self.told:   # the holder had the device to itself until now
            return [self._yield(after=self._start_turn(holder.sid)), *self._next_in_line()]
        return self._next_in_line()

    def patience_behind(self, holder: _Session) -> float:
        """How long a preempting newcomer waits for *holder*'s launched work to drain before
        it launches anyway. A paced holder has at most its running op and LEAD launched, so
        the drain takes about one op: the newcomer waits two of the holder's ops and
        DRAIN_SLACK (at least MIN_PATIENCE, at most PREEMPT_PATIENCE); a holder slower to
        stop than that is not waited for longer (beside 0.76 ms GEMMs an interactive op's
        p99 was 8.2 ms under `fair`, 3.6 ms under `none`, run 80). A holder whose ops run
        longer than PREEMPT_PATIENCE sits inside a kernel no wait outlasts: the newcomer
        launches at once, time-sliced beside it by CUDA, as with no arbiter (beside 22 ms
        GEMMs: 12.7 against 5.6 ms, run 79). Not yet reported: PREEMPT_PATIENCE."""
        op = holder.op if self.patience_by_op else 0.0
        if op > self.preempt_patience:
            return 0.0
        if op <= 0.0:
            return self.preempt_patience
        return min(self.preempt_patience, max(MIN_PATIENCE, 2 * op + DRAIN_SLACK))

    def _start_turn(self, sid: str) -> float:
        """The holder *sid* now knows others wait: its turn's length, and the deadline past
        which it is granted away (a long kernel)."""
        self.told = True
        self._held_for = self.quantum_for(sid)
        self._due = self.clock() + self._held_for + self.yield_timeout
        return self._held_for

    def quantum_for(self, sid: str) -> float:
        """Device seconds *sid* may hold the device while others wait: its user's share of
        the period among the runnable users, split among the user's runnable sessions, at
        least the least quantum (see PERIOD)."""
        account = self.users[self.sessions[sid].user]
        weights = sum(u.weight for u in self.users.values()
                      if u is account or u.runnable(self.sessions))
        mine = sum(self.sessions[s].runnable for s in account.sessions) or 1
        return max(self.quantum, self.period * account.weight / weights / mine)

    def snapshot(self) -> dict:
        """... and the virtual clock below which a user returning from idle is not set."""
        return {**super().snapshot(), "min_vt": self.min_vt}

    def _pick(self, waiting: list[_Session]) -> _Session:
        """The session to grant next: of the user with the least virtual time, its session
        with the least."""
        by_user: dict[str, list[_Session]] = {}
        for s in waiting:
            by_user.setdefault(s.user, []).append(s)
        user = min(by_user, key=lambda u: (self.users[u].vt, u))
        return min(by_user[user], key=lambda s: (s.vt, s.asked_at, s.sid))

    def _next_in_line(self) -> list[Action]:
        """Tell the session that would be granted next, if it was not told already."""
        waiting = self._waiting()
        if not waiting:
            return []
        nxt = self._pick(waiting).sid
        if nxt == self._ready:
            return []
        self._ready = nxt
        return [Ready(nxt, self._held_for if self.holder is not None else 0.0)]

    def _wake(self, session: _Session) -> None:
        if session.runnable:
            return
        account = self.users[session.user]
        credit = max(self.credit, self.quantum_for(session.sid))
        if not account.runnable(self.sessions):
            self._advance_min_vt()
            # capped credit: an idle user comes back at most `credit` device seconds ahead;
            # one that got more than its share keeps its debt (a closed loop pausing between
            # ops gains nothing by pausing)
            account.vt = max(account.vt, self.min_vt - credit / account.weight)
        session.vt = max(session.vt, account.min_vt - credit)
        super()._wake(session)

    def _charge(self, session: _Session, busy: float) -> None:
        super()._charge(session, busy)
        self._advance_user_min_vt(self.users[session.user])
        self._advance_min_vt()

    def _advance_user_min_vt(self, account: _User) -> None:
        runnable = [self.sessions[s].vt for s in account.sessions if self.sessions[s].runnable]
        if runnable:
            account.min_vt = max(account.min_vt, min(runnable))

    def _advance_min_vt(self) -> None:
        runnable = [u.vt for u in self.users.values() if u.runnable(self.sessions)]
        if runnable:
            self.min_vt = max(self.min_vt, min(runnable))

    def _charge_lone_holder(self) -> None:
        """Before a request is weighed: a lone holder reports rarely (every 50 ms), and is
        assumed to have kept the device busy since its last report (at most
        ALONE_REPORT_LAG in all); that progress is *charged* now, ahead of the report that
        settles it (_charge). Charged, not only assumed: a user returning from idle starts
        from it (its capped credit), and a holder that then reported less was left that
        far behind, and granted again and again while the newcomer waited (an interactive
        request waited 60 ms in the VM's arbiter trace). Charging a lone holder for time it
        held the device idle costs it nothing against anyone: nobody else wanted it then."""
        if self.holder is None or self.told:
            return
        holder = self.sessions[self.holder]
        lag = min(max(0.0, self.clock() - holder.charged_at), ALONE_REPORT_LAG - holder.assumed)
        if lag > 0:
            holder.charged_at = self.clock()
            self._assume(holder, lag)
            self._advance_user_min_vt(self.users[holder.user])

    def _grant_next(self, exclude: str | None = None, ending: tuple | None = None) -> list[Action]:
        if ending is not None:   # a holder out of work may be kept the device (arbiter/gap_rule.py)
            session, ahead = ending
            self.gaps.ran_out(session, ahead, self._waiting())
        waiting = self._waiting(exclude)
        if self.gaps.hold is not None and waiting:
            waiting = self.gaps.during_hold(waiting, ending[1] if ending is not None else 0.0,
                                            self.preempt_gap)
        if not waiting:
            return []
        chosen = self._pick(waiting)
        self.holder = chosen.sid
        self._ready = None
        if chosen.sid in self.finishing:
            # granted back before it released the grant it was preempted from: its work since
            # its last report is still unreported (a lone holder reports every 50 ms), so its
            # progress keeps counting from that report. Counted from now instead, a returning
            # user found it "behind" and waited for its quantum (an interactive user beside
            # a GEMM loop: its slowest requests, in the arbiter's trace on the NumPy device)
            self.finishing.discard(chosen.sid)
        else:
            chosen.charged_at = self.clock()
        if self._others_runnable(chosen.sid):
            return [self._granted(chosen.sid, quantum=self._start_turn(chosen.sid)), *self._next_in_line()]
        self.told, self._due = False, None
        return [self._granted(chosen.sid)]


class FifoPolicy(Policy):
    """First come, first served: the holder hands over when its batch ends if others wait."""

    name = "fifo"

    def __init__(self, clock: Callable[[], float] = time.monotonic,
                 yield_timeout: float = YIELD_TIMEOUT) -> None:
        super().__init__(clock, yield_timeout)
        self.queue: deque[str] = deque()

    def want(self, sid: str) -> list[Action]:
        session = self.sessions.get(sid)
        if session is None:
            return []
        if sid == self.holder:
            return self._regrant(sid, batch_end=self._others_runnable(sid))
        self._wake(session)
        if sid not in self.queue:
            self.queue.append(sid)
        if self.holder is None:
            return self._grant_next()
        if not self.told:
            self.told = True
            return [self._yield(batch_end=True)]
        return []

    def release(self, sid: str, busy: float, want: bool, grant: int | None = None,
                ahead: float = 0.0, reading: bool = False,
                done_follows: bool = False) -> list[Action]:
        if grant is not None and self.holder == sid and grant != self.grants:
            return super().release(sid, busy, want, grant, ahead, reading)   # stale: charged only
        if sid in self.queue:
            self.queue.remove(sid)
        if want and sid in self.sessions:
            self.queue.append(sid)   # to the back of the line
        return super().release(sid, busy, want, grant, ahead, reading)

    def detach(self, sid: str) -> list[Action]:
        if sid in self.queue:
            self.queue.remove(sid)
        return super().detach(sid)

    def _grant_next(self, exclude: str | None = None, ending: tuple | None = None) -> list[Action]:
        for sid in list(self.queue):
            session = self.sessions.get(sid)
            if session is None or not session.runnable or sid == exclude:
                continue
            self.queue.remove(sid)
            self.holder = sid
            self.told = self._others_runnable(sid)
            self._due = None   # a batch runs to its end, however long
            return [self._granted(sid, batch_end=self.told)]
        return []
