"""The stretches a session's client offered: held, run again from a replay entry.

A *stretch* is the ops between two sync points. A client that has seen one stretch (a
batch) repeat offers it with the batch (header ``O``: the stretch's id); once that batch
ran without an error the worker keeps it as a :class:`HeldStretch` and says so in the
reply (``h``). From then on the client sends a replay entry (header ``T``: the id, the
first op's sequence number, the new inputs' handles, the scalar parameters' values, the
results' new handles) instead of the ops.

Every replay can be run as a *re-run*: :meth:`HeldStretch.rebuild` writes the very records
the client would have sent (each op's number, its arguments with the new handles and
values), and the executor runs them as any batch, so its results, errors and warnings are
today's by construction. That is every replay where no graph serves (a device without
graph tools, ``GPUWB_GRAPHS=rerun``), and the fallback of a held stretch's graph
(worker/graph_replay.py) whenever it cannot serve.

Inputs and parameters are numbered by the walk that ``gpu_backend.protocol.stretches``
sets out, the one the client's key uses (kernelproxy/stretch_key.py).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import msgpack
import numpy as np

from ..protocol import codec
from ..protocol import messages as m
from ..protocol.errors import ProtocolError
from ..protocol.stretches import MAX_HELD, MAX_STRETCH_OPS, PARAM_OPERATORS, is_param

__all__ = ["Slot", "Op", "HeldStretch", "HeldStretches", "ReplayEntry", "fill_slots",
           "read_records"]


class Slot:
    """A place in a held stretch's arguments: input ``n`` (``"i"``), the result of op ``n``
    (``"r"``) or parameter ``n`` (``"p"``, *cast* turning the client's value into the type
    the recorded one had: a NumPy scalar stays one of its dtype)."""

    __slots__ = ("kind", "n", "cast")

    def __init__(self, kind: str, n: int, cast: Any = None) -> None:
        self.kind, self.n, self.cast = kind, n, cast

    def __repr__(self) -> str:
        return f"Slot({self.kind}{self.n})"

    def value(self, params: list) -> Any:
        """A parameter slot's value in a run whose parameters are *params*."""
        given = params[self.n]
        return given if self.cast is None else self.cast(given)


def fill_slots(value: Any, of_slot: Any) -> Any:
    """*value* (an op's target, arguments or keywords) with each :class:`Slot` replaced by
    ``of_slot(slot)``, lists, tuples and maps rebuilt."""
    t = type(value)
    if t is Slot:
        return of_slot(value)
    if t is list or t is tuple:
        return t(fill_slots(v, of_slot) for v in value)
    if t is dict:
        return {k: fill_slots(v, of_slot) for k, v in value.items()}
    return value


class Op:
    """One op of a held stretch: its record's head with slots for handles and parameters."""

    __slots__ = ("index", "kind", "want", "out", "name", "target", "args", "kwargs")

    def __init__(self, index: int, kind: Any, want: Any, out: Slot | None, name: Any,
                 target: Any, args: list, kwargs: dict) -> None:
        self.index, self.kind, self.want, self.out, self.name = index, kind, want, out, name
        self.target, self.args, self.kwargs = target, args, kwargs


