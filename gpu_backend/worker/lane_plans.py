"""What the steady lane serves (worker/steady_lane.py, docs/stretch-replay.md, "The steady
lane"): a loop's plan, made from its last two replays' messages read side by side, and the
parameters of each next message.

A plan holds the loop's messages from the last one read (its value as an integer and the
difference between two), the numbers that step (the batch, the first op, the inputs, the
result handles, the frees) and for how long, the stretch and its graphs, and the calls its
run ahead makes: the graphs to launch and, between them, the eager ops the lane may run (a
product, a solver, a draw: eager_ops.lane_runs_eagerly), the kept results' copy rows, the
closing reads with their arguments resolved once.
"""

from __future__ import annotations

import math
from typing import Any

from .eager_ops import lane_runs_eagerly
from .float_relations import next_floats
from .float_steps import KEPT, float_values
from .graph_segments import Reads
from .lane_messages import Layout, read_batch
from .lane_reads import read_slots
from ..protocol import messages as m
from ..protocol.stretch_records import fill_slots

__all__ = ["LanePlan", "make_plan", "stepped", "history_lists", "REPLAY_KEYS", "MOVES"]

#: the header keys of a message served in the lane: the session key, the batch, its op
#: count, the resume mark, the replay entry, early, the frees before it
REPLAY_KEYS = frozenset(("k", "b", "n", "r", "T", "S", "F"))
#: what a plan keeps for an input whose handle steps (never the array it had): never ``is``
#: any array
MOVES = object()


class LanePlan:
    """What the lane serves: the loop's messages from the last one read (*base*: its value
    as an integer, its header), the stretch, the run ahead's recorded calls, and the count
    of messages served so far."""

    __slots__ = ("size", "value", "difference", "steps", "served", "batch", "first",
                 "outs", "frees", "dbatch", "dfirst", "douts", "dfrees", "count", "early",
                 "sid", "inputs", "params", "need", "graph", "state", "launches", "eager",
                 "scatter_rows", "reads", "ran", "slots", "input_frees",
                 "expected", "ahead", "reads_left", "after", "dafter", "dinputs",
                 "bound", "gather_rows", "bufs", "guards", "array_type", "floats", "stepped",
                 "int_steps",
                 "float_history",
                 "written", "eager_kept", "remade", "held", "read_slots", "turn", "now",
                 "uploads", "read_slots_next", "shared")


