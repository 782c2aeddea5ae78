"""A held stretch's ``getitem``s whose bounds are parameters, and what may write its inputs.

A basic index's ints are a stretch's parameters (protocol/stretches.basic_index), so that a
minibatch sliced at an offset that moves each step (``xb = x_all[j:j + batch]``) is one
stretch. A capture bakes the view at the offered offset into its graphs (free: a view is
pointer arithmetic), and a replay whose bounds are the same is served by them
(``StretchGraph.keeps``). Where a replay's bounds differ, that ``getitem`` runs eagerly from
the next capture on: the view made at each replay's bounds, copied into a buffer of its own
that the graphs after it read (worker/graph_replay.py, ``StretchGraph.owned``).

The copy is no longer the input's memory, so a write into the view must not happen, nor a
write into what it slices after it is made: a stretch that may write through one of its
moving views (``xb *= 2``, ``xb[0] = 0``, an ``out=``), or into the array a moving view
slices after the view (``xb = data[i:i + 4]; data += 1``, a stencil's update after a probe
window), is never served by graphs once its bounds move (:func:`written_through`); its
replays re-run its records, which write through and read the user's very views. A view that is not
contiguous (``x[:, j:j + b]``, an image's patch, ``x[j:j + 64:2]``) gets a buffer with its
very strides, spanning what they span (a contiguous copy's strides would differ, and with
them the kernels CuPy picks); one with a negative step re-runs its records.

The data a moving view slices, where nothing else of the stretch reads it, is read where it
is (:func:`sliced_only`), not copied into a buffer of the graph's at every replay as other
inputs are.

:func:`writable_inputs` says which inputs a stretch may write, followed back through views:
graph replay copies each input into a buffer of its own, so two inputs that share memory
(a minibatch kept from the last step, a view of the whole data, which is an input too) are
refused only where one of them may be written.
"""

from __future__ import annotations

from typing import Any, Iterable

from ..protocol import api
from ..protocol import messages as m
from ..protocol.fused_programs import fused_writes
from ..protocol.stretch_records import slots_in
from .stretches import HeldStretch, Op, Slot

__all__ = ["moving_views", "written_through", "writable_inputs", "written_results", "sliced_only", "kernel_writes",
           "written_operands", "fresh_result"]

_OPERATOR, _METHOD, _FUNCTION, _KERNEL, _OBJECT = (m.KIND_OPERATOR, m.KIND_METHOD,
                                                   m.KIND_FUNCTION, m.KIND_KERNEL, m.KIND_OBJECT)


def moving_views(stretch: HeldStretch) -> frozenset[int]:
    """The op indices of the stretch's ``getitem``s whose index holds a parameter."""
    return frozenset(op.index for op in _ops(stretch)
                     if op.kind == _OPERATOR and op.name == "getitem" and len(op.args) == 2
                     and any(s.kind == "p" for s in slots_in(op.args[1])))


def written_through(stretch: HeldStretch, views: frozenset[int]) -> bool:
    """Whether an op of the stretch may write into the result of one of the ops *views*
    (op indices) or into a view of it, or, after that view is made, into the memory it
    slices (``xb = data[i:i + 4]; data += 1``: the user's view sees the write, a copy made
    when the view was would not)."""
    if not views:
        return False
    made = _makers(stretch)
    ops = {op.index: op for op in _ops(stretch)}
    sliced = {v: _reached(_arrays(ops[v].args[:1]), made) for v in views}
    for op, reached in _writes(stretch, made):
        for v in views:
            if ("r", ops[v].out.n) in reached or (op.index > v and not reached.isdisjoint(sliced[v])):
                return True
    return False


def writable_inputs(stretch: HeldStretch) -> frozenset[int]:
    """The input slots an op of the stretch may write, directly or through a view."""
    made = _makers(stretch)
    return frozenset(s.n for s in _written_sources(stretch, made) if s.kind == "i")


def written_results(stretch: HeldStretch) -> dict[int, int]:
    """The result slots an op of the stretch may write after they are made, directly or
    through a view (``d = rs.rand(n); d *= 0.5``): by slot, the index of the first op that
    may write it."""
    first: dict[int, int] = {}
    for op, reached in _writes(stretch, _makers(stretch)):
        for kind, n in reached:
            if kind == "r" and n not in first:
                first[n] = op.index
    return first


