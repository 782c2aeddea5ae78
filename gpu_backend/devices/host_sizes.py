"""What an op on the NumPy device is about to allocate, known before it runs.

On a GPU, CuPy's memory pool refuses an allocation past the session's limit before
it happens. NumPy has no such pool: the handle table counts an array against the limit
once it exists, so ``outer(ones(14142), ones(14142))`` under a 64 MiB quota took the
worker to 1.6 GB before the error. Ops whose output size follows from their arguments
(every ufunc and its ``outer``, the arithmetic operators, ``outer``, ``kron``, ``matmul``
and ``dot``, ``tile``, ``repeat``, ``concatenate`` and ``stack``) are sized here first and
refused before NumPy allocates; what no rule covers is bounded by the worker's data
limit (:func:`limit_process_data`), which turns NumPy's own failure into the same
``OutOfMemoryError``.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

__all__ = ["sized_table", "sized_operators", "sized_methods", "limit_process_data", "data_in_use",
           "OPERATOR_UFUNCS"]

#: operator names (api.OPERATORS) that make a new array, by the ufunc they run
OPERATOR_UFUNCS = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "truediv": np.true_divide,
    "floordiv": np.floor_divide, "mod": np.remainder, "pow": np.power, "and_": np.bitwise_and,
    "or_": np.bitwise_or, "xor": np.bitwise_xor, "lshift": np.left_shift,
    "rshift": np.right_shift, "lt": np.less, "le": np.less_equal, "eq": np.equal,
    "ne": np.not_equal, "ge": np.greater_equal, "gt": np.greater, "neg": np.negative,
    "pos": np.positive, "abs": np.absolute, "invert": np.invert,
}


def _dtype_of(value: Any) -> Any:
    """What ``ufunc.resolve_dtypes`` takes for an argument: an array's dtype, a Python
    scalar's type (NEP 50's weak scalars)."""
    if isinstance(value, (np.ndarray, np.generic)):
        return value.dtype
    if isinstance(value, (bool, int, float, complex)):
        return type(value)
    return np.asarray(value).dtype


def _shape(value: Any) -> tuple:
    return value.shape if isinstance(value, (np.ndarray, np.generic)) else np.shape(value)


def ufunc_bytes(ufunc: np.ufunc, args: tuple, kwargs: dict) -> int | None:
    """Bytes a call of *ufunc* allocates for its outputs (None: unknown, or none)."""
    if kwargs.get("out") is not None or len(args) != ufunc.nin or ufunc.signature:
        return None
    try:
        shape = np.broadcast_shapes(*(_shape(a) for a in args))
        dtype = kwargs.get("dtype")
        given = (*(_dtype_of(a) for a in args), *([None] * ufunc.nout))
        # (no signature= at all when none is asked for: NumPy 2.4 refuses signature=None)
        dtypes = ufunc.resolve_dtypes(given) if dtype is None else ufunc.resolve_dtypes(
            given, signature=(*([None] * ufunc.nin), *([np.dtype(dtype)] * ufunc.nout)))
    except (TypeError, ValueError, np.exceptions.DTypePromotionError):
        return None   # NumPy reports the problem itself when the call runs
    count = math.prod(shape)
    return sum(count * d.itemsize for d in dtypes[ufunc.nin:])


def outer_bytes(ufunc: np.ufunc, args: tuple, kwargs: dict) -> int | None:
    """``ufunc.outer(a, b)``: a result of shape ``a.shape + b.shape``."""
    if kwargs.get("out") is not None or len(args) != 2:
        return None
    try:
        a, b = args
        dtypes = ufunc.resolve_dtypes((_dtype_of(a), _dtype_of(b), *([None] * ufunc.nout)))
    except (TypeError, ValueError, np.exceptions.DTypePromotionError):
        return None
    count = math.prod(_shape(args[0])) * math.prod(_shape(args[1]))
    return sum(count * d.itemsize for d in dtypes[2:])


def _result_itemsize(*values: Any) -> int:
    try:
        return np.result_type(*(_dtype_of(v) for v in values)).itemsize
    except (TypeError, ValueError, np.exceptions.DTypePromotionError):
        return 1


def _outer_function(args: tuple, kwargs: dict) -> int | None:   # numpy.outer: flattened
    if len(args) != 2 or kwargs.get("out") is not None:
        return None
    return math.prod(_shape(args[0])) * math.prod(_shape(args[1])) * _result_itemsize(*args)


def _kron(args: tuple, kwargs: dict) -> int | None:
    if len(args) != 2:
        return None
    return math.prod(_shape(args[0])) * math.prod(_shape(args[1])) * _result_itemsize(*args)


def _matmul(args: tuple, kwargs: dict) -> int | None:
    """``a @ b`` (and ``dot`` of matrices): the batch shape broadcast, then (n, m)."""
    if len(args) != 2 or kwargs.get("out") is not None:
        return None
    a, b = (_shape(x) for x in args)
    if len(a) < 2 or len(b) < 2:
        return None   # vectors: a result no larger than its inputs
    try:
        batch = np.broadcast_shapes(a[:-2], b[:-2])
    except ValueError:
        return None
    return math.prod(batch) * a[-2] * b[-1] * _result_itemsize(*args)


def _tile(args: tuple, kwargs: dict) -> int | None:
    if len(args) != 2:
        return None
    reps = args[1] if isinstance(args[1], (list, tuple)) else (args[1],)
    try:
        times = math.prod(int(r) for r in reps)
    except (TypeError, ValueError):
        return None
    return max(times, 0) * math.prod(_shape(args[0])) * _result_itemsize(args[0])


def _repeat(args: tuple, kwargs: dict) -> int | None:
    if len(args) < 2:
        return None
    if not isinstance(args[1], (int, np.integer)):
        return None   # per-element counts: no larger than their sum, left to the data limit
    return max(int(args[1]), 0) * math.prod(_shape(args[0])) * _result_itemsize(args[0])


def _joined(args: tuple, kwargs: dict) -> int | None:   # concatenate, stack, ...
    if not args or not isinstance(args[0], (list, tuple)) or kwargs.get("out") is not None:
        return None
    parts = args[0]
    return sum(math.prod(_shape(p)) for p in parts) * _result_itemsize(*parts) if parts else None


_FUNCTION_SIZES: dict[str, Callable[[tuple, dict], int | None]] = {
    "outer": _outer_function, "kron": _kron, "matmul": _matmul, "dot": _matmul,
    "tile": _tile, "repeat": _repeat, "concatenate": _joined, "stack": _joined,
    "vstack": _joined, "hstack": _joined, "dstack": _joined, "column_stack": _joined,
}


class _Sized:
    """*fn*, called only once *check* has passed the bytes *size* says it will allocate;
    everything else about it (a ufunc's ``types``, ``nin``, ...) is the function's own."""

    __slots__ = ("__wrapped__", "_size", "_check")

    def __init__(self, fn: Callable, size: Callable[[tuple, dict], int | None],
                 check: Callable[[int], None]) -> None:
        self.__wrapped__, self._size, self._check = fn, size, check

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        nbytes = self._size(args, kwargs)
        if nbytes:
            self._check(nbytes)
        return self.__wrapped__(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.__wrapped__, name)


_sized = _Sized


def sized_table(functions: dict[str, Callable], check: Callable[[int], None]) -> dict[str, Callable]:
    """*functions* (name -> callable) with the allocating ones checked by *check(nbytes)*
    before they run."""
    table = dict(functions)
    for name, fn in functions.items():
        if isinstance(fn, np.ufunc):
            table[name] = _sized(fn, lambda a, k, u=fn: ufunc_bytes(u, a, k), check)
        elif name.endswith(".outer") and isinstance(getattr(fn, "__self__", None), np.ufunc):
            table[name] = _sized(fn, lambda a, k, u=fn.__self__: outer_bytes(u, a, k), check)
        elif name in _FUNCTION_SIZES:
            table[name] = _sized(fn, _FUNCTION_SIZES[name], check)
    return table


def sized_operators(operators: dict[str, Callable], check: Callable[[int], None]) -> dict[str, Callable]:
    """The arithmetic operators that make a new array, checked before they run (the
    in-place ones write into their left operand)."""
    table = dict(operators)
    for name, ufunc in OPERATOR_UFUNCS.items():
        if name in table:
            table[name] = _sized(table[name], lambda a, k, u=ufunc: ufunc_bytes(u, a, k), check)
    if "matmul" in table:
        table["matmul"] = _sized(table["matmul"], _matmul, check)
    return table


def sized_methods(methods: dict[str, Callable], check: Callable[[int], None]) -> dict[str, Callable]:
    """The array methods that make a new array of a size their arguments give (``repeat``),
    checked before they run."""
    table = dict(methods)
    if "repeat" in table:
        table["repeat"] = _sized(table["repeat"], _repeat, check)
    return table


def data_in_use() -> int | None:
    """This process's data segment and private mappings now (VmData), bytes; None if unknown."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmData:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def limit_process_data(session_limit: int, slack: int = 768 << 20) -> int | None:
    """Cap this worker's private memory at what it uses now, plus twice the session's limit
    (NumPy's temporaries), plus *slack* (the buffers OpenBLAS's threads allocate when they
    first run, tens of MB each, and the interpreter's own growth): an op that no rule sizes
    fails with NumPy's MemoryError (reported as ``OutOfMemoryError``) instead of taking the
    host's memory. (OpenBLAS ends the process where its own allocation fails: the slack is
    what keeps it clear of the cap.)
    Returns the cap, or None where the system cannot set it (never lowers a cap set by the
    operator)."""
    try:
        import resource
    except ImportError:
        return None
    now = data_in_use()
    if now is None or not hasattr(resource, "RLIMIT_DATA"):
        return None
    cap = now + 2 * session_limit + slack
    soft, hard = resource.getrlimit(resource.RLIMIT_DATA)
    if hard != resource.RLIM_INFINITY:
        cap = min(cap, hard)
    if soft != resource.RLIM_INFINITY and soft < cap:
        return soft
    try:
        resource.setrlimit(resource.RLIMIT_DATA, (cap, hard))
    except (ValueError, OSError):
        return None
    return cap

