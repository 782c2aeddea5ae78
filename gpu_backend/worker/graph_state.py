"""What a held stretch's capture is and where it stands (worker/graph_replay.py runs them).

:class:`StretchGraph` is one capture: the buffers its graphs read and write, the parameter
block and its host copy, its segments (graphs, and the eager ops between them), the copies
in and out (worker/graph_copies.py) and the device time its replays were last charged.
:class:`GraphState` is a held stretch's standing with graphs (:class:`Capture`: due,
captured, never). ``shape`` is graph_replay's reading of the stretch's records.
"""

from __future__ import annotations

from collections import deque
from enum import Enum
from typing import Any

import numpy as np

from ..protocol.stretch_records import same_param
from .graph_copies import GraphCopies
from .param_values import ParamValues
from .stretches import Op, Slot

__all__ = ["Segment", "StretchGraph", "Capture", "GraphState", "eager_array_out", "VARIANTS",
           "WATCHED"]

#: the most graphs a held stretch keeps, each with other int parameters baked in (an
#: assignment's or a slice's index that takes turns: ``buf[i % 8] = x``), beside the one
#: that serves now (:meth:`GraphState.variant_for`)
VARIANTS = 8
#: the replays whose ints a held stretch watches to tell whether they take turns (at most
#: VARIANTS values among them) or move on (``traj[i] = x``): :meth:`GraphState.watch`
WATCHED = 2 * VARIANTS
#: the most graphs a held stretch shelves in its life (each a capture: graphs dropped for
#: memory and captured again do not capture variants for ever)
SHELVES = 4 * VARIANTS


class Segment:
    """A run of a captured stretch's ops: one graph's, or eager ones between graphs."""

    __slots__ = ("ops", "graph", "eager")

    def __init__(self, eager: bool) -> None:
        self.ops: list[Op] = []
        self.graph: Any = None
        self.eager = eager


class StretchGraph:
    """A held stretch's capture: buffers, parameter buffers, segments, the results' arrays."""

    def __init__(self, shape: Any) -> None:
        self.shape = shape
        self.guards: dict[int, tuple] = {}
        self.bufs: dict[int, Any] = {}
        self.pbufs: dict[int, Any] = {}
        #: the parameters' buffers are 0-d views into one device block, written from
        #: ``phost`` with one copy before each launch (a copy each cost ~5 µs a parameter)
        self.pblock: Any = None
        self.phost: np.ndarray | None = None
        #: copies phost into pblock (GraphTools.writer: the pointers looked up once)
        self.write_block: Any = None
        #: each parameter's place in phost, what was last written there, and whether
        #: phost differs from the device's block (worker/param_values.py)
        self.pvalues = ParamValues()
        self.segments: list[Segment] = []
        self.env: dict[int, Any] = {}
        self.retained: Any = None
        #: the inputs whose buffers the stretch writes (copied back after each run), found
        #: as it is captured; None: not known (all are copied back)
        self.written: set[int] | None = None
        #: while capturing: each input buffer's allocation, by its start
        self.writing: dict[int, int] | None = None
        #: the first of the segments that only read, after the last graph (graph_segments' ``reads_from``;
        #: None until a replay finds it)
        self.reads_from: int | None = None
        #: the copies in and out its graphs make (worker/graph_copies.py)
        self.copies = GraphCopies()
        #: [device seconds its last measured replay was charged (None: none yet), replays
        #: charged that since] (Pacer.replay_estimate)
        self.cost: list = [None, 0]
        #: the Generator draws its graphs make (eager_ops.captured_draw): (the generator's
        #: id, the method, its arguments, its keywords), for a replay that may be undone to
        #: copy their states first (StretchGraphs.before_draws)
        self.draws: list[tuple] = []
        #: the parameters whose values its Generator draws and its slices' bounds took at
        #: capture, by slot (a draw's scalars are a kernel's arguments, not a buffer it
        #: reads; a view's bounds are its pointer), and the op each is of: a replay given
        #: other values is not this graph's (:meth:`keeps`)
        self.baked: dict[int, Any] = {}
        self.baked_by: dict[int, int] = {}
        #: a moving view (worker/moving_views.py) met at capture that no buffer of the
        #: graph's own can stand for: graphs never serve the stretch
        self.unservable = False
        #: the inputs read where they are, not copied into buffers (moving_views.sliced_only:
        #: only moving views, eager, slice them; or assigned_only: only eager assignments
        #: write them, ``assigned``): ``bufs`` holds each replay's array
        self.direct: frozenset[int] = frozenset()
        self.assigned: frozenset[int] = frozenset()
        #: the moving views of those inputs that the first graph's copy table gathers, each
        #: by the key it has among a replay's arrays (negative: no input's), made at each
        #: replay at its bounds (StretchGraphs.moving_views_at) and copied like an input
        self.gathered: dict[int, Op] = {}
        #: each upload captured in its graph, by its op's index: the page-locked place its
        #: memcpy node copies from, each replay's frame written there before the launch
        #: (StretchGraphs.fill_uploads); and the stream's mark after the last launch that
        #: read them (not written again before it has passed)
        self.uploads_in: dict[int, Any] = {}
        self.uploads_read: Any = None

    def ready_to_launch(self) -> None:
        """Before each graph's launch: the copy tables' rows the eager ops before it set
        (GraphCopies.commit_eager), and the parameter block written where it changed (its
        parameters, its rows): once a replay, before its first graph, unless an eager op's
        array between two graphs moved."""
        copies = self.copies
        if copies.eager_rows and copies.commit_eager():
            self.pvalues.dirty = True
        if self.pvalues.dirty and self.pblock is not None:
            self.write_block()
            self.pvalues.dirty = False

    def keeps(self, params: list) -> bool:
        """Whether a replay given *params* draws, slices, assigns and launches as the
        graph's baked ops do: each baked parameter the same (same_param: its type, value
        and a zero's sign)."""
        baked = self.baked
        return not baked or all(same_param(params[n], v) for n, v in baked.items())

    def unkept(self, params: list) -> set[int]:
        """The op indices of the baked ops a replay given *params* would change."""
        by = self.baked_by
        return {by[n] for n, v in self.baked.items() if not same_param(params[n], v)}

    def array(self, slot: Slot) -> Any:
        """The array an input (its buffer) or result slot stands for."""
        return self.bufs[slot.n] if slot.kind == "i" else self.env[slot.n]

    def nbytes(self) -> int:
        return self.retained.nbytes() if self.retained is not None else 0


