"""A stretch's key: what must be equal for two runs of ops to be one stretch replayed.

Step 1 of stretch replay (docs/stretch-replay.md). Between two sync points the client adds
each op it issues, and each free record, to a :class:`StretchKey`. Arguments become
*roles*:

* an array made by op ``k`` of this stretch: ``("r", k)``; the piece at place ``p`` of a
  call of several results (``api.ARRAYS``: ``q, r = modf(x)``) that op ``k`` is:
  ``("r", k, p)``, that call's record holding its count (``(want, n)``: a call whose
  count follows from metadata the key does not hold, ``nonzero`` of an input, is another
  stretch where the count differs);
* an array from before the stretch: ``("i", n)``, the ``n``-th such array first named, its
  handle kept in :attr:`StretchKey.inputs` (each iteration passes new ones);
* a scalar operand of an arithmetic operator (``x * alpha``, ``1 - x``), a positional
  scalar of a two-operand ufunc's call or of ``clip`` (``cupy.maximum(x, floor)``,
  ``x.clip(lo, hi)``), or a distribution's leading ones (``rs.normal(0, sigma, n)``'s first
  two), and the ints of a basic index (``x_all[j:j + batch]``'s ``j`` and ``j + batch``:
  ``("slice", ("s", "int"), ("s", "int"), step)``): ``("s", type)`` (protocol/stretches.py
  says which: ``PARAM_OPERATORS``, ``leading_params``, ``basic_index``), its value kept in :attr:`StretchKey.params` — a step size or CG's
  alpha changes each iteration and must not make a new stretch. Its type stays in the key:
  an int and a float promote differently (NEP 50), and the worker writes the value into a
  0-d buffer of the weak scalar's dtype, which is bitwise equal to CuPy's own
  (benchmarks/graph_probe.py);
* anything else is a *literal* and part of the key: axes, shapes, slices, dtypes, strings,
  flags, keyword arguments, and every other scalar (``x.sum(axis=1)`` and ``axis=0`` are
  different stretches; a slice's step too).

A value the key cannot express (an object it does not know) makes the stretch
*unkeyable*: it is never replayed, which costs speed, never a result. So does a stretch of
more than ``MAX_STRETCH_OPS`` records, which is never offered: its key stops growing there,
so that a loop of a million ops between two syncs costs one check an op, not a
million-entry key (kernelproxy.stretch_replay also starts a stretch unkeyed where the
session can use no key).

Two runs with equal keys issue the same ops on arrays in the same roles; the worker still
checks what the client cannot see (the inputs' shapes, dtypes and strides) before it
replays.
"""

from __future__ import annotations

import itertools
import struct
from collections import OrderedDict

from typing import Any, Callable

import numpy as np

from gpu_backend.protocol import messages as m
from gpu_backend.protocol.codec import packb
from gpu_backend.protocol.stretches import (MAX_STRETCH_OPS, PARAM_OPERATORS, index_param, indexed,
                                            is_param, kernel_param, leading_params, user_kernel)

__all__ = ["StretchKey", "UNKEYABLE", "literal_key", "name_key", "FixedDefinition"]

#: literal types kept in the key as they are
_LITERAL_TYPES = (type(None), bool, int, float, complex, str, bytes)


class FixedDefinition(dict):
    """A kernel's definition that never changes once made (a fused function's program, an
    ``ElementwiseKernel``'s sources): a stretch's key, and a held stretch's check of a run,
    hold its token, not its contents, which a program of a hundred calls made a walk of
    hundreds of values at every call. Travels as the map it is.

    Two definitions of the same contents have the same token: a cell run again, or a
    function that defines its ``cupy.fuse`` functions or its kernels each time it is
    called, makes new ones of the same text, and its loop is then the stretch held before
    (a fused function's ``fusion`` number, the pool's cache of its kernel, is left out:
    the same program fuses to the same kernel). Found once, when the definition is made."""

    __slots__ = ("key",)
    _made = itertools.count(1)
    #: the tokens of the definitions made lately, by their contents (the oldest forgotten
    #: past :data:`KEPT_TOKENS`: a definition of theirs made again then gets a new one)
    _tokens: "OrderedDict[bytes, tuple]" = OrderedDict()
    KEPT_TOKENS = 4096

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        try:
            contents = packb({k: v for k, v in self.items() if k != "fusion"})
        except Exception:   # (a value the wire cannot hold: the pool refuses it at its call)
            self.key = ("fixed", next(FixedDefinition._made))
            return
        tokens = FixedDefinition._tokens
        key = tokens.get(contents)
        if key is None:
            key = tokens[contents] = ("fixed", next(FixedDefinition._made))
            if len(tokens) > FixedDefinition.KEPT_TOKENS:
                tokens.popitem(last=False)
        self.key = key


