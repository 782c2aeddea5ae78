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

The parts, a module each: what a stretch's records say about graphs serving it
(worker/graph_shape.py), the capture (worker/graph_capture.py, a mixin of
:class:`StretchGraphs`), the ops run eagerly between graphs and the moving views
(worker/graph_eager.py, another), and what a capture's segments allow
(worker/graph_segments.py); this module holds the stretches, runs a replay, hands its
results out and keeps its closing reads.
"""

from __future__ import annotations

from typing import Any

from ..devices.host_graphs import LaunchError
from ..protocol import api
from ..protocol.errors import ProtocolError, error_name
from .batch_results import BatchResults, several_arrays
from .graph_capture import GraphCapture
from .graph_copies import identity
from .graph_eager import GraphEagerRuns, OpError
from .graph_segments import Reads, reads_from
from .graph_shape import StretchShape
from .graph_state import Capture, GraphState, StretchGraph, eager_array_out
from . import kept_views
from .stretches import HeldStretch, Op, ReplayEntry
from .transfers import frame_array

__all__ = ["StretchGraphs", "StretchGraph", "GraphState", "Capture", "MAX_ATTEMPTS"]

#: Captures tried per held stretch before it is left to re-runs (each failed one moves the
#: op that refused capture to the eager side).
MAX_ATTEMPTS = 4

_ARRAY, _ARRAYS = api.ARRAY, api.ARRAYS


class StretchGraphs(GraphCapture, GraphEagerRuns):
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
        shape = StretchShape(stretch)
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
        shape = StretchShape(stretch)
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
            tail = g.reads_from = reads_from(segments)
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
                        raise OpError(failed.index, failed.error) from None
                    finally:
                        tools.numbering = None
                    scattered = scattered or at == scatter_seg
                else:
                    live = self._run_eager(seg.ops, g, first, params, handout, results, live,
                                           copies)
        except OpError as failed:
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
        reads = Reads(state, g, segments[tail:], params, handout, live)
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
        except OpError as failed:
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
        except Exception:   # (an op's error, OpError; anything else is left for then too:
            return None     # this runs after a reply, where nothing may be raised)
        finally:
            x.seq = seq
            failed = results.downloads or len(x._warnings) != warned
            del x._warnings[warned:]
        return None if failed else results.values

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


