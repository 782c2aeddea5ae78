"""A stretch's records, read into ops with slots and written back: what both sides share.

A stretch (docs/stretch-replay.md) is the op and free records between two sync points. The
worker keeps an offered one as a held stretch and, where no graph serves a replay, re-runs
it from the records the client would have sent (:meth:`StretchRecords.rebuild`: byte for
byte, each op's number and its arguments with the run's handles and values); a client
whose fast path meets an op its template does not expect sends the ops so far the same way
(kernelproxy/stretch_templates.py). Inputs and parameters are numbered by the walk that
:mod:`gpu_backend.protocol.stretches` sets out, the one the client's key uses.
"""

from __future__ import annotations

import math
from typing import Any

import msgpack
import numpy as np

from . import api, codec
from . import messages as m
from .stretches import (PARAM_OPERATORS, index_param, indexed, is_param, kernel_param,
                        leading_params, user_kernel)

__all__ = ["Slot", "Op", "StretchRecords", "fill_slots", "instances_in", "slots_in", "read_records",
           "same_param", "same_params"]


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
    if t is list:   # (comprehensions, not generators: a replay fills a few per op)
        return [fill_slots(v, of_slot) for v in value]
    if t is tuple:
        return tuple([fill_slots(v, of_slot) for v in value])
    if t is dict:
        return {k: fill_slots(v, of_slot) for k, v in value.items()}
    if t is slice:   # (a basic index's bounds: parameters, protocol/stretches.basic_index)
        return slice(fill_slots(value.start, of_slot), fill_slots(value.stop, of_slot), value.step)
    return value


def instances_in(value: Any, kind: type):
    """Each object of exactly type *kind* in *value* (an op's target, arguments or keywords,
    a call's operands or result), lists, tuples and maps looked into."""
    t = type(value)
    if t is kind:
        yield value
    elif t is list or t is tuple:
        for v in value:
            yield from instances_in(v, kind)
    elif t is dict:
        for v in value.values():
            yield from instances_in(v, kind)
    elif t is slice and kind is not slice:   # (a basic index's bounds, parameters' slots)
        yield from instances_in((value.start, value.stop), kind)


def slots_in(value: Any):
    """Each :class:`Slot` in *value* (:func:`instances_in`)."""
    return instances_in(value, Slot)


class Op:
    """One op of a held stretch: its record's head with slots for handles and parameters.

    *outs* are its result slots in place order: none, one, or for a call of several results
    (``api.ARRAYS``: ``modf``, ``linalg.qr``) one a piece, consecutive. *out* is the one
    array's slot and None for such a call, so that what reads ``op.out.n`` sees no single
    array there; graph replay runs such a call eagerly between its graphs, a slot a piece
    (worker/graph_eager.py ``_run_eager``; kept views and moving views take ``outs``), and
    run ahead, early replay and the lane refuse its stretch."""

    __slots__ = ("index", "kind", "want", "out", "outs", "name", "target", "args", "kwargs")

    def __init__(self, index: int, kind: Any, want: Any, out: Slot | None, name: Any,
                 target: Any, args: list, kwargs: dict, outs: tuple | None = None) -> None:
        self.index, self.kind, self.want, self.out, self.name = index, kind, want, out, name
        self.target, self.args, self.kwargs = target, args, kwargs
        self.outs: tuple = outs if outs is not None else (() if out is None else (out,))


