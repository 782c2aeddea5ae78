"""Long ops cut into pieces a quantum long, so that the arbiter can hand the device over
between them (issue 38; docs/fair-share.md, "Long ops").

A kernel cannot be preempted: beside a user whose GEMMs run 22 ms, everyone else waits
up to 22 ms for the device whatever the arbiter decides. Many long ops are made of
independent slices of their output: a GEMM's row blocks, an elementwise op's ranges, a
reduction over the inner axes by rows, a batched FFT by batch. Computed slice by slice
into one output, with the pacer looking at its lease between the slices, such an op
holds the device for one piece at a time.

Only where the pieces give bitwise what the whole op gives. Whether they do is the
library's choice (cuBLAS picks its kernel by shape: on an H100 fp32 row blocks of 512
rows are equal to the whole GEMM, blocks of 256 are not; benchmarks/split_probe.py), so
the worker checks it on its own device, once per *class* (the op, its arguments' shapes,
dtypes and strides): the first time an op of a class runs, it runs whole and is timed;
if it ran longer than two pieces, the next op of the class runs in pieces and whole, is
timed again and compared bit for bit, and the class is split from then on only if the
bits were equal. That costs one extra op and two waits for the device, once per class. Ops that write into ``out=`` or take anything
but the plain arguments are never split.

Only a paced worker (``fair`` and ``fifo``) splits: without an arbiter CUDA's
time-slicing shares the device, and pieces would only cost launches. And only when asked
(``GPUWB_SPLIT_PIECE_US``): on H100 hosts the pieces' hand-overs cost the long user and the
device more than the shares gained (docs/fair-share.md, "Long ops").
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from ..devices.host_sizes import OPERATOR_UFUNCS
from ..protocol import api
from ..protocol.messages import KIND_METHOD, KIND_OPERATOR

__all__ = ["Splitter", "Interrupted", "PIECE_SECONDS", "GEMM_ALIGN"]

#: Device seconds a piece of a split op should take at most: an arbiter's hand-over waits
#: for about one piece (the interactive target is 2 ms in all).
PIECE_SECONDS = 0.001
#: Rows of a GEMM's row block are a multiple of this: on an H100 cuBLAS keeps the whole
#: GEMM's kernel for fp32 blocks of 512 rows and more, not 256 (run 78).
GEMM_ALIGN = 512
#: A class whose split was not equal is tried again with pieces twice as long, this many
#: times in all (each try runs the op once more, once per class).
TRIES = 3
#: Classes remembered (their verdicts); the oldest go first.
REMEMBERED = 1024
#: The least work an op must have to be timed at all, in a GEMM's multiply-adds and in
#: the elements an elementwise op, a reduction or an FFT reads: smaller ones never take a
#: piece's time and pay one dictionary lookup.
MIN_GEMM_MACS = 1 << 33
MIN_ELEMENTS = 1 << 24

_WHOLE = 0   # a class's verdict: never split

#: Operators that are ufuncs, by the ufunc's function name (``a + b`` is ``add(a, b)``).
#: (Not ``**``: a power by a scalar has fast paths, ``a ** 2`` need not be ``power(a, 2)``
#: to the bit, and a class keys a scalar by its type alone.)
_OPERATOR_NAMES = {op: ufunc.__name__ for op, ufunc in OPERATOR_UFUNCS.items() if op != "pow"}
#: Ufuncs with one output (``divmod``'s two cannot share one ``out``).
_UFUNCS = frozenset(name for name in api.UFUNCS if name in api.FUNCTIONS
                    and getattr(np, name).nout == 1)
_REDUCTIONS = frozenset("sum prod max min amax amin mean all any argmax argmin".split())
_FFTS = frozenset("fft.fft fft.ifft fft.rfft fft.irfft fft.hfft fft.ihfft".split())
_GEMMS = frozenset(("matmul", "dot"))
_NAMES = _GEMMS | _UFUNCS | _REDUCTIONS | _FFTS | frozenset(_OPERATOR_NAMES)


class Interrupted(Exception):
    """The batch was cancelled while a split op waited for the device between pieces."""


class _Cut:
    """How to compute an op slice by slice: along axis 0 of ``length`` rows, in multiples
    of ``align`` rows. ``piece(lo, hi, out)`` computes rows lo:hi into ``out`` (the whole
    output, or None for the first piece of an op whose pieces make their own arrays, which
    then returns its piece); ``alloc(first)`` makes the output (given the first piece's
    array where the pieces make their own)."""

    __slots__ = ("key", "length", "align", "piece", "alloc", "own")

    def __init__(self, key, length, align, piece, alloc, own=False) -> None:
        self.key, self.length, self.align = key, length, align
        self.piece, self.alloc, self.own = piece, alloc, own


class Splitter:
    """The worker's splitting of long ops (module docstring). *after_piece(executed)* is the
    pacer's look at the lease between two pieces of the batch's op number *executed* + 1:
    False when the batch was cancelled while waiting for the device."""

    def __init__(self, device: Any, after_piece: Callable[[int], bool],
                 piece_seconds: float = PIECE_SECONDS,
                 exclusive: Callable[[], bool] = lambda: True) -> None:
        self.device = device
        self.after_piece = after_piece
        #: whether the session has the device to itself now, so that an op's time is its own:
        #: a class is learnt only then (timed beside another session's kernels, three users'
        #: 0.76 ms GEMMs "took" over 2 ms in their warm-up and were cut: fairness run 86)
        self.exclusive = exclusive
        self.piece_seconds = piece_seconds
        #: the least work worth timing scales with the piece (tests make pieces tiny, so that
        #: the NumPy device's small ops split)
        self.min_macs = MIN_GEMM_MACS * piece_seconds / PIECE_SECONDS
        self.min_elements = MIN_ELEMENTS * piece_seconds / PIECE_SECONDS
        #: class -> rows per piece, _WHOLE, or (rows, tries left) while its pieces are checked
        self.verdicts: dict = {}
        #: ops run split, classes checked and found equal / not equal (figures, tests)
        self.split_ops = 0
        self.equal = 0
        self.unequal = 0
        self._array = device.array_type
        #: names whose ops may be split: any other op runs as it is, unlooked at
        self.names = _NAMES

    @property
    def touched(self) -> int:
        """Ops run in pieces or checked in pieces and found equal: a batch that had one is not
        held as a stretch (its graph would run the op whole)."""
        return self.split_ops + self.equal

    def figures(self) -> dict:
        """Ops run in pieces; op classes found to split equal, and long ones that did not."""
        return {"ops": self.split_ops, "equal": self.equal, "unequal": self.unequal}

    # ------------------------------------------------------------ the executor's call
    def run(self, kind: str, name: str, fn: Callable, args: list, kwargs: dict,
            executed: int) -> Any:
        """``fn(*args, **kwargs)``, in pieces if its class was found to split equal."""
        cut = self._cut_for(kind, name, args, kwargs)
        if cut is None:
            return fn(*args, **kwargs)
        verdict = self.verdicts.get(cut.key)
        if type(verdict) is int:
            if verdict == _WHOLE:
                return fn(*args, **kwargs)
            self.split_ops += 1
            return self._pieces(cut, verdict, executed)
        if not self.exclusive():
            return fn(*args, **kwargs)   # (learnt at a later op of its class, run alone)
        if verdict is None:
            return self._time_first(cut, fn, args, kwargs)
        return self._check(cut, verdict, fn, args, kwargs, executed)

    # ------------------------------------------------------------ learning a class
    def _time_first(self, cut: _Cut, fn: Callable, args: list, kwargs: dict) -> Any:
        """The first op of its class: whole (the user's result, errors and all), timed. If
        long enough for two pieces, the next op of the class checks the pieces (_check);
        else the class is never split."""
        whole, seconds = self._timed(fn, args, kwargs)
        rows = None
        if type(whole) is self._array and whole.flags.c_contiguous:
            rows = _rows_for(cut.length, cut.align, seconds, self.piece_seconds)
        self._remember(cut.key, _WHOLE if rows is None else (rows, TRIES))
        return whole

    def _check(self, cut: _Cut, pending: tuple, fn: Callable, args: list, kwargs: dict,
               executed: int) -> Any:
        """The next op of a class that looked long: in pieces (paced: the lease may pass
        between them), then whole, timed again; the user gets the whole op's result. The
        class is split from then on if the pieces gave its bits (on a result that is not one
        value throughout) and it is still long (a library's first call loads its kernels
        and makes its handles: an H100's first 6144² fp16 GEMM "took" over 2 ms, and its
        class was cut into 65 µs pieces that cost a lone loop 9 %, fairness run 85); pieces
        that differ are tried twice as long next time, TRIES times in all. The bits are
        those of this op's values: a kernel chosen by shape gives the same for every value,
        but a path that differs by value would pass unseen. Nothing but the whole op is
        non-preemptible, as unsplit."""
        rows, tries = pending
        try:
            pieces = self._pieces(cut, rows, executed)
        except Interrupted:
            raise
        except Exception:   # out of memory for a second output, a library's refusal
            pieces = None
        whole, seconds = self._timed(fn, args, kwargs)
        longer = _rows_for(cut.length, cut.align, 0.0, 0.0, at_least=2 * rows)
        if _rows_for(cut.length, cut.align, seconds, self.piece_seconds) is None:
            verdict = _WHOLE   # not long after all
        elif pieces is not None and self.device.same_bits(whole, pieces):
            if self.device.constant(whole):   # (zeros hide what another kernel sums differently:
                verdict = (rows, tries - 1) if tries > 1 else _WHOLE   # checked again, TRIES in all)
            else:
                verdict = rows
                self.equal += 1
        elif pieces is not None and tries > 1 and longer is not None:
            verdict = (longer, tries - 1)
        else:
            verdict = _WHOLE
            self.unequal += 1
        self._remember(cut.key, verdict)
        return whole

    def _remember(self, key: Any, verdict: Any) -> None:
        if key not in self.verdicts and len(self.verdicts) >= REMEMBERED:
            del self.verdicts[next(iter(self.verdicts))]
        self.verdicts[key] = verdict

    def _timed(self, fn: Callable, args: list, kwargs: dict) -> tuple[Any, float]:
        """``fn(*args, **kwargs)`` and its device seconds (waits for it)."""
        device = self.device
        start = device.marker()
        result = fn(*args, **kwargs)
        end = device.marker()
        while not device.reached(end):
            pass
        seconds = device.between(start, end)
        device.drop_marker(start)
        device.drop_marker(end)
        return result, seconds

    # ------------------------------------------------------------ running in pieces
    def _pieces(self, cut: _Cut, rows: int, executed: int) -> Any:
        """The op in row blocks of *rows*; between blocks the pacer looks at its lease
        (*executed*: the batch's ops before this one)."""
        out = None if cut.own else cut.alloc(None)
        lo = 0
        while lo < cut.length:
            hi = min(cut.length, lo + rows)
            piece = cut.piece(lo, hi, out)
            if out is None:
                out = cut.alloc(piece)
            lo = hi
            if lo < cut.length and not self.after_piece(executed):
                raise Interrupted
        return out

    def _empty(self, shape: tuple, dtype: Any) -> Any:
        """The split op's output, checked against the session's limit first as the op's own
        output would be (the NumPy device sizes creation calls before it makes them)."""
        self.device.check_allocation("empty", [shape], {"dtype": dtype})
        return self.device.functions["empty"](shape, dtype=dtype)

    # ------------------------------------------------------------ which ops, and how
    def _cut_for(self, kind: str, name: str, args: list, kwargs: dict) -> _Cut | None:
        if kind == KIND_OPERATOR:
            if name == "matmul":
                return self._gemm("matmul", args, kwargs, ("operator", name))
            ufunc = _OPERATOR_NAMES.get(name)
            return None if ufunc is None else self._elementwise(ufunc, args, kwargs, ("operator", name))
        if kind == KIND_METHOD:
            if name == "dot":
                return self._gemm("dot", args, kwargs, ("method", name))
            if name in _REDUCTIONS:
                return self._reduction(self.device.methods.get(name), args, kwargs, ("method", name))
            return None
        if name in _GEMMS:
            return self._gemm(name, args, kwargs, ("function", name))
        if name in _UFUNCS:
            return self._elementwise(name, args, kwargs, ("function", name))
        if name in _REDUCTIONS:
            return self._reduction(self.device.functions.get(name), args, kwargs, ("function", name))
        if name in _FFTS:
            return self._fft(self.device.functions.get(name), args, kwargs, ("function", name))
        return None

    def _gemm(self, fname: str, args: list, kwargs: dict, op: tuple) -> _Cut | None:
        """A 2-D GEMM by row blocks of its left operand: ``matmul(a[lo:hi], b, out=...)``."""
        if kwargs or len(args) != 2:
            return None
        a, b = args
        array = self._array
        if type(a) is not array or type(b) is not array or a.ndim != 2 or b.ndim != 2:
            return None
        m, k = a.shape
        n = b.shape[1]
        if m * k * n < self.min_macs or m < 2 * GEMM_ALIGN:
            return None
        fn = self.device.functions.get(fname)
        if fn is None:
            return None

        def alloc(_first: Any) -> Any:
            return self._empty((m, n), fn(a[:0], b).dtype)

        def piece(lo: int, hi: int, out: Any) -> None:
            fn(a[lo:hi], b, out=out[lo:hi])
        return _Cut((op, _shapes(args)), m, GEMM_ALIGN, piece, alloc)

    def _elementwise(self, ufunc: str, args: list, kwargs: dict, op: tuple) -> _Cut | None:
        """A ufunc of arrays of one shape (no broadcasting) and scalars, by ranges of axis 0."""
        if kwargs and set(kwargs) != {"dtype"}:
            return None
        array = self._array
        shape = None
        for x in args:
            if type(x) is array:
                if shape is None:
                    shape = x.shape
                elif x.shape != shape:
                    return None
            elif type(x) not in (int, float, complex, bool):
                return None
        if shape is None or not shape or math.prod(shape) < self.min_elements:
            return None
        fn = self.device.functions.get(ufunc)
        if fn is None:
            return None

        def sliced(lo: int, hi: int) -> list:
            return [x[lo:hi] if type(x) is array else x for x in args]

        def alloc(_first: Any) -> Any:
            return self._empty(shape, fn(*sliced(0, 0), **kwargs).dtype)

        def piece(lo: int, hi: int, out: Any) -> None:
            fn(*sliced(lo, hi), out=out[lo:hi], **kwargs)
        return _Cut((op, _shapes(args), _simple(kwargs)), shape[0], 1 if len(shape) > 1 else GEMM_ALIGN,
                    piece, alloc)

    def _reduction(self, fn: Callable | None, args: list, kwargs: dict, op: tuple) -> _Cut | None:
        """A reduction over axes other than 0, by rows: each row's result is its own."""
        if fn is None or not 1 <= len(args) <= 2 or not set(kwargs) <= {"axis", "keepdims", "dtype"}:
            return None
        a = args[0]
        if type(a) is not self._array or a.ndim < 2 or a.size < self.min_elements:
            return None
        axis = args[1] if len(args) == 2 else kwargs.get("axis")
        if "axis" in kwargs and len(args) == 2:
            return None
        axes = axis if type(axis) is tuple else (axis,)
        if not axes or any(type(x) is not int or not -a.ndim <= x < a.ndim for x in axes) \
                or any(x % a.ndim == 0 for x in axes):
            return None
        rest = {k: v for k, v in kwargs.items() if k != "axis"}
        if op[1] == "mean" and rest.get("dtype") is None and a.dtype.kind in "fc" and a.dtype.itemsize < 4:
            return None   # (NumPy sums float16 in float32 without out=, in float16 with it)
        m = a.shape[0]

        def alloc(_first: Any) -> Any:
            probe = fn(a[:0], axis=axis, **rest)
            return self._empty((m, *probe.shape[1:]), probe.dtype)

        def piece(lo: int, hi: int, out: Any) -> None:
            fn(a[lo:hi], axis=axis, out=out[lo:hi], **rest)
        return _Cut((op, _shapes(args[:1]), axes, _simple(rest)), m, 1, piece, alloc)

    def _fft(self, fn: Callable | None, args: list, kwargs: dict, op: tuple) -> _Cut | None:
        """A 1-D FFT along the last axis of a batch of rows, by batch. FFTs take no
        ``out``: each piece is its own array, copied into the output."""
        if fn is None or len(args) != 1 or not set(kwargs) <= {"n", "axis", "norm"}:
            return None
        a = args[0]
        if type(a) is not self._array or a.ndim < 2 or a.size < self.min_elements:
            return None
        if kwargs.get("axis", -1) not in (-1, a.ndim - 1):
            return None
        copyto = self.device.functions["copyto"]

        def alloc(first: Any) -> Any:
            out = self._empty((a.shape[0], *first.shape[1:]), first.dtype)
            copyto(out[:first.shape[0]], first)
            return out

        def piece(lo: int, hi: int, out: Any) -> Any:
            part = fn(a[lo:hi], **kwargs)
            if out is not None:
                copyto(out[lo:hi], part)
            return part
        return _Cut((op, _shapes(args), _simple(kwargs)), a.shape[0], 1, piece, alloc, own=True)


def _rows_for(length: int, align: int, seconds: float, piece_seconds: float,
              at_least: int = 0) -> int | None:
    """Rows per piece, a multiple of *align*, for pieces of about *piece_seconds* of an op
    that took *seconds* (or at least *at_least* rows); None if that leaves fewer than two
    pieces."""
    rows = at_least
    if not at_least:
        if seconds < 2 * piece_seconds:
            return None
        rows = -(-length // math.ceil(seconds / piece_seconds))
    rows = -(-rows // align) * align
    return rows if rows < length else None


def _shapes(args) -> tuple:
    """An op's arguments as a class: arrays by shape, dtype and strides, scalars by type."""
    return tuple((x.shape, x.dtype.str, x.strides) if hasattr(x, "strides") else type(x)
                 for x in args)


def _simple(kwargs: dict) -> tuple:
    return tuple(sorted((k, repr(v)) for k, v in kwargs.items()))
