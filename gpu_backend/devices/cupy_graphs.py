"""What stretch replay needs of CUDA (worker/graph_replay.py): capture on a stream of its
own, memory that stays the graph's, launches and copies on the session's stream.

Copies in and out: a replay's inputs go into the graph's buffers, and its kept results out
into fresh arrays, by one kernel inside the graph (:class:`CopyTable`) that reads where from
and where to from the stretch's parameter block, written with its parameters by one copy
before the launch. (A ``cudaMemcpyAsync`` each cost 5-8 µs of the worker's time on an H200
host: two inputs and two results, a quarter of a 20-op loop's replay.)

Memory: while a stretch is captured, every allocation goes through the session's own
allocator (so the memory pool's limit and the user's quota count it) and is *retained*:
no block a graph reads or writes is ever handed back to the pool while the graph lives,
so no other array can be given it. Dropping the :class:`Retained` list gives it all back.
"""

from __future__ import annotations

import contextlib
import functools
import struct
from sys import getrefcount
from typing import Any, Iterator

import numpy as np

from .cupy_products import CapturedProducts
from .product_capture import product_operands

__all__ = ["GraphTools", "CopyTable", "layout_order", "strided_span", "NOTHING"]

#: a context that does nothing, entered again and again (``unretained`` outside a capture)
NOTHING = contextlib.nullcontext()

#: Copies each (source, destination, bytes) row of a table in device memory, in 16-byte
#: words where all three allow, else byte by byte.
_COPIES_SOURCE = r"""
extern "C" __global__ void gpuwb_table_copies(const unsigned long long* table, int rows) {
    const size_t step = (size_t)gridDim.x * blockDim.x;
    const size_t first = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    for (int r = 0; r < rows; ++r) {
        const unsigned long long src = table[3 * r], dst = table[3 * r + 1], size = table[3 * r + 2];
        if (src == dst) continue;
        if (((src | dst | size) & 15ULL) == 0) {
            const uint4* s = (const uint4*)src;
            uint4* d = (uint4*)dst;
            for (size_t i = first; i < size / 16; i += step) d[i] = s[i];
        } else {
            const unsigned char* s = (const unsigned char*)src;
            unsigned char* d = (unsigned char*)dst;
            for (size_t i = first; i < size; i += step) d[i] = s[i];
        }
    }
}
"""
#: threads a block of the copies' kernel, and the most blocks it is launched with
_THREADS, _MAX_BLOCKS = 256, 1024


