"""A held stretch answered on the client from its template: stretch replay's fast path
(docs/stretch-replay.md, "The client's fast path").

Once the worker holds a stretch, the client knows all that each of its ops gives back: the
op's record (its roles: which result or input each array is, which scalars are parameters,
every literal), the metadata of every result (shape, dtype, strides, flags) as its op made
it, and the metadata its inputs had. Its ops need not be encoded, keyed or queued one by
one. A :class:`TemplateRun` meets the ops of a stretch that begins as a template does and
only *checks* each against the template's next op: the same callable, each array argument
the same result of this run or the same input (an input the first time it is met: its
metadata as the template's), each parameter a scalar of the same type, every literal equal.
A match numbers the op, gives its result the handle the caller chose and, where the result's
metadata follows from its inputs' (static: not a boolean mask's selection, nor
``nonzero``'s), its shape, dtype and strides from the template. At the stretch's sync point
one replay entry goes: the stretch's id, its first op's number, the run's inputs,
parameters and results, the results whose metadata the client lacks, and the client's frees
after it (the worker frees what the stretch drops, and freeing twice is nothing). What the
client keeps must be what the template keeps: a run that keeps a result the stretch drops,
or an input it drops, cannot be replayed (the worker would drop an array the client holds).

A mismatch at any op, an op no template has there (an upload, a result by value in the
middle), a sync point before the template's last op, or a run that keeps what the stretch
drops, *falls back* to the ordinary path with the same results: the ops so far are written
as the records the client would have sent (the offered batch's records rebuilt with this
run's handles and values: :meth:`~gpu_backend.protocol.stretch_records.StretchRecords.op_records`),
the frees between them where they came, and the stretch's key as it would have been built;
then the op goes on as ever. Each op keeps its number and its line, so errors read as they do.

This module holds the templates (:class:`StretchTemplate`, a session's :class:`Templates`);
a run answered from one is kernelproxy/template_run.py's :class:`TemplateRun`, and which
results a template predicts the metadata of, kernelproxy/template_predictions.py.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gpu_backend.protocol import api
from gpu_backend.protocol import messages as m
from gpu_backend.protocol.stretch_records import Op, StretchRecords, read_records

from .array_meta import wire_tuple
from .stretch_key import StretchKey
from .template_predictions import static_result

__all__ = ["StretchTemplate", "Templates", "PLAIN_TYPES", "SliceLiteral", "same_index",
           "CODE_RESULT", "CODE_INPUT", "CODE_SCALAR", "CODE_NPSCALAR"]

#: Literals whose key is ("l", type name, the value): compared as they are (TemplateRun)
PLAIN_TYPES = frozenset({int, str, bool, type(None), bytes})
_PLAIN_NAMES = frozenset(t.__name__ for t in PLAIN_TYPES)

_OPERATOR = m.KIND_OPERATOR
_ARRAY = api.ARRAY


class StretchTemplate:
    """What the client knows of a held stretch *sid*: the key of its offered run (*key*:
    its records as roles), the offered batch (*batch*: header and records, as sent), and
    the worker's metadata of it (*metas*: the reply's ``hm``, ``[inputs, results]`` as wire
    entries, None where no array came of it). Made when the worker says it holds it."""

    __slots__ = ("sid", "key", "ops", "records", "n_inputs", "n_results", "slot_of",
                 "input_metas", "predicted", "canon_ops", "canon_slot", "checks", "names",
                 "plans", "unpredicted", "drops_results", "drops_inputs", "drop_slots",
                 "early_plan", "early_at", "index_checks", "trailing", "counts",
                 "first_several")

    def __init__(self, sid: int, key: StretchKey, batch: bytes, metas: list) -> None:
        self.sid = sid
        #: the arrays downloaded right after its replays, by their places (a result or an
        #: input of this stretch's replay or of another's last): (last seen, asked for with
        #: the next replay or None, whether one asked for was left untaken;
        #: kernelproxy/trailing_downloads.py)
        self.trailing: tuple | None = None
        self.key = key.key()
        #: each op's key record, in op order (its frees left out)
        self.ops: list[tuple] = [r for r in key.records if r[0] != "free"]
        #: the offered run's records as ops with slots: a fall-back rebuilds them
        self.records = StretchRecords(read_records(batch))
        if self.records.ops != len(self.ops):
            raise ValueError("the offered batch is not the stretch its key describes")
        self.n_inputs, self.n_results = self.records.inputs, self.records.outs
        ops = [op for op in self.records.items if type(op) is Op]
        #: the (first) result slot each op makes (None: it makes no array); a call of
        #: several results makes counts[i] slots from it, one a piece in place order
        self.slot_of: list[int | None] = [op.outs[0].n if op.outs else None for op in ops]
        #: the arrays each op makes: 0, 1, or a call of several results' count
        self.counts: list[int] = [len(op.outs) for op in ops]
        for record, count in zip(self.ops, self.counts):
            if type(record[1]) is tuple and record[1] != (record[1][0], count):
                raise ValueError("the offered batch's call makes other pieces than its key's")
        #: the index of its first call of several results (None: it has none), which the
        #: session joins the calls after it to (Session.submit_arrays)
        self.first_several: int | None = next(
            (i for i, record in enumerate(self.ops) if type(record[1]) is tuple), None)
        input_metas, result_metas = metas
        if len(input_metas) != self.n_inputs or len(result_metas) != self.n_results:
            raise ValueError("the worker's metadata does not fit the stretch")
        #: the metadata each input had: a run's input must have it (the results follow)
        self.input_metas = [wire_tuple(e) if e is not None else None for e in input_metas]
        made = [wire_tuple(e) if e is not None else None for e in result_metas]

        def meta_of(role: tuple) -> tuple | None:
            # (a result's as predicted: None where its values decide it, a mask's selection)
            if role[0] == "i":
                return self.input_metas[role[1]] if role[1] < self.n_inputs else None
            slot = self.slot_of[role[1]] if role[1] < len(self.slot_of) else None
            if slot is not None and len(role) == 3:   # (a piece: its place's slot)
                slot = slot + role[2] if role[2] < self.counts[role[1]] else None
            return self.predicted[slot] if slot is not None else None
        #: the metadata handed out with each result slot's array (None: asked of the worker)
        self.predicted: list[tuple | None] = [None] * self.n_results
        for index, slot in enumerate(self.slot_of):
            if slot is not None and static_result(self.ops[index], meta_of):
                for piece in range(slot, slot + self.counts[index]):
                    self.predicted[piece] = made[piece]
        #: the ops' records with inputs numbered by their first op (the key numbers them by
        #: their first record, frees too): held stretches of the same ops compare equal so,
        #: whatever they drop; and each such number's input slot here
        self.canon_ops, self.canon_slot = _canonical(self.ops)
        #: the records as TemplateRun._matches checks them: a slice literal as the slice
        #: it stands for (compared at once, not rebuilt as a key)
        self.checks: list[tuple] = [_compiled(record) for record in self.ops]
        #: each op's name where its key has a plain string (``("l", "str", name)``, whose
        #: literal_key a string of that value has), else None: compared without building
        #: the name's key
        self.names: list[str | None] = [
            record[2][2] if len(record) != 4 and type(record[2]) is tuple and len(record[2]) == 3
            and record[2][:2] == ("l", "str") and type(record[2][2]) is str else None
            for record in self.ops]
        #: each arithmetic or comparison operator's plan for TemplateRun.operator (None for
        #: other ops): its name, its operands' codes, its result slot and metadata
        self.plans: list[tuple | None] = [
            _operator_plan(record, slot, self.predicted[slot] if slot is not None else None)
            for record, slot in zip(self.ops, self.slot_of)]
        #: each ``getitem`` whose index holds parameters (a moving slice): (the shape its
        #: result must have for the template's metadata to hold, False where not known so
        #: that a run never takes it from here; the offered run's index and its parameters,
        #: a run's same index taken at once); None for every other op
        self.index_checks: list[Any] = _index_checks(self.ops, key.params, [
            self.predicted[slot] if slot is not None and count == 1 else None
            for slot, count in zip(self.slot_of, self.counts)])
        #: the slots whose metadata the worker is asked for when the run keeps them
        self.unpredicted = [slot for slot, meta in enumerate(self.predicted) if meta is None]
        #: what the stretch drops (a run must drop them too): result and input slots
        self.drops_results: set[int] = set()
        self.drops_inputs: set[int] = set()
        for record in key.records:
            if record[0] == "free":
                role = record[1]
                if role[0] == "r":
                    slot = self.slot_of[role[1]]
                    if slot is not None:   # (a piece: its place's slot)
                        self.drops_results.add(slot + role[2] if len(role) == 3 else slot)
                else:
                    self.drops_inputs.add(role[1])
        #: the result slots it drops, in order (TemplateRun._dropped_results)
        self.drop_slots: tuple[int, ...] = tuple(sorted(self.drops_results))
        #: early replay (kernelproxy/early_replay.py): its plan where the worker says the
        #: stretch may go early and every result's metadata is known here (the session
        #: sets it), and the op count at which a run sends its replay early (None: not)
        self.early_plan: Any = None
        self.early_at: int | None = None

    def __len__(self) -> int:
        return len(self.ops)


def _param_count(role: Any) -> int:
    """How many parameters (``("s", type)``) a key's *role* holds, containers looked into."""
    if type(role) is not tuple or not role:
        return 0
    if _is_param_role(role):
        return 1
    if role[0] in ("l", "i", "r", "dtype", "type", "np", "...", "free"):
        return 0
    return sum(_param_count(r) for r in role)


