"""Replies pushed ahead: a steady loop's next reply sent before its message comes
(docs/stretch-replay.md, "Replies pushed ahead").

Why (issue 50): with the steady lane (steady_lane.py) a loop that reads a value every
iteration still waits, every iteration, for the whole round trip: the client sends its
replay, the worker answers it from the replay run ahead, then runs the next one ahead. The
client's wait holds the transport's round trip and the worker's answer; the iteration is the
two sides' work one after the other.

Once the lane knows the loop's next message byte for byte and its run ahead has read the
values that message asks for, the reply to that message is known too: the worker sends it
at once, pushed, with the bytes of the message it answers (``P``). The client sends its
message as ever; where the bytes it sent are those, the reply is already there (or on its
way) and it takes it without waiting for the worker.

**Committed ahead.** A push alone moves the worker's run ahead onto the loop's path: the next
one starts only once the message before it came. So the worker also *commits* the pushed
message at once, as if it had come (the lane's answer's effects: the results renamed to the
client's handles; the frees it will carry held back until it comes), and runs the next
replay ahead and pushes its reply too — one message ahead of the client at most. The loop
then goes at the pace of the slower side, not of the two one after the other. When the
message comes, byte for byte, its frees are made (it is *confirmed*); any other batch rolls
the commit back (its results freed, the run ahead dropped) before it is served, and ends the
*chain* of pushes: every push carries its chain (``C``), and the client, which drops the
push that batch did not match, drops every later push of that chain too (they were made
from a state that batch changed). A push also says the last batch the worker read (``K``):
the client keeps each batch a push answered until then (kernelproxy/pushed_replies.py: a
move sends the unread ones again).

Exact by construction: the pushed reply is the lane's answer to that message, made from the
same run ahead, and both ends compare the same bytes (in constant time on the worker: they
hold the session key). A pushed message the lane can no longer answer from its run ahead
(the session was swapped out meanwhile, or its commit rolled back for a move that did not
happen) is served by the generic path with its reply held back — the client has it — unless
it failed: then that reply goes, and the client raises its error at its next sync point.

Pushed only where nothing can come between: the loop's batch numbers go on by one (the next
batch the worker reads is the one pushed for), not for an early replay (its reply waits for
the rest of the client's run), never with a warning, a poisoned session or a read not made.
A step that writes its inputs (``w -= lr * grad``, a stencil's ``u[1:-1, 1:-1] = ...``) is
committed ahead too, where its device time is at least COMMIT_WRITES_MIN_SECONDS (one that
runs eager ops between its graphs, a ``RandomState``'s draw, only where it writes at most
SAVED_EAGER_MOST: ``Pushes.may_save``): before its
writes are copied back into the client's arrays, their values are copied aside on the
device (one copy of each, on the session's stream), and a roll-back copies them back; a
swap-out rolls such a commit back first (the arrays it would put back move). Until
2026-11-29 such a step was pushed but committed only when its message came, so its next
step's run ahead waited for that message, and the device with it. The copy aside costs the
worker a copy's launch a step (~10-15 µs on an H200 host), which a step whose pace is the
worker's only pays (run 236: a 512 x 512 stencil 5-19 % slower committed ahead); for a
2 048 x 2 048 one the gain was within the host's noise (runs 236-237: -9 %, -12 %, -4 %,
+10 %): its pace is its device time plus the worker's time between reading one step and
launching the next, which one message committed ahead does not overlap
(docs/stretch-replay.md, "A decay and a float made from another guessed").
``GPUWB_COMMIT_WRITES=0`` commits such steps when their messages come, as before. The values
kept aside are bounded (SAVED_MOST, or a share of the session's memory limit): a step that
writes more is committed when its message comes. A step that draws is committed ahead
with its draws tentative (worker/draw_journal.py ``commit(tentative=True)``): confirmed when
its message comes, retracted by a roll-back — its generators made again from their journals
as they were before it, a Generator's state put back — so the client's next draws are those
it would have had. (Until 2026-11-28 such steps were pushed and committed only when their
message came: a loop drawing every step ran at the two sides' pace one after the other.)
``GPUWB_PUSH=0`` turns pushes off, ``GPUWB_PUSH_AHEAD=0`` the commits ahead (diagnostics: the
benchmarks' sides ``nopush`` and ``nocommit``).
"""

from __future__ import annotations

import hmac
from collections import deque
from time import perf_counter
from typing import Any

from ..protocol import codec
from .run_ahead import LIMIT_SHARE

__all__ = ["Pushes", "PushRecord", "SAVED_MOST", "SAVED_EAGER_MOST", "COMMIT_WRITES_MIN_SECONDS"]

