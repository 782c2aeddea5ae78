"""Early replay: a held stretch's replay sent while the client's run of it is still under
way (docs/stretch-replay.md, "Early replay").

A run answered from its template (kernelproxy/stretch_templates.py) used to send its replay
at its sync point, and then wait for the worker to run it: the client's issue of the ops and
the worker's replay took turns. Most of a loop's inputs and parameters are the same in every
run (a matrix, the step's constants), and the rest are known after its first ops (the array
the loop carries, a scalar that changes). So once the run has met every input and parameter
that changed between its template's last two runs (:class:`EarlyPlan`, ``at``), the replay
goes at once, the others guessed from the last run, and the results' handles the run will
hand out reserved ahead. The worker runs it while the client goes on checking the ops; the
reply is often back by the sync point.

At the sync point the run's replay entry is compared with the one sent: equal (the same
stretch, inputs, results and need, every parameter the same value of the same type), the
reply answers the run and nothing more is sent; the frees the run met go with the next batch
(the worker kept the inputs the stretch drops: header ``S``). Otherwise — an op that is not
the template's, a sync point before its end, a parameter that changed after all — the early
replay is *undone*: the next batch's header ``A`` names it and its results, which the worker
frees before anything else, and the run goes on as it would have (its replay, or its ops as
records); the early reply, whenever it comes, is read and dropped. Undoing is exact only for
stretches that change nothing but their own results: the worker says which (reply ``hs``,
``StretchReplay.early_safe``). A template whose early replays miss ``MAX_MISSES`` times in a
row is sent early no more.

**Pushed replies over early ones.** Where the worker's steady lane answers a loop's early
replays (worker/steady_lane.py), its replies say so (``L``): sent whole at the sync point,
the loop's messages would have their replies pushed before they go (worker/
pushed_replies.py), and the client would wait for nothing at all, where an early replay's
reply still takes a round trip and the worker's answer after the send. So the plan then
sends the stretch's replays whole (:meth:`EarlyPlan.lane_would_push`); where no push is
taken for LANE_PATIENCE of its runs in a row after all (the lane left, say), it goes early
again, and listens to ``L`` again at most LANE_TRIES times before a push is taken.
``GPUWB_LANE_OVER_EARLY=0`` keeps the early replays (to measure the difference).
"""

from __future__ import annotations

import itertools
from operator import is_ as _is
from typing import Any

from gpu_backend.protocol.stretch_records import Op, same_param, slots_in

from .interrupts import interrupts_deferred

__all__ = ["EarlyPlan", "Early", "send", "settle", "abandon", "discarded", "lane_would_push",
           "same_param",
           "MAX_MISSES", "LANE_PATIENCE", "LANE_TRIES"]

#: early replays of one template that may miss in a row before it is sent early no more
MAX_MISSES = 3
#: ops a run must still have to check after its early send: with fewer there is nothing
#: to overlap, and the send costs the client more than it saves (the hot sync, an add, a
#: sum and a read with a scalar that changes, ran 207 µs early against 181 µs not, on an
#: H200 host, 2026-11-25)
MIN_OVERLAP = 3
#: runs sent whole for the lane (``EarlyPlan.lane``) with no push taken, after which the
#: plan goes early again (the worker's lane arms after two or three whole messages)
LANE_PATIENCE = 24
#: times a plan follows ``L`` with no push taken in between, after which it ignores it
LANE_TRIES = 2