class _Unkeyable(Exception):
    pass


#: The key of a stretch that holds a value no key can express.
UNKEYABLE = ("unkeyable",)


class StretchKey:
    """The ops of one stretch, as roles; built op by op, read with :meth:`key`.

    *handle_of(obj)* is the session's: the handle of a remote array (or object) of this
    session, or None for anything else. *keyed* False: a stretch no key is built for (the
    session could not use it), each op then costs one check.
    """

    __slots__ = ("_handle_of", "records", "inputs", "params", "outs", "_input_role",
                 "_result_role", "_ops", "keyable", "whole", "piece", "several", "several_ok")

    def __init__(self, handle_of: Callable[[Any], int | None], keyed: bool = True,
                 several_ok: bool = True) -> None:
        self._handle_of = handle_of
        self.records: list[tuple] = []
        #: handles of the arrays from before the stretch, in the order first named
        self.inputs: list[int] = []
        #: values of the operators' scalar operands, in order
        self.params: list[Any] = []
        #: the handles of the ops' results, by result slot: in op order (ops without one
        #: left out), a call of several results' pieces each in place order
        self.outs: list[int] = []
        self._input_role: dict[int, tuple] = {}
        self._result_role: dict[int, tuple] = {}
        self._ops = 0
        #: False once the stretch cannot be replayed: nothing more is added to its key
        self.keyable = keyed
        #: whether the stretch travelled in one batch (set when it ends: kernelproxy.stretch_replay)
        self.whole = True
        #: whether it is a piece of a loop with no sync point (kernelproxy/loop_cuts.py): its
        #: repeats are known already, so it is offered at its second sighting
        self.piece = False
        #: whether it holds a call of several results (``api.ARRAYS``); *several_ok*
        #: False (``GPUWB_SEVERAL_HELD=0``): such a call makes the stretch unkeyable, as
        #: before they were held
        self.several = False
        self.several_ok = several_ok

    def __len__(self) -> int:
        return len(self.records)

    @property
    def ops(self) -> int:
        """Ops added so far (free records apart)."""
        return self._ops

    # ------------------------------------------------------------ adding
    def add_op(self, kind: str, want: str, out: int | None, name: Any, target: Any,
               args: tuple | list, kwargs: dict | None) -> None:
        """One op as the session submits it (*out*: its result's handle, if any)."""
        if not self.keyable:
            return
        if kind == m.KIND_UPLOAD and len(args) != 1:   # (streamed in chunks: never replayed;
            self.keyable = False                          # one frame's data travels with the
            return                                        # replay: kernelproxy.session.upload)
        try:
            if kind == m.KIND_OPERATOR and name in PARAM_OPERATORS:
                operands = tuple(self._operand(a) for a in args)
                record = (kind, want, name, operands)
            elif indexed(kind, name, args):   # (its ints parameters: a moving slice or place)
                record = (kind, want, self._literal(name), None,
                          (self._role(args[0]), self._index(args[1]), *map(self._role, args[2:])), ())
            elif user_kernel(kind, name):   # (a user kernel's NumPy scalars, nested too)
                record = (kind, want, self._literal(name), self._role(target),
                          tuple(self._kernel_arg(a) for a in args),
                          tuple(sorted((k, self._role(v)) for k, v in (kwargs or {}).items())))
            else:   # (a ufunc's scalars, a distribution's leading ones: parameters too)
                lead = leading_params(kind, name)
                record = (kind, want, self._literal(name), self._role(target),
                          tuple(self._operand(a) if n < lead else self._role(a)
                                for n, a in enumerate(args)),
                          tuple(sorted((k, self._role(v)) for k, v in (kwargs or {}).items())))
        except Exception:   # _Unkeyable, or arguments the pool will refuse (unsortable keys...)
            self.keyable = False
            return
        if type(out) is list:   # (several results, api.ARRAYS)
            if not self.several_ok:   # (never held: sent as its ops)
                self._append(record)
                self.keyable = False
                return
            self._append((record[0], (want, len(out)), *record[2:]))   # (its count in it)
            self._made(out)
            self._ops += 1
            return
        self._append(record)   # (the common op: one array or none, no call of _made)
        if out is not None:
            self._result_role[out] = ("r", self._ops)
            self.outs.append(out)
        self._ops += 1

    def _made(self, out: Any) -> None:
        """The op being added makes *out*: one array's handle, or the list of a call of
        several results' pieces, each then named by the op and its place."""
        if type(out) is list:
            ops = self._ops
            for place, hid in enumerate(out):
                self._result_role[hid] = ("r", ops, place)
            self.outs.extend(out)
            self.several = True
            return
        self._result_role[out] = ("r", self._ops)
        self.outs.append(out)

    def add_free(self, hid: int) -> None:
        """A free record: the client dropped the array *hid* at this point."""
        if not self.keyable:
            return
        # (an array from before the stretch that it never named takes an input's role:
        # that it is dropped here is part of the stretch's shape; _array_role and _append,
        # written out: every array dropped between a held loop's runs comes here)
        role = self._result_role.get(hid)
        if role is None:
            role = self._input_role.get(hid)
            if role is None:
                role = self._input_role[hid] = ("i", len(self.inputs))
                self.inputs.append(hid)
        records = self.records
        records.append(("free", role))
        if len(records) > MAX_STRETCH_OPS:
            self.keyable = False

    def _append(self, record: tuple) -> None:
        """One more record; past ``MAX_STRETCH_OPS`` the stretch is never offered, so its
        key stops there (its length stays MAX_STRETCH_OPS + 1)."""
        records = self.records
        records.append(record)
        if len(records) > MAX_STRETCH_OPS:
            self.keyable = False

    # ------------------------------------------------------------ reading
    def key(self) -> tuple:
        """The stretch's key (hashable), or UNKEYABLE."""
        return tuple(self.records) if self.keyable else UNKEYABLE

    # ------------------------------------------------------------ roles
    def _array_role(self, hid: int) -> tuple:
        role = self._result_role.get(hid)
        if role is not None:
            return role
        role = self._input_role.get(hid)
        if role is None:
            role = self._input_role[hid] = ("i", len(self.inputs))
            self.inputs.append(hid)
        return role

    def _operand(self, value: Any) -> tuple:
        """An operator's operand: an array's role, or a scalar parameter."""
        if not is_param(value):
            return self._role(value)
        if isinstance(value, np.generic):
            self.params.append(value.item())
            return ("s", value.dtype.str)
        self.params.append(value)
        return ("s", type(value).__name__)

    def _kernel_arg(self, value: Any) -> Any:
        """A user kernel's argument's role: a NumPy scalar a parameter wherever it is, in a
        list or tuple too (protocol/stretches.kernel_param; the worker's walk:
        StretchRecords._kernel_walk)."""
        t = type(value)
        if t is tuple or t is list:
            return (t.__name__, tuple(self._kernel_arg(v) for v in value))
        if kernel_param(value):
            return self._operand(value)
        return self._role(value)

    def _index(self, index: Any) -> Any:
        """A basic index's role, its ints parameters (protocol/stretches.basic_index; the
        order the worker's records number them: StretchRecords._index)."""
        if type(index) is tuple:
            return ("tuple", tuple(self._index(part) for part in index))
        if type(index) is slice:
            return ("slice", self._index_int(index.start), self._index_int(index.stop),
                    literal_key(index.step))
        return self._index_int(index)

    def _index_int(self, value: Any) -> Any:
        return self._operand(value) if index_param(value) else literal_key(value)

    def _role(self, value: Any) -> Any:
        if value is None:
            return None
        hid = self._handle_of(value)
        if hid is not None:
            return self._array_role(hid)
        return self._literal(value)

    def _literal(self, value: Any) -> Any:
        t = type(value)
        if t is tuple or t is list:
            return (t.__name__, tuple(self._role(v) for v in value))
        if t is dict:
            return ("dict", tuple(sorted((k, self._role(v)) for k, v in value.items())))
        if t is FixedDefinition:
            return value.key
        return literal_key(value)

    # ------------------------------------------------------------ a fast path's fall-back
    def resume(self, records: list, inputs: list, params: list, outs: list,
               frees: list) -> None:
        """Go on from a run the fast path answered from a template (kernelproxy/
        stretch_templates.py) and that fell back: *records* are the template's op records
        of the ops it took (roles numbered by the template's walk), *inputs* the run's
        handle of each template input slot (None: not met), *params* its parameters, *outs*
        the result handle of each op (None: none), *frees* ``(ops before it, handle)`` of
        each free it met. The key becomes the one these ops and frees would have built,
        inputs numbered as met."""
        fresh: dict[int, tuple] = {}

        def renumber(role: Any) -> Any:
            if type(role) is not tuple or not role:
                return role
            tag = role[0]
            if tag == "i" and len(role) == 2 and type(role[1]) is int:
                fresh.setdefault(role[1], self._array_role(inputs[role[1]]))
                return fresh[role[1]]
            if tag in ("l", "s", "r", "slice", "dtype", "type", "np", "...", "free"):
                return role
            return tuple(renumber(r) if type(r) is tuple else r for r in role)

        pending = list(frees)
        for index, record in enumerate(records):
            while pending and pending[0][0] <= index:
                self.add_free(pending.pop(0)[1])
            if not self.keyable:
                return
            self._append(tuple(renumber(r) if type(r) is tuple else r for r in record))
            out = outs[index]
            if out is not None:
                self._made(out)   # (one array's handle, or a call of several results' pieces)
            self._ops += 1
        self.params.extend(params)
        for _at, hid in pending:
            self.add_free(hid)


