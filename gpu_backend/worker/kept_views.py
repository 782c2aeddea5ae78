"""Kept results of a held stretch that are views of its inputs or of its other kept results
(``v[0]``, ``x.T``, ``x.reshape(...)``, ``cupy.asarray(x)``): graph replay hands out
copies of its kept results, which would break a view (a later write to ``v`` is seen
through ``v[0]``; CuPy's element is a 0-d view, not NumPy's scalar), so such a result is
made again on the arrays the replay hands out: its op run once more, which on a view op is
pointer arithmetic, no device work.

Judged once, when a stretch is held, from its offered run's arrays (:func:`judge`): a kept
result that does not own its memory apart is either a view of memory no input and no other
kept result lies in (a temporary's, ``(x @ y).T``; CuPy's odd-sized normal draw is a slice
of an even one), which nobody can tell from a copy, or one of several views of a
temporary's memory that are the only arrays of the handle table there and whose bytes lie
apart (``y = x * 2; a, b = split(y, 2)`` kept past the read; handed out as copies too, none
can see a write through another; views that overlap or interleave are not so judged, nor
views of an input, whose memory an array the client made before may view at a later
replay), or it must be made by one of the view
ops below, from inputs and kept results only, and share its memory with one of them;
otherwise graphs never serve the stretch (its replays re-run the records, which hand out
the very views). Until
2026-11-28 every such stretch was refused graphs: on a GPU a loop reading ``float(v[0])``
never replayed through them, while the NumPy device, whose element was a copy, hid it.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable

from ..protocol import api
from ..protocol import messages as m
from ..protocol.stretch_records import slots_in
from .stretches import HeldStretch, Op, Slot, fill_slots

__all__ = ["judge", "adopted", "remake", "element_extent", "FRESH_PIECES"]

_ARRAY = api.ARRAY
#: The ops that make a view of, or return, the array they are given, and write nothing: a
#: kept result one of them made, sharing memory with its argument, is made again so. (An
#: op that may write, an ``out=`` or an in-place operator, is never run twice.)
_VIEW_OPS = {
    m.KIND_OPERATOR: frozenset({"getitem"}),
    m.KIND_ATTRIBUTE: frozenset({"T", "mT", "real", "imag"}),
    m.KIND_METHOD: frozenset({"reshape", "view", "ravel", "squeeze", "transpose",
                              "swapaxes", "diagonal", "astype"}),
    m.KIND_FUNCTION: frozenset({"asarray", "asanyarray", "ascontiguousarray",
                                "asfortranarray", "reshape", "ravel", "squeeze",
                                "transpose", "swapaxes", "moveaxis", "rollaxis",
                                "expand_dims", "atleast_1d", "atleast_2d", "atleast_3d",
                                "broadcast_to", "real", "imag", "diagonal", "flip",
                                "fliplr", "flipud", "rot90"}),
}


def _array_slots(op: Op) -> list[Slot]:
    return [s for s in slots_in((op.target, op.args, op.kwargs)) if s.kind != "p"]


def _remakable(op: Op, made_before: Callable[[Slot], bool]) -> bool:
    """Whether *op* is a view op (its kind and name) taking no ``out=`` and no parameter
    but a ``getitem``'s bounds (its view made again at the replay's: worker/moving_views.py),
    its arrays each an input or a result made before it that a replay has (*made_before*:
    a kept result, or a temporary made again itself)."""
    if op.want != _ARRAY or op.out is None or type(op.name) is not str \
            or op.name not in _VIEW_OPS.get(op.kind, ()) or "out" in op.kwargs:
        return False
    if op.name != "getitem" and any(s.kind == "p" for s in slots_in((op.target, op.args, op.kwargs))):
        return False
    slots = _array_slots(op)
    return bool(slots) and all(s.kind == "i" or (s.kind == "r" and made_before(s))
                               for s in slots)


def judge(stretch: HeldStretch, alive: list, maker: dict, arrays: dict,
          allocation: Callable[[Any], Any],
          extent: Callable[[Any], tuple[int, int]] | None = None,
          apart: set | None = None) -> list[Op] | None:
    """The ops, in order, that graph replay runs again on the arrays it hands out to make
    its kept views (and the temporary views between, ``v.reshape(4, 4).T``); empty where
    every kept result owns its memory; None where a kept result shares memory in a way no
    remake serves (graphs then never serve the stretch). *alive*: the kept result slots;
    *maker*: each result slot's op index; *arrays*: the handle table as the offered run
    left it; *allocation*: an array's allocation's id; *extent*: the bytes an array's
    elements reach, ``(first, past the last)`` (None: kept views are never told apart by
    it, :func:`_apart`); *apart*: where given, the op indices that make the views so told
    apart are added to it (a replay that changes an int they baked gives graphs up:
    graph_replay.StretchGraphs.run)."""
    ops = {op.index: op for op in stretch.items if type(op) is Op}
    inputs = {n: arrays.get(h) for n, h in enumerate(stretch.recorded_inputs)}
    kept = {n: arrays[h] for n, h in zip(stretch.recorded_out_slots, stretch.recorded_outs)
            if h in arrays and n in alive}
    others: dict[int, int] = {}   # id -> how many of the inputs and kept results are it
    shared: dict[Any, int] = {}   # allocation -> how many of them lie in it
    for a in (*inputs.values(), *kept.values()):
        if a is not None:
            others[id(a)] = others.get(id(a), 0) + 1
            if a.nbytes:
                at = allocation(a)
                shared[at] = shared.get(at, 0) + 1
    alive_set = set(alive)
    apart_at: dict[Any, bool] = {}   # allocation -> whether the kept views there lie apart
    remade: dict[int, Op] = {}   # op index -> op
    owned: set[int] = set()      # the kept result slots handed out as they are
    # the arrays a remade result's memory may come from: by result slot (temporaries: theirs)
    sources: dict[int, list] = {}

    def view_of(slot: Slot) -> list | None:
        """The input and owned kept arrays whose memory *slot*'s result may view, where a
        replay can make it again (None: it cannot); an input the stretch dropped (gone from
        the table by now) as :data:`_DROPPED`."""
        if slot.kind == "i":
            got = inputs.get(slot.n)
            return [_DROPPED if got is None else got]
        if slot.n in owned:
            return [kept[slot.n]]
        if slot.n in sources:
            return sources[slot.n]
        if slot.n in alive:
            return None   # (a kept result judged not remakable)
        found = made_by_view(slot.n)   # a temporary: made again too, if a view op's
        if found is not None:
            sources[slot.n] = found
        return found

    def made_by_view(n: int) -> list | None:
        """Where result slot *n*'s maker is a view op a replay can run again: the arrays
        its memory may come from (that op then remade); else None."""
        op = ops.get(maker.get(n, -1))
        if op is None or not _remakable(op, lambda s: True):
            return None
        found: list = []
        for s in _array_slots(op):
            got = view_of(s)
            if got is None:
                return None
            found += got
        remade[op.index] = op
        return found

    try:
        for n in sorted(kept, key=lambda n: maker.get(n, -1)):
            a = kept[n]
            flags = a.flags
            if a.base is None and others[id(a)] == 1 and (flags.c_contiguous or flags.f_contiguous):
                owned.add(n)
                continue
            if others[id(a)] == 1 and (not a.nbytes or shared[allocation(a)] == 1) \
                    and not _reaches_input(n, ops, maker):
                # a view of memory no input and no other kept result lies in (a temporary's:
                # ``(x @ y).T``, CuPy's odd-sized normal draw, ``out[:n]`` of an even one): no
                # one can see a copy is one; handed out as a copy (not a base to a remake).
                # Not a view of an input the stretch dropped: an array the client made of it
                # before may see it at a later replay (``snap = x[:32]`` held): made again
                # on the replay's input, below
                continue
            chain = _temporary_view(n, ops, maker, alive_set) if extent is not None else None
            if chain is not None and others[id(a)] == 1:
                at = allocation(a)
                if at not in apart_at:   # (the whole table read once an allocation)
                    apart_at[at] = _apart(a, kept, allocation, extent, arrays)
                if apart_at[at]:
                    # views of a temporary's memory that only they lie in, none reaching
                    # another's bytes (``y = x * 2; a, b = split(y, 2)`` kept past the
                    # read): as for one, copies nobody can tell
                    if apart is not None:
                        apart.update(chain)
                    continue
            found = made_by_view(n)
            if found is None or not any(
                    (b is _DROPPED and a.base is not None) or (
                        b is not None and b is not _DROPPED and (
                            b is a or (a.nbytes and b.nbytes and allocation(a) == allocation(b))))
                    for b in found):
                return None   # (not a view op's, a copy, or memory of something else; a
                # view of a dropped input: a view op's result that is a view, made again on
                # the replay's input, whose memory it lies in)
            sources[n] = [a]
        return [remade[i] for i in sorted(remade)]
    finally:   # (the two closures call each other: a reference cycle that held *inputs*'
        # and *kept*'s arrays until a collection came, and an idle worker makes none:
        # device memory a swap-out left on an H200, runs 213-215)
        view_of = made_by_view = None  # noqa: F841


def element_extent(address: int, array: Any) -> tuple[int, int]:
    """The bytes *array*'s elements reach, ``(first, past the last)``, its first element at
    *address* (a negative stride reaches back; a view's ``nbytes`` alone understates a
    strided one's reach)."""
    low = high = 0
    for n, stride in zip(array.shape, array.strides):
        if n > 1:
            step = (n - 1) * stride
            low, high = (low + step, high) if step < 0 else (low, high + step)
    return address + low, address + high + array.itemsize


#: an input the stretch dropped, in :func:`judge`'s sources: its array is gone from the
#: table by the time a stretch is judged, and a replay has it
_DROPPED = object()


def _view_op(op: Op | None) -> bool:
    """Whether *op* is one of the view ops (:data:`_VIEW_OPS`), an array with no ``out=``."""
    return (op is not None and op.want == _ARRAY and type(op.name) is str
            and op.name in _VIEW_OPS.get(op.kind, ()) and "out" not in op.kwargs)


def _view_chain(n: int, ops: dict, maker: dict) -> tuple[list[int], set[int], list[Slot]]:
    """How result slot *n* is made by view ops: the op indices of those ops (views of views
    followed; empty where its maker is no view op), the result slots passed through, and
    the slots of the memory they view (inputs, and results of ops that are no view ops)."""
    if not _view_op(ops.get(maker.get(n, -1))):
        return [], set(), []
    chain: list[int] = []
    through: set[int] = set()
    sources: list[Slot] = []
    todo = [n]
    while todo:
        slot_n = todo.pop()
        if slot_n in through:
            continue
        through.add(slot_n)
        op = ops[maker[slot_n]]
        chain.append(op.index)
        for slot in _array_slots(op):
            if slot.kind == "r" and _view_op(ops.get(maker.get(slot.n, -1))):
                todo.append(slot.n)
            else:
                sources.append(slot)
    return chain, through, sources


#: Calls of several results whose pieces are never views of what they are given: each
#: piece is new memory, or a view (a transpose, a slice) of a buffer the call made itself
#: (CuPy's ``linalg.svd`` and ``linalg.qr`` copy their matrix first and hand out
#: transposes and slices of their own buffers; ufuncs of two outputs, ``nonzero``,
#: ``unique``, ``gradient``, ... make theirs). Such a kept piece lies in memory no input
#: lies in, and is handed out as a copy nobody can tell from it; a piece of another call
#: (``atleast_2d(x, y)``, ``broadcast_arrays``, ``meshgrid(copy=False)``, a ``split``)
#: may view what the call was given. Not ``histogram``: given an array of edges, its
#: edges piece is that array itself (CuPy's ``_get_bin_edges``, as NumPy's).
FRESH_PIECES = frozenset("""
    modf frexp divmod nonzero where unique gradient
    tril_indices triu_indices tril_indices_from triu_indices_from diag_indices
    diag_indices_from unravel_index linalg.qr linalg.svd linalg.eigh linalg.eig
    linalg.slogdet linalg.lstsq
""".split())


def _reaches_input(n: int, ops: dict, maker: dict) -> bool:
    """Whether result slot *n* is made by view ops from an input of the stretch, or is (or
    views) a piece of a call of several results (``api.ARRAYS``) given such an input,
    where the call's pieces may view what it was given (not :data:`FRESH_PIECES`'):
    ``atleast_2d(x, y)``'s, ``broadcast_arrays``' pieces may, and no remake makes a piece
    again."""
    chain, _through, sources = _view_chain(n, ops, maker)
    for kind, m_ in ([(s.kind, s.n) for s in sources] if chain else [("r", n)]):
        if kind == "i":
            return True
        op = ops.get(maker.get(m_, -1)) if kind == "r" else None
        if op is not None and op.want == api.ARRAYS and op.name not in FRESH_PIECES and any(
                s.kind == "i" or (s.kind == "r" and _reaches_input(s.n, ops, maker))
                for s in _array_slots(op)):
            return True
    return False


def _temporary_view(n: int, ops: dict, maker: dict, alive: set) -> list[int] | None:
    """The op indices of the view ops that make result slot *n* from a temporary of the
    stretch (a result made by an op that is no view op, kept by nobody), where they do;
    None where the chain reaches an input or a kept result, or *n*'s maker is no view op.
    Memory an input lies in may be another array's the client holds at a later replay (a
    view it made of that input before the stretch): only a temporary's is the stretch's
    own at every replay."""
    chain, through, sources = _view_chain(n, ops, maker)
    if not chain or any(m in alive for m in through - {n}) or any(
            slot.kind != "r" or slot.n in alive for slot in sources):
        return None
    return chain


def _apart(a: Any, kept: dict, allocation: Callable[[Any], Any],
           extent: Callable[[Any], tuple[int, int]], table: dict) -> bool:
    """Whether the kept views in *a*'s allocation (a temporary's: :func:`_temporary_view`)
    are the only arrays of the session's handle table there (*table*, as the offered run
    left it) and none reaches the bytes of another: handed out as copies, no write through
    one can be missed through another. Extents, not elements: two views that interleave
    (``x[::2]``, ``x[1::2]``; ``hsplit``'s halves of a matrix) count as touching. Judged on
    the offered run's views: a replay that moves a bound they baked gives graphs up
    (*apart* of :func:`judge`)."""
    at = allocation(a)
    group = [b for b in kept.values() if b.nbytes and allocation(b) == at]
    if any(b.base is None for b in group) or len(group) != sum(
            1 for b in table.values() if b.nbytes and allocation(b) == at):
        return False
    spans = sorted(extent(b) for b in group)
    return all(end <= start for (_s, end), (start, _e) in zip(spans, spans[1:]))


def adopted(stretch: HeldStretch, alive: list, indices: Any) -> list[Op] | None:
    """The remade ops of a stretch a session's previous worker held (its :func:`judge`,
    carried as op indices), checked against the stretch's records; None where they do not
    fit (graphs then never serve it)."""
    if indices is None:
        return []
    if type(indices) is not list or any(type(i) is not int for i in indices):
        return None
    ops = {op.index: op for op in stretch.items if type(op) is Op}
    remade: list[Op] = []
    made: set[int] = set(alive)   # (kept results, and the temporaries made again before)
    for i in sorted(set(indices)):
        op = ops.get(i)
        if op is None or not _remakable(op, lambda s: s.n in made and s.n < op.out.n):
            return None
        remade.append(op)
        made.add(op.out.n)
    return remade


def remake(call: Callable, as_array: Callable, ops: Iterable[Op], inputs: dict,
           handed: dict, keep: frozenset, ran: int | None = None,
           params: list | None = None) -> list[tuple[int, Any]]:
    """Make the remade *ops*' results again on the arrays a replay hands out: *inputs* by
    input slot, *handed* by result slot (the results made again are added to it), *params*
    the replay's parameters (a moving slice's bounds); an op at or after *ran* (the ops the
    replay ran) is skipped. Returns the ``(slot, array)`` pairs of the kept ones (*keep*:
    their slots), not the temporaries between."""
    made = []

    def of_slot(slot: Slot) -> Any:
        if slot.kind == "p":
            return slot.value(params)
        return inputs[slot.n] if slot.kind == "i" else handed[slot.n]

    for op in ops:
        if ran is not None and op.index >= ran:
            continue
        result = as_array(call(op.kind, op.name, fill_slots(op.target, of_slot),
                               fill_slots(op.args, of_slot), fill_slots(op.kwargs, of_slot)))
        handed[op.out.n] = result
        if op.out.n in keep:
            made.append((op.out.n, result))
    return made
