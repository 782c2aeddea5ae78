"""A captured stretch's segments, read for what its copy tables and closing reads may do.

A held stretch is captured as segments (worker/graph_state.py ``Segment``): runs of ops that
capture well, each one graph, and between them the ops that run eagerly. These functions
read a capture's segments once: which eager results each graph's copy table may copy into
the buffers it reads, whether the first graph may gather the inputs itself, and where the
closing reads begin (worker/graph_capture.py, worker/graph_replay.py, worker/lane_plans.py).
"""

from __future__ import annotations

from typing import Any, NamedTuple

from ..protocol import api
from ..protocol import messages as m
from ..protocol.stretch_records import slots_in
from .graph_state import StretchGraph

__all__ = ["Reads", "eager_outs", "reads_no_input", "reads_from"]


class Reads(NamedTuple):
    """The reads that end a replay: its graph state and graph, the eager segments of
    reads, its parameters, the arrays it handed out, whether its graphs' buffers still
    stand for its results."""

    state: Any
    graph: Any
    segments: list
    params: list
    handout: dict
    live: bool



def eager_outs(segments: list, graphs: list) -> dict:
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
            if op.want in (api.ARRAY, api.ARRAYS):   # several results: each piece, last first)
                made.extend(slot.n for slot in reversed(op.outs) if slot.n not in named)
            named.update(slot.n for slot in slots_in((op.target, op.args, op.kwargs))
                         if slot.kind == "r")
        if made:
            outs[at] = made[::-1]
        before = at + 1
    return outs


def reads_no_input(segments: list, g: StretchGraph) -> bool:
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


def reads_from(segments: list) -> int:
    """The index of the first segment of the run of eager segments that ends *segments* and
    only reads (each op a value of an array: ``float``, ``item``, a download; no object's
    method), or ``len(segments)`` where the last segment does more."""
    at = len(segments)
    while at > 0:
        seg = segments[at - 1]
        if seg.graph is not None or not seg.eager \
                or any(op.want != api.VALUE or op.kind == m.KIND_OBJECT for op in seg.ops):
            break
        at -= 1
    return at
