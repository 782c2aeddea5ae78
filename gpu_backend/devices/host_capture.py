"""CuPy's graph API on the NumPy device: a capture recorded as calls, launched by making
them again on the same arrays (docs/architecture.md, "CuPy's graph API").

On a GPU, ops issued while a stream captures are recorded into a graph and not run; a
launch runs them on the addresses they were captured with. Here there is no stream to
capture on, so while a capture is *routed* (the client's current stream is capturing) the
device's function, method and operator tables are swapped for wrappers that

* refuse what CuPy refuses while capturing (devices/capture_refusals.py: cuBLAS, cuRAND,
  cuSOLVER, cuSPARSE, reads of device data on the host), at the op that would raise;
* save, once, the memory of every array from before the capture that an op names (its
  root allocation: views and arrays made over memory named by address share it), and
* run the call (its results are needed as arrays of the right shape; their contents are
  what CuPy calls undefined until a launch), recording it with the result it gave.

When the capture ends, or pauses (the client made a stream that is not capturing
current), the saved memory is written back: arrays from before the capture are as if no
op of it had run, as on a GPU. A launch makes each recorded call again, in order, on the
same arrays (inputs read as they are then), and writes each result into the array the
capture returned where it is not that memory already (an in-place op's result is its
operand; a view's memory is its base's). The arrays a capture made stay the graph's while
it lives, counted against the session's memory as a GPU graph's retained memory is.
"""

from __future__ import annotations

import weakref
from typing import Any, Callable

import numpy as np

from ..protocol.errors import CUDAError
from ..protocol.stretch_records import instances_in
from . import capture_refusals as refusals
from .interface_views import HostInterfaceView

__all__ = ["HostCaptures", "HostCapture", "HostUserGraph", "CAPTURE_MODES"]

#: cudaStreamCaptureModeGlobal, ThreadLocal, Relaxed (CUDA's numbering, CuPy's names)
CAPTURE_MODES = (0, 1, 2)
_ILLEGAL_STATE = "cudaErrorIllegalState: the operation cannot be performed in the present state"
_INVALID_VALUE = "cudaErrorInvalidValue: invalid argument"


def root_of(array: np.ndarray) -> np.ndarray:
    """The array that owns *array*'s memory: views followed to their base, an array made
    over memory named by address to the array that owns that memory."""
    while True:
        base = array.base
        if isinstance(base, np.ndarray):
            array = base
        elif isinstance(base, HostInterfaceView) and isinstance(base.owner, np.ndarray):
            array = base.owner
        else:
            return array


def _as_arrays(value: Any) -> Any:
    """NumPy scalars as 0-d arrays (as the executor would store them), inside tuples and
    lists too: the recorded result must be the very array the session keeps, so that a
    launch can write into it."""
    if isinstance(value, np.generic):
        return np.asarray(value)
    if type(value) is tuple:
        return tuple(_as_arrays(v) for v in value)
    if type(value) is list:
        return [_as_arrays(v) for v in value]
    return value


def _same_memory(a: np.ndarray, b: np.ndarray) -> bool:
    return (a.__array_interface__["data"][0] == b.__array_interface__["data"][0]
            and a.strides == b.strides and a.shape == b.shape)


def _write_back(kept: Any, result: Any) -> None:
    """A launch's *result* of a call into the arrays the capture's call returned."""
    if type(kept) is np.ndarray and type(result) is np.ndarray:
        # (a result that owns its memory is a new allocation, never the kept array's: the
        # common case, decided without building the arrays' interface dicts)
        if result is not kept and (result.base is None or not _same_memory(kept, result)):
            np.copyto(kept, result, casting="no")
    elif type(kept) in (tuple, list) and type(result) in (tuple, list) \
            and len(kept) == len(result):
        for k, r in zip(kept, result):
            _write_back(k, r)


def _untrack_all(untrack: Callable[[Any], None], arrays: list) -> None:
    for array in arrays:
        untrack(array)


class HostUserGraph:
    """A captured graph: its recorded calls, and the arrays it made (counted against the
    session's memory until it is dropped)."""

    def __init__(self, device: Any, calls: list, made: list) -> None:
        self.calls = calls
        self.made = made
        self._release = weakref.finalize(self, _untrack_all, device.untrack, made)

    def launch(self) -> None:
        for fn, args, kwargs, kept in self.calls:
            _write_back(kept, _as_arrays(fn(*args, **kwargs)))

    def nbytes(self) -> int:
        return sum(a.nbytes for a in self.made)


