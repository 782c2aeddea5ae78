"""``share``: weighted fair share with the device never held for one session: every session
whose user is not ahead of its share launches at once, beside the others, and only a user
ahead is held back, and only while someone behind it has work.

Why (issue 51): ``fair`` (turns.py) lets one session at a time launch, and hands the device
over by draining it: the GPU idles while the last holder's work finishes, the baton passes
and the next holder wakes, and the next first op pays the switch between two processes'
contexts. Users that sync every few milliseconds hand over at every read, and measured from
their side the pool lost 5–12 % of the GPU to it where CUDA's own time-slicing (``none``)
lost 2–5 % (docs/fair-share.md, "Users that sync every few milliseconds"). Here the device
is never drained for anyone: sessions run side by side as under ``none`` (CUDA time-slices
their contexts while both have work), which keeps the GPU as busy as ``none`` keeps it,
and the weights are kept by withholding launches from whoever is ahead.

- **Standing grants.** A session admitted holds a grant with no quantum and no hand-over
  (``Grant.standing``): it launches whenever it has work, says when it has none (``idle``)
  and when it has some again (``want`` while holding, not waited on). A session alone never
  hears from the arbiter again, as under ``fair``, and says neither until it is told of
  company (worker/lease.py, ``idle_quiet``: two messages a read, and two wakes of the
  arbiter's thread, that concerned nobody).
- **Admission by lag.** Each user's virtual time is device seconds / weight, as under
  ``fair``. Among the users with work, the least virtual time ``m`` is the reference; a
  user whose lag ``(vt - m) × weight`` exceeds ``window`` (device seconds it has run ahead)
  is told to stop launching (a ``Yield``: its launched work runs out, it releases and waits);
  it is admitted again once its lag is back under half the window. A user with work is never
  held back while nobody behind it has work: the device goes idle for nobody.
- **Overlap-aware charging.** Two sessions' kernels share the GPU, time-sliced, so each
  worker's CUDA events measure its own work and the others' slices between. Each report is
  scaled by the mean of ``1/k`` over the time since the session's last one, ``k`` the
  sessions admitted with work over that time (processor sharing: what CUDA's time-slicing
  gives contexts with work). Not on the NumPy device, whose reports are each worker's own
  CPU time (``own_time``): they are charged as they come.
- **Replays at their own cost.** Where the workers price them (``GPUWB_SHARE_PRICED``,
  worker/replay_prices.py), a held stretch's replay beside others is charged what it costs
  alone (its least span measured), told apart as ``own`` with each report: that part is
  not scaled by ``1/k``. The users' side counts replays at their own cost too (a user's
  rate over its rate alone), so the split charged is the split the users see; scaled spans
  are right on average and off by tens of per cent batch by batch, which in the
  simulation (benchmarks/share_error_sim.py) is all of the one-second error. Measured on
  an H200 (runs 321-324) it lost: a light user is never alone, so its least span stays
  1.5-2x its cost alone and it is overcharged for good (sync-1:2:4 6.8 / 16.4 % against
  1.7 / 7.1 % unpriced): off by default, a diagnostic (docs/fair-share.md).
- **A read's tail.** A worker says ``idle`` as its batch's closing read begins, with up to
  a lead of launched work still to run (``ahead``: its estimate, in wall time). That work
  shares the device: the session stays in ``k`` until its worker says the work is ``done``
  (after the read), and its user counts as having work until the estimate, less
  ``TAIL_EARLY``, so that the users held back for it launch as it ends. Counted out at
  ``idle``, its tail was charged whole although it ran beside the others, the others were
  charged as if alone meanwhile, and a user held back was let go for the whole tail: in the
  simulation, users 1:2:4 whose 8 ms batches said ``idle`` 4 ms (wall) before their end got
  0.20 / 0.40 / 0.40 of the device.
- **Anticipation** (arbiter/anticipation.py): a user back within a round trip from short
  batches is still counted among the users with work for twice its recent gaps, so that the
  users held back for it are not let go into its gap.
- **Filling an anticipated gap** (``fill``, the pool's ``share_fill``; off by default: on
  H100 runs 32–35 no GPU scenario let a fill in, docs/fair-share.md, "The gap fill on an
  H100"): a user held back runs what an anticipated user's expected gap holds
  (:meth:`_fill_gap`).
- **A deep lead for the heaviest users** (``deep_lead``, the pool's ``share_deep_lead_ms``,
  16 ms by default; a policy made alone has none): :meth:`lead_for`.
- **A release's tail**: a session held back that still has work counts on the device until
  its worker's ``done``, not its estimate (:meth:`release`, ``done_follows``).
- **Light users** (``light_gap``, the pool's ``share_light_gap_ms``, 4 ms by default; a
  policy made alone has none): an interactive user holds nobody back for the first
  ``LIGHT_BURST`` of its batches (:meth:`_light`).
- **Deep sessions**, those that keep their work backlogged (the arbiter's ``deep_company``):
  arbiter/share_spells.py (:class:`Spells`, which this policy takes its rules from).
- **A silent session's part assumed** (``assume_silent``, the pool's
  ``share_assume_silent``, on by default since run 330; a policy made alone has none):
  arbiter/share_silence.py (:class:`Silence`, which this policy takes its rules from).
- **Returning from idle**, a loop's round trips charged, a device left idle forgetting:
  arbiter/share_returns.py (:class:`Returns`, which this policy takes its rules from).
"""

