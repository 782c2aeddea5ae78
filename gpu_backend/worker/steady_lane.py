"""The steady lane: a loop's replays, once they go on by fixed steps, served in a few calls
a message (docs/stretch-replay.md, "The steady lane").

A held loop that only reads values (``float((x + 1).sum())`` in a loop, a convergence check,
an interactive user's request) sends the same replay again and again: the same stretch, the
same input handles and parameters, its numbers — the batch, the first op, the handles of its
results, the frees of the last ones — going on by the same steps. The generic path reads each
message anew (decoding, the header's checks, the entry's parse and match against the replay
run ahead, the reply built and packed) and runs the next replay ahead through the general
machinery (the guards, the prediction of its inputs, the set-up of its copies, the hand-out of
its results): ~290 Python calls a message, where a server doing the same device work in the
fewest calls takes ~8 (``sync_floor.py``'s ``graph-ahead``: 20 µs a replay on an H200, the
pool's worker ~110). Each call costs the worker between messages 3-4 times what it costs in a
warm loop, so a leaner arrangement of the same steps gains nothing (measured: the twenty-third
and twenty-fourth sessions' lanes); fewer steps do.

So once two replays of a stretch have been served in a row and the next is run ahead, the
lane compares the two messages field by field (``Layout``): where they have the same shape
and every difference is an unsigned integer of the batch number, the entry's first op, its
inputs, its result handles or the frees before and after it, or a float parameter (a loop's
``step * 0.5``), the loop's next messages are known for as many iterations as those numbers
keep their width on the wire (``Layout.steps``), as bytes (the last message plus k times the
difference, read as one integer, the floats' bytes written in as RunAhead's guess steps
them) and as what they say.
A message that is the next one byte for byte (compared in constant time: it holds the
session key) is answered from the replay run ahead with the generic answer's effects made
directly — its frees, its results renamed to the client's handles, the counts —, its reply
packed from the values, and the next replay run ahead by its recorded calls (the kept
results' arrays, the copy table's rows, the launches, the reads). Anything else — another
message, a number out of its width, a cancel, a swap, a poisoned or warned session, company
on the device, a replay the pacer wants measured, an input array replaced — leaves the lane,
and the message is served as ever; the run ahead the lane made is the generic one's
(``_Ahead``), answered or dropped as ever.

Exact by construction: a message is answered in the lane only where it is, byte for byte, the
one whose reading the lane derived from two messages read by the generic path (each field's
value, its encoding unchanged, so the same bytes read the same), and its answer and the run
ahead after it are the generic path's for that reading: the same arrays renamed and freed,
the same graphs launched with the same copy rows, the same reads.
"""

from __future__ import annotations

import hmac
from collections import deque
from time import perf_counter
from typing import Any

from ..protocol import codec
from .batch_results import BatchResults
from .result_meta import pack_metas
from .kept_views import remake
from .run_ahead import GAPS_KEPT, PROVISIONAL, _Ahead, speculated, speculating
from .lane_arming import COOL, TURNS_MOST, LaneArming
from .lane_overlap import LaneOverlap
from .lane_messages import DOUBLE
from .lane_plans import REPLAY_KEYS, LanePlan, history_lists, stepped
from .pushed_replies import Pushes
from .graph_state import eager_array_out
from .stretches import ReplayEntry

__all__ = ["SteadyLane", "REPLAY_KEYS"]

_NO_METAS = pack_metas([])
_T = codec.packb("t")


#: the least device time of a step (its graphs' measured cost) whose closing reads wait while
#: the client's next message is taken (:meth:`SteadyLane._read_ahead`): what they could hide
#: is at most the worker's time to take and confirm that message (~20-25 µs on an H200 host,
#: run 206's phases), and a shorter step read at once keeps its reply pushed a message
#: further ahead, which a client faster than that (the hot sync) uses
DEFER_MIN_SECONDS = 25e-6


class _Relayout(Exception):
    """An eager op's result came in another layout than the buffer its graphs read."""


