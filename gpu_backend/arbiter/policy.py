"""Who may put work on a device next: the arbiter's decisions, as plain logic.

A policy object serves one device. The arbiter thread feeds it what workers
say (``want``, ``used``, ``release``) and what the pool says (``attach``,
``detach``, weights), and sends the :class:`Grant` and :class:`Yield` actions it
returns. Time enters only through the injected ``clock`` (hand-over deadlines),
so tests drive a policy with a fake clock and no GPU.

This module holds what every policy shares: the actions, the sessions and users, the
base :class:`Policy` and the constants of hand-overs. The policies that take turns,
``fair`` and ``fifo``, are in arbiter/turns.py; ``share``, side by side, in
arbiter/share.py. See docs/fair-share.md.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Union

__all__ = ["Grant", "Yield", "Ready", "Action", "Policy",
           "QUANTUM", "PERIOD", "CREDIT", "PREEMPT_GAP", "YIELD_TIMEOUT", "ALONE_REPORT_LAG", "AHEAD_CAP",
           "PREEMPT_PATIENCE", "MIN_PATIENCE", "DRAIN_SLACK"]

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
    own: float = 0.0           # of its busy seconds, those its worker charged at replays' own
    own_charged: float = 0.0   # costs (reported; charged so far): SharePolicy._charge


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

    def weighs(self, sid: str) -> bool:
        """Whether *sid*'s work is work the others' pacing is kept against (the arbiter's
        ``light_company``: a long replay beside only sessions that do not weigh is launched
        whole, arbiter/service.py). Under every policy but ``share`` every session does."""
        return True

    def company_began(self, sid: str) -> None:
        """*sid*'s worker, told it was alone, has company from now (the arbiter's count):
        it said nothing at its reads while alone (worker/lease.py), which ``share`` reads
        its spells from (SharePolicy.deep). Nothing to do under the other policies."""

    def deep(self, sid: str) -> bool:
        """Whether *sid*'s user keeps its work backlogged (the arbiter's ``deep_company``:
        arbiter/service.py, DEEP_COMPANY). Under every policy but ``share`` none is told so."""
        return False

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

    def own_seconds(self, sid: str, seconds: Any) -> None:
        """*sid*'s worker says how much of its cumulative ``busy`` it charged at replays'
        own costs (worker/replay_prices.py), said with that ``busy``: ``share`` does not
        scale that part by the device's sharing (SharePolicy._charge); the other policies
        charge ``busy`` whole either way. Anything but a finite, non-negative number of
        seconds that never decreases is ignored, as :meth:`op_seconds` ignores it."""
        session = self.sessions.get(sid)
        if session is not None and type(seconds) is float and session.own <= seconds < 1e9:
            session.own = seconds

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
                ahead: float = 0.0, reading: bool = False,
                done_follows: bool = False) -> list[Action]:
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
        read the newer grant and hold the device, or hand it over, under that one.
        *done_follows*: the worker says ``done`` once its launched work has run (a standing
        grant's release, ``share`` only: :meth:`SharePolicy.release`)."""
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
