"""A device simulated in virtual time, driving a real arbiter policy.

The GPU runs one op at a time, the holder's, as the arbiter's grants allow.
Each simulated worker behaves as ``gpu_backend.worker`` does: it asks for the
device when work arrives, reports its device time every ``report`` seconds of
it, hands over after its quantum or at once when told, and keeps the device
while alone. Sessions are saturating (an endless queue of ops of one length),
interactive (one op every ``period``) or closed loops (the next op, or the next
``batch`` ops, ``think`` seconds after one ends: a training loop reading its loss; with
``reads``, the worker hands the device over as the batch's read begins and says so,
``reading``). The arbiter's timer is a
"tick" event at the policy's next deadline. ``simulate`` runs sessions on a policy;
``Fair`` is a FairPolicy whose answers are its decisions alone. Used by
tests/gpu_backend/test_policy.py and test_gap_rule.py.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field

from gpu_backend.arbiter.policy import Grant, Ready, Yield
from gpu_backend.arbiter.turns import FairPolicy


@dataclass
class SimSession:
    sid: str
    user: str
    op: float                      # device seconds per op
    period: float | None = None    # interactive: one op every `period`; None: saturating
    think: float | None = None     # closed loop: the next op comes `think` after one ends
    batch: int = 1                 # closed loop: ops per batch (the next batch `think` after)
    reads: bool = False            # closed loop: each batch ends with a read, and the worker
    # hands the device over as it begins (worker/pacing.py, release_before_read)
    start: float = 0.0
    stop: float = float("inf")
    weight: float = 1.0
    # state
    queued: int = 0
    holding: bool = False
    quantum: float | None = None
    grant_busy: float = 0.0
    yield_after: float | None = None   # hand over once busy reaches this
    busy: float = 0.0
    reported: float = 0.0
    asked: bool = False
    done: list = field(default_factory=list)      # (finish time, device seconds) of each op
    arrivals: list = field(default_factory=list)  # interactive arrival times, in order
    latencies: list = field(default_factory=list)

    def has_work(self, now: float) -> bool:
        if self.period is None and self.think is None:
            return self.start <= now < self.stop
        return self.queued > 0


class SimDevice:
    def __init__(self, policy, report: float = 0.001) -> None:
        self.policy = policy
        self.report = report
        self.now = 0.0
        self.sessions: dict[str, SimSession] = {}
        self.events: list = []    # (time, order, kind, sid)
        self._order = 0
        self.running: str | None = None   # session whose op is on the GPU
        self.idle_while_wanted = 0.0       # device idle although a session had work
        self._ticks: set = set()           # deadlines a "tick" event is due at

    def clock(self) -> float:
        return self.now

    def add(self, s: SimSession, weight: float = 1.0) -> None:
        s.weight = weight
        self.sessions[s.sid] = s
        self._push(s.start, "start", s.sid)

    def _push(self, t: float, kind: str, sid: str | None) -> None:
        self._order += 1
        heapq.heappush(self.events, (t, self._order, kind, sid))

    def _apply(self, actions) -> None:
        for a in actions:
            s = self.sessions[a.session]
            if isinstance(a, Grant):
                s.holding, s.asked = True, False
                s.grant_busy = s.busy
                s.quantum = a.quantum
                s.yield_after = None if a.quantum is None else s.busy + a.quantum
            elif isinstance(a, Yield):
                if s.holding:
                    s.yield_after = s.busy + a.after
                    if a.after == 0 and self.running != s.sid:
                        self._release(s)

    def _release(self, s: SimSession) -> None:
        s.holding = False
        s.yield_after = None
        want = s.has_work(self.now)
        s.asked = want
        self._apply(self.policy.release(s.sid, s.busy, want, reading=s.reads and not want))

    def _ask(self, s: SimSession) -> None:
        if not s.holding and not s.asked and s.has_work(self.now):
            s.asked = True
            self._apply(self.policy.want(s.sid))

    def _dispatch(self) -> None:
        """Start the next op on the GPU if it is free and someone holding has work."""
        if self.running is not None:
            return
        for s in self.sessions.values():
            if s.holding and s.has_work(self.now):
                self.running = s.sid
                self._push(self.now + s.op, "done", s.sid)
                return

    def run(self, until: float) -> None:
        idle_since = None
        while self.events and self.events[0][0] <= until:
            t, _, kind, sid = heapq.heappop(self.events)
            if idle_since is not None and t > idle_since:
                self.idle_while_wanted += t - idle_since
            self.now = t
            s = self.sessions[sid] if sid else None
            if kind == "start":
                self.policy.attach(s.sid, s.user, s.weight)
                if s.period is not None or s.think is not None:
                    self._push(t, "arrive", sid)
                if s.stop < float("inf"):
                    self._push(s.stop, "stop", sid)
                self._ask(s)
            elif kind == "arrive":
                if t < s.stop:
                    s.queued += s.batch
                    s.arrivals.append(t)
                    if s.period is not None:
                        self._push(t + s.period, "arrive", sid)
                    self._ask(s)
            elif kind == "stop":
                self._apply(self.policy.detach(sid))
                s.holding = False
            elif kind == "done":
                self.running = None
                s.busy += s.op
                s.done.append((t, s.op))
                if s.period is not None or s.think is not None:
                    s.queued -= 1
                    if not s.queued % s.batch:   # (a batch's latency, at its last op)
                        s.latencies.append(t - s.arrivals[len(s.latencies)])
                if s.think is not None and not s.queued:
                    self._push(t + s.think, "arrive", sid)
                self.policy.op_seconds(sid, s.op)   # (a worker reports its op length with `used`)
                if s.busy - s.reported >= self.report:
                    s.reported = s.busy
                    self._apply(self.policy.used(sid, s.busy))
                if s.holding and (not s.has_work(t) and s.yield_after is not None
                                  or s.yield_after is not None and s.busy >= s.yield_after - 1e-12):
                    self._release(s)
                self._ask(s)
            due = self.policy.next_deadline()
            if due is not None and due <= t:
                self._apply(self.policy.tick())
                due = self.policy.next_deadline()
            if due is not None and due > t and due not in self._ticks:   # (the arbiter's timer)
                self._ticks.add(due)
                self._push(due, "tick", None)
            self._dispatch()
            wanted = any(x.has_work(self.now) and x.start <= self.now < x.stop
                         for x in self.sessions.values())
            idle_since = self.now if self.running is None and wanted else None
        self.now = until

    def busy_between(self, sid: str, t0: float, t1: float) -> float:
        return sum(d for t, d in self.sessions[sid].done if t0 < t <= t1)


def decisions(actions):
    """Grants and yields, without the Ready hints (tested on their own)."""
    return [a for a in actions if not isinstance(a, Ready)]


class Fair(FairPolicy):
    """FairPolicy whose answers are its decisions alone, for exact comparisons, with every
    turn one QUANTUM long (period 0): the tests of the mechanics name the quantum they
    expect; turns shared out of the period are tested on their own (test_turns_*)."""

    def __init__(self, clock=None, **kwargs):
        kwargs.setdefault("period", 0.0)
        super().__init__(*([clock] if clock else []), **kwargs)

    def want(self, sid):
        return decisions(super().want(sid))

    def release(self, *args, **kwargs):
        return decisions(super().release(*args, **kwargs))

    def tick(self):
        return decisions(super().tick())


def simulate(sessions, until, policy=None):
    policy = policy or FairPolicy()
    dev = SimDevice(policy)
    policy.clock = dev.clock
    for session, weight in sessions:
        dev.add(session, weight)
    dev.run(until)
    return dev