#: the most bytes of inputs a step committed ahead may write (their values before it kept
#: aside on the device until its message comes) where the session's memory is not limited;
#: where it is, a share of its limit (run_ahead.LIMIT_SHARE)
SAVED_MOST = 64 << 20
#: the least device time of a step (its graphs' measured cost) committed ahead where it
#: writes its inputs: about the worker's own time a message in the lane on an H200 host
#: (85-130 µs, runs 228 and 236); a shorter step's pace is the worker's, which the copy
#: aside only lengthens (``GPUWB_COMMIT_WRITES=always``: whatever its device time)
COMMIT_WRITES_MIN_SECONDS = 100e-6
#: the most bytes of inputs kept aside for a step committed ahead that runs eager ops between
#: its graphs (a ``RandomState``'s draw: its measured span is no device time, ``may_save``):
#: between run 254's 8 KB walk, faster committed ahead, and run 250's 4 MB one, slower
SAVED_EAGER_MOST = 1 << 20


class PushRecord:
    """A reply pushed and not yet claimed: its batch, the bytes its message must be, and,
    once committed ahead, what the commit did (the client's handles its results took, the
    frees held back until the message comes, its ops, its stretch and parameters, and the
    inputs it wrote with their values before, kept aside: ``saved``)."""

    __slots__ = ("batch", "expected", "committed", "outs", "frees", "ran", "sid", "params",
                 "saved")

    def __init__(self, batch: int, expected: bytes) -> None:
        self.batch, self.expected = batch, expected
        self.committed = False
        self.outs: list = []
        self.frees: list = []
        self.ran = 0
        #: the stretch and parameters of the message committed ahead (the loop's history of
        #: parameters takes them when it comes: worker/float_steps.py)
        self.sid: int | None = None
        self.params: list | None = None
        #: (the client's array, a copy of its values before the commit wrote it), each input
        #: the message committed ahead wrote: copied back by a roll-back
        self.saved: list = []


