"""What a held stretch's records say about graphs serving it, found once as it is held.

Which inputs its ops read and which results the client keeps, the inputs it drops, whether
it writes into arrays (and which), its uploads and closing downloads, its moving views, and
why graphs can never serve it where they cannot (``why_not``, which GraphState.never
reports). worker/graph_replay.py reads it at every capture and replay of the stretch; the
kept views' judgement (worker/kept_views.py) completes it (:meth:`StretchShape.remake`).
"""

from __future__ import annotations

from ..protocol import api
from ..protocol import messages as m
from ..protocol.stretch_records import slots_in
from .moving_views import (assigned_only, kernel_writes, moving_views, sliced_only,
                           writable_inputs, written_results, written_through)
from .stretches import HeldStretch, Op, Slot

__all__ = ["StretchShape", "SEVERAL_ALONE"]

#: why graphs never serve a stretch whose ops are all calls of several results (a ``split``
#: of an array whose shape the client does not know yet, in a batch of its own): they run
#: eagerly, between graphs that would have nothing to do (GraphState.never)
SEVERAL_ALONE = "calls of several results alone"


class StretchShape:
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
            if item.kind == m.KIND_UPLOAD:
                if len(item.args) != 1 or item.want != api.ARRAY or item.out is None:
                    self.graphable = False   # (streamed in chunks: re-run from its records)
                    self.why_not = self.why_not or "a streamed upload"
                continue
            if item.kind == m.KIND_DOWNLOAD:   # (a closing read: eager_by_nature, graph_segments.reads_from)
                self.downloads += 1
                if item.want != api.VALUE or item.out is not None or item.args or item.kwargs:
                    self.graphable = False
                    self.why_not = self.why_not or "a download's form"
            elif item.kind not in (m.KIND_OPERATOR, m.KIND_METHOD, m.KIND_FUNCTION, m.KIND_ATTRIBUTE, m.KIND_OBJECT, m.KIND_KERNEL) \
                    or type(item.name) is not str \
                    or item.want not in (api.ARRAY, api.NONE, api.VALUE, api.ARRAYS) \
                    or (item.kind == m.KIND_OBJECT and item.name in api.OBJECTS):
                self.graphable = False
                self.why_not = self.why_not or (
                    f"an op of kind {item.kind}" if type(item.name) is not str
                    else f"{item.name} (kind {item.kind})")
            if item.want == api.NONE or "out" in item.kwargs or "output" in item.kwargs or (
                    item.kind == m.KIND_KERNEL and kernel_writes(item) != frozenset()):
                self.writes = True   # (a user's kernel may write any array it is given)
            for slot in slots_in((item.target, item.args, item.kwargs)):
                if slot.kind == "i" and slot.n not in self.used:
                    self.used.append(slot.n)
        if self.downloads and self.downloads == stretch.ops:   # (downloads alone: no graph has work
            self.graphable = False                    # to do, its guards only to fail)
            self.why_not = "downloads alone"
        elif stretch.several and all(op.want == api.ARRAYS for op in stretch.items if type(op) is Op):
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
