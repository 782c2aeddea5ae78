"""How the steady lane arms (worker/steady_lane.py, docs/stretch-replay.md, "The steady lane"
and "Stretches taking turns in the steady lane"): the generic path's last messages read, and
a plan made where they go on by fixed steps — one stretch's last two, or the last rounds of
two or three stretches taking turns, a ring of plans. Mixed into SteadyLane, whose state it
keeps (its plan, the messages read, the ring, the counts)."""

from __future__ import annotations

from .lane_messages import Reshaped
from .lane_plans import MOVES, LanePlan, make_plan

__all__ = ["LaneArming", "COOL", "TURNS_MOST"]

#: replays served by the generic path before the lane tries again where two did not step
#: (reading a message's layout costs about what serving it does)
COOL = 16
#: the most messages a round of stretches taking turns may take in the lane (a loop that
#: reads its loss, then its accuracy; one that reads eight sums a step: docs/stretch-replay.md,
#: "Stretches taking turns in the lane"); its last 2 * TURNS_MOST messages are kept
TURNS_MOST = 8


class _Lagging(Exception):
    """Stretches taking turns whose first plan's message is not the one run ahead: where an
    op that was no replay came between two steps, a loop-carried input's handle steps
    unevenly once more, and the messages after will step (LaneArming._arm_turns)."""