class EarlyPlan:
    """What the runs of one held stretch of *ops* ops (*records*: its StretchRecords) have
    shown, for sending its replay early: where each input is first named and each parameter
    used, the inputs and parameters that changed between runs, the last run's (the guesses
    for the rest), the op count at which the next run's replay goes (``at``; None until two
    runs were seen, or where fewer than MIN_OVERLAP ops would be left to overlap), and the
    misses in a row."""

    __slots__ = ("ops", "input_first", "param_op", "last", "varying_inputs", "varying_params",
                 "misses", "at", "_first_at", "lane", "lane_waits", "lane_tries")

    def __init__(self, records: Any, ops: int) -> None:
        self.ops = ops
        self.input_first: dict[int, int] = {}
        self.param_op: dict[int, int] = {}
        for item in records.items:
            if type(item) is Op:
                for slot in slots_in((item.target, item.args, item.kwargs)):
                    if slot.kind == "i":
                        self.input_first.setdefault(slot.n, item.index)
                    elif slot.kind == "p":
                        self.param_op[slot.n] = item.index
        self.last: tuple[list, list] | None = None
        self.varying_inputs: set[int] = set()
        self.varying_params: set[int] = set()
        self.misses = 0
        self.at: int | None = None
        #: the op after the last first use of what varies (``at`` before its bounds), as
        #: last worked out; None: not yet
        self._first_at: int | None = None
        #: whether the runs go whole because the worker's lane would push their replies
        #: (reply ``L``: the module's doc), the runs sent so since a push was last taken,
        #: and the times ``L`` was followed with no push taken
        self.lane = False
        self.lane_waits = 0
        self.lane_tries = 0

    def observe(self, inputs: list, params: list) -> int | None:
        """A run of the stretch ended with these *inputs* and *params* (its replay entry's):
        what changed since the last run is learnt; returns the new ``at``. (Every held
        run's sync point calls it: what is known to vary already is not looked at again,
        and ``at`` is worked out anew only when something new varies.)"""
        last = self.last
        if last is not None:
            grown = self._first_at is None
            last_inputs, last_params = last
            if inputs != last_inputs:
                varying = self.varying_inputs
                for n, (now, then) in enumerate(zip(inputs, last_inputs)):
                    if now != then and n not in varying:
                        varying.add(n)
                        grown = True
            if not all(map(_is, params, last_params)):   # (a loop's constants: the same objects)
                varying = self.varying_params
                for k, (now, then) in enumerate(zip(params, last_params)):
                    # (the same object: the same value; a NaN too, as same_param has it)
                    if now is not then and k not in varying and not same_param(now, then):
                        varying.add(k)
                        grown = True
            if grown:
                at = 1
                for n in self.varying_inputs:
                    at = max(at, self.input_first.get(n, self.ops) + 1)
                for k in self.varying_params:
                    at = max(at, self.param_op.get(k, self.ops) + 1)
                self._first_at = at
            at = self._first_at
            self.at = at if at <= self.ops - MIN_OVERLAP and self.misses < MAX_MISSES \
                and not self.lane else None
        self.last = (list(inputs), list(params))
        return self.at

    def lane_would_push(self) -> None:
        """The worker's lane answered an early replay of this plan's and would push its
        replies were its messages whole (reply ``L``): the runs go whole from now on (unless
        ``L`` was followed LANE_TRIES times with no push taken since)."""
        if self.lane or self.lane_tries >= LANE_TRIES:
            return
        self.lane, self.lane_waits, self.at = True, 0, None
        self.lane_tries += 1

    def sent_whole(self) -> None:
        """A run of this plan went whole while it waits for the lane's pushes: after
        LANE_PATIENCE such runs with no push taken, it goes early again."""
        self.lane_waits += 1
        if self.lane_waits > LANE_PATIENCE:
            self.lane = False
            self._first_at = None   # (``at`` worked out anew at the next run)

    def pushed(self) -> None:
        """A push answered a run of this plan: the lane keeps it."""
        self.lane_waits = self.lane_tries = 0

    def missed(self) -> int | None:
        """An early replay was undone: one more miss in a row; returns the new ``at``."""
        self.misses += 1
        if self.misses >= MAX_MISSES:
            self.at = None
        return self.at


class Early:
    """An early replay in flight: its batch, the entry sent, the run it was sent for, the
    template whose plan sent it (the run may have switched to another held stretch of the
    same first ops since: TemplateRun._switch), and whether the run matched it (None: not
    known yet; True: it answers the run; False: undone, its reply dropped)."""

    __slots__ = ("batch", "entry", "run", "template", "decided")

    def __init__(self, batch: int, entry: list, run: Any) -> None:
        self.batch, self.entry, self.run = batch, entry, run
        self.template = run.template
        self.decided: bool | None = None