class CopyTable:
    """Copies a graph makes at each launch: row *i* copies an array's bytes into another of
    the same layout. The rows (``uint64``: source, destination, bytes) are kept in a list,
    packed by :meth:`commit` into the host block (*host*, at *offset*) that the caller
    copies into the device block the kernel reads (*device*) before each launch: both are
    parts of the stretch's parameter block and its host copy. :meth:`run`, called while
    capturing, puts the kernel into the graph."""

    def __init__(self, kernel: Any, host: np.ndarray, offset: int, rows: int, device: Any) -> None:
        self._kernel, self.device = kernel, device
        self._host, self._offset = host, offset
        self.rows = rows
        self._flat = [0] * (3 * rows)
        self._packing = struct.Struct(f"<{3 * rows}Q")
        self._blocks = 1
        self.changed = True

    def prepare(self, row: int, dst: Any, src: Any) -> None:
        """While capturing: row *row* copies *src* into *dst* (the same layout, contiguous),
        its size now and at every launch (a replay's guards keep its arrays' layouts)."""
        nbytes = src.nbytes
        self._flat[3 * row + 2] = nbytes
        self._blocks = max(self._blocks, min(_MAX_BLOCKS, max(1, -(-nbytes // (16 * _THREADS)))))
        self.set(row, dst, src)
        self.commit()

    def set(self, row: int, dst: Any, src: Any) -> None:
        """At a replay: row *row* copies *src* into *dst* (arrays of the size it was prepared
        with)."""
        flat, at = self._flat, 3 * row
        source, destination = src.data.ptr, dst.data.ptr
        if flat[at] != source or flat[at + 1] != destination:
            flat[at], flat[at + 1] = source, destination
            self.changed = True

    def commit(self) -> bool:
        """The rows into the host block, if any changed since the last commit (one call: a
        NumPy assignment a row cost ~2 µs); whether they had."""
        if not self.changed:
            return False
        self._packing.pack_into(self._host, self._offset, *self._flat)
        self.changed = False
        return True

    def run(self) -> None:
        """Launch the copies (captured: at every launch of the graph, the rows then set)."""
        self._kernel((self._blocks,), (_THREADS,), (self.device, np.int32(self.rows)))


def layout_order(a: Any) -> str:
    """The order of a fresh array laid out as contiguous *a* is: ``F`` for Fortran's only."""
    flags = a.flags
    return "F" if flags.f_contiguous and not flags.c_contiguous else "C"


def strided_span(shape: tuple, strides: tuple, itemsize: int) -> int:
    """The bytes an array of *shape* and positive *strides* spans, from its first element
    to the end of its last."""
    if 0 in shape:
        return 0
    return itemsize + sum((n - 1) * s for n, s in zip(shape, strides))


class Retained(list):
    """The memory a captured stretch holds (``MemoryPointer`` objects)."""

    def nbytes(self) -> int:
        return sum(p.mem.size for p in self)


class _SlotBlock:
    """Page-locked bytes that read graphs copy values into (GraphTools.read_slots), given
    back to their :class:`_SlotBlocks` when nothing holds them any more."""

    def __init__(self, blocks: "_SlotBlocks", pinned: Any, host: np.ndarray) -> None:
        self.blocks, self.pinned, self.host = blocks, pinned, host

    def __del__(self) -> None:
        try:
            self.blocks.give_back(self.pinned, self.host)
        except Exception:   # (at the interpreter's exit: nothing to give back to)
            pass


class _SlotBlocks:
    """The read graphs' page-locked memory, never handed back to CuPy's pinned pool: a block
    let go while its graph's copy may still be on its way is reused only after a wait for
    the stream it was launched on (:attr:`epoch`, GraphTools.wait). Back in the pool, it
    could have been handed to a host write that the late copy then overwrote (an upload's
    staging buffer, say)."""

    def __init__(self, cupy: Any) -> None:
        self.cp = cupy
        #: how many waits for the session's stream there have been
        self.epoch = 0
        #: blocks let go: (the epoch then, their memory, its bytes)
        self.free: list = []

    def take(self, nbytes: int) -> _SlotBlock:
        for i in range(len(self.free)):
            epoch, pinned, host = self.free[i]
            if epoch < self.epoch and host.nbytes >= nbytes:
                del self.free[i]
                return _SlotBlock(self, pinned, host)
        pinned = self.cp.cuda.alloc_pinned_memory(nbytes)
        return _SlotBlock(self, pinned, np.frombuffer(pinned, np.uint8, nbytes))

    def give_back(self, pinned: Any, host: np.ndarray) -> None:
        self.free.append((self.epoch, pinned, host))


class GraphTools:
    #: capturing records launches without running them: a capture is launched after
    capture_runs = False
    #: (the NumPy device's: its recorded calls number the warnings they raise; a CUDA
    #: graph's launch raises none)
    numbering = None

    def __init__(self, cupy: Any) -> None:
        self.cp = cupy
        self._runtime = cupy.cuda.runtime
        self._capture_stream = None
        self._copies_kernel = None
        self._products = None   # (CapturedProducts, made at the first product captured)
        self._slot_blocks: _SlotBlocks | None = None   # (read_slots' memory)
        self._outer_allocator = None   # (the allocator outside retaining(), while inside it)

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

        outer, self._outer_allocator = self._outer_allocator, base
        try:
            with cp.cuda.using_allocator(malloc):
                yield kept
        finally:
            self._outer_allocator = outer

    def unretained(self) -> Any:
        """Inside :meth:`retaining`, allocations that are not the graph's (a download's
        copies, made as a capture's replay closes: GraphReplay's ``_run_eager``) go to the
        allocator outside it and are freed as usual; elsewhere (every replay but a
        capture's) a context that does nothing."""
        if self._outer_allocator is None:
            return NOTHING
        return self.cp.cuda.using_allocator(self._outer_allocator)

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

    def capture_product(self, kind: str, name: str, target: Any, args: Any, kwargs: Any) -> Any:
        """Inside :meth:`capturing`: a matrix product op made by cuBLAS's GEMM, captured
        (devices/product_capture.py), or None: the op's own call makes it (CuPy refuses
        any other cuBLAS product, and the op runs eagerly from the next capture on)."""
        pair = product_operands(kind, name, target, args, kwargs)
        if pair is None:
            return None
        if self._products is None:
            self._products = CapturedProducts(self.cp)
        return self._products.gemm(*pair)

    # ------------------------------------------------------------ replay
    def launch(self, graph: Any) -> None:
        graph.launch(self.cp.cuda.get_current_stream())

    #: copies made apart from the graphs (:meth:`copy`, :meth:`copy_any`): the figure
    #: ``copied`` (each ``cudaMemcpyAsync`` ~9 µs of an H200 host's worker, run 193)
    copied = 0

    def copy(self, dst: Any, src: Any) -> None:
        """Copy *src*'s bytes into *dst* (same layout) on the session's stream."""
        self.copied += 1
        rt = self._runtime
        if src.nbytes:
            rt.memcpyAsync(dst.data.ptr, src.data.ptr, src.nbytes, rt.memcpyDeviceToDevice,
                           self.cp.cuda.get_current_stream().ptr)

    def copy_any(self, dst: Any, src: Any) -> None:
        """Copy *src* into *dst* of the same shape and dtype, whatever their strides (a
        strided view's bytes are not a range: element by element)."""
        if src.strides == dst.strides and (src.flags.c_contiguous or src.flags.f_contiguous):
            self.copy(dst, src)
        else:
            self.copied += 1
            self.cp.copyto(dst, src)

    def write(self, dst: Any, host: np.ndarray) -> None:
        """Copy a small host array into *dst* on the session's stream (the driver stages
        pageable memory before returning, so *host* may go at once)."""
        rt = self._runtime
        rt.memcpyAsync(dst.data.ptr, host.ctypes.data, host.nbytes, rt.memcpyHostToDevice,
                       self.cp.cuda.get_current_stream().ptr)

    def pinned(self, shape: tuple, dtype: np.dtype) -> np.ndarray:
        """A page-locked host array of *shape* and *dtype*: an upload's place that a graph
        copies from (its memcpy node, captured by :meth:`write` under :meth:`capturing`),
        each replay writing its frame there first (worker/graph_replay.py)."""
        import cupyx   # (CuPy's own, as cupy_device's transfers use it)
        return cupyx.empty_pinned(shape, dtype)

    def mark(self) -> Any:
        """An event recorded on the session's stream now: where a pinned place the graphs
        launched read from may be written again once it has passed (:meth:`passed`)."""
        event = self.cp.cuda.Event(block=False, disable_timing=True)
        event.record(self.cp.cuda.get_current_stream())
        return event

    @staticmethod
    def passed(mark: Any) -> None:
        """Until the stream has run what was launched before *mark*."""
        if mark is not None:
            mark.synchronize()

    def uploaded(self, host: np.ndarray) -> Any:
        """A new array holding *host* (an upload's frame, between a replay's graphs):
        :meth:`write`, so not the stream's synchronize of ``DeviceBase.from_host``, which
        would wait for the graphs launched before it."""
        out = self.cp.empty(host.shape, host.dtype)
        if host.nbytes:
            self.write(out, host)
        return out

    def writer(self, dst: Any, host: np.ndarray) -> Any:
        """A function of no arguments doing :meth:`write` of *host* into *dst*, their
        pointers looked up once (``host.ctypes`` alone cost 1-3 µs a replay); on the stream
        current at each call."""
        copy, kind = self._runtime.memcpyAsync, self._runtime.memcpyHostToDevice
        target, source, nbytes = dst.data.ptr, host.ctypes.data, host.nbytes
        current = self.cp.cuda.get_current_stream

        def write() -> None:
            copy(target, source, nbytes, kind, current().ptr)
        return write

    def empty_like(self, a: Any) -> Any:
        """A new array of *a*'s shape, dtype and strides (a contiguous *a*)."""
        return self.cp.empty(a.shape, a.dtype, order=layout_order(a))

    def empty_strided(self, a: Any) -> Any:
        """A new array of *a*'s shape, dtype and very strides (positive ones), over memory
        of its own just as long as their span: a strided view's stand-in whose kernels are
        the view's (worker/moving_views.py)."""
        cp = self.cp
        memory = cp.cuda.alloc(strided_span(a.shape, a.strides, a.itemsize))
        return cp.ndarray(a.shape, a.dtype, memory, strides=a.strides)

    @staticmethod
    def sole_memory(a: Any) -> bool:
        """Whether no other array or pointer shares *a*'s memory (a view of it refers to
        *a*, which its caller counts; an array made over ``a.data`` or an offset into it
        refers to its pointer or to the memory itself). References here: *a*'s own to its
        pointer, and the pointer's to the memory; the names *data* and *mem*; getrefcount's
        argument."""
        data = a.data
        mem = data.mem
        return getrefcount(data) == 3 and getrefcount(mem) == 3

    def maker(self, a: Any) -> Any:
        """A function of no arguments making new arrays as :meth:`empty_like` of *a* does
        (its layout looked at once: a replay makes one each launch)."""
        return functools.partial(self.cp.ndarray, a.shape, a.dtype, order=layout_order(a))

    def scalar_buffer(self, dtype: np.dtype) -> Any:
        return self.cp.empty((), dtype)

    def read_slots(self, arrays: list) -> tuple[Any, list, Any]:
        """A graph that copies each 0-d array of *arrays* (numeric, at most 16 bytes) into a
        page-locked slot of its own, each slot as a NumPy 0-d array of its dtype, and what
        holds the slots' memory (kept as long as the slots are read): a loop's closing scalar
        reads by one launch after its graphs, where each read was a ``cudaMemcpyAsync`` of
        its own (~5-7 µs of an H200 host's worker, run 225) and its wait (worker/
        lane_reads.py). The slots hold the values once :meth:`wait` returns."""
        cp = self.cp
        if self._slot_blocks is None:
            self._slot_blocks = _SlotBlocks(cp)
        block = self._slot_blocks.take(16 * max(1, len(arrays)))
        host = block.host
        to_host = self._runtime.memcpyDeviceToHost
        views = []
        with self.capturing() as result:
            stream = cp.cuda.get_current_stream().ptr
            for n, a in enumerate(arrays):
                size = a.dtype.itemsize
                self._runtime.memcpyAsync(host.ctypes.data + 16 * n, a.data.ptr, size, to_host, stream)
                views.append(host[16 * n:16 * n + size].view(a.dtype).reshape(()))
        return result[0], views, block

    def wait(self) -> None:
        """Until the session's stream has run everything launched on it (the current one:
        the worker's session stream); an asynchronous error of its work is raised here."""
        self._runtime.streamSynchronize(self.cp.cuda.get_current_stream().ptr)
        if self._slot_blocks is not None:
            self._slot_blocks.epoch += 1

    def param_block(self, nbytes: int) -> Any:
        """Device bytes that hold a stretch's parameters, each a 0-d view (:meth:`scalar_in`):
        one copy writes them all before a launch."""
        return self.cp.empty(nbytes, np.uint8)

    def scalar_in(self, block: Any, offset: int, dtype: np.dtype) -> Any:
        """A 0-d array of *dtype* at *offset* bytes into *block*."""
        return self.cp.ndarray((), dtype, memptr=block.data + offset)

    def copy_table(self, block: Any, host: np.ndarray, offset: int, rows: int) -> CopyTable:
        """A :class:`CopyTable` of *rows* rows at *offset* bytes (a multiple of 8) into the
        device *block* and its host copy *host*."""
        if self._copies_kernel is None:
            self._copies_kernel = self.cp.RawKernel(_COPIES_SOURCE, "gpuwb_table_copies")
        return CopyTable(self._copies_kernel, host, offset, rows,
                         self.cp.ndarray((3 * rows,), np.uint64, memptr=block.data + offset))
