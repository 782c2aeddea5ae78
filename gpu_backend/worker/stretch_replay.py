"""The executor's side of stretch replay (docs/stretch-replay.md): keeping an offered
stretch, running a replay entry, and a skipped replay's frees.

A part the executor holds (``executor.replay``), so that executor.py stays the op loop. It
runs ops only through the executor's public interface (``run_records``, ``call``,
``record_error``, ``poison``, ``seq``), and owns what replay keeps: the held stretches
(worker/stretches.py), their graphs where the device has graph tools
(worker/graph_replay.py), and the counts of replays run.
"""

from __future__ import annotations

import gc
from time import perf_counter
from typing import Any, Iterator, NamedTuple

from ..protocol import api
from ..protocol import messages as m
from ..protocol.errors import error_name
from ..protocol.stretch_records import slots_in
from ..protocol.stretches import user_kernel
from .batch_results import BatchResults
from .draw_journal import DRAW_METHODS, GENERATOR_CLASS, STATE_CLASS, STATE_DRAWS
from .graph_replay import Capture, StretchGraphs
from .moving_views import fresh_result, kernel_writes
from .result_meta import array_meta
from .run_ahead import RunAhead
from .steady_lane import SteadyLane
from .stretches import HeldStretch, HeldStretches, Slot

__all__ = ["StretchReplay", "Offer", "UNPACED_REPLAY", "SHARE_UNPACED_REPLAY"]

#: Device seconds of work (the pacer's per-op estimate times its ops) from which a held
#: stretch is not replayed through its graphs while other sessions share the device, where
#: the pool's workers are told one (``GPUWB_UNPACED_REPLAY_US``; None, the default: never).
#: A replay launches its ops without the pacer between them, so a newcomer waits behind all
#: of it (a loop of 29 GEMMs of 0.33 ms, replayed, queued 10 ms at once, and an interactive
#: user beside it waited 2-5 ms a request); re-run from its records, the same ops are paced
#: one by one, as any batch's. Measured at 0.5 ms (H200, 2026-11-25, docs/fair-share.md,
#: "Replays and the pacer"): the interactive user's p99 fell to 0.63-0.84x `none`'s, but a
#: training loop beside long GEMMs fell from 0.64 to 0.25 of its rate (its steps now wait
#: out long kernels between their ops), so it is an operator's choice, off by default.
UNPACED_REPLAY: float | None = None
#: ... and under a standing grant (``share``, arbiter/share.py) when none is told: 4 ms.
#: There nobody waits for a turn, so a step re-run paced costs it no wait behind another
#: user's turn; a held-back user's loop of ~10 ms of GEMMs replayed at once ran far past the
#: share window, and paced the deep-queued 1:2:4 users came within 1.5-1.7 % of their
#: weights (against 12-29 %) and dl-mix's trainer kept 0.53 of its rate (runs 12-14, H100
#: and H200, docs/fair-share.md, "Long replays paced beside others").
SHARE_UNPACED_REPLAY = 0.004
#: (Either bound paces a replay only where the session's per-op estimate times its ops and
#: the stretch's shortest replay so far, in the worker's wall time, both reach it:
#: GraphState.shortest.)

#: what an early replay's ops may be (StretchReplay.early_safe): Python's operators,
#: methods, functions and attributes that make an array or a value; and the in-place
#: operators (``+=``, ``u[i] = v``: they return nothing) where what they write is an array
#: the stretch made itself (_writes_its_own)
_EARLY_KINDS = frozenset((m.KIND_OPERATOR, m.KIND_METHOD, m.KIND_FUNCTION, m.KIND_ATTRIBUTE))
_EARLY_WANTS = frozenset((api.ARRAY, api.VALUE))
#: ops whose result is a view of their first operand (or target): a write into it is a
#: write into that operand's memory
_VIEW_OPERATORS = frozenset(("getitem",))
_GENERATOR_PREFIX = GENERATOR_CLASS + "."
_STATE_PREFIX = STATE_CLASS + "."


