"""The CuPy device: a session's arrays on one NVIDIA GPU.

The only module that imports CuPy. Each session worker owns one CUDA context
and one memory pool whose limit is the session's memory limit. Transfers are
staged through pinned host buffers (CuPy's pinned pool), so the payload
frames that arrive from the network are copied to the GPU at full PCIe speed
and device-to-host copies are sent without another host copy.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import warnings
from typing import Any

import numpy as np

from ..protocol import api
from ..protocol.errors import NotAllowedError
from ..protocol.fused_programs import FIELDS as FUSED_FIELDS
from ..protocol.messages import STREAM_CHUNK_BYTES
from .base import Device
from .function_tables import (lazy_functions, resolve_table, signal_object_class, sparse_lu_class,
                              sparse_object_class)
from .interface_views import CudaInterfaceView
from .cupy_capture import CupyCaptures
from . import cupy_loans, cupy_swap_copies
from .cupy_graphs import GraphTools
from .cupy_scalar_reads import scalar_reads
from .fused_functions import fused_kernel
from .host_random import seed_sequence_factory

__all__ = ["CupyDevice", "gpu_count"]

#: The constructor arguments each kind of user kernel may be built with (all plain data).
_KERNEL_FIELDS = {
    "elementwise": {"in_params", "out_params", "operation", "name", "reduce_dims", "preamble",
                    "no_return", "return_tuple", "loop_prep", "after_loop", "options"},
    "reduction": {"in_params", "out_params", "map_expr", "reduce_expr", "post_map_expr",
                  "identity", "name", "reduce_type", "reduce_dims", "preamble", "options"},
    # cupy._core.create_reduction_func: a ufunc-like reduction from type signatures and
    # the (map, reduce, post-map, reduce type) expressions of its routine
    "simple_reduction": {"name", "ops", "routine", "identity", "preamble", "sort_reduce_axis"},
    "raw": {"code", "name", "options", "backend", "translate_cucomplex", "enable_cooperative_groups",
            "jitify"},
    # cupy.RawModule's get_function(function): the module built once per definition
    "module": {"code", "function", "options", "backend", "translate_cucomplex",
               "enable_cooperative_groups", "name_expressions", "jitify"},
    # cupy.vectorize: the function's source text, checked and translated by CuPy's JIT
    # (devices/jit_vectorize.py), never run as Python
    "vectorize": {"source", "form", "names", "name"},
    # cupyx.jit.rawkernel: the same, translated to a __global__ function per argument types
    # (devices/jit_rawkernel.py); launched as kernel(grid, block, args, shared_mem)
    "jit": {"source", "form", "names", "name", "mode"},
    # cupy.fuse: the program of calls the client traced, fused here by CuPy's own fuse
    # (devices/fused_functions.py; its fields checked by protocol/fused_programs.py)
    "fuse": FUSED_FIELDS,
}


#: NVRTC options a client may give (by prefix): code generation and macros only. Options
#: that name files (``-I``, ``--pre-include``, ``--create-pch``, ``--time``, ...) are refused:
#: they would read or write the pool's files.
_COMPILE_OPTION_PREFIXES = (
    "-std=", "--std=", "-D", "--define-macro=", "-U", "--undefine-macro=", "-ftz=", "--ftz=",
    "-prec-div=", "--prec-div=", "-prec-sqrt=", "--prec-sqrt=", "-fmad=", "--fmad=",
    "-maxrregcount=", "--maxrregcount=", "-rdc=", "--relocatable-device-code=", "--dopt=",
    "-arch=", "--gpu-architecture=", "-diag-suppress=", "--diag-suppress=")
_COMPILE_FLAGS = frozenset("""
    -use_fast_math --use_fast_math -lineinfo --generate-line-info -G --device-debug -dopt
    -dc --device-c -restrict --restrict -default-device --device-as-default-execution-space -w
    --disable-warnings -Werror -extra-device-vectorization --extra-device-vectorization
    -expt-relaxed-constexpr --expt-relaxed-constexpr -expt-extended-lambda
    --expt-extended-lambda""".split())


def check_compile_options(options: Any) -> None:
    """A kernel's compiler options: a tuple of strings, each a code-generation flag or
    macro from the allowed set."""
    if isinstance(options, str) or not isinstance(options, (list, tuple)) \
            or not all(type(o) is str for o in options):
        raise TypeError("options must be a tuple of strings")
    for option in options:
        if option not in _COMPILE_FLAGS and not option.startswith(_COMPILE_OPTION_PREFIXES):
            raise NotAllowedError(f"compiler option {option!r} is not allowed in the pool "
                                  "(code generation and macro options only; nothing that names a file)")


def _tuples(value: Any) -> Any:
    """Lists as tuples, all the way down (CuPy tells an op's (types, routine) pair by
    tuple; a client may have sent lists)."""
    return tuple(_tuples(v) for v in value) if isinstance(value, (list, tuple)) else value


#: cudaEventQuery's answer for "not yet" (cudaErrorNotReady); CuPy returns the raw status.
_CUDA_ERROR_NOT_READY = 600


def _bit_generator(name: str):
    def build(cupy: Any) -> tuple:
        cls = getattr(cupy.random, name)
        return seed_sequence_factory(cls), cls
    return build


def _fft_plan(cupy: Any) -> tuple:
    from cupy.cuda import cufft
    from cupyx.scipy import fftpack
    return fftpack.get_fft_plan, (cufft.Plan1d, cufft.PlanNd, cufft.XtPlanNd)


#: The classes of api.OBJECTS, each (constructor, type) built from CuPy on first use.
_OBJECT_CLASSES = {
    "random.RandomState": lambda cupy: (cupy.random.RandomState, cupy.random.RandomState),
    "random.Generator": lambda cupy: (cupy.random.Generator, cupy.random.Generator),
    **{f"random.{name}": _bit_generator(name) for name in ("XORWOW", "MRG32k3a", "Philox4x3210")},
    "cufft.Plan": _fft_plan,
}


def gpu_count() -> int:
    """How many GPUs CuPy sees here (0 when CuPy or a driver is missing)."""
    try:
        import cupy
        return int(cupy.cuda.runtime.getDeviceCount())
    except Exception:  # no CuPy, no driver, no device: all mean "no GPU"
        return 0


def preload() -> None:
    """Import what opening a GPU imports, and touch no GPU: the pool's zygote for GPU workers
    calls this before it forks them (a CUDA context must not cross a fork; CuPy's import
    makes none, checked here). :class:`RuntimeError` if CUDA was initialised after all."""
    for name in ("cupy", "cupy.fft", "cupy.linalg", "cupyx"):   # (what the device resolves)
        importlib.import_module(name)
    import cupy

    try:
        cupy.cuda.driver.ctxGetCurrent()
    except cupy.cuda.driver.CUDADriverError:   # CUDA_ERROR_NOT_INITIALIZED: as it must be
        return
    raise RuntimeError("importing CuPy initialised CUDA in this process: its forks could not "
                       f"use the GPU (CuPy {cupy.__version__})")


class CupyDevice(Device):
    kind = "cupy"
    runs_behind_host = True
    stream_bytes = STREAM_CHUNK_BYTES

    def __init__(self, index: int = 0) -> None:
        super().__init__(index)
        import cupy
        import cupyx

        self.cupy = cupy
        self.cupyx = cupyx
        self.array_type = cupy.ndarray
        self.event_type = cupy.cuda.Event
        self.view_type = CudaInterfaceView
        cupy.cuda.Device(index).use()
        self.pool = cupy.get_default_memory_pool()
        self.functions = resolve_table(
            {"": cupy, "linalg.": cupy.linalg, "fft.": cupy.fft, "cupyx.": cupyx},
            lazy_functions({**{f"cupyx.scipy.{sub}.": f"cupyx.scipy.{sub}" for sub in api.SCIPY_SUBMODULES},
                            "cupyx.scipy.sparse.": "cupyx.scipy.sparse",
                            **{f"polynomial.{sub}.": f"cupy.polynomial.{sub}"
                               for sub in api.POLYNOMIAL_SUBMODULES}}),
        )
        self._build_methods()
        self._kernels: dict = {}
        self._objects: dict = {}
        self._fft_callbacks: list = []   # set_cufft_callbacks blocks entered, innermost last
        self._events: list = []   # spare CUDA events for markers
        self._runtime = cupy.cuda.runtime
        #: the session's stream: every op runs on it, but those of a client's capture
        #: (devices/cupy_capture.py); the worker's own work names it, never the current one
        self.session_stream = cupy.cuda.get_current_stream()
        self._stream = self.session_stream.ptr
        #: how a swap's host tier copies (cupy_swap_copies.HOST_COPIES; the worker's settings)
        self.swap_host_copy = cupy_swap_copies.HOST_COPIES[0]
        self.graph_tools = GraphTools(cupy)
        self.captures = CupyCaptures(cupy, self.session_stream)
        self.operators = {**self.operators,
                          **scalar_reads(cupy, self.session_stream, self.captures)}
        self._warm_up()

    def _warm_up(self) -> None:
        """Create the context, cuBLAS handle and common kernels before a session arrives."""
        cp = self.cupy
        x = cp.arange(16, dtype=cp.float32).reshape(4, 4)
        y = (x + 1) * 2 - x / 3
        float((y @ y).sum())
        cp.cuda.Device(self.index).synchronize()

    def set_accelerators(self, which: str, accelerators: list) -> None:
        """The CUB/cuTENSOR routines this session's CuPy may use (CuPy checks the names)."""
        getattr(self.cupy._core, f"set_{which}_accelerators")(accelerators)

    def set_nd_planning(self, enabled: bool) -> None:
        with warnings.catch_warnings():   # CuPy 14 deprecates the switch: the client warned
            warnings.simplefilter("ignore", DeprecationWarning)
            self.cupy.fft.config.enable_nd_planning = enabled

    def enter_fft_callbacks(self, options: dict) -> None:
        context = self.cupy.fft.config.set_cufft_callbacks(**options)
        context.__enter__()
        self._fft_callbacks.append(context)

    def exit_fft_callbacks(self) -> None:
        if self._fft_callbacks:
            self._fft_callbacks.pop().__exit__(None, None, None)

    def leave_fft_callbacks(self) -> None:
        while self._fft_callbacks:
            self.exit_fft_callbacks()

    def cufft_version(self) -> int:
        from cupy.cuda import cufft
        return int(cufft.getVersion())

    def fft_plan_cache(self, operation: str, values: list) -> Any:
        config = self.cupy.fft.config
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            if operation == "show_info":   # CuPy prints it: the text goes to the client
                text = io.StringIO()
                with contextlib.redirect_stdout(text):
                    config.show_plan_cache_info()
                result: Any = text.getvalue()
            else:
                result = getattr(config, api.FFT_PLAN_CACHE_OPERATIONS[operation])(*values)
        # CuPy's ("... is experimental"): from its compiled code, which has no frame of its
        # own, so they would name this file; they are CuPy's, as a local call's are
        for warning in caught:
            warnings.warn_explicit(warning.message, warning.category, self.cupy.fft.__file__, 0)
        return result

    def memory_pointer(self, view: Any) -> Any:
        return self.cupy.asarray(view).data   # keeps the view, and so its owner, alive

    def object_class(self, name: str) -> tuple[Any, Any] | None:
        entry = self._objects.get(name)
        if entry is None:
            build = _OBJECT_CLASSES.get(name)
            if build is not None:
                entry = build(self.cupy)
            else:
                entry = (signal_object_class("cupyx.scipy.signal", name)
                         or sparse_object_class("cupyx.scipy.sparse", name)
                         or sparse_lu_class("cupyx.scipy.sparse.linalg", name))
                if entry is None:
                    return None
            self._objects[name] = entry
        return entry

    def generator_state(self, generator: Any) -> Any:
        """Its cuRAND bit generator's states, one device array (``_state``: CuPy's
        ``_cuRANDGenerator``, contiguous as CuPy makes it), copied on the device into memory
        of the pool (a ``MemoryPointer``); None for anything else (its draws are then never
        run ahead). One ``memcpyAsync`` on the session's stream: CuPy's ``copy()`` of the 13
        MB of states (an element-wise kernel, an array made) cost the worker 76 µs a replay
        run ahead, ``empty_like`` and the copy 27 µs (H200 runs 166-167)."""
        state = getattr(getattr(generator, "bit_generator", None), "_state", None)
        if not isinstance(state, self.cupy.ndarray) or not state.flags.c_contiguous:
            return None
        copy = self.cupy.cuda.alloc(state.nbytes)
        self._copy_bytes(copy.ptr, state.data.ptr, state.nbytes)
        return copy

    def set_generator_state(self, generator: Any, state: Any) -> None:
        target = generator.bit_generator._state
        self._copy_bytes(target.data.ptr, state.ptr, target.nbytes)

    def _copy_bytes(self, dst: int, src: int, nbytes: int) -> None:
        """*nbytes* from device address *src* to *dst*, on the current stream."""
        runtime = self.cupy.cuda.runtime
        runtime.memcpyAsync(dst, src, nbytes, runtime.memcpyDeviceToDevice,
                            self.cupy.cuda.get_current_stream().ptr)

    def set_memory_limit(self, nbytes: int) -> None:
        self.pool.set_limit(size=max(int(nbytes), 1))   # 0 would mean "no limit" to CuPy

    def use_grant(self, grant: Any) -> None:
        """Allocate through the grant: an allocation past it asks the pool for more first.
        Only sessions under a user's memory quota pay for this Python-level allocator."""
        self.grant = grant
        pool, oom = self.pool, self.cupy.cuda.memory.OutOfMemoryError

        def malloc(size: int):
            try:
                return pool.malloc(size)
            except oom:
                if not grant.grow(pool.total_bytes() + size + (1 << 20)):
                    raise
                return pool.malloc(size)

        self.cupy.cuda.set_allocator(malloc)

    def release_cache(self) -> None:
        """(Not while a client's capture is in progress: freeing memory then could
        invalidate it; the pool asks again.)"""
        if self.captures.active is None:
            self.pool.free_all_blocks()

    def as_array(self, value: Any) -> Any:
        if isinstance(value, self.array_type):
            return value
        if isinstance(value, (np.generic, bool, int, float, complex)):
            return self.cupy.asarray(value)
        return value

    def from_host(self, host: np.ndarray) -> Any:
        out = self.cupy.empty(host.shape, host.dtype)
        out.set(host)
        # the pinned staging buffer is reused as soon as this returns
        self.cupy.cuda.get_current_stream().synchronize()
        return out

    def from_chunks(self, dtype: np.dtype, shape: tuple[int, ...], nbytes: int, chunks) -> Any:
        """Copy each chunk to the GPU as it arrives; ZeroMQ receives the next meanwhile.
        The array owns its memory, as ``cupy.asarray``'s would (a view said ``owndata``
        False, and loops over a large upload missed their templates: H100 run 47)."""
        from ..protocol.errors import ProtocolError
        out = self.cupy.empty(shape, dtype)   # (nbytes: its shape and dtype's, run_upload's)
        flat = out.reshape(-1).view(self.cupy.uint8)
        offset = 0
        for chunk in chunks:
            data = np.frombuffer(chunk, np.uint8)
            if offset + data.size > nbytes:
                raise ProtocolError("streamed upload is larger than its shape and dtype")
            flat[offset:offset + data.size].set(data)
            offset += data.size
        if offset != nbytes:
            raise ProtocolError("streamed upload is smaller than its shape and dtype")
        return out

    def chunks_to_host(self, array: Any):
        """Copy chunk by chunk into pinned buffers, one chunk ahead: the GPU copies the next
        chunk (asynchronously, in stream order after the work that made the array) while
        the caller sends this one, so the copy and the socket overlap."""
        cupy = self.cupy
        flat = self.flat_bytes(array)
        stream = cupy.cuda.get_current_stream()
        ahead = None   # (pinned buffer, the event that says its copy is done)
        try:
            for offset in range(0, flat.size, self.stream_bytes):
                part = flat[offset:offset + self.stream_bytes]
                host = self.cupyx.empty_pinned(part.size, np.uint8)
                part.get(stream=stream, out=host, blocking=False)
                copied = stream.record()
                if ahead is not None:
                    ahead[1].synchronize()
                    yield ahead[0]
                ahead = (host, copied)
            if ahead is not None:
                ahead[1].synchronize()
                yield ahead[0]
        finally:   # abandoned midway (the client left): no copy may still write a freed buffer
            stream.synchronize()

    def flat_bytes(self, array: Any) -> Any:
        return self.cupy.ascontiguousarray(array).reshape(-1).view(self.cupy.uint8)

    def copy_to_host(self, flat: Any, offset: int, nbytes: int, dest: memoryview) -> None:
        flat[offset:offset + nbytes].get(out=np.frombuffer(dest, np.uint8))

    def pin_host(self, view: memoryview) -> Any:
        """Register the memory with CUDA (``cudaHostRegister``): copies to and from it are
        then the device's DMA, with no staging through the driver's own buffer."""
        pointer = np.frombuffer(view, np.uint8).ctypes.data
        try:
            self._runtime.hostRegister(pointer, view.nbytes, 0)
        except self._runtime.CUDARuntimeError:   # (out of lockable memory, say): stays pageable
            return None
        return pointer

    def unpin_host(self, handle: Any) -> None:
        try:
            self._runtime.hostUnregister(handle)
        except self._runtime.CUDARuntimeError:
            pass

    def to_host(self, array: Any) -> np.ndarray:
        if not array.flags.c_contiguous:
            array = array.copy(order="C")  # ascontiguousarray would make 0-d arrays 1-d
        host = self.cupyx.empty_pinned(array.shape, array.dtype)
        array.get(out=host)
        return host

    def synchronize(self) -> None:
        self.session_stream.synchronize()

    def same_bits(self, a: Any, b: Any) -> bool:
        """Compared on the GPU (waits for both)."""
        u8 = self.cupy.uint8
        return a.shape == b.shape and a.dtype == b.dtype and \
            bool(self.cupy.array_equal(a.reshape(-1).view(u8), b.reshape(-1).view(u8)))

    def run_kernel(self, kind: Any, definition: Any, args: list, kwargs: dict) -> Any:
        """Build the kernel from its source strings (cached) and launch it in this session's
        own process and context: a faulty kernel can only break this session."""
        kernel = self._kernels.get((kind, repr(definition)))
        if kernel is None:
            kernel = self._build_kernel(kind, definition)
            self._kernels[(kind, repr(definition))] = kernel
        return kernel(*args, **kwargs)

    def _build_kernel(self, kind: Any, definition: Any) -> Any:
        from ..protocol.errors import ProtocolError
        if not isinstance(definition, dict) or not all(isinstance(k, str) for k in definition):
            raise ProtocolError("a kernel definition is a map of strings")
        fields = _KERNEL_FIELDS.get(kind)
        if fields is None:
            raise ProtocolError(f"unknown kernel kind {kind!r}")
        unknown = set(definition) - fields
        if unknown:
            raise TypeError(f"unexpected kernel arguments: {sorted(unknown)}")
        if definition.get("backend", "nvrtc") != "nvrtc":
            raise NotImplementedError(
                "kernels are compiled in the pool by NVRTC only (backend='nvrtc'): nvcc would "
                "run host tools on the pool's machine with a command line from the client")
        check_compile_options(definition.get("options", ()))
        if kind == "elementwise":
            return self.cupy.ElementwiseKernel(**definition)
        if kind == "reduction":
            return self.cupy.ReductionKernel(**definition)
        if kind == "simple_reduction":   # msgpack gives lists where CuPy wants tuples
            return self.cupy._core.create_reduction_func(**{
                k: _tuples(v) if k in ("ops", "routine") else v for k, v in definition.items()})
        if kind == "vectorize":
            from .jit_vectorize import Vectorized
            return Vectorized(self.cupy, definition)
        if kind == "fuse":
            return fused_kernel(self.cupy, definition, self.functions, self.operators)
        if kind == "jit":
            from .jit_rawkernel import JitKernel
            return JitKernel(self.cupy, definition)
        if kind == "module":
            return self._module_function(definition)
        return self.cupy.RawKernel(**definition)

    def _module_function(self, definition: dict) -> Any:
        """A function of a ``RawModule``, the module compiled once for all its functions."""
        module_fields = {k: v for k, v in definition.items() if k != "function"}
        name = definition.get("function")
        names = module_fields.get("name_expressions")
        if type(name) is not str or (names is not None and not (
                isinstance(names, (list, tuple)) and all(type(n) is str for n in names))):
            raise TypeError("a RawModule's function and name_expressions are strings")
        if names is not None:
            module_fields["name_expressions"] = tuple(names)
        if "options" in module_fields:
            module_fields["options"] = _tuples(module_fields["options"])
        key = ("module", repr(sorted(module_fields.items())))
        module = self._kernels.get(key)
        if module is None:
            module = self._kernels[key] = self.cupy.RawModule(**module_fields)
        return module.get_function(name)

    def marker(self) -> Any:
        """A CUDA event recorded on the session's stream (taken from a pool of spares:
        creating one costs more than recording it)."""
        event = self._events.pop() if self._events else self.cupy.cuda.Event()
        self._runtime.eventRecord(event.ptr, self._stream)
        return event

    def reached(self, marker: Any) -> bool:
        status = self._runtime.eventQuery(marker.ptr)
        if status == 0:
            return True
        if status == _CUDA_ERROR_NOT_READY:
            return False
        return marker.done  # raises the CUDA error this status stands for

    def between(self, earlier: Any, later: Any) -> float:
        return self._runtime.eventElapsedTime(earlier.ptr, later.ptr) / 1e3

    def drop_marker(self, marker: Any) -> None:
        if len(self._events) < 256:
            self._events.append(marker)

    def start_timer(self) -> Any:
        start = self.cupy.cuda.Event()
        start.record(self.session_stream)
        return start

    def stop_timer(self, start: Any) -> float:
        """GPU time between the events, measured by CUDA (waits for the batch's work)."""
        stop = self.cupy.cuda.Event()
        stop.record(self.session_stream)
        stop.synchronize()
        return self.cupy.cuda.get_elapsed_time(start, stop) / 1e3

    def healthy(self) -> bool:
        """Whether a probe runs on the session's stream. While a client's capture is in
        progress only that stream is synchronized: a device-wide synchronize would
        invalidate the capture (and a CUDA error of a captured op is no broken context)."""
        try:
            with self.session_stream:
                probe = self.cupy.zeros(1, self.cupy.float32) + 1
                if self.captures.active is None:
                    self.cupy.cuda.Device(self.index).synchronize()
                else:
                    self.session_stream.synchronize()
                return float(probe[0]) == 1.0
        except Exception:  # sticky errors (illegal or misaligned address, ...) land here
            return False

    def memory_span(self, array: Any) -> tuple[int, int, int]:
        """The allocation is the one the pool made: an array the pool built over session
        memory named by address (``view_at``) has CuPy's ``UnownedMemory``, whose size CuPy
        takes from the view's shape and strides (larger than the view, and counted forward
        of a negative-strided one), so its owner's allocation is followed instead; trusting
        that size would let a client's next view reach past its own memory."""
        data = array.data
        mem = data.mem
        owner = getattr(mem, "_owner", None)
        while type(owner) is CudaInterfaceView and owner.owner is not None:
            mem = owner.owner.data.mem
            owner = getattr(mem, "_owner", None)
        return data.ptr, mem.ptr, mem.size

    def data_span(self, array: Any) -> tuple[int, int, int]:
        """CuPy's own figures: an array over memory named by address reports its
        ``UnownedMemory`` (the view's address, the size CuPy took from it), as local
        CuPy's does; the pool's bounds follow the owner (:meth:`memory_span`)."""
        data = array.data
        owner = getattr(data.mem, "_owner", None)
        if type(owner) is CudaInterfaceView and owner.pointed:   # ndarray(memptr=p): p's memory
            return self.memory_span(array)
        return data.ptr, data.mem.ptr, data.mem.size

    def allocation_bytes(self, array: Any, chunk: int):
        _ptr, start, size = self.memory_span(array)
        with self.session_stream:
            yield from cupy_swap_copies.chunks_out(self.cupy, self.session_stream, start, size, chunk)

    def allocation_from(self, f: Any, size: int, chunk: int) -> Any:
        with self.session_stream:
            return cupy_swap_copies.block_in(self.cupy, self.session_stream, f, size, chunk)

    def allocations_to_host(self, arrays: list) -> Any:
        spans = [self.memory_span(a)[1:] for a in arrays]
        with self.session_stream:
            return cupy_swap_copies.to_host(self.cupy, self.session_stream, spans,
                                            self.swap_host_copy)

    def allocations_from_host(self, copy: Any, sizes: list[int]) -> list:
        with self.session_stream:
            return cupy_swap_copies.from_host(self.cupy, self.session_stream, copy, sizes)

    def view_of(self, block: Any, offset: int, shape: tuple, dtype: np.dtype,
                strides: tuple) -> Any:
        cp = self.cupy
        return cp.ndarray(shape, dtype, memptr=block.data + offset, strides=strides)

    def empty_array(self, shape: tuple, dtype: np.dtype) -> Any:
        with self.session_stream:
            return self.cupy.empty(shape, dtype)

    def lend_allocations(self, arrays: list, directory: Any, name: str) -> list | None:
        """CUDA IPC (devices/cupy_loans.py); None where the memory cannot be exported (an
        allocator CUDA IPC does not serve). The caller has synchronized (worker/handover.py)."""
        try:
            return cupy_loans.lend(self.cupy, [self.memory_span(a)[1:] for a in arrays])
        except (OSError, RuntimeError, self.cupy.cuda.runtime.CUDARuntimeError):
            return None

    def borrowed_allocations(self, loan: list):
        return cupy_loans.borrowed(self.cupy, loan)

    def copy_allocation(self, block: Any) -> Any:
        with self.session_stream:
            return cupy_loans.copy_block(self.cupy, self.session_stream, block)

    def memory_used(self) -> int:
        return int(self.pool.used_bytes())

    def runtime_facts(self) -> dict[str, Any]:
        rt = self.cupy.cuda.runtime
        device = self.cupy.cuda.Device(self.index)
        # CUDA's number of each attribute (the values are ``attributes``, by name less the prefix)
        codes = {name: int(getattr(rt, name)) for name in dir(rt) if name.startswith("cudaDevAttr")}
        return {"properties": rt.getDeviceProperties(self.index),
                "attributes": dict(device.attributes), "attribute_codes": codes,
                "runtime_version": rt.runtimeGetVersion(), "driver_version": rt.driverGetVersion(),
                "build_version": self.cupy.cuda.driver.get_build_version(),
                "slice_copy": bool(getattr(self.cupy._util, "ENABLE_SLICE_COPY", False)),
                "accelerators": {which: [int(code) for code in getattr(self.cupy._core, f"get_{which}_accelerators")()]
                                 for which in ("elementwise", "reduction", "routine")},
                "is_hip": bool(rt.is_hip), "pci_bus_id": device.pci_bus_id}

    def new_event(self, disable_timing: bool) -> Any:
        return self.cupy.cuda.Event(disable_timing=disable_timing)

    def record_event(self, event: Any) -> None:
        event.record()   # on the session's stream, after the ops issued before it

    def event_done(self, event: Any) -> bool:
        return bool(event.done)

    def event_synchronize(self, event: Any) -> None:
        event.synchronize()

    def event_elapsed_ms(self, start: Any, end: Any) -> float:
        return float(self.cupy.cuda.get_elapsed_time(start, end))

    def pool_figures(self) -> dict[str, int]:
        pool = self.pool
        return {"used_bytes": int(pool.used_bytes()), "total_bytes": int(pool.total_bytes()),
                "n_free_blocks": int(pool.n_free_blocks())}

    def info(self) -> dict[str, Any]:
        rt = self.cupy.cuda.runtime
        props = rt.getDeviceProperties(self.index)
        free, total = rt.memGetInfo()
        name = props["name"]
        return {
            "kind": self.kind,
            "index": self.index,
            "name": name.decode() if isinstance(name, bytes) else str(name),
            "compute_capability": f"{props['major']}.{props['minor']}",
            "multiprocessors": props["multiProcessorCount"],
            "memory_total": int(total),
            "memory_free": int(free),
            "cupy": self.cupy.__version__,
            "cuda_runtime": rt.runtimeGetVersion(),
            "stream_bytes": self.stream_bytes,
        }
