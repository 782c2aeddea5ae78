"""A held stretch captured as graphs: its first replay through graphs, run for real.

The part of :class:`worker.graph_replay.StretchGraphs` (a mixin of it, reading its executor
``x``, its device's graph ``tools``, ``copy_tables``, ``graphed_draws``, the replay's data
frames ``_frames``, and its ``_finish``, ``_finish_for`` and eager runs, worker/
graph_eager.py) that captures a stretch: the inputs copied into buffers the stretch owns,
the ops cut into segments (runs that capture well, each one graph launched at once; between
them the ops that run eagerly), each captured op's parameters 0-d buffers of the dtype CuPy
gives the weak scalar, its uploads copies from page-locked places of the graph's own, and
the copy tables' rows laid out. An op that refuses capture runs eagerly from the next
capture on (:class:`CaptureRefused`; MAX_ATTEMPTS captures in all, worker/graph_state.py).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..devices.product_capture import PRODUCT_CALLS
from ..protocol import api, codec
from ..protocol import messages as m
from ..protocol.errors import error_name
from .batch_results import BatchResults
from .draw_journal import STATE_CLASS, NotUndoable
from .eager_ops import eager_by_nature
from .graph_copies import COPY_ROW_BYTES, identity
from .graph_eager import OpError
from .graph_segments import eager_outs, reads_no_input
from .graph_state import GraphState, StretchGraph
from .graph_state import Segment as _Segment
from .objects import graphed_draw
from .stretches import HeldStretch, Op, ReplayEntry, Slot, fill_slots
from .transfers import frame_array

__all__ = ["GraphCapture", "CaptureRefused", "PARAM_BYTES"]

#: Bytes of a parameter's place in a stretch's parameter block (the widest scalar: complex128)
PARAM_BYTES = 16
#: the Generator's settable member (api.OBJECT_SETTERS): a new bit generator
_BIT_GENERATOR = STATE_CLASS + ".bit_generator"
#: A ufunc's keywords that decide the loop its scalars are cast for (``dtype=``): a call
#: given one with a parameter runs eagerly, given the replay's value, as the user's does.
_CASTING_KEYWORDS = frozenset({"dtype", "signature", "casting"})


class CaptureRefused(Exception):
    """An op that failed while captured: it runs eagerly from the next capture on."""

    def __init__(self, index: int) -> None:
        self.index = index


class GraphCapture:
    """StretchGraphs' captures (a mixin: see the module's docstring)."""

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
                      if type(op) is Op and op.kind == m.KIND_OBJECT and op.name == _BIT_GENERATOR}
        for op in (item for item in stretch.items if type(item) is Op):
            if op.index in gathered:   # (made by the first graph's copy table)
                continue
            eager = op.index in state.eager or eager_by_nature(op, arrays, shape.int_results) \
                or (op.kind == m.KIND_OBJECT and (not self.graphed_draws or op.target in reassigned))
            if not segments or segments[-1].eager != eager or eager:
                segments.append(_Segment(eager))
            segments[-1].ops.append(op)
        g.segments = segments
        complete = True
        handout: dict[int, Any] = {}
        graphs = [i for i, seg in enumerate(segments) if not seg.eager] if self.copy_tables else []
        # (the inputs gathered by the first graph, after any eager segments before it that
        # read none of them: a loop that draws first, then computes)
        gathers = bool(graphs) and reads_no_input(segments[:graphs[0]], g)
        # (... and the arrays the eager ops before it make, a row each: their copies into
        # the buffers the graphs read; a later graph copies those of the eager ops since
        # the graph before it, by a table of its own)
        by_graph = eager_outs(segments, graphs)
        lead_outs = by_graph.pop(graphs[0], []) if graphs else []
        if not gathers:
            lead_outs = []
        rows_in = len(copied) + len(lead_outs) if gathers else 0
        rows_out = len(shape.alive) if graphs else 0
        rows_between = sum(len(outs) for outs in by_graph.values())
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
                            elif g.pblock is not None and by_graph.get(at):
                                eager = self._plain_results(g, by_graph[at])
                                if eager:
                                    g.copies.capture_between(tools, g.pblock, g.phost,
                                                             between_at, at, eager)
                                    between_at += COPY_ROW_BYTES * len(by_graph[at])
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
                        if isinstance(refused, CaptureRefused):   # that ended invalidated:
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
        except OpError as failed:
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
            if op.kind == m.KIND_METHOD and type(op.target) is Slot:
                beside.append(op.target)
            moving = g.shape.moving

            def of_slot(slot: Slot) -> Any:
                if slot.kind != "p":
                    return g.array(slot)
                given = slot.value(params)
                if op.kind == m.KIND_OBJECT or op.kind == m.KIND_KERNEL or op.index in moving \
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

            if op.kind == m.KIND_UPLOAD:   # (a memcpy node from a page-locked place of the graph's)
                self._capture_upload(op, g)
                return
            target, args, kwargs = (fill_slots(op.target, of_slot), fill_slots(op.args, of_slot),
                                    fill_slots(op.kwargs, of_slot))
            if g.writing is not None:
                self._note_writes(g, op, target, args, kwargs)
            direct = (self.x.device.direct_ufunc(op.kind, op.name, args, kwargs)
                      if op.want == api.ARRAY else None)
            self.x.seq = first + op.index   # (a warning it raises while it runs: its op's)
            made = (self.tools.capture_product(op.kind, op.name, target, args, kwargs)
                    if (op.kind, op.name) in PRODUCT_CALLS else None)
            if made is not None:
                result = self._finish_for(op)(made)
            elif op.kind == m.KIND_OBJECT:   # (a Generator's draw: eager_ops.captured_draw)
                generator, draw = graphed_draw(self.x, op.name, target, args, kwargs)
                if self.tools.capture_runs and id(generator) not in drawn:   # (NumPy's draw
                    drawn[id(generator)] = (generator,                        # moves it now)
                                            self.x.device.generator_state(generator))
                result = self.tools.call(draw, args, kwargs, self._finish_for(op), op.index)
            else:
                result = self.tools.call(self.x.call, [op.kind, op.name, target, args, kwargs],
                                         {}, self._finish_for(op), op.index, direct)
        except Exception:
            raise CaptureRefused(op.index) from None
        if op.kind == m.KIND_OBJECT:   # (a Generator's draw, eager_ops.captured_draw)
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

    def _undraw(self, drawn: dict) -> None:
        """A refused segment's Generators put back as they were before its capture drew
        (*drawn*, from :meth:`_capture_op`): its eager run draws their numbers once."""
        for generator, state in reversed(list(drawn.values())):   # (the first copy last:
            self.x.device.set_generator_state(generator, state)   # two over one bit generator)


def _host_scalar(value: Any, dtype: np.dtype) -> np.ndarray:
    """*value* as a 0-d host array of *dtype*; OverflowError where it does not fit (as CuPy
    refuses a weak integer outside its array's type)."""
    if type(value) not in (bool, int, float, complex) and not isinstance(value, np.generic):
        raise TypeError("a stretch parameter is a number")
    return np.array(value, dtype=dtype)
