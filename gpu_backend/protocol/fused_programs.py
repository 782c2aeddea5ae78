"""A ``cupy.fuse`` function as a program of ops: what the client traces and the pool fuses.

CuPy's ``fuse`` runs the user's function once per argument signature with stand-ins for
its arguments and compiles what the stand-ins saw into one kernel. The pool cannot run the
user's Python, and a fused function run as ordinary ops differs from CuPy's kernel in the
last bits (a fused reduction sums in its own order). So the client runs the function with
its own stand-ins (kernelproxy/fuse_trace.py) and sends what they saw as data: this
program. The pool's CuPy fuses a function that replays the program on CuPy's stand-ins
(gpu_backend/devices/fused_functions.py): CuPy sees the same calls in the same order as
locally, and builds the same kernel. Nothing of it is run as Python text.

The wire form, a kernel definition (``KIND_KERNEL``, name ``"fuse"``)::

    {"name": kernel name, "fusion": the client's number for the fused function (the pool's
     CuPy keeps a kernel cache per number, as CuPy keeps one per ``Fusion``),
     "params": number of the function's parameters,
     "ops": [[kind, name, target, [operand, ...], {keyword: operand}], ...],
     "out": [slot, ...], "multi": whether the function returned a tuple}

Slots ``0 .. params-1`` are the parameters; op *i*'s result is slot ``params + i``. An
operand is ``[SLOT, n]`` or ``[LITERAL, value]``; a method's target is an operand, any
other op's None. Kinds and names are restricted to what CuPy's fusion can trace
(ufuncs, its reductions, ``where``, ``clip``, ``astype``, Python's operators): anything else
the client runs unfused, as it always did.
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple

import numpy as np

from . import api
from . import messages as m
from .errors import ProtocolError

__all__ = ["SLOT", "LITERAL", "FUSABLE_FUNCTIONS", "FUSABLE_METHODS", "FUSABLE_OPERATORS",
           "FIELDS", "MAX_OPS", "MAX_PARAMS", "literal_allowed", "Program", "fused_writes",
           "check_program"]

SLOT, LITERAL = 0, 1

#: Ufuncs with more than one output: their call returns a tuple, which a stand-in cannot be
_MULTI_OUTPUT = frozenset({"divmod", "frexp", "modf"})

#: Functions CuPy's fusion traces: its single-output ufuncs and the routines that look for
#: a fusion in progress (cupy/_math/sumprod.py, _logic/truth.py, _statistics/order.py,
#: _sorting/search.py, _math/misc.py, _math/rounding.py, _math/arithmetic.py).
FUSABLE_FUNCTIONS = frozenset(
    name for name in (api.UFUNCS - _MULTI_OUTPUT - {"matmul"}) | {
        "sum", "prod", "nansum", "nanprod", "amax", "amin", "max", "min", "all", "any",
        "where", "clip", "copy", "real", "imag", "around", "round"}
    if name in api.FUNCTIONS)

#: The stand-ins' methods CuPy's fusion knows (its _FusionVarArray's)
FUSABLE_METHODS = frozenset({"sum", "prod", "max", "min", "all", "any", "astype", "copy",
                             "conj", "conjugate", "clip", "round"}) & frozenset(api.METHODS)

_BINARY = ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "and_", "or_", "xor",
           "lshift", "rshift")
#: Python's operators on stand-ins: arithmetic, comparisons, unary, in place
FUSABLE_OPERATORS = frozenset(
    _BINARY + ("lt", "le", "gt", "ge", "eq", "ne", "neg", "pos", "abs", "invert")
    + tuple("i" + name.rstrip("_") for name in _BINARY)) & frozenset(api.OPERATORS)

_NAMES = {m.KIND_FUNCTION: FUSABLE_FUNCTIONS, m.KIND_METHOD: FUSABLE_METHODS,
          m.KIND_OPERATOR: FUSABLE_OPERATORS}

#: The definition's fields
FIELDS = frozenset({"name", "fusion", "params", "ops", "out", "multi"})
#: Bounds on what one definition may hold (CuPy's own kernels take far fewer)
MAX_OPS, MAX_PARAMS = 4096, 256

#: CuPy's rule for a kernel's name (cupy/cuda/compiler.py, ``is_valid_kernel_name``)
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_LITERAL_SCALARS = (bool, int, float, complex, str, np.generic, np.dtype)


def literal_allowed(value: Any, depth: int = 0) -> bool:
    """Whether *value* may be a constant of a program: a number, a string, a dtype or a
    NumPy scalar type (``astype(cupy.float32)``), None, or a tuple or list of them (an
    axis); never an array."""
    if value is None or isinstance(value, _LITERAL_SCALARS):
        return True
    if isinstance(value, type):
        return issubclass(value, np.generic) or value in (bool, int, float, complex)
    if isinstance(value, (tuple, list)) and depth < 4 and len(value) <= 64:
        return all(literal_allowed(v, depth + 1) for v in value)
    return False


class Program(NamedTuple):
    """A checked definition: its kernel name, parameters, ops (kind, name, target, args,
    kwargs, each operand ``(is_slot, slot or value)``), output slots and tuple flag."""

    name: str
    params: int
    ops: tuple
    out: tuple
    multi: bool


def _operand(value: Any, slots: int) -> tuple:
    if type(value) is not list or len(value) != 2 or value[0] not in (SLOT, LITERAL):
        raise ProtocolError("a fused program's operand is [0, slot] or [1, literal]")
    tag, content = value
    if tag == SLOT:
        if type(content) is not int or not 0 <= content < slots:
            raise ProtocolError(f"a fused program names slot {content!r} before it exists")
        return (True, content)
    if not literal_allowed(content):
        raise ProtocolError(f"a fused program's constant may not be a {type(content).__name__}")
    return (False, content)


def check_program(definition: Any) -> Program:
    """*definition* checked field by field (ProtocolError where it is malformed, a name
    outside what CuPy's fusion traces included): the :class:`Program` it says."""
    if not isinstance(definition, dict) or set(definition) != FIELDS:
        raise ProtocolError(f"a fused program has exactly the fields {sorted(FIELDS)}")
    name, params, ops = definition["name"], definition["params"], definition["ops"]
    out, multi = definition["out"], definition["multi"]
    if type(name) is not str or len(name) > 200:
        raise ProtocolError("a fused program's kernel name is a string of at most 200 characters")
    if not _IDENTIFIER.match(name):   # (a lambda's "<lambda>": CuPy's own refusal)
        raise ValueError(f'Invalid kernel name: "{name}"')
    if type(definition["fusion"]) is not int:
        raise ProtocolError("a fused program's fusion number is an integer")
    if type(params) is not int or not 0 <= params <= MAX_PARAMS:
        raise ProtocolError(f"a fused program takes at most {MAX_PARAMS} parameters")
    if type(ops) is not list or len(ops) > MAX_OPS or type(multi) is not bool:
        raise ProtocolError(f"a fused program has a list of at most {MAX_OPS} ops")
    checked = []
    for op in ops:
        if type(op) is not list or len(op) != 5:
            raise ProtocolError("a fused program's op is [kind, name, target, args, kwargs]")
        kind, op_name, target, args, kwargs = op
        allowed = _NAMES.get(kind) if type(kind) is str else None
        if allowed is None or type(op_name) is not str or op_name not in allowed:
            raise ProtocolError(f"{op_name!r} is not an op CuPy's fusion traces")
        if type(args) is not list or type(kwargs) is not dict \
                or not all(type(k) is str for k in kwargs):
            raise ProtocolError("a fused program's op takes a list and a map of operands")
        slots = params + len(checked)
        if kind == m.KIND_METHOD:
            target = _operand(target, slots)
            if not target[0]:
                raise ProtocolError("a fused program's method is called on a slot")
        elif target is not None:
            raise ProtocolError("only a method has a target in a fused program")
        checked.append((kind, op_name, target, tuple(_operand(a, slots) for a in args),
                        {k: _operand(v, slots) for k, v in kwargs.items()}))
    total = params + len(checked)
    if type(out) is not list or not all(type(s) is int and 0 <= s < total for s in out) \
            or (not multi and len(out) > 1):
        raise ProtocolError("a fused program's outputs are slots it has")
    return Program(name, params, tuple(checked), tuple(out), multi)


def fused_writes(definition: Any) -> frozenset | None:
    """The parameters a fused program writes in place (``x += y``, ``cupy.add(x, y,
    out=x)``, and later such writes through the name the first one rebound), by position;
    None where *definition* cannot be read as a program (a replay then takes every array
    it is given as written, as for any kernel). Everything else a fused kernel makes is a
    new array. Read by the worker's replay (worker/stretch_replay.py, graph_replay.py)."""
    try:
        params, ops = definition["params"], definition["ops"]
        if type(params) is not int or type(ops) is not list:
            return None
        alias = {slot: slot for slot in range(params)}   # slot -> the parameter it is
        written = set()
        for index, (kind, name, _target, args, kwargs) in enumerate(ops):
            written_through = None
            out = kwargs.get("out") if type(kwargs) is dict else None
            if kind == m.KIND_OPERATOR and type(name) is str and name.startswith("i") \
                    and name in FUSABLE_OPERATORS and args:
                written_through = args[0]
            elif out is not None:
                written_through = out
            if written_through is not None:
                tag, slot = written_through
                if tag == SLOT and slot in alias:
                    written.add(alias[slot])
                    alias[params + index] = alias[slot]
        return frozenset(written)
    except (TypeError, ValueError, KeyError, IndexError):
        return None