class StretchRecords:
    """A stretch's records in order, ops (:class:`Op`) and frees (a :class:`Slot`), with
    its handles, parameters and results numbered by the walk both sides share: what the
    worker keeps of a held stretch (worker/stretches.py) and what a client rebuilds a run's
    records from when its fast path falls back (kernelproxy/stretch_templates.py)."""

    def __init__(self, records: list) -> None:
        self.items: list[Op | Slot] = []
        self.inputs = 0
        self.params = 0
        #: each parameter's type where the recorded value was a NumPy scalar (its
        #: ``Slot.cast``), else None, by parameter slot
        self.param_types: list = []
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
            elif indexed(kind, name, args):   # (its ints parameters: a moving slice or place)
                target = self._walk(target)
                args = [self._walk(args[0]), self._index(args[1]), *map(self._walk, args[2:])]
            elif user_kernel(kind, name):   # (a user kernel's NumPy scalars, nested too)
                target = self._walk(target)
                args = self._kernel_walk(args)
            else:   # (a ufunc's scalars, a distribution's leading ones: parameters too)
                target = self._walk(target)
                lead = leading_params(kind, name)
                args = ([self._operand(a) if n < lead else self._walk(a) for n, a in enumerate(args)]
                        if lead else self._walk(args))
            kwargs = {k: self._walk(v) for k, v in kwargs.items()}
            slot, outs = None, None
            if type(out) is list and want == api.ARRAYS:   # (a slot a piece, in place order)
                outs = tuple(Slot("r", self.outs + p) for p in range(len(out)))
                self.outs += len(out)
                for hid, piece in zip(out, outs):
                    if type(hid) is int:
                        self._made[hid] = piece
            elif out is not None:
                slot = Slot("r", self.outs)
                self.outs += 1
                if type(out) is int:
                    self._made[out] = slot
            self.items.append(Op(self.ops, kind, want, slot, name, target, args, kwargs, outs))
            self.ops += 1
        #: the handles of the offered run's inputs and results, in slot order
        self.recorded_inputs = list(self._named)
        outs = sorted(self._made.items(), key=lambda e: e[1].n)
        self.recorded_outs = [hid for hid, _slot in outs]
        self.recorded_out_slots = [slot.n for _hid, slot in outs]   # (their result slots)
        del self._made, self._named
        #: whether it draws random numbers (an object's method, ``random.*``): a replay
        #: that failed part-way must not be run again, or the generator advances twice
        self.draws = any(type(op) is Op and (op.kind == m.KIND_OBJECT or (
            type(op.name) is str and op.name.startswith("random."))) for op in self.items)
        #: its uploads' op indices, in order: a replay's message carries their data, one
        #: frame each in this order (kernelproxy.session.upload: a small upload inside a
        #: loop is an op of its stretch, not a cut)
        self.uploads: list[int] = [op.index for op in self.items
                                   if type(op) is Op and op.kind == m.KIND_UPLOAD]
        #: whether it holds a call of several results (``api.ARRAYS``): run eagerly between
        #: its graphs; never run ahead, early or in the lane
        self.several = any(type(op) is Op and op.out is None and op.outs for op in self.items)

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
            self.param_types.append(slot.cast)
            self.params += 1
            return slot
        return self._walk(value)

    def _index(self, index: Any) -> Any:
        """A basic index with its ints as parameter slots, in the walk's order: a tuple's
        parts in turn, a slice's start before its stop (its step literal)."""
        if type(index) is tuple:
            return tuple(self._index(part) for part in index)
        if type(index) is slice:
            return slice(self._index_int(index.start), self._index_int(index.stop), index.step)
        return self._index_int(index)

    def _index_int(self, value: Any) -> Any:
        if not index_param(value):
            return value
        slot = Slot("p", self.params, type(value) if isinstance(value, np.generic) else None)
        self.param_types.append(slot.cast)
        self.params += 1
        return slot

    def _kernel_walk(self, value: Any) -> Any:
        """A user kernel's arguments: its NumPy scalars parameters wherever they are
        (protocol/stretches.kernel_param), in the walk's order."""
        t = type(value)
        if t is list or t is tuple:
            return t(self._kernel_walk(v) for v in value)
        if kernel_param(value):
            return self._operand(value)
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
    def rebuild(self, first_seq: int, inputs: list, params: list, outs: list,
                keep_inputs: bool = False) -> bytes:
        """The records the client would have sent for this run of the stretch, its frees
        where they were recorded (*keep_inputs*: not those of its inputs, an early
        replay's)."""
        pack = codec.packb
        fill = self._filler(inputs, params, outs)
        parts = []
        for item in self.items:
            if type(item) is Slot:
                if not (keep_inputs and item.kind == "i"):
                    parts.append(pack(int(fill(item))))
            else:
                parts.append(self._op_record(item, first_seq, outs, fill))
        return b"".join(parts)

    def op_records(self, first_seq: int, inputs: list, params: list, outs: list,
                   ops: int) -> list[bytes]:
        """The records of the first *ops* ops of this run, one (bytes) per op, without the
        frees: a client's fast path that falls back puts its own frees where they came."""
        fill = self._filler(inputs, params, outs)
        return [self._op_record(item, first_seq, outs, fill) for item in self.items
                if type(item) is Op and item.index < ops]

    @staticmethod
    def _filler(inputs: list, params: list, outs: list) -> Any:
        def of_slot(slot: Slot) -> Any:
            if slot.kind == "i":
                return codec.Handle(inputs[slot.n])
            if slot.kind == "r":
                return codec.Handle(outs[slot.n])
            return slot.value(params)

        def fill(value: Any) -> Any:
            return fill_slots(value, of_slot)
        return fill

    @staticmethod
    def _op_record(op: "Op", first_seq: int, outs: list, fill: Any) -> bytes:
        pack = codec.packb
        if op.out is None and op.outs:   # (its pieces' handles, a list as the client sent it)
            out = [outs[slot.n] for slot in op.outs]
        else:
            out = None if op.out is None else outs[op.out.n]
        return (pack([first_seq + op.index, op.kind, op.want, out, op.name])
                + pack([fill(op.target), fill(op.args), fill(op.kwargs)]))


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


def same_param(a: Any, b: Any) -> bool:
    """Whether two parameter values of a replay entry are the same to a replay: the same
    type and value, a zero of the same sign (a NaN is never the same). The client's early
    replay (kernelproxy/early_replay.py) and the worker's run ahead (worker/run_ahead.py)
    judge by it."""
    if a is b:
        return True
    if type(a) is not type(b) or a != b:
        return False
    if type(a) is float:
        return math.copysign(1.0, a) == math.copysign(1.0, b)
    if type(a) is complex:
        return (math.copysign(1.0, a.real) == math.copysign(1.0, b.real)
                and math.copysign(1.0, a.imag) == math.copysign(1.0, b.imag))
    return True


def same_params(a: list, b: list) -> bool:
    """Whether two replay entries' parameter lists are the same to a replay (same_param)."""
    return len(a) == len(b) and all(same_param(x, y) for x, y in zip(a, b))