def _writes_its_own(written: Any, made: dict, inputs_too: bool = False) -> bool:
    """Whether *written*, the operand an in-place operator writes, is an array the stretch
    made itself from scratch, or a view of one (followed through views to the op that
    made its memory: Python's operators other than the in-place ones, ``getitem`` and
    ``+x`` make new arrays, and so do a ufunc's call, ``copy``, a draw and a user kernel that
    returns its result: moving_views.fresh_result); an input, a parameter, or anything an
    op of another kind made (which may return its operand: ``asarray``,
    ``astype(copy=False)``) is not.
    *inputs_too*: an input, or a view of one so, counts as well (a replay's graphs write
    an input's buffer, copied back into the client's array at its end: StretchGraphs.run
    leaves that copy for later where it runs ahead)."""
    while True:
        if type(written) is not Slot:
            return False
        if written.kind == "i":
            return inputs_too
        if written.kind != "r":
            return False
        op = made.get(written.n)
        if op is None:
            return False
        if op.kind == m.KIND_ATTRIBUTE:   # (``x.T``, ``z.real``: views of their target)
            written = op.target
        elif op.kind == m.KIND_OPERATOR and op.name in _VIEW_OPERATORS:
            written = op.args[0] if op.args else None
        else:   # (an operator's, a ufunc's, a copy's, a user kernel's: moving_views' rule)
            return fresh_result(op)


def _journaled_draw(op: Any) -> bool:
    """Whether *op* is a draw a replay run ahead may make: a ``RandomState`` method of
    draw_journal.DRAW_METHODS (its journal can make it again) or a ``Generator``'s of
    STATE_DRAWS (its state is copied first), whose arguments hold no array (a parameter,
    ``rs.normal(0, sigma, n)``'s sigma, is a plain value when it runs), and that makes an
    array."""
    name = op.name
    if type(name) is not str or op.want != api.ARRAY or "out" in op.kwargs:
        return False
    if name.startswith(_GENERATOR_PREFIX):
        allowed = name[len(_GENERATOR_PREFIX):] in DRAW_METHODS
    elif name.startswith(_STATE_PREFIX):
        allowed = name[len(_STATE_PREFIX):] in STATE_DRAWS
    else:
        return False
    return allowed and not any(s.kind != "p" for s in slots_in([op.args, op.kwargs]))


#: why graphs never serve a stretch that launches a user's kernel (GraphState.never)
POINTERS_TOLD = "a user kernel, addresses told"


def _launches_user_kernel(stretch: HeldStretch) -> bool:
    """Whether *stretch* launches a user's kernel (protocol/stretches.user_kernel)."""
    return any(type(item) is not Slot and user_kernel(item.kind, item.name)
               for item in stretch.items)


def _kernel_changes_only(op: Any, made: dict, inputs_too: bool) -> bool:
    """Whether a kernel op changes nothing but what it makes and what :func:`_writes_its_own`
    allows, making one array or none. A fused program says which arguments it writes
    (moving_views.kernel_writes); a user's kernel (``RawKernel``, ``ElementwiseKernel``, a
    jit kernel) may write any array it is given, so every one of them must be such an array
    (its launch's sizes and scalars are plain values)."""
    if op.want not in (api.ARRAY, api.NONE):
        return False
    writes = kernel_writes(op)
    if writes is None:
        return all(_writes_its_own(slot, made, inputs_too)
                   for slot in slots_in([op.args, op.kwargs]) if slot.kind != "p")
    return not op.kwargs and all(
        i < len(op.args) and _writes_its_own(op.args[i], made, inputs_too) for i in writes)


class Offer(NamedTuple):
    """A batch offered as a stretch, read before it runs: the stretch (None: it does not
    read, and is not kept) and its inputs' metadata entries as the batch began."""

    stretch: HeldStretch | None
    inputs: list