def name_key(value: Any) -> Any:
    """The key of an op's name as :class:`StretchKey` keys it: a structure's dtype spec (an
    upload's name, a map of lists) by its parts, anything else by :func:`literal_key`."""
    t = type(value)
    if t is tuple or t is list:
        return (t.__name__, tuple(name_key(v) for v in value))
    if t is dict:
        return ("dict", tuple(sorted((k, name_key(v)) for k, v in value.items())))
    return literal_key(value)


def _float_bits(value: float) -> str:
    """A float's key: ``float.hex`` (exact, and a sign of zero its own), or for a NaN its
    bits, sign and payload (``hex`` says ``nan`` for every NaN: ``xp.add(x, -nan)`` keyed as
    ``xp.add(x, nan)`` replayed the first one's sign)."""
    return value.hex() if value == value else "nan:" + _DOUBLE.pack(value).hex()


_DOUBLE = struct.Struct("<d")


def literal_key(value: Any) -> Any:
    """The key of a value that is neither an array nor a container: itself with its type
    (a float by its bits), a slice's parts, a dtype's string. Raises for anything a key
    cannot hold."""
    t = type(value)
    if t is float:   # by its bits: -0.0 == 0.0, yet cupy.full(n, -0.0) is not cupy.full(n, 0.0)
        return ("l", "float", _float_bits(value))
    if t is complex:
        return ("l", "complex", _float_bits(value.real), _float_bits(value.imag))
    if t in _LITERAL_TYPES:
        # the type too: 1 and 1.0 and True are equal and hash alike, but not one stretch
        return ("l", t.__name__, value)
    if t is slice:
        return ("slice", literal_key(value.start), literal_key(value.stop),
                literal_key(value.step))
    if value is Ellipsis:
        return ("...",)
    if isinstance(value, np.dtype):
        return ("dtype", value.str)
    if value is float or value is int or value is bool or value is complex:   # dtype=float
        return ("type", value.__name__)
    if isinstance(value, type) and issubclass(value, np.generic):
        return ("dtype", np.dtype(value).str)
    if isinstance(value, np.generic):
        return ("np", value.dtype.str, value.tobytes())
    raise _Unkeyable(t.__name__)