def make_plan(x: Any, before: bytes, last: bytes, past: tuple | None = None) -> LanePlan | None:
    """The plan of a loop whose last two replays, served by the generic path, were
    *before* and *last* (their first frames), its replay run ahead now; None where the lane
    cannot serve it. (Layout raises Reshaped where a number grew a byte, ValueError where
    the two do not step.) Its first message is not set yet: SteadyLane._next.

    *past*: the stretch is one of several taking turns, not the one run ahead now: *last*
    was answered from a run ahead that gave ``(stretch, ops run, result slots)``
    (RunAhead.answered), and the plan has no run ahead until the lane makes it."""
    replay = x.replay
    run = replay.ahead
    graphs = replay.graphs
    if graphs is None or x.poisoned_at is not None or x._warnings:
        return None
    if past is None:
        ahead = run.ahead
        if ahead.results.values or ahead.results.downloads:
            return None
        sid, g, ran, slots = ahead.sid, ahead.graph, ahead.ran, ahead.slots
    else:
        ahead = None
        sid, ran, slots = past
        state = graphs.states.get(sid)
        g = state.graph if state is not None else None
        if g is None:
            return None
    shape = Layout(before, last)
    if shape.steps < 2:
        return None
    header, after = read_batch(last)
    if type(header) is not dict or not header.keys() <= REPLAY_KEYS:
        return None
    raw, frees = header.get("T"), header.get("F") or []
    early = header.get("S") == 1
    stretch, entry = replay.stretches.entry(raw, early)
    if entry.need is None or entry.need or entry.sid != sid:
        return None
    # (a stretch that uploads is run when its message comes, its data with it: never one
    # that draws, whose draws a run at its message would make outside the generic path's
    # journal; SteadyLane.take)
    now = bool(stretch.uploads)
    if now and (past is None or stretch.draws or early):
        return None
    state = graphs.states.get(entry.sid)
    if state is None or state.graph is not g:
        return None
    segments = g.segments
    tail = g.reads_from
    if tail is None:
        return None
    if g.shape.downloads:
        return None   # (a download's data is a frame of its reply: the generic path's answer)
    # what runs before the closing reads: its graphs, and between them the eager ops the
    # lane may run as the generic path does (a product, a solver, a draw: lane_runs_eagerly)
    launches = []
    for seg in segments[:tail]:
        if seg.graph is not None:
            launches.append((seg.graph, None))
        elif seg.eager and (not stretch.draws or x.draws.enabled) \
                and all(lane_runs_eagerly(op) or (now and op.kind == m.KIND_UPLOAD)
                        for op in seg.ops):
            launches.append((None, seg.ops))
        else:
            return None   # (a draw, a read on the host, a write, before the closing reads)
    alive = g.shape.alive
    copies = g.copies
    scattered = {n for n, _k, _m in copies.scatter_slots} if copies.scatter is not None else set()
    # (a kept result an eager op made is that op's new array, handed out as it is)
    # (and a kept view of an input or of a kept result is made again on them: kept_views)
    remade = g.shape.remade_slots
    eager_kept = sorted(n for n in alive if n not in scattered and n not in remade)
    made_eagerly = {op.out.n for _graph, ops in launches if ops for op in ops}
    if not scattered <= set(alive) or not set(eager_kept) <= made_eagerly:
        return None   # (a kept result copied out after the graphs: the generic path's)
    steps = dict(shape.stepping)
    plan = LanePlan()
    plan.size, plan.difference = len(last), shape.difference
    plan.value = shape.base
    plan.steps, plan.served = shape.steps, 0
    plan.batch, plan.dbatch = header["b"], steps.get(("b",), 0)
    plan.first, plan.dfirst = entry.first, steps.get(("T", 1), 0)
    plan.outs = list(entry.outs)
    plan.douts = [steps.get(("T", 4, i), 0) for i in range(len(entry.outs))]
    plan.frees = list(frees)
    plan.dfrees = [steps.get(("F", i), 0) for i in range(len(frees))]
    plan.after = list(after)
    plan.dafter = [steps.get(("R", i), 0) for i in range(len(after))]
    plan.count, plan.early = header.get("n"), early
    plan.sid, plan.inputs, plan.params, plan.need = entry.sid, entry.inputs, entry.params, entry.need
    # the float parameters that step: (its offset, its slot, the value before, the last)
    plan.floats = [(at, path[2], x, y) for path, at, x, y in shape.floats]
    # the int parameters that step, and by how much: (its slot, its step)
    plan.int_steps = [(path[2], step) for path, step in shape.stepping
                      if path[:2] == ("T", 3) and len(path) == 3]
    # each float's last values, to the last message's (RunAhead's history, where it agrees
    # with the two messages read: its guess of the first message came from the same)
    history = x.replay.ahead.recent(entry.sid)
    plan.float_history = {}
    for _at, n, earlier, latest in plan.floats:   # (not x: the executor, used below)
        values = float_values(list(history), n) if history else []
        if len(values) < 2 or not (_same(values[-2], earlier) and _same(values[-1], latest)):
            values = [earlier, latest]
        plan.float_history[n] = tuple(values[-KEPT:])
    plan.stepped = stepped(plan)   # (the first message's: RunAhead's guess)
    plan.graph, plan.state = g, state
    plan.dinputs = [steps.get(("T", 2, i), 0) for i in range(len(entry.inputs))]
    table = x.table.arrays
    # the inputs the graphs read, by slot: (slot, its handle's step, the array it had)
    plan.bound = [(n, plan.dinputs[n], table.get(entry.inputs[n])) for n in g.shape.used]
    if any(a is None and not d for _n, d, a in plan.bound):   # (a carried one: gone by now)
        return None
    # (an input whose handle steps, a loop-carried result, is another array every replay:
    # the one it had is not kept, or it would stay out of the arrays kept results take
    # turns in, GraphCopies._made_for, and each replay would make a new one)
    plan.bound = [(n, d, a if not d else MOVES) for n, d, a in plan.bound]
    gather = copies.gather
    plan.gather_rows = {n: row for row, n in enumerate(copies.gather_slots)} if gather is not None else None
    plan.bufs, plan.guards = g.bufs, g.guards
    # the inputs its graphs write (``w -= lr * grad``): their new values in the graphs'
    # buffers until its message is answered, then copied back (GraphCopies' write-back,
    # as RunAhead.answer's); a stretch that writes only arrays it made writes none
    plan.written = [n for n in g.shape.used if g.written is None or n in g.written] \
        if g.shape.writes else []
    plan.array_type = graphs.array_type
    plan.launches = launches
    # (eager ops between its graphs: its measured span holds the worker's time issuing them,
    # not the device's alone: worker/pushed_replies.py's bounds on committing ahead)
    plan.eager = any(graph is None for graph, _ops in launches)
    plan.scatter_rows = list(copies.scatter_slots) if scattered else []
    plan.eager_kept = eager_kept
    plan.remade = g.shape.remade
    plan.held = stretch   # (its draws' generators: RunAhead's _generators)
    plan.ran, plan.slots = ran, slots
    plan.input_frees = [] if early else list(g.shape.input_frees)
    # the closing reads, their arguments resolved once: the graph's own buffers
    reads, with_params = [], []
    for seg in segments[tail:]:
        for op in seg.ops:
            def of_slot(slot: Any, g: Any = g, params: list = entry.params) -> Any:
                if slot.kind == "p":
                    with_params.append(slot)
                    return slot.value(params)
                return g.array(slot)
            reads.append((op.index, op.kind, op.name, fill_slots(op.target, of_slot),
                          fill_slots(op.args, of_slot), fill_slots(op.kwargs, of_slot)))
    if with_params and (plan.floats or plan.int_steps):   # (a read taking a parameter that
        return None                   # steps: resolved once, it would read the first's value)
    plan.reads = reads
    #: its reads by one launch after its graphs, where each is a conversion of a 0-d buffer
    plan.read_slots = read_slots(graphs.tools, reads, graphs.array_type)
    #: a second read graph of the same reads into slots of its own, made when a step is
    #: first launched before the step before it is read (worker/lane_overlap.py); then the
    #: two take turns, each run ahead's into the other's slots
    plan.read_slots_next = None
    #: its stretch is at another place of its ring of turns too (lane_arming._arm_turns):
    #: its graphs' copy rows and parameter block are the last place's, so each run binds its
    #: inputs and writes its parameters again
    plan.shared = False
    #: the same reads as the generic path keeps them (graph_segments.Reads), left with a
    #: run ahead of the lane's whose reads wait for the client's replay: the generic path
    #: makes them where it answers that run (the lane left)
    # (with a handout of its own: the generic run ahead's holds the arrays that replay
    # handed out, which the plan would keep out of their turns, GraphCopies._made_for)
    plan.reads_left = ahead.reads._replace(handout={}) if ahead is not None and ahead.reads is not None \
        else None if not reads else Reads(state, g, segments[tail:], entry.params, {}, True)
    plan.ahead = ahead
    #: where stretches take turns, the index in the lane's ring (SteadyLane._ring) of the
    #: plan whose message comes after this one's; None: this one's own next message does
    plan.turn = None
    #: a stretch that uploads (its data comes with its message): run when its message
    #: comes, not ahead, and never pushed (SteadyLane.take); its data frames a message
    plan.now, plan.uploads = now, len(stretch.uploads)
    return plan


