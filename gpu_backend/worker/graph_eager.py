"""The ops a held stretch's replay runs eagerly between its graphs, and its moving views.

The part of :class:`worker.graph_replay.StretchGraphs` (a mixin of it, reading its
executor ``x``, its device's graph ``tools``, ``array_type``, the replay's data frames
``_frames``, its undo log ``_undo`` and its ``_finish_for``) that runs ops for real on a
stretch's buffers: an eager segment's ops while capturing and at each replay, each result
copied into the buffer the graphs after it read (or gathered by the next graph's copy
table); and the moving views (``getitem``s whose bounds are parameters, worker/
moving_views.py): gathered by the first graph's copy table, made at a replay's bounds, or
copied into a buffer of the graph's own.
"""

from __future__ import annotations

from typing import Any

from ..protocol import api
from ..protocol import messages as m
from ..protocol.stretch_records import instances_in
from .batch_results import BatchResults
from .graph_copies import plain
from .graph_state import GraphState, StretchGraph
from .moving_views import written_operands
from .objects import run_object_call
from .stretches import HeldStretch, Op, Slot, fill_slots
from .transfers import run_download, run_upload

__all__ = ["GraphEagerRuns", "OpError", "assigns"]


class OpError(Exception):
    """An op's own error (with its index) while a stretch ran."""

    def __init__(self, index: int, error: BaseException) -> None:
        self.index, self.error = index, error


def assigns(op: Op, g: StretchGraph) -> bool:
    """Whether assignment *op* writes an input written where it is (``g.assigned``)."""
    into = op.args[0] if op.args else None
    return type(into) is Slot and into.kind == "i" and into.n in g.assigned


class GraphEagerRuns:
    """StretchGraphs' eager runs and moving views (a mixin: see the module's docstring)."""

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
                if self._undo is not None and op.name == "setitem" and assigns(op, g):
                    # (a run ahead's: the client's own array, what was there kept first)
                    self._undo.append((args[0], args[1], args[0][args[1]].copy()))
                if op.kind == m.KIND_DOWNLOAD:   # (its data a frame of the reply, of its own bytes;
                    with self.tools.unretained():   # its copies not kept with a capture)
                        run_download(x, x.seq, target, results, self._apart)
                    continue
                if op.kind == m.KIND_OBJECT:
                    result = run_object_call(x, op.name, target, None, args, kwargs, op.want)
                elif op.kind == m.KIND_UPLOAD:
                    result = run_upload(x, x.seq, op.name, args,
                                        iter((self._frames[g.shape.uploads[op.index]],)),
                                        self.tools.uploaded)
                else:
                    result = x.call(op.kind, op.name, target, args, kwargs)
                if op.want == api.VALUE:
                    results.value(first + op.index, result)
                    continue
                if op.want == api.ARRAYS:   # (a call of several results: a slot a piece)
                    pieces = self._finish_for(op)(result)
                elif op.want != api.ARRAY:
                    continue
                else:
                    result = self._finish_for(op)(result)
            except Exception as exc:
                raise OpError(op.index, exc) from None
            if op.want == api.ARRAYS:
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
        if kept is None and (op.index in g.shape.moving or op.kind == m.KIND_UPLOAD):
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
