"""Stretch replay's graph tools for the NumPy device: a "graph" is the list of calls made
while capturing, and launching it makes those calls again on the same buffers.

A CUDA graph replays its kernels on the addresses it was captured with; here each recorded
call is made again and its result written into the array the capture returned (a view's
memory is the buffer's already). So the machinery around graphs — buffers, parameters in
0-d arrays, segments split around eager ops, guards, copies out and back — runs, and is
tested, where there is no GPU (docs/stretch-replay.md).
"""

from __future__ import annotations

import contextlib
import functools
import warnings
from typing import Any, Callable, Iterator

import numpy as np

from .cupy_graphs import NOTHING, Retained, layout_order, strided_span
from .product_capture import stretch_refusal

__all__ = ["HostGraphTools", "HostCopyTable", "LaunchError"]


class LaunchError(Exception):
    """A recorded call failed when launched again (a value the new inputs or parameters
    made wrong): *index* names the op, *error* is its own."""

    def __init__(self, index: int, error: BaseException) -> None:
        super().__init__(str(error))
        self.index, self.error = index, error


class _HostGraph(list):
    """The calls of one captured segment: (function, args, kwargs, the result it gave)."""


def _nothing(result: Any) -> None:
    """A recorded call's finish that keeps nothing (read_slots' copies)."""


class HostGraphTools:
    #: capturing runs the calls too (their results are needed as they are recorded)
    capture_runs = True

    def __init__(self) -> None:
        self._recording: _HostGraph | None = None
        #: (the executor, the replay's first op's sequence number) while a replay's graphs
        #: launch (StretchGraphs._replay): each recorded call sets the executor's ``seq`` to
        #: its op's, so that a warning it raises names that op's line (Executor.
        #: _capture_warning), as the op run eagerly would
        self.numbering: Any = None

    @contextlib.contextmanager
    def retaining(self) -> Iterator[Retained]:
        yield Retained()   # (host memory: nothing to keep apart)

    @staticmethod
    def unretained() -> contextlib.nullcontext:
        return NOTHING   # (nothing retained: cupy_graphs' allocations outside the graph's)

    @contextlib.contextmanager
    def capturing(self) -> Iterator[list]:
        result: list = []
        self._recording = graph = _HostGraph()
        try:
            yield result
        finally:
            self._recording = None
        result.append(graph)

    def capture_product(self, kind: str, name: str, target: Any, args: Any, kwargs: Any) -> Any:
        """None (the op's own call is recorded), but a product a GPU worker's capture could not
        make raises CuPy's refusal, as there (devices/product_capture.py)."""
        refusal = stretch_refusal(kind, name, target, args, kwargs)
        if refusal is not None:
            raise refusal
        return None

    def call(self, fn: Callable, args: list, kwargs: dict, finish: Callable[[Any], Any],
             index: int = -1, direct: Any = None) -> Any:
        """Make the call (recorded while capturing). *direct*: ``(ufunc, operands,
        keywords)`` that compute the same result as the call, elementwise: if, once made,
        the ufunc writing into the result's own memory gives its very bits, launches make
        it so (no allocation, no copy, none of the device's layers around the ufunc)."""
        result = finish(fn(*args, **kwargs))
        if self._recording is not None:
            if direct is not None and not _direct_gives(direct, result):
                direct = None
            self._recording.append((fn, args, kwargs, finish, result, index, direct))
        return result

    def launch(self, graph: _HostGraph) -> None:
        numbering = self.numbering
        for fn, args, kwargs, finish, kept, index, direct in graph:
            if numbering is not None:
                numbering[0].seq = numbering[1] + index
            try:
                if direct is not None:
                    ufunc, operands, keywords = direct
                    ufunc(*operands, out=kept, **keywords)
                    continue
                result = finish(fn(*args, **kwargs))
            except Exception as exc:
                raise LaunchError(index, exc) from None
            if type(kept) is np.ndarray and type(result) is np.ndarray and not _same_memory(kept, result):
                np.copyto(kept, result, casting="no")

    #: copies made apart from the graphs (:meth:`copy`): the figure ``copied``
    copied = 0

    def copy(self, dst: np.ndarray, src: np.ndarray) -> None:
        self.copied += 1
        np.copyto(dst, src, casting="no")

    copy_any = copy   # (NumPy copies any strides)

    def write(self, dst: np.ndarray, host: np.ndarray) -> None:
        np.copyto(dst, host, casting="no")

    @staticmethod
    def pinned(shape: tuple, dtype: np.dtype) -> np.ndarray:
        """GraphTools.pinned's: an upload's place a graph copies from (host memory)."""
        return np.empty(shape, dtype)

    @staticmethod
    def mark() -> None:
        """(A launch's work is done when it returns: nothing to wait for.)"""
        return None

    @staticmethod
    def passed(mark: Any) -> None:
        """(Nothing launched is still running.)"""

    @staticmethod
    def uploaded(host: np.ndarray) -> np.ndarray:
        """A new array holding *host* (an upload's frame, between a replay's graphs), its
        memory its own (not the message's)."""
        return host.copy()

    def writer(self, dst: np.ndarray, host: np.ndarray) -> Any:
        return functools.partial(np.copyto, dst, host, casting="no")

    def read_slots(self, arrays: list) -> tuple[_HostGraph, list, None]:
        """GraphTools.read_slots's: a recorded graph that copies each 0-d array into a slot
        of its own, and the slots (their own memory: nothing else to hold)."""
        graph, views = _HostGraph(), []
        for a in arrays:
            slot = np.empty((), a.dtype)
            graph.append((np.copyto, (slot, a), {"casting": "no"}, _nothing, None, -1, None))
            views.append(slot)
        return graph, views, None

    @staticmethod
    def wait() -> None:
        """(The NumPy device's work is done when its call returns.)"""

    def empty_like(self, a: np.ndarray) -> np.ndarray:
        return np.empty(a.shape, a.dtype, order=layout_order(a))

    @staticmethod
    def empty_strided(a: np.ndarray) -> np.ndarray:
        """A new array of *a*'s shape, dtype and very strides (positive ones), over memory
        of its own just as long as their span (GraphTools.empty_strided's)."""
        memory = np.empty(strided_span(a.shape, a.strides, a.itemsize), np.uint8)
        return np.ndarray(a.shape, a.dtype, buffer=memory, strides=a.strides)

    @staticmethod
    def sole_memory(a: np.ndarray) -> bool:
        """Whether no other array shares *a*'s memory without referring to *a* (NumPy's
        views, ``frombuffer`` and buffer exports all refer to it, which its caller
        counts): *a* owns memory NumPy allocated."""
        return a.base is None and a.flags.owndata

    def maker(self, a: np.ndarray) -> Any:
        return functools.partial(np.empty, a.shape, a.dtype, layout_order(a))

    def scalar_buffer(self, dtype: np.dtype) -> np.ndarray:
        return np.empty((), dtype)

    def param_block(self, nbytes: int) -> np.ndarray:
        return np.empty(nbytes, np.uint8)

    def scalar_in(self, block: np.ndarray, offset: int, dtype: np.dtype) -> np.ndarray:
        return block[offset:offset + dtype.itemsize].view(dtype).reshape(())

    def copy_table(self, block: np.ndarray, host: np.ndarray, offset: int, rows: int) -> "HostCopyTable":
        return HostCopyTable(rows)


