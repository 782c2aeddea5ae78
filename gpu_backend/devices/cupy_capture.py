"""CuPy's graph API on a GPU worker: a client's capture is CuPy's own, on a stream of the
worker's (docs/architecture.md, "CuPy's graph API").

Every op of a session runs on the session's stream (the worker's default stream). While a
client's capture is *routed* (the client's current stream is capturing) the worker makes a
capture stream of its own current instead, so the ops the executor runs are captured by
CUDA exactly as a local program's would be, and CuPy raises what it raises during capture
(cuBLAS, cuRAND, cuSOLVER, cuSPARSE, host reads) itself. Captured work never runs, so the
capture stream need not wait for the session's work; a graph is launched (and uploaded) on
the session's stream, after everything issued before it. The worker's own work meanwhile
(markers, timers, a synchronize, the health probe) names the session's stream, never the
current one (devices/cupy_device.py).

The capture stream is non-blocking: the session's stream is the legacy default stream,
with which a blocking stream would synchronize implicitly, and the worker's own work on it
would then invalidate the client's capture. (A client's capture on a blocking stream makes
``Stream.null.is_capturing()`` raise as CuPy's does: the client answers that.)

Memory: while routed, every allocation goes through the session's own allocator (the pool's
limit and the user's quota count it) and is *retained* by the graph, as stretch replay's
captures are (devices/cupy_graphs.py): no block a graph reads or writes is handed to another
array while the graph lives, whatever the client drops. Dropping the graph gives it back.
"""

from __future__ import annotations

from typing import Any

from ..protocol.errors import CUDAError
from .cupy_graphs import Retained

__all__ = ["CupyCaptures", "CupyCapture", "CupyUserGraph"]

_ILLEGAL_STATE = "cudaErrorIllegalState: the operation cannot be performed in the present state"


class CupyUserGraph:
    """A client's captured graph: CuPy's ``Graph`` and the memory its capture allocated."""

    def __init__(self, graph: Any, retained: Retained) -> None:
        self.graph = graph
        self.retained = retained

    def nbytes(self) -> int:
        return self.retained.nbytes()


class CupyCapture:
    """One capture in progress on the capture stream, and what it allocated."""

    def __init__(self, cupy: Any, stream: Any) -> None:
        self.cp = cupy
        self.stream = stream
        self.retained = Retained()
        self._allocator: Any = None   # the retaining allocator's context while routed

    def route(self, on: bool, session_stream: Any) -> None:
        cp = self.cp
        if on:
            base = cp.cuda.get_allocator()
            kept = self.retained

            def malloc(size: int) -> Any:
                pointer = base(size)
                kept.append(pointer)
                return pointer

            self._allocator = cp.cuda.using_allocator(malloc)
            self._allocator.__enter__()
            self.stream.use()
        else:
            session_stream.use()
            allocator, self._allocator = self._allocator, None
            if allocator is not None:
                allocator.__exit__(None, None, None)


class CupyCaptures:
    """A GPU device's side of CuPy's graph API: at most one capture in progress, routed (the
    client's ops are captured) or paused (they run), and launches on the session's stream."""

    graph_type = CupyUserGraph

    def __init__(self, cupy: Any, session_stream: Any) -> None:
        self.cp = cupy
        self.session_stream = session_stream
        self.active: CupyCapture | None = None
        self.routed = False
        self._stream: Any = None   # the capture stream, made at the first capture

    def begin(self, mode: int | None, routed: bool) -> None:
        if self.active is not None:
            raise CUDAError(_ILLEGAL_STATE)
        if self._stream is None:
            self._stream = self.cp.cuda.Stream(non_blocking=True)
        capture = CupyCapture(self.cp, self._stream)
        self._stream.begin_capture(mode)   # (CuPy's default: relaxed; a bad mode raises)
        self.active = capture
        self.route(routed)

    def route(self, on: bool) -> None:
        if self.active is None:
            raise CUDAError(_ILLEGAL_STATE)
        if on != self.routed:
            self.active.route(on, self.session_stream)
            self.routed = on

    def end(self, keep: bool) -> CupyUserGraph | None:
        """End the capture: its graph (*keep*), or nothing (an aborted capture, whose memory
        goes back). CUDA's error (an invalidated capture) is raised as CuPy raises it; the
        capture has ended either way."""
        if self.active is None:
            raise CUDAError(_ILLEGAL_STATE)
        self.route(False)
        capture, self.active = self.active, None
        if not keep:
            try:
                capture.stream.end_capture()
            except Exception:   # (invalidated: ended all the same)
                pass
            return None
        return CupyUserGraph(capture.stream.end_capture(), capture.retained)

    def launch(self, graph: CupyUserGraph) -> None:
        graph.graph.launch(self.session_stream)

    def upload(self, graph: CupyUserGraph) -> None:
        graph.graph.upload(self.session_stream)

    def check_object_call(self, name: str, args: list) -> None:
        """CuPy refuses what it must itself on a GPU."""