from __future__ import annotations

import math
import time
from typing import Callable

from .anticipation import ANTICIPATE_BATCH, LIGHT_BATCH, LIGHT_BURST, Anticipation
from .policy import ALONE_REPORT_LAG, AHEAD_CAP, CREDIT, Action, Grant, Policy, Yield, _Session
from .share_returns import FORGET_IDLE, Returns
from .share_silence import OWN_SILENT_AFTER, SILENT_CAP, Silence, silent_after
from .share_spells import Spells

__all__ = ["SharePolicy", "WINDOW", "BANK", "TAIL_CAP", "SILENT_CAP", "OWN_SILENT_AFTER",
           "LIGHT_BURST", "LIGHT_BATCH", "FORGET_IDLE"]

#: Device seconds (weighted) a user with work may run ahead of the user furthest behind that
#: has work, before it is held back; it is let go again at half this. Twice a GEMM of a few
#: milliseconds: shorter, a pair of users flips at every report; longer, the shares over a
#: second drift (a 2 ms window on users 1:2:4 is a swing of at most 2 ms in a second).
WINDOW = 0.004
#: Most device seconds (weighted by the lesser of two users' weights) a user back from idle
#: may be behind the users with work: four windows (an interactive user, back every
#: 10 ms having used little, would otherwise bank credit at every pause).
BANK = 4 * WINDOW
#: Most wall seconds a session that said ``idle`` is counted on the device for its launched
#: work (its worker's estimate; a wrong one bends only the split of the time meanwhile).
TAIL_CAP = 0.1
#: An idle session's user stops counting as having work this much before its worker's
#: estimate of its launched work's end: the launches of users held back for it reach the
#: device as that work ends, not after (their grant's message and launch take about this).
TAIL_EARLY = 0.0005
#: The shortest expected gap of an anticipated user that a user held back is let into
#: (``_fill_gap``): a grant's message and the first launch take about 0.1 ms.
FILL_MIN = 0.0002