class Capture(Enum):
    """Where a held stretch stands with graphs."""

    DUE = "due"            # no graph now: captured at its next replay (MAX_ATTEMPTS in all)
    CAPTURED = "captured"  # its graph serves each replay whose guards hold
    NEVER = "never"        # graphs cannot serve it: every replay re-runs its records


class GraphState:
    """One held stretch's standing with graphs: its :class:`Capture` stage, its graph while
    captured, the ops found to refuse capture (eager from the next capture on), the
    captures tried, and what its records say (found once, when it is held)."""

    __slots__ = ("stage", "graph", "eager", "attempts", "shape", "shortest", "never", "variants",
                 "shelved", "turns", "settled", "turning", "_window")

    def __init__(self, shape: Any, servable: bool, why: str = "its records") -> None:
        self.shape = shape
        self.stage = Capture.DUE if servable else Capture.NEVER
        #: why graphs will never serve it (a word or two: ``never_graphed``'s key), or None:
        #: what its records say (``StretchShape.why_not``, worker/graph_shape.py), else *why*
        self.never: str | None = None if servable else (shape.why_not or why)
        self.graph: StretchGraph | None = None
        self.eager: set[int] = set()
        self.attempts = 0
        #: the shortest wall time a replay of the stretch took in the worker, its closing
        #: reads included (None: none yet), of its replays beside other sessions (alone,
        #: nothing is paced and nothing timed) through a graph captured before (a capture's
        #: own replay takes the graph's instantiation too: 2-4 ms on an H100) or re-run
        #: paced: its device time is at most this where it ends with a read
        #: (worker/stretch_replay.py, which paces only replays this long)
        self.shortest: float | None = None
        #: graphs captured before with other ints baked in, kept for a replay given them
        #: again (at most VARIANTS; the memory each holds counts as the stretch's)
        self.variants: list[StretchGraph] = []
        self.shelved = 0
        #: its baked ints found to take turns: a replay given others shelves its graph and
        #: captures its own (:meth:`shelve`); ``settled``: found to move on, never watched again
        self.turns = False
        self.settled = False
        #: ops made eager because their baked ints changed, watched (:meth:`ints_turn`):
        #: (the parameters' slots, the ops' indices), or None
        self.turning: tuple[list[int], frozenset[int]] | None = None
        self._window: deque = deque(maxlen=WATCHED)

    def captured(self, graph: StretchGraph) -> None:
        """*graph* serves the replays from now on."""
        self.stage, self.graph = Capture.CAPTURED, graph

    def capture_again(self) -> None:
        """The graph (if any) goes, its memory with it, and every variant; the next replay
        captures anew."""
        self.stage, self.graph = Capture.DUE, None
        self.variants = []

    def give_up(self, why: str) -> None:
        """Graphs will never serve this stretch (*why*): every replay re-runs its records."""
        self.stage, self.graph = Capture.NEVER, None
        self.variants = []
        self.never = why

    def nbytes(self) -> int:
        """The device memory its graphs hold."""
        held = self.graph.nbytes() if self.graph is not None else 0
        return held + sum(v.nbytes() for v in self.variants)

    # -- graphs by the ints they baked (an index that takes turns) --------------
    def variant_for(self, params: list) -> StretchGraph | None:
        """A graph kept before that bakes what a replay given *params* is given, made the
        one that serves (the one serving now kept in its place); None if none does."""
        for i, other in enumerate(self.variants):
            if other.keeps(params):
                if self.graph is not None:
                    self.variants[i] = self.graph
                else:
                    del self.variants[i]
                self.graph, self.stage = other, Capture.CAPTURED
                other.copies.unprepare()   # (set up ahead when it last served: guess again)
                return other
        return None

    @staticmethod
    def ints_only(graph: StretchGraph, params: list) -> bool:
        """Whether every value *graph* baked that *params* change is an int, as given
        again: a draw's or a kernel's float moves on, and graphs by value would not serve
        it again."""
        for n, v in graph.baked.items():
            got = params[n]
            if not same_param(got, v) and (type(got) is not int or type(v) is not int):
                return False
        return True

    def watch(self, params: list, slots: Any) -> bool | None:
        """One more replay's ints at *slots*: True once WATCHED replays in a row held at
        most VARIANTS values (they take turns: ``turns``), False if more (they move on:
        ``settled``), None until then."""
        self._window.append(tuple(params[n] for n in slots))
        if len(self._window) < WATCHED:
            return None
        return self.judge(len(set(self._window)) <= VARIANTS)

    def watch_misses(self, params: list, slots: Any) -> bool | None:
        """One more replay given ints its graph did not bake, where graphs cannot run the
        ops eagerly (a moving view written: each such replay is re-run from its records):
        True at the first ints met again (they take turns: ``turns``), False once
        VARIANTS + 1 came with none met again (they move on: ``settled``), None until then.
        (Sooner than :meth:`watch`: ``rec[i] = rec[i - 1] * 0.9 + x`` re-run, its reply not
        "not graphed", held the stretch longer than giving up at once: 1.86-1.98x local
        against 1.51-1.53 on an H200, run 301.)"""
        key = tuple(params[n] for n in slots)
        if key in self._window or len(self._window) >= VARIANTS:
            return self.judge(key in self._window)
        self._window.append(key)
        return None

    def judge(self, turns: bool) -> bool:
        """A verdict on its ints (:meth:`watch`, :meth:`watch_misses`, or a new value met
        after they were found to take turns), kept; a later watch starts afresh."""
        self._window.clear()
        self.turns, self.settled = turns, not turns
        return turns

    def answered_ahead(self, params: list) -> None:
        """A replay answered by a run ahead given *params* (worker/run_ahead.py): its ints
        watched as a replay its graph served (:meth:`ints_turn` judges at the next)."""
        if self.turning is not None and len(self._window) < WATCHED - 1:
            self._window.append(tuple(params[n] for n in self.turning[0]))

    def ints_turn(self, params: list) -> bool:
        """For a replay its graph serves while ops are eager because their ints changed
        (``turning``): whether those ints are now found to take turns; then the ops are no
        longer eager and the graph goes (this replay captures one with its ints baked in,
        the next ones a graph each: :meth:`shelve`)."""
        slots, ops = self.turning
        verdict = self.watch(params, slots)
        if verdict is None:
            return False
        self.turning = None
        if not verdict:
            return False
        self.eager.difference_update(ops)
        self.capture_again()   # (a capture that is not one refused: MAX_ATTEMPTS, as shelve)
        self.attempts = max(0, self.attempts - 1)
        return True

    def shelve(self) -> bool:
        """Keep the serving graph as a variant (room allowing) and capture at the next
        replay, a capture that is not one of its MAX_ATTEMPTS (worker/graph_replay.py: those
        count captures refused or lost), SHELVES at most; whether there was room."""
        if self.graph is None or len(self.variants) >= VARIANTS or self.shelved >= SHELVES:
            return False
        self.variants.append(self.graph)
        self.stage, self.graph = Capture.DUE, None
        self.shelved += 1
        self.attempts = max(0, self.attempts - 1)
        return True


def eager_array_out(g: StretchGraph, n: int, made: Any, ran: int | None = None) -> Any:
    """The array a replay hands out for result slot *n*, made by an eager op as *made*:
    None where an op after it wrote it (one of the *ran* first ops: all, if None), through
    the graphs' buffer that stands for it (``d = rs.rand(n); d *= 0.5``: the op's own array
    was not written), so that the buffer is copied out instead; else *made*. (An eager op
    that gave back a graph's buffer is handed out as a view of it: StretchGraphs._run_eager.)"""
    if made is None:
        return None
    writer = g.shape.rewritten.get(n)
    if writer is not None and (ran is None or writer < ran):
        buf = g.env.get(n)
        if buf is not None and buf is not made:
            return None
    return made
