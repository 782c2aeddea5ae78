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
"""

from __future__ import annotations

from operator import itemgetter
from typing import Any, Callable
from weakref import ref as _weakref

import msgpack
import numpy as np

from gpu_backend.protocol import api
from gpu_backend.protocol import messages as m
from gpu_backend.protocol.stretch_records import Op, StretchRecords, read_records
from gpu_backend.protocol.stretches import INT_PARAM_HIGH, INT_PARAM_LOW, is_param

from . import early_replay
from . import held_ops
from .held_ops import call_site as _c_call_site
from .array_meta import wire_tuple
from .caller import call_site, site_line
from .index_shape import basic_index_shape
from .issue import array_class
from .stretch_key import FixedDefinition, StretchKey, literal_key, name_key

__all__ = ["StretchTemplate", "TemplateRun", "Templates", "static_result"]

_OPERATOR, _METHOD, _FUNCTION, _ATTRIBUTE = (m.KIND_OPERATOR, m.KIND_METHOD, m.KIND_FUNCTION,
                                             m.KIND_ATTRIBUTE)
_ARRAY, _MULTI, _OBJECT, _ARRAYS = api.ARRAY, api.MULTI, api.OBJECT, api.ARRAYS
_pack_free = msgpack.Packer(autoreset=True).pack
_second = itemgetter(1)

#: Methods whose result's metadata follows from their array's and their literal arguments'.
STATIC_METHODS = frozenset("""
    all any argmax argmin argpartition argsort astype clip conj conjugate copy cumprod cumsum
    diagonal dot flatten max mean min prod ravel reshape round squeeze std sum swapaxes take
    trace transpose var
""".split())
#: Functions so, besides the ufuncs (whose result follows from their operands' metadata).
STATIC_FUNCTIONS = frozenset("""
    array asarray asanyarray ascontiguousarray asfortranarray copy empty empty_like zeros
    zeros_like ones ones_like full full_like arange linspace logspace eye identity tri tril
    triu round around clip nan_to_num real imag conj conjugate angle sinc i0 all any
    sum prod nansum nanprod cumsum cumprod nancumsum nancumprod diff cross mean average
    var std nanmean nanvar nanstd median nanmedian amax amin max min nanmax nanmin ptp argmax
    argmin nanargmax nanargmin count_nonzero sort argsort partition argpartition searchsorted
    reshape ravel transpose swapaxes moveaxis rollaxis squeeze expand_dims broadcast_to
    concatenate stack vstack hstack dstack column_stack tile flip fliplr flipud roll rot90 pad
    take take_along_axis diagonal trace einsum dot vdot inner outer matmul tensordot kron
    append astype matrix_transpose linalg.norm linalg.solve linalg.inv linalg.det
    linalg.matmul linalg.cholesky
    fft.fft fft.ifft fft.rfft fft.irfft fft.fft2 fft.ifft2 fft.fftn fft.ifftn fft.rfft2
    fft.irfft2 fft.rfftn fft.irfftn fft.fftshift fft.ifftshift
""".split())


#: Calls of several results (``api.ARRAYS``) whose pieces' metadata follows from their
#: arrays' metadata and their literals, checked against the worker's for each
#: (tests/kernelproxy/test_result_structures.py). Not those whose values decide their
#: pieces' shapes (``nonzero``, ``where`` of one array, ``unique``), nor ``linalg.eig``
#: (its pieces' dtype, real or complex, is its eigenvalues'), nor ``histogram`` (NumPy's,
#: the NumPy device's, takes ``bins="auto"``, whose count its values decide).
STATIC_SEVERAL = frozenset("""
    modf frexp divmod meshgrid broadcast_arrays atleast_1d atleast_2d atleast_3d
    gradient tril_indices triu_indices tril_indices_from triu_indices_from diag_indices
    unravel_index linalg.qr linalg.svd linalg.eigh linalg.slogdet
