"""What stretch replay needs of CUDA (worker/graph_replay.py): capture on a stream of its
own, memory that stays the graph's, launches and copies on the session's stream.

Memory: while a stretch is captured, every allocation goes through the session's own
allocator (so the memory pool's limit and the user's quota count it) and is *retained*:
no block a graph reads or writes is ever handed back to the pool while the graph lives,
so no other array can be given it. Dropping the :class:`Retained` list gives it all back.
"""

from __future__ import annotations

import contextlib
from typing import Any, Iterator

import numpy as np

__all__ = ["GraphTools"]


class Retained(list):
    """The memory a captured stretch holds (``MemoryPointer`` objects)."""

    def nbytes(self) -> int:
        return sum(p.mem.size for p in self)


class GraphTools:
    #: capturing records launches without running them: a capture is launched after
    capture_runs = False

    def __init__(self, cupy: Any) -> None:
        self.cp = cupy
        self._runtime = cupy.cuda.runtime
        self._capture_stream = None

    # ------------------------------------------------------------ capture
    @contextlib.contextmanager
    def retaining(self) -> Iterator[Retained]:
        """Allocations made inside are kept for the graph (see the module's doc)."""
        cp = self.cp
        base = cp.cuda.get_allocator()
        kept = Retained()

        def malloc(size: int) -> Any:
            pointer = base(size)
            kept.append(pointer)
            return pointer

        with cp.cuda.using_allocator(malloc):
            yield kept

    @contextlib.contextmanager
    def capturing(self) -> Iterator[list]:
        """Work issued inside is captured, not run; the graph is ``result[0]`` after. The
        capture stream waits for nothing: nothing runs while it captures."""
        cp = self.cp
        if self._capture_stream is None:
            self._capture_stream = cp.cuda.Stream(non_blocking=True)
        stream = self._capture_stream
        result: list = []
        with stream:
            stream.begin_capture()
            try:
                yield result
            finally:
                graph = stream.end_capture()   # (raises if the capture was invalidated)
            result.append(graph)

    def call(self, fn: Any, args: list, kwargs: dict, finish: Any, index: int = -1,
             direct: Any = None) -> Any:
        """An op's call, captured when inside :meth:`capturing` (as any launch is);
        (*direct*: the NumPy device's, unused here)."""
        return finish(fn(*args, **kwargs))

    # ------------------------------------------------------------ replay
    def launch(self, graph: Any) -> None:
        graph.launch(self.cp.cuda.get_current_stream())

    def copy(self, dst: Any, src: Any) -> None:
        """Copy *src*'s bytes into *dst* (same layout) on the session's stream."""
        rt = self._runtime
        if src.nbytes:
            rt.memcpyAsync(dst.data.ptr, src.data.ptr, src.nbytes, rt.memcpyDeviceToDevice,
                           self.cp.cuda.get_current_stream().ptr)

    def write(self, dst: Any, host: np.ndarray) -> None:
        """Copy a small host array into *dst* on the session's stream (the driver stages
        pageable memory before returning, so *host* may go at once)."""
        rt = self._runtime
        rt.memcpyAsync(dst.data.ptr, host.ctypes.data, host.nbytes, rt.memcpyHostToDevice,
                       self.cp.cuda.get_current_stream().ptr)

    def empty_like(self, a: Any) -> Any:
        """A new array of *a*'s shape, dtype and strides (a contiguous *a*)."""
        order = "F" if a.flags.f_contiguous and not a.flags.c_contiguous else "C"
        return self.cp.empty(a.shape, a.dtype, order=order)

    def scalar_buffer(self, dtype: np.dtype) -> Any:
        return self.cp.empty((), dtype)

    def param_block(self, nbytes: int) -> Any:
        """Device bytes that hold a stretch's parameters, each a 0-d view (:meth:`scalar_in`):
        one copy writes them all before a launch."""
        return self.cp.empty(nbytes, np.uint8)

    def scalar_in(self, block: Any, offset: int, dtype: np.dtype) -> Any:
        """A 0-d array of *dtype* at *offset* bytes into *block*."""
        return self.cp.ndarray((), dtype, memptr=block.data + offset)
