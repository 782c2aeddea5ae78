"""``share``: weighted fair share with the device never held for one session: every session
whose user is not ahead of its share launches at once, beside the others, and only a user
ahead is held back, and only while someone behind it has work.

Why (issue 51): ``fair`` (policy.py) lets one session at a time launch, and hands the device
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
  hears from the arbiter again, as under ``fair``.
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
  gives contexts with work).
- **Returning from idle** with capped credit: a user keeps the deficit it had when it ran
  out of work, and of what it would have had meanwhile it is forgiven all but ``credit``
  (its virtual time moves up by the advance of a weighted-fair clock while it was away,
  ``dV = dt / Σ weights of the users with work``, less ``credit / weight``), and it is never
  more than ``BANK`` behind the least virtual time of the users with work. A loop that syncs
  every few milliseconds is away a few hundred microseconds at a time and keeps its place
  (``fair``'s rule, ``vt = max(vt, m - credit / weight)``, forgave a weight-2 loop's deficit at
  every read in the simulation and it got 1:1, and measuring its deficit against ``m`` at its
  departure forgave the others' progress while it was away); a user that pauses often banks
  at most ``BANK``. A new user starts ``credit`` behind; with ``credit`` at least ``window``,
  it holds back nobody level with the rest.
"""

from __future__ import annotations

import time
from typing import Callable

from .policy import ALONE_REPORT_LAG, AHEAD_CAP, CREDIT, Action, Grant, Policy, Yield, _Session

__all__ = ["SharePolicy", "WINDOW", "BANK"]

#: Device seconds (weighted) a user with work may run ahead of the user furthest behind that
#: has work, before it is held back; it is let go again at half this. Twice a GEMM of a few
#: milliseconds: shorter, a pair of users flips at every report; longer, the shares over a
#: second drift (a 2 ms window on users 1:2:4 is a swing of at most 2 ms in a second).
WINDOW = 0.004
#: Most device seconds (weighted) a user back from idle may be behind the least virtual time
#: of the users with work: four windows (an interactive user, back every 10 ms having used
#: little, would otherwise bank credit at every pause).
BANK = 4 * WINDOW