""".split())


#: A generator's draws (``cupy.random.uniform(size=...)`` is the global RandomState's):
#: their result's shape and dtype follow from their literals (``size``, ``dtype``, a count)
#: and their arrays' metadata (parameters broadcast), never from the numbers drawn.
STATIC_DRAWS = frozenset(f"{cls}.{name}" for cls in ("random.RandomState", "random.Generator")
                         for name, want in api.OBJECTS[cls].items() if want == api.ARRAY)


def static_result(record: tuple, metas: Callable[[tuple], tuple | None]) -> bool:
    """Whether the result of the op of key *record* has metadata that follows from its
    arrays' metadata, its literals and its parameters' types alone (not from the values in
    its arrays: a boolean mask's selection, ``nonzero``, ``unique``, ``bincount``, and an
    index of such a result). *metas(role)* gives the metadata of an array role of the
    template (None: unknown, or a result's that is not static)."""
    kind = record[0]
    if record[1] != _ARRAY:
        if type(record[1]) is tuple and record[1][0] == _ARRAYS:   # (a piece of several)
            return _static_pieces(record, metas)
        return False
    if not _arrays_known(record[3] if len(record) == 4 else record[3:], metas):
        return False   # (an array whose shape its values decided: a mask's selection's)
    if kind == m.KIND_UPLOAD:   # (its literal shape and dtype: an uploaded array's layout)
        return True
    if kind == _OPERATOR:
        if len(record) == 4:   # an arithmetic or comparison operator (its scalars: parameters)
            return True
        if record[2] == ("l", "str", "pow"):   # (its exponent a literal: as an operator's)
            return True
        if record[2] != ("l", "str", "getitem"):
            return False
        return not any(_holds_mask(role, metas) for role in record[4][1:])
    name = record[2][2] if type(record[2]) is tuple and len(record[2]) == 3 else None
    if kind == _ATTRIBUTE:
        return True
    if kind == _METHOD:
        return name in STATIC_METHODS
    if kind == _FUNCTION:
        if name == "where" and len(record[4]) != 3:   # (one argument: nonzero's arrays)
            return False
        return name in api.UFUNCS or name in STATIC_FUNCTIONS
    if kind == m.KIND_OBJECT:
        return name in STATIC_DRAWS
    # a fused function's kernel (its program a fixed literal, its scalars literals too):
    # CuPy's elementwise or reduction kernel, its results' shapes and dtypes its arrays'
    return kind == m.KIND_KERNEL and name == "fuse"


def _static_pieces(record: tuple, metas: Callable[[tuple], tuple | None]) -> bool:
    """Whether the pieces of a call of several results (its key *record*, want
    ``(ARRAYS, n)``) have metadata that follows from its arrays' and its literals
    (STATIC_SEVERAL: a function's, or Python's ``divmod``), its arrays' predicted."""
    if len(record) != 6 or not _arrays_known(record[3:], metas):
        return False
    if record[0] == _OPERATOR:   # (Python's divmod of operands divmod_pair leaves a call)
        return record[2] == ("l", "str", "divmod")
    name = record[2]
    return (record[0] == _FUNCTION and type(name) is tuple and len(name) == 3
            and name[2] in STATIC_SEVERAL)


def _is_result(role: tuple) -> bool:
    """Whether *role* names a result of the stretch: ``("r", k)``, or the piece
    ``("r", k, p)`` of a call of several results."""
    return role[0] == "r" and len(role) in (2, 3) and all(type(n) is int for n in role[1:])


def _arrays_known(role: Any, metas: Callable[[tuple], tuple | None]) -> bool:
    """Whether every result of the stretch in *role* (an op's operands, containers looked
    into) has metadata the template predicts (an input's is checked at each run: an
    object's, None, too). A piece's role, ``("r", k, p)``, is a result's: taken for a
    container, it would count as known, and an op fed by a piece the template does not
    predict would be handed the offered run's metadata."""
    if type(role) is not tuple or not role:
        return True
    if len(role) == 2 and role[0] == "i" and type(role[1]) is int:
        return True
    if _is_result(role):
        return metas(role) is not None
    if role[0] in ("l", "s", "dtype", "type", "np", "...", "fixed"):
        return True
    return all(_arrays_known(r, metas) for r in role)


def _holds_mask(role: Any, metas: Callable[[tuple], tuple | None]) -> bool:
    """Whether an index's *role* holds a boolean array (or an array of unknown dtype)."""
    if type(role) is not tuple or not role:
        return False
    tag = role[0]
    if (tag == "i" and len(role) == 2) or (tag == "r" and len(role) in (2, 3)):   # (a piece too)
        meta = metas(role)
        return meta is None or meta[1].kind == "b"
    if tag == "tuple" or tag == "list":
        return any(_holds_mask(r, metas) for r in role[1])
    return False


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


def _same_index(value: Any, recorded: Any) -> bool:
    """Whether a run's basic index *value* is *recorded*, part for part of the same types
    (``slice(True, 3)`` equals ``slice(1, 3)`` but is no parameter's)."""
    t = type(value)
    if t is not type(recorded):
        return False
    if t is slice:
        return (type(value.start) is type(recorded.start) and type(value.stop) is type(recorded.stop)
                and type(value.step) is type(recorded.step) and value == recorded)
    if t is tuple:
        return len(value) == len(recorded) and all(map(_same_index, value, recorded))
    return value is recorded or value == recorded


#: a parameter's Python type, by the name the key gives it
_PARAM_TYPES = {"float": float, "int": int, "bool": bool, "complex": complex}
#: operand codes of an operator's plan: the result of op j, input n, a Python scalar of a
#: type, a NumPy scalar of a dtype
_RESULT, _INPUT, _SCALAR, _NPSCALAR = 0, 1, 2, 3


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
            codes.append((_RESULT, role[1]))
        elif tag == "i":
            codes.append((_INPUT, role[1]))
        elif tag == "s" and role[1] in _PARAM_TYPES:
            codes.append((_SCALAR, _PARAM_TYPES[role[1]]))
        elif tag == "s":
            codes.append((_NPSCALAR, role[1]))
        else:
            return None
    return (record[2], tuple(codes), slot, meta)


class _SliceLiteral:
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
    """A record (or role) with its plain slice literals as :class:`_SliceLiteral`."""
    if type(role) is not tuple or not role:
        return role
    if role[0] == "slice" and len(role) == 4:
        try:
            return _SliceLiteral(role)
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


#: Literals whose key is ("l", type name, the value): compared as they are
_PLAIN = frozenset({int, str, bool, type(None), bytes})
_PLAIN_NAMES = frozenset(t.__name__ for t in _PLAIN)


class _Miss(Exception):
    """An argument that is not what the template has there."""


class TemplateRun:
    """One run of a stretch that *session* answers from *template* (one of *templates*),
    its first op numbered *first*: the handles, inputs, parameters, lines and frees it met.
    Called with the session's lock held."""

    __slots__ = ("session", "templates", "template", "i", "first", "first_hid", "hids",
                 "results", "inputs", "input_of", "params", "lines", "frees", "predicted",
                 "_array", "_bound", "ids", "early", "compiled", "_kept", "lock", "arrays",
                 "payload")

    def __init__(self, session: Any, templates: Templates, template: StretchTemplate,
                 first: int, first_hid: int) -> None:
        self.session = session
        self.templates = templates
        self.template = template
        self.i = 0                       # the next op's index in the template
        self.first = first               # the first op's sequence number
        self.first_hid = first_hid       # handles from here on are this run's
        self.hids: list[int | None] = []      # each op's result handle (None: none)
        self.results: list[int] = []          # each result slot's handle
        self.inputs: list[int | None] = [None] * template.n_inputs
        self.input_of: dict[int, int] = {}    # handle -> input slot
        self.params: list[Any] = []
        self.lines: list[tuple] = []          # each op's (label, its caller's call_site)
        self.frees: list[tuple[int, int]] = []   # (ops taken before it, handle)
        #: handle -> the metadata handed out with its array (kernelproxy.issue.wrap)
        self.predicted: dict[int, tuple] = {}
        self._array = array_class()
        self._bound: list[int] = []
        #: where the results' handles come from: the session's ids, or first those an
        #: early replay reserved (kernelproxy/early_replay.py), which it sent already
        self.ids = session._ids
        self.early: Any = None   # the early replay sent for this run, while undecided
        #: whether the compiled operators answer this run's ops (kernelproxy/held_ops.py;
        #: off: the Python methods below, the reference, answer them)
        self.compiled = session.settings.compiled
        #: the frees kept, as complete() found them: (template, frees then, handles)
        self._kept: tuple | None = None
        #: the session's lock and its arrays (each the same object for the session's life),
        #: where the compiled operators read them: a slot, not the session's dict
        self.lock = session._lock
        self.arrays = session.arrays
        #: the data of the uploads taken, a frame each in order: they travel with the
        #: replay (Session._replay_batch), or join the queue's where the run falls back
        self.payload: list = []

    # ------------------------------------------------------------ the ops
    def operator(self, name: str, operands: tuple, label: str) -> Any:
        """Python's arithmetic or comparison operator *name* on *operands*, the template's
        next op: its result array at once (its metadata from the template where it
        follows), or None where it is not (the ordinary path then: :meth:`take` looks at
        other templates, or the run falls back). The commonest op of a loop's body, so it
        is checked here in one function, without the general path's layers."""
        session = self.session
        lock = session._lock
        lock.acquire()
        try:
            if session._run is not self:   # (ended meanwhile: by another thread, a collection)
                return None
            i = self.i
            plans = self.template.plans
            if not 0 <= i < len(plans):   # (as the compiled check: never plans[-1])
                return None
            plan = plans[i]
            if plan is None or plan[0] != name:
                return None
            codes = plan[1]
            if len(codes) != len(operands) or len(codes) > 2:
                return None
            params = self.params
            mark = len(params)
            self._bound.clear()
            if not (self._operand_fits(operands[0], codes[0], session, params)
                    and (len(codes) == 1
                         or self._operand_fits(operands[1], codes[1], session, params))):
                del params[mark:]   # (not the template's op: nothing of it stays)
                self._undo()
                return None
            self._bound.clear()   # (committed: no later miss may unbind them)
            hid = next(self.ids)
            array = object.__new__(self._array)
            array._s, array._h, array._m = session, hid, plan[3]
            session.arrays[hid] = _weakref(array)
            self.hids.append(hid)
            self.results.append(hid)
            # (from the caller of the operator's method: the user, mostly)
            self.lines.append((label, call_site(3)))
            session._seq += 1
            self.i = i = i + 1
            if i == self.template.early_at:
                early_replay.send(session, self)
            return array
        finally:
            lock.release()

    def _operand_fits(self, value: Any, code_arg: tuple, session: Any, params: list) -> bool:
        """Whether an operator's operand is what the template's plan has there (an input
        met the first time is bound to its slot, a parameter's value kept)."""
        code, arg = code_arg
        if code == _RESULT:
            return type(value) is self._array and value._s is session and value._h == self.hids[arg]
        if code == _SCALAR:
            if type(value) is not arg or (arg is int and not INT_PARAM_LOW <= value < INT_PARAM_HIGH) \
                    or value != value:
                return False   # (an int too large, a NaN, is no parameter: is_param)
            params.append(value)
            return True
        if code == _INPUT:
            if type(value) is not self._array or value._s is not session:
                return False
            hid = value._h
            have = self.inputs[arg]
            if have is not None:
                return have == hid
            if hid >= self.first_hid or hid in self.input_of \
                    or self._meta(value, hid) != self.template.input_metas[arg]:
                return False
            self.inputs[arg] = hid
            self.input_of[hid] = arg
            self._bound.append(arg)
            return True
        # a NumPy scalar of the recorded dtype (not a NaN: is_param)
        if not isinstance(value, np.generic) or value.dtype.str != arg:
            return False
        item = value.item()
        if item != item:
            return False
        params.append(item)
        return True

    def array_op(self, kind: str, name: Any, target: Any, args: tuple | list,
                 kwargs: dict | None, label: str) -> Any:
        """An op whose result is a new array (a function's, a method's, an index's), the
        template's next: its array at once, or None where it is not (the ordinary path
        then). :meth:`take`'s check, without the session's submit and wrap around it."""
        session = self.session
        lock = session._lock
        lock.acquire()
        try:
            if session._run is not self:
                return None
            hid = next(self.ids)
            if not self.take(kind, _ARRAY, hid, name, target, args, kwargs, label, 4):
                session._fall_back(at_op=True)   # (now: the session's submit would match it again)
                return None
            array = object.__new__(self._array)
            array._s, array._h, array._m = session, hid, self.predicted.pop(hid, None)
            session.arrays[hid] = _weakref(array)
            return array
        finally:
            lock.release()

    def take(self, kind: str, want: str, out: int | None, name: Any, target: Any,
             args: tuple | list, kwargs: dict | None, label: str, depth: int = 3) -> bool:
        """Whether the op is the template's next (True: it is taken, numbered, its line
        kept, *depth* frames up where the user's code called); False: it is not, and the
        run is to fall back."""
        template = self.template
        i = self.i
        if want == _MULTI or want == _OBJECT:
            return False
        if type(out) is list:   # (a call of several results: keyed with its count)
            want = (want, len(out))
        if i >= len(template.ops) or not self._matches(template.checks[i], template.names[i],
                                                       kind, want, name, target, args, kwargs,
                                                       template.index_checks[i]):
            for other in self.templates.sharing(template, i):   # (another held stretch of
                if i < len(other.ops) and self._switch(other):  # the same start)
                    if self._matches(other.checks[i], other.names[i], kind, want, name, target,
                                     args, kwargs, other.index_checks[i]):
                        template = other
                        break
                    self._switch(template)
            else:
                return False
        slot = template.slot_of[i]
        if (slot is None) != (out is None):   # (a call's count is in its want: matched)
            self._undo()
            return False
        self.hids.append(out)
        if type(out) is list:   # (its pieces: a result slot each, in place order)
            self._pieces(out, template.predicted[slot:slot + len(out)])
        elif out is not None:
            self.results.append(out)
            meta = template.predicted[slot]
            if meta is not None:
                self.predicted[out] = meta
        # (the user's frame: the same found in C where the run's operators are compiled)
        self.lines.append((label, _c_call_site() if self.compiled and _c_call_site is not None
                           else call_site(depth)))
        self.session._seq += 1
        self.i = i = i + 1
        self._bound.clear()
        if i == template.early_at:
            early_replay.send(self.session, self)
        return True

    def _pieces(self, out: list, metas: list) -> None:
        """A call of several results taken: its pieces' handles *out* are the run's next
        result slots, each handed out with its *metas* (None: asked of the worker)."""
        self.results.extend(out)
        for hid, meta in zip(out, metas):
            if meta is not None:
                self.predicted[hid] = meta

    def freed(self, hid: int) -> None:
        """The client dropped array *hid* now (after the ops taken so far)."""
        self.frees.append((self.i, hid))

    def dropped(self, hid: int, unread: bool) -> None:
        """The client dropped *hid*, a result of this run (its array's ``__del__``): as
        :meth:`Session.release` would, without its metadata's bookkeeping (none was sent
        or asked for); the ordinary release if the run has ended meanwhile, or if another
        thread holds the session (Session.release: a collection in any thread never waits)."""
        session = self.session
        lock = session._lock
        if not lock.acquire(blocking=False):
            session.release(hid, unread)
            return
        try:
            if session._run is self:
                self.frees.append((self.i, hid))
                session.arrays.pop(hid, None)
                return
        finally:
            lock.release()
        session.release(hid, unread)

    def _switch(self, other: StretchTemplate) -> bool:
        """Go on as a run of *other*, whose first ops are this template's (Templates.sharing),
        where this run so far is one of it too: its inputs had the metadata *other*'s had,
        its results were handed out as *other*'s. Its inputs are renumbered as *other*
        numbers them. Whether it switched."""
        template = self.template
        inputs = [None] * other.n_inputs
        for canon, slot in enumerate(template.canon_slot):
            hid = self.inputs[slot]
            if hid is None:
                continue
            if canon >= len(other.canon_slot):
                return False
            theirs = other.canon_slot[canon]
            if other.input_metas[theirs] != template.input_metas[slot]:
                return False
            inputs[theirs] = hid
        for slot in range(len(self.results)):   # (every piece, not each op's first slot)
            if other.predicted[slot] != template.predicted[slot]:
                return False
        self.template, self.inputs = other, inputs
        self.input_of = {hid: n for n, hid in enumerate(inputs) if hid is not None}
        return True

    def _matches(self, record: tuple, plain_name: str | None, kind: str, want: str, name: Any,
                 target: Any, args: tuple | list, kwargs: dict | None,
                 index_check: Any = None) -> bool:
        """Whether the op is the template's op of key *record* (its parameters kept, its
        inputs bound; nothing of it where not). *index_check*: a ``getitem`` whose index
        holds parameters, StretchTemplate.index_checks'."""
        if record[0] != kind or record[1] != want:
            return False
        self._bound.clear()
        params = len(self.params)
        try:
            if index_check is not None and len(args) == 2 and _same_index(args[1], index_check[1]):
                # (the offered run's very index, a stencil's ``u[1:-1]``: its shape too)
                if record[2] != ("l", "str", name) or len(record[4]) != 2:
                    return False
                self._match(args[0], record[4][0])
                self.params.extend(index_check[2])
                return True
            if len(record) == 4:   # an arithmetic or comparison operator (keyed so)
                roles = record[3]
                if record[2] != name or len(roles) != len(args):
                    return False
                for value, role in zip(args, roles):
                    self._operand(value, role)
                return True
            if type(name) is str and plain_name is not None:   # (the commonest: as its key)
                if name != plain_name:
                    return False
            elif record[2] != name_key(name):   # (a structure's dtype, an upload's, by its parts)
                return False
            self._match(target, record[3])
            roles = record[4]
            if len(roles) != len(args):
                raise _Miss
            for value, role in zip(args, roles):   # (a ufunc's parameters: "s", _match's)
                self._match(value, role)
            roles = record[5]
            if len(roles) != (len(kwargs) if kwargs else 0):
                raise _Miss
            for key, role in roles:
                if key not in kwargs:
                    raise _Miss
                self._match(kwargs[key], role)
            if index_check is not None:   # (a moving slice: the template's shape, or a miss)
                shape = index_check[0]
                meta = self._meta(args[0], self._handle(args[0])) if shape is not False else None
                if meta is None or basic_index_shape(meta[0], args[1]) != shape:
                    raise _Miss
            return True
        except Exception:   # _Miss, or a value no key holds (the ordinary path says what)
            del self.params[params:]
            self._undo()
            return False

    def _undo(self) -> None:
        """Unbind the inputs a failed match bound."""
        for n in self._bound:
            self.input_of.pop(self.inputs[n], None)
            self.inputs[n] = None
        self._bound.clear()

    def _operand(self, value: Any, role: tuple) -> None:
        if role[0] != "s":
            self._match(value, role)
            return
        if not is_param(value):
            raise _Miss
        if isinstance(value, np.generic):
            if value.dtype.str != role[1]:
                raise _Miss
            self.params.append(value.item())
        else:
            if type(value).__name__ != role[1]:
                raise _Miss
            self.params.append(value)

    def _match(self, value: Any, role: Any) -> None:
        """Raise _Miss unless *value* has *role* in this run (the key's rules: its
        ``_role``)."""
        if role is None:
            if value is not None:
                raise _Miss
            return
        if type(role) is _SliceLiteral:
            if type(value) is not slice or value != role.value or (
                    type(value.start), type(value.stop), type(value.step)) != role.types:
                raise _Miss
            return
        tag = role[0]
        if tag == "s":   # (an int of a basic index: a parameter)
            self._operand(value, role)
            return
        if tag == "r" or tag == "i":
            hid = self._handle(value)
            if tag == "r":
                made = self.hids[role[1]]
                if len(role) == 3:   # (a piece of a call of several results)
                    if type(made) is not list or role[2] >= len(made):
                        raise _Miss
                    made = made[role[2]]
                if hid is None or hid != made:
                    raise _Miss
                return
            if hid is None or hid >= self.first_hid:
                raise _Miss
            n = role[1]
            bound = self.inputs[n]
            if bound is not None:
                if bound != hid:
                    raise _Miss
                return
            if hid in self.input_of or self._meta(value, hid) != self.template.input_metas[n]:
                raise _Miss
            self.inputs[n] = hid
            self.input_of[hid] = n
            self._bound.append(n)
            return
        kind = type(value)
        if kind in _PLAIN:   # the commonest literals, told without building their key
            if tag != "l" or len(role) != 3 or role[1] != kind.__name__ or role[2] != value:
                raise _Miss
            return
        if kind is slice:
            if tag != "slice":
                raise _Miss
            _, start, stop, step = role
            for part, expected in ((value.start, start), (value.stop, stop), (value.step, step)):
                if expected[0] == "s":   # (a moving bound: a parameter)
                    self._operand(part, expected)
                elif type(part) not in _PLAIN or expected[1] != type(part).__name__ \
                        or expected[2] != part:
                    raise _Miss
            return
        if kind is FixedDefinition:   # (a kernel's definition: its token)
            if role != value.key:
                raise _Miss
            return
        if self._handle(value) is not None:   # an array where the template has a value
            raise _Miss
        if tag == "tuple" or tag == "list":
            inner = role[1]
            if type(value).__name__ != tag or len(value) != len(inner):
                raise _Miss
            for v, r in zip(value, inner):
                self._match(v, r)
            return
        if tag == "dict":
            items = role[1]
            if type(value) is not dict or len(value) != len(items):
                raise _Miss
            for key, r in items:
                if key not in value:
                    raise _Miss
                self._match(value[key], r)
            return
        if literal_key(value) != role:
            raise _Miss

    def _handle(self, value: Any) -> int | None:
        if type(value) is self._array:
            if value._s is not self.session:
                raise _Miss
            return value._h
        return self.session._handle_of(value)

    def _meta(self, value: Any, hid: int) -> tuple | None:
        meta = getattr(value, "_m", None)
        return meta if meta is not None else self.session.meta.peek(hid)

    # ------------------------------------------------------------ the end
    def complete(self) -> list | None:
        """At the stretch's sync point: the replay entry (``T``) for this run, or None
        where it cannot be replayed (a fall-back is due)."""
        # the template of the ops taken, or another held stretch of the same ops whose drops
        # fit this run (a loop whose last result is kept in some runs and dropped in others);
        # the run's own first, before the others are even looked for
        own = self.template
        if len(own.ops) == self.i and self._drops_fit(own):
            template = own
        else:
            for template in self.templates.sharing(own, self.i):
                if len(template.ops) == self.i and self._switch(template) \
                        and self._drops_fit(template):
                    break
                if self.template is not own:
                    self._switch(own)
            else:
                return None
        results = self.results
        if template.unpredicted:
            freed = self._freed()
            need = [slot for slot in template.unpredicted if results[slot] not in freed]
        else:
            need = []
        # (a held stretch of the same ops may drop more arrays the ops never name: 0 for them)
        n_inputs = template.n_inputs
        inputs = self.inputs
        if len(inputs) == n_inputs and None not in inputs:
            inputs = list(inputs)
        else:
            inputs = [0 if h is None else h for h in inputs[:n_inputs]]
            inputs += [0] * (n_inputs - len(inputs))
        return [template.sid, self.first, inputs,
                self.params, results, need]

    def _freed(self) -> set[int]:
        """The handles the client dropped during the run, and since the stretch began."""
        freed = set(map(_second, self.frees))
        freed.update(self.session.stretch_frees)
        return freed

    def _dropped_results(self, template: StretchTemplate) -> set[int]:
        """The handles of this run's results that *template*'s stretch drops (its slots
        that this run has reached)."""
        results = self.results
        if template.drop_slots and template.drop_slots[-1] < len(results):
            return set(map(results.__getitem__, template.drop_slots))
        return {results[slot] for slot in template.drop_slots if slot < len(results)}

    def _drops_fit(self, template: StretchTemplate) -> bool:
        """Whether the client dropped all that *template*'s stretch drops (else the worker
        would drop an array the client holds). What the run keeps of its frees is worked
        out with it (:meth:`kept_frees`): the sets of ~20 handles are a good part of a sync
        point's cost."""
        frees, slots, results = self.frees, template.drop_slots, self.results
        if len(frees) == len(slots) and (not slots or slots[-1] < len(results)) \
                and list(map(_second, frees)) == list(map(results.__getitem__, slots)):
            dropped = None   # (the commonest: the frees are the dropped results, in order)
        else:
            dropped = self._dropped_results(template)   # (each must be among the frees)
            left = dropped.copy()
            left.difference_update(map(_second, frees))
            if left:
                left.difference_update(self.session.stretch_frees)
                if left:
                    return False
        if template.drops_inputs:   # (one the ops never name: none here, nothing held)
            freed, inputs = None, self.inputs
            for n in template.drops_inputs:
                if n < len(inputs) and inputs[n] is not None:
                    if freed is None:
                        freed = self._freed()
                    if inputs[n] not in freed:
                        return False
        self._kept = (template, len(frees),
                      [] if dropped is None else [hid for _at, hid in frees if hid not in dropped])
        return True

    def free_records(self) -> list[bytes]:
        """The client's frees met during the run, as free records (they follow the replay),
        but for the results its stretch drops: those never reach the worker's handle table,
        whatever becomes of the replay (a loop body of 20 ops would otherwise send, and the
        worker look up, 20 frees of handles it never held). Dropped inputs are still sent:
        a replay the worker cannot even read frees them only so."""
        kept = self.kept_frees()
        return [_pack_free(hid) for hid in kept] if kept else []

    def kept_frees(self) -> list[int]:
        """The handles of :meth:`free_records` (those :meth:`complete` worked out, where
        nothing has changed since)."""
        template = self.template
        known = self._kept
        if known is not None and known[0] is template and known[1] == len(self.frees):
            return list(known[2])
        dropped = self._dropped_results(template)
        return [hid for _at, hid in self.frees if hid not in dropped]

    def fall_back(self) -> tuple[list[bytes], list[tuple]]:
        """The ops taken so far as the records the client would have sent, with its frees
        where they came, and each op's (seq, label, file, line, result handle) for its
        origin; the session's key of the stretch goes on from them (StretchKey.resume)."""
        template, taken = self.template, self.i
        outs = list(self.results) + [0] * (template.n_results - len(self.results))
        ops = template.records.op_records(self.first, [0 if h is None else h for h in self.inputs],
                                          self.params, outs, taken)
        records: list[bytes] = []
        frees = self.frees
        at = 0
        for index in range(taken + 1):
            while at < len(frees) and frees[at][0] <= index:
                records.append(_pack_free(frees[at][1]))
                at += 1
            if index < taken:
                records.append(ops[index])
        origins = [(self.first + index, label, *site_line(site), self.hids[index])
                   for index, (label, site) in enumerate(self.lines)]
        self.session.stretches.current.resume(template.ops[:taken], self.inputs, self.params,
                                              self.hids, frees)
        return records, origins

    def origins(self) -> dict[int, tuple]:
        """Each op's origin (``Session._origin``'s entries), made only when a reply needs
        them (an error, a warning, a cancel)."""
        return {self.first + index: (label, *site_line(site), self.hids[index])
                for index, (label, site) in enumerate(self.lines)}


held_ops.run_class(TemplateRun, StretchTemplate)   # (the compiled operators read their slots)