def _same_entry(a: list, b: list) -> bool:
    if a[0] != b[0] or a[1] != b[1] or a[2] != b[2] or a[4] != b[4] or a[5] != b[5]:
        return False
    x, y = a[3], b[3]
    if len(x) != len(y):
        return False
    for p, q in zip(x, y):   # (same_params, its call saved where they are the same objects)
        if p is not q and not same_param(p, q):
            return False
    return True


# ------------------------------------------------------------------ the session's side
# (called with the session's lock held: from the run's ops, its flush, its replies)

def send(session: Any, run: Any) -> None:
    """*run* has just taken the op its template's plan sends early at: send its replay now
    (unless another early replay is still unanswered, or an error is pending)."""
    template = run.template
    plan = template.early_plan
    if plan is None or plan.last is None or session._early is not None \
            or session._error is not None or session.closed:
        return
    last_inputs, last_params = plan.last
    reserved = list(itertools.islice(session._ids, template.n_results - len(run.results)))
    inputs = [last_inputs[n] if hid is None else hid for n, hid in enumerate(run.inputs)]
    params = run.params + last_params[len(run.params):]
    entry = [template.sid, run.first, inputs, params, run.results + reserved, []]
    with interrupts_deferred:   # (the batch and what knows it is early: one step for ^C)
        batch = session._replay_batch(run, entry, run.first + len(template.ops) - 1, [],
                                      False, early=True)
        session._flushed_seq = run.first - 1   # (its ops count as sent once the run matches)
        run.ids = itertools.chain(reserved, session._ids)   # (the run's results: these)
        session._early = run.early = Early(batch, entry, run)
        session.stretches.early_sent += 1
    session._follow_broken()


def settle(session: Any, run: Any, entry: list | None, sync_device: bool) -> bool:
    """*run* reached its sync point with *entry* (None: it cannot be replayed). Whether its
    early replay answers it (True: nothing more to send; the run's frees are queued for
    the next batch); otherwise the early replay is undone (:func:`abandon`) and the run
    goes on as any (False)."""
    early = run.early
    if early is None:
        return False
    if entry is None or sync_device or early.decided is not None \
            or not _same_entry(entry, early.entry):
        abandon(session, run)
        return False
    early.decided = True
    run.early = None
    session._run = None
    session._flushed_seq = session._seq
    session.trailing.settled(early.batch, session._seq)   # (what follows it may be sent)
    plan = run.template.early_plan
    plan.misses = 0
    run.template.early_at = plan.observe(entry[2], entry[3])
    session._eager_check = session._eager_at
    session._stretch_begins()
    for hid in run.kept_frees():   # (the inputs it drops among them: the worker kept them)
        session._queue_free(hid)
    return True


def abandon(session: Any, run: Any) -> None:
    """*run*'s early replay does not answer it: the next batch's header ``A`` undoes it
    (its results freed, its error forgotten) and its reply is dropped; the run's ops are
    numbered from its first again."""
    early = run.early
    if early is None:
        return
    run.early = None
    if early.decided is True:
        return
    early.decided = False
    session._undo = [early.batch, list(early.entry[4])]
    session._flushed_seq = run.first - 1
    session.stretches.unreplayed(early.batch)
    session.stretches.early_undone += 1
    session._run_origins.pop(early.batch, None)
    template = early.template   # (the sender's plan missed: not the template the run has
    plan = template.early_plan  # switched to since, which may have none)
    if plan is not None:
        template.early_at = plan.missed()


def lane_would_push(template: Any) -> None:
    """The worker's lane would push the replies of *template*'s runs sent whole (reply
    ``L``): its plan sends them whole (EarlyPlan.lane_would_push)."""
    plan = template.early_plan
    if plan is not None:
        plan.lane_would_push()
        if plan.lane:
            template.early_at = None


def discarded(session: Any, batch: int, reply: dict) -> bool:
    """Whether the reply to *batch* is an early replay's that answers no run (undone, or
    undone now: its run has not matched it by the time it came). Such a reply is dropped,
    but for the news that the worker has ended."""
    early = session._early
    if early is None or early.batch != batch:
        return False
    session._early = None
    if early.decided is True:
        return False
    if early.decided is None:   # (its run goes on, and ends as any run)
        abandon(session, early.run)
    if reply.get("z"):
        session._ended = f"the session's worker has ended: {reply['z']}"
    return True