class HostCapture:
    """One capture in progress: the calls recorded, the arrays it made, the saved memory of
    the arrays from before it that its ops named."""

    def __init__(self, device: Any) -> None:
        self.device = device
        self.calls: list = []
        #: roots of the arrays the capture made, by id (kept alive by the calls that made them)
        self._made: dict[int, np.ndarray] = {}
        #: roots from before the capture its ops named, by id: (root, its saved contents or
        #: None where it cannot be written)
        self._saved: dict[int, tuple[np.ndarray, np.ndarray | None]] = {}

    def call(self, fn: Callable, args: tuple, kwargs: dict) -> Any:
        """Make one call of the capture and record it."""
        self._save((args, kwargs))
        result = _as_arrays(fn(*args, **kwargs))
        self._note_made(result)
        self.calls.append((fn, args, kwargs, result))
        return result

    def _save(self, operands: Any) -> None:
        made, saved = self._made, self._saved
        for array in instances_in(operands, np.ndarray):
            root = root_of(array)
            key = id(root)
            if key in made or key in saved:
                continue
            saved[key] = (root, root.copy() if root.flags.writeable and root.size else None)

    def _note_made(self, result: Any) -> None:
        """The result's new allocations are the capture's, counted against the session
        (the executor stores them too: the count is per allocation, not per holder)."""
        made, saved = self._made, self._saved
        new = []
        try:
            for array in instances_in(result, np.ndarray):
                root = root_of(array)
                key = id(root)
                if key in made or key in saved:
                    continue
                self.device.track(root)   # (OutOfMemoryError past the session's memory)
                made[key] = root
                new.append(key)
        except BaseException:
            for key in new:
                self.device.untrack(made.pop(key))
            raise

    def restore(self) -> None:
        """Write back the saved memory of the arrays from before the capture, and forget it
        (a capture that goes on saves afresh what its later ops name)."""
        for root, contents in self._saved.values():
            if contents is not None:
                np.copyto(root, contents, casting="no")
        self._saved.clear()

    def graph(self) -> HostUserGraph:
        return HostUserGraph(self.device, self.calls, list(self._made.values()))

    def discard(self) -> None:
        """An aborted capture: the arrays it made are no longer held for a graph."""
        _untrack_all(self.device.untrack, list(self._made.values()))
        self._made.clear()
        self.calls = []


class HostCaptures:
    """The NumPy device's side of CuPy's graph API: at most one capture in progress, routed
    (the client's ops are recorded) or paused (they run), and launches."""

    graph_type = HostUserGraph

    def __init__(self, device: Any) -> None:
        self.device = device
        self.active: HostCapture | None = None
        #: whether ops are recorded now (the client's current stream is capturing)
        self.routed = False
        self._plain: tuple | None = None     # the device's tables while routed
        self._wrapped: tuple | None = None   # built at the first capture, kept

    # ------------------------------------------------------------ capture
    def begin(self, mode: int | None, routed: bool) -> None:
        if self.active is not None:
            raise CUDAError(_ILLEGAL_STATE)
        if mode is not None and mode not in CAPTURE_MODES:
            raise CUDAError(_INVALID_VALUE)
        self.active = HostCapture(self.device)
        self.route(routed)

    def route(self, on: bool) -> None:
        """Record the client's ops (*on*) or run them (a stream that is not capturing);
        pausing writes back the memory the capture saved, so that they see it as it was."""
        if self.active is None:
            raise CUDAError(_ILLEGAL_STATE)
        if on == self.routed:
            return
        device = self.device
        if on:
            self._plain = (device.functions, device.methods, device.operators)
            device.functions, device.methods, device.operators = self._tables()
        else:
            device.functions, device.methods, device.operators = self._plain
            self._plain = None
            self.active.restore()
        self.routed = on

    def end(self, keep: bool) -> HostUserGraph | None:
        """End the capture: its graph (*keep*), or nothing (an aborted capture)."""
        if self.active is None:
            raise CUDAError(_ILLEGAL_STATE)
        self.route(False)
        capture, self.active = self.active, None
        if keep:
            return capture.graph()
        capture.discard()
        return None

    # ------------------------------------------------------------ graphs
    def launch(self, graph: HostUserGraph) -> None:
        graph.launch()

    def upload(self, graph: HostUserGraph) -> None:
        """Nothing to upload: the host's calls are ready."""

    # ------------------------------------------------------------ the tables
    def _tables(self) -> tuple:
        """The device's tables with every entry recorded and checked (built once)."""
        plain = self._plain
        key = tuple(id(table) for table in plain)
        if self._wrapped is None or self._wrapped[0] != key:
            self._wrapped = (key, tuple(
                {name: self._recorded(kind, name, fn) for name, fn in table.items()}
                for kind, table in zip("fmo", plain)))
        return self._wrapped[1]

    def _recorded(self, kind: str, name: str, fn: Callable) -> Callable:
        rule = refusals.op_refusal(kind, name)
        captures = self

        def captured(*args: Any, **kwargs: Any) -> Any:
            if rule is not None:
                error = rule(args, kwargs)
                if error is not None:
                    raise error
            return captures.active.call(fn, args, kwargs)

        captured.__name__ = getattr(fn, "__name__", name)
        for attribute in ("types", "resolved"):   # (what ``ufunc.types`` asks of an entry)
            if hasattr(fn, attribute):
                setattr(captured, attribute, getattr(fn, attribute))
        return captured

    def check_object_call(self, name: str, args: list) -> None:
        """A remote object's method while routed: refused where CuPy refuses it, or where
        the NumPy device cannot record it (devices/capture_refusals.py)."""
        if self.routed:
            error = refusals.object_refusal(name, args)
            if error is not None:
                raise error

