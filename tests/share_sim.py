"""A device shared side by side, simulated in virtual time, driving a real ``share`` policy.

Unlike tests/policy_sim.py (one holder at a time), every session holding a standing grant
and having work runs at once, and the device is shared among them evenly, as CUDA's
time-slicing shares it among contexts with work (processor sharing): each gets ``dt / k``
of progress a step, and its worker's events measure the whole ``dt`` (its ops take longer
beside the others), which is what the policy must scale. Each simulated worker behaves as
``gpu_backend.worker`` does under ``share``: it asks when work arrives and waits for a
grant unless it holds one, reports every ``report`` seconds of measured time, says
``idle`` when its work is done (a closed loop's batch ends with its read), and, told to
stop, finishes about ``lead`` of its launched work, then releases (asking again if it has
more). Sessions are saturating (``think`` None) or closed loops (``batch`` device seconds
of work, then ``think`` seconds of the client's round trip). With ``tail`` set, a closed
loop's worker says ``idle`` as the real one does, as its batch's closing read begins: while
the rest of its launched work, in the wall time it will take at the current sharing (its
estimate ``ahead``, sent with ``idle``), is at most ``tail``; that rest still runs beside
the others, the read (so the next batch's ``think``) waits for it, and its worker says
``done`` when the read returns. Told to stop, a worker finishes ``lead`` of its own
progress, then releases; or with ``lead_wall``, as the real worker, it releases at once
with its launched work (``lead`` of wall time at the sharing of the moment, the real
pacer's lead) still to run, and says so (``ahead``). A session the policy gives a deep lead
(``SharePolicy.lead_for``) uses that instead, as its worker does. With
``jitter``, each think is drawn within ± that fraction (closed loops in lockstep are an
artefact of a clock with no noise). With ``delay``, the arbiter's grants and yields reach
the workers that many seconds after it decides (its messages and the workers' wake-ups take
about 0.1 ms on a GPU host; the workers' own messages reach it at once). Used by
tests/gpu_backend/test_share_policy.py.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from gpu_backend.arbiter.policy import Grant, Yield
from gpu_backend.arbiter.share import SharePolicy


@dataclass
class ShareSession:
    sid: str
    user: str
    weight: float = 1.0
    batch: float = 0.002          # device seconds of work a batch (closed loops)
    think: float | None = None    # None: saturating; else seconds between a batch and the next
    start: float = 0.0
    stop: float = float("inf")
    # state
    holding: bool = False
    standing_idle: bool = False   # holds a standing grant and said it was idle
    asked: bool = False
    stopping: float | None = None   # told to stop: progress left to finish before releasing
    left: float = 0.0             # device seconds of the current batch still to do
    next_batch: float = 0.0       # when a closed loop's next batch arrives
    measured: float = 0.0         # what its worker's events measured
    reported: float = 0.0
    got: float = 0.0              # device seconds it really received
    had_work: float = 0.0         # seconds it had work (for the device)
    received_while: dict = field(default_factory=dict)
    reading: bool = False         # said idle at its read; its launched work still runs
    budget: float | None = None   # a grant's quantum: its own progress left before it releases
    drain: float = 0.0            # released with this much launched work still to run
    report: float | None = None   # its worker's report interval (None: the device's): a
    # session whose op runs long reports seldom
    whole_ops: bool = False       # its ops last a report interval each and its worker, inside
    # one, reads nothing: told to stop, it stops at its op's end (a NumPy op, a long kernel)

    def has_work(self, now: float) -> bool:
        if not self.start <= now < self.stop:
            return False
        return self.think is None or self.left > 0


class ShareDevice:
    def __init__(self, policy: SharePolicy, sessions: list[ShareSession], *, dt: float = 50e-6,
                 report: float = 0.001, lead: float = 0.001, tail: float = 0.0,
                 lead_wall: bool = False, jitter: float = 0.0, seed: int = 0,
                 delay: float = 0.0) -> None:
        self.policy, self.dt, self.report, self.lead, self.tail = policy, dt, report, lead, tail
        self.delay, self._in_flight = delay, []   # (the arbiter's actions on their way)
        self.lead_wall, self.jitter, self.random = lead_wall, jitter, random.Random(seed)
        self.sessions = {s.sid: s for s in sessions}
        self.now = 0.0
        policy.clock = lambda: self.now
        for s in sessions:
            policy.attach(s.sid, s.user, s.weight)
            s.next_batch = s.start
        self.busy_steps = 0      # steps in which the device ran someone's work
        self.wanted_steps = 0    # steps in which someone had work

    def _apply(self, actions: list, arrived: bool = False) -> None:
        if self.delay and not arrived:
            self._in_flight.extend((self.now + self.delay, action) for action in actions)
            return
        for action in actions:
            s = self.sessions[action.session]
            if isinstance(action, Grant):
                s.holding, s.asked, s.stopping = True, False, None
                s.standing_idle, s.drain = False, 0.0
                s.budget = action.quantum
            elif isinstance(action, Yield) and s.holding and s.whole_ops:
                s.stopping = 0.0   # (heard, and acted on, at its op's end: step)
            elif isinstance(action, Yield) and s.holding and self.lead_wall:
                # (as the real worker: it gives the grant back at once, its launched work,
                # ``lead`` of wall time at the sharing of the moment or the rest of a batch
                # whose read has begun, still to run)
                k = max(1, len(self._running()))
                launched = self._lead(s) / k
                launched = s.left if s.reading or s.think is not None and s.left < launched \
                    else launched
                self._release_launched(s, launched, k)
            elif isinstance(action, Yield) and s.holding:
                # (what it launched runs out: about ``lead`` of its own progress; or the rest
                # of a batch whose read has begun)
                s.stopping = max(self._lead(s), s.left) if s.reading else self._lead(s)

    def _lead(self, s: ShareSession) -> float:
        """*s*'s lead: the arbiter's deep lead where it gives *s* one (SharePolicy.lead_for),
        else the device's ``lead``, as the real worker's pacer takes it."""
        deep = self.policy.lead_for(s.sid)
        return self.lead if deep is None else max(self.lead, deep)

    def _release_launched(self, s: ShareSession, launched: float, k: int) -> None:
        """*s* gives its grant back at once, *launched* of its own progress still to run
        at the sharing of *k* sessions (told to stop, or its quantum spent)."""
        s.holding, s.stopping, s.budget, s.drain = False, None, None, launched
        more = s.think is None or s.left > launched
        s.asked = more
        s.reported = s.measured
        self._apply(self.policy.release(s.sid, s.measured, more, ahead=launched * k))

    def _running(self) -> list[ShareSession]:
        """The sessions whose work is on the device: holders with work, and released ones
        whose launched work still runs."""
        return [s for s in self.sessions.values()
                if s.holding and s.has_work(self.now) or s.drain > 0]

    def _think(self, s: ShareSession) -> float:
        return s.think * (1 + self.jitter * self.random.uniform(-1, 1))

    def _arrivals(self) -> None:
        for s in self.sessions.values():
            if s.think is not None and s.left <= 0 and not s.reading and self.now >= s.next_batch \
                    and s.start <= self.now < s.stop:
                s.left = s.batch
            if not s.has_work(self.now):
                continue
            if s.holding and s.standing_idle and not s.reading:
                s.standing_idle = False
                self._apply(self.policy.want(s.sid, holding=True))
            elif not s.holding and not s.asked and not (s.think is not None and 0 < s.left <= s.drain):
                # (a closed loop that gave its grant back with the rest of its batch launched
                # asks again only for its next batch, as its worker would: asked again at
                # once, it held a grant with nothing to run and never said ``idle``)
                s.asked = True
                self._apply(self.policy.want(s.sid))

    def step(self) -> None:
        if self._in_flight:
            self._apply([a for at, a in self._in_flight if at <= self.now], arrived=True)
            self._in_flight = [(at, a) for at, a in self._in_flight if at > self.now]
        self._apply(self.policy.tick())   # (the arbiter's loop calls it at every wake)
        self._arrivals()
        running = self._running()
        if any(s.has_work(self.now) for s in self.sessions.values()):
            self.wanted_steps += 1
            for s in self.sessions.values():
                if s.has_work(self.now):
                    s.had_work += self.dt
        if running:
            self.busy_steps += 1
        part = self.dt / len(running) if running else 0.0
        self.now += self.dt
        for s in running:
            s.got += part
            s.measured += self.dt
            if s.think is not None:
                s.left -= part
            if s.stopping is not None:
                s.stopping -= part
            if s.drain > 0:
                s.drain -= part
            if s.holding and s.budget is not None:
                s.budget -= part
        for s in running:
            if not s.holding:   # (its launched work running after its release)
                continue
            if s.budget is not None and s.has_work(self.now) and not s.reading \
                    and s.budget <= (self._lead(s) / len(running) if self.lead_wall else 0.0):
                # (a grant's quantum spent, counting what is launched: it releases, that
                # work still to run, as the real worker hands over at ``hand_over_at``)
                launched = max(0.0, min(s.budget, s.left if s.think is not None else s.budget))
                self._release_launched(s, launched, len(running))
                continue
            if s.stopping is not None and (s.stopping <= 0 or not s.has_work(self.now)) \
                    and not (s.whole_ops and s.measured - s.reported < (s.report or self.report)):
                s.holding, s.stopping = False, None
                more = s.has_work(self.now)
                s.asked = more
                s.reported = s.measured
                self._apply(self.policy.release(s.sid, s.measured, more))
            elif s.reading:
                pass
            elif s.think is not None and s.left * len(running) <= self.tail:
                # (the batch's read begins: idle, what is launched still to run)
                s.standing_idle = True
                s.reported = s.measured
                ahead = max(0.0, s.left) * len(running)
                if s.left > 0:
                    s.reading = True
                else:
                    s.next_batch = self.now + self._think(s)
                self._apply(self.policy.idle(s.sid, s.measured, ahead))
            elif s.measured - s.reported >= (s.report or self.report):
                s.reported = s.measured
                self._apply(self.policy.used(s.sid, s.measured))
        for s in running:
            if s.reading and s.left <= 0:   # the read returns: the client's round trip begins
                s.reading = False
                s.next_batch = self.now + self._think(s)
                if s.holding:   # (its worker says its launched work is done)
                    s.reported = s.measured
                    self._apply(self.policy.done(s.sid, s.measured))
            elif not s.holding and s.think is not None and s.left <= 0 and s.drain <= 0:
                s.next_batch = self.now + self._think(s)   # (its batch ran out after its release)

    def run(self, seconds: float) -> None:
        end = self.now + seconds
        while self.now < end:
            self.step()

    @property
    def conservation(self) -> float:
        """Of the steps in which someone had work, the part in which the device ran some."""
        return self.busy_steps / self.wanted_steps if self.wanted_steps else 1.0
