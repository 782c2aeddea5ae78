"""Who may put work on a device next: the arbiter's decisions, as plain logic.

A policy object serves one device. The arbiter thread feeds it what workers
say (``want``, ``used``, ``release``) and what the pool says (``attach``,
``detach``, weights), and sends the :class:`Grant` and :class:`Yield` actions it
returns. Time enters only through the injected ``clock`` (hand-over deadlines),
so tests drive a policy with a fake clock and no GPU.

``FairPolicy`` is weighted fair share over measured device time, in two levels
(users, then the sessions of a user), in the manner of Linux's CFS: each user
has a virtual time (device seconds received / weight) and the device goes to
the runnable user with the least. ``FifoPolicy`` hands the device over at the
end of a batch, in the order sessions asked, ignoring weights: the baseline
the fairness benchmark compares with. See docs/fair-share.md.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable, Union

from .gap_rule import GAP_LEARN, GAP_MAX, GAP_SLACK, GapRule

__all__ = ["Grant", "Yield", "Ready", "Action", "Policy", "FairPolicy", "FifoPolicy",
           "QUANTUM", "PERIOD", "CREDIT", "PREEMPT_GAP", "YIELD_TIMEOUT", "ALONE_REPORT_LAG", "AHEAD_CAP",
           "PREEMPT_PATIENCE", "MIN_PATIENCE", "DRAIN_SLACK", "GAP_MAX", "GAP_SLACK", "GAP_LEARN"]

#: The least device seconds a holder keeps the device while others wait (the pool's
#: ``quantum_ms``).
QUANTUM = 0.002
#: Device seconds in which every backlogged user gets one turn (the pool's ``period_ms``):
#: a holder's quantum is its user's share of the period (its weight over the runnable
#: users' weights, split among its runnable sessions), at least QUANTUM. Each hand-over
#: between two processes' CUDA contexts costs the GPU ~0.2 ms (benchmarks/handover.py:
#: two plain CuPy processes taking turns got 0.91 of one's GEMM rate at 2 ms turns, 0.97
#: at 10 ms, H100), so turns are as long as a 1-s share can afford: two equal users get
#: 10 ms each, weights 1:2:4 get 2.9, 5.7 and 11.4 ms. A backlogged user waits for the
#: others' turns; a user back from idle does not (preemption on arrival).
PERIOD = 0.02
#: Most device seconds a user returning from idle may be ahead by: this, or one of its turns
#: (its quantum) if longer. A closed loop that pauses between ops (a notebook syncing every
#: iteration) falls one turn of the others behind while it waits; a cap below that forgave
#: the rest of its deficit at every pause, and beside a weight-3 user with 15 ms turns a
#: weight-1 loop got 17 % of the device instead of 25 % (tests/gpu_backend/test_policy.py).
CREDIT = 0.002
#: A returning user preempts the holder if its virtual time is lower by more than this.
PREEMPT_GAP = 0.0005
#: A lone holder reports every 50 ms of device time (worker.lease); between reports the
#: arbiter assumes it keeps the device busy, for at most this long.
ALONE_REPORT_LAG = 0.06
#: Most device seconds of launched, unmeasured work a release is charged for ahead of the
#: report that measures it: a paced worker keeps about LEAD plus one op launched, so more is
#: an estimate gone wrong (an H100 run's release claimed 128 ms).
AHEAD_CAP = 0.005
#: Wall seconds a preempting newcomer waits for the preempted holder's launched work to
#: drain (the holder must see the yield, stop, and let at most LEAD plus its running op
#: finish: under 2 ms for ops of up to 1 ms). Longer, the holder is inside one long kernel
#: (or stalled), and the newcomer launches anyway, its ops time-sliced beside it by CUDA.
#: The pool's ``preempt_patience_ms`` sets it (``GPUWB_PREEMPT_PATIENCE_MS``), a diagnostic: 0
#: lets the newcomer launch beside
#: the holder's last work at once (under CUDA MPS the two then run side by side, not
#: time-sliced; docs/performance-log.md, run 55).
PREEMPT_PATIENCE = 0.005
#: The least wall seconds a preempting newcomer waits for a holder of short ops to drain,
#: and what it waits beyond two of the holder's ops (FairPolicy.patience_behind): the holder
#: must read the yield and its markers, a few hundred microseconds.
MIN_PATIENCE = 0.001
DRAIN_SLACK = 0.0005
#: Wall seconds a holder may overrun its hand-over before the next session is granted
#: anyway: it is inside one long kernel, which cannot be preempted; the two then share
#: the GPU by CUDA's time-slicing until it releases.
YIELD_TIMEOUT = 0.05


@dataclass(frozen=True)
class Grant:
    """*session*'s worker may run. ``quantum``: others wait, hand over after that many
    device seconds; ``batch_end``: others wait, hand over when the batch ends; neither:
    keep the device until told. ``grant``: this grant's number, which the worker's release
    names (see :meth:`Policy.release`). ``after``: (session, grant) whose launched work may
    still be running; wait for it to finish before launching (see arbiter/baton.py), at
    most ``patience`` wall seconds (None: the baton's own limit)."""
    session: str
    quantum: float | None = None
    batch_end: bool = False
    grant: int = field(default=0, compare=False)
    after: tuple | None = field(default=None, compare=False)
    patience: float | None = field(default=None, compare=False)
    #: ``share`` (arbiter/share.py): launch beside the others until told, say when out of
    #: work (``idle``) and when there is work again (``want``, not waited on)
    standing: bool = field(default=False, compare=False)


@dataclass(frozen=True)
class Yield:
    """The holder is told that others wait: hand over after ``after`` more device
    seconds (0: now), or with ``batch_end``, when the running batch ends. ``grant``: the
    number of the grant it concerns (a worker that has handed that one over ignores it)."""
    session: str
    after: float = 0.0
    batch_end: bool = False
    grant: int = field(default=0, compare=False)

    @property
    def preempts(self) -> bool:
        """Stop launching now: a newcomer with credit was granted (see arbiter/baton.py)."""
        return not self.after and not self.batch_end


@dataclass(frozen=True)
class Ready:
    """*session* is next in line, its grant due in about ``after`` device seconds: its
    worker should be awake (spinning) when it comes, so that it launches at once and the
    device does not idle while a sleeping thread wakes (tens of microseconds to a
    millisecond on a virtual machine)."""
    session: str
    after: float = field(default=0.0, compare=False)


Action = Union[Grant, Yield, Ready]


@dataclass
class _Session:
    sid: str
    user: str
    vt: float = 0.0            # device seconds received (within its user)
    runnable: bool = False     # holds the device or asked for it
    charged: float = 0.0       # the worker's cumulative busy seconds charged so far
    asked_at: float = 0.0      # when it last became runnable
    charged_at: float = 0.0    # when it was last charged (or granted)
    assumed: float = 0.0       # device seconds charged ahead of its reports (FairPolicy)
    op: float = 0.0            # device seconds of one of its ops lately (its worker's reports)


@dataclass
class _User:
    name: str
    weight: float = 1.0
    vt: float = 0.0            # device seconds received / weight
    min_vt: float = 0.0        # least vt of its runnable sessions; never decreases
    sessions: set = field(default_factory=set)

    def runnable(self, sessions: dict) -> bool:
        return any(sessions[s].runnable for s in self.sessions)


class Policy:
    """Sessions, users, the holder and its hand-over deadline: what every policy keeps."""

    name = "base"

    def __init__(self, clock: Callable[[], float] = time.monotonic,
                 yield_timeout: float = YIELD_TIMEOUT) -> None:
        self.clock = clock
        self.yield_timeout = yield_timeout
        self.sessions: dict[str, _Session] = {}
        self.users: dict[str, _User] = {}
        self.holder: str | None = None
        self.told = False                    # the holder knows others wait
        self.finishing: set[str] = set()     # told to stop, granted away, not yet released
        self._due: float | None = None       # wall time by which the holder must hand over
        self.grants = 0                      # grants made so far; the holder's is the last
        #: (session, grant, patience) that the last holder released or was told to yield,
        #: its work perhaps still running; the next grant waits for it (see Grant)
        self.handoff: tuple | None = None

    # -- the pool's side ------------------------------------------------------
    def attach(self, sid: str, user: str, weight: float = 1.0) -> None:
        account = self.users.get(user)
        if account is None:
            account = self.users[user] = _User(user, float(weight))
        account.sessions.add(sid)
        self.sessions[sid] = _Session(sid, user)

    def detach(self, sid: str) -> list[Action]:
        session = self.sessions.pop(sid, None)
        if session is None:
            return []
        self.finishing.discard(sid)
        account = self.users[session.user]
        account.sessions.discard(sid)
        if not account.sessions:
            del self.users[session.user]
        if self.holder == sid:
            self._vacate()
            return self._grant_next()
        return []

    def set_weight(self, user: str, weight: float) -> None:
        account = self.users.get(user)
        if account is not None:
            account.weight = float(weight)

    def lead_for(self, sid: str) -> float | None:
        """The lead *sid*'s worker is told (seconds of launched work); None: its own."""
        return None

    # -- the workers' side ----------------------------------------------------
    def want(self, sid: str) -> list[Action]:
        raise NotImplementedError

    def op_seconds(self, sid: str, seconds: Any) -> None:
        """*sid*'s worker says how long its ops run on the device lately (a moving average);
        anything but a finite number of seconds is ignored (the arbiter trusts nothing a
        worker sends to be well formed)."""
        session = self.sessions.get(sid)
        if session is not None and type(seconds) is float and 0.0 <= seconds < 3600.0:
            session.op = seconds

    def idle(self, sid: str, busy: float, ahead: float = 0.0) -> list[Action]:
        """*sid*'s worker, holding a standing grant (``share`` only), has run out of work;
        the other policies grant none, and only charge what it says."""
        return self.used(sid, busy)

    def done(self, sid: str, busy: float) -> list[Action]:
        """*sid*'s worker's work launched before its ``idle`` has run (``share`` only): the
        other policies only charge what it says."""
        return self.used(sid, busy)

    def used(self, sid: str, busy: float) -> list[Action]:
        """*sid*'s worker has measured *busy* device seconds in all (reported while it runs)."""
        session = self.sessions.get(sid)
        if session is not None:
            self._charge(session, busy)
        return []

    def release(self, sid: str, busy: float, want: bool, grant: int | None = None,
                ahead: float = 0.0, reading: bool = False) -> list[Action]:
        """*sid* handed over (or finished after being granted away); *want*: it has more work;
        *reading*: it handed over as its batch's closing read began (worker/pacing.py,
        Pacer.release_before_read): nothing is queued behind the read, and the device is
        kept for nobody meanwhile (no gap hold, arbiter/gap_rule.py): others' queued work
        fills the gap until its client comes back, and then it asks like anyone else;
        *grant*: the number of the grant it hands over; *ahead*: the worker's estimate of the
        device time of work it launched and has not measured yet, charged now (at most
        AHEAD_CAP) and settled by its next report like a lone holder's assumed progress
        (_charge). (Sent as part of *busy*, an estimate 128 ms too long was prepaid, and
        the session then ran uncharged for as long while an interactive user, "ahead" of
        it, waited: 72 ms in an H100 run's trace.) A release of an older grant than the one
        *sid* holds crossed that newer grant on the way (the worker gave up the device while
        we granted it again): it is charged, and otherwise ignored, since the worker will
        read the newer grant and hold the device, or hand it over, under that one."""
        session = self.sessions.get(sid)
        if session is None:
            return []
        ahead = min(max(0.0, ahead), AHEAD_CAP)
        self._charge(session, busy)
        self._assume(session, ahead)
        if grant is not None and self.holder == sid and grant != self.grants:
            return []
        self.finishing.discard(sid)
        ending = None
        if self.holder == sid:
            self._vacate()
            self.handoff = (sid, self.grants, None)   # (a stale grant returned above)
            ending = None if want or reading else (session, ahead)
        if want:
            self._wake(session)
        else:
            session.runnable = False
        return self._grant_next(ending=ending) if self.holder is None else []

    def tick(self) -> list[Action]:
        """Called once :meth:`next_deadline` has passed: the holder did not hand over in time."""
        if self.holder is None or self._due is None or self.clock() < self._due:
            return []
        late = self.holder
        self.finishing.add(late)
        self._vacate()
        return self._grant_next(exclude=late)

    def next_deadline(self) -> float | None:
        return self._due

    # -- mechanics ------------------------------------------------------------
    def _charge(self, session: _Session, busy: float) -> None:
        """A report: *busy* is the worker's cumulative device time. What was charged ahead of
        it (``assumed``, a lone holder's progress between reports) is settled: the report
        adds only what exceeds it, and nothing is given back if the holder used less."""
        session.charged_at = self.clock()
        delta = busy - session.charged
        if delta > 0:
            session.charged = busy
            extra = max(0.0, delta - session.assumed)
            session.vt += extra
            account = self.users[session.user]
            account.vt += extra / account.weight
        session.assumed = 0.0

    def _assume(self, session: _Session, seconds: float) -> None:
        """Charge *seconds* of device time not yet reported (settled by the next report)."""
        if seconds > 0:
            session.assumed += seconds
            session.vt += seconds
            account = self.users[session.user]
            account.vt += seconds / account.weight

    def _wake(self, session: _Session) -> None:
        if not session.runnable:
            session.runnable = True
            session.asked_at = self.clock()

    def _vacate(self) -> None:
        self.holder, self.told, self._due = None, False, None
        self.handoff = None   # late or gone: nothing to wait for

    def _granted(self, sid: str, **fields) -> Grant:
        self.grants += 1
        handoff, self.handoff = self.handoff, None
        if handoff is None or handoff[0] == sid:
            return Grant(sid, grant=self.grants, **fields)
        return Grant(sid, grant=self.grants, after=handoff[:2], patience=handoff[2], **fields)

    def _regrant(self, sid: str, **fields) -> list[Action]:
        """The holder asks for the device: its worker does not know it holds it (its grant
        was lost, or crossed a release). The same grant once more, with the policy's
        *fields*: a worker that waited for a grant it never read would wait for ever."""
        return [Grant(sid, grant=self.grants, **fields)]

    def _yield(self, **fields) -> Yield:
        """Tell the holder (under its current grant) that others wait."""
        return Yield(self.holder, grant=self.grants, **fields)

    def _waiting(self, exclude: str | None = None) -> list[_Session]:
        return [s for s in self.sessions.values()
                if s.runnable and s.sid != self.holder and s.sid != exclude]

    def _others_runnable(self, sid: str) -> bool:
        return any(s.runnable and s.sid != sid for s in self.sessions.values())

    def _grant_next(self, exclude: str | None = None, ending: tuple | None = None) -> list[Action]:
        """Grant the device to the session next in line (not *exclude*); *ending*: (the
        session, its launched work) that has just held it and run out of work."""
        raise NotImplementedError

    # -- status ---------------------------------------------------------------
    def snapshot(self) -> dict:
        """Per user: weight, virtual time, sessions, runnable and waiting ones; the holder."""
        users = {}
        for account in self.users.values():
            members = [self.sessions[s] for s in account.sessions]
            users[account.name] = {
                "weight": account.weight, "vt": account.vt, "sessions": len(members),
                "runnable": sum(s.runnable for s in members),
                "waiting": sum(s.runnable and s.sid != self.holder for s in members),
                "holding": any(s.sid == self.holder for s in members),
            }
        return {"policy": self.name, "holder": self.holder, "users": users,
                "finishing": sorted(self.finishing), "told": self.told}


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
                ahead: float = 0.0, reading: bool = False) -> list[Action]:
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