class StretchReplay:
    """A session's stretch replay: its held stretches (*stretches*), the graphs that run
    them where the device has graph tools, and the counts of replays run."""

    def __init__(self, executor: Any, stretches: HeldStretches) -> None:
        self.x = executor
        self.stretches = stretches
        #: the held stretches' graphs; None where the device has no graph tools, or the
        #: pool asked for re-runs only (:meth:`rerun_only`)
        self.graphs: StretchGraphs | None = (StretchGraphs(executor)
                                             if executor.device.graph_tools else None)
        self.replays = 0      # replay entries run
        self.graphed = 0      # of which served by graphs
        self.fallbacks = 0    # of which a captured graph could not serve (re-run instead)
        self.paced = 0        # of which re-run, paced, for others share the device (UNPACED_REPLAY)
        #: under a standing grant, pace only a replay of more work than the session's lead
        #: (:meth:`pacing_bound`; ``GPUWB_PACE_BY_LEAD``, a diagnostic)
        self.pace_by_lead = False
        #: under a standing grant, never pace a replay whose session has its next message
        #: waiting already (a loop that queues deep, not one that waits for its reads):
        #: :meth:`pacing_bound`; ``GPUWB_UNPACED_BACKLOG``, a diagnostic
        self.unpaced_backlog = False
        #: the replay being run is re-run paced on purpose (its graphs still fit) and its
        #: reply says so (``f`` 2, where ``paced_keeps_held``): the client keeps it held
        self.paced_now = False
        #: say a paced re-run apart from one whose graphs did not serve (``GPUWB_PACED_KEEPS_HELD``;
        #: off, ``f`` 1 for both, as before: the client counted three paced re-runs in a row
        #: as a stale stretch, dropped it and, after two re-offers, let it go, so beside
        #: others a syncing user's loop of long GEMMs ran as ordinary batches from its
        #: eleventh iteration on, H200 runs 321-322)
        self.paced_keeps_held = True
        self.alone_answers = 0   # answered from the one run ahead with no batch of the pacer's
        #: the device seconds from which a replay beside other sessions is paced (None:
        #: never, or SHARE_UNPACED_REPLAY under a standing grant; ``GPUWB_UNPACED_REPLAY_US``;
        #: 0: every one, as the tests on the NumPy
        #: device, which measures no device time, set it)
        self.unpaced: float | None = UNPACED_REPLAY
        #: the next replay of a loop's stretch, run as soon as the last one was answered
        #: (worker/run_ahead.py)
        self.ahead = RunAhead(self)
        #: a loop's replays that go on by fixed steps, served in a few calls a message
        #: (worker/steady_lane.py)
        self.lane = SteadyLane(self.x)
        #: whether the session was told an address of its memory (``x.data.ptr``): from then
        #: on its stretches that launch a user's kernel are re-run from their records
        #: (:meth:`pointer_told`)
        self.pointers = False

    def pointer_told(self) -> None:
        """The session's client was told an address of its memory (``array.data``). A
        user's kernel may then be given it (as an integer, or in an array) and write that
        memory itself, which neither a graph's buffers nor a run ahead's bookkeeping see:
        a graph would read its copy of the array, a run never asked for would have written
        it. So every stretch that launches a user's kernel is re-run from its records from
        now on, never run ahead nor replayed early: its ops then run on the session's very
        arrays, as without replay."""
        if self.pointers:
            return
        self.pointers = True
        self.drop_ahead()
        self.ahead.safe.clear()
        if self.graphs is not None:
            for sid, stretch in self.stretches.held.items():
                state = self.graphs.states.get(sid)
                if state is not None and _launches_user_kernel(stretch):
                    state.give_up(POINTERS_TOLD)

    def rerun_only(self) -> None:
        """``GPUWB_GRAPHS=rerun``: every replay runs from its records, never through graphs."""
        self.graphs = None

    def read_offer(self, body: bytes) -> Offer:
        """The batch *body* is offered: its stretch, read before it runs, with the
        metadata of its inputs as they are now (an input it drops is gone by its end)."""
        stretch = self.stretches.read(body)
        inputs = []
        if stretch is not None:
            arrays = self.x.table.arrays
            for hid in stretch.recorded_inputs:
                array = arrays.get(hid)
                inputs.append(array_meta(hid, array) if array is not None else None)
        return Offer(stretch, inputs)

    def keep(self, sid: Any, offer: Offer, executed: int, results: BatchResults) -> list | None:
        """The offered batch just ran whole as stretch *sid*: keep it. Returns what the
        reply's ``hm`` tells the client (its template's metadata: the inputs' as the batch
        began, every result's as its op made it, None where no array came of it), or None
        where it is not kept."""
        stretch = self.stretches.offer(sid, offer.stretch, executed)
        if stretch is None:
            return None
        made = {entry[0]: entry for entry in results.metas}
        arrays, fresh = self.x.table.arrays, results.fresh
        outs = []
        for hid in stretch.recorded_outs:
            entry = made.get(hid)
            if entry is None:
                array = fresh.get(hid)
                if array is None:
                    array = arrays.get(hid)
                entry = array_meta(hid, array) if array is not None else None
            outs.append(entry)
        if self.graphs is not None:
            self.graphs.hold(sid, stretch, arrays, _integer_slots(stretch, outs))
            if self.pointers and _launches_user_kernel(stretch):
                self.graphs.states[sid].give_up(POINTERS_TOLD)
        return [offer.inputs, outs]

    def early_safe(self, sid: Any) -> bool:
        """Whether held stretch *sid* may be replayed early (reply ``hs``): a replay the
        client then finds it did not mean is undone by freeing its results, so the stretch
        must change nothing else — it writes into no array (no in-place operator, no
        ``out=``, no function that returns nothing), draws no random numbers, calls no
        object's method, and makes only arrays and values — but for in-place operators, and
        user kernels (every array they are given taken as written), on arrays it made itself
        (``u = u.copy(); u[1:-1] += d``: a stencil's step), which change nothing the client
        holds before the replay's results."""
        return self._changes_only_its_own(sid, inputs_too=False)

    def ahead_safe(self, sid: Any) -> bool:
        """Whether held stretch *sid* may be run ahead (worker/run_ahead.py): as
        :meth:`early_safe`, and besides, in-place operators and item assignments into its
        inputs or views of them (``w -= lr * grad``, ``u[1:-1, 1:-1] = ...``). A run ahead
        writes them into its graphs' buffers only; they are copied into the client's
        arrays when the client asks for that replay, and a run it never asks for changes
        nothing the client holds. (Not early: an early replay's run is the client's before
        its ops are all checked, and an input written by a run it then did not mean could
        not be put back.)"""
        return self._changes_only_its_own(sid, inputs_too=True)

    def _changes_only_its_own(self, sid: Any, inputs_too: bool) -> bool:
        stretch = self.stretches.held.get(sid)
        if stretch is None or (stretch.draws and not inputs_too) or stretch.uploads:
            return False   # (an upload's data comes only with the client's own message)
        if stretch.several:   # (a call of several results: re-run from its records only)
            return False
        if self.pointers and _launches_user_kernel(stretch):   # (:meth:`pointer_told`)
            return False
        made: dict[int, Any] = {}   # result slot -> the op that made it
        for item in stretch.items:
            if type(item) is Slot:
                continue
            if item.kind == m.KIND_OBJECT:   # (ahead: a RandomState's draw, undone by
                if not _journaled_draw(item):   # its journal: worker/draw_journal.py)
                    return False
                if item.out is not None:
                    made[item.out.n] = item
                continue
            if item.kind == m.KIND_DOWNLOAD:   # (a closing read: it changes nothing; never
                if not inputs_too:               # early, whose reply's frames the client
                    return False                 # does not wait for)
                continue
            if item.kind == m.KIND_KERNEL:
                if not _kernel_changes_only(item, made, inputs_too):
                    return False
                if item.out is not None:
                    made[item.out.n] = item
                continue
            if item.kind not in _EARLY_KINDS or type(item.name) is not str \
                    or "out" in item.kwargs:
                return False
            if item.want not in _EARLY_WANTS and not (
                    item.want == api.NONE and item.kind == m.KIND_OPERATOR and item.args
                    and _writes_its_own(item.args[0], made, inputs_too)):
                return False
            if item.out is not None:
                made[item.out.n] = item
        return True

    def drop(self, sids: Any) -> None:
        """The client lets these stretches go (header ``D``): they and their graphs go (the
        graphs' memory back to the session's pool); a malformed list is a ProtocolError."""
        self.drop_ahead()
        self.ahead.forget()
        self.stretches.drop(sids)
        if self.graphs is not None:
            self.graphs.forget(sids)

    def answerable(self, raw: Any, early: bool = False) -> tuple | None:
        """The held stretch and entry of the replay *raw* (header ``T``) where it is the one
        run ahead (:meth:`RunAhead.matches`): answered, it launches nothing on the device, so
        a session alone needs no batch of its pacer for it (Executor.run_batch). Else None,
        and nothing changed (a malformed entry is refused again by :meth:`run`)."""
        ahead = self.ahead.ahead
        if ahead is None or type(raw) is not list or not raw or raw[0] != ahead.sid:
            return None
        try:
            parsed = self.stretches.entry(raw, early)
        except Exception:
            return None
        if parsed[0].uploads:   # (never run ahead: its data comes with its message)
            return None
        return parsed if self.ahead.matches(parsed[1]) else None

    def run(self, raw: Any, payload: Iterator, results: BatchResults, early: bool = False,
            parsed: tuple | None = None) -> tuple:
        """Run a held stretch again (header ``T``, *raw*; *early*: header ``S``, its dropped
        inputs kept): through its graphs where they serve, else as the records the client
        would have sent. *parsed*: its (stretch, entry), read already (:meth:`answerable`).
        Returns (ops run, error entry, cancelled, whether its graphs served it or it was
        re-run while they learn which ints take turns: StretchGraphs.learning)."""
        self.paced_now = False
        x = self.x
        try:
            stretch, entry = parsed if parsed is not None else self.stretches.entry(raw, early)
            if stretch.uploads:   # (their data: the message's frames after its header)
                entry = self.stretches.with_frames(stretch, entry, payload)
        except Exception as exc:
            self.drop_ahead()
            return 0, x.record_error(None, exc), False, False
        x.phases.mark("replay_entry")   # (the replay's entry read against its stretch)
        self.replays += 1
        if self.ahead.ahead is not None:   # (run already, if it is the one run ahead)
            done = self.ahead.answer(stretch, entry, results, parsed is not None)
            if done is not None:
                self.graphed += 1
                self.alone_answers += parsed is not None
                return (*done, True)
        pacer = x.pacer
        graphs = self.graphs
        state = graphs.states[entry.sid] if graphs is not None else None
        # (a replay of graphs measured before is charged what it was, without markers)
        graph = state.graph if state is not None else None
        estimate = pacer.replay_estimate(graph.cost) if graph is not None else None
        if estimate is None and pacer.fresh_due:
            pacer.start_segment()
        started = pacer.began = perf_counter()
        bound = self.pacing_bound(pacer, self._unpaced_if_backlogged(pacer) and x.more_work()) \
            if graphs is not None and pacer.in_company() else None
        if bound is None:   # (alone, or no graphs: nothing is paced, nothing timed)
            return self._replay(stretch, entry, payload, results, early, graphs, state,
                                estimate, False)
        # Paced where its ops' estimate and its shortest replay so far both reach the bound:
        # the per-op estimate alone is the session's (an early slow op, or other sessions'
        # time slices inside its spans, make it milliseconds), and on an H100 a 64-element
        # loop's replays were re-run paced beside an idle session (its graphs lost)
        paced = (pacer.per_op or 0.0) * stretch.ops >= bound \
            and state.shortest is not None and state.shortest >= bound   # (0: every one)
        if paced:
            self.paced += 1
        self.paced_now = paced and self.paced_keeps_held
        # (a replay that captures its graphs takes their instantiation too: not counted)
        timed = paced or state.stage is Capture.CAPTURED
        try:
            return self._replay(stretch, entry, payload, results, early,
                                None if paced else graphs, state, estimate, paced)
        finally:
            if timed:
                took = perf_counter() - started
                if state.shortest is None or took < state.shortest:
                    state.shortest = took

    def _unpaced_if_backlogged(self, pacer: Any) -> bool:
        """Whether a replay whose session's next message is waiting is launched whole beside
        others: where the arbiter says this session and its weighing company all keep their
        work backlogged (lease.deep_company, arbiter/service.py DEEP_COMPANY), or where
        ``unpaced_backlog`` (a diagnostic) asks it beside any company."""
        lease = pacer.lease
        return self.unpaced_backlog or (lease is not None and lease.deep_company)

    def pacing_bound(self, pacer: Any, backlogged: bool = False) -> float | None:
        """The device seconds from which a replay beside others is paced (UNPACED_REPLAY
        as told, else SHARE_UNPACED_REPLAY under a standing grant; None: never, and where
        the arbiter says its company is light users only: lease.paced, arbiter/service.py,
        LIGHT_COMPANY). *backlogged*: its session's next message is waiting already, where
        the arbiter's deep company or ``unpaced_backlog`` asks (:meth:`_unpaced_if_backlogged`):
        never paced under a standing grant."""
        if pacer.lease is not None and not pacer.lease.paced:
            return None
        if backlogged and pacer.side_by_side():
            return None
        if self.unpaced is not None:
            return self.unpaced
        if not pacer.side_by_side():
            return None
        # (by lead: a replay within what the session may launch ahead anyway stops a user
        # held back no later than its paced ops would; the heaviest users' deep lead is 16 ms)
        return max(SHARE_UNPACED_REPLAY, pacer.lead_now()) if self.pace_by_lead \
            else SHARE_UNPACED_REPLAY

    def _replay(self, stretch: Any, entry: Any, payload: Iterator, results: BatchResults,
                early: bool, graphs: Any, state: Any, estimate: float | None,
                paced: bool) -> tuple:
        """The replay itself (:meth:`run`): through *graphs* (None: re-run from its records,
        *paced* where that was decided) and the stretch's graph *state*, charged *estimate*
        where its graphs serve it."""
        x, pacer = self.x, self.x.pacer
        if graphs is not None:
            had_graph = state.stage is Capture.CAPTURED
            mark = results.values_mark()   # (a replay re-run after its graphs failed reads
            try:                           # its values again)
                done = graphs.run(state, stretch, entry, results)
            except Exception as exc:
                if not (self.drop_graphs_for(exc) and not stretch.draws):
                    state.give_up(f"replay failed: {type(exc).__name__}")   # graph replay's own
                    # fault, not an op's: never again
                    x.poison(entry.first)
                    return 0, x.record_error(entry.first, exc), False, False
                done = None   # out of memory beside graphs, now dropped: re-run (nothing the
                # client sees was written, and no generator advanced)
            if done is not None:
                self.graphed += 1
                if estimate is not None:
                    pacer.charge(estimate)
                if done[1] is None:   # (for the steady lane: RunAhead.answered)
                    self.ahead.answered = (entry.sid, done[0], len(entry.outs))
                return (*done, True)
            results.forget_values_since(mark)
            if had_graph:
                self.fallbacks += 1
        rebuilt = stretch.rebuild(entry.first, entry.inputs, entry.params, entry.outs, early)
        pacer.atomic = paced   # (a paced replay runs whole but for a preemption: Pacer.atomic)
        try:
            # (a stretch's uploads read their frames afresh: a re-run after its graphs
            # failed may follow a launch that read them already)
            # (re-run while its graphs learn which ints take turns: not "not graphed" to the
            # client, whose stretch would go stale)
            learning = graphs is not None and graphs.learning
            return (*x.run_records(rebuilt, iter(entry.frames) if entry.frames else payload,
                                   results), learning)
        finally:
            pacer.atomic = False

    def after_reply(self) -> None:
        """After the batch's reply, for a stretch it replayed through graphs: the next
        replay run now, where it may be (worker/run_ahead.py), else set up ahead while the
        client works (StretchGraphs.prepare_next)."""
        if self.graphs is None:
            return
        last = self.graphs.learn_last()
        if last is not None and not self.ahead.start(*last):
            self.graphs.prepare_next(last[0])

    def drop_ahead(self) -> None:
        """A batch that is not a replay, or one skipped: a replay run ahead is dropped (the
        batch may change what it read), and the next replay follows none."""
        self.ahead.drop()
        if self.graphs is not None:
            self.graphs.broken()

    def skip(self, raw: Any, early: bool = False) -> None:
        """A skipped replay still drops the inputs its stretch drops, as a skipped batch does
        (not an early one's: the client frees them once its run matched)."""
        self.drop_ahead()
        if early:
            return
        try:
            stretch, entry = self.stretches.entry(raw)
        except Exception:
            return
        for item in stretch.items:
            if type(item) is Slot and item.kind == "i":
                self.x.table.free(entry.inputs[item.n])

    def drop_graphs_for(self, exc: BaseException) -> bool:
        """An op ran out of memory (*exc*) while held stretches' graphs keep memory of their
        own: drop every graph and the memory pool's cached blocks, so that the op may be
        tried once more. Whether anything was dropped (if not, the error stands): a user's
        program never runs out of memory because of graphs it did not ask for."""
        if error_name(exc) != "OutOfMemoryError" or self.graphs is None:
            return False
        used = self.x.device.memory_used()
        self.drop_ahead()
        self.lane.let_go()
        evicted = self.graphs.evict()
        gc.collect()   # (then device arrays only reference cycles hold: worker/swap.py)
        return evicted or self.x.device.memory_used() < used

    def release_graphs(self) -> None:
        """Drop every graph's memory (a session swapped out, worker/swap.py): its stretches
        stay held and are captured again at a later replay."""
        self.drop_ahead()
        self.lane.let_go()   # (its plan names a graph, and with it the graph's buffers)
        if self.graphs is not None:
            self.graphs.evict()

    def export_held(self) -> list:
        """The held stretches as a session handed to another worker carries them
        (worker/handover.py): ``[id, the offered batch's records, whether graphs may serve
        it, the op indices of its kept views made again (worker/kept_views.py)]`` each."""
        graphs = self.graphs
        return [[sid, held.body, graphs.servable(sid) if graphs is not None else True,
                 graphs.remade(sid) if graphs is not None else []]
                for sid, held in self.stretches.held.items()
                if getattr(held, "body", None) is not None]

    def adopt_held(self, sid: Any, body: Any, servable: Any, remade: Any = None) -> None:
        """Hold a stretch the session's previous worker held (:meth:`export_held`); one
        that does not read is not held, and the client's replay of it fails as any replay
        of a stretch not held does."""
        held = self.stretches.read(body) if isinstance(body, bytes) else None
        if held is None or self.stretches.offer(sid, held, held.ops) is None:
            return
        if self.graphs is not None:
            self.graphs.hold_adopted(sid, held, servable is True, remade)

    def figures(self) -> dict:
        """Stretches held, replays run (through graphs, and re-run where a captured graph's
        guards failed), offers refused, the memory the graphs hold, how often every graph
        was dropped for an op out of memory, and the copies into and out of graphs' buffers
        made apart from their copy tables (``copied``) (``%gpu status``, ``memory_info``)."""
        graphs = self.graphs
        return {"held": len(self.stretches.held), "replays": self.replays,
                "graphed": self.graphed, "fallbacks": self.fallbacks, "paced": self.paced,
                "never_graphed": graphs.never_graphed() if graphs is not None else {},
                "ahead": self.ahead.hits, "ahead_missed": self.ahead.missed,
                "ahead_alone": self.alone_answers, "ahead_read": self.ahead.read_now,
                "ahead_read_later": self.ahead.read_later, "lane": self.lane.answered,
                "lane_armed": self.lane.armed, "lane_turns": self.lane.armed_turns,
                "lane_left": self.lane.left,
                "pushed": self.lane.pushes.pushed, "push_taken": self.lane.pushes.taken,
                "push_confirmed": self.lane.pushes.confirmed, "push_quiet": self.lane.pushes.quiet,
                "push_rolled": self.lane.pushes.rolled, "push_first": self.lane.pushes.first,
                "push_first_undone": self.lane.pushes.first_undone, "reads_deferred": self.lane.deferrals,
                "lane_measured": self.lane.measured, "lane_slot_reads": self.lane.slot_reads,
                "steps_overlapped": self.lane.overlapped,
                "steps_overlapped_undone": self.lane.overlaps_undone,
                "lane_declined": dict(self.lane.declined),
                "lane_left_why": dict(self.lane.left_why),
                "draws_redone": self.x.draws.redone,
                "refused": self.stretches.refused,
                "graph_bytes": graphs.nbytes() if graphs is not None else 0,
                "evictions": graphs.evictions if graphs is not None else 0,
                "captures": graphs.captures if graphs is not None else 0,
                "between_graphs": graphs.between if graphs is not None else 0,
                "copied": graphs.tools.copied if graphs is not None else 0}


def _integer_slots(stretch: Any, outs: list) -> frozenset:
    """The result slots of *stretch* whose arrays were integers in its offered run (*outs*:
    their metadata entries, by recorded result; a dtype spec a string such as ``<i8``)."""
    slots = set()
    for n, entry in zip(stretch.recorded_out_slots, outs):
        if entry is not None and type(entry[2]) is str and len(entry[2]) > 1 \
                and entry[2][1] in "iu":
            slots.add(n)
    return frozenset(slots)