class LaneArming:
    """The steady lane's arming, mixed into SteadyLane (its ``x``, ``plan``, ``_before``,
    ``_last``, ``_turns``, ``_ring``, ``_cool``, ``_lagging``, counts, and its ``_next``,
    ``_entry`` and ``_run_ahead``)."""
    def served(self, body: bytes | None, data: int = 0) -> None:
        """After the generic path's reply to a batch and the run ahead after it: *body*, the
        batch's first frame where it was a replay's header alone answered without error, else
        None; *data*, the frames after it (a stretch's uploads' data). Kept, and a plan made
        where the last two go on by fixed steps, or where the last few are stretches taking
        turns, each going on by fixed steps (:meth:`_period`); a stretch that uploads, run
        through graphs, one plan run when its message comes (:meth:`_arm_now`)."""
        self.plan = self._ring = None
        run = self.x.replay.ahead
        answered, run.answered = run.answered, None
        if body is None or not self.enabled or (data and not self._uploads(answered, data)):
            self._forget()
            return
        self._before, self._last = self._last, body
        if answered is None:   # (not through graphs: no turn of a loop the lane serves)
            self._turns.clear()
        else:
            self._turns.append((body, answered))
        if self._cool:   # (a loop whose messages did not step lately: not read every time)
            self._cool -= 1
            return
        if self._before is not None:
            period = self._period()
            # (stretches that do not take turns yet; one stretch's loop whose next replay
            # is not run ahead: its plan is read against the generic run ahead's; a stretch
            # that uploads, never run ahead, is served as one stretch's loop only)
            if not period or (period != 1 if data else period == 1 and run.ahead is None):
                return
            try:
                if period != 1:
                    self.plan = self._arm_turns(period)
                elif data:
                    self.plan = self._arm_now(self._before, self._last, answered)
                else:
                    self.plan = self._arm(self._before, self._last)
            except Reshaped:   # (a number grew a byte: the next two will step)
                return
            except _Lagging:   # (an input's handle stepped unevenly once: the next will step)
                self._lagging += 1
                if self._lagging <= 3 * period // 2:
                    return
                self.plan, self._lagging = None, 0
            except Exception:   # (two messages that do not step, a stretch it cannot serve)
                self.plan = None
            if self.plan is not None:
                self.armed += 1
                self._forget()   # (read anew once the lane is left: its answers are not here)
            else:
                self._cool = COOL

    def let_go(self) -> None:
        """Forget the plan and the messages it was read from (the graphs are dropped: a
        swap-out, an op out of memory). A plan names its stretch's graph and that graph's
        buffers (``plan.graph``, ``plan.bufs``): one kept after the graphs were dropped kept
        their memory on the device, a swapped-out session's too (on an H200 a loop over a
        4 MiB array left 4 MiB + 512 bytes used after its swap-out, run 210). A message
        committed ahead stays so: its record, not the plan, confirms it."""
        self.plan = self._ring = None
        self._forget()

    def _forget(self) -> None:
        """Forget the messages a plan would be read from: the next are read anew."""
        self._before = self._last = None
        self._turns.clear()
        self._lagging = 0

    def _period(self) -> int:
        """How many messages a round of the loop takes in the last messages: 1 where the
        last two are one stretch's and nothing says it is a longer round's (too few are
        known to say: the lane's first reading, as ever; or the last three are that
        stretch's), else the least *p* of TURNS_MOST whose last 2*p messages' stretches go
        round by *p*, not all one; 0: none. A stretch may come more than once in a round
        (a step that reads ``int(a.sum())`` and ``int(b.sum())`` sends one stretch twice,
        its inputs apart): each place of the round is a plan of its own."""
        turns = self._turns
        n = len(turns)
        if n < 2:
            return 1
        sids = [past[0] for _body, past in turns]
        if sids[-1] == sids[-2] and (n == 2 or sids[-3] == sids[-1]):
            return 1
        for p in range(2, TURNS_MOST + 1):
            if n < 2 * p:
                return 0
            if sids[-2 * p:-p] == sids[-p:] and len(set(sids[-p:])) > 1:
                return p
        return 0

    def _arm_turns(self, period: int) -> LanePlan | None:
        """The plans of a loop of *period* stretches taking turns (a step that reads its
        loss, then its accuracy): each stretch's from its last two messages, *period* apart,
        in a ring (``_ring``, each plan's ``turn`` the next one's index), the first the plan
        of the stretch whose message comes next, its first message set: the generic path's
        run ahead of it (its follower: RunAhead.follows) where it made one and that is the
        message the plan reads (else :class:`_Lagging`), or the lane's own; None where any
        cannot be served. The others have no run ahead until the lane makes it, after the
        message before theirs (SteadyLane.after_reply)."""
        x = self.x
        run = x.replay.ahead
        generic = run.ahead   # (the generic path's run ahead of the first, where it made one)
        turns = list(self._turns)[-2 * period:]
        plans = []
        for i in range(period):
            (before, _was), (last, past) = turns[i], turns[i + period]
            plan = make_plan(x, before, last, None if i == 0 and generic is not None else past)
            if plan is None or plan.dbatch != period:
                return None
            # (a plan that is not the generic path's run ahead, made from messages that may
            # have run when they came, only where the generic path would run it ahead: a
            # stretch safe to run ahead, short enough, not one paced beside others, its
            # results few enough bytes — RunAhead._runnable; found by a review)
            if (i or generic is None) and run._runnable(plan.sid, plan.graph, plan.outs, True) is None:
                return None
            plans.append(plan)
        sids = [plan.sid for plan in plans]
        for n, plan in enumerate(plans):
            plan.turn = (n + 1) % period
            if sids.count(plan.sid) > 1:
                # (one stretch at two places of the round, its inputs and scalars apart: its
                # graphs' copy rows and parameter block are the last place's, so an input the
                # same array as at this place's last run is no longer theirs — bound again at
                # every run, as a loop-carried one is — and its parameters are written again
                # (SteadyLane._run_ahead). Left kept, ``int(a.min())`` then ``int(c.min())``
                # read ``c`` of the step before at ``a``'s place, and ``a * 0.9`` then
                # ``b * 0.8`` ran on each other's scalar: wrong values, the second found by
                # a review)
                plan.bound = [(i, d, MOVES) for i, d, _had in plan.bound]
                plan.shared = True
        first = plans[0]
        if generic is None:
            # (none: the generic path declines a follower whose message is already waiting,
            # which a client faster than its worker has always sent, so a lane once left was
            # armed again only where the worker was ahead — in two of four VM runs of
            # two_reads 847 and 978 of 1 229 replays in the lane against ~1 190: the lane
            # runs the first turn ahead itself)
            if not self._run_ahead(first):
                return None
            self._next(first)
        else:
            self._next(first)
            if not run.matches(self._entry(first)):
                raise _Lagging
        self._lagging = 0
        self._ring = plans
        x.replay.graphs.broken()   # (its messages teach the generic path nothing: none follows them)
        self.armed_turns += 1
        return first

    def _uploads(self, answered: tuple | None, data: int) -> bool:
        """Whether a replay answered through graphs (*answered*: RunAhead.answered) carried
        the data of its stretch's *data* uploads, and no other frame."""
        if answered is None:
            return False
        stretch = self.x.replay.stretches.held.get(answered[0])
        return stretch is not None and len(stretch.uploads) == data

    def _arm_now(self, before: bytes, last: bytes, answered: tuple) -> LanePlan | None:
        """The plan of a loop whose stretch uploads (its last two messages *before* and
        *last*, the last *answered* through graphs): run when each message comes with its
        data (SteadyLane.take), so it has no run ahead; its first message set."""
        plan = make_plan(self.x, before, last, answered)
        if plan is None or not plan.now or plan.dbatch != 1:
            return None
        self._next(plan)
        self.x.replay.graphs.broken()   # (its messages teach the generic path nothing)
        return plan

    def _arm(self, before: bytes, last: bytes) -> LanePlan | None:
        """The plan of the loop whose last two messages were *before* and *last*
        (lane_plans.make_plan), its first message set, where the lane's reading of that
        message is the replay run ahead now."""
        plan = make_plan(self.x, before, last)
        if plan is None:
            return None
        self._next(plan)
        if not self.x.replay.ahead.matches(self._entry(plan)):
            return None
        self.x.replay.graphs.broken()   # (its messages teach the generic path nothing: none follows them)
        return plan