class HeldStretch:
    """A stretch as the worker keeps it: its records in order, ops (:class:`Op`) and frees
    (a :class:`Slot`), with the counts a replay entry must match. What its graphs have
    learnt is not here: that is graph replay's (worker/graph_replay.py, ``GraphState``)."""

    def __init__(self, records: list) -> None:
        self.items: list[Op | Slot] = []
        self.inputs = 0
        self.params = 0
        self.outs = 0
        self.ops = 0
        self._made: dict[int, Slot] = {}    # handle -> result slot
        self._named: dict[int, Slot] = {}   # handle -> input slot
        for record in records:
            if type(record) is int:
                self.items.append(self._array(record))
                continue
            (seq, kind, want, out, name), (target, args, kwargs) = record
            if kind == m.KIND_OPERATOR and name in PARAM_OPERATORS:
                args = [self._operand(a) for a in args]
            else:
                target = self._walk(target)
                args = self._walk(args)
            kwargs = {k: self._walk(v) for k, v in kwargs.items()}
            slot = None
            if out is not None:
                slot = Slot("r", self.outs)
                self.outs += 1
                if type(out) is int:
                    self._made[out] = slot
            self.items.append(Op(self.ops, kind, want, slot, name, target, args, kwargs))
            self.ops += 1
        #: the handles of the offered run's inputs and results, in slot order
        self.recorded_inputs = list(self._named)
        self.recorded_outs = [hid for hid, _slot in sorted(self._made.items(), key=lambda e: e[1].n)]
        del self._made, self._named
        #: whether it draws random numbers (an object's method, ``random.*``): a replay
        #: that failed part-way must not be run again, or the generator advances twice
        self.draws = any(type(op) is Op and (op.kind == m.KIND_OBJECT or (
            type(op.name) is str and op.name.startswith("random."))) for op in self.items)

    # ------------------------------------------------------------ the walk
    def _array(self, hid: int) -> Slot:
        slot = self._made.get(hid) or self._named.get(hid)
        if slot is None:
            slot = self._named[hid] = Slot("i", self.inputs)
            self.inputs += 1
        return slot

    def _operand(self, value: Any) -> Any:
        if is_param(value):
            slot = Slot("p", self.params, type(value) if isinstance(value, np.generic) else None)
            self.params += 1
            return slot
        return self._walk(value)

    def _walk(self, value: Any) -> Any:
        t = type(value)
        if t is codec.Handle:
            return self._array(int(value))
        if t is list or t is tuple:
            return t(self._walk(v) for v in value)
        if t is dict:
            return {k: self._walk(v) for k, v in value.items()}
        return value

    # ------------------------------------------------------------ re-run
    def check(self, inputs: Any, params: Any, outs: Any) -> None:
        """A replay entry's lists must fit the stretch (a client's bug otherwise)."""
        if (type(inputs) is not list or type(params) is not list or type(outs) is not list
                or len(inputs) != self.inputs or len(params) != self.params
                or len(outs) != self.outs):
            raise ProtocolError("a stretch replay whose inputs, parameters or results do not "
                                "fit the stretch")
        for hid in inputs:
            if type(hid) is not int:
                raise ProtocolError("a stretch replay's inputs are handles")
        for hid in outs:
            if type(hid) is not int or hid <= 0:
                raise ProtocolError("a stretch replay's results are positive handles")

    def rebuild(self, first_seq: int, inputs: list, params: list, outs: list) -> bytes:
        """The records the client would have sent for this run of the stretch."""
        pack = codec.packb

        def of_slot(slot: Slot) -> Any:
            if slot.kind == "i":
                return codec.Handle(inputs[slot.n])
            if slot.kind == "r":
                return codec.Handle(outs[slot.n])
            return slot.value(params)

        def fill(value: Any) -> Any:
            return fill_slots(value, of_slot)

        parts = []
        for item in self.items:
            if type(item) is Slot:
                parts.append(pack(int(fill(item))))
                continue
            out = None if item.out is None else outs[item.out.n]
            parts.append(pack([first_seq + item.index, item.kind, item.want, out, item.name]))
            parts.append(pack([fill(item.target), fill(item.args), fill(item.kwargs)]))
        return b"".join(parts)


def read_records(body: bytes) -> list:
    """A batch's records (after its header) decoded with handles as :class:`codec.Handle`."""
    unpacker = msgpack.Unpacker(ext_hook=codec.ext_hook_for(None),
                                max_buffer_size=max(len(body), 1 << 16), **codec.UNPACK_OPTIONS)
    unpacker.feed(body)
    unpacker.unpack()   # the header
    records = []
    for record in unpacker:
        if type(record) is int:
            records.append(record)
        else:
            records.append((record, unpacker.unpack()))
    return records


class ReplayEntry(NamedTuple):
    """A replay entry (header ``T``), checked against the stretch it names."""

    sid: int        # the stretch's id
    first: int      # its first op's sequence number in this run
    inputs: list    # the handles of its inputs, by input slot
    params: list    # the values of its scalar parameters, by parameter slot
    outs: list      # the new handles of its results, by result slot


class HeldStretches:
    """A session's held stretches by the client's ids, and the offers not kept."""

    def __init__(self, enabled: bool = True) -> None:
        #: whether offers are kept at all (``GPUWB_GRAPHS=0``: none is)
        self.enabled = enabled
        self.held: dict[int, HeldStretch] = {}
        self.refused = 0      # offers not kept

    def offer(self, sid: Any, body: bytes, ops: int) -> HeldStretch | None:
        """Keep the batch *body* (it ran without error) as stretch *sid*; the held stretch,
        or None where it is not kept."""
        if (not self.enabled or type(sid) is not int or sid in self.held
                or len(self.held) >= MAX_HELD or not 0 < ops <= MAX_STRETCH_OPS):
            self.refused += 1
            return None
        try:
            stretch = HeldStretch(read_records(body))
        except Exception:   # (it ran, so it decodes; anything odd is simply not kept)
            self.refused += 1
            return None
        self.held[sid] = stretch
        return stretch

    def drop(self, sids: Any) -> None:
        """The client lets these stretches go: an id not held is no error (an offer
        refused meanwhile)."""
        if type(sids) is not list or len(sids) > MAX_HELD or any(type(s) is not int for s in sids):
            raise ProtocolError("malformed stretch drops: a list of at most "
                                f"{MAX_HELD} stretch ids")
        for sid in sids:
            self.held.pop(sid, None)

    def entry(self, raw: Any) -> tuple[HeldStretch, ReplayEntry]:
        """The held stretch a replay entry names, and the entry, checked against it (a
        ProtocolError otherwise)."""
        if type(raw) is not list or len(raw) != 5 or type(raw[1]) is not int:
            raise ProtocolError("malformed stretch replay")
        sid = raw[0]
        stretch = self.held.get(sid) if type(sid) is int else None
        if stretch is None:
            raise ProtocolError(f"no stretch {sid!r} is held for this session")
        stretch.check(*raw[2:])
        return stretch, ReplayEntry(*raw)
