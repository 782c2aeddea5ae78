"""A held stretch replayed as graphs: captured once, then launched with new inputs.

Steps 2 and 3 of docs/stretch-replay.md. The first replay of a held stretch *captures* it:
the inputs are copied into buffers the stretch owns, and the ops run in segments — runs of
ops that capture well, each captured as one graph and launched at once, and between them the
ops that must run eagerly (cuBLAS, cuRAND and cuSOLVER refuse capture; random draws must
advance the generator as CuPy's do; host reads return values). Every allocation meanwhile
is retained (devices/cupy_graphs.py), so the graphs' addresses stay theirs. A scalar
operand of an arithmetic operator is a 0-d buffer of the dtype CuPy gives the weak scalar,
written before each launch, so a step size that changes each iteration does not defeat it.

Each later replay checks the guards (each input's shape, dtype and strides as captured;
no overlap between inputs where the stretch writes), copies the inputs in, writes the
parameters, launches the graphs and runs the eager ops (their results copied into the
buffers the next graphs read), copies written inputs back and hands every result the
client keeps to its new handle as a fresh array. Whatever does not fit returns None, and
the stretch is re-run from its records instead (worker/stretch_replay.py): a mismatch
costs speed, never a result.

What graph replay learns of each held stretch (whether it is captured, can never be, or is
due to be; the ops that refused capture; the captures tried) is its own: a
:class:`GraphState`, one per held stretch, in :class:`StretchGraphs` (both, with the
capture itself, :class:`StretchGraph`, in worker/graph_state.py).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from ..devices.host_graphs import LaunchError
from ..devices.product_capture import PRODUCT_CALLS
from ..protocol import api, codec
from ..protocol.errors import ProtocolError, error_name
from ..protocol import messages as m
from .batch_results import BatchResults, several_arrays
from .eager_ops import eager_by_nature
from .draw_journal import STATE_CLASS, NotUndoable
from .graph_copies import COPY_ROW_BYTES, identity, plain
from .moving_views import (assigned_only, kernel_writes, moving_views, sliced_only,
                           writable_inputs, written_operands, written_results, written_through)
from .graph_state import Capture, GraphState, StretchGraph, eager_array_out
from .graph_state import Segment as _Segment
from . import kept_views
from .objects import graphed_draw, run_object_call
from ..protocol.stretch_records import instances_in, slots_in
from .stretches import HeldStretch, Op, ReplayEntry, Slot, fill_slots
from .transfers import frame_array, run_download, run_upload

__all__ = ["StretchGraphs", "StretchGraph", "GraphState", "Capture", "MAX_ATTEMPTS"]

#: Bytes of a parameter's place in a stretch's parameter block (the widest scalar: complex128)
PARAM_BYTES = 16
#: Captures tried per held stretch before it is left to re-runs (each failed one moves the
#: op that refused capture to the eager side).
MAX_ATTEMPTS = 4

_OPERATOR, _METHOD, _FUNCTION = m.KIND_OPERATOR, m.KIND_METHOD, m.KIND_FUNCTION
#: an attribute (``x.T``, ``x.real``): a view, no launch; captured as any op
_ATTRIBUTE = m.KIND_ATTRIBUTE
#: an object's method (a RandomState's draws: eager; a Generator's plainest, captured:
#: eager_ops.captured_draw)
_OBJECT = m.KIND_OBJECT
#: the Generator's settable member (api.OBJECT_SETTERS): a new bit generator
_BIT_GENERATOR = STATE_CLASS + ".bit_generator"
_ARRAY, _NONE, _VALUE = api.ARRAY, api.NONE, api.VALUE
#: a call of several results (``modf``, ``linalg.qr``, ``atleast_2d(x, y)``): its pieces take a
#: result slot each (``Op.outs``); it runs eagerly between the graphs (eager_ops.eager_by_nature)
_ARRAYS = api.ARRAYS
#: a user's kernel (ElementwiseKernel, ReductionKernel: captured as any launch; RawKernel and
#: an ElementwiseKernel given its outputs return nothing and write their arrays: eager)
_KERNEL = m.KIND_KERNEL
#: an upload: its data each replay's own frame (ReplayEntry.frames), made an array between
#: the graphs (eager_ops.eager_by_nature); a streamed one (chunks) is never in a graph
_UPLOAD = m.KIND_UPLOAD
#: a download (``x.get()``, ``cupy.asnumpy(x)``) closing a stretch: one of its closing reads,
#: made when the reply goes, its data a frame of that reply (_run_eager)
_DOWNLOAD = m.KIND_DOWNLOAD
#: A ufunc's keywords that decide the loop its scalars are cast for (``dtype=``): a call
#: given one with a parameter runs eagerly, given the replay's value, as the user's does.
_CASTING_KEYWORDS = frozenset({"dtype", "signature", "casting"})


class _CaptureRefused(Exception):
    """An op that failed while captured: it runs eagerly from the next capture on."""

    def __init__(self, index: int) -> None:
        self.index = index


class _OpError(Exception):
    """An op's own error (with its index) while a stretch ran."""

    def __init__(self, index: int, error: BaseException) -> None:
        self.index, self.error = index, error


class _Shape:
    """What a held stretch's records say about it, found once: the inputs its ops read, the
    results the client keeps, the inputs it drops, whether it writes into arrays."""

    def __init__(self, stretch: HeldStretch) -> None:
        self.used: list[int] = []
        freed_results: set[int] = set()
        self.input_frees: list[int] = []
        self.graphable = True
        #: why graphs cannot serve it, where they cannot (GraphState.never)
        self.why_not = ""
        self.writes = False
        #: each upload's place among the replay's data frames, by its op's index
        self.uploads: dict[int, int] = {index: k for k, index in enumerate(stretch.uploads)}
        #: its downloads (closing reads: their frames go with the reply that asks for them)
        self.downloads = 0
        for item in stretch.items:
            if type(item) is Slot:
                (self.input_frees.append(item.n) if item.kind == "i" else freed_results.add(item.n))
                continue
            if item.kind == _UPLOAD:
                if len(item.args) != 1 or item.want != _ARRAY or item.out is None:
                    self.graphable = False   # (streamed in chunks: re-run from its records)
                    self.why_not = self.why_not or "a streamed upload"
                continue
            if item.kind == _DOWNLOAD:   # (a closing read: eager_by_nature, _reads_from)
                self.downloads += 1
                if item.want != _VALUE or item.out is not None or item.args or item.kwargs:
                    self.graphable = False
                    self.why_not = self.why_not or "a download's form"
            elif item.kind not in (_OPERATOR, _METHOD, _FUNCTION, _ATTRIBUTE, _OBJECT, _KERNEL) \
                    or type(item.name) is not str \
                    or item.want not in (_ARRAY, _NONE, _VALUE, _ARRAYS) \
                    or (item.kind == _OBJECT and item.name in api.OBJECTS):
                self.graphable = False
                self.why_not = self.why_not or (
                    f"an op of kind {item.kind}" if type(item.name) is not str
                    else f"{item.name} (kind {item.kind})")
            if item.want == _NONE or "out" in item.kwargs or "output" in item.kwargs or (
                    item.kind == _KERNEL and kernel_writes(item) != frozenset()):
                self.writes = True   # (a user's kernel may write any array it is given)
            for slot in slots_in((item.target, item.args, item.kwargs)):
                if slot.kind == "i" and slot.n not in self.used:
                    self.used.append(slot.n)
        if self.downloads and self.downloads == stretch.ops:   # (downloads alone: no graph has work
            self.graphable = False                    # to do, its guards only to fail)
            self.why_not = "downloads alone"
        elif stretch.several and all(op.want == _ARRAYS for op in stretch.items if type(op) is Op):
            self.graphable = False   # (calls of several results alone: each runs eagerly,
            self.why_not = SEVERAL_ALONE   # between no graphs: the re-run is as good)
        self.alive = [n for n in range(stretch.outs) if n not in freed_results]
        #: the op that makes each result slot (each piece of a call of several results too)
        self.maker = {slot.n: op.index for op in stretch.items if type(op) is Op
                      for slot in op.outs}
        #: the view ops whose kept results a replay makes again on the arrays it hands out
        #: (worker/kept_views.py), and their result slots
        self.remade: list[Op] = []
        self.remade_slots: frozenset[int] = frozenset()
        #: the view ops of kept views handed out as copies for they lie apart
        #: (kept_views._apart): a replay that changes an int one baked gives graphs up; a
        #: worker that adopts the stretch does not know them (servable: False)
        self.apart: frozenset[int] = frozenset()
        #: the result slots that were integer arrays in the offered run (eager_by_nature:
        #: a gather through them is captured)
        self.int_results: frozenset[int] = frozenset()
        #: its ``getitem``s whose bounds are parameters (worker/moving_views.py), whether an
        #: op may write through one, and the inputs its ops may write
        self.moving = moving_views(stretch)
        self.moving_written = written_through(stretch, self.moving)
        self.writable = writable_inputs(stretch) if self.writes else frozenset()
        #: the result slots its ops may write after they are made, and the first op that
        #: may: an eager op's result so written lives in the graphs' buffer (the op's own
        #: array is not written), and is handed out from there (graph_state.eager_array_out)
        self.rewritten = written_results(stretch) if self.writes else {}
        #: the inputs only moving views read, and the views that read each
        self.sliced_only = sliced_only(stretch, self.moving, self.writable) if self.moving else {}
        #: the inputs only assignments write, nothing else touching them, and those ops
        self.assigned_only = assigned_only(stretch) if self.writes else {}

    def remake(self, ops: list[Op] | None) -> bool:
        """Set the remade *ops* (None: a kept result no remake serves); whether graphs
        may serve the stretch."""
        if ops is None:
            if self.why_not != SEVERAL_ALONE:   # (its pieces kept: a split's, views)
                self.why_not = "a kept view no remake serves"
            return False
        self.remade = ops
        alive = set(self.alive)
        self.remade_slots = frozenset(op.out.n for op in ops if op.out.n in alive)
        return self.graphable