class SteadyLane(LaneArming, LaneOverlap):
    """One session's steady lane for its executor *x* (at most one plan), and its counts:
    messages answered in it (``answered``), plans made (``armed``), left (``left``)."""

    def __init__(self, x: Any) -> None:
        self.x = x
        #: ``GPUWB_STEADY_LANE=0`` turns it off (a diagnostic: the benchmarks' side ``nolane``)
        self.enabled = True
        self.plan: LanePlan | None = None
        #: the first frames of the last two replays served in a row by the generic path
        self._before: bytes | None = None
        self._last: bytes | None = None
        #: the last messages served in a row by the generic path, each a replay answered
        #: through graphs: ``(its first frame, (stretch, ops run, result slots))``
        #: (RunAhead.answered); stretches taking turns are read from them (:meth:`_arm_turns`)
        self._turns: deque = deque(maxlen=2 * TURNS_MOST)
        self.answered = self.armed = self.left = 0
        #: plans armed for stretches taking turns (each ring counted once; ``lane_turns``),
        #: and the readings of turns in a row whose first message was not the one run ahead
        #: (lane_arming._Lagging: read again at the next message, up to a round and a half)
        self.armed_turns = 0
        self._lagging = 0
        #: the plans of stretches taking turns, in their order (a plan's ``turn``: the index
        #: of the next one here); the lane holds them, not each other (a ring of plans that
        #: held each other was a reference cycle: left, it kept the client's freed arrays and
        #: the graphs' memory until a collection, found by a review); None: no ring
        self._ring: list | None = None
        #: messages to let pass before trying to arm again, after a failed attempt
        self._cool = 0
        self._empty = BatchResults(x.table)
        #: the replies pushed before their messages came (worker/pushed_replies.py)
        self.pushes = Pushes()
        #: ``GPUWB_DEFER_READS``: a pushable run ahead's closing reads wait while its client's
        #: next message is already here (:meth:`_read_ahead`); off: made at once, as before;
        #: ``always`` (:attr:`defer_always`): they wait whether or not it is (the tests' way
        #: to this path on a host of any speed)
        self.defer_reads = True
        self.defer_always = False
        #: how many runs ahead had their closing reads wait for their client's message
        #: (the run ahead itself says it waits, ``_Ahead.deferred``: a pointer to it here
        #: kept a dropped run ahead's graph, and its memory, alive past a swap-out)
        self.deferrals = 0
        #: a lone session's lane measures the run ahead the pacer wants measured itself
        #: (``GPUWB_LANE_MEASURES``); off, it declines it (``lane_declined`` ``measured``)
        #: and the generic run ahead measures it, its message then served by the generic
        #: path and its push chain broken (``ppL`` every sixteenth message, H200 run 204);
        #: ``measured`` counts the runs ahead it measured (``lane_measured``)
        self.measures = True
        self.measured = 0
        #: closing reads made from the slots a read graph filled (worker/lane_reads.py:
        #: ``lane_slot_reads``)
        self.slot_reads = 0
        #: runs ahead the lane declined, and plans it left, by why (``lane_declined``,
        #: ``lane_left_why``: diagnostics)
        self.declined: dict[str, int] = {}
        self.left_why: dict[str, int] = {}
        #: a run now (``plan.now``) whose pacer's batch is open: ended where it raises
        self._measuring = False
        #: ``GPUWB_OVERLAP_STEPS``: a device-bound step committed first has the next step
        #: launched before its reads (worker/lane_overlap.py); ``overlapped`` counts them
        #: (``steps_overlapped``)
        self.overlap = True
        self.overlapped = 0
        #: ... and those whose step before was taken back, its reads having failed
        #: (``steps_overlapped_undone``)
        self.overlaps_undone = 0

    # ------------------------------------------------------------ the next message
    def _next(self, plan: LanePlan) -> None:
        """The plan's next message: its bytes, and its numbers (its float parameters those
        lane_plans.stepped gave, which its run ahead took)."""
        plan.served += 1
        plan.value += plan.difference
        expected = plan.value.to_bytes(plan.size, "big")
        if plan.floats or plan.int_steps:
            plan.params, plan.floats, plan.float_history = plan.stepped
            expected = bytearray(expected)
            pack = DOUBLE.pack
            for at, _n, _x, y in plan.floats:
                expected[at:at + 8] = pack(y)
            expected = bytes(expected)
            plan.stepped = stepped(plan)
        plan.expected = expected

    def _entry(self, plan: LanePlan, k: int | None = None) -> ReplayEntry:
        """The replay entry of the plan's *k*-th message (None: the one served now)."""
        k = plan.served if k is None else k
        return ReplayEntry(plan.sid, plan.first + k * plan.dfirst, self._inputs(plan, k), plan.params,
                           [h + k * d for h, d in zip(plan.outs, plan.douts)], plan.need, plan.early)

    @staticmethod
    def _inputs(plan: LanePlan, k: int) -> list:
        """The input handles of the plan's *k*-th message."""
        return [h + k * d for h, d in zip(plan.inputs, plan.dinputs)]

    # ------------------------------------------------------------ a message came
    def take(self, frames: list, cancel_upto: int, held: bool) -> LanePlan | None:
        """The plan, where the message of *frames* is its next one byte for byte and the
        session as it was (no batch up to *cancel_upto* is answered: cancelled; *held*: the
        server has more to do first, a swap-in or a pool gone); else None: the lane is left
        and the message served as ever."""
        plan, self.plan = self.plan, None
        if plan is None:
            return None
        x = self.x
        why = None
        if plan.served > plan.steps:
            why = "ended"
        elif len(frames) != 1 + (plan.uploads if plan.now else 0) \
                or not hmac.compare_digest(frames[0], plan.expected):
            why = "other message"
        elif held or plan.batch + plan.served * plan.dbatch <= cancel_upto or x.fatal \
                or x.poisoned_at is not None or x._warnings:
            why = "session"
        elif x.replay.ahead.ahead is not plan.ahead:
            why = "no run ahead"
        elif not x.pacer.answers_unlaunched(x.replay.ahead.beside):
            why = "pacer"
        elif plan.now and not self._run_now(plan, frames):
            why = "not run"
        if why is not None:
            self._leave(why)
            if plan.now and plan.served <= 1:   # (armed, and left at its first message: a
                self._cool = COOL               # loop the lane cannot serve now is not
            return None                         # armed again at every other message)
        return plan

    def _run_now(self, plan: LanePlan, frames: list) -> bool:
        """A plan of a stretch that uploads (``plan.now``): its message's replay run now, as
        the others' are run ahead, its uploads made from the message's frames after its
        header (StretchGraphs' ``_frames``, which its eager ops read); answered then as any
        plan's. Whether it ran (not: nothing done, the message served as ever)."""
        x = self.x
        graphs = x.replay.graphs
        graphs._frames = tuple(frames[1:])
        # (what a run that gives up counted, the generic path counts again as it serves it)
        bytes_in, between = x.bytes_in, graphs.between
        ran = False
        try:
            ran = self._run_ahead(plan, now=True)
        except Exception:   # (nothing the client holds written: the generic path serves it)
            if self._measuring:   # (the pacer's batch it began, ended unrun)
                x.pacer.end_batch(0, x.more_work)
        finally:
            graphs._frames = ()
            self._measuring = False
            if not ran:
                x.bytes_in, graphs.between = bytes_in, between
        return ran

    def _leave(self, why: str) -> None:
        """The lane is left, counted by *why* (``lane_left_why``): its ring and the messages
        its plans were read from are forgotten (the next are read anew)."""
        self.left += 1
        self.left_why[why] = self.left_why.get(why, 0) + 1
        self._forget()
        self._ring = None

    @staticmethod
    def batch(plan: LanePlan) -> int:
        """The batch number of the plan's message being served."""
        return plan.batch + plan.served * plan.dbatch

    @staticmethod
    def with_time(packed: bytes, seconds: float) -> bytes:
        """A reply packed less ``t``, with its ``t`` (the worker's time for it, *seconds*):
        a map of eight or nine keys (a fixmap's first byte, 0x88 or 0x89) gets one more."""
        return bytes((packed[0] + 1,)) + packed[1:] + _T + codec.packb(seconds)

    def commit_ahead(self, plan: LanePlan, record: Any) -> bool:
        """Commit the plan's message, its reply pushed, before it comes (worker/
        pushed_replies.py): the answer's effects but its frees, which *record* keeps for the
        message's coming, and the executor's batch number, which stays the last one read.
        The inputs its step writes are copied aside first (``record.saved``: a roll-back
        copies them back); False, nothing done, where that copy cannot be made (out of
        memory: the message is then committed when it comes)."""
        x = self.x
        writes = plan.ahead.writes
        if writes:
            tools = x.replay.graphs.tools
            try:
                saved = []
                for a, _buf in writes:
                    before = tools.empty_like(a)
                    x.phases.mark("commit_allocated")
                    tools.copy(before, a)
                    saved.append((a, before))
            except Exception:
                return False
            record.saved = saved
            x.phases.mark("commit_saved")
        batch_no = x._batch_no
        k = plan.served
        try:
            self.answer(plan, True, record.frees)
        except BaseException:   # (its writes undone: the record is not committed, so its
            for a, before in record.saved:   # message, if it comes, is served quietly by
                x.replay.graphs.tools.copy(a, before)   # the generic path from the values
            record.saved = []                            # before it, not run on them twice)
            raise
        x._batch_no = batch_no
        record.outs = [h + k * d for h, d in zip(plan.outs, plan.douts)]
        record.ran = plan.ran
        record.sid, record.params = plan.sid, plan.params
        record.committed = True
        return True

    def answer(self, plan: LanePlan, pushed: bool = False, deferred: list | None = None) -> bytes | None:
        """Answer the plan's message from its run ahead, as Executor.run_batch, StretchReplay.run
        and RunAhead.answer answer a replay that is the one run ahead: its reply, packed less
        ``t``; None where its reads, made now, failed or warned (nothing done: the message is
        then served as ever, the reads made again there). *pushed*: its reply went before
        it came (worker/pushed_replies.py): the effects alone, and ``b""``; *deferred*: its
        frees go there, not made (a commit ahead of the message: :meth:`commit_ahead`)."""
        x = self.x
        started = x.began_at = perf_counter()
        ahead = plan.ahead
        k = plan.served
        if pushed:
            values = None   # (its reply went with them)
        elif ahead.read_values is not None:
            values = self.numbered(plan, ahead.read_values)
        else:
            got = self._read(plan)
            if got is None:   # (the plan taken: the lane left, counted, its message the
                self._leave("reads failed")   # generic path's, which reads them again)
                return None
            values = self.numbered(plan, got)
        table = x.table
        batch = plan.batch + k * plan.dbatch
        x._batch_no = batch
        x._launched = False
        free = table.free if deferred is None else deferred.append
        mark = x.phases.mark   # (its parts, where the worker times its phases: program_phases.py)
        for h, d in zip(plan.frees, plan.dfrees):   # (the header's F, before the stretch)
            free(h + k * d)
        replay = x.replay
        replay.replays += 1
        run = replay.ahead
        run.ahead = None
        if deferred is None:   # (its parameters, for RunAhead's next guess where the lane is
            run.remember(plan.sid, plan.params)   # left; committed ahead: when it comes)
        # (its draws, if any, the client's now, as RunAhead.answer; a message committed
        # ahead of its coming, tentatively: taken back if it never comes, pushed_replies.py)
        x.draws.commit(tentative=deferred is not None)
        if ahead.writes:   # (the inputs it wrote: the client's now, as RunAhead.answer)
            replay.graphs.write_back(ahead.writes)
        mark("commit_drawn")
        if not plan.now:   # (its client's gap: RunAhead._reads_now; none where run now)
            gaps = run._gaps.get(plan.sid)
            if gaps is None:
                gaps = run._gaps[plan.sid] = deque(maxlen=GAPS_KEPT)
            gaps.append(started - ahead.started - ahead.read_wait)
        for n, (h, d) in enumerate(zip(plan.outs, plan.douts)):
            table.rename(PROVISIONAL + n, h + k * d)
        if plan.input_frees:
            inputs = self._inputs(plan, k)
            for n in plan.input_frees:
                free(inputs[n])
        for h, d in zip(plan.after, plan.dafter):   # (the client's frees after the replay)
            free(h + k * d)
        mark("commit_renamed")
        replay.graphed += 1
        if not plan.now:   # (answered from a replay run ahead: a run now is no such answer)
            replay.alone_answers += 1
            run.hits += 1
        if deferred is None:   # (committed ahead: when its message comes, _claim_pushed)
            run.afresh(plan.sid)
        x.ops_run += plan.ran
        x._ended = plan.ran
        pacer = x.pacer
        self._learn_measured(ahead)   # (a run ahead the pacer measured)
        pacer.ended = perf_counter()
        pacer.pass_baton()
        x.worked += perf_counter() - started
        self.answered += 1
        if pushed:
            return b""
        reply = self.reply(plan, batch, values)
        if plan.early and self.pushes.enabled and self._next_read(plan):
            reply["L"] = 1   # (sent whole, its replies would be pushed: kernelproxy/early_replay.py)
        return codec.packb(reply)

    def unanswer(self) -> None:
        """A message committed ahead and rolled back (worker/pushed_replies.py): the figures
        :meth:`answer` counted, taken back (a loop whose guesses missed had its commits ahead
        counted as replays answered ahead)."""
        replay = self.x.replay
        replay.replays -= 1
        replay.graphed -= 1
        replay.alone_answers -= 1
        replay.ahead.hits -= 1
        self.answered -= 1

    @staticmethod
    def numbered(plan: LanePlan, values: list) -> list:
        """The values of the plan's message's reads (numbered from 0), numbered by its ops."""
        first = plan.first + plan.served * plan.dfirst
        return [[first + seq, value] for seq, value in values]

    @staticmethod
    def reply(plan: LanePlan, batch: int, values: list) -> dict:
        """The reply to the plan's message, batch *batch*, whose reads gave *values*
        (:meth:`numbered`): the lane's answer's, and a pushed one's (worker/
        pushed_replies.py, which adds its own keys)."""
        count = plan.count
        return {"b": batch, "m": _NO_METAS, "v": values, "d": [], "e": None, "w": [],
                "x": plan.ran, "s": max(0, count - plan.ran) if type(count) is int else 0}

    def _read(self, plan: LanePlan, ahead: Any = None) -> list | None:
        """The closing reads of the replay run ahead (*ahead*, else the plan's), made now
        (their values numbered from 0), or None where one failed or warned (nothing kept:
        made again where asked)."""
        x = self.x
        seq, warned = x.seq, len(x._warnings)
        call = x.call
        # (the slots hold the run ahead's values only where that run launched the read
        # graph: the lane's runs, not a generic run ahead the plan took over)
        if ahead is None:
            ahead = plan.ahead
        slots = ahead.read_slots if ahead is not None else None
        values = []
        try:
            if slots is not None:   # (copied out by the read graph its run ahead launched:
                tools = x.replay.graphs.tools   # waited for up to it where a later step
                # is on the stream, lane_overlap.py; else the whole stream, which a measured
                # segment's end mark, after it, has then passed: _learn_measured)
                if ahead.read_mark is not None and x.replay.ahead.ahead is not ahead:
                    tools.passed(ahead.read_mark)
                else:
                    tools.wait()
                for index, convert, view in slots.reads:
                    x.seq = index
                    values.append([index, convert(view)])
                self.slot_reads += len(values)
            else:
                for index, kind, name, target, args, kwargs in plan.reads:
                    x.seq = index
                    values.append([index, call(kind, name, target, args, kwargs)])
        except Exception:
            return None
        finally:
            x.seq = seq
            failed = len(x._warnings) != warned
            del x._warnings[warned:]
        return None if failed else values

    # ------------------------------------------------------------ after the reply
    def batch_ended(self) -> None:
        """The executor's end of the batch just answered (as Executor.after_reply), before
        the next replay is run ahead."""
        x = self.x
        x._ended = None
        x.pacer.end_unlaunched(x.more_work)
        x.phases.mark("lane_unlaunched")

    def after_reply(self, plan: LanePlan) -> None:
        """After the reply to the plan's message: the executor's end of batch, then the next
        replay run ahead by the plan's calls (the generic path where it may not be), and the
        plan kept for the message after."""
        x = self.x
        self.batch_ended()
        pacer = x.pacer
        mark = x.phases.mark   # (its parts, where the worker times its phases: program_phases.py)
        run = x.replay.ahead
        if plan.now:   # (its next replay runs when its message comes, with its data: take)
            plan.ahead = None
            self._next(plan)
            self.plan = plan
            return
        if plan.turn is not None:   # (stretches taking turns: the next one's replay run ahead)
            ring = self._ring
            turn = ring[plan.turn] if ring is not None else None
            # (its own run ahead answered: not kept a round longer, with the arrays it wrote)
            plan.ahead = None
            if turn is not None and self._run_ahead(turn):
                self._next(turn)
                mark("lane_next")
                self.plan = turn
                return
            # (none made: the lane is left, the next message served by the generic path
            # with no run ahead; its plans are read again from the messages after)
            self._leave("turn not run ahead")
            if run.ahead is None:
                pacer.out_of_work(x.more_work)
            return
        if self._run_ahead(plan):
            self._next(plan)
            mark("lane_next")
            self.plan = plan
            return
        # (the generic run ahead, where the lane's may not run: the pacer measures this
        # replay, say); the plan goes on where what it ran is the next message's replay
        entry, before = self._entry(plan), self._entry(plan, plan.served - 1)
        graphs = x.replay.graphs
        g = plan.graph
        # (what StretchGraphs.learn_last teaches after each replay, which the lane's answers
        # skipped: where the inputs come from, from the last two entries)
        g.copies.learn(g.shape.used, before.inputs, before.outs)
        g.copies.learn(g.shape.used, entry.inputs, entry.outs)
        if plan.floats:   # (... and what RunAhead.start guesses the parameters from)
            run.restart_history(plan.sid, history_lists(plan))
        if graphs is not None and not run.start(g, entry, self.pushable(plan)):
            graphs.prepare_next(g)
        if run.ahead is None:
            pacer.out_of_work(x.more_work)
        self._next(plan)
        ahead = run.ahead
        if ahead is not None and not ahead.results.values \
                and (ahead.read_values is not None or ahead.reads is not None or not plan.reads) \
                and run.matches(self._entry(plan)):
            plan.ahead = ahead
            self.plan = plan
            return
        self._leave("run ahead unmatched")

    def _run_ahead(self, plan: LanePlan, now: bool = False, overlapping: bool = False) -> bool:
        """Run the plan's next replay ahead, as RunAhead.start and StretchGraphs.run would
        for it (the same inputs and parameters): whether it ran. *now*: the replay of the
        message just come instead, with its own parameters (:meth:`_run_now`);
        *overlapping*: the message before it committed but not read yet (worker/
        lane_overlap.py): not measured, and its reads wait for its message."""
        x = self.x
        pacer = x.pacer
        run = x.replay.ahead
        g = plan.graph
        # (a message already waiting is served first, as RunAhead.start would — but not where
        # this run's reply is pushed: that message is then most likely the one it answers, and
        # declining left the lane for the generic path at every message a client faster than
        # its worker had sent, 13 % of the hot sync's messages on an H200, run 134; nor
        # where stretches take turns: declining leaves the lane, and the message waiting is
        # most likely this turn's, sent early as the reply before it came)
        if x.poisoned_at is not None or plan.state.graph is not g:
            return self._decline("state")
        if not pacer.may_run_ahead(run.beside):
            return self._decline("pacer")
        if not now and plan.turn is None and not self.pushable(plan) and x.more_work():
            return self._decline("early" if plan.early else "waiting")
        # its inputs: the same arrays, or (a loop-carried result) the one the client's last
        # replay named, of the layout its graphs were captured with (StretchGraphs._fits)
        k = plan.served + (0 if now else 1)
        arrays = x.table.arrays
        inputs = plan.inputs
        moved = []
        for n, step, had in plan.bound:
            a = arrays.get(inputs[n] + k * step)
            if a is had:
                continue
            if a is None or type(a) is not plan.array_type \
                    or plan.guards[n] != (a.shape, a.dtype, a.strides):
                return self._decline("moved")
            moved.append((n, a))
        # (its draws, where it draws: made ahead only as RunAhead's would be)
        draws = plan.held.draws
        next_inputs = self._inputs(plan, k)
        if draws and not run.may_draw(plan.sid, plan.held, next_inputs):
            return self._decline("draws")
        # (a warning of the run ahead's, a parameter's cast or a launch's, would go with the
        # next reply numbered as no op of it: such a run is not run ahead, as in
        # RunAhead.start, and the client's replay warns as ever)
        warned = len(x._warnings)
        # (the next message's: its floats and ints stepped, if any; run now, its own)
        params = plan.params if now else plan.stepped[0]
        if not g.keeps(params):   # (a draw's scalar its graphs baked in would step: the
            del x._warnings[warned:]   # generic path captures it again, the draw eager)
            return self._decline("keeps")
        stepping = plan.floats or plan.int_steps or plan.shared
        if stepping and not g.pvalues.write(params):   # (written where they changed)
            del x._warnings[warned:]
            return self._decline("params")
        estimate = pacer.replay_estimate(g.cost, at_batch_end=False)
        measured_from = None
        if estimate is None and overlapping:   # (one step measured at a time: this one
            del x._warnings[warned:]           # then by after_reply, not counted twice)
            return False
        if estimate is None:   # (the pacer measures this one: here where the session is
            # alone, as RunAhead._run would, a segment of a batch of the pacer's learnt when
            # answered; beside others every replay is measured, and the generic path's)
            if not (self.measures and pacer.alone_now() and pacer.begin_ahead(run.beside)):
                del x._warnings[warned:]
                return self._decline("measured")
            measured_from = pacer.busy
            self._measuring = now   # (a run now that raises: _run_now ends its batch)
            if pacer.fresh_due:
                pacer.start_segment()
            pacer.began = perf_counter()
            self.measured += 1
        began = perf_counter()
        mark = x.phases.mark   # (its parts, where the worker times its phases: program_phases.py)
        mark("lane_checked")
        graphs = x.replay.graphs
        tools = graphs.tools
        copies = g.copies
        # (the rows it sets make a next replay the generic path set up ahead stale: one its
        # set-up took as done where its inputs were the same objects again — a loop's
        # results take turns in a few arrays — read its inputs from, and wrote its results
        # into, arrays those rows no longer named; a wrong value in three of six VM runs of
        # a loop of turns with an in-place write between, none in twelve with this)
        copies.unprepare()
        rows = plan.gather_rows
        direct = g.direct   # (inputs read where they are: StretchGraphs._replay's)
        for n, a in moved:
            if n in direct:
                plan.bufs[n] = a
        views = graphs.moving_views_at(g, plan.bufs.__getitem__, params) if g.gathered else {}
        if views is None:   # (a bound stepped past its data's end: the generic path's)
            del x._warnings[warned:]
            return self._decline("views")
        if rows is None:   # (no copy table: each input copied into its buffer, as set_up does)
            bufs, now = plan.bufs, dict(moved)
            for n, _step, had in plan.bound:
                if n not in direct:
                    tools.copy(bufs[n], now.get(n, had))
            for key, view in views.items():
                tools.copy(bufs[key], view)
        elif moved or views:
            gather = copies.gather
            for n, a in moved:
                if n not in direct:
                    gather.set(rows[n], plan.bufs[n], a)
            for key, view in views.items():   # (its moving views at the step's bounds)
                gather.set(rows[key], plan.bufs[key], view)
            if gather.commit():
                g.pvalues.dirty = True
        made = []
        if plan.scatter_rows:
            scatter = copies.scatter
            for row, (n, kept, make) in enumerate(plan.scatter_rows):
                array = copies._made_for(tools, n, make)
                scatter.set(row, array, kept)
                made.append((n, array))
            if scatter.commit():
                g.pvalues.dirty = True
        mark("lane_gathered")
        # (a run now's uploads captured in its graphs: their frames into their places)
        if g.uploads_in and not graphs.fill_uploads(g):
            if measured_from is not None:
                pacer.end_batch(0, x.more_work)
                self._measuring = False
            return self._decline("uploads")
        aside = speculating(x, draws)   # (its eager products allocate; its draws kept aside)
        try:
            # (the parameter block written before the first graph's launch, after the eager
            # ops before it, whose results the copy tables' rows copy: ready_to_launch)
            copies.forget_rows()
            if g.draws:   # (a Generator's draws in its graphs: their states copied first)
                graphs.before_draws(g)
            launch = tools.launch
            first = plan.first + k * plan.dfirst
            handout: dict = {}
            for graph, eager in plan.launches:
                if graph is not None:
                    g.ready_to_launch()
                    launch(graph)
                    mark("lane_graph")
                elif not graphs.run_eager(plan.state, eager, g, first, params, self._empty, handout,
                                          copies):
                    raise _Relayout   # (a result's layout changed: captured again)
                else:
                    mark("lane_eager")
            if g.uploads_in:   # (their places written again once these launches pass)
                g.uploads_read = tools.mark()
            overlaps = plan.read_slots_next is not None   # (two read graphs taking turns:
            if overlaps:                                      # the step before's may be unread)
                plan.read_slots, plan.read_slots_next = plan.read_slots_next, plan.read_slots
            if plan.read_slots is not None:   # (its closing reads' values copied out: lane_reads)
                launch(plan.read_slots.graph)
            read_mark = tools.mark() if overlaps else None
            for n in plan.eager_kept:   # (its new array the client's, as StretchGraphs._finish)
                array = source = eager_array_out(g, n, handout[n])
                if array is None:   # (written after, in the graphs' buffer: copied from it)
                    source = g.env[n]
                if array is None or array.base is not None:   # (or a view: its own copy)
                    array = tools.empty_like(source)
                    tools.copy_any(array, source)
                made.append((n, array))
            if plan.remade:   # (its kept views, made again on what it hands out: kept_views)
                now = dict(moved)
                inputs = {n: now.get(n, had) for n, _step, had in plan.bound}
                made += remake(x.call, x.device.as_array, plan.remade, inputs, dict(made),
                               plan.graph.shape.remade_slots, params=params)
            table = x.table
            for n, array in made:
                table.put(PROVISIONAL + n, array)
        except Exception:   # (out of memory, an eager op's error: nothing the client holds
            self._free(plan)   # was written; its replay runs as ever and raises it there)
            if measured_from is not None:
                pacer.end_batch(0, x.more_work)
            return False
        finally:
            speculated(x, aside)
        del made
        if len(x._warnings) != warned:
            del x._warnings[warned:]
            self._free(plan)
            if measured_from is not None:
                pacer.end_batch(0, x.more_work)
            return False
        mark("lane_handed")
        if measured_from is not None:   # (its segment ends here; learnt when answered)
            pacer.end_batch(plan.held.ops, x.more_work)
        else:
            pacer.charge(estimate)
        mark("lane_charged")
        writes = []
        if plan.written:   # (the arrays it read, written back when its message is answered)
            now = dict(moved)
            for n, _step, had in plan.bound:
                if n in plan.written:
                    writes.append((now.get(n, had), plan.bufs[n]))
        ahead = run.ahead = _Ahead(plan.sid, next_inputs, params, g, self._empty, plan.ran,
                                   plan.slots, plan.reads_left, writes, measured_from, began,
                                   pacer.alone_now())
        ahead.read_slots = plan.read_slots   # (launched above: its slots are its values)
        ahead.read_mark = read_mark
        plan.ahead = ahead
        # its closing reads at once where RunAhead.start would make them so (a short replay,
        # or short beside its client's gaps; not an early replay's), or where its reply is
        # then pushed (worker/pushed_replies.py: the client's message no longer waits for the
        # worker's answer, so the worker waits for the device now, not on that answer's path):
        # one that fails or warns leaves them for the client's replay, as there
        cost = g.cost[0]
        if overlapping:   # (the step before it read first: its own reads, its message's)
            ahead.deferred = True
        elif plan.reads and not plan.early and not now and cost is not None:   # (run now: read
            # when answered, its client's message here already)
            if self.pushable(plan):
                if self.defer_reads and (self.defer_always
                                         or cost >= DEFER_MIN_SECONDS and x.more_work()):
                    ahead.deferred = True   # (its client's next message first: _read_ahead)
                else:
                    self._read_ahead(plan, ahead)
            elif run._reads_now(plan.sid, cost):
                self._read_ahead(plan, ahead)
        mark("lane_made")
        return True

    def _decline(self, why: str) -> bool:
        """A run ahead not made, counted by *why* (``lane_declined``): False."""
        self.declined[why] = self.declined.get(why, 0) + 1
        return False

    def _read_ahead(self, plan: LanePlan, ahead: Any) -> None:
        """The closing reads of the plan's run ahead *ahead*, made now (a wait for the device):
        kept where they gave values, else left for the client's replay to make.

        Made at once after the launch, the wait is the device's time for the step, which a
        worker that sets its loop's pace (its client's next message already waiting as the
        run ahead is launched: a drawing loop on a GPU, H200 run 202) spent doing nothing.
        Where the reply is pushed, that message is already here and the step's device time
        is worth hiding (DEFER_MIN_SECONDS), the reads wait (``_Ahead.deferred``) while the
        message is taken and confirmed, the device running meanwhile, and are made before
        their reply is offered (:meth:`read_deferred`). That reply then goes after the
        message is confirmed instead of before it is taken: a client whose message waits is
        not waiting for that reply yet."""
        x, run = self.x, self.x.replay.ahead
        mark = x.phases.mark
        mark("lane_ready")
        waited = perf_counter()
        values = self._read(plan, ahead)
        ahead.read_wait += perf_counter() - waited
        mark("lane_read")
        if values is not None:
            ahead.reads, ahead.read_values = None, values
            run.read_now += 1
        else:
            run.read_later += 1

    def read_deferred(self, plan: LanePlan) -> None:
        """The plan's run ahead's closing reads, deferred (:meth:`_read_ahead`), made now,
        before its reply is offered (where it still stands and has none)."""
        ahead = plan.ahead
        ahead.deferred = False
        if ahead.read_values is None and self.x.replay.ahead.ahead is ahead:
            self._read_ahead(plan, ahead)

    def read_committed(self, plan: LanePlan, ahead: Any) -> None:
        """The closing reads of the plan's run ahead *ahead*, whose message was just committed
        ahead before them (worker/server_replies.py ``_commit_then_read``): made now (a wait
        for the device), kept in *ahead* where they gave values; and its measurement, if the
        pacer measured it, learnt now (its segment was still running at the commit)."""
        self._read_ahead(plan, ahead)
        self._learn_measured(ahead)

    def _learn_measured(self, ahead: Any) -> None:
        """The device time of a run ahead the pacer measured, learnt once its segment is
        harvested: at its answer, or, committed before its reads with the device still
        running it, after their wait (:meth:`read_committed`). Learnt once (its
        ``measured_from`` cleared). Left unlearnt at a commit made first, the step's cost
        stayed due for measuring, and every later run ahead of it was measured: 473 of 773
        of heat2d 2048²'s lane answers on an H200 (run 256) against 47 (run 251), the events
        and their harvest 15-25 µs of the worker's a message."""
        pacer = self.x.pacer
        if ahead.measured_from is not None and pacer.harvested():
            pacer.learn(ahead.graph.cost, pacer.busy - ahead.measured_from,
                        ahead.alone and pacer.alone_now())
            ahead.measured_from = None

    def pushable(self, plan: LanePlan) -> bool:
        """Whether the plan's replies are pushed ahead (worker/pushed_replies.py): where the
        next batch the worker reads is its next message (:meth:`_next_read`) and it is not an
        early replay."""
        return self.pushes.enabled and not plan.early and not plan.now and self._next_read(plan)

    @staticmethod
    def _next_read(plan: LanePlan) -> bool:
        """Whether the plan's next message is the next batch the worker reads: its batches go
        on by one, or it is one of stretches taking turns (each batch between two of its own
        another plan's of the ring)."""
        return plan.dbatch == 1 or plan.turn is not None

    def _free(self, plan: LanePlan) -> None:
        """A run ahead of the lane's that did not finish: its provisional results go, and
        its draws are undone (the generators made again from their journals)."""
        table = self.x.table
        for n in range(plan.slots):
            table.free(PROVISIONAL + n)
        self.x.draws.undo()