class SharePolicy(Returns, Silence, Spells, Policy):
    """See the module's docstring. ``holder`` stays None: many sessions may hold at once
    (``admitted``)."""

    name = "share"

    def __init__(self, clock: Callable[[], float] = time.monotonic, *, window: float = WINDOW,
                 credit: float = CREDIT, own_time: bool = False, fill: bool = False,
                 deep_lead: float = 0.0, light_gap: float = 0.0, gap_charge: float = 0.0,
                 forget_idle: float = FORGET_IDLE, assume_silent: bool = False,
                 anticipate_batch: float = ANTICIPATE_BATCH) -> None:
        super().__init__(clock)
        #: a session on the device that has not reported for longer than the window is
        #: assumed to use its part of the device meanwhile (:meth:`_assume_silent`; the
        #: pool's ``share_assume_silent``, on by default)
        self.assume_silent = assume_silent
        #: when the silent sessions were last looked at (:meth:`_assume_silent`): the next
        #: look's deadline counts from it
        self._silent_looked = -math.inf
        #: a session's part of the device since its last charge past which it is silent
        self.silent_after = silent_after(window, own_time)
        #: a user back after the device went unused this long (wall seconds) starts every
        #: user level (:meth:`_forget_if_idle`; 0: never)
        self.forget_idle = forget_idle
        self.window = window
        #: the longest gap between a user's batches (wall seconds) charged to it as its own
        #: time when it comes back (:meth:`_charge_gap`; 0: none is)
        self.gap_charge = gap_charge
        #: wall seconds of round trips charged so far (snapshot: the pool's status)
        self.gaps_charged = 0.0
        #: times a device left idle made every user level (:meth:`_forget_if_idle`; snapshot)
        self.forgotten = 0
        #: users whose gaps between batches average at least this (wall seconds) are light:
        #: the first LIGHT_BURST of each of their batches holds nobody back (:meth:`_light`;
        #: 0: no user is)
        self.light_gap = light_gap
        #: when the first user light at the last settle stops being light (a deadline: the
        #: arbiter settles again then, and holds the others back for it from there)
        self._light_until = math.inf
        #: the lead a session of the heaviest user attached launches with (:meth:`lead_for`;
        #: 0: every session keeps its worker's own, SHARE_LEAD)
        self.deep_lead = deep_lead
        #: let users held back into an anticipated user's expected gap (``_fill_gap``)
        self.fill = fill
        #: the device's reports are each session's own device time (the NumPy device's CPU
        #: time), not spans of a timeline others' slices share: charged as they come
        self.own_time = own_time
        self.credit = max(credit, window)   # (a user back from a pause holds back nobody level)
        self.min_vt = 0.0              # least vt of the users with work; never decreases
        self.admitted: dict[str, int] = {}   # session -> the number of its standing grant
        self.yielding: set[str] = set()      # admitted, told to stop, not yet released
        #: sessions let into an anticipated user's gap: the device seconds they may run
        #: (their grant's quantum; they are in ``yielding`` too: their quantum ends them),
        #: and the device time they had reported when granted
        self.filling: dict[str, tuple[float, float]] = {}
        #: the share clock: for each session on the device (admitted with work), the time
        #: since its last charge and the integral of 1/k over it
        self._on: set[str] = set()
        self._shares: dict[str, list[float]] = {}
        #: sessions that said ``idle`` with launched work still to run: until when they count
        #: as having work (their worker's estimate, less TAIL_EARLY); and those with launched
        #: work on the device but nothing to say of it: until when they count on it (an idle
        #: session's ``done`` ends it sooner; TAIL_CAP at most), or a released one's estimate
        self._tails: dict[str, float] = {}
        self._draining: dict[str, float] = {}
        self._since = clock()
        #: when a session last had work on the device (_advance): a user with work has, or
        #: is held back for one that has, but for an anticipated user's gap, which
        #: _forget_if_idle asks about itself
        self._worked_at = self._since
        self.bank = max(4 * window, self.credit)
        #: for each user out of work: the virtual seconds it would have had since, had it
        #: had work all along (``dt × w / (W + w)`` device seconds over its weight ``w``, W
        #: the weights of the users with work): its return forgives only these
        self._left: dict[str, float] = {}
        #: which users that ran out of work are waited for (arbiter/anticipation.py)
        self.anticipation = Anticipation(anticipate_batch)
        #: per session with work, when its present spell began (arbiter/share_spells.py)
        self._spells: dict[str, float] = {}

    # -- the pool's side ------------------------------------------------------
    def attach(self, sid: str, user: str, weight: float = 1.0) -> None:
        super().attach(sid, user, weight)
        self._shares[sid] = [0.0, 0.0]

    def detach(self, sid: str) -> list[Action]:
        if sid not in self.sessions:
            return []
        self._integrate()
        self._off(sid)
        self.admitted.pop(sid, None)
        self.yielding.discard(sid)
        self.filling.pop(sid, None)
        self._shares.pop(sid, None)
        self._spell_ends(sid)
        user = self.sessions[sid].user
        super().detach(sid)
        if user not in self.users:   # (its last session: a user attached later starts anew)
            self._left.pop(user, None)
            self.anticipation.forget(user)
        return self._settle()

    def lead_for(self, sid: str) -> float | None:
        """The lead *sid*'s worker launches with beside others (seconds of its device work;
        None: its own, worker/pacing.py SHARE_LEAD): ``deep_lead`` for a session whose user
        weighs at least as much as every other user attached to the device. Work launched
        is work no hold-back takes back: a user held back runs up to its lead past the
        window. A light user's overshoot is a larger part of its smaller share (syncing
        users 1:2:4 all at 16 ms: 18-21 % off their weights, H200 run 79), a heavy one's a
        smaller part of its larger share; users of equal weights overshoot alike and their
        split does not move, while the deeper queue keeps the device busy across the others'
        reads and re-admissions (syncing 1:1 at 16 ms: `none`'s work, 0.971 / 0.990 against
        0.974 / 0.992; at 4 ms 0.926 / 0.936). So only the heaviest users go deep."""
        session = self.sessions.get(sid)
        if not self.deep_lead or session is None:
            return None
        weight = self.users[session.user].weight
        return self.deep_lead if all(weight >= u.weight for u in self.users.values()) else None

    def weighs(self, sid: str) -> bool:
        """Whether *sid*'s user is one the others are paced against: not light by its
        history (its gaps average at least ``light_gap``, its batches at most LIGHT_BATCH:
        Anticipation.light_by_history), or light by it but in a batch that has run past its
        LIGHT_BURST (:meth:`_light` is over: the others are held back for it from then, and
        a long replay launched whole would keep it waiting past their lead). A light user
        holds nobody back for its batches' first LIGHT_BURST, so a long replay of another's
        paced op by op for it stops nothing it needs stopped, and loses the replay's graphs
        and run ahead: see arbiter/service.py, ``light_company``. A new user weighs (nothing
        is known). When a light user's batch runs past its burst is a deadline of the
        policy's (``_light_until``): the arbiter counts the company again then."""
        session = self.sessions.get(sid)
        if session is None or not self.light_gap:
            return True
        user = session.user
        if not self.anticipation.light_by_history(user, self.light_gap):
            return True
        return self.users[user].runnable(self.sessions) and not self._light(user)

    # -- the workers' side ----------------------------------------------------
    def want(self, sid: str, holding: bool = False) -> list[Action]:
        """*sid* has work. *holding*: its worker holds a standing grant and has launched
        already (it went idle and has work again); otherwise it waits for a grant (one it
        holds was lost or crossed: it is sent again)."""
        session = self.sessions.get(sid)
        if session is None:
            return []
        self._integrate()
        self._charge_lone()
        self._wake(session)
        self._spell_goes_on(sid)
        actions: list[Action] = []
        if sid in self.admitted:   # (on the device from now: a drain no longer ends it)
            self._tails.pop(sid, None)
            self._draining.pop(sid, None)
            if not holding and (sid not in self.yielding or sid in self.filling):
                fill = self.filling.get(sid)
                actions.append(Grant(sid, quantum=fill[0] if fill else None,
                                     grant=self.admitted[sid], standing=True))
            self._on.add(sid)
        return actions + self._settle()

    def idle(self, sid: str, busy: float, ahead: float = 0.0) -> list[Action]:
        """*sid*'s worker holds a standing grant and has run out of work (its batch's last
        op, a read, has begun, or its batch ended). *ahead*: the wall seconds its launched
        work is estimated to run still; it shares the device until its ``done``, and users
        held back for it go as it is estimated to end (at once without any)."""
        session = self.sessions.get(sid)
        if session is None:
            return []
        self._integrate()
        self._charge(session, busy)
        self._spell_ends(sid)
        ahead = min(max(0.0, ahead), TAIL_CAP)
        if ahead > 0 and sid in self._on:
            now = self.clock()
            self._draining[sid] = now + TAIL_CAP
            if ahead > TAIL_EARLY:
                self._tails[sid] = now + ahead - TAIL_EARLY
                return self._settle()
        else:
            self._off(sid)
        self._out_of_work(session)
        return self._settle()

    def done(self, sid: str, busy: float) -> list[Action]:
        """*sid*'s work launched before it said ``idle`` has run (its read returned): charged,
        and off the device. A tail counted out at its estimate whose work ran on until now
        (the estimate was the per-op time of a quieter device) leaves its user away from
        now, not from the estimate: the time between was its work's, charged by this
        report, and, counted as absence too, its user's return charged it twice (a syncing
        user with a 16 ms lead, whose reads begin as its whole batch is launched: 1.06 s of
        its 3.66 s charged at its returns, H200 run 82)."""
        session = self.sessions.get(sid)
        if session is None:
            return []
        self._charge(session, busy)
        if sid in self._draining:
            if sid in self._tails:
                self._out_of_work(session)
            elif not session.runnable:
                self._away_from_now(session)
            self._off(sid)
        return self._settle()

    def used(self, sid: str, busy: float) -> list[Action]:
        session = self.sessions.get(sid)
        if session is None:
            return []
        self._charge(session, busy)
        return self._settle()

    def release(self, sid: str, busy: float, want: bool, grant: int | None = None,
                ahead: float = 0.0, reading: bool = False,
                done_follows: bool = False) -> list[Action]:
        """*sid* gave its standing grant back (told to stop); *want*: it still has work, and
        waits to be admitted again. *ahead*: the wall seconds its launched work should still
        run (it gives its grant back without waiting for that work): the session shares the
        device that long, and is charged its part of it at once (``ahead / k``; its next
        report settles it), so that it is not let go again before that work counts.
        (Charged whole, as ``fair`` charges it, users held back at their reads were charged
        5 ms at each release, up to three times their part: users 1:2:4 that sync got
        0.13 / 0.28 / 0.55 of their rates alone, H100 run 20. Not charged until its next
        report, it was let go again too soon: in the simulation, 13 % off the weights.)
        *done_follows* (``d``): its worker says ``done`` when that work has run, and the
        session counts on the device till then (TAIL_CAP at most), not till *ahead*: beside
        another context's 22 ms kernel a long user's estimate fell short by tens of
        milliseconds (its median 11 ms, a tenth of them 0), the user beside it counted alone
        meanwhile was charged the whole device for half of it, and was held back for it
        (long vs small: the small user 0.40-0.44 of its rate alone under ``share``, 0.465
        with no hold-back at all; H200 runs 87 and 89)."""
        session = self.sessions.get(sid)
        if session is None:
            return []
        self._integrate()
        self._charge(session, busy)
        if grant is not None and sid in self.admitted and grant != self.admitted[sid]:
            return []   # (an older grant's release crossed the newer one: charged only)
        self.admitted.pop(sid, None)
        self.yielding.discard(sid)
        self.filling.pop(sid, None)
        ahead = min(max(0.0, ahead), TAIL_CAP)
        if ahead > 0 and sid in self._on:
            self._assume(session, min(ahead / len(self._on), AHEAD_CAP))
            self._tails.pop(sid, None)
            self._draining[sid] = self.clock() + (TAIL_CAP if done_follows else ahead)
        else:
            self._off(sid)
        if want:   # (with work still: its spell goes on, or begins where it had said idle
            self._wake(session)   # and its work came before it read the yield, no want)
            self._spell_goes_on(sid)
        else:
            self._spell_ends(sid)
            self._out_of_work(session)
        return self._settle()

    def tick(self) -> list[Action]:
        """An idle session's launched work estimated done, or a user anticipated not back:
        users held back for it may go."""
        deadline = self.next_deadline()
        if deadline is not None and deadline <= self.clock():
            return self._settle()   # (it integrates, which counts tails out, and expires)
        return []

    def next_deadline(self) -> float | None:
        expected = self.anticipation.next_deadline()
        deadline = min(self._silent_deadline(), min(self._draining.values(), default=math.inf),
                       min(self._tails.values(), default=math.inf),
                       math.inf if expected is None else expected,
                       self._light_until)
        return None if deadline == math.inf else deadline

    # -- mechanics ------------------------------------------------------------
    def _off(self, sid: str) -> None:
        """*sid* has nothing on the device any more."""
        self._on.discard(sid)
        self._tails.pop(sid, None)
        self._draining.pop(sid, None)

    def _integrate(self) -> None:
        """Advance the share clock to now (before the sessions on the device change),
        taking in the tails' deadlines on the way: a tail estimated over (its user has no
        work), a drain whose ``done`` never came (off the device)."""
        now = self.clock()
        while self._draining:
            tail = min(self._tails.items(), key=lambda item: item[1], default=None)
            drain = min(self._draining.items(), key=lambda item: item[1])
            sid, end = tail if tail is not None and tail[1] <= drain[1] else drain
            if end > now:
                break
            self._advance(end)
            if self._tails.pop(sid, None) is not None:
                self._out_of_work(self.sessions[sid], end)
            else:
                self._off(sid)
                self._away_from_now(self.sessions[sid], end)
        self._advance(now)

    def _advance(self, now: float) -> None:
        dt = now - self._since
        self._since = now
        if dt <= 0:
            return
        if self._on:   # (a user with work is on the device, or held back for one that is)
            self._worked_at = now
        if self._left:
            weights = sum(u.weight for u in self.users.values() if u.runnable(self.sessions))
            if weights > 0:
                for name, missed in self._left.items():
                    self._left[name] = missed + dt / (weights + self.users[name].weight)
        if not self._on:
            return
        part = dt / len(self._on)
        for sid in self._on:
            share = self._shares[sid]
            share[0] += part
            share[1] += dt

    def _charge(self, session: _Session, busy: float) -> None:
        """A report of *busy* cumulative device seconds, its increase scaled by the mean of
        1/k since the session's last charge (the part of the device it had beside the
        others), less what was charged ahead of it (``assumed``), which the first report
        that measures any work settles both ways: an assumption above what was measured is
        given back. (Kept, as it was, it charged users held back for work they never had:
        a third of the weight-1 and weight-2 users' releases among three syncing users
        1:2:4 were assumed more than their next report measured, H100 run 56.)"""
        self._integrate()
        session.charged_at = self.clock()
        delta = busy - session.charged
        share = self._shares.get(session.sid)
        fraction = 1.0
        if share is not None:
            if share[1] > 0 and not self.own_time:
                fraction = min(1.0, share[0] / share[1])
            share[0] = share[1] = 0.0
        if delta > 0:
            session.charged = busy
            # (replays charged their own costs: not scaled, they are this session's alone,
            # worker/replay_prices.py)
            own = min(delta, max(0.0, session.own - session.own_charged))
            session.own_charged += own
            extra = (delta - own) * fraction + own - session.assumed
            session.assumed = 0.0
            session.vt += extra
            account = self.users[session.user]
            account.vt += extra / account.weight

    def _charge_lone(self) -> None:
        """Before a request is weighed: a lone session on the device reports every 50 ms;
        its time on the device since its last report (at most ALONE_REPORT_LAG) is charged
        now, as ``fair`` does (FairPolicy._charge_lone_holder), so a newcomer's credit starts
        from it."""
        if len(self._on) == 1:
            self._assume_part(next(iter(self._on)), ALONE_REPORT_LAG)

    def _counted(self) -> list:
        """The users with work or anticipated back (those a user behind holds back), but
        the light ones (:meth:`_light`)."""
        return [u for u in self.users.values()
                if (u.runnable(self.sessions) and not self._light(u.name))
                or self.anticipation.expected(u.name)]

    def _light(self, user: str) -> bool:
        """Whether *user* is light now: away most of the time (its gaps between batches
        average at least ``light_gap``, its batches at most LIGHT_BATCH) and in the first
        LIGHT_BURST of a batch (Anticipation.light). Holding the others back for it gains it
        nothing: a yield stops only their next launches,
        and its few small ops wait for CUDA's time slice beside the work already launched
        either way; the others' hold-back and re-admission at each of its requests cost
        the device (a 2048² GEMM user beside an interactive one held back at 548 of its 607
        requests in 5.6 s, and it ran 0.936-0.959 of its rate where ``none`` gave
        0.992-1.009, H200 runs 82-84). Its device time is charged as ever."""
        return bool(self.light_gap) and self.anticipation.light(user, self.clock(), self.light_gap)

    def _advance_min_vt(self) -> None:
        runnable = [u.vt for u in self.users.values() if u.runnable(self.sessions)]
        if runnable:
            self.min_vt = max(self.min_vt, min(runnable))

    def _least_vt(self) -> float | None:
        """The least virtual time of the users with work or anticipated (None: nobody)."""
        with_work = [u.vt for u in self._counted()]
        return min(with_work) if with_work else None

    def lag(self, user: str, least: float | None = None) -> float:
        """Device seconds (weighted) *user* is ahead of the user with work furthest behind
        (*least*, its virtual time, if known; 0 where nobody has work)."""
        least = self._least_vt() if least is None else least
        if least is None:
            return 0.0
        account = self.users[user]
        return (account.vt - least) * account.weight

    def _settle(self) -> list[Action]:
        """Admit the sessions with work of users within the window, hold back those ahead of
        it, and take standing grants back from idle sessions of users ahead (one with work
        again would launch before it heard)."""
        self._integrate()
        if self.assume_silent:
            self._assume_silent()
        self.anticipation.expire(self.clock())
        self._advance_min_vt()
        if self.light_gap:
            self._light_until = min((self.anticipation.light_until(u.name) for u in self.users.values()
                                     if u.runnable(self.sessions) and self._light(u.name)),
                                    default=math.inf)
        least = self._least_vt()
        actions: list[Action] = []
        for account in self.users.values():
            lag = self.lag(account.name, least)
            for sid in sorted(account.sessions):
                session = self.sessions[sid]
                if sid in self.yielding:
                    continue
                if sid in self.admitted:
                    if lag > self.window * (1 + 1e-9) or (not session.runnable and lag > self.window / 2):
                        self.yielding.add(sid)
                        actions.append(Yield(sid, after=0.0, grant=self.admitted[sid]))
                elif session.runnable and lag <= self.window / 2:
                    actions.append(self._admit(sid))
        return actions + self._fill_gap()

    def _admit(self, sid: str, quantum: float | None = None) -> Grant:
        """*sid* admitted: on the device from now, till it says otherwise; its standing
        grant (with *quantum*: a fill's, which ends it)."""
        self.grants += 1
        self.admitted[sid] = self.grants
        self._draining.pop(sid, None)
        self._on.add(sid)
        self.sessions[sid].charged_at = self.clock()
        return Grant(sid, quantum=quantum, grant=self.grants, standing=True)

    def _fill_gap(self) -> list[Action]:
        """While no session on the device has work (those still there run a read's tail)
        and users with work are held back only for users anticipated back: the one of them
        least ahead whose ops fit the gap or the window (its worker's per-op estimate)
        launches what the expected gap holds (a standing grant whose quantum is the time
        until the first of those is expected back, ``FILL_MIN`` at least), instead of the
        device idling. Decided as the tails are estimated to end (``TAIL_EARLY``
        before), not when they have, its grant reaches its worker before the gap begins (a
        grant decided at the gap came a message's latency late: with every message 0.2 ms
        late the simulation gained nothing). It is charged as any session and ends by its
        quantum, so what it runs puts it further ahead, and the users anticipated find at
        most its last launches on the device."""
        actions: list[Action] = []
        for sid, (quantum, since) in list(self.filling.items()):
            session = self.sessions[sid]
            # out of work before its quantum, or past it by more than a report's lag (its
            # worker did not hand the grant back): the grant taken back
            if not session.runnable or session.charged - since > 2 * quantum + self.window:
                del self.filling[sid]
                actions.append(Yield(sid, after=0.0, grant=self.admitted[sid]))
        if not self.fill or any(self.sessions[s].runnable for s in self._on):
            return actions
        back = self.anticipation.expected_back()
        if back is None:
            return actions
        fill = back - self.clock()
        if fill < FILL_MIN:
            return actions
        # (only a user whose ops fit the gap, or the window, the most any user may run ahead
        # of another: one op is launched whatever its quantum, and a 20 ms GEMM let into a
        # 0.3 ms gap held the user anticipated back for all of it — the small syncing user
        # beside a long one fell from 0.31 to 0.23 of its rate alone, H100 run 33. Kept to
        # the gap alone, 2 ms GEMMs would never fill a 0.3 ms one.)
        longest = max(fill, self.window)
        waiting = [(self.lag(session.user), sid) for sid, session in self.sessions.items()
                   if session.runnable and sid not in self.admitted and session.op <= longest]
        if not waiting:
            return actions
        sid = min(waiting)[1]
        self.yielding.add(sid)
        self.filling[sid] = (fill, self.sessions[sid].charged)
        return actions + [self._admit(sid, fill)]

    def snapshot(self) -> dict:
        snap = super().snapshot()
        least = self._least_vt()
        for name, entry in snap["users"].items():
            members = self.users[name].sessions
            entry["holding"] = any(s in self.admitted for s in members)
            entry["waiting"] = sum(self.sessions[s].runnable and s not in self.admitted
                                   for s in members)
            entry["lag"] = self.lag(name, least)
        snap["min_vt"] = self.min_vt
        snap["admitted"] = sorted(self.admitted)
        if self.gap_charge:
            snap["gaps_charged"] = self.gaps_charged
        if self.forget_idle:
            snap["forgotten"] = self.forgotten
        return snap