#: why graphs never serve a stretch whose ops are all calls of several results (a ``split``
#: of an array whose shape the client does not know yet, in a batch of its own): they run
#: eagerly, between graphs that would have nothing to do (GraphState.never)
SEVERAL_ALONE = "calls of several results alone"


def _assigns(op: Op, g: StretchGraph) -> bool:
    """Whether assignment *op* writes an input written where it is (``g.assigned``)."""
    into = op.args[0] if op.args else None
    return type(into) is Slot and into.kind == "i" and into.n in g.assigned


class StretchGraphs:
    """Captures a session's held stretches as graphs and replays them (the executor's, whose
    public interface runs the ops); keeps each held stretch's :class:`GraphState`."""

    def __init__(self, executor: Any) -> None:
        self.x = executor
        self.tools = executor.device.graph_tools
        self.array_type = executor.device.array_type
        #: each held stretch's standing with graphs, by its id
        self.states: dict[int, GraphState] = {}
        self.evictions = 0    # times every graph was dropped for an op out of memory
        self.captures = 0     # graphs captured whole (a figure: graphs by value capture more)
        #: the last replay run was re-run from its records while its graphs learn which ints
        #: take turns (:meth:`_baked_ints`): not "not graphed" to the client
        self.learning = False
        #: stretches let go that graphs never served, by why (GraphState.never): with those
        #: held now, the figure ``never_graphed``
        self.never_gone: dict[str, int] = {}
        #: ops run eagerly between a replay's graphs, all replays together (a product, a
        #: draw, a read: eager_ops.py; a capture's refusal); the steady lane's own run ahead
        #: is not counted
        self.between = 0
        #: copies in and out by the graphs' copy tables (WorkerSettings.copy_tables)
        self.copy_tables = True
        #: whether the graphs make a Generator's plainest draws (WorkerSettings.graphed_draws:
        #: eager_ops.captured_draw)
        self.graphed_draws = True
        #: the graph of the batch's replay and its entry, to set its next replay up after
        #: the reply
        self._last: tuple | None = None
        #: the last replay learnt from (learn_last), while no other batch came after it:
        #: the one the next replay follows; and the stretch of the one the last replay
        #: followed so (None: none), its *leader* (worker/run_ahead.py ``follows``)
        self._before: tuple | None = None
        self.leader: int | None = None
        #: the closing reads of a replay run ahead (take_reads)
        self._reads: Any = None
        #: the write-backs of the inputs a replay run ahead wrote (take_writes)
        self._writes: list = []
        #: a replay run ahead's assignments into inputs written where they are (``g.
        #: assigned``): (array, index, what was there), for take_undo; None: not logging
        self._undo: list | None = None
        #: the data frames of the replay under way (ReplayEntry.frames: its uploads')
        self._frames: tuple = ()

    # ------------------------------------------------------------ held stretches
    def hold(self, sid: int, stretch: HeldStretch, arrays: dict,
             int_results: frozenset = frozenset()) -> None:
        """*stretch* is held from now on as *sid*, its offered run's arrays in the handle
        table (*arrays*), *int_results* its result slots that were integer arrays: whether
        graphs could serve it is judged now."""
        shape = _Shape(stretch)
        shape.int_results = int_results
        span = self.x.device.memory_span
        apart: set[int] = set()
        remade = kept_views.judge(stretch, shape.alive, shape.maker, arrays,
                                  lambda a: span(a)[1],
                                  lambda a: kept_views.element_extent(span(a)[0], a), apart)
        shape.apart = frozenset(apart)
        self.states[sid] = GraphState(shape, shape.remake(remade))

    def servable(self, sid: int) -> bool:
        """Whether graphs may serve stretch *sid* (judged when it was held): what a session
        handed to another worker carries with the stretch (worker/handover.py); not one
        with kept views judged apart, which the adopting worker does not know."""
        state = self.states.get(sid)
        return state is not None and state.stage is not Capture.NEVER and not state.shape.apart

    def remade(self, sid: int) -> list[int]:
        """The op indices of stretch *sid*'s remade kept views (kept_views.judge), carried
        with it to another worker beside :meth:`servable`."""
        state = self.states.get(sid)
        return [op.index for op in state.shape.remade] if state is not None else []

    def hold_adopted(self, sid: int, stretch: HeldStretch, servable: bool,
                     remade: Any = None) -> None:
        """*stretch*, held by the worker that served the session before, is held here as
        *sid*, judged there (its offered run's arrays are not here to judge again); *remade*:
        the op indices of its remade kept views, as judged there."""
        shape = _Shape(stretch)
        ops = kept_views.adopted(stretch, shape.alive, remade)
        self.states[sid] = GraphState(shape, shape.remake(ops) and servable, "handed over so")

    def forget(self, sids: list) -> None:
        """These stretches are let go: their graphs go, and their memory with them."""
        for sid in sids:
            state = self.states.pop(sid, None)
            if state is not None and state.never:
                self.never_gone[state.never] = self.never_gone.get(state.never, 0) + 1

    def never_graphed(self) -> dict[str, int]:
        """Held stretches graphs never served, held now or let go, by why (a diagnostic:
        benchmarks/unseen_speed.py says it beside each loop)."""
        counts = dict(self.never_gone)
        for state in self.states.values():
            if state.never:
                counts[state.never] = counts.get(state.never, 0) + 1
        return counts

    def broken(self) -> None:
        """A batch that is not a replay came (or one skipped): the next replay follows none."""
        self._before = self.leader = None

    def evict(self) -> bool:
        """Drop every graph that holds memory (their stretches are captured again at a later
        replay, within MAX_ATTEMPTS) and the memory pool's cached blocks; whether any was."""
        self._last = self._before = self.leader = None
        freed = 0
        for state in self.states.values():
            if state.graph is not None:   # (a next replay's arrays made ahead: back too)
                state.graph.copies.drop_prepared()
            nbytes = state.nbytes()
            if nbytes:
                freed += nbytes
                state.capture_again()
        if not freed:
            return False
        self.evictions += 1
        self.x.device.release_cache()
        return True

    def nbytes(self) -> int:
        """The device memory all the graphs hold."""
        return sum(state.nbytes() for state in self.states.values())

    # ------------------------------------------------------------ entry
    def run(self, state: GraphState, stretch: HeldStretch, entry: ReplayEntry,
            results: BatchResults, run_ahead: bool = False) -> tuple | None:
        """Run a replay through graphs: (ops run, error entry, False), or None: re-run it.
        *run_ahead* (a replay run ahead, worker/run_ahead.py): what would change the client's
        arrays or wait for the device is left for when the client asks for the replay: the
        reads that end the stretch are not made (:meth:`take_reads` hands them over, for
        :meth:`run_reads`), and the inputs it writes are not written back, their new values
        left in the graphs' buffers (:meth:`take_writes`, for :meth:`write_back`)."""
        self.learning = False
        if state.stage is Capture.NEVER:
            return None
        self._frames = entry.frames
        arrays = {}
        for n in state.shape.used:
            a = self.x.table.arrays.get(entry.inputs[n])
            if a is None:   # an object, or no such handle: the re-run says which
                return None
            arrays[n] = a
        graph = state.graph
        if graph is None and state.variants:   # (a graph shelved: one for these ints kept?)
            graph = state.variant_for(entry.params)
        if graph is None:
            if state.shape.writes and self._overlapping(arrays, state.shape.writable):
                # (a capture copies each input into a buffer of its own: two inputs that
                # share memory, one written in place, would no longer see each other's
                # writes; a base and its view, both named. Re-run from its records, as the
                # replays of such inputs are: _fits)
                return None
            if state.attempts >= MAX_ATTEMPTS:
                state.give_up("captures refused")
                return None
            state.attempts += 1
            try:
                return self._capture(state, stretch, entry, arrays, results)
            except Exception as exc:
                # out of memory while capturing (its buffers are more than the ops need):
                # nothing the client sees was written, so a re-run does what the ops would
                # (not where a generator has advanced)
                if error_name(exc) != "OutOfMemoryError" or stretch.draws:
                    raise
                state.capture_again()   # (at a later replay, within MAX_ATTEMPTS)
                self.x.device.release_cache()
                return None
        if not graph.keeps(entry.params) and state.variant_for(entry.params) is None:
            # (a draw's scalar or a slice's bound the graph baked in changed: that op runs
            # eagerly, given each replay's value, from the next capture on; this replay
            # re-runs its records. A run ahead's parameters are a guess: the client's own
            # replay decides that. A moving view written through is never copied:
            # worker/moving_views.py. Ints that take turns — ``buf[i % 8] = x`` — get a
            # graph each instead: _baked_ints)
            if run_ahead:
                return None
            changed = graph.unkept(entry.params)
            if not changed.isdisjoint(state.shape.apart):   # (kept views judged apart at
                state.give_up("kept views no longer apart")   # the bounds they baked)
                return None
            written = state.shape.moving_written and not changed.isdisjoint(state.shape.moving)
            turns = self._baked_ints(state, graph, entry.params, changed, written)
            if turns == "shelved":   # (its graph kept aside: this replay captures its own)
                return self.run(state, stretch, entry, results)
            if turns == "learning":
                return None
            if written:
                state.give_up("a moving view written")
                return None
            state.eager.update(changed)
            state.capture_again()
            return None
        graph = state.graph   # (a variant's, if one was switched to)
        if state.turning is not None and not run_ahead \
                and state.ints_turn(entry.params):   # (its eager ints take turns after all)
            return self.run(state, stretch, entry, results)
        if graph.gathered:   # (its moving views at this replay's bounds, gathered as inputs)
            views = self.moving_views_at(graph, arrays.__getitem__, entry.params)
            if views is None:
                return None
            arrays.update(views)
        hosts = self._fits(graph, arrays, entry.params)
        if hosts is None:
            return None
        if graph.uploads_in and not self.fill_uploads(graph):
            return None
        self.x.phases.mark("replay_fits")   # (its inputs found, its guards passed)
        done = self._replay(state, stretch, graph, entry, arrays, hosts, results, run_ahead)
        if done[1] is None and not run_ahead:   # (what it teaches the next replay: after
            self._last = (graph, entry)           # the reply; a run ahead's, once answered)
        return done

    def _baked_ints(self, state: GraphState, graph: StretchGraph, params: list,
                    changed: set[int], written: bool) -> str | None:
        """For a replay (the client's) given ints *graph* did not bake, which no variant
        bakes (GraphState, "graphs by the ints they baked"): "shelved" where they take
        turns (its graph kept aside: this replay captures one of its own); "learning" where
        the *changed* ops write a moving view (*written*: graphs cannot run them eagerly)
        and the replays have not yet said whether their ints take turns (re-run from the
        records, its reply not saying "not graphed", which the client counts towards a
        stretch gone stale: kernelproxy/stretch_replay.py STALE_AFTER, 3 in a row); else
        None: the ops are made eager (or the stretch given up, *written*) as for any other
        baked value that moves on, their ints watched from then on (GraphState.ints_turn)."""
        if not state.ints_only(graph, params):
            return None
        sliced = state.shape.sliced_only   # (a view of an input read where it is: baked, the
        if sliced and any(changed & views for views in sliced.values()):   # input would be
            return None                    # copied whole into each graph at every replay)
        if state.turns:
            if state.shelve():
                return "shelved"
            state.judge(False)   # (a new value after all: eager for good, the variants
            return None          # dropped with the capture that follows)
        if written and not state.settled:
            verdict = state.watch_misses(params, graph.baked)
            if verdict is None:
                self.learning = True
                return "learning"
            if verdict:
                return "shelved" if state.shelve() else None
            return None
        if not state.settled and state.turning is None:
            state.turning = (sorted(n for n in graph.baked if graph.baked_by[n] in changed),
                             frozenset(changed))
        return None

    # ------------------------------------------------------------ the next replay, ahead
    def learn_last(self) -> tuple | None:
        """After the reply to a batch that replayed a captured stretch: its (graph, entry),
        where its inputs came from learnt (GraphCopies.learn), once; None if the batch
        replayed none."""
        last, self._last = self._last, None
        before, self._before = self._before, last
        self.leader = before[1].sid if before is not None and last is not None else None
        if last is not None:
            g, entry = last
            if before is not None and before[0] is not g:   # (right after another stretch's)
                g.copies.learn_after(g.shape.used, entry.inputs, before[1].sid,
                                     (before[1].inputs, before[1].outs))
            g.copies.learn(g.shape.used, entry.inputs, entry.outs)
        return last

    def replayed(self, g: StretchGraph, entry: ReplayEntry) -> None:
        """*entry* was answered through *g* without running it here (worker/run_ahead.py):
        what it teaches the next replay, as a replay run here would."""
        self._last = (g, entry)

    def prepare_next(self, g: StretchGraph) -> None:
        """After the reply to a batch that replayed *g*'s stretch (learn_last), while its
        client works on: set the next replay's copy rows up as if its inputs come from
        where they came from the last time (GraphCopies.prepare), and write the block.
        (Off the replay's path: 16-28 µs of an H200 host's worker time.) A wrong guess
        costs only this work."""
        if g.gathered:   # (its next moving views are at bounds not known yet)
            return
        predicted = g.copies.predict(self.x.table.arrays)
        if predicted is None:
            return
        if g.direct:   # (not copied: GraphCopies.set_up is given the others)
            predicted = {n: a for n, a in predicted.items() if n not in g.direct}
        try:
            changed = g.copies.prepare(self.tools, g.bufs, predicted)
        except Exception:   # (out of memory, say: the replay sets itself up, as before; the
            g.copies.drop_prepared()   # rows packed meanwhile are not on the device yet)
            g.pvalues.dirty = True
            return
        if changed and g.pblock is not None:
            g.pvalues.dirty = True
            try:
                g.write_block()
            except Exception:
                g.copies.drop_prepared()
                return
            g.pvalues.dirty = False

    # ------------------------------------------------------------ guards
    def _fits(self, g: StretchGraph, arrays: dict, params: list) -> dict | None:
        """The parameters as host scalars of their buffers' dtypes, or None: a guard failed."""
        array_type = self.array_type
        for n, a in arrays.items():
            if type(a) is not array_type or g.guards[n] != (a.shape, a.dtype, a.strides):
                return None
        if g.shape.writes and self._overlapping(arrays, g.shape.writable):
            return None
        return {} if g.pvalues.write(params) else None

    def _overlapping(self, arrays: dict, writable: frozenset) -> bool:
        """Whether one of a replay's input arrays that its ops may write (*writable*: their
        slots, moving_views.writable_inputs) shares memory with another input (by their
        spans): each is copied into a buffer of its own, which would no longer see the
        other's writes. Inputs only read may share (a minibatch of the last step and the
        whole data it is a view of)."""
        if len(arrays) < 2 or not writable:
            return False
        span = self.x.device.memory_span
        spans = {n: (span(a)[0], a.nbytes) for n, a in arrays.items() if a.nbytes}
        for n in writable:
            mine = spans.get(n)
            if mine is None:
                continue
            start, size = mine
            for other, (at, length) in spans.items():
                if other != n and at < start + size and start < at + length:
                    return True
        return False

    # ------------------------------------------------------------ capture
    def _capture(self, state: GraphState, stretch: HeldStretch, entry: ReplayEntry,
                 arrays: dict, results: BatchResults) -> tuple | None:
        tools, shape, first, params = self.tools, state.shape, entry.first, entry.params
        if stretch.draws and self.x.draws.speculating:   # (never today: a run ahead replays a
            raise NotUndoable("a capture that draws is not run ahead")   # graph captured before;
        g = StretchGraph(shape)   # its draws are the journal's by StretchGraphs.before_draws)
        # (an input only moving views read, all of them eager now: read where it is; one
        # only eager assignments write: written where it is, a run ahead's writes undone
        # where it is dropped, take_undo)
        g.assigned = frozenset(n for n, ops in shape.assigned_only.items()
                               if n in arrays and ops <= state.eager)
        g.direct = frozenset(n for n, views in shape.sliced_only.items()
                             if n in arrays and views <= state.eager) | g.assigned
        gathered = self._gather(g, stretch, state, arrays, params) if g.direct else frozenset()
        copied = {n: a for n, a in arrays.items() if n not in g.direct} if g.direct else arrays
        segments: list[_Segment] = []
        # (a Generator given another bit generator inside the stretch: its draws eager, for a
        # graph would draw through the one it had at the capture)
        reassigned = {op.target for op in stretch.items
                      if type(op) is Op and op.kind == _OBJECT and op.name == _BIT_GENERATOR}
        for op in (item for item in stretch.items if type(item) is Op):
            if op.index in gathered:   # (made by the first graph's copy table)
                continue
            eager = op.index in state.eager or eager_by_nature(op, arrays, shape.int_results) \
                or (op.kind == _OBJECT and (not self.graphed_draws or op.target in reassigned))
            if not segments or segments[-1].eager != eager or eager:
                segments.append(_Segment(eager))
            segments[-1].ops.append(op)
        g.segments = segments
        complete = True
        handout: dict[int, Any] = {}
        graphs = [i for i, seg in enumerate(segments) if not seg.eager] if self.copy_tables else []
        # (the inputs gathered by the first graph, after any eager segments before it that
        # read none of them: a loop that draws first, then computes)
        gathers = bool(graphs) and _reads_no_input(segments[:graphs[0]], g)
        # (... and the arrays the eager ops before it make, a row each: their copies into
        # the buffers the graphs read; a later graph copies those of the eager ops since
        # the graph before it, by a table of its own)
        eager_outs = _eager_outs(segments, graphs)
        lead_outs = eager_outs.pop(graphs[0], []) if graphs else []
        if not gathers:
            lead_outs = []
        rows_in = len(copied) + len(lead_outs) if gathers else 0
        rows_out = len(shape.alive) if graphs else 0
        rows_between = sum(len(outs) for outs in eager_outs.values())
        try:
            with tools.retaining() as kept:
                g.retained = kept
                params_size = PARAM_BYTES * stretch.params
                if params_size or rows_in or rows_out or rows_between:   # (the copy tables' rows after
                    size = params_size + COPY_ROW_BYTES * (rows_in + rows_out + rows_between)
                    g.pblock = tools.param_block(size)
                    g.phost = np.zeros(size, np.uint8)
                    g.write_block = tools.writer(g.pblock, g.phost)
                for n, a in arrays.items():
                    g.guards[n] = (a.shape, a.dtype, a.strides)
                    if n in g.direct:
                        g.bufs[n] = a
                        continue
                    buf = tools.empty_like(a)
                    if buf.strides != a.strides:
                        state.give_up("an input's strides")
                        return None
                    tools.copy(buf, a)
                    g.bufs[n] = buf
                for key, op in g.gathered.items():   # (the graphs read its buffer)
                    g.env[op.out.n] = g.bufs[key]
                if shape.writes:
                    span = self.x.device.memory_span
                    g.writing = {span(buf)[1]: n for n, buf in g.bufs.items()
                                 if buf.nbytes and n not in g.direct and n not in g.gathered}
                    g.written = set()
                graphed_ops: set[int] = set()   # (the ops of the segments captured so far)
                between_at = params_size + COPY_ROW_BYTES * (rows_in + rows_out)
                for at, seg in enumerate(segments):
                    if seg.eager:
                        self._run_eager(seg.ops, g, first, params, handout, results, live=True)
                        continue
                    writes: list = []
                    drawn: dict = {}
                    try:
                        with tools.capturing() as got:
                            if rows_in and at == graphs[0]:
                                g.copies.capture_in(tools, g.pblock, g.phost, params_size,
                                                    copied, g.bufs, at,
                                                    self._plain_results(g, lead_outs))
                            elif g.pblock is not None and eager_outs.get(at):
                                eager = self._plain_results(g, eager_outs[at])
                                if eager:
                                    g.copies.capture_between(tools, g.pblock, g.phost,
                                                             between_at, at, eager)
                                    between_at += COPY_ROW_BYTES * len(eager_outs[at])
                            for op in seg.ops:
                                self._capture_op(op, g, params, writes, first, drawn)
                            if rows_out and at == graphs[-1]:   # (the kept results the
                                made = graphed_ops | {op.index for op in seg.ops}   # graphs make;
                                kept = [n for n in shape.alive if shape.maker.get(n) in made   # not
                                        and n not in shape.remade_slots]   # the views made again)
                                g.copies.capture_out(tools, g.pblock, g.phost,
                                                     params_size + COPY_ROW_BYTES * rows_in,
                                                     kept, g.env, at, self.array_type)
                    except Exception as refused:   # (an op refused, named; or a capture
                        if isinstance(refused, _CaptureRefused):   # that ended invalidated:
                            state.eager.add(refused.index)         # which op is unknown)
                        complete = False
                        g.copies.refused(at)
                        self._undraw(drawn)
                        self._unplace(g, seg.ops)
                        self._run_eager(seg.ops, g, first, params, handout, results, live=False)
                        continue
                    seg.graph = got[0]
                    graphed_ops.update(op.index for op in seg.ops)
                    if not tools.capture_runs:
                        if g.copies.any:
                            g.write_block()                  # (the tables' rows; then the
                        for buf, host in writes:             # parameters, each its own)
                            tools.write(buf, host)
                        tools.launch(seg.graph)
                if g.uploads_in:   # (their places written again once these launches pass;
                    g.uploads_read = tools.mark()   # their bytes the user's, as an upload's)
                    self.x.bytes_in += sum(place.nbytes for place in g.uploads_in.values())
        except _OpError as failed:
            if error_name(failed.error) == "OutOfMemoryError" and not stretch.draws:
                raise failed.error from None   # (run() re-runs the stretch instead)
            state.capture_again()
            g.written = None   # (the ops after it were not looked at)
            return self._finish(g, failed.index, entry, arrays, {}, results,
                                error=(first + failed.index, failed.error))
        g.writing = None
        if g.unservable:   # (a moving view no buffer of its own can stand for)
            state.give_up("a moving view")
        elif complete:
            state.captured(g)
            self.captures += 1
        else:
            state.capture_again()
        # (results made meanwhile are in the graph's memory: every one goes out as a copy)
        return self._finish(g, stretch.ops, entry, arrays, {}, results)

    def _capture_op(self, op: Op, g: StretchGraph, params: list, writes: list,
                    first: int, drawn: dict) -> None:
        """Run *op* under capture, its parameters as 0-d buffers of the weak scalars' dtype.
        *drawn*: where a capture runs its calls (the NumPy device), each Generator it draws
        from and its state before, by id: a segment whose capture is then refused runs
        eagerly from those states (a GPU's capture draws nothing)."""
        try:
            # (the arrays beside an operator's, a ufunc's or clip's parameters, the method's
            # own among them: the weak scalars' dtype is theirs and the scalar's, as NumPy's
            # and CuPy's promotion finds it)
            beside = [s for s in op.args if type(s) is Slot and s.kind != "p"]
            if op.kind == _METHOD and type(op.target) is Slot:
                beside.append(op.target)
            moving = g.shape.moving

            def of_slot(slot: Slot) -> Any:
                if slot.kind != "p":
                    return g.array(slot)
                given = slot.value(params)
                if op.kind == _OBJECT or op.kind == _KERNEL or op.index in moving \
                        or op.name == "setitem":
                    # (a Generator's draw: its kernel takes the value; a user kernel's
                    # scalar: by value too; a slice's bound: the view's offset, and an
                    # assignment's: where it writes. Kept as the replays send it)
                    g.baked[slot.n] = params[slot.n]
                    g.baked_by[slot.n] = op.index
                    return given
                if _CASTING_KEYWORDS.intersection(op.kwargs):   # (a ufunc given dtype=: the
                    raise TypeError("a parameter of a call given its dtype")   # call eager)
                if not beside:
                    raise TypeError("a parameter with no array beside it")
                dtype = np.result_type(*[g.array(s).dtype for s in beside], given)
                host = _host_scalar(given, dtype)
                buf = self.tools.scalar_in(g.pblock, PARAM_BYTES * slot.n, dtype)
                g.pbufs[slot.n] = buf
                offset = PARAM_BYTES * slot.n
                g.pvalues.add(slot.n, g.phost[offset:offset + dtype.itemsize].view(dtype).reshape(()),
                              host)   # (phost is written whole with the copy tables)
                if self.tools.capture_runs:   # the op runs now: its value must be there
                    self.tools.write(buf, host)
                else:   # written after the capture ends (a copy now would be captured)
                    writes.append((buf, host))
                return buf

            if op.kind == _UPLOAD:   # (a memcpy node from a page-locked place of the graph's)
                self._capture_upload(op, g)
                return
            target, args, kwargs = (fill_slots(op.target, of_slot), fill_slots(op.args, of_slot),
                                    fill_slots(op.kwargs, of_slot))
            if g.writing is not None:
                self._note_writes(g, op, target, args, kwargs)
            direct = (self.x.device.direct_ufunc(op.kind, op.name, args, kwargs)
                      if op.want == _ARRAY else None)
            self.x.seq = first + op.index   # (a warning it raises while it runs: its op's)
            made = (self.tools.capture_product(op.kind, op.name, target, args, kwargs)
                    if (op.kind, op.name) in PRODUCT_CALLS else None)
            if made is not None:
                result = self._finish_for(op)(made)
            elif op.kind == _OBJECT:   # (a Generator's draw: eager_ops.captured_draw)
                generator, draw = graphed_draw(self.x, op.name, target, args, kwargs)
                if self.tools.capture_runs and id(generator) not in drawn:   # (NumPy's draw
                    drawn[id(generator)] = (generator,                        # moves it now)
                                            self.x.device.generator_state(generator))
                result = self.tools.call(draw, args, kwargs, self._finish_for(op), op.index)
            else:
                result = self.tools.call(self.x.call, [op.kind, op.name, target, args, kwargs],
                                         {}, self._finish_for(op), op.index, direct)
        except Exception:
            raise _CaptureRefused(op.index) from None
        if op.kind == _OBJECT:   # (a Generator's draw, eager_ops.captured_draw)
            g.draws.append((target, op.name.rpartition(".")[2], args, kwargs))
        if op.out is not None:
            g.env[op.out.n] = result

    def _capture_upload(self, op: Op, g: StretchGraph) -> None:
        """While capturing: upload *op* as a copy its graph makes from a page-locked place of
        the graph's own, into a buffer of the graph's (a GPU's memcpy node; a recorded copy on
        the NumPy device), that place holding this replay's frame now and each replay's
        before its launch (:meth:`fill_uploads`). A frame that does not fit its op raises
        (refused: the op runs eagerly from the next capture on, and says why there)."""
        tools = self.tools
        host = frame_array(codec.check_dtype(op.name), codec.check_shape(op.args[0]),
                           self._frames[g.shape.uploads[op.index]])
        place = tools.pinned(host.shape, host.dtype)
        place[...] = host
        buf = tools.empty_like(place)
        tools.call(tools.write, [buf, place], {}, identity, op.index)
        g.uploads_in[op.index] = place
        g.env[op.out.n] = buf

    @staticmethod
    def _unplace(g: StretchGraph, ops: list) -> None:
        """A segment whose capture was refused: its uploads run between the graphs (their
        places, if made, are read by no graph)."""
        for op in ops:
            g.uploads_in.pop(op.index, None)

    def fill_uploads(self, g: StretchGraph) -> bool:
        """Before *g*'s graphs launch: each upload's frame (this replay's, ``_frames``)
        written into the page-locked place its memcpy node reads, once the launches that
        read the last ones have passed; False (nothing written) where a frame does not fit
        its op: the replay is re-run from its records, which says why."""
        frames, at = self._frames, g.shape.uploads
        try:   # (the frames' count is the stretch's uploads': HeldStretches.with_frames)
            hosts = [(place, frame_array(place.dtype, place.shape, frames[at[index]]))
                     for index, place in g.uploads_in.items()]
        except ProtocolError:
            return False
        self.tools.passed(g.uploads_read)
        g.uploads_read = None
        for place, host in hosts:
            place[...] = host
            self.x.bytes_in += place.nbytes
        return True

    def _undraw(self, drawn: dict) -> None:
        """A refused segment's Generators put back as they were before its capture drew
        (*drawn*, from :meth:`_capture_op`): its eager run draws their numbers once."""
        for generator, state in reversed(list(drawn.values())):   # (the first copy last:
            self.x.device.set_generator_state(generator, state)   # two over one bit generator)

    def generator_changed(self, hid: int) -> None:
        """Generator *hid* was given another bit generator: the graphs that draw from it drew
        through the one it had at their capture (its states' address on a GPU, its bound
        method on the NumPy device), and are captured again at their next replay."""
        for state in self.states.values():
            graphs = [state.graph, *state.variants]   # (those kept aside draw so too)
            if any(g is not None and any(draw[0] == hid for draw in g.draws) for g in graphs):
                state.capture_again()

    def before_draws(self, g: StretchGraph) -> None:
        """Before *g*'s graphs launch: the Generators whose draws they make told of each
        (DrawJournal.before_stateful), so that a replay run ahead copies their states first
        and puts them back where it is dropped, as an eager draw's would; a replay that may
        not be undone raises NotUndoable (its run is dropped). A graph's draws pass through
        no executor call, on either device (the NumPy device's launch calls the Generator's
        bound method recorded at capture): this is the journal's only notice of them."""
        journal, objects = self.x.draws, self.x.table.objects
        if not journal.speculating:
            return
        for hid, member, args, kwargs in g.draws:
            journal.before_stateful(objects.get(hid), member, args, kwargs)

    def _finish_for(self, op: Op):
        if op.want == _ARRAYS:   # (a call of several results: checked as its op's are)
            device, count = self.x.device, len(op.outs)
            return lambda result: several_arrays(device, result, count)
        if op.want == _ARRAY:
            as_array, is_array = self.x.device.as_array, self.x.device.is_array

            def finish(result: Any) -> Any:
                array = as_array(result)
                if not is_array(array):
                    raise TypeError(f"expected an array result, got {type(result).__name__}")
                return array
            return finish
        return identity

    # ------------------------------------------------------------ replay
    def _replay(self, state: GraphState, stretch: HeldStretch, g: StretchGraph,
                entry: ReplayEntry, arrays: dict, hosts: dict, results: BatchResults,
                run_ahead: bool = False) -> tuple:
        tools, first, params = self.tools, entry.first, entry.params
        self._undo = [] if run_ahead and g.assigned else None
        copied = arrays
        if g.direct:   # (read where they are: moving views only slice them)
            copied = {n: a for n, a in arrays.items() if n not in g.direct}
            for n in g.direct:
                g.bufs[n] = arrays[n]
        ahead, changed = g.copies.set_up(tools, g.bufs, copied)
        if changed:
            g.pvalues.dirty = True
        phases = self.x.phases
        phases.mark("replay_copied")   # (the inputs' copies and the results' arrays set up)
        # (every parameter at once, written into phost by _fits, and the copy tables' rows:
        # written before the first graph's launch, StretchGraph.ready_to_launch)
        phases.mark("replay_in")   # (the inputs copied in or their rows set)
        handout: dict[int, Any] = {}
        live = True
        segments = g.segments
        tail = g.reads_from
        if tail is None:
            tail = g.reads_from = _reads_from(segments)
        scattered, scatter_seg = False, g.copies.scatter_seg
        copies = g.copies
        gather_seg = copies.gather_seg if copies.gather is not None else -1
        if g.draws:
            self.before_draws(g)
        try:
            for at in range(tail):
                seg = segments[at]
                if not live and at == gather_seg:   # (its graph not launched: the inputs
                    for n, a in copied.items():    # it would have gathered, one by one)
                        tools.copy(g.bufs[n], a)
                if live and seg.graph is not None:
                    g.ready_to_launch()
                    tools.numbering = (self.x, first)   # (the NumPy device's recorded calls:
                    try:                                # the ops their warnings name)
                        tools.launch(seg.graph)
                    except LaunchError as failed:
                        raise _OpError(failed.index, failed.error) from None
                    finally:
                        tools.numbering = None
                    scattered = scattered or at == scatter_seg
                else:
                    live = self._run_eager(seg.ops, g, first, params, handout, results, live,
                                           copies)
        except _OpError as failed:
            if not run_ahead:   # (a run ahead's guessed ints failed an eager op: the graph
                state.capture_again()   # is as good as it was)
            if error_name(failed.error) == "OutOfMemoryError" and not stretch.draws:
                # (nothing the client sees was written yet: StretchReplay.run drops the
                # graphs and re-runs the stretch, as without replay)
                raise failed.error from None
            return self._finish(g, failed.index, entry, arrays, handout, results,
                                error=(first + failed.index, failed.error))
        if g.uploads_in:   # (their places written again once these launches pass)
            g.uploads_read = tools.mark()
        if scattered:
            handout = {**ahead, **handout}   # (a result an eager op made is its own)
        if not live:   # a result's layout changed under an eager op: capture again next time
            state.capture_again()
        phases.mark("replay_ran")   # (its graphs launched, its eager ops run)
        x = self.x
        if tail == len(segments):
            if x.pacer.release_at_read:   # the stretch's reads next: others may take the device
                x.pacer.release_before_read(stretch.ops, x.more_work)   # (Pacer.release_before_read)
            done = self._finish(g, stretch.ops, entry, arrays, handout, results,
                                run_ahead=run_ahead)
            phases.mark("replay_out")   # (its kept results handed to their handles)
            return done
        # The stretch ends with reads (a value, a download) after its last graph: its kept
        # results are handed out first, their copies queued behind the graphs on the
        # session's stream, while the device still runs them; the reads then wait for both.
        # (On an H200 the handout's Python took 30-60 µs that the device spent running the
        # graph.) Nothing after this writes: a read's error is an op's error, no re-run.
        done = self._finish(g, stretch.ops, entry, arrays, handout, results,
                            run_ahead=run_ahead)
        phases.mark("replay_out")
        reads = _Reads(state, g, segments[tail:], params, handout, live)
        if run_ahead and done[1] is None:   # (made when the replay is asked for)
            self._reads = reads
            return done
        if x.pacer.release_at_read:
            x.pacer.release_before_read(stretch.ops, x.more_work)
        failed = self.run_reads(reads, first, results)
        phases.mark("replay_read")   # (the reads after its graphs: the device's wait is here)
        return done if failed is None else failed

    def take_reads(self) -> Any:
        """The reads a replay run ahead left (None: it ended with none)."""
        reads, self._reads = self._reads, None
        return reads

    def take_undo(self) -> list:
        """What a replay run ahead's assignments into inputs written where they are
        overwrote (:meth:`undo` puts it back where the run is dropped); empty where none."""
        log, self._undo = self._undo, None
        return log or []

    @staticmethod
    def undo(log: list) -> None:
        """Put back what a dropped run ahead's assignments overwrote (:meth:`take_undo`),
        the last first, on the session's stream after them."""
        for array, index, before in reversed(log):
            array[index] = before

    def take_writes(self) -> list:
        """The write-backs a replay run ahead left: (input array, the graph's
        buffer holding its new value) pairs; empty where it wrote no input."""
        writes, self._writes = self._writes, []
        return writes

    def write_back(self, writes: list) -> None:
        """Copy each input's new value from its graph's buffer (:meth:`take_writes`), on
        the session's stream after the graphs that wrote it."""
        copy = self.tools.copy
        for a, buf in writes:
            copy(a, buf)

    def run_reads(self, reads: Any, first: int, results: BatchResults) -> tuple | None:
        """Make a replay's closing reads (values of its results, downloads) numbered from op
        *first*: None, or where one failed, the replay's (ops run, error entry, False). A
        read's error is an op's error: nothing is re-run."""
        if reads is None:
            return None
        try:
            for seg in reads.segments:
                self._run_eager(seg.ops, reads.graph, first, reads.params, reads.handout,
                                results, reads.live)
        except _OpError as failed:
            reads.state.capture_again()
            seq = first + failed.index
            self.x.poison(seq)
            return failed.index, self.x.record_error(seq, failed.error), False
        return None

    def read_now(self, reads: Any) -> list | None:
        """A replay run ahead's closing reads (:meth:`take_reads`: values of its results)
        made now, waiting for the device: their values numbered from 0, or None where one
        failed, warned or downloaded — nothing of the attempt is kept, and they are made
        when the client asks for the replay (:meth:`run_reads`), failing or warning there
        as ever. (A read changes nothing: made twice, it gives the same.)"""
        if reads.graph.shape.downloads:
            return None   # (a download's frame, or its chunks queued to stream, go with the
            # reply that asks for it: made here and thrown away, a streamed one's chunks
            # went after a later reply, where the client read them as a reply)
        x = self.x
        results = BatchResults(x.table)
        seq, warned = x.seq, len(x._warnings)
        try:
            for seg in reads.segments:
                self._run_eager(seg.ops, reads.graph, 0, reads.params, reads.handout,
                                results, reads.live)
        except Exception:   # (an op's error, _OpError; anything else is left for then too:
            return None     # this runs after a reply, where nothing may be raised)
        finally:
            x.seq = seq
            failed = results.downloads or len(x._warnings) != warned
            del x._warnings[warned:]
        return None if failed else results.values

    def run_eager(self, state: GraphState, ops: list, g: StretchGraph, first: int,
                  params: list, results: BatchResults, handout: dict,
                  gathering: Any = None) -> bool:
        """The eager *ops* of a replay the steady lane runs ahead (worker/steady_lane.py,
        eager_ops.lane_runs_eagerly), run as :meth:`_replay` runs them: each result copied
        into the array the graphs after it read, and in *handout* by its slot (a kept one
        is the client's). Whether that held; where it did not (a result's layout changed),
        the stretch is captured again at its next replay."""
        live = self._run_eager(ops, g, first, params, handout, results, True, gathering)
        if not live:
            state.capture_again()
        return live

    def _run_eager(self, ops: list, g: StretchGraph, first: int, params: list,
                   handout: dict, results: BatchResults, live: bool,
                   gathering: Any = None) -> bool:
        """Run *ops* for real on the stretch's buffers. While *live* (graphs still to launch
        read its results), each result is also copied into the array the graphs read (by
        the next graph's copy table where it has a row: *gathering*, the stretch's
        GraphCopies, whose rows the caller commits before that launch; where a result's
        layout changed, the rows set are copied apart: those graphs do not launch);
        returns whether that still holds."""
        x = self.x
        self.between += len(ops)

        def of_slot(slot: Slot) -> Any:
            return slot.value(params) if slot.kind == "p" else g.array(slot)

        def resolve(value: Any) -> Any:
            return fill_slots(value, of_slot)

        for op in ops:
            x.seq = first + op.index
            try:
                target, args, kwargs = resolve(op.target), resolve(op.args), resolve(op.kwargs)
                if g.writing is not None:
                    self._note_writes(g, op, target, args, kwargs)
                if self._undo is not None and op.name == "setitem" and _assigns(op, g):
                    # (a run ahead's: the client's own array, what was there kept first)
                    self._undo.append((args[0], args[1], args[0][args[1]].copy()))
                if op.kind == _DOWNLOAD:   # (its data a frame of the reply, of its own bytes;
                    with self.tools.unretained():   # its copies not kept with a capture)
                        run_download(x, x.seq, target, results, self._apart)
                    continue
                if op.kind == _OBJECT:
                    result = run_object_call(x, op.name, target, None, args, kwargs, op.want)
                elif op.kind == _UPLOAD:
                    result = run_upload(x, x.seq, op.name, args,
                                        iter((self._frames[g.shape.uploads[op.index]],)),
                                        self.tools.uploaded)
                else:
                    result = x.call(op.kind, op.name, target, args, kwargs)
                if op.want == _VALUE:
                    results.value(first + op.index, result)
                    continue
                if op.want == _ARRAYS:   # (a call of several results: a slot a piece)
                    pieces = self._finish_for(op)(result)
                elif op.want != _ARRAY:
                    continue
                else:
                    result = self._finish_for(op)(result)
            except Exception as exc:
                raise _OpError(op.index, exc) from None
            if op.want == _ARRAYS:
                for slot, piece in zip(op.outs, pieces):
                    live = self._eager_made(op, g, slot.n, piece, handout, live, gathering)
                continue
            live = self._eager_made(op, g, op.out.n, result, handout, live, gathering)
        return live

    def _eager_made(self, op: Op, g: StretchGraph, slot: int, result: Any, handout: dict,
                    live: bool, gathering: Any) -> bool:
        """Eager *op*'s array *result* for result slot *slot* (its one array, or a piece of
        a call of several results): copied into the array the graphs after it read (while
        *live*, by *gathering*'s row where it has one), put in *handout*; whether *live*
        still holds (:meth:`_run_eager`)."""
        kept = g.env.get(slot)
        if live and kept is not None and kept is not result:
            if (kept.shape, kept.dtype, kept.strides) == (result.shape, result.dtype, result.strides):
                if gathering is None or not gathering.gather_eager(slot, kept, result):
                    self.tools.copy_any(kept, result)
            else:
                live = False
                if gathering is not None:
                    gathering.apart(self.tools)
        if kept is None and (op.index in g.shape.moving or op.kind == _UPLOAD):
            # (capturing: a moving view copied into its own buffer; an upload's array too,
            # which the NumPy device makes over the message's frame: read-only, and the
            # client's)
            g.env[slot] = self._owned(g, result)
        elif kept is None or not live:
            g.env[slot] = result
        # (an op that gave back the graph's buffer it was given, ``real_if_close`` of a
        # real array: the capture made that buffer this slot's too; handed out as a view,
        # so that it is copied, not overwritten by the next replay under the client)
        handout[slot] = result if result is not kept else result[...]
        return live

    def _apart(self, a: Any) -> Any:
        """A device copy of *a*, a graph's buffer, for a download that goes after the reply."""
        copy = self.tools.empty_like(a)
        self.tools.copy_any(copy, a)
        return copy

    def _plain_results(self, g: StretchGraph, slots: list) -> dict:
        """Of result *slots*, those whose buffers (the arrays their eager ops made at the
        capture) a copy table may fill byte for byte, by slot."""
        return {n: g.env[n] for n in slots if n in g.env and plain(g.env[n], self.array_type)}

    def _gather(self, g: StretchGraph, stretch: HeldStretch, state: GraphState, arrays: dict,
                params: list) -> frozenset[int]:
        """While capturing: the moving views of inputs read where they are (``g.direct``)
        that the first graph's copy table gathers like inputs, their results' buffers the
        graphs read: each made now at the replay's bounds and put among *arrays* by its key
        (``g.gathered``), no eager op between graphs for it. Only a contiguous view, whose
        bytes are a range. Returns their op indices."""
        for op in stretch.items:
            if type(op) is not Op or op.index not in state.shape.moving or op.index not in state.eager:
                continue
            source = op.args[0]
            if type(source) is not Slot or source.kind != "i" or source.n not in g.direct:
                continue
            view = self._view(op, arrays.__getitem__, params)
            if view is not None and view.nbytes and plain(view, self.array_type):
                key = -1 - op.index
                arrays[key] = view
                g.gathered[key] = op
        return frozenset(op.index for op in g.gathered.values())

    def moving_views_at(self, g: StretchGraph, source: Any, params: list) -> dict | None:
        """The views *g*'s copy table gathers (``g.gathered``), made at a replay's bounds
        (*params*) on its inputs (*source(n)*), by key; None where one fails or has not the
        layout its buffer was captured with (an epoch's last, shorter batch: its replay is a
        re-run)."""
        views = {}
        guards = g.guards
        for key, op in g.gathered.items():
            view = self._view(op, source, params)
            if view is None or guards[key] != (view.shape, view.dtype, view.strides):
                return None
            views[key] = view
        return views

    def _view(self, op: Op, source: Any, params: list) -> Any:
        """Moving view *op* made at *params*' bounds on input *source(n)* (None: it failed)."""
        def of_slot(slot: Slot) -> Any:
            return slot.value(params) if slot.kind == "p" else source(slot.n)

        try:
            return self.x.device.as_array(self.x.call(
                op.kind, op.name, fill_slots(op.target, of_slot), fill_slots(op.args, of_slot),
                fill_slots(op.kwargs, of_slot)))
        except Exception:   # (out of range: the re-run raises it as the user's op)
            return None

    def _owned(self, g: StretchGraph, view: Any) -> Any:
        """While capturing: a buffer of the graph's own holding *view*, a ``getitem`` whose
        bounds move (worker/moving_views.py), for the graphs after it to read: each replay
        copies its own view there. A strided view's buffer has its very strides (a
        contiguous copy's would differ, and with them the kernels CuPy picks), spanning what
        they span. The view itself where a stride is negative or zero, or it is empty: the
        stretch is then never served by graphs (``StretchGraph.unservable``)."""
        tools = self.tools
        if view.flags.c_contiguous or view.flags.f_contiguous:
            owned = tools.empty_like(view)
            if owned.strides == view.strides:
                tools.copy(owned, view)
                return owned
        if view.size and all(s > 0 or n == 1 for n, s in zip(view.shape, view.strides)):
            owned = tools.empty_strided(view)   # (a patch, a column window, a step: the
            tools.copy_any(owned, view)         # view's strides over memory of its own)
            return owned
        g.unservable = True   # (this capture's ops read the view itself)
        return view

    def _note_writes(self, g: StretchGraph, op: Op, target: Any, args: Any, kwargs: Any) -> None:
        """While capturing: mark the inputs whose buffers *op* writes (moving_views.
        written_operands says where those arrays are). A view of an input's buffer is in
        that buffer's allocation, so writes through views count. (Counting an array only
        read costs a copy, never a result.)"""
        span = self.x.device.memory_span
        for a in instances_in(written_operands(op, target, args, kwargs), self.array_type):
            n = g.writing.get(span(a)[1]) if a.nbytes else None
            if n is not None:
                g.written.add(n)

    # ------------------------------------------------------------ results
    def _finish(self, g: StretchGraph, ran: int, entry: ReplayEntry, arrays: dict,
                handout: dict, results: BatchResults, error: tuple | None = None,
                run_ahead: bool = False) -> tuple:
        """Hand the kept results of the ops that ran to their handles, copy written inputs
        back (*run_ahead*: kept for :meth:`take_writes` instead), drop the inputs the
        stretch dropped; the executor's reply figures."""
        tools, table, shape = self.tools, self.x.table, g.shape
        inputs, outs = entry.inputs, entry.outs
        # the results' arrays first: until the inputs are written back, nothing the client
        # sees has changed, so running out of memory here leaves a re-run possible
        handed = []
        remade = shape.remade_slots
        for n in shape.alive:
            if shape.maker[n] >= ran or n in remade:
                continue
            made = eager_array_out(g, n, handout.get(n), ran)
            if made is None or made.base is not None:   # (a graph's buffer, or a view: a
                kept = made if made is not None else g.env[n]   # strided one, element by
                made = tools.empty_like(kept)                   # element)
                tools.copy_any(made, kept)
            handed.append((n, outs[n], made))
        if remade:   # (views of the inputs and of the results just handed out)
            own = {n: made for n, _h, made in handed}
            x = self.x
            for n, made in kept_views.remake(x.call, x.device.as_array, shape.remade, arrays,
                                             own, remade, ran, entry.params):
                handed.append((n, outs[n], made))
        self.x.phases.mark("replay_made")   # (the kept results' arrays made and copied)
        if shape.writes:
            written = g.written
            direct = g.direct | g.gathered.keys()   # (read only: never written back)
            if run_ahead:
                self._writes = [(a, g.bufs[n]) for n, a in arrays.items()
                                if (written is None or n in written) and n not in direct]
            else:
                for n, a in arrays.items():
                    if (written is None or n in written) and n not in direct:
                        tools.copy(a, g.bufs[n])
        need = entry.need   # (a client that knows the results' metadata wants none of it)
        for n, hid, made in handed:
            table.put(hid, made)
            if need is None or n in need:
                results.fresh_array(hid, made)
        if not entry.early:   # (an early replay's inputs: the client frees them, if it does)
            for n in shape.input_frees:
                table.free(inputs[n])
        if error is not None:
            seq, exc = error
            self.x.poison(seq)
            return ran, self.x.record_error(seq, exc), False
        return ran, None, False