class HostCopyTable:
    """The NumPy device's copy table (cupy_graphs.CopyTable): its rows are the arrays
    themselves, and :meth:`run`, recorded while capturing, copies them at each launch."""

    def __init__(self, rows: int) -> None:
        self.rows = rows
        self._pairs: list = [None] * rows

    def set(self, row: int, dst: np.ndarray, src: np.ndarray) -> None:
        self._pairs[row] = (dst, src)

    prepare = set   # (no size to keep: the arrays are the row)

    def commit(self) -> bool:
        """(The rows are the arrays themselves: nothing to write.)"""
        return False

    def run(self) -> None:
        for pair in self._pairs:
            if pair is not None and pair[0] is not pair[1]:
                np.copyto(pair[0], pair[1], casting="no")


def _same_memory(a: np.ndarray, b: np.ndarray) -> bool:
    if a is b:
        return True
    if not np.may_share_memory(a, b):   # (a fresh result: no look at its address)
        return False
    return (a.__array_interface__["data"][0] == b.__array_interface__["data"][0]
            and a.strides == b.strides and a.shape == b.shape)


def _direct_gives(direct: tuple, result: Any) -> bool:
    """Whether ``ufunc(*operands, out=result's memory)`` gives *result*'s bits: a fresh
    array of its own (never a view, never an operand), the same dtype, the same values."""
    ufunc, operands, keywords = direct
    if type(result) is not np.ndarray or result.base is not None or not result.flags.owndata \
            or not (result.flags.c_contiguous or result.flags.f_contiguous) \
            or any(operand is result or (type(operand) is np.ndarray and np.may_share_memory(operand, result))
                   for operand in operands):
        return False
    trial = np.empty_like(result)
    try:
        with warnings.catch_warnings():   # (the call warned already: the trial must not again)
            warnings.simplefilter("ignore")
            ufunc(*operands, out=trial, **keywords)
    except Exception:
        return False
    return trial.dtype == result.dtype and trial.tobytes() == result.tobytes()