def _is_param_role(role: tuple) -> bool:
    """Whether *role* is a parameter's, ``("s", type)`` (not a map's item keyed "s")."""
    return role[0] == "s" and len(role) == 2 and type(role[1]) is str


def _index_value(role: Any, params: list, at: list) -> Any:
    """The index a key's *role* stands for, its parameters taken from *params* from
    ``at[0]`` on (moved past them)."""
    tag = role[0]
    if tag == "s":
        at[0] += 1
        value = params[at[0] - 1]
        return value if role[1] == "int" else np.dtype(role[1]).type(value)
    if tag == "slice":
        return slice(*(_index_value(r, params, at) for r in role[1:]))
    if tag == "tuple":
        return tuple(_index_value(r, params, at) for r in role[1])
    if tag == "...":
        return Ellipsis
    return role[2]   # (("l", type, value): None, an int step)


def _index_checks(ops: list, params: list, metas: list) -> list:
    """TemplateRun's checks of the ``getitem``s whose index holds parameters (*ops*' key
    records; *params*: the offered run's parameters; *metas*: each op's result's metadata,
    None where unknown): (the shape the result must have, False where unknown; the offered
    run's index; its parameters) by op, None for every other op."""
    checks: list[Any] = []
    at = 0
    for record, meta in zip(ops, metas):
        count = _param_count(record[3] if len(record) == 4 else record[3:5])   # (not keywords)
        if record[0] != _OPERATOR or len(record) != 6 or record[2] != ("l", "str", "getitem") \
                or len(record[4]) != 2 or not _param_count(record[4][1]):
            checks.append(None)
        else:
            before = at + _param_count(record[4][0])
            index = _index_value(record[4][1], params, [before])
            checks.append((meta[0] if meta is not None else False, index,
                           tuple(params[before:at + count])))
        at += count
    return checks