def sliced_only(stretch: HeldStretch, views: frozenset[int],
                writable: frozenset[int]) -> dict[int, frozenset[int]]:
    """The inputs that the stretch's ops only slice by moving views (``x_all`` of
    ``x_all[j:j + batch]``, the whole data) and never write: by input slot, the op indices of
    the views that read it. Where all of them run eagerly, graph replay reads such an input
    where it is, not copied into a buffer of the graph's own at every replay (a dataset of
    gigabytes for a batch of kilobytes: ``StretchGraph.direct``)."""
    readers: dict[int, set[int]] = {}
    others: set[int] = set(writable)
    for op in _ops(stretch):
        is_view = op.index in views
        for s in _arrays([op.target, op.args, op.kwargs]):
            if s.kind != "i":
                continue
            if is_view and op.args and op.args[0] is s:
                readers.setdefault(s.n, set()).add(op.index)
            else:
                others.add(s.n)
    return {n: frozenset(ops) for n, ops in readers.items() if n not in others}


def assigned_only(stretch: HeldStretch) -> dict[int, frozenset[int]]:
    """The inputs that the stretch's ops only assign into (``traj`` of ``traj[i] = x``, a
    history written a row a step) and nothing else reads or writes: by input slot, the op
    indices of the assignments. Where all of them run eagerly (an index that moves on),
    graph replay writes such an input where it is, not through a buffer of the graph's own
    copied in and out at every replay (a 15 MB history for a 256 KB row:
    ``StretchGraph.direct``)."""
    writers: dict[int, set[int]] = {}
    others: set[int] = set()
    for op in _ops(stretch):
        assigns = op.name == "setitem" and op.target is None and len(op.args) == 3
        for i, s in enumerate(_arrays([op.target, op.args, op.kwargs])):
            if s.kind != "i":
                continue
            if assigns and op.args[0] is s and i == 0:
                writers.setdefault(s.n, set()).add(op.index)
            else:
                others.add(s.n)
    return {n: frozenset(ops) for n, ops in writers.items() if n not in others}


def _ops(stretch: HeldStretch) -> Iterable[Op]:
    return (item for item in stretch.items if type(item) is Op)


def _makers(stretch: HeldStretch) -> dict[int, Op]:
    """The op that makes each result slot: each piece of a call of several results too
    (``Op.outs``; never :func:`fresh_result`, so a write through a piece reaches every array
    that call was given: ``a, b = atleast_2d(x, y); a += 1`` writes ``x``)."""
    return {slot.n: op for op in _ops(stretch) for slot in op.outs}


def _arrays(value: Any) -> list[Slot]:
    return [s for s in slots_in(value) if s.kind != "p"]


def kernel_writes(op: Any) -> frozenset | None:
    """The arguments (by position) a kernel op writes: a fused program's own say
    (protocol/fused_programs.py), its other results new arrays; None for any other kernel,
    which may write any array it is given."""
    return fused_writes(op.target) if op.name == "fuse" else None


def written_operands(op: Op, target: Any, args: Any, kwargs: dict) -> list:
    """Where the arrays *op* may write are among its *target*, *args* and *kwargs* (its
    slots, or the arrays a run gives it: graph_replay's capture looks there): an in-place
    operator's or assignment's first operand (``x += 1``, ``x[i] = v``), any array given to
    another op that returns nothing (``copyto``, ``x.put``, ``y.dot(w, o)``: a method's
    ``out`` by position), those a kernel may write, and any op's ``out=`` or ``output=``
    (cupyx.scipy.ndimage's)."""
    if op.want == api.NONE:
        places = [args[0]] if op.kind == _OPERATOR and args else [target, args, kwargs]
    elif op.kind == _KERNEL:   # (its source may write a "raw" input: an accumulator)
        writes = kernel_writes(op)
        places = [args, kwargs] if writes is None else [args[i] for i in writes if i < len(args)]
    else:
        places = []
    if "out" in kwargs:
        places.append(kwargs["out"])
    if "output" in kwargs:   # (cupyx.scipy.ndimage's filters: an array given is written)
        places.append(kwargs["output"])
    return places


def _written(op: Op) -> list[Slot]:
    """The slots of the arrays *op* may write (:func:`written_operands`)."""
    return _arrays(written_operands(op, op.target, op.args, op.kwargs))