def stepped(plan: LanePlan) -> tuple:
    """The parameters of the message after the plan's current one, its floats' record and
    their histories: each int that steps by its step (as the message's bytes do), each float
    that steps as RunAhead's guess (guess_params) has it, worker/float_steps.py's guess from
    its last values; one that would not be finite stays (a message that then does not come:
    the lane is left)."""
    if not plan.floats and not plan.int_steps:
        return plan.params, plan.floats, plan.float_history
    params = list(plan.params)
    for n, step in plan.int_steps:
        params[n] += step
    floats = []
    histories = {}
    runs = [plan.float_history.get(n) or (earlier, y) for _at, n, earlier, y in plan.floats]
    for (at, n, _earlier, y), values, nxt in zip(plan.floats, runs, next_floats(runs)):
        params[n] = nxt
        floats.append((at, n, y, nxt))
        histories[n] = (*values, nxt)[-KEPT:]
    return params, floats, histories


def history_lists(plan: LanePlan) -> list:
    """The parameters of the messages before the plan's current one, oldest first, as
    RunAhead keeps them (RunAhead.restart_history; the current one appended by its start):
    the current parameters with each float's earlier values, and each int that steps
    stepped back (else the generic run ahead would guess it stays)."""
    depth = min((len(v) for v in plan.float_history.values()), default=1) - 1
    lists = []
    for back in range(depth, 0, -1):
        params = list(plan.params)
        for n, values in plan.float_history.items():
            params[n] = values[-1 - back]
        for n, step in plan.int_steps:
            params[n] = plan.params[n] - back * step
        lists.append(params)
    return lists


def _same(a: float, b: float) -> bool:
    """The same float, bit for bit (0.0 is not -0.0)."""
    return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)