def same_index(value: Any, recorded: Any) -> bool:
    """Whether a run's basic index *value* is *recorded*, part for part of the same types
    (``slice(True, 3)`` equals ``slice(1, 3)`` but is no parameter's)."""
    t = type(value)
    if t is not type(recorded):
        return False
    if t is slice:
        return (type(value.start) is type(recorded.start) and type(value.stop) is type(recorded.stop)
                and type(value.step) is type(recorded.step) and value == recorded)
    if t is tuple:
        return len(value) == len(recorded) and all(map(same_index, value, recorded))
    return value is recorded or value == recorded


#: a parameter's Python type, by the name the key gives it
_PARAM_TYPES = {"float": float, "int": int, "bool": bool, "complex": complex}
#: operand codes of an operator's plan: the result of op j, input n, a Python scalar of a
#: type, a NumPy scalar of a dtype
CODE_RESULT, CODE_INPUT, CODE_SCALAR, CODE_NPSCALAR = 0, 1, 2, 3


def _operator_plan(record: tuple, slot: int | None, meta: tuple | None) -> tuple | None:
    """An arithmetic or comparison operator's op as TemplateRun.operator checks it:
    ``(name, codes, slot, metadata)``; None for any other op (TemplateRun.take checks it)."""
    if len(record) != 4 or record[1] != _ARRAY or slot is None:
        return None
    codes = []
    for role in record[3]:
        tag = role[0]
        if tag == "r":
            if len(role) != 2:   # (a piece of a call of several results: no plan names one,
                return None      # so the compiled check never meets one; take() checks it)
            codes.append((CODE_RESULT, role[1]))
        elif tag == "i":
            codes.append((CODE_INPUT, role[1]))
        elif tag == "s" and role[1] in _PARAM_TYPES:
            codes.append((CODE_SCALAR, _PARAM_TYPES[role[1]]))
        elif tag == "s":
            codes.append((CODE_NPSCALAR, role[1]))
        else:
            return None
    return (record[2], tuple(codes), slot, meta)