#: user kernels whose result, when they return one with no ``out=``, is an array CuPy makes
#: for it (an ``ElementwiseKernel``'s outputs not given, a vectorized function's): never
#: one of the arrays it is given
_FRESH_KERNELS = frozenset(("elementwise", "vectorize"))
#: ... and reduction kernels, where given no output by position (:func:`_reduction_given_output`)
_REDUCTION_KERNELS = frozenset(("reduction", "simple_reduction"))
#: functions that make a new array from sizes and values (never one they are given)
_CREATIONS = frozenset(("empty", "zeros", "ones", "full", "empty_like", "zeros_like",
                        "ones_like", "full_like", "arange", "linspace", "logspace", "eye",
                        "identity", "tri"))


#: a ``create_reduction_func`` reduction's positional arguments before its ``out``
#: (``f(a, axis, dtype, out, keepdims)``)
_SIMPLE_REDUCTION_INS = 3


def _reduction_given_output(op: Op) -> bool:
    """Whether a reduction kernel's call gives it its output by position, which it then
    returns itself: a ``ReductionKernel``'s more positional arguments than its
    ``in_params`` (``rk(x, y)``), a ``create_reduction_func`` reduction's more than three
    (``f(x, None, None, y)``)."""
    if op.name == "simple_reduction":
        return len(op.args) > _SIMPLE_REDUCTION_INS
    definition = op.target
    params = definition.get("in_params") if isinstance(definition, dict) else None
    if type(params) is not str:
        return True
    return len(op.args) > len([p for p in params.split(",") if p.strip()])


def fresh_result(op: Op) -> bool:
    """Whether *op*'s result is an array of its own, never a view of what it is given:
    Python's operators but ``getitem`` and ``+x``, a ufunc's call without ``out=``, a
    ``copy``, a random draw, an array made from sizes (:data:`_CREATIONS`: ``empty``,
    ``zeros_like``, …), a fused program's results (:func:`kernel_writes`: its own say) and
    a user kernel's of :data:`_FRESH_KERNELS` or :data:`_REDUCTION_KERNELS`. Anything else may hand back a view
    (``asarray``, ``reshape``, ``astype(copy=False)``, a ``ReductionKernel``'s output given
    to it) and is followed to every array it is given."""
    if op.want != api.ARRAY or "out" in op.kwargs or "output" in op.kwargs:
        return False
    name = op.name
    if op.kind == _OPERATOR:
        return name not in ("getitem", "pos")
    if op.kind == _OBJECT:
        return type(name) is str and name.startswith("random.")
    if op.kind == _KERNEL:
        if name in _REDUCTION_KERNELS:
            return not _reduction_given_output(op)
        return name in _FRESH_KERNELS or kernel_writes(op) is not None
    if name == "copy":
        return op.kind in (_METHOD, _FUNCTION)
    return op.kind == _FUNCTION and (name in api.UFUNCS or name in _CREATIONS)


def _writes(stretch: HeldStretch, made: dict[int, Op]) -> Iterable[tuple[Op, set[tuple]]]:
    """Each op of the stretch that may write, with every slot its writes may reach through
    the views between (:func:`_reached`)."""
    for op in _ops(stretch):
        written = _written(op)
        if written:
            yield op, _reached(written, made)


def _written_sources(stretch: HeldStretch, made: dict[int, Op]) -> set[Slot]:
    """Every input and result slot a write of the stretch may reach, through the views
    between (:func:`_reached`)."""
    return {Slot(kind, n) for _op, reached in _writes(stretch, made) for kind, n in reached}


def _reached(slots: list[Slot], made: dict[int, Op]) -> set[tuple]:
    """*slots* and every slot whose memory they may be, as ``(kind, n)``: a result of an
    op not :func:`fresh_result` reaches what that op was given."""
    reached: set[tuple] = set()
    todo = list(slots)
    while todo:
        slot = todo.pop()
        if (slot.kind, slot.n) in reached:
            continue
        reached.add((slot.kind, slot.n))
        if slot.kind == "r":
            maker = made.get(slot.n)
            if maker is not None and not fresh_result(maker):
                todo += _arrays((maker.target, maker.args, maker.kwargs))
    return reached