class _Reads(NamedTuple):
    """The reads that end a replay: its graph state and graph, the eager segments of
    reads, its parameters, the arrays it handed out, whether its graphs' buffers still
    stand for its results."""

    state: Any
    graph: Any
    segments: list
    params: list
    handout: dict
    live: bool


def _eager_outs(segments: list, graphs: list) -> dict:
    """By graph segment (of *graphs*, the indices of *segments* captured as graphs): the
    result slots of the eager ops since the graph before it (from the start for the
    first), whose arrays that graph's copy table may copy into the buffers. Not one that
    an eager op after it, before that graph, names: that op reads (or writes) the buffer
    before the graph's copy would have filled it (``r = draw(); s = outer(r, r)``)."""
    outs: dict = {}
    before = 0
    for at in graphs:
        ops = [op for seg in segments[before:at] for op in seg.ops]
        named: set = set()
        made = []
        for op in reversed(ops):   # (each result against the ops after it; a call of
            if op.want in (_ARRAY, _ARRAYS):   # several results: each piece, last first)
                made.extend(slot.n for slot in reversed(op.outs) if slot.n not in named)
            named.update(slot.n for slot in slots_in((op.target, op.args, op.kwargs))
                         if slot.kind == "r")
        if made:
            outs[at] = made[::-1]
        before = at + 1
    return outs