class SliceLiteral:
    """A slice literal of a record, ready to compare: the slice, its parts' types."""

    __slots__ = ("value", "types")

    def __init__(self, role: tuple) -> None:
        parts = []
        for part in role[1:]:
            if not (type(part) is tuple and len(part) == 3 and part[0] == "l"
                    and part[1] in _PLAIN_NAMES):
                raise ValueError("not a plain slice")
            parts.append(part[2])
        self.value = slice(*parts)
        self.types = tuple(type(p) for p in parts)


def _compiled(role: Any) -> Any:
    """A record (or role) with its plain slice literals as :class:`SliceLiteral`."""
    if type(role) is not tuple or not role:
        return role
    if role[0] == "slice" and len(role) == 4:
        try:
            return SliceLiteral(role)
        except ValueError:
            return role
    if role[0] in ("l", "s", "r", "i", "dtype", "type", "np", "..."):
        return role
    return tuple(_compiled(r) for r in role)


def _canonical(ops: list[tuple]) -> tuple[list[tuple], list[int]]:
    """*ops*' records with input roles renumbered by first appearance among the ops, and
    each new number's slot in the old numbering."""
    slots: list[int] = []
    number: dict[int, int] = {}

    def renumber(role: Any) -> Any:
        if type(role) is not tuple or not role:
            return role
        if role[0] == "i" and len(role) == 2 and type(role[1]) is int:
            if role[1] not in number:
                number[role[1]] = len(slots)
                slots.append(role[1])
            return ("i", number[role[1]])
        if role[0] in ("l", "s", "r", "slice", "dtype", "type", "np", "..."):
            return role
        return tuple(renumber(r) for r in role)

    return [renumber(record) for record in ops], slots


def _callable(record: tuple) -> tuple:
    """(kind, name) of an op's key record."""
    name = record[2]
    return (record[0], name[2] if type(name) is tuple and len(name) == 3 else name)


class Templates:
    """A session's templates, by their first op's callable (a stretch's first op finds
    them so), and by id."""

    def __init__(self) -> None:
        self.by_first: dict[tuple, list[StretchTemplate]] = {}
        self.held: dict[int, StretchTemplate] = {}

    def __bool__(self) -> bool:
        return bool(self.held)

    def add(self, template: StretchTemplate) -> None:
        if template.ops:
            self.held[template.sid] = template
            self.by_first.setdefault(_callable(template.ops[0]), []).append(template)

    def drop(self, sid: int) -> None:
        template = self.held.pop(sid, None)
        if template is not None:
            group = self.by_first.get(_callable(template.ops[0]), [])
            if template in group:
                group.remove(template)

    def starting(self, kind: str, name: Any) -> list[StretchTemplate]:
        """The templates whose first op calls *name* (of *kind*)."""
        return self.by_first.get((kind, name), [])

    def sharing(self, template: StretchTemplate, ops: int) -> list[StretchTemplate]:
        """The other templates whose first *ops* ops are *template*'s (inputs numbered by
        the ops alone: one may drop arrays the other does not)."""
        head = template.canon_ops[:ops]
        return [t for t in self.by_first.get(_callable(template.ops[0]), [])
                if t is not template and len(t.ops) >= ops and t.canon_ops[:ops] == head]
