"""What a session worker needs from the hardware it runs arrays on.

A device resolves allow-listed names to callables *once*, at start-up, from
its own array module (devices/function_tables.py); afterwards a client's name is
only ever a key into that table. It also moves bytes in and out and accounts for
memory.
"""

from __future__ import annotations

from time import perf_counter, process_time
from typing import Any, Callable

import numpy as np

from ..protocol import api
from ..protocol.errors import CUDAError, ProtocolError
from .function_tables import OPERATOR_FUNCTIONS
from .interface_views import HostInterfaceView

__all__ = ["Device", "HostEvent"]


class HostEvent:
    """An event of a device without CUDA: the time it was recorded."""

    __slots__ = ("disable_timing", "time")

    def __init__(self, disable_timing: bool) -> None:
        self.disable_timing = disable_timing
        self.time: float | None = None


class Device:
    """A place where a session's arrays live: the base of NumPy and CuPy devices."""

    kind: str = "abstract"
    #: transfers larger than this stream in chunks of this size (None: one frame);
    #: advertised to clients in :meth:`info` so uploads follow the same rule
    stream_bytes: int | None = None
    #: ndarray class of this device
    array_type: type = np.ndarray
    #: the class of the session's events (:meth:`new_event`)
    event_type: type = HostEvent
    #: the class of views of session memory named by address (:meth:`interface_view`)
    view_type: type = HostInterfaceView
    #: whether the handle table must tell the device of each array it keeps or drops
    #: (:meth:`track`): a device that enforces its memory limit itself (CuPy's pool) need not
    tracks_memory: bool = False
    #: whether issued work runs later, behind the host (a GPU's stream), so that the host may
    #: wait for it; on the host the work is done when issued (the pacer reads markers so)
    runs_behind_host: bool = False
    #: what stretch replay captures and launches graphs with (devices/cupy_graphs.py,
    #: devices/host_graphs.py), or None: this device re-runs stretches only
    graph_tools: Any = None
    #: CuPy's graph API for the session's client (devices/cupy_capture.py,
    #: devices/host_capture.py): begin, route, end, launch; None: not available here
    captures: Any = None
    #: operator names to their functions (a device may put its library's refusals in front)
    operators: dict[str, Callable[..., Any]] = OPERATOR_FUNCTIONS

    def __init__(self, index: int = 0) -> None:
        self.index = index
        self.functions: dict[str, Callable] = {}
        self.methods: dict[str, Callable] = {}
        #: the session's memory grant under its user's quota (worker.grants); None: no quota
        self.grant: Any = None

    # -- set-up -------------------------------------------------------------
    def set_nd_planning(self, enabled: bool) -> None:
        """``cupy.fft.config.enable_nd_planning`` for this session (no FFT plans here)."""

    def enter_fft_callbacks(self, options: dict) -> None:
        """``cupy.fft.config.set_cufft_callbacks(**options)``, entered for this session."""
        raise NotImplementedError(f"cuFFT callbacks need a GPU pool (this pool's device is "
                                  f"{self.kind})")

    def exit_fft_callbacks(self) -> None:
        """Leave the innermost ``set_cufft_callbacks`` block entered."""

    def leave_fft_callbacks(self) -> None:
        """Leave every ``set_cufft_callbacks`` block entered (after an op failed)."""

    def cufft_version(self) -> int:
        """``cupy.cuda.cufft.getVersion()``."""
        raise NotImplementedError(f"cuFFT is not available on the {self.kind} device")

    def fft_plan_cache(self, operation: str, values: list) -> Any:
        """``cupy.fft.config``'s plan-cache function *operation* (``clear``, ``get_size``,
        ...) for this session's cache; a host device caches no plans: clearing does
        nothing, the rest are refused."""
        if operation == "clear":
            return None
        raise NotImplementedError(f"cuFFT plan caches exist on a GPU pool (this pool's device "
                                  f"is {self.kind})")

    def memory_pointer(self, view: Any) -> Any:
        """The device's memory pointer for a view of the session's memory (view_at's)."""
        raise NotImplementedError(f"memory pointers are not available on the {self.kind} device")

    def set_accelerators(self, which: str, accelerators: list) -> None:
        """``cupy._core.set_*_accelerators`` for this session (a host device has no CUB or
        cuTENSOR to switch: the names are checked as CuPy checks them, then ignored)."""
        for accelerator in accelerators:
            if not isinstance(accelerator, int) and accelerator not in api.ACCELERATORS:
                raise ValueError(f"Unknown accelerator: {accelerator}")

    def object_class(self, name: str) -> tuple[Callable, type | tuple] | None:
        """The device's (constructor, type of the objects it builds) for the class *name* of
        :data:`api.OBJECTS`, or None where the device has none. Found on first use: the
        random generators load cuRAND, the FFT plans cuFFT."""
        return None

    def object_member(self, value: Any) -> Any:
        """An attribute of a remote object that is itself kept as one (api.OBJECT_MEMBERS),
        as the device's library gives it."""
        return value

    def generator_state(self, generator: Any) -> Any:
        """A copy of a ``random.Generator``'s state (its bit generator's), which
        :meth:`set_generator_state` puts back: draws a replay ran ahead undone
        (worker/draw_journal.py). None where the device cannot copy it."""
        return None

    def set_generator_state(self, generator: Any, state: Any) -> None:
        """Put back a state :meth:`generator_state` copied."""
        raise NotImplementedError

    def _build_methods(self) -> None:
        cls = self.array_type
        self.methods = {name: getattr(cls, name) for name in api.METHODS if hasattr(cls, name)}

    def set_memory_limit(self, nbytes: int) -> None:
        raise NotImplementedError

    def use_grant(self, grant: Any) -> None:
        """Grow past the limit only through *grant* (a session under its user's quota)."""
        self.grant = grant

    def release_cache(self) -> None:
        """Give cached free memory back (before a grant shrinks); GPU devices only."""

    def bound_process(self, session_limit: int) -> None:
        """Called once the session's limit is known: bound what the worker process itself may
        take, where the device's memory is the process's own (the NumPy device)."""

    def track(self, array: Any) -> None:
        """Count *array* against the session's memory (only with ``tracks_memory``)."""

    def untrack(self, array: Any) -> None:
        """The handle table dropped *array* (only with ``tracks_memory``)."""

    # -- results ------------------------------------------------------------
    def as_array(self, value: Any) -> Any:
        """Normalise a result the way CuPy returns it: scalars become 0-d arrays."""
        return value

    def is_array(self, value: Any) -> bool:
        return isinstance(value, self.array_type)

    # -- transfers ----------------------------------------------------------
    def from_host(self, host: np.ndarray) -> Any:
        raise NotImplementedError

    def from_chunks(self, dtype: np.dtype, shape: tuple[int, ...], nbytes: int, chunks) -> Any:
        """Build an array from streamed chunks, copying each while the next arrives."""
        flat = np.empty(nbytes, np.uint8)
        offset = 0
        for chunk in chunks:
            data = np.frombuffer(chunk, np.uint8)
            if offset + data.size > nbytes:
                raise ProtocolError("streamed upload is larger than its shape and dtype")
            flat[offset:offset + data.size] = data
            offset += data.size
        if offset != nbytes:
            raise ProtocolError("streamed upload is smaller than its shape and dtype")
        return self.from_host(flat.view(dtype).reshape(shape))

    def to_host(self, array: Any) -> np.ndarray:
        """A C-contiguous host copy (or view) of *array*, ready to send."""
        raise NotImplementedError

    def download_chunks(self, array: Any, least: int | None = None) -> int:
        """How many chunk messages a download of *array* streams as (0: one frame): one
        larger than the device's chunk size streams, and one larger than *least* too (a
        client with a staging ring)."""
        step = self.stream_bytes
        nbytes = array.nbytes
        if not step or nbytes <= (step if least is None else min(step, least)):
            return 0
        return -(-nbytes // step)

    def chunks_to_host(self, array: Any):
        """Yield *array*'s bytes as host buffers of at most ``stream_bytes`` each."""
        flat = self.flat_bytes(array)
        for offset in range(0, flat.size, self.stream_bytes):
            yield flat[offset:offset + self.stream_bytes]

    # A same-host client's staging ring (gpu_backend.worker.staged): downloads copied into
    # shared memory that the device may have pinned.
    def flat_bytes(self, array: Any) -> Any:
        """*array*'s bytes in C order as one flat array of bytes of this device (a copy only
        where *array* is not C-contiguous)."""
        return self.to_host(array).reshape(-1).view(np.uint8)

    def copy_to_host(self, flat: Any, offset: int, nbytes: int, dest: memoryview) -> None:
        """Copy *nbytes* of :meth:`flat_bytes`'s result from *offset* into *dest*, finished
        when this returns."""
        np.frombuffer(dest, np.uint8)[:] = flat[offset:offset + nbytes]

    def pin_host(self, view: memoryview) -> Any:
        """Make host memory fast for the device's copies (page-locked); a handle for
        :meth:`unpin_host`, or None where there is nothing to gain or it failed."""
        return None

    def unpin_host(self, handle: Any) -> None:
        pass

    # -- bookkeeping --------------------------------------------------------
    def synchronize(self) -> None:
        pass

    def constant(self, a: Any) -> bool:
        """Whether every element of *a* is alike (a result that tells nothing of how it was
        summed: worker/splitting.py checks such a class again)."""
        flat = a.reshape(-1)
        return flat.size == 0 or bool((flat == flat[0]).all())

    def same_bits(self, a: Any, b: Any) -> bool:
        """Whether two C-contiguous arrays are alike to the bit: shape, dtype and bytes (NaNs
        and signed zeros included), as a split op must be to its whole (worker/splitting.py)."""
        return a.shape == b.shape and a.dtype == b.dtype and \
            np.array_equal(a.reshape(-1).view(np.uint8), b.reshape(-1).view(np.uint8))

    def run_kernel(self, kind: Any, definition: Any, args: list, kwargs: dict) -> Any:
        """Compile (once) and launch a user's CUDA kernel; GPU devices only."""
        raise NotImplementedError(
            f"custom CUDA kernels need a GPU: this session runs on the {self.kind} device")

    # -- markers: points in the device's work stream (pacing and accounting) ---
    def marker(self) -> Any:
        """Mark the point the device's work stream has reached so far. On the host the
        work is already done: the marker is the worker process's CPU time now (its ops'
        time, BLAS threads included, and not the time a loaded machine kept it off a
        core: measured by the wall clock, an op descheduled for 20 ms was charged 20 ms,
        and three users 1:2:4 sharing a busy 2-core VM came out 0.18 / 0.26 / 0.38)."""
        return process_time()

    def reached(self, marker: Any) -> bool:
        """Whether the device has done all work issued before *marker* (never blocks)."""
        return True

    def between(self, earlier: Any, later: Any) -> float:
        """Seconds of the device's timeline from one reached marker to a later one."""
        return later - earlier

    def drop_marker(self, marker: Any) -> None:
        """*marker* is no longer needed (GPU devices reuse their events)."""

    def start_timer(self) -> Any:
        """Begin timing a batch's device work (``%%gpu_time``)."""
        import time
        return time.perf_counter()

    def stop_timer(self, started: Any) -> float:
        """Seconds of device work since :meth:`start_timer` (host time on the NumPy device)."""
        import time
        return time.perf_counter() - started

    def healthy(self) -> bool:
        """Whether the device still runs work (a CUDA fault can break a context for good)."""
        return True

    # -- the CUDA runtime as the session's ``cupy.cuda`` sees it ---------------
    def runtime_facts(self) -> dict[str, Any]:
        """Device properties, attributes and versions, sent once with the session's hello so
        that ``cupy.cuda.runtime`` and ``Device`` answer without a round trip. A host device
        has no CUDA: its versions are 0 and its compute capability 0.0."""
        return {"properties": {"name": b"NumPy (host CPU)", "major": 0, "minor": 0,
                               "totalGlobalMem": 0, "multiProcessorCount": 0},
                "attributes": {}, "runtime_version": 0, "driver_version": 0,
                "build_version": 0, "is_hip": False, "pci_bus_id": "", "slice_copy": False,
                "accelerators": {"elementwise": [], "reduction": [], "routine": []}}

    def new_event(self, disable_timing: bool) -> Any:
        """A ``cupy.cuda.Event`` of the session (on the host: a timestamp holder)."""
        return HostEvent(disable_timing)

    def record_event(self, event: Any) -> None:
        """Record *event* after the work issued so far (the host's work is already done)."""
        event.time = perf_counter()

    def event_done(self, event: Any) -> bool:
        return True

    def event_synchronize(self, event: Any) -> None:
        pass

    def event_elapsed_ms(self, start: Any, end: Any) -> float:
        """``cupy.cuda.get_elapsed_time``: milliseconds between two recorded events."""
        for event in (start, end):
            if event.disable_timing or event.time is None:
                raise CUDAError("cudaErrorInvalidResourceHandle: invalid resource handle "
                                "(an event never recorded, or made with disable_timing=True)")
        return (end.time - start.time) * 1e3

    def pool_figures(self) -> dict[str, int]:
        """``cupy.get_default_memory_pool()``'s figures for this session."""
        used = self.memory_used()
        return {"used_bytes": used, "total_bytes": used, "n_free_blocks": 0}

    def memory_used(self) -> int:
        raise NotImplementedError

    # -- memory by address: ndarray.data, .base, __cuda_array_interface__ -----
    def memory_span(self, array: Any) -> tuple[int, int, int]:
        """(address of *array*'s first element, start and size of the allocation it is in);
        a zero-size array's address is 0, as in CuPy. For an array made over memory named
        by address, the allocation of the array that owns that memory: what the pool
        checks addresses against (``HandleTable.view_at``)."""
        raise NotImplementedError

    def data_span(self, array: Any) -> tuple[int, int, int]:
        """``array.data``'s ``ptr``, ``mem.ptr`` and ``mem.size`` as CuPy gives them (the
        client's ``ndarray.data``). They differ from :meth:`memory_span` for an array made
        over memory named by address, whose memory CuPy sizes from the view
        (:func:`interface_bytes`): reported, never used as a bound."""
        return self.memory_span(array)

    # -- swap (worker/swap.py): an allocation's bytes out to host memory or a file, and back
    def allocation_bytes(self, array: Any, chunk: int):
        """The bytes of the allocation *array* lives in (:meth:`memory_span`), as host
        buffers of at most *chunk* bytes, in order."""
        raise NotImplementedError

    def allocation_from(self, f: Any, size: int, chunk: int) -> Any:
        """A new allocation of *size* bytes (a 1-d uint8 array of the device) filled from
        the binary file *f*, read *chunk* bytes at a time."""
        raise NotImplementedError

    def allocations_to_host(self, arrays: list) -> Any:
        """The bytes of the allocations *arrays* live in, one after another, copied to new
        host memory (swap's host tier): a :class:`~.host_bytes.HostBytes`, whose
        ``release()`` frees that memory. MemoryError where the host cannot give it."""
        raise NotImplementedError

    def allocations_from_host(self, copy: Any, sizes: list[int]) -> list:
        """New allocations of *sizes* bytes (1-d uint8 arrays of the device) filled from
        *copy* (:meth:`allocations_to_host`), in order; *copy* stays (the caller releases
        it once every block is back)."""
        raise NotImplementedError

    def view_of(self, block: Any, offset: int, shape: tuple, dtype: np.dtype,
                strides: tuple) -> Any:
        """An array over *block* (from :meth:`allocation_from`) whose first element is at
        *offset* bytes, with *shape*, *dtype* and *strides*: what it was when swapped out."""
        raise NotImplementedError

    def empty_array(self, shape: tuple, dtype: np.dtype) -> Any:
        """A new array of *shape* and *dtype* (a zero-size one brought back from swap)."""
        raise NotImplementedError

    # -- moves within a host (worker/handover.py): a session's allocations lent to the
    # worker that takes it over, which copies them straight into its own device's memory
    def lend_allocations(self, arrays: list, directory: Any, name: str) -> list | None:
        """A loan of the allocations *arrays* live in, that another worker process of this
        host can read while they stay here (msgpack-able: one entry per allocation), or
        None where this device cannot lend (the move then goes through the swap
        directory). *directory* and *name*: where a device without shared memory puts
        what it lends (files named *name*-lent-N, 0600)."""
        return None

    def end_loan(self, loan: list) -> None:
        """The borrower is done with *loan* (or never came): what it lent is freed."""

    def borrowed_allocations(self, loan: list):
        """A context manager giving 1-d uint8 arrays over a loan's allocations (another
        worker's), valid inside it."""
        raise NotImplementedError

    def copy_allocation(self, block: Any) -> Any:
        """A new allocation of this device with *block*'s bytes (a borrowed one); the
        device's OutOfMemoryError where it does not fit."""
        raise NotImplementedError

    def base_of(self, array: Any) -> Any:
        """The array whose memory *array* views (``ndarray.base``), or None."""
        return array.base

    def interface_view(self, owner: Any, ptr: int, shape: tuple, dtype: np.dtype,
                       strides: tuple, pointed: bool = False) -> Any:
        """An object that the device's array module takes as an array at *ptr*, with the
        strides the client's interface gave (None: C order). CuPy sizes the memory of a 0-d
        view by its item when it has no strides, and as 0 bytes with strides ``()``."""
        return self.view_type(owner, ptr, shape, dtype, strides, pointed)

    def direct_ufunc(self, kind: str, name: Any, args: list, kwargs: dict) -> tuple | None:
        """``(ufunc, operands, keywords)`` computing the op elementwise as the device's own
        call would, for its graph tools to launch into the result's memory (the NumPy
        device: host_graphs), or None."""
        return None

    def check_allocation(self, name: str, args: list, kwargs: dict) -> None:
        """Refuse, before running it, a creation call that cannot fit (NumPy device)."""

    @property
    def capturing(self) -> bool:
        """Whether the client's ops are being captured now (CuPy's graph API, routed)."""
        captures = self.captures
        return captures is not None and captures.routed

    def check_transfer(self, direction: str) -> None:
        """An upload (``"H2D"``) or a download (``"D2H"``) while the client's ops are
        captured: refused as CuPy refuses it (``cupy/cuda/memory.pyx``), before any memory
        is allocated or any reply promises streamed chunks."""
        if self.capturing:
            raise RuntimeError(f"the current stream is capturing, so {direction} transfers "
                               "are disallowed")

    def info(self) -> dict[str, Any]:
        return {"kind": self.kind, "index": self.index, "stream_bytes": self.stream_bytes}