def _reads_no_input(segments: list, g: StretchGraph) -> bool:
    """Whether the ops of *segments* (eager ones, before the first graph) read no input's
    buffer and no view the first graph's copy table gathers: that graph may then gather
    the inputs itself (a ``cudaMemcpyAsync`` an input saved at every replay)."""
    gathered = {op.out.n for op in g.gathered.values()}
    for seg in segments:
        for op in seg.ops:
            for slot in slots_in((op.target, op.args, op.kwargs)):
                if slot.kind == "i" or (slot.kind == "r" and slot.n in gathered):
                    return False
    return True


def _reads_from(segments: list) -> int:
    """The index of the first segment of the run of eager segments that ends *segments* and
    only reads (each op a value of an array: ``float``, ``item``, a download; no object's
    method), or ``len(segments)`` where the last segment does more."""
    at = len(segments)
    while at > 0:
        seg = segments[at - 1]
        if seg.graph is not None or not seg.eager \
                or any(op.want != _VALUE or op.kind == _OBJECT for op in seg.ops):
            break
        at -= 1
    return at


def _host_scalar(value: Any, dtype: np.dtype) -> np.ndarray:
    """*value* as a 0-d host array of *dtype*; OverflowError where it does not fit (as CuPy
    refuses a weak integer outside its array's type)."""
    if type(value) not in (bool, int, float, complex) and not isinstance(value, np.generic):
        raise TypeError("a stretch parameter is a number")
    return np.array(value, dtype=dtype)