class SharePolicy(Policy):
    """See the module's docstring. ``holder`` stays None: many sessions may hold at once
    (``admitted``)."""

    name = "share"

    def __init__(self, clock: Callable[[], float] = time.monotonic, *, window: float = WINDOW,
                 credit: float = CREDIT) -> None:
        super().__init__(clock)
        self.window = window
        self.credit = max(credit, window)   # (a user back from a pause holds back nobody level)
        self.min_vt = 0.0              # least vt of the users with work; never decreases
        self.admitted: dict[str, int] = {}   # session -> the number of its standing grant
        self.yielding: set[str] = set()      # admitted, told to stop, not yet released
        #: the share clock: for each session on the device (admitted with work), the time
        #: since its last charge and the integral of 1/k over it
        self._on: set[str] = set()
        self._shares: dict[str, list[float]] = {}
        self._since = clock()
        self.bank = max(4 * window, self.credit)
        #: the weighted-fair clock (virtual seconds: what a user of weight 1 with work all
        #: along would have had, over its weight), and each user's reading of it when it
        #: last ran out of work (its return forgives only what it would have had meanwhile)
        self._fair_clock = 0.0
        self._left: dict[str, float] = {}

    # -- the pool's side ------------------------------------------------------
    def attach(self, sid: str, user: str, weight: float = 1.0) -> None:
        super().attach(sid, user, weight)
        self._shares[sid] = [0.0, 0.0]

    def detach(self, sid: str) -> list[Action]:
        if sid not in self.sessions:
            return []
        self._integrate()
        self._on.discard(sid)
        self.admitted.pop(sid, None)
        self.yielding.discard(sid)
        self._shares.pop(sid, None)
        user = self.sessions[sid].user
        super().detach(sid)
        if user not in self.users:   # (its last session: a user attached later starts anew)
            self._left.pop(user, None)
        return self._settle()

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
        actions: list[Action] = []
        if sid in self.admitted:
            if not holding and sid not in self.yielding:
                actions.append(Grant(sid, grant=self.admitted[sid], standing=True))
            self._on.add(sid)
        return actions + self._settle()

    def idle(self, sid: str, busy: float) -> list[Action]:
        """*sid*'s worker holds a standing grant and has run out of work (its batch's last
        op, a read, has begun, or its batch ended): others held back for it may go."""
        session = self.sessions.get(sid)
        if session is None:
            return []
        self._integrate()
        self._charge(session, busy)
        self._on.discard(sid)
        session.runnable = False
        self._out_of_work(session)
        return self._settle()

    def used(self, sid: str, busy: float) -> list[Action]:
        session = self.sessions.get(sid)
        if session is None:
            return []
        self._charge(session, busy)
        return self._settle()

    def release(self, sid: str, busy: float, want: bool, grant: int | None = None,
                ahead: float = 0.0, reading: bool = False) -> list[Action]:
        """*sid* gave its standing grant back (told to stop: it has drained what it had
        launched); *want*: it still has work, and waits to be admitted again."""
        session = self.sessions.get(sid)
        if session is None:
            return []
        self._integrate()
        self._charge(session, busy)
        self._assume(session, min(max(0.0, ahead), AHEAD_CAP))
        if grant is not None and sid in self.admitted and grant != self.admitted[sid]:
            return []   # (an older grant's release crossed the newer one: charged only)
        self.admitted.pop(sid, None)
        self.yielding.discard(sid)
        self._on.discard(sid)
        if want:
            self._wake(session)
        else:
            session.runnable = False
            self._out_of_work(session)
        return self._settle()

    def tick(self) -> list[Action]:
        return []

    def next_deadline(self) -> float | None:
        return None

    # -- mechanics ------------------------------------------------------------
    def _integrate(self) -> None:
        """Advance the share clock to now (before the sessions on the device change)."""
        now = self.clock()
        dt = now - self._since
        self._since = now
        if dt <= 0:
            return
        weights = sum(u.weight for u in self.users.values() if u.runnable(self.sessions))
        if weights > 0:
            self._fair_clock += dt / weights
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
        others), less what was charged ahead of it (``assumed``)."""
        self._integrate()
        session.charged_at = self.clock()
        delta = busy - session.charged
        share = self._shares.get(session.sid)
        fraction = 1.0
        if share is not None:
            if share[1] > 0:
                fraction = min(1.0, share[0] / share[1])
            share[0] = share[1] = 0.0
        if delta > 0:
            session.charged = busy
            extra = max(0.0, delta * fraction - session.assumed)
            session.vt += extra
            account = self.users[session.user]
            account.vt += extra / account.weight
        session.assumed = 0.0

    def _charge_lone(self) -> None:
        """Before a request is weighed: a lone session on the device reports every 50 ms;
        its time on the device since its last report (at most ALONE_REPORT_LAG) is charged
        now, as ``fair`` does (FairPolicy._charge_lone_holder), so a newcomer's credit starts
        from it."""
        if len(self._on) != 1:
            return
        sid = next(iter(self._on))
        session = self.sessions[sid]
        # (its time on the device alone since its last charge, less what is assumed already;
        # counted from its last charge, a session back from idle was assumed its idle time)
        lag = min(self._shares[sid][1], ALONE_REPORT_LAG) - session.assumed
        if lag > 0:
            self._assume(session, lag)

    def _out_of_work(self, session: _Session) -> None:
        """*session* has no work: if none of its user's has, note where the others are."""
        account = self.users[session.user]
        if not account.runnable(self.sessions):
            self._left[account.name] = self._fair_clock

    def _wake(self, session: _Session) -> None:
        if session.runnable:
            return
        account = self.users[session.user]
        if not account.runnable(self.sessions):
            self._advance_min_vt()
            left = self._left.pop(account.name, None)
            if left is None:   # (new: it starts where the others are, less credit)
                account.vt = max(account.vt, self.min_vt - self.credit / account.weight)
            else:              # (back: what it would have had meanwhile, less credit)
                account.vt += max(0.0, self._fair_clock - left - self.credit / account.weight)
                account.vt = max(account.vt, self.min_vt - self.bank / account.weight)
        super()._wake(session)

    def _advance_min_vt(self) -> None:
        runnable = [u.vt for u in self.users.values() if u.runnable(self.sessions)]
        if runnable:
            self.min_vt = max(self.min_vt, min(runnable))

    def _least_vt(self) -> float | None:
        """The least virtual time of the users with work (None: nobody has work)."""
        with_work = [u.vt for u in self.users.values() if u.runnable(self.sessions)]
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
        self._advance_min_vt()
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
                    self.grants += 1
                    self.admitted[sid] = self.grants
                    self._on.add(sid)
                    session.charged_at = self.clock()
                    actions.append(Grant(sid, grant=self.grants, standing=True))
        return actions

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
        return snap