class Pushes:
    """One session's pushed replies, oldest first (``sent``), the chain they belong to, and
    their counts: pushed (``pushed``), claimed and committed when their message came
    (``taken``), committed ahead and confirmed (``confirmed``), claimed and served by the
    generic path with the reply held back (``quiet``), commits rolled back (``rolled``)."""

    def __init__(self) -> None:
        self.enabled = True
        #: commit a pushed message ahead of its coming (``GPUWB_PUSH_AHEAD``)
        self.commit_ahead = True
        #: ... also one whose step writes its inputs, where its device time is long
        #: (``GPUWB_COMMIT_WRITES``), or whatever it is (``always``)
        self.commit_writes = True
        self.commit_writes_always = False
        #: ... before its reads are made, where its step is the device's long work
        #: (``GPUWB_COMMIT_FIRST``: :meth:`may_commit_first`), or whatever it is (``always``)
        self.commit_first = True
        self.commit_first_always = False
        self.sent: deque[PushRecord] = deque()
        self.chain = 0
        self.pushed = self.taken = self.confirmed = self.quiet = self.rolled = 0
        #: messages committed ahead before their reads were made (``push_first``), and such
        #: commits taken back, their reads having failed (``push_first_undone``)
        self.first = self.first_undone = 0

    def pushed_for(self, batch: int) -> bool:
        """Whether a reply for *batch* is pushed already."""
        return bool(self.sent) and self.sent[-1].batch >= batch

    def offer(self, lane: Any, confirmed: int) -> bytes | None:
        """The reply to push for *lane*'s next message (the lane's answer, SteadyLane.reply,
        and ``P`` its bytes, ``C`` the chain, ``K`` *confirmed*, the last batch the worker
        read), now recorded; None where it may not be pushed (the module's doc)."""
        plan = lane.plan
        if plan is None or plan.ahead is None or plan.ahead.read_values is None:
            return None
        record = self.reserve(lane)
        return None if record is None else self.pack(lane, plan, record, plan.ahead, confirmed)

    def reserve(self, lane: Any) -> PushRecord | None:
        """A record for *lane*'s next message, its reply packed by :meth:`pack` (:meth:`offer`
        at once; a message committed before its reads, worker/server_replies.py
        ``_commit_then_read``, once they are made); None where it may not be pushed (the
        module's doc). Not pushed until packed: where its reads then fail the caller takes
        it back."""
        plan = lane.plan
        if plan is None or not lane.pushable(plan) or plan.served > plan.steps:
            return None
        x = lane.x
        if x.replay.ahead.ahead is not plan.ahead or x.poisoned_at is not None or x._warnings \
                or x.fatal:
            return None
        record = PushRecord(lane.batch(plan), plan.expected)
        self.sent.append(record)
        return record

    def pack(self, lane: Any, plan: Any, record: PushRecord, ahead: Any, confirmed: int) -> bytes:
        """The pushed reply of *record* (:meth:`reserve`), from *ahead*'s reads
        (``read_values``), counted as pushed."""
        packed = codec.packb({**lane.reply(plan, record.batch, lane.numbered(plan, ahead.read_values)),
                              "t": perf_counter() - ahead.started, "P": record.expected,
                              "C": self.chain, "K": confirmed})
        self.pushed += 1
        return packed

    def may_commit_first(self, plan: Any) -> bool:
        """Whether *plan*'s message may be committed ahead before its reads are made (they
        wait for the device meanwhile): on, and its step is long device work — its measured
        time at least COMMIT_WRITES_MIN_SECONDS and no eager op between its graphs (whose
        span is the worker's time too) — or ``always``. A short step's reply is wanted first:
        its client, not the device, is the slower side."""
        if not self.commit_first:
            return False
        if self.commit_first_always:
            return True
        cost = plan.graph.cost[0]
        return cost is not None and cost >= COMMIT_WRITES_MIN_SECONDS and not plan.eager

    def may_commit_ahead(self, lane: Any, plan: Any) -> bool:
        """Whether *plan*'s message, its reply just pushed, may be committed before it comes:
        none is committed ahead yet (one message ahead at most), its run ahead stands, its
        draws, if any, can be taken back (their generators' journals, DrawJournal.committable:
        a roll-back retracts them), and the inputs it writes, if any, may be kept aside
        (:meth:`may_save`; a roll-back copies them back)."""
        if not self.commit_ahead or not self.sent or any(r.committed for r in self.sent):
            return False
        x = lane.x
        if self.sent[-1].batch != lane.batch(plan) or x.replay.ahead.ahead is not plan.ahead:
            return False
        stretch = x.replay.stretches.held.get(plan.sid)
        return stretch is not None and (not plan.written or self.may_save(x, plan)) \
            and (not stretch.draws or x.draws.committable())

    def may_save(self, x: Any, plan: Any) -> bool:
        """Whether the inputs *plan*'s step writes (its run ahead's ``writes``: the client's
        array, the graphs' buffer) may be kept aside for a commit ahead: committing them is
        on, the step's device time is at least COMMIT_WRITES_MIN_SECONDS (or ``always``),
        each is one range of bytes (a copy's), and together they are within SAVED_MOST (a
        session whose memory is limited: its limit's share) — and, where the step runs eager
        ops between its graphs, within SAVED_EAGER_MOST (but ``always``).

        Why eager steps are bounded: a step that draws from a ``RandomState`` (cuRAND's host
        API runs between its graphs) is measured from its first graph's start to its last's
        end, the worker's time issuing the draw included, so its span passes the bound
        whatever its device time. Committed ahead, the worker's next run ahead overlaps the
        client's turn, but the copy aside is the worker's too, and grows with the bytes
        (an allocation and a copy: 41.6 µs of the random walk's 371 a message at 4 MB, H200
        run 250, where that walk ran 0.1009, 0.0842 s a run committed ahead against 0.0735,
        0.0674 with ``GPUWB_COMMIT_WRITES=0``). A small one is cheap: ``replay_sync.py``'s
        ``walk_step`` (8 KB) took 205.5, 202.4 µs an iteration with no eager step committed
        ahead against 117.2, 124.2 committed (run 254)."""
        if not self.commit_writes:
            return False
        if not self.commit_writes_always:
            cost = plan.graph.cost[0]
            if cost is None or cost < COMMIT_WRITES_MIN_SECONDS:
                return False
        writes = plan.ahead.writes
        limit = x.memory_limit
        most = limit // LIMIT_SHARE if limit else SAVED_MOST
        if plan.eager and not self.commit_writes_always:
            most = min(most, SAVED_EAGER_MOST)
        total = 0
        for a, _buf in writes:
            flags = a.flags
            if not (flags.c_contiguous or flags.f_contiguous):
                return False
            total += a.nbytes
        return total <= most

    def head_matches(self, frames: list) -> bool:
        """Whether *frames* are the oldest pushed reply's message byte for byte (compared in
        constant time: they hold the session key)."""
        return len(frames) == 1 and hmac.compare_digest(frames[0], self.sent[0].expected)

    def roll_back(self, lane: Any, clear: bool) -> None:
        """Undo every commit made ahead (newest first: its results freed, its ops uncounted;
        the frees it held back were never made), and drop the run ahead made from them. With
        *clear* (a batch that is not the pushed one came: the client drops these pushes and
        the later ones of their chain), forget them and start a new chain; without (a move
        about to be made), keep them, uncommitted: their messages, if they come here, are
        served quietly by the generic path."""
        x = lane.x
        table = x.table
        committed = [r for r in self.sent if r.committed]
        for record in reversed(committed):
            for h in record.outs:
                table.free(h)
            for a, before in record.saved:   # (the inputs it wrote: as they were before it)
                x.replay.graphs.tools.copy(a, before)
            x.ops_run -= record.ran
            lane.unanswer()   # (nor is it a replay answered)
            record.committed = False
            record.outs, record.frees, record.saved = [], [], []
        if committed:
            self.rolled += len(committed)
            x.replay.drop_ahead()   # (the run ahead's own draws undone first: they came after)
            x.draws.retract()       # (then the committed messages' draws taken back)
            lane.plan = None
        if clear:
            self.sent.clear()
            self.chain += 1
